/* SPDX-License-Identifier: MIT */
/*
 * Test points: compiled in with SHMLOG_TESTPOINTS only (the shmlog_tp
 * library of the crash tests), a hook called between the steps of the
 * write protocol, numbered as ring.c's step lists say, and at one point
 * of the reader's and one of the space policy's:
 *   17  reader_wait.c set_poll(): a wait that cannot sleep on a futex
 *       has napped, and is about to look (a test's sign that it polls);
 *   18  space.c departed_take(): a switch decided to take from the
 *       departed, and has not looked for their oldest chunk yet.
 */
#ifndef SHMLOG_TESTPOINT_H
#define SHMLOG_TESTPOINT_H

#ifdef SHMLOG_TESTPOINTS
extern void (*shmlog__testpoint_hook)(int point);
#define TESTPOINT(n)                                                           \
	do {                                                                   \
		if (shmlog__testpoint_hook)                                    \
			shmlog__testpoint_hook(n);                             \
	} while (0)
#else
#define TESTPOINT(n) ((void)0)
#endif

#endif
