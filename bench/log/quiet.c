/* SPDX-License-Identifier: MIT */
/*
 * Was a measurement alone? Two figures taken around each timed interval:
 *
 *   the bench's others   CPU used by every other live process the bench
 *                        started (collectors, daemons, followers, strace,
 *                        writers of other runs): this process's
 *                        descendants, less the ones the caller measures.
 *                        A helper left running or spinning shows here; a
 *                        stopped or blocked one adds nothing.
 *   outside the bench    CPU the machine's CPUs spent (/proc/stat, all
 *                        of them, in clock ticks) less what the bench
 *                        itself used (this process, its reaped children,
 *                        its live descendants): other tenants, kernel
 *                        threads, a log forwarder reading /dev/kmsg.
 *
 * Neither sees a neighbour outside the guest (another tenant on the
 * host core's other hardware thread), which slows throughput-bound code
 * on this vCPU by up to 1.8x while the clock read stays as it is; core.c
 * probes each CPU for that one before and after each run (and around
 * each of the breakdown's rounds).
 * Descendants' CPU is read with their process CPU clocks (nanoseconds);
 * /proc/stat is in ticks (10 ms), so "outside" is good to a few hundredths
 * of a CPU over a half-second run.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "plan.h"

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static uint64_t tv_ns(const struct timeval *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_usec * 1000u;
}

/* A process's CPU time, all threads, in ns; 0 if it is gone. */
static uint64_t proc_cpu_ns(pid_t pid)
{
	clockid_t cid;
	struct timespec t;
	if (clock_getcpuclockid(pid, &cid) != 0 || clock_gettime(cid, &t) != 0)
		return 0;
	return ts_ns(&t);
}

/* Parent of @pid from /proc/<pid>/stat, or -1. */
static pid_t ppid_of(const char *pid)
{
	char buf[512];
	const char *p = lb_proc_stat(pid, buf, sizeof(buf));
	int pp;
	if (!p || sscanf(p, "%*c %d", &pp) != 1)
		return -1;
	return (pid_t)pp;
}

/* Every descendant of this process into m->desc (at most LB_QUIET_MAX). */
static void find_descendants(struct lb_quiet_mark *m)
{
	static pid_t pid[8192], par[8192];
	int n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && n < 8192) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid_t pp = ppid_of(e->d_name);
		if (pp < 0)
			continue;
		pid[n] = (pid_t)atoi(e->d_name);
		par[n] = pp;
		n++;
	}
	closedir(d);
	/* Breadth first from us: the tree of a bench is shallow. */
	pid_t self = getpid();
	m->n = 0;
	for (int i = 0; i < n && m->n < LB_QUIET_MAX; i++)
		if (par[i] == self)
			m->desc[m->n++] = pid[i];
	for (int k = 0; k < m->n; k++)
		for (int i = 0; i < n && m->n < LB_QUIET_MAX; i++)
			if (par[i] == m->desc[k])
				m->desc[m->n++] = pid[i];
}

static uint64_t busy_ticks(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	/* user nice system idle iowait irq softirq steal */
	int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			 &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			 &v[7]);
	fclose(f);
	if (got < 7)
		return 0;
	return v[0] + v[1] + v[2] + v[5] + v[6];
}

static bool skipped(pid_t p, const pid_t *skip, int nskip)
{
	for (int i = 0; i < nskip; i++)
		if (skip[i] == p)
			return true;
	return false;
}

void lb_quiet_mark(struct lb_quiet_mark *m)
{
	find_descendants(m);
	uint64_t live = 0;
	for (int i = 0; i < m->n; i++)
		live += m->cpu[i] = proc_cpu_ns(m->desc[i]);
	m->busy_ticks = busy_ticks();
	struct rusage s, c;
	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	m->bench_ns = live + tv_ns(&s.ru_utime) + tv_ns(&s.ru_stime) +
		      tv_ns(&c.ru_utime) + tv_ns(&c.ru_stime);
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	m->wall_ns = ts_ns(&t);
}

void lb_quiet_add(struct lb_quiet *q, const struct lb_quiet_mark *a,
		  const struct lb_quiet_mark *b, const pid_t *skip, int nskip)
{
	/* Processes alive at both marks, and the ones born between: what
	 * they used in between. One that died in between is in neither
	 * sum (it is in RUSAGE_CHILDREN, and so in the bench's total). */
	uint64_t others = 0;
	for (int i = 0; i < b->n; i++) {
		if (skipped(b->desc[i], skip, nskip))
			continue;
		uint64_t before = 0;
		for (int k = 0; k < a->n; k++)
			if (a->desc[k] == b->desc[i])
				before = a->cpu[k];
		if (b->cpu[i] > before)
			others += b->cpu[i] - before;
	}
	double tick_s = 1.0 / (double)sysconf(_SC_CLK_TCK);
	double busy = (double)(b->busy_ticks - a->busy_ticks) * tick_s;
	double bench = (double)(b->bench_ns - a->bench_ns) / 1e9;
	double outside = busy > bench ? busy - bench : 0;
	double s = (double)others / 1e9;
	q->runs++;
	q->others_s += s;
	if (s > q->others_max_s)
		q->others_max_s = s;
	q->outside_s += outside;
	q->wall_s += (double)(b->wall_ns - a->wall_ns) / 1e9;
}

bool lb_quiet_alone(const struct lb_quiet *q)
{
	/* 1 ms of helpers' CPU a second of measurement: a helper woken once
	 * by a timer, not one that runs. */
	return q->others_s <= 0.001 * q->wall_s + 1e-4;
}

void lb_quiet_print(FILE *f, const char *what, const struct lb_quiet *q)
{
	if (!q->runs)
		return;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	fprintf(f,
		"# %s: %s, the bench's other processes used %.1f ms of CPU "
		"in %.1f s\n#   (at most %.1f ms in one of %d runs); outside the "
		"bench, %.2f of the %ld CPUs were busy\n",
		what, lb_quiet_alone(q) ? "alone" : "NOT ALONE",
		q->others_s * 1e3, q->wall_s, q->others_max_s * 1e3, q->runs,
		q->wall_s > 0 ? q->outside_s / q->wall_s : 0, ncpu);
}
