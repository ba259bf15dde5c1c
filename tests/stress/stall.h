/* SPDX-License-Identifier: MIT */
/*
 * Did a stretch of writes wait for somebody? Writes take no lock and make
 * no system call, so a write that waited for another writer (a bug) either
 * spun, and the thread's CPU time grew, or slept, and the thread switched
 * off its CPU of its own accord (a voluntary context switch). Wall time
 * alone proves nothing on a busy machine: the scheduler may run something
 * else for as long as it likes (an involuntary switch), and under a virtual
 * machine the host may stop the whole virtual CPU without the guest's
 * kernel switching anything (steal time). So a stretch's stall is its CPU
 * time, or its wall time when the thread slept in it.
 */
#ifndef SHMLOG_STALL_H
#define SHMLOG_STALL_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

/* Where a thread stands: wall and CPU time, and how often it slept. */
struct stall_mark {
	uint64_t wall, cpu;
	long slept;
};

static inline uint64_t stall_clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's mark. */
static inline struct stall_mark stall_mark(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return (struct stall_mark){stall_clock_ns(CLOCK_MONOTONIC),
				   stall_clock_ns(CLOCK_THREAD_CPUTIME_ID),
				   ru.ru_nvcsw};
}

/* The stall of the calling thread's stretch from @a to @b, in ns. */
static inline uint64_t stall_ns(const struct stall_mark *a,
				const struct stall_mark *b)
{
	return b->slept != a->slept ? b->wall - a->wall : b->cpu - a->cpu;
}

#endif
