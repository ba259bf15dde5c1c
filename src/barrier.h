/* SPDX-License-Identifier: MIT */
/*
 * The fences of the ring protocol, for the writer (ring.h: append.h,
 * space.c, lane.c, write_path.h) and anyone else who needs one: which
 * store each orders before which, and what it pairs with, is in the
 * memory-ordering table of ring.c's design comment, at the LMM label of
 * each call site.
 *
 * GCC warns that TSan does not model fences (-Wtsan) wherever one is
 * inlined, which -Werror turns into a build failure; the fence is still
 * emitted, and these helpers keep the pragmas in one place.
 */
#ifndef SHMLOG_BARRIER_H
#define SHMLOG_BARRIER_H

#include <stdatomic.h>

#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#define SHMLOG__TSAN_FENCE_BEGIN                                               \
	_Pragma("GCC diagnostic push")                                         \
		_Pragma("GCC diagnostic ignored \"-Wtsan\"")
#define SHMLOG__TSAN_FENCE_END _Pragma("GCC diagnostic pop")
#else
#define SHMLOG__TSAN_FENCE_BEGIN
#define SHMLOG__TSAN_FENCE_END
#endif

/* A release fence: the caller's stores before it are seen before its
 * stores after it by whoever acquires one of the latter. */
static inline void shmlog__fence_release(void)
{
	SHMLOG__TSAN_FENCE_BEGIN
	atomic_thread_fence(memory_order_release);
	SHMLOG__TSAN_FENCE_END
}

/* A full fence: the caller's stores before it are seen before its loads
 * after it read (Dekker's pattern, wake_fence() in write_path.h). */
static inline void shmlog__fence_full(void)
{
	SHMLOG__TSAN_FENCE_BEGIN
	atomic_thread_fence(memory_order_seq_cst);
	SHMLOG__TSAN_FENCE_END
}

#endif
