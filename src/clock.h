/* SPDX-License-Identifier: MIT */
/*
 * Clocks (clock.c): the raw clock a record is stamped with, inline as the
 * write path needs it; calibration; the anchors that turn a raw time into
 * the same wall time in every reader.
 */
#ifndef SHMLOG_CLOCK_H
#define SHMLOG_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "seg_format.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SHMLOG__HAVE_TSC 1
static inline uint64_t shmlog__rdtsc(void)
{
	return __rdtsc();
}
#else
#define SHMLOG__HAVE_TSC 0
static inline uint64_t shmlog__rdtsc(void)
{
	return 0;
}
#endif

static inline uint64_t shmlog__clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The raw clock value a record is stamped with: inline, it is on the
 * write path. */
static inline uint64_t shmlog__clock_raw(int clock)
{
	switch (clock) {
	case SHMLOG_CLOCK_TSC:
		return shmlog__rdtsc();
	case SHMLOG_CLOCK_COARSE:
		return shmlog__clock_ns(CLOCK_MONOTONIC_COARSE);
	default:
		return shmlog__clock_ns(CLOCK_REALTIME);
	}
}
/* About a microsecond of @f's raw clock (within 100 .. 100000). */
uint64_t shmlog__clock_raw_us(const struct shmlog__fixed *f);
/* Calibrate @f->clock: fill cal_* so raw values convert to wall time. */
void shmlog__clock_calibrate(struct shmlog__fixed *f);
int shmlog__clock_default(void);
/* Convert @raw to ns since the Epoch with the calibration in @f, anchored
 * at (@now_raw, @now_ns) (0: at the calibration itself). */
int64_t shmlog__clock_to_ns(const struct shmlog__fixed *f, uint64_t raw,
			    uint64_t now_raw, int64_t now_ns);

/* A validated private copy of a segment's anchors, sorted by raw. */
struct shmlog__clockmap {
	unsigned n;
	bool pending; /* a publication was under way */
	uint64_t count; /* the segment's count when copied */
	uint64_t taken_raw; /* raw clock when copied */
	struct {
		uint64_t raw;
		int64_t wall_ns, mono_ns;
		uint64_t mult;
	} a[SHMLOG__ANCHORS];
};
/* Copy and validate the anchors of @hdr (hostile input: the copy holds
 * only anchors that check out). */
void shmlog__clockmap_read(const struct shmlog__fixed *f,
			   const struct shmlog__hdr *hdr,
			   struct shmlog__clockmap *m);
/* May an anchor that applies to @raw be missing from @m? (Then read it
 * again before converting @raw.) */
bool shmlog__clockmap_stale(const struct shmlog__clockmap *m,
			    const struct shmlog__hdr *hdr, uint64_t raw);
/* @raw in ns since the Epoch: the newest anchor at or before it, else the
 * oldest one, else the calibration in @f. Deterministic in @m. */
int64_t shmlog__clock_convert(const struct shmlog__fixed *f,
			      const struct shmlog__clockmap *m, uint64_t raw);
/* A piece of shmlog__clock_convert(): for every raw time in [@lo, @hi),
 * the conversion is base_ns + ((raw - base_raw) * mult >> shift), the
 * difference and the product signed and 128 bits wide (the archive's SPAN
 * entries carry one). */
struct shmlog__clock_piece {
	uint64_t base_raw;
	int64_t base_ns;
	uint64_t mult;
	unsigned shift;
	uint64_t lo, hi;
};
/* The piece of @m's conversion that @raw falls in. */
void shmlog__clock_piece(const struct shmlog__fixed *f,
			 const struct shmlog__clockmap *m, uint64_t raw,
			 struct shmlog__clock_piece *p);
/* Writers: publish an anchor if the newest is older than the schedule
 * wants (or there is none); *@due is when to look again (raw). Cheap to
 * call rarely; makes no syscall (vDSO clocks). */
void shmlog__anchor_refresh(const struct shmlog__fixed *f,
			    struct shmlog__hdr *hdr, uint64_t now_raw,
			    _Atomic uint64_t *due);
/* Publish an anchor for the clock triple (@raw, @wall_ns, @mono_ns), taken
 * at once, after the anchors in @m (a copy of the segment's). @done_raw:
 * 0 to read the raw clock once it is written (tests pass a simulated one).
 * false if another publisher went first or it took too long to be valid. */
bool shmlog__anchor_publish(const struct shmlog__fixed *f,
			    struct shmlog__hdr *hdr,
			    const struct shmlog__clockmap *m, uint64_t raw,
			    int64_t wall_ns, int64_t mono_ns, uint64_t done_raw);
/* The schedule: when (raw) the next anchor is due after those in @m. */
uint64_t shmlog__anchor_due(const struct shmlog__fixed *f,
			    const struct shmlog__clockmap *m);
int64_t shmlog__realtime_ns(void);

#endif
