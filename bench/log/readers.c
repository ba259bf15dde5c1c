/* SPDX-License-Identifier: MIT */
/*
 * shmlog's read side, which seed 000 left untested:
 *  - dump rate: a full buffer read oldest-first, raw, formatted as logcat's
 *    threadtime and as JSON lines, into /dev/null through a 1 MiB stdio
 *    buffer (the reader's own memory, no faults per record);
 *  - follow latency: a writer stamps CLOCK_MONOTONIC into an 8-byte record
 *    and writes it; a follower blocked in shmlog_reader_wait() wakes, reads
 *    it and takes the difference. Writes are spaced 300 us apart so that
 *    the follower is asleep again each time: this is the wake-up path;
 *  - what an active follower costs the writers: the single-writer run of
 *    the main table, alone and with a follower process reading everything
 *    (its CPU reported per record).
 * The formatters here are the benchmark's own, shaped like the CLI's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#ifndef HAVE_SHMLOG
void lb_readers_run(const struct lb_config *cfg, struct lb_readers *r)
{
	(void)cfg;
	memset(r, 0, sizeof(*r));
	snprintf(r->why, sizeof(r->why),
		 "the shmlog library was not built into this binary");
}
#else
#include "shmlog.h"

/* ---- formatters ---- */

struct fmt_cache {
	time_t sec;
	char date[32]; /* "MM-DD HH:MM:SS" of sec */
};

static void fmt_threadtime(FILE *f, struct fmt_cache *fc,
			   const struct shmlog_record *rec)
{
	time_t sec = (time_t)(rec->time_ns / 1000000000);
	if (sec != fc->sec) { /* localtime_r once a second, as logcat does */
		struct tm tm;
		localtime_r(&sec, &tm);
		strftime(fc->date, sizeof(fc->date), "%m-%d %H:%M:%S", &tm);
		fc->sec = sec;
	}
	int msg_len = (int)rec->msg_len;
	while (msg_len > 0 && rec->msg[msg_len - 1] == '\n')
		msg_len--;
	fprintf(f, "%s.%03d %5u %5u %c %-8s: %.*s\n", fc->date,
		(int)(rec->time_ns / 1000000 % 1000), rec->pid, rec->tid,
		shmlog_prio_char(rec->prio), rec->tag, msg_len, rec->msg);
}

static void json_escaped(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fputc('\\', f), fputc(c, f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

static void fmt_json(FILE *f, const struct shmlog_record *rec)
{
	fprintf(f, "{\"time_ns\":%lld,\"pid\":%u,\"tid\":%u,\"prio\":\"%c\",\"tag\":\"",
		(long long)rec->time_ns, rec->pid, rec->tid,
		shmlog_prio_char(rec->prio));
	json_escaped(f, rec->tag, rec->tag_len);
	fputs("\",\"msg\":\"", f);
	json_escaped(f, rec->msg, rec->msg_len);
	fputs("\"}\n", f);
}

/* ---- dump ---- */

enum dump_fmt { DUMP_RAW, DUMP_THREADTIME, DUMP_JSON };
#define MAX_DUMP_REPS 3

/* Where the raw dump puts what it read, so that the reads stay. */
static volatile uint64_t dump_sink;

/* Read the whole buffer once; returns records/s, and the count in *n. */
static double dump_once(const char *name, enum dump_fmt fmt, FILE *out,
			uint64_t *n)
{
	shmlog_reader_t *rd;
	struct shmlog_record rec;
	struct shmlog_lost lost;
	struct fmt_cache fc = {0};
	if (shmlog_reader_open(name, 0, &rd) < 0)
		return -1;
	uint64_t count = 0, t0 = bench_now_ns();
	int ev;
	while ((ev = shmlog_reader_next(rd, &rec, &lost)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		count++;
		if (fmt == DUMP_THREADTIME)
			fmt_threadtime(out, &fc, &rec);
		else if (fmt == DUMP_JSON)
			fmt_json(out, &rec);
		else
			dump_sink += rec.msg_len;
	}
	fflush(out);
	uint64_t t1 = bench_now_ns();
	shmlog_reader_close(rd);
	*n = count;
	return count ? (double)count * 1e9 / (double)(t1 - t0) : -1;
}

static int fill_buffer(const char *name, const struct lb_work *w)
{
	shmlog_t *h;
	struct shmlog_info info;
	if (shmlog_open(name, 0, &h) < 0 || shmlog_info(name, &info) < 0)
		return -1;
	/* Twice the capacity in records of this size: the ring is full and
	 * has wrapped, as a long-lived buffer is. */
	uint64_t n = 2 * info.capacity / (uint64_t)(w->avg_len + 8);
	for (uint64_t i = 0; i < n; i++) {
		const struct lb_msg *m = &w->m[i % LB_WORK_N];
		shmlog_write_n(h, m->prio, m->tag, m->msg, m->len);
	}
	shmlog_close(h);
	return 0;
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
		snprintf(r->why, sizeof(r->why), "cannot create and fill %s", name);
		shmlog_remove(name);
		return;
	}
	FILE *out = fopen("/dev/null", "w");
	static char buf[1 << 20];
	if (!out) {
		shmlog_remove(name);
		return;
	}
	setvbuf(out, buf, _IOFBF, sizeof(buf));
	double *dst[3] = {&r->dump_raw_rps, &r->dump_threadtime_rps,
			  &r->dump_json_rps};
	int reps = cfg->quick ? 1 : 3;
	for (int f = 0; f < 3; f++) {
		double v[MAX_DUMP_REPS];
		for (int i = 0; i < reps; i++)
			v[i] = dump_once(name, (enum dump_fmt)f, out, &r->dump_recs);
		*dst[f] = bench_median(v, reps);
	}
	fclose(out);
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
	struct follow_shared *fs = mmap(NULL, sizeof(*fs), PROT_READ | PROT_WRITE,
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

static double run_median(struct lb_ctx *c, const struct lb_config *cfg,
			 const struct lb_work *w, double *p99, double *coll)
{
	static struct lb_result res;
	double v[16];
	int reps = cfg->reps < 16 ? cfg->reps : 16, n = 0;
	double p[16];
	uint64_t recs = 0;
	double cpu = 0;
	for (int i = 0; i < reps; i++) {
		lb_run(c, w, cfg, 1, 1, &res);
		if (!res.ok || res.wall_s <= 0)
			continue;
		v[n] = (double)res.recs / res.wall_s;
		p[n++] = (double)bench_hist_quantile(&res.hist, 0.99);
		recs += res.recs;
		cpu += res.coll_cpu_s;
	}
	*p99 = bench_median(p, n);
	if (coll)
		*coll = recs ? cpu * 1e9 / (double)recs : 0;
	return bench_median(v, n);
}

static void measure_follower_cost(const struct lb_config *cfg,
				  struct lb_readers *r, const struct lb_work *w)
{
	struct lb_ctx c = {.ct = &lb_shmlog_default};
	if (c.ct->setup(&c) < 0)
		return;
	/* Same buffer, alone and then followed, runs alternated would be
	 * fairer still; a median of --reps runs each is what we afford. */
	r->alone_rps = run_median(&c, cfg, w, &r->alone_p99, NULL);
	struct active_arg a = {c.arg, lb_sink_new()};
	if (a.sink) {
		c.sink = a.sink;
		c.collector = lb_spawn(&c, active_follower, &a);
		if (c.collector > 0) {
			usleep(20000); /* let it open and go to sleep */
			r->followed_rps = run_median(&c, cfg, w, &r->followed_p99,
						     &r->follower_cpu_ns_per_rec);
			lb_stop(c.collector);
		}
		lb_sink_free(a.sink);
		c.sink = NULL;
		c.collector = 0;
	}
	c.ct->teardown(&c);
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
	r->ok = r->dump_recs > 0 && r->follow.count > 0;
	if (!r->ok && !r->why[0])
		snprintf(r->why, sizeof(r->why),
			 "the reader API produced no records");
}
#endif
