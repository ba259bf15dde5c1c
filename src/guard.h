/* SPDX-License-Identifier: MIT */
/*
 * Surviving a truncated file (guard.c; its top comment says how): a read
 * of the mapping armed with a guard comes back by siglongjmp() instead of
 * dying of SIGBUS.
 */
#ifndef SHMLOG_GUARD_H
#define SHMLOG_GUARD_H

#include <setjmp.h>

#include "segment.h"

struct shmlog__guard {
	sigjmp_buf env;
	const unsigned char *lo, *hi; /* the armed segment's mapping */
	const unsigned char *hdr; /* its separate page 0, or NULL */
	struct shmlog__guard *prev; /* armed on this thread before (nested) */
};
void shmlog__guard_arm(struct shmlog__guard *g, const struct shmlog__seg *s);
void shmlog__guard_disarm(void);
/* Back from a fault by siglongjmp: call first thing. */
void shmlog__guard_recovered(void);

#endif
