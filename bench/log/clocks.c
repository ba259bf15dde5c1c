/* SPDX-License-Identifier: MIT */
/*
 * What the clocks cost on this machine: the 2012 LKML shared-memory logger RFC found that the clock
 * source decided whether shared memory beat the kernel logger, and every
 * contender pays one clock read per record. Printed next to the tables so
 * that the figures can be read against it.
 */
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <time.h>

#include "log.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
#else
#define HAVE_RDTSC 0
#endif

enum { CLK_N = 200000, CLK_REPS = 7 };

static volatile uint64_t clk_sink;

static double per_call(int which)
{
	double v[CLK_REPS];
	struct timespec ts;
	struct timeval tv;
	sem_t sem;
	_Atomic uint64_t counter = 0;
	sem_init(&sem, 1, 1);
	for (int r = 0; r < CLK_REPS; r++) {
		uint64_t acc = 0, t0 = bench_now_ns();
		for (int i = 0; i < CLK_N; i++) {
			switch (which) {
			case 0:
#if HAVE_RDTSC
				acc += __rdtsc();
#endif
				break;
			case 1:
				clock_gettime(CLOCK_REALTIME, &ts);
				acc += (uint64_t)ts.tv_nsec;
				break;
			case 2:
				clock_gettime(CLOCK_REALTIME_COARSE, &ts);
				acc += (uint64_t)ts.tv_nsec;
				break;
			case 3:
				gettimeofday(&tv, NULL);
				acc += (uint64_t)tv.tv_usec;
				break;
			case 4:
				sem_wait(&sem);
				sem_post(&sem);
				break;
			default:
				acc += atomic_fetch_add(&counter, 1);
				break;
			}
		}
		v[r] = (double)(bench_now_ns() - t0) / CLK_N;
		clk_sink += acc;
	}
	sem_destroy(&sem);
	return bench_median(v, CLK_REPS);
}

void lb_clock_costs(struct lb_clocks *c)
{
	c->rdtsc_ns = HAVE_RDTSC ? per_call(0) : -1;
	c->realtime_ns = per_call(1);
	c->coarse_ns = per_call(2);
	c->gettimeofday_ns = per_call(3);
	c->sem_pair_ns = per_call(4);
	c->atomic_add_ns = per_call(5);
}
