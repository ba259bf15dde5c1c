/* SPDX-License-Identifier: MIT */
/*
 * The printf-style call that breakdown.c times, written once for its two
 * callers: breakdown.c (C11, _Generic) and breakdown_cxx.cc (C++, the
 * templates of include/shmlog_cxx.h), so that both time the same call
 * site, text for text.
 */
#ifndef SHMLOG_BENCH_BREAKDOWN_H
#define SHMLOG_BENCH_BREAKDOWN_H

#include "log.h"
#include "shmlog.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Calls a loop of the printf-style steps (the C call and the C++ one). */
#define BD_N 50000

/* The call of the shmlog-printf contender: an int, a string, a double. */
#define BD_PRINTF_FMT "request %d from %s took %.3f ms"
#define BD_PRINTF_STR "10.1.2.3"
#define BD_PRINTF_CALL(res, h, m)                                              \
	SHMLOG__PRINT_AS(res, h, 0, (m)->prio, (m)->tag, BD_PRINTF_FMT,        \
			 (int)(m)->len, BD_PRINTF_STR, (double)(m)->len * 0.125)

/* This thread's CPU time, in ns. */
uint64_t lb_bd_cpu_now_ns(void);

/* The body of a timed loop over the messages of @w in turn: @n times the
 * statement @call, which sees the message as m and sets its result e (0:
 * success); returns the ns of this thread's CPU time a call and adds the
 * calls that failed to *@errs. One text for every loop of a call, and for
 * both languages: the C and the C++ printf steps time the same loop. */
#define BD_TIMED_LOOP(n, w, errs, call)                                        \
	long bd_bad_ = 0;                                                      \
	uint64_t bd_t0_ = lb_bd_cpu_now_ns();                                  \
	for (int bd_i_ = 0; bd_i_ < (n); bd_i_++) {                            \
		const struct lb_msg *m = &(w)->m[bd_i_ % LB_WORK_N];           \
		int e;                                                         \
		call;                                                          \
		bd_bad_ += e != 0;                                             \
	}                                                                      \
	double bd_ns_ = (double)(lb_bd_cpu_now_ns() - bd_t0_) / (n);           \
	*(errs) += bd_bad_;                                                    \
	return bd_ns_

/* BD_N calls of BD_PRINTF_CALL on the messages of @w in turn: ns of
 * this thread's CPU time a call; the calls that failed added to *@errs.
 * Compiled as C11 (breakdown.c) and as C++ (breakdown_cxx.cc; NaN where
 * no C++ compiler built it: breakdown_cxx_missing.c). Never inlined:
 * callgrind counts each by its name. */
__attribute__((noinline)) double
lb_bd_loop_printf_c(shmlog_t *h, const struct lb_work *w, long *errs);
__attribute__((noinline)) double
lb_bd_loop_printf_cxx(shmlog_t *h, const struct lb_work *w, long *errs);

/* The hidden sub-mode `shmlog-bench log --internal-printf-loop c|cxx`
 * that the breakdown runs under callgrind: one loop of that language's
 * call into a fresh buffer. Exit status 0, or 1 with why on stderr. */
int lb_bd_internal_printf(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
