/* SPDX-License-Identifier: MIT */
/*
 * Instruction counts from callgrind: re-run this program under
 * `valgrind --tool=callgrind`, collecting only inside one function.
 */
#ifndef SHMLOG_BENCH_CALLGRIND_H
#define SHMLOG_BENCH_CALLGRIND_H

#include <stdbool.h>
#include <stdint.h>

/* Is valgrind runnable here? Checked once. */
bool fb_callgrind_available(void);

/* Run "/proc/self/exe @args..." under callgrind with collection switched
 * on only while @func runs (and what it calls); return the instructions
 * collected, or -1 if valgrind is missing or the run failed. @args ends
 * with NULL. */
int64_t fb_callgrind_count(const char *func, char *const args[]);

#endif
