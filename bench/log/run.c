/* SPDX-License-Identifier: MIT */
/*
 * The measurement harness. One run of a contender:
 *
 *   parent                               writer process(es), thread(s)
 *   ------                               -----------------------------
 *   reset(); base = consumed()
 *   fork procs ------------------------> open(arg)            [once per
 * process] warm up for warm_s   [each thread] wait until every writer is ready
 * <-- ready++ wait until the collector has consumed the warm-up; CPU0 go = 1
 * ----------------------------> getrusage(SELF)      [first thread] batches of
 * `batch` calls, each batch timed; until go + dur_s close()  (drains in-process
 * queues) getrusage(SELF) reap; wait until the collector has consumed
 * everything; CPU1
 *
 * Why it is built this way:
 *  - Writers run in forked processes, never in the parent: each run starts
 *    from a clean address space, the syslog writer can enter its own mount
 *    namespace, spdlog's thread pool dies with its process, and "one writer
 *    process" and "N writer processes" are the same code.
 *  - Timing every call with clock_gettime would add ~20 ns to calls that
 *    cost about as much, so calls are timed in batches and the batch mean
 *    goes into the histogram; the timer's cost is measured and printed.
 *    Consequence: percentiles are of batch means, so a single slow call is
 *    diluted by the batch size (max and p99.9 understate single outliers;
 *    --batch 1 times every call).
 *  - Throughput comes from the whole run's wall time, not from the
 *    histogram.
 *  - The collector's backlog from warm-up is drained before the measured
 *    interval, and its CPU is read around that interval, so a daemon's CPU
 *    is charged to the records it handled.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

struct lb_slot {
	uint64_t warm_recs, warm_wire;
	uint64_t recs, bytes, wire, errs;
	uint64_t t_end, t_closed;
	/* Process usage (first slot of a process only) at go, at the end of
	 * the first writer's loop, and after close(): faults and switches
	 * are counted over the loop, CPU up to close() so that in-process
	 * queues drained there (spdlog) are paid for. */
	struct bench_usage u0, u_end, u1;
	int failed;
	char err[160];
	struct bench_hist hist;
};

struct lb_shared {
	atomic_int ready;
	atomic_int go;
	uint64_t go_ns;
	struct lb_slot slot[];
};

struct lb_thread {
	const struct lb_contender *ct;
	const struct lb_work *w;
	const struct lb_config *cfg;
	struct lb_shared *sh;
	struct lb_slot *s;
	void *h;
	unsigned first_msg; /* writers start at different messages */
	bool first;	    /* takes the process's usage snapshots */
};

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Write @n records starting at message *@k; count into @s. */
static inline void write_batch(struct lb_thread *t, unsigned *k, int n,
			       uint64_t *bytes, uint64_t *wire, uint64_t *errs)
{
	for (int i = 0; i < n; i++) {
		const struct lb_msg *m = &t->w->m[(*k)++ % LB_WORK_N];
		long r = t->ct->write(t->h, m);
		if (LB_UNLIKELY(r < 0))
			(*errs)++;
		else
			*wire += (uint64_t)r;
		*bytes += m->len;
	}
}

/* Map our slot's pages now: a shared mapping's pages are not mapped in a
 * forked child until touched, and a histogram bucket touched for the first
 * time in the measured loop would be a page fault charged to the
 * contender. */
static void touch_slot(struct lb_slot *s)
{
	for (char *p = (char *)s; p < (char *)(s + 1); p += 4096)
		*(volatile char *)p = *(volatile char *)p;
}

static void *writer_thread(void *p)
{
	struct lb_thread *t = p;
	struct lb_slot *s = t->s;
	const int batch = t->cfg->batch;
	unsigned k = t->first_msg;
	uint64_t bytes = 0, wire = 0, errs = 0, n = 0;

	touch_slot(s);

	/* Warm-up: fault in the ring or file pages, fill caches and queues,
	 * claim a shmlog lane: what steady state means. */
	uint64_t end = bench_now_ns() + (uint64_t)(t->cfg->warm_s * 1e9);
	do {
		write_batch(t, &k, batch, &bytes, &wire, &errs);
		n += (uint64_t)batch;
	} while (bench_now_ns() < end);
	s->warm_recs = n;
	s->warm_wire = wire;
	bytes = wire = errs = n = 0;

	atomic_fetch_add(&t->sh->ready, 1);
	while (!atomic_load(&t->sh->go))
		sleep_ns(20000);
	if (t->first)
		bench_usage_now(&s->u0, RUSAGE_SELF);

	uint64_t deadline = t->sh->go_ns + (uint64_t)(t->cfg->dur_s * 1e9);
	uint64_t t0 = bench_now_ns();
	while (t0 < deadline) {
		write_batch(t, &k, batch, &bytes, &wire, &errs);
		uint64_t t1 = bench_now_ns();
		bench_hist_add(&s->hist, (t1 - t0 + (uint64_t)batch / 2) /
					     (uint64_t)batch);
		n += (uint64_t)batch;
		t0 = t1;
	}
	if (t->first)
		bench_usage_now(&s->u_end, RUSAGE_SELF);
	s->t_end = t0;
	s->recs = n;
	s->bytes = bytes;
	s->wire = wire;
	s->errs = errs;
	return NULL;
}

static void fail_slots(struct lb_shared *sh, int first, int n, const char *err)
{
	for (int i = first; i < first + n; i++) {
		sh->slot[i].failed = 1;
		snprintf(sh->slot[i].err, sizeof(sh->slot[i].err), "%s", err);
		atomic_fetch_add(&sh->ready, 1);
	}
}

static void __attribute__((noreturn))
writer_process(struct lb_ctx *c, const struct lb_work *w,
	       const struct lb_config *cfg, struct lb_shared *sh, int p,
	       int threads)
{
	char err[160] = "";
	int first = p * threads;
	void *h = c->ct->open(c->arg, err, sizeof(err));
	if (!h) {
		fail_slots(sh, first, threads, err[0] ? err : "open failed");
		_exit(1);
	}
	struct lb_thread t[threads];
	pthread_t tid[threads];
	for (int i = 0; i < threads; i++)
		t[i] = (struct lb_thread){
		    .ct = c->ct,
		    .w = w,
		    .cfg = cfg,
		    .sh = sh,
		    .s = &sh->slot[first + i],
		    .h = h,
		    .first_msg = (unsigned)(first + i) * 5u,
		    .first = i == 0,
		};
	if (threads == 1) {
		writer_thread(&t[0]);
	} else {
		int started = 0;
		for (int i = 0; i < threads; i++) {
			if (pthread_create(&tid[i], NULL, writer_thread,
					   &t[i]) != 0) {
				fail_slots(sh, first + i, threads - i,
					   "pthread_create failed");
				break;
			}
			started++;
		}
		for (int i = 0; i < started; i++)
			pthread_join(tid[i], NULL);
	}
	struct lb_slot *s0 = &sh->slot[first];
	c->ct->close(h);
	s0->t_closed = bench_now_ns();
	bench_usage_now(&s0->u1, RUSAGE_SELF);
	_exit(0);
}

static int64_t consumed(struct lb_ctx *c)
{
	if (c->ct->consumed)
		return c->ct->consumed(c);
	if (!c->sink)
		return -1;
	return (int64_t)atomic_load(
	    c->ct->flags & LB_SINK_BYTES ? &c->sink->bytes : &c->sink->recs);
}

/* Wait until the collector has consumed @target (records or bytes); give
 * up after 3 s without progress. Returns what it had consumed. */
static int64_t drain(struct lb_ctx *c, int64_t target)
{
	int64_t v = consumed(c), last = v;
	uint64_t idle_since = bench_now_ns();
	while (v >= 0 && v < target) {
		sleep_ns(200000);
		v = consumed(c);
		if (v != last) {
			last = v;
			idle_since = bench_now_ns();
		} else if (bench_now_ns() - idle_since > 3000000000ull) {
			break;
		}
	}
	return v;
}

/* Wait for @n children; kill them all if they overrun @deadline. */
static void reap(pid_t *pid, int n, uint64_t deadline)
{
	int left = n;
	while (left > 0) {
		for (int i = 0; i < n; i++) {
			if (pid[i] > 0 &&
			    waitpid(pid[i], NULL, WNOHANG) == pid[i]) {
				pid[i] = 0;
				left--;
			}
		}
		if (left == 0)
			break;
		if (bench_now_ns() > deadline) {
			for (int i = 0; i < n; i++)
				if (pid[i] > 0) {
					kill(pid[i], SIGKILL);
					waitpid(pid[i], NULL, 0);
					pid[i] = 0;
				}
			break;
		}
		sleep_ns(500000);
	}
}

static bool wait_ready(struct lb_shared *sh, int n, pid_t *pid, int procs)
{
	uint64_t limit = bench_now_ns() + 60000000000ull;
	while (atomic_load(&sh->ready) < n) {
		if (bench_now_ns() > limit)
			return false;
		/* A writer that died before saying ready would hang us. */
		for (int i = 0; i < procs; i++) {
			int st;
			if (pid[i] > 0 &&
			    waitpid(pid[i], &st, WNOHANG) == pid[i]) {
				pid[i] = 0;
				if (atomic_load(&sh->ready) < n)
					return false;
			}
		}
		sleep_ns(1000000);
	}
	return true;
}

static void sum_results(struct lb_ctx *c, struct lb_shared *sh, int procs,
			int threads, struct lb_result *res)
{
	uint64_t last_end = sh->go_ns, last_close = sh->go_ns;
	for (int i = 0; i < procs * threads; i++) {
		struct lb_slot *s = &sh->slot[i];
		if (s->failed) {
			res->ok = false;
			snprintf(res->err, sizeof(res->err), "%s", s->err);
			continue;
		}
		res->recs += s->recs;
		res->bytes += s->bytes;
		res->errs += s->errs;
		bench_hist_merge(&res->hist, &s->hist);
		if (s->t_end > last_end)
			last_end = s->t_end;
		if (i % threads == 0) {
			struct bench_usage d =
			    bench_usage_diff(&s->u0, &s->u_end);
			struct bench_usage all =
			    bench_usage_diff(&s->u0, &s->u1);
			res->cpu_s += all.user_s + all.sys_s;
			res->minflt += d.minflt;
			res->majflt += d.majflt;
			res->nvcsw += d.nvcsw;
			res->nivcsw += d.nivcsw;
			if (s->t_closed > last_close)
				last_close = s->t_closed;
		}
	}
	(void)c;
	res->wall_s = (double)(last_end - sh->go_ns) / 1e9;
	res->e2e_s = (double)(last_close - sh->go_ns) / 1e9;
}

void lb_run(struct lb_ctx *c, const struct lb_work *w,
	    const struct lb_config *cfg, int procs, int threads,
	    struct lb_result *res)
{
	int n = procs * threads;
	size_t size =
	    sizeof(struct lb_shared) + (size_t)n * sizeof(struct lb_slot);
	memset(res, 0, sizeof(*res));
	bench_hist_init(&res->hist);
	res->ok = true;
	res->writers = n;
	res->delivered = 1;

	struct lb_shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		res->ok = false;
		snprintf(res->err, sizeof(res->err), "mmap: %s",
			 strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++)
		bench_hist_init(&sh->slot[i].hist);
	if (c->ct->reset)
		c->ct->reset(c);
	int64_t base = consumed(c);
	bool bytes_sink = c->ct->flags & LB_SINK_BYTES;

	pid_t pid[procs];
	fflush(NULL);
	for (int p = 0; p < procs; p++) {
		pid[p] = fork();
		if (pid[p] == 0)
			writer_process(c, w, cfg, sh, p, threads);
		if (pid[p] < 0) {
			fail_slots(sh, p * threads, threads, "fork failed");
			pid[p] = 0;
		}
	}
	if (!wait_ready(sh, n, pid, procs)) {
		res->ok = false;
		snprintf(res->err, sizeof(res->err),
			 "a writer died or hung before the start");
	}

	int64_t warm = 0;
	for (int i = 0; i < n; i++)
		warm += (int64_t)(bytes_sink ? sh->slot[i].warm_wire
					     : sh->slot[i].warm_recs);
	if (base >= 0)
		drain(c, base + warm);
	double cpu0 = c->collector > 0 ? lb_proc_cpu_s(c->collector) : -1;

	sh->go_ns = bench_now_ns();
	atomic_store(&sh->go, 1);
	/* No writer ends before dur_s: sleep through it in one go. On two
	 * CPUs with two writers, every wake-up of ours (reap() looks every
	 * 0.5 ms) is a writer taken off its CPU, its caches cooled. */
	sleep_ns((long)(cfg->dur_s * 1e9));
	reap(pid, procs, sh->go_ns + (uint64_t)((cfg->dur_s + 60) * 1e9));

	sum_results(c, sh, procs, threads, res);
	int64_t sent = 0;
	for (int i = 0; i < n; i++)
		sent +=
		    (int64_t)(bytes_sink ? sh->slot[i].wire : sh->slot[i].recs);
	if (base >= 0) {
		int64_t got = drain(c, base + warm + sent) - base - warm;
		double e2e = (double)(bench_now_ns() - sh->go_ns) / 1e9;
		if (e2e > res->e2e_s)
			res->e2e_s = e2e;
		res->delivered = sent > 0 ? (double)got / (double)sent : 1;
	}
	double cpu1 = c->collector > 0 ? lb_proc_cpu_s(c->collector) : -1;
	if (cpu0 >= 0 && cpu1 >= cpu0)
		res->coll_cpu_s = cpu1 - cpu0;
	munmap(sh, size);
}

/* ---- syscalls per record, under strace ---- */

static long strace_writer(struct lb_ctx *c, const char *exe, long count)
{
	char nbuf[32];
	snprintf(nbuf, sizeof(nbuf), "%ld", count);
	char *argv[] = {(char *)exe,
			"log",
			"--internal-writer",
			(char *)c->ct->name,
			c->arg,
			nbuf,
			NULL};
	int64_t base = consumed(c), expect = count;
	if (c->ct->flags & LB_SINK_BYTES) {
		struct lb_work w;
		lb_work_seed(&w);
		expect = 0;
		for (long i = 0; i < count; i++) {
			const struct lb_msg *m = &w.m[i % LB_WORK_N];
			expect += (int64_t)(sizeof(struct lb_hdr) + m->tag_len +
					    m->len);
		}
	}
	long calls = bench_strace_count(argv);
	if (base >= 0) /* keep the next run's baseline honest */
		drain(c, base + expect);
	return calls;
}

double lb_syscalls_per_rec(struct lb_ctx *c, const struct lb_config *cfg)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	long n1 = cfg->quick ? 200 : 1000, n2 = cfg->quick ? 1200 : 5000;
	if (c->ct->reset)
		c->ct->reset(c);
	long a = strace_writer(c, exe, n1);
	long b = a < 0 ? -1 : strace_writer(c, exe, n2);
	if (a < 0 || b < 0)
		return -1;
	double v = (double)(b - a) / (double)(n2 - n1);
	return v < 0 ? 0 : v;
}

int lb_internal_writer(int argc, char **argv)
{
	/* log --internal-writer NAME ARG COUNT */
	if (argc != 5)
		return 2;
	const struct lb_contender *ct = lb_find(argv[2]);
	if (!ct || !ct->open)
		return 2;
	struct lb_work w;
	lb_work_seed(&w);
	char err[160];
	void *h = ct->open(argv[3], err, sizeof(err));
	if (!h) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	long count = atol(argv[4]);
	for (long i = 0; i < count; i++)
		ct->write(h, &w.m[i % LB_WORK_N]);
	ct->close(h);
	return 0;
}
