/* SPDX-License-Identifier: MIT */
/*
 * shmlog's read side, which the 2012 RFC left untested:
 *  - dump rate: a full buffer read oldest-first, raw, and formatted as
 *    logcat's threadtime and as JSON lines into /dev/null by the CLI's own
 *    formatter (tools/format.c): what `shmlog cat -v threadtime` and
 *    `shmlog cat -v json` do, less the CLI's option parsing;
 *  - follow latency: a writer stamps CLOCK_MONOTONIC into an 8-byte record
 *    and writes it; a follower blocked in shmlog_reader_wait() wakes, reads
 *    it and takes the difference. Writes are spaced 300 us apart so that
 *    the follower is asleep again each time: this is the wake-up path;
 *  - what an active follower costs the writers: the single-writer run of
 *    the main table, alone and with a follower process reading everything
 *    (its CPU reported per record);
 *  - whether a follower keeps up: one writer paced at 5 M records/s, a
 *    follower formatting threadtime into a file; records lost and its lag;
 *  - `shmlog archive` behind one writer (archive.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#include "format.h"
#include "shmlog.h"

/* ---- dump ---- */

enum dump_fmt { DUMP_RAW, DUMP_THREADTIME, DUMP_JSON };
#define MAX_DUMP_REPS 5

/* Where the raw dump puts what it read, so that the reads stay. */
static volatile uint64_t dump_sink;

/* A deferred record's values as JSON, as `shmlog cat` has them. */
#define ARGS_MAX SHMLOG_DEFERRED_ARGS_MAX

/* Read the whole buffer once, as `shmlog cat` (raw: read only; else
 * -v threadtime or -v json) into @fd; returns records/s, and the count in
 * *n. The formatter is the CLI's own (tools/format.c). */
static double dump_once(const char *name, enum dump_fmt fmt, int fd,
			uint64_t *n)
{
	static char args[ARGS_MAX];
	shmlog_reader_t *rd;
	struct shmlog_record rec;
	struct shmlog_lost lost;
	struct fmt f = {.kind = fmt == DUMP_JSON ? FMT_JSON : FMT_THREADTIME};
	struct out o;
	if (out_open(&o, fd) < 0)
		return -1;
	if (shmlog_reader_open(name, 0, &rd) < 0) {
		out_close(&o);
		return -1;
	}
	uint64_t count = 0, t0 = bench_now_ns();
	fmt_prepare(&f);
	int ev;
	while ((ev = shmlog_reader_next(rd, &rec, &lost)) != SHMLOG_EV_NONE) {
		if (ev == SHMLOG_EV_LOST && fmt != DUMP_RAW)
			fmt_lost(&o, &f, &lost);
		if (ev != SHMLOG_EV_RECORD)
			continue;
		count++;
		if (fmt == DUMP_RAW) {
			dump_sink += rec.msg_len;
			continue;
		}
		const char *df = NULL;
		int d = fmt == DUMP_JSON && (rec.flags & SHMLOG_REC_DEFERRED)
				? shmlog_reader_deferred(rd, &df, args,
							 sizeof(args))
				: -ENOENT;
		fmt_record_deferred(&o, &f, &rec, df, d >= 0 ? args : NULL,
				    d == SHMLOG_DEFERRED_CUT);
	}
	out_flush(&o);
	uint64_t t1 = bench_now_ns();
	out_close(&o);
	shmlog_reader_close(rd);
	*n = count;
	return count ? (double)count * 1e9 / (double)(t1 - t0) : -1;
}

struct fill_arg {
	shmlog_t *h;
	const struct lb_work *w;
	uint64_t n;
};

static void *fill_thread(void *p)
{
	struct fill_arg *a = p;
	for (uint64_t i = 0; i < a->n; i++) {
		const struct lb_msg *m = &a->w->m[i % LB_WORK_N];
		shmlog_write_n(a->h, m->prio, m->tag, m->msg, m->len);
	}
	return NULL;
}

/* Fill every lane, one thread per lane (a lane belongs to a thread), each
 * writing twice its lane's capacity: the ring is full and has wrapped, as
 * a long-lived buffer shared by many writers is, and the dump has to merge
 * all the lanes by time. */
static int fill_buffer(const char *name, const struct lb_work *w)
{
	shmlog_t *h;
	struct shmlog_info info;
	if (shmlog_open(name, 0, &h) < 0 || shmlog_stat(name, &info) < 0)
		return -1;
	unsigned nt = info.lanes < 64 ? info.lanes : 64;
	pthread_t tid[64];
	struct fill_arg a = {
	    h, w, 2 * info.capacity / nt / (uint64_t)(w->avg_len + 40)};
	unsigned started = 0;
	for (unsigned i = 0; i < nt; i++)
		if (pthread_create(&tid[i], NULL, fill_thread, &a) == 0)
			started++;
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	shmlog_close(h);
	return started ? 0 : -1;
}

static void measure_dump(const struct lb_config *cfg, struct lb_readers *r,
			 const struct lb_work *w)
{
	char name[64];
	struct shmlog_create_opts o;
	snprintf(name, sizeof(name), "bench-%d-dump", (int)getpid());
	shmlog_create_opts_init(&o);
	o.size = cfg->quick ? SHMLOG_SIZE_DEFAULT : 16u << 20;
	shmlog_remove(name);
	if (shmlog_create(name, &o) < 0 || fill_buffer(name, w) < 0) {
		snprintf(r->why, sizeof(r->why), "cannot create and fill %s",
			 name);
		shmlog_remove(name);
		return;
	}
	int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (out < 0) {
		shmlog_remove(name);
		return;
	}
	double *dst[3] = {&r->dump_raw_rps, &r->dump_threadtime_rps,
			  &r->dump_json_rps};
	/* the three formats in turn in each repetition, each pass after
	 * the wait for full speed that every timed run of the bench makes
	 * (counted with the follower's runs): a neighbour's stretch on the
	 * host core hits all three alike, and fewer of them */
	int reps = cfg->quick ? 1 : MAX_DUMP_REPS;
	double v[3][MAX_DUMP_REPS];
	for (int i = 0; i < reps; i++)
		for (int f = 0; f < 3; f++) {
			lb_core_wait(&r->core, cfg->quick, false);
			v[f][i] = dump_once(name, (enum dump_fmt)f, out,
					    &r->dump_recs);
			lb_core_after(&r->core, false);
		}
	for (int f = 0; f < 3; f++)
		*dst[f] = bench_median(v[f], reps);
	close(out);
	shmlog_remove(name);
}

/* ---- follow latency ---- */

struct follow_shared {
	atomic_int ready;
	struct bench_hist hist;
};

static void __attribute__((noreturn))
follower_latency(const char *name, struct follow_shared *fs)
{
	shmlog_reader_t *rd;
	struct shmlog_record rec;
	struct shmlog_lost lost;
	if (shmlog_reader_open(name, SHMLOG_READ_TAIL, &rd) < 0)
		_exit(1);
	atomic_store(&fs->ready, 1);
	for (;;) {
		int ev = shmlog_reader_next(rd, &rec, &lost);
		if (ev == SHMLOG_EV_NONE) {
			if (shmlog_reader_wait(rd, 2000) == -ETIMEDOUT)
				_exit(2);
			continue;
		}
		if (ev != SHMLOG_EV_RECORD || rec.msg_len != 8)
			continue;
		uint64_t t, now = bench_now_ns();
		memcpy(&t, rec.msg, 8);
		if (t == 0)
			_exit(0);
		bench_hist_add(&fs->hist, now - t);
	}
}

static void measure_follow(const struct lb_config *cfg, struct lb_readers *r)
{
	char name[64];
	shmlog_t *h;
	snprintf(name, sizeof(name), "bench-%d-follow", (int)getpid());
	shmlog_remove(name);
	struct follow_shared *fs =
	    mmap(NULL, sizeof(*fs), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fs == MAP_FAILED)
		return;
	bench_hist_init(&fs->hist);
	if (shmlog_create(name, NULL) < 0 || shmlog_open(name, 0, &h) < 0) {
		munmap(fs, sizeof(*fs));
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		follower_latency(name, fs);
	while (pid > 0 && !atomic_load(&fs->ready))
		usleep(1000);
	int n = cfg->quick ? 200 : 3000;
	for (int i = 0; pid > 0 && i < n; i++) {
		struct timespec gap = {0, 300000};
		nanosleep(&gap, NULL);
		uint64_t t = bench_now_ns();
		shmlog_write_n(h, SHMLOG_INFO, "lat", (const char *)&t, 8);
	}
	uint64_t zero = 0;
	shmlog_write_n(h, SHMLOG_INFO, "lat", (const char *)&zero, 8);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	r->follow = fs->hist;
	r->follow_p50 = (double)bench_hist_quantile(&fs->hist, 0.5);
	r->follow_p99 = (double)bench_hist_quantile(&fs->hist, 0.99);
	shmlog_close(h);
	shmlog_remove(name);
	munmap(fs, sizeof(*fs));
}

/* ---- follower cost ---- */

struct active_arg {
	const char *name;
	struct lb_sink *sink;
};

/* Read everything, as `shmlog follow` would; lost records count as
 * consumed so that the harness's drain ends. */
static void active_follower(void *p)
{
	struct active_arg *a = p;
	shmlog_reader_t *rd;
	struct shmlog_record rec;
	struct shmlog_lost lost;
	if (shmlog_reader_open(a->name, SHMLOG_READ_TAIL, &rd) < 0)
		_exit(1);
	for (;;) {
		int ev = shmlog_reader_next(rd, &rec, &lost);
		if (ev == SHMLOG_EV_RECORD)
			atomic_fetch_add_explicit(&a->sink->recs, 1,
						  memory_order_relaxed);
		else if (ev == SHMLOG_EV_LOST)
			atomic_fetch_add_explicit(&a->sink->recs,
						  lost.overwritten + lost.torn,
						  memory_order_relaxed);
		else
			shmlog_reader_wait(rd, 100);
	}
}

/* Per-run figures of the follower-cost comparison. */
struct fc_acc {
	int n;
	double rps[16], p99[16], wcpu[16];
	uint64_t recs;
	double coll_s, wall_s;
};

/* The buffer's futex word (page 0, offset 192: docs/DESIGN.md), which a
 * writer bumps each time it wakes sleeping readers; 0 if unreadable. */
static uint32_t fc_wakes(const char *name)
{
	char path[4096];
	uint32_t w = 0;
	if (shmlog_path(name, path, sizeof(path)) < 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (pread(fd, &w, sizeof(w), 192) != (ssize_t)sizeof(w))
		w = 0;
	close(fd);
	return w;
}

static void fc_run(struct lb_ctx *c, const struct lb_config *cfg,
		   const struct lb_work *w, struct fc_acc *a, struct lb_core *k)
{
	static struct lb_result res;
	/* in turn for both runs of a pair, followed or not: the pair is
	 * compared, so both wait for the same condition */
	lb_core_wait(k, cfg->quick, false);
	lb_run(c, w, cfg, 1, 1, &res);
	lb_core_after(k, false);
	if (!res.ok || res.wall_s <= 0 || !res.recs || a->n >= 16)
		return;
	a->rps[a->n] = (double)res.recs / res.wall_s;
	a->p99[a->n] = (double)bench_hist_quantile(&res.hist, 0.99);
	a->wcpu[a->n] = res.cpu_s * 1e9 / (double)res.recs;
	a->n++;
	a->recs += res.recs;
	a->coll_s += res.coll_cpu_s;
	a->wall_s += res.wall_s;
}

/* One follower process for the whole comparison, stopped (SIGSTOP) for the
 * "alone" runs and resumed for the "followed" ones, the two alternated so
 * that a drifting machine load hits both alike. A stopped follower costs
 * the writer nothing: at most one wake-up for the sleep it was in. */
static void measure_follower_cost(const struct lb_config *cfg,
				  struct lb_readers *r, const struct lb_work *w)
{
	struct lb_ctx c = {.ct = &lb_shmlog_default};
	struct fc_acc alone = {0}, followed = {0};
	double ratio[16];
	int pairs = 0;
	uint32_t wakes = 0;
	if (c.ct->setup(&c) < 0)
		return;
	struct active_arg a = {c.arg, lb_sink_new()};
	pid_t pid = a.sink ? lb_spawn(&c, active_follower, &a) : -1;
	if (pid > 0) {
		usleep(20000); /* let it open and go to sleep */
		for (int rep = 0; rep < cfg->reps; rep++) {
			kill(pid, SIGSTOP);
			c.sink = NULL;
			c.collector = 0;
			int n0 = alone.n, n1 = followed.n;
			fc_run(&c, cfg, w, &alone, &r->core);
			kill(pid, SIGCONT);
			c.sink = a.sink;
			c.collector = pid;
			uint32_t w0 = fc_wakes(c.arg);
			fc_run(&c, cfg, w, &followed, &r->core);
			wakes += fc_wakes(c.arg) - w0;
			/* each pair's ratio: the spread of the figure */
			if (alone.n == n0 + 1 && followed.n == n1 + 1 &&
			    alone.p99[n0] > 0 && pairs < 16)
				ratio[pairs++] =
				    followed.p99[n1] / alone.p99[n0];
		}
		lb_stop(pid);
	}
	c.sink = NULL;
	c.collector = 0;
	lb_sink_free(a.sink);
	c.ct->teardown(&c);
	if (!alone.n || !followed.n)
		return;
	r->alone_rps = bench_median(alone.rps, alone.n);
	r->alone_p99 = bench_median(alone.p99, alone.n);
	r->alone_cpu_ns = bench_median(alone.wcpu, alone.n);
	r->followed_rps = bench_median(followed.rps, followed.n);
	r->followed_p99 = bench_median(followed.p99, followed.n);
	r->followed_cpu_ns = bench_median(followed.wcpu, followed.n);
	r->follower_cpu_ns_per_rec =
	    followed.recs ? followed.coll_s * 1e9 / (double)followed.recs : 0;
	r->fc_pairs = pairs;
	for (int i = 0; i < pairs; i++) {
		if (!i || ratio[i] < r->fc_ratio_min)
			r->fc_ratio_min = ratio[i];
		if (!i || ratio[i] > r->fc_ratio_max)
			r->fc_ratio_max = ratio[i];
	}
	r->fc_wakes_per_s =
	    followed.wall_s > 0 ? (double)wakes / followed.wall_s : 0;
}

/* ---- a follower behind a paced writer ---- */

/* One writer logs at a fixed rate, paced by the clock (it writes what is
 * due, then reads the clock again: no sleeps); a follower process reads
 * everything as `shmlog cat -f -v threadtime > FILE` would, through the
 * CLI's formatter into a file in the scratch directory. Records lost are
 * the written ones the follower never showed; its lag is how long ago,
 * when it formatted a record, that record was written (every 64th). */
#define PACED_RPS 5e6
#define PACED_MAX_RUNS 3
#define PACED_FILE_CUT (64u << 20) /* the file is emptied past this */
#define PACED_LAG_EVERY 64
#define PACED_GIVE_UP_NS (60 * 1000000000ull) /* a follower left behind */

struct paced_shared {
	atomic_int ready; /* the follower is reading (from the tail) */
	atomic_int done;  /* the writer has written its last record */
	int failed;
	uint64_t shown, reported_lost;
	double cpu_s; /* the follower's, all of its life */
	struct bench_hist lag;
};

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The file is cut back to nothing now and then, so that a run needs no
 * disk space: what it costs (the pages written, the write calls) stays. */
static void paced_cut(int fd)
{
	off_t at = lseek(fd, 0, SEEK_CUR);
	if (at > (off_t)PACED_FILE_CUT && ftruncate(fd, 0) == 0)
		lseek(fd, 0, SEEK_SET);
}

static void __attribute__((noreturn))
paced_follower(const char *name, const char *path, struct paced_shared *ps)
{
	shmlog_reader_t *rd;
	struct shmlog_record rec;
	struct shmlog_lost lost;
	struct fmt f = {.kind = FMT_THREADTIME};
	struct out o;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		      0600);
	if (fd < 0 || out_open(&o, fd) < 0 ||
	    shmlog_reader_open(name, SHMLOG_READ_TAIL, &rd) < 0) {
		ps->failed = 1;
		atomic_store(&ps->ready, 1);
		_exit(1);
	}
	fmt_prepare(&f);
	atomic_store(&ps->ready, 1);
	uint64_t shown = 0, give_up = bench_now_ns() + PACED_GIVE_UP_NS;
	uint64_t flushed = bench_now_ns(); /* output last written */
	bool draining = false; /* the writer is done: read what is left */
	for (;;) {
		int ev = shmlog_reader_next(rd, &rec, &lost);
		if (ev == SHMLOG_EV_RECORD) {
			fmt_record(&o, &f, &rec);
			if (++shown % PACED_LAG_EVERY == 0) {
				int64_t lag = (int64_t)(realtime_ns() -
							(uint64_t)rec.time_ns);
				bench_hist_add(&ps->lag,
					       lag > 0 ? (uint64_t)lag : 0);
			}
			if (shown % 65536 == 0) {
				paced_cut(fd);
				if (bench_now_ns() > give_up) {
					ps->failed = 1;
					break;
				}
			}
			continue;
		}
		if (ev == SHMLOG_EV_LOST) {
			fmt_lost(&o, &f, &lost);
			ps->reported_lost += lost.overwritten + lost.torn;
			continue;
		}
		if (ev < 0) {
			ps->failed = 1;
			break;
		}
		/* as `shmlog cat -f` does: output pending for less than
		 * 1 ms waits up to 1 ms for more records before it is
		 * written (a write of the few lines a follower that keeps
		 * up finds each time would cost more than their format) */
		if (!draining && o.len && bench_now_ns() - flushed < 1000000 &&
		    shmlog_reader_wait(rd, 1) == 0)
			continue;
		if (out_flush(&o) < 0) {
			ps->failed = 1;
			break;
		}
		flushed = bench_now_ns();
		/* done when a wait that only looks finds nothing: a
		 * follower's next() may say NONE with records to come
		 * (shmlog.h) */
		if (draining) {
			if (shmlog_reader_wait(rd, 0) == -ETIMEDOUT ||
			    bench_now_ns() > give_up)
				break;
			continue;
		}
		if (bench_now_ns() > give_up) { /* its writer died? */
			ps->failed = 1;
			break;
		}
		if (atomic_load(&ps->done)) {
			draining = true; /* read on: everything it wrote */
			continue;
		}
		/* the writer's end comes as the done flag, not a record: a
		 * timeout only bounds each wait */
		int err = shmlog_reader_wait(rd, 50);
		if (err < 0 && err != -ETIMEDOUT && err != -EINTR) {
			ps->failed = 1;
			break;
		}
	}
	out_close(&o);
	close(fd);
	shmlog_reader_close(rd);
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		ps->cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) /
				    1e6;
	ps->shown = shown;
	_exit(ps->failed ? 1 : 0);
}

/* Write @n records at @rps records/s: what is due by the clock, then the
 * clock again. Returns the rate achieved (records/s), 0 on failure. */
static double paced_write(shmlog_t *h, const struct lb_work *w, uint64_t n,
			  double rps, uint64_t *written)
{
	uint64_t i = 0, t0 = bench_now_ns(), now = t0;
	while (i < n) {
		now = bench_now_ns();
		double due_d = (double)(now - t0) * rps / 1e9;
		uint64_t due = due_d < (double)n ? (uint64_t)due_d : n;
		for (; i < due; i++) {
			const struct lb_msg *m = &w->m[i % LB_WORK_N];
			if (shmlog_write_n(h, m->prio, m->tag, m->msg, m->len) <
			    0)
				return 0;
		}
	}
	*written = i;
	now = bench_now_ns();
	return now > t0 ? (double)n * 1e9 / (double)(now - t0) : 0;
}

/* One run: a fresh buffer, a follower process, the paced writer here. */
static bool paced_run(const struct lb_config *cfg, const struct lb_work *w,
		      struct lb_readers *r, struct paced_shared *ps,
		      double *writer_rps)
{
	char name[64], path[512];
	struct shmlog_create_opts o;
	shmlog_t *h;
	snprintf(name, sizeof(name), "bench-%d-paced", (int)getpid());
	snprintf(path, sizeof(path), "%s/shmlog-bench-%d-follow.txt",
		 lb_scratch, (int)getpid());
	shmlog_create_opts_init(&o);
	o.size = r->paced_buffer_bytes;
	shmlog_remove(name);
	memset(ps, 0, sizeof(*ps));
	bench_hist_init(&ps->lag);
	if (shmlog_create(name, &o) < 0 || shmlog_open(name, 0, &h) < 0) {
		shmlog_remove(name);
		return false;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		paced_follower(name, path, ps);
	bool ok = pid > 0;
	/* start-up handshake: the follower opens its file and the buffer */
	for (int i = 0; ok && i < 5000 && !atomic_load(&ps->ready); i++)
		usleep(1000);
	ok = ok && atomic_load(&ps->ready) && !ps->failed;
	double secs = cfg->quick ? 0.2 : 1.0;
	uint64_t n = (uint64_t)(r->paced_target_rps * secs), written = 0;
	if (ok)
		*writer_rps = paced_write(h, w, n, r->paced_target_rps,
					  &written);
	atomic_store(&ps->done, 1);
	int status = 0;
	if (pid > 0)
		waitpid(pid, &status, 0);
	ok = ok && *writer_rps > 0 && WIFEXITED(status) &&
	     WEXITSTATUS(status) == 0;
	shmlog_close(h);
	shmlog_remove(name);
	unlink(path);
	if (ok) {
		r->paced_written += written;
		r->paced_shown += ps->shown;
		r->paced_reported_lost += ps->reported_lost;
		r->paced_follower_cpu_s += ps->cpu_s;
	}
	return ok;
}

static void measure_paced(const struct lb_config *cfg, struct lb_readers *r,
			  const struct lb_work *w)
{
	struct paced_shared *ps =
		mmap(NULL, sizeof(*ps), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ps == MAP_FAILED)
		return;
	r->paced_target_rps = PACED_RPS;
	r->paced_buffer_bytes = cfg->quick ? SHMLOG_SIZE_DEFAULT : 16u << 20;
	double rps[PACED_MAX_RUNS], p50[PACED_MAX_RUNS], p99[PACED_MAX_RUNS];
	int runs = cfg->quick ? 1 : PACED_MAX_RUNS, n = 0;
	for (int i = 0; i < runs; i++) {
		if (!paced_run(cfg, w, r, ps, &rps[n]))
			continue;
		p50[n] = (double)bench_hist_quantile(&ps->lag, 0.5);
		p99[n] = (double)bench_hist_quantile(&ps->lag, 0.99);
		if ((double)ps->lag.max > r->paced_lag_max)
			r->paced_lag_max = (double)ps->lag.max;
		n++;
	}
	munmap(ps, sizeof(*ps));
	if (!n)
		return;
	r->paced_ok = true;
	r->paced_runs = n;
	r->paced_writer_rps = bench_median(rps, n);
	r->paced_lag_p50 = bench_median(p50, n);
	r->paced_lag_p99 = bench_median(p99, n);
}

void lb_readers_run(const struct lb_config *cfg, struct lb_readers *r)
{
	struct lb_work w;
	lb_work_seed(&w);
	memset(r, 0, sizeof(*r));
	bench_hist_init(&r->follow);
	measure_dump(cfg, r, &w);
	measure_follow(cfg, r);
	measure_follower_cost(cfg, r, &w);
	measure_paced(cfg, r, &w);
	lb_archive_run(cfg, &r->archive);
	r->ok = r->dump_recs > 0 && r->follow.count > 0;
	if (!r->ok && !r->why[0])
		snprintf(r->why, sizeof(r->why),
			 "the reader API produced no records");
}
