/* SPDX-License-Identifier: MIT */
/*
 * Self-describing records for stress tests (the printk KUnit pattern): the
 * tag, priority and message of record i of writer w are all derived from
 * (w, i), so a reader can check any record it gets without knowing what
 * else was written.
 */
#ifndef SHMLOG_SELFCHECK_H
#define SHMLOG_SELFCHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shmlog.h"

static inline uint64_t sc_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Build record @i of writer @w into @msg (at least 400 bytes); returns the
 * message length, fills the tag and priority. */
static inline size_t sc_make(unsigned w, uint64_t i, char *tag, int *prio,
			     char *msg)
{
	uint64_t h = sc_mix(((uint64_t)w << 40) ^ i);
	snprintf(tag, 16, "w%u", w);
	*prio = SHMLOG_VERBOSE + (int)(h % 6);
	int n = snprintf(msg, 64, "w=%u i=%llu ", w, (unsigned long long)i);
	size_t len = (size_t)n + (size_t)(h >> 8) % 300;
	for (size_t k = (size_t)n; k < len; k++)
		msg[k] = (char)('a' + (sc_mix(h + k) % 26));
	msg[len] = '\0';
	return len;
}

/* Write records @from .. @from + @n - 1 of writer @w; returns how many
 * writes failed. */
static inline long sc_write(shmlog_t *h, unsigned w, uint64_t from, long n)
{
	char tag[16], msg[512];
	int prio;
	long failed = 0;
	for (long i = 0; i < n; i++) {
		size_t len = sc_make(w, from + (uint64_t)i, tag, &prio, msg);
		failed += shmlog_write_n(h, prio, tag, msg, len) != 0;
	}
	return failed;
}

/* Check a record read back; on success sets *@w and *@i. */
static inline bool sc_check(const struct shmlog_record *r, unsigned *w,
			    uint64_t *i)
{
	unsigned ww;
	unsigned long long ii;
	if (sscanf(r->msg, "w=%u i=%llu ", &ww, &ii) != 2)
		return false;
	char tag[16], msg[512];
	int prio;
	size_t len = sc_make(ww, ii, tag, &prio, msg);
	if (len != r->msg_len || memcmp(msg, r->msg, len) != 0)
		return false;
	if (strcmp(tag, r->tag) != 0 || prio != r->prio)
		return false;
	*w = ww;
	*i = ii;
	return true;
}

#endif
