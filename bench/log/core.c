/* SPDX-License-Identifier: MIT */
/*
 * Is every CPU at its full speed? quiet.c sees what runs inside the
 * machine; this sees a neighbour outside it. On a shared host another
 * tenant may run on the other hardware thread of the host core under one
 * of this guest's CPUs: while it does, code bound by how many
 * instructions a core issues a cycle (shmlog's calls, at about 5 a cycle)
 * runs up to 1.8x slower, while code bound by latency (a clock read, a
 * chain of dependent multiplies, a semaphore) does not slow at all. That
 * state lasts from under a second to minutes, and each CPU has its own.
 *
 * The probe is a loop of 8 independent adds an iteration, run for 8 ms
 * of wall time (LB_CORE_PROBE_S), timed by the TSC: ticks per
 * iteration. A core runs it at 4 adds a cycle alone and at half
 * that beside a busy sibling; a CPU shared with another runnable process
 * shows too (the loop gets part of the wall time), and is told apart by
 * the share of the wall time the probe's thread ran (LB_CORE_SHARED).
 * Each CPU the bench may run on is probed by a thread pinned to it, one
 * CPU after the other before a run of one writer, all at once before a
 * run of several. The guest's own CPUs can be the two hardware threads
 * of one host core: then each alone runs at full speed (the other idle)
 * and both together at half (on the AMD EPYC guest, 60 alternated pairs
 * of probes found 35 with both CPUs at full speed in turn, 24 at once, and
 * stretches of seconds where each probed alone took 1.6 ticks and both
 * at once 3.2). A run of one writer leaves the other CPU idle, so in
 * turn is its condition; two writers on two CPUs are that "at once".
 * Each figure is set beside the fastest probe of this bench run (any
 * CPU: they are the same cores).
 * Before a timed run, lb_core_wait() re-probes every LB_CORE_POLL_MS
 * until every CPU is within LB_CORE_FULL of that best, for at most a
 * couple of seconds a run and a budget a part; lb_core_after() probes
 * once after the run. Results are never dropped after the fact: the wait
 * picks the conditions, the counts say how often it got them.
 *
 * Elsewhere than x86-64 the probe is not measured: nothing waits and the
 * counts say so.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "plan.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define LB_CORE_HAVE 1
#else
#define LB_CORE_HAVE 0
#endif

/* How long the probe runs: blocks of LB_CORE_BLOCK iterations of 8 adds
 * until LB_CORE_PROBE_S of wall time have passed. A CPU shared with a
 * process that runs is taken from the probe at a scheduler tick once the
 * probe's slice is out (4 ms ticks at HZ=250), so the probe must outlast
 * a slice and a tick (on a kernel with HZ=100, 10 ms ticks, it may not,
 * and then sees only a neighbour outside the machine): on the AMD EPYC guest of 2026-11 a probe of 1.2 ms
 * or 2.4 ms never saw a thread spinning on its CPU, one of 5 ms saw it
 * 1.7-1.8x. The probe was first a fixed 8M iterations, 5 ms there; on a
 * faster host of the same kind (2026-11-27, 1.13-1.28 ticks an iteration
 * rather than 1.58) that was 3.5-3.9 ms, and a thread spinning on the
 * probe's CPU ran during only 1 to 3 of 15 probes. Bounded by time, the
 * probe is as long on any CPU; a probe the scheduler takes the CPU from
 * does fewer iterations in that time, each the slower by what it lost. */
#define LB_CORE_PROBE_S 0.008
#define LB_CORE_BLOCK 250000

bool lb_core_waits = true;

static double best = INFINITY; /* fewest ticks an iteration seen */
static pthread_mutex_t best_lock = PTHREAD_MUTEX_INITIALIZER;

static double monotonic_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

bool lb_core_measured(void)
{
	return LB_CORE_HAVE;
}

static double cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

double lb_core_probe_here(double *share)
{
#if LB_CORE_HAVE
	double c0 = cpu_s(), w0 = monotonic_s();
	uint64_t r0 = 1, r1 = 2, r2 = 3, r3 = 4, r4 = 5, r5 = 6, r6 = 7, r7 = 8;
	uint64_t t0 = __rdtsc(), iters = 0;
	do {
		for (int i = 0; i < LB_CORE_BLOCK; i++)
			__asm__ volatile(
				"add $1,%0\n\tadd $1,%1\n\tadd $1,%2\n\t"
				"add $1,%3\n\tadd $1,%4\n\tadd $1,%5\n\t"
				"add $1,%6\n\tadd $1,%7"
				: "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3),
				  "+r"(r4), "+r"(r5), "+r"(r6), "+r"(r7));
		iters += LB_CORE_BLOCK;
	} while (monotonic_s() - w0 < LB_CORE_PROBE_S);
	uint64_t t1 = __rdtsc();
	double c1 = cpu_s(), w1 = monotonic_s();
	double v = (double)(t1 - t0) / (double)iters;
	if (share)
		*share = w1 > w0 && c1 >= c0 ? fmin(1.0, (c1 - c0) / (w1 - w0))
					     : NAN;
	pthread_mutex_lock(&best_lock);
	if (v < best)
		best = v;
	pthread_mutex_unlock(&best_lock);
	return v;
#else
	if (share)
		*share = NAN;
	return NAN;
#endif
}

double lb_core_best(void)
{
	pthread_mutex_lock(&best_lock);
	double b = best;
	pthread_mutex_unlock(&best_lock);
	return b;
}

double lb_core_slowdown(double ticks)
{
	double b = lb_core_best();
	return isfinite(b) && b > 0 && ticks > 0 ? ticks / b : NAN;
}

struct probe_arg {
	int cpu;
	double ticks, share;
};

static void *probe_thread(void *p)
{
	struct probe_arg *a = p;
	a->ticks = lb_core_probe_here(&a->share);
	return NULL;
}

static int probe_cpus(int *cpu, int max)
{
	cpu_set_t set;
	int n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpu[n++] = c;
	return n;
}

/* Start a thread pinned to @a->cpu that probes; false if it could not. */
static bool start_pinned(pthread_t *t, struct probe_arg *a)
{
	pthread_attr_t at;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	a->ticks = NAN;
	if (pthread_attr_init(&at) != 0)
		return false;
	bool ok = pthread_attr_setaffinity_np(&at, sizeof(set), &set) == 0 &&
		  pthread_create(t, &at, probe_thread, a) == 0;
	pthread_attr_destroy(&at);
	return ok;
}

double lb_core_probe_all(bool at_once, double *each, int *ncpu,
			 double *share)
{
	int cpu[LB_CORE_MAX_CPUS];
	struct probe_arg a[LB_CORE_MAX_CPUS];
	pthread_t t[LB_CORE_MAX_CPUS];
	bool started[LB_CORE_MAX_CPUS];
	int n = probe_cpus(cpu, LB_CORE_MAX_CPUS);
	if (ncpu)
		*ncpu = n;
	if (!LB_CORE_HAVE || n == 0)
		return NAN;
	for (int i = 0; i < n; i++) {
		a[i].cpu = cpu[i];
		started[i] = start_pinned(&t[i], &a[i]);
		if (!at_once && started[i])
			pthread_join(t[i], NULL);
	}
	for (int i = 0; at_once && i < n; i++)
		if (started[i])
			pthread_join(t[i], NULL);
	/* the best is known once every probe is in */
	double worst = 0, least = 1;
	for (int i = 0; i < n; i++) {
		double s = started[i] ? lb_core_slowdown(a[i].ticks) : NAN;
		if (each)
			each[i] = s;
		if (isnan(s)) /* not measured is not full speed */
			worst = NAN;
		else if (s > worst)
			worst = s;
		if (started[i] && a[i].share < least)
			least = a[i].share;
	}
	if (share)
		*share = least;
	return worst;
}

static bool full(double worst)
{
	return worst <= LB_CORE_FULL;
}

static void pause_ms(int ms)
{
	struct timespec t = {0, ms * 1000000L};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static double probe_every_cpu(double *share)
{
	return lb_core_probe_all(false, NULL, NULL, share);
}

static double probe_every_cpu_at_once(double *share)
{
	return lb_core_probe_all(true, NULL, NULL, share);
}

static double probe_this_cpu(double *share)
{
	return lb_core_slowdown(lb_core_probe_here(share));
}

void lb_core_count_after(struct lb_core *c, double s, double share)
{
	if (!LB_CORE_HAVE)
		return;
	if (!full(s)) {
		c->after++;
		c->after_shared += share < LB_CORE_SHARED;
	}
	if (s > c->worst_after)
		c->worst_after = s;
}

/* Starting from @s and its @share (@s NaN: probe first), re-probe every
 * LB_CORE_POLL_MS while @probe finds a CPU contended, for at most the
 * wait of one run and what is left of the part's budget; count how it
 * went into @c. */
static double wait_full(struct lb_core *c, bool quick,
			double (*probe)(double *share), double s, double share)
{
	double max_s = quick ? LB_CORE_WAIT_QUICK_S : LB_CORE_WAIT_S;
	double budget = quick ? LB_CORE_BUDGET_QUICK_S : LB_CORE_BUDGET_S;
	double t0 = monotonic_s(), waited = 0;
	if (isnan(s))
		s = probe(&share);
	bool first = full(s);
	while (!full(s) && lb_core_waits && waited < max_s &&
	       c->wait_s + waited < budget) {
		pause_ms(LB_CORE_POLL_MS);
		s = probe(&share);
		waited = monotonic_s() - t0;
	}
	c->runs++;
	if (first)
		c->at_once++;
	else if (full(s))
		c->waited++;
	else {
		c->before++;
		c->before_shared += share < LB_CORE_SHARED;
	}
	if (waited > 0) {
		c->wait_s += waited;
		c->waits++;
	}
	if (s > c->worst_before)
		c->worst_before = s;
	return s;
}

void lb_core_wait(struct lb_core *c, bool quick, bool together)
{
	if (!LB_CORE_HAVE) {
		c->runs++; /* printed as "not measured" */
		return;
	}
	wait_full(c, quick,
		  together ? probe_every_cpu_at_once : probe_every_cpu, NAN,
		  1);
}

double lb_core_wait_here(struct lb_core *c, bool quick, double s,
			 double share)
{
	if (!LB_CORE_HAVE)
		return NAN;
	return wait_full(c, quick, probe_this_cpu, s, share);
}

void lb_core_after(struct lb_core *c, bool together)
{
	if (!LB_CORE_HAVE)
		return;
	double share = 1;
	double worst = lb_core_probe_all(together, NULL, NULL, &share);
	lb_core_count_after(c, worst, share);
}

void lb_core_print(FILE *f, const char *what, const struct lb_core *c)
{
	if (!c->runs && !c->rounds)
		return;
	if (!LB_CORE_HAVE) {
		fprintf(f, "# %s: each core's speed not measured (the probe "
			   "is x86-64 only)\n", what);
		return;
	}
	double b = lb_core_best();
	if (c->rounds)
		fprintf(f,
			"# %s: %d of %d rounds with every probe around them "
			"at full speed (within %.0f %%\n#   of the best, %.2f "
			"TSC ticks an iteration of 8 adds)",
			what, c->rounds_full, c->rounds,
			(LB_CORE_FULL - 1) * 100, b);
	else
		fprintf(f,
			"# %s: %d of %d runs started at full speed (every CPU "
			"within %.0f %% of the best,\n#   %.2f TSC ticks an "
			"iteration of 8 adds)",
			what, c->at_once + c->waited, c->runs,
			(LB_CORE_FULL - 1) * 100, b);
	fprintf(f,
		", %d%s after waiting (%d waits, %.1f s);\n#   contended "
		"before %d, after %d (slowest CPU %.2fx before, %.2fx after); "
		"of these,\n#   %d before and %d after had a CPU shared with "
		"another process, the others a\n#   neighbour outside the "
		"machine (a probe that got its CPU's time, and ran slowly)\n",
		c->waited, lb_core_waits ? "" : " (--no-wait-core)", c->waits,
		c->wait_s, c->before, c->after, c->worst_before,
		c->worst_after, c->before_shared, c->after_shared);
}
