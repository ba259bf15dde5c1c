/* SPDX-License-Identifier: MIT */
/*
 * quiet.c sees a helper that runs: a child spinning through a 0.3 s
 * interval makes it NOT ALONE, the same child named as the one measured
 * leaves it alone, and a stopped child adds nothing.
 *
 * core.c's probe sees a CPU it shares: with a thread spinning on the
 * probe's own CPU (the two get about half of it each), the probe is
 * slower than LB_CORE_FULL times the probe just before it, alone; two
 * probes alone in a row agree within LB_CORE_FULL. Each is the median of
 * PAIRS pairs taken one after the other, so that the host's neighbour,
 * which comes and goes and slows every probe of a pair alike, moves
 * neither: on the AMD EPYC guest the medians were 1.54-1.80x shared and
 * 0.94-1.03x alone over 13 runs of this check, against the 1.12 of
 * LB_CORE_FULL (single pairs alone ranged 0.83-1.33x: hence medians).
 * The probe also says it shared its CPU: it ran under LB_CORE_SHARED of
 * its wall time with the spinner (46-55 %), and under 0.75 of what it ran
 * alone (99-100 % on a quiet machine, 86 % beside two other benchmarks).
 * Both need the scheduler to take the CPU from the probe while it runs:
 * on a faster host of the AMD EPYC kind (2026-11-27) the probe, then a
 * fixed count of iterations, took 3.5-3.9 ms, under a 4 ms tick, and
 * the spinner ran during 1 to 3 of 15 probes: the check failed a
 * fresh-clone CI run. The probe now runs for a fixed time (core.c), and
 * the check says in how many probes the spinner ran. It is made in up to
 * ROUNDS rounds of PAIRS pairs, each printed, and fails if no round tells
 * a shared CPU from one alone: a probe that cannot see sharing fails
 * every round.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plan.h"

static struct lb_quiet_mark a, b;

static void interval(void)
{
	struct timespec t = {0, 300000000};
	lb_quiet_mark(&a);
	while (nanosleep(&t, &t) < 0)
		;
	lb_quiet_mark(&b);
}

enum { PAIRS = 15, ROUNDS = 3 };

static atomic_int spin_stop, spin_started;
static atomic_ulong spin_count; /* the spinner's laps: it ran */

static void *spin(void *p)
{
	(void)p;
	unsigned long n = 0;
	atomic_store(&spin_started, 1);
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		atomic_store_explicit(&spin_count, ++n, memory_order_relaxed);
	return NULL;
}

static int cmp_d(const void *p, const void *q)
{
	double x = *(const double *)p, y = *(const double *)q;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct shared_probe {
	double ticks, share;
	bool ran; /* the spinner ran while it probed */
};

static void *shared_probe(void *p)
{
	struct shared_probe *sp = p;
	unsigned long laps = atomic_load(&spin_count);
	sp->ticks = lb_core_probe_here(&sp->share);
	sp->ran = atomic_load(&spin_count) != laps;
	return NULL;
}

static bool start_on(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t at;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (pthread_attr_init(&at) != 0)
		return false;
	bool ok = pthread_attr_setaffinity_np(&at, sizeof(one), &one) == 0 &&
		  pthread_create(t, &at, fn, arg) == 0;
	pthread_attr_destroy(&at);
	return ok;
}

/* A probe on @cpu with a spinning thread there. The probe is a thread of
 * its own, started once the spinner runs, while this one waits in
 * pthread_join(): probed from this thread, which had barely run while it
 * waited for the spinner, the scheduler owed it the time the spinner had
 * taken, and a 4 ms probe often ran whole before the spinner ran again
 * (EEVDF's lag: in 2026-11-27's failing runs the spinner ran during 1 to
 * 3 probes of 15). Two new threads on one CPU share it from the start,
 * as a benchmark's process and a neighbour's do. */
static void probe_shared(int cpu, struct shared_probe *sp)
{
	pthread_t spinner, prober;
	sp->ticks = sp->share = NAN;
	sp->ran = false;
	atomic_store(&spin_stop, 0);
	atomic_store(&spin_started, 0);
	if (!start_on(&spinner, cpu, spin, NULL))
		return;
	/* the spinner runs once this thread gives it the CPU; bounded */
	for (long i = 0; i < 100000000 && !atomic_load(&spin_started); i++)
		sched_yield();
	if (atomic_load(&spin_started) &&
	    start_on(&prober, cpu, shared_probe, sp))
		pthread_join(prober, NULL);
	atomic_store(&spin_stop, 1);
	pthread_join(spinner, NULL);
}

/* One round of PAIRS pairs on @cpu (this thread pinned there); the
 * number of checks it failed, each said. */
static int core_round(int cpu, int round)
{
	int fails = 0, ran_n = 0;
	double shared[PAIRS], calm[PAIRS], sh_with[PAIRS], sh_alone[PAIRS];
	for (int i = 0; i < PAIRS; i++) {
		struct shared_probe sp;
		double before = lb_core_probe_here(NULL);
		probe_shared(cpu, &sp);
		double after = lb_core_probe_here(&sh_alone[i]);
		shared[i] = sp.ticks / before;
		sh_with[i] = sp.share;
		calm[i] = after / before;
		ran_n += sp.ran;
	}
	double ms = median(shared, PAIRS), mc = median(calm, PAIRS);
	double sw = median(sh_with, PAIRS), sa = median(sh_alone, PAIRS);
	printf("round %d: on CPU %d, shared with a spinning thread %.2fx the "
	       "probe alone before it,\n  alone %.2fx (medians of %d pairs; "
	       "full speed is within %.2fx);\n  the probe ran %.0f %% of its "
	       "wall time shared, %.0f %% alone; the spinner ran during %d of "
	       "%d shared probes\n",
	       round, cpu, ms, mc, PAIRS, LB_CORE_FULL, sw * 100, sa * 100,
	       ran_n, PAIRS);
	if (!(ms > LB_CORE_FULL)) {
		printf("  not seen: a CPU shared with a spinning thread was not "
		       "slower\n");
		fails++;
	}
	/* alone is not asserted to be all of it: another engineer's job on
	 * this CPU takes its share of any probe; the spinner takes half */
	if (!(sw < LB_CORE_SHARED) || !(sw < 0.75 * sa)) {
		printf("  not seen: the probe's share of its CPU does not tell "
		       "a shared CPU (%.2f) from one alone (%.2f)\n", sw, sa);
		fails++;
	}
	if (!(mc <= LB_CORE_FULL && mc >= 1 / LB_CORE_FULL)) {
		printf("  not seen: two probes alone differ by more than full "
		       "speed allows\n");
		fails++;
	}
	return fails;
}

static int core_check(void)
{
	if (!lb_core_measured()) {
		printf("core probe: not measured here (x86-64 only)\n");
		return 0;
	}
	int ncpu = 0;
	double each[LB_CORE_MAX_CPUS];
	double worst = lb_core_probe_all(false, each, &ncpu, NULL);
	printf("core probe: %d CPUs, the slowest %.2fx the best (%.2f ticks "
	       "an iteration)\n", ncpu, worst, lb_core_best());
	if (ncpu < 1 || !(worst >= 1.0)) {
		printf("FAIL: probing every CPU gave %d CPUs, slowest %.3f\n",
		       ncpu, worst);
		return 1;
	}
	int cpu = sched_getcpu();
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (cpu < 0 || sched_setaffinity(0, sizeof(one), &one) != 0) {
		printf("FAIL: cannot pin to CPU %d\n", cpu);
		return 1;
	}
	for (int r = 1; r <= ROUNDS; r++)
		if (!core_round(cpu, r))
			return 0;
	printf("FAIL: in none of %d rounds did the probe tell a CPU shared "
	       "with a spinning thread from one alone\n", ROUNDS);
	return 1;
}

int main(void)
{
	int fails = core_check();
	pid_t p = fork();
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			;
	}
	if (p < 0)
		return 1;
	struct lb_quiet busy = {0}, skipped = {0}, stopped = {0};
	interval();
	lb_quiet_add(&busy, &a, &b, NULL, 0);
	lb_quiet_add(&skipped, &a, &b, &p, 1);
	kill(p, SIGSTOP);
	interval();
	lb_quiet_add(&stopped, &a, &b, NULL, 0);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	lb_quiet_print(stdout, "a spinning child", &busy);
	lb_quiet_print(stdout, "the same, measured", &skipped);
	lb_quiet_print(stdout, "the child stopped", &stopped);
	if (lb_quiet_alone(&busy) || busy.others_s <= 0) {
		printf("FAIL: a spinning child was not seen\n");
		fails++;
	}
	if (!lb_quiet_alone(&skipped) || skipped.others_s != 0) {
		printf("FAIL: the measured child counted as another\n");
		fails++;
	}
	if (!lb_quiet_alone(&stopped)) {
		printf("FAIL: a stopped child used CPU\n");
		fails++;
	}
	return fails != 0;
}
