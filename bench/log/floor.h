/* SPDX-License-Identifier: MIT */
/*
 * The floor of a log record: one read of the buffer's clock and a copy of
 * the record's bytes (a 40-byte header holding the time, the tag, the
 * message, padded to 8) into a private ring. What any logger that stores
 * a timestamped record must do, and nothing else: no shared memory, no
 * other process. breakdown.c times it beside one shmlog_write_n() call;
 * contenders/floor.c runs it as a writer process, so that the scaling
 * part has what the machine allows N processes next to shmlog's figure.
 */
#ifndef SHMLOG_BENCH_LOG_FLOOR_H
#define SHMLOG_BENCH_LOG_FLOOR_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "log.h"

#include "shmlog.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
#else
#define HAVE_RDTSC 0
#endif

/* The record header the floor copies: shmlog's is as long. */
#define LB_FLOOR_HDR 40

/* A read of @clock (SHMLOG_CLOCK_*): rdtsc for the TSC. */
static inline uint64_t lb_clock_read(int clock)
{
	struct timespec ts;
	switch (clock) {
	case SHMLOG_CLOCK_TSC:
#if HAVE_RDTSC
		return __rdtsc();
#else
		break;
#endif
	case SHMLOG_CLOCK_COARSE:
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	default:
		break;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Append @m, stamped with @clock, at *@pos of @ring (@cap bytes, more
 * than the longest record), wrapping to 0 where it would not fit; the
 * header's other bytes are @hdr's. Returns the record's length. */
static inline size_t lb_floor_append(int clock, unsigned char *hdr,
				     const struct lb_msg *m,
				     unsigned char *ring, size_t cap,
				     size_t *pos)
{
	uint64_t now = lb_clock_read(clock);
	size_t len = (LB_FLOOR_HDR + m->tag_len + m->len + 7) & ~(size_t)7;
	if (cap - *pos < len)
		*pos = 0;
	memcpy(hdr + 16, &now, sizeof(now));
	memcpy(ring + *pos, hdr, LB_FLOOR_HDR);
	memcpy(ring + *pos + LB_FLOOR_HDR, m->tag, m->tag_len);
	memcpy(ring + *pos + LB_FLOOR_HDR + m->tag_len, m->msg, m->len);
	*pos += len;
	return len;
}

#endif
