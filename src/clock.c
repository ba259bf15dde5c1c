/* SPDX-License-Identifier: MIT */
/*
 * Clocks. Records carry a raw clock value: cheap to take, and ordered the
 * same way for every writer of a buffer because the buffer fixes the clock
 * at creation. Readers turn raw values into wall-clock time with the
 * calibration in the segment header.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static uint64_t ts_ns(clockid_t id)
{
	return shmlog__clock_ns(id);
}

int64_t shmlog__realtime_ns(void)
{
	return (int64_t)ts_ns(CLOCK_REALTIME);
}

/* The TSC is usable when the kernel itself trusts it: invariant
 * (constant_tsc, nonstop_tsc) and chosen as the clocksource. */
static bool tsc_trusted(void)
{
	if (!SHMLOG__HAVE_TSC)
		return false;
	char cs[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/"
			"current_clocksource",
			"re");
	if (!f)
		return false;
	if (!fgets(cs, sizeof(cs), f))
		cs[0] = '\0';
	fclose(f);
	if (strncmp(cs, "tsc", 3) != 0)
		return false;
	bool constant = false, nonstop = false;
	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return false;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
}

int shmlog__clock_default(void)
{
	return tsc_trusted() ? SHMLOG_CLOCK_TSC : SHMLOG_CLOCK_REALTIME;
}

/* One (tsc, ns) pair: the TSC read on both sides of clock_gettime, kept
 * only from the tightest of a few tries. */
static void tsc_pair(clockid_t id, uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 16; i++) {
		uint64_t a = shmlog__rdtsc();
		uint64_t t = ts_ns(id);
		uint64_t b = shmlog__rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = t;
		}
	}
}

/* The TSC rate, measured against CLOCK_MONOTONIC_RAW over ~10 ms: done
 * once per process, so creating many buffers costs it once. */
static double tsc_ns_per_tick(void)
{
	static _Atomic double cached;
	double v = atomic_load_explicit(&cached, memory_order_relaxed);
	if (v > 0)
		return v;
	uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
	tsc_pair(CLOCK_MONOTONIC_RAW, &t0, &n0);
	struct timespec d = {0, 10 * 1000 * 1000};
	while (nanosleep(&d, &d) != 0)
		;
	tsc_pair(CLOCK_MONOTONIC_RAW, &t1, &n1);
	v = t1 > t0 ? (double)(n1 - n0) / (double)(t1 - t0) : 1.0;
	atomic_store_explicit(&cached, v, memory_order_relaxed);
	return v;
}

void shmlog__clock_calibrate(struct shmlog__fixed *f)
{
	f->cal_mult = 1;
	f->cal_shift = 0;
	switch (f->clock) {
	case SHMLOG_CLOCK_TSC: {
		double npt = tsc_ns_per_tick();
		f->cal_shift = 24;
		f->cal_mult = (uint32_t)(npt * (double)(1u << 24) + 0.5);
		uint64_t ns = 0;
		tsc_pair(CLOCK_REALTIME, &f->cal_raw, &ns);
		f->cal_ns = (int64_t)ns;
		break;
	}
	case SHMLOG_CLOCK_COARSE:
		/* monotonic, so never backwards; offset to wall time */
		f->cal_raw = shmlog__clock_ns(CLOCK_MONOTONIC_COARSE);
		f->cal_ns = (int64_t)shmlog__clock_ns(CLOCK_REALTIME_COARSE);
		break;
	default: /* REALTIME: the raw value is wall time */
		f->cal_raw = 0;
		f->cal_ns = 0;
	}
}

uint64_t shmlog__clock_raw_us(const struct shmlog__fixed *f)
{
	if (f->clock != SHMLOG_CLOCK_TSC)
		return 1000; /* raw values are ns */
	/* ns = raw * mult >> shift; the file says what mult and shift are:
	 * anything absurd reads as 1 GHz, the answer bounded either way */
	uint64_t raw = 1000;
	if (f->cal_mult && f->cal_shift <= 40)
		raw = ((uint64_t)1000 << f->cal_shift) / f->cal_mult;
	return raw < 100 ? 100 : raw > 100000 ? 100000 : raw;
}

static int64_t scale(const struct shmlog__fixed *f, int64_t delta)
{
	__int128 v = (__int128)delta * f->cal_mult;
	return (int64_t)(v >> f->cal_shift);
}

int64_t shmlog__clock_to_ns(const struct shmlog__fixed *f, uint64_t raw,
			    uint64_t now_raw, int64_t now_ns)
{
	if (f->clock == SHMLOG_CLOCK_REALTIME)
		return (int64_t)raw;
	/* raw comes from shared memory: whatever it says, the sum wraps
	 * (an absurd time) rather than overflow (undefined behaviour) */
	if (now_raw)
		return (int64_t)((uint64_t)now_ns -
				 (uint64_t)scale(f, (int64_t)(now_raw - raw)));
	return (int64_t)((uint64_t)f->cal_ns +
			 (uint64_t)scale(f, (int64_t)(raw - f->cal_raw)));
}

/* ---- anchors: stable wall-clock times ------------------------------- */
/*
 * Records carry raw clock values. Turning one into wall time with "now" as
 * the reference moves it a little every time it is printed, and a wall
 * clock step after it was written would re-date it; extrapolating from the
 * creation calibration alone drifts (the TSC rate is measured over 10 ms).
 * So writers publish anchors in the segment, rarely: a (raw, wall time,
 * monotonic time) triple, with the raw -> ns rate measured against
 * CLOCK_MONOTONIC since an earlier anchor (which follows NTP's frequency
 * corrections but not its steps). A record converts with the newest anchor
 * at or before its raw time, in every reader, forever: one triple fixed
 * before the record existed.
 *
 * That last point needs care: an anchor must never appear that applies to
 * a record already read. So a publisher dates its anchor a little in the
 * future (raw = now + LEAD), and marks it valid (done_raw = the raw clock
 * when it finished) only if it finished before that raw time came: no
 * record stamped at or after the anchor can exist before the anchor is
 * whole. An anchor whose publisher was held up past its raw time, or died
 * half way, never becomes valid, for anybody.
 *
 * Schedule: the first anchor at creation, then whenever the newest is
 * older than the span the anchors cover (at least 10 s, at most 10 min):
 * 10 s, 10 s, 20 s, 40 s... then every 10 minutes. The rate improves as the
 * span grows. 24 anchors are kept (4 hours at 10 minutes); a record older
 * than every kept anchor is converted with the oldest one, so it moves by
 * at most the drift between two anchors when its own is recycled.
 */

#define NS 1000000000ll
#define ANCHOR_LEAD_NS (10 * 1000 * 1000ll) /* dated 10 ms ahead */
#define ANCHOR_MIN_SPAN_NS (10 * NS)
#define ANCHOR_MAX_SPAN_NS (600 * NS)

static bool clock_has_anchors(const struct shmlog__fixed *f)
{
	return f->clock == SHMLOG_CLOCK_TSC || f->clock == SHMLOG_CLOCK_COARSE;
}

/* The calibration's rate in 32.32 fixed point: ns per raw tick. */
static uint64_t cal_mult32(const struct shmlog__fixed *f)
{
	if (f->cal_shift <= 32)
		return (uint64_t)f->cal_mult << (32 - f->cal_shift);
	return (uint64_t)f->cal_mult >> (f->cal_shift - 32);
}

/* ns -> raw ticks, by the calibration (for schedules, not for times). */
static uint64_t ticks_of(const struct shmlog__fixed *f, int64_t ns)
{
	uint64_t m = cal_mult32(f);
	if (!m)
		return (uint64_t)ns;
	return (uint64_t)(((unsigned __int128)ns << 32) / m);
}

/* @delta raw ticks (signed) in ns at rate @mult; wraps, never overflows. */
static int64_t ticks_to_ns(int64_t delta, uint64_t mult)
{
	__int128 v = (__int128)delta * (__int128)mult;
	return (int64_t)(uint64_t)(unsigned __int128)(v >> 32);
}

static bool mult_sane(const struct shmlog__fixed *f, uint64_t mult)
{
	uint64_t c = cal_mult32(f);
	return mult >= c / 2 && mult / 2 <= c && mult;
}

/* One slot, copied under its sequence word; false if it is not a valid
 * anchor (being written, never finished, or nonsense). *@pending is set
 * if it is the newest publication (of @count) and not finished yet. */
static bool anchor_copy(const struct shmlog__fixed *f,
			const struct shmlog__anchor *s, uint64_t count,
			uint64_t *raw, int64_t *wall, int64_t *mono,
			uint64_t *mult, bool *pending)
{
	/* LMM(clock:C) acquire loads (rare: no fence needed, and TSan
	 * models them) keep the second load of seq after every field's;
	 * pairs with LMM(clock:B) */
	uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
	*raw = atomic_load_explicit(&s->raw, memory_order_acquire);
	*wall = atomic_load_explicit(&s->wall_ns, memory_order_acquire);
	*mono = atomic_load_explicit(&s->mono_ns, memory_order_acquire);
	*mult = atomic_load_explicit(&s->mult, memory_order_acquire);
	uint64_t done = atomic_load_explicit(&s->done_raw, memory_order_acquire);
	/* LMM(clock:D) a field of a publication under way shows here as a
	 * changed or odd seq (pairs with LMM(clock:A)) */
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq ||
	    (seq & 1) || (seq && !done)) {
		/* being written, or not marked done (yet, or ever: only the
		 * newest publication may still be on its way) */
		if ((seq + 1) / 2 == count ||
		    atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
			*pending = true;
		return false;
	}
	return seq && done <= *raw && mult_sane(f, *mult);
}

void shmlog__clockmap_read(const struct shmlog__fixed *f,
			   const struct shmlog__hdr *hdr,
			   struct shmlog__clockmap *m)
{
	const struct shmlog__anchors *A = hdr_anchors(hdr);
	m->n = 0;
	m->pending = false;
	m->taken_raw = shmlog__clock_raw((int)f->clock);
	/* LMM(clock:F) the count before every slot; pairs with LMM(clock:E) */
	m->count = atomic_load_explicit(&A->count, memory_order_acquire);
	if (!clock_has_anchors(f))
		return;
	for (unsigned i = 0; i < SHMLOG__ANCHORS; i++) {
		uint64_t raw, mult;
		int64_t wall, mono;
		if (!anchor_copy(f, &A->a[i], m->count, &raw, &wall, &mono,
				 &mult, &m->pending))
			continue;
		/* insertion by raw; a duplicate raw is kept once (the first
		 * slot's), so that the choice does not depend on timing */
		unsigned k = m->n;
		while (k && m->a[k - 1].raw > raw)
			k--;
		if (k && m->a[k - 1].raw == raw)
			continue;
		memmove(&m->a[k + 1], &m->a[k], (m->n - k) * sizeof(m->a[0]));
		m->a[k].raw = raw;
		m->a[k].wall_ns = wall;
		m->a[k].mono_ns = mono;
		m->a[k].mult = mult;
		m->n++;
	}
}

bool shmlog__clockmap_stale(const struct shmlog__clockmap *m,
			    const struct shmlog__hdr *hdr, uint64_t raw)
{
	/* An anchor valid for @raw was complete before @raw was stamped; a
	 * record stamped before we copied is covered by our copy. */
	if ((int64_t)(raw - m->taken_raw) < 0)
		return false;
	return m->pending ||
	       atomic_load_explicit(&hdr_anchors(hdr)->count,
				    memory_order_relaxed) != m->count;
}

/* The anchor of @m (which has one at least) that converts @raw: the last
 * one at or before it, else the first. */
static unsigned anchor_of(const struct shmlog__clockmap *m, uint64_t raw)
{
	unsigned lo = 0, hi = m->n;
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;
		if (m->a[mid].raw <= raw)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int64_t shmlog__clock_convert(const struct shmlog__fixed *f,
			      const struct shmlog__clockmap *m, uint64_t raw)
{
	if (f->clock == SHMLOG_CLOCK_REALTIME)
		return (int64_t)raw;
	if (!m->n)
		return shmlog__clock_to_ns(f, raw, 0, 0);
	unsigned lo = anchor_of(m, raw);
	int64_t delta = (int64_t)(raw - m->a[lo].raw);
	return (int64_t)((uint64_t)m->a[lo].wall_ns +
			 (uint64_t)ticks_to_ns(delta, m->a[lo].mult));
}

void shmlog__clock_piece(const struct shmlog__fixed *f,
			 const struct shmlog__clockmap *m, uint64_t raw,
			 struct shmlog__clock_piece *p)
{
	*p = (struct shmlog__clock_piece){.lo = 0, .hi = UINT64_MAX};
	if (f->clock == SHMLOG_CLOCK_REALTIME) {
		p->mult = 1; /* raw is the wall time */
		return;
	}
	if (!m->n) {
		p->base_raw = f->cal_raw;
		p->base_ns = f->cal_ns;
		p->mult = f->cal_mult;
		p->shift = f->cal_shift & 63;
		return;
	}
	unsigned lo = anchor_of(m, raw);
	p->base_raw = m->a[lo].raw;
	p->base_ns = m->a[lo].wall_ns;
	p->mult = m->a[lo].mult;
	p->shift = 32;
	if (lo)
		p->lo = m->a[lo].raw;
	if (lo + 1 < m->n)
		p->hi = m->a[lo + 1].raw;
}

uint64_t shmlog__anchor_due(const struct shmlog__fixed *f,
			    const struct shmlog__clockmap *m)
{
	if (!clock_has_anchors(f))
		return UINT64_MAX;
	if (!m->n)
		return 0;
	uint64_t newest = m->a[m->n - 1].raw, span = newest - m->a[0].raw;
	uint64_t lo = ticks_of(f, ANCHOR_MIN_SPAN_NS),
		 hi = ticks_of(f, ANCHOR_MAX_SPAN_NS);
	return newest + (span < lo ? lo : span > hi ? hi : span);
}

/* The rate for an anchor at (@raw, @mono): measured against the monotonic
 * clock since the newest kept anchor at least 10 s before (the TSC's rate
 * wanders with temperature: the latest interval says most about the next),
 * else the calibration. */
static uint64_t anchor_rate(const struct shmlog__fixed *f,
			    const struct shmlog__clockmap *m, uint64_t raw,
			    int64_t mono)
{
	uint64_t cal = cal_mult32(f);
	if (f->clock != SHMLOG_CLOCK_TSC)
		return cal;
	uint64_t min_span = ticks_of(f, ANCHOR_MIN_SPAN_NS);
	for (unsigned i = m->n; i-- > 0;) {
		uint64_t dr = raw - m->a[i].raw;
		int64_t dm = mono - m->a[i].mono_ns;
		if ((int64_t)dr < (int64_t)min_span || dm <= 0)
			continue;
		uint64_t r = (uint64_t)(((unsigned __int128)dm << 32) / dr);
		/* a measured rate within 1% of the calibration; else the
		 * older anchor is not one to trust */
		if (r > cal - cal / 100 && r < cal + cal / 100)
			return r;
	}
	return cal;
}

bool shmlog__anchor_publish(const struct shmlog__fixed *f,
			    struct shmlog__hdr *hdr,
			    const struct shmlog__clockmap *m, uint64_t raw,
			    int64_t wall_ns, int64_t mono_ns, uint64_t done_raw)
{
	struct shmlog__anchors *A = hdr_anchors(hdr);
	uint64_t mult = anchor_rate(f, m, raw, mono_ns);
	uint64_t lead = ticks_of(f, ANCHOR_LEAD_NS);
	int64_t lead_ns = ticks_to_ns((int64_t)lead, mult);
	uint64_t n = m->count;
	/* one publisher per round: whoever moves the count on; LMM(clock:E)
	 * the count before the slot's odd seq (LMM(clock:A)) */
	if (!atomic_compare_exchange_strong(&A->count, &n, n + 1))
		return false;
	struct shmlog__anchor *s = &A->a[n % SHMLOG__ANCHORS];
	/* LMM(clock:A) a seqlock: the odd seq before any field, which the
	 * fields' release stores below keep (rare: no fence) */
	atomic_store_explicit(&s->seq, 2 * n + 1, memory_order_relaxed);
	atomic_store_explicit(&s->done_raw, 0, memory_order_release);
	atomic_store_explicit(&s->raw, raw + lead, memory_order_release);
	atomic_store_explicit(&s->wall_ns, wall_ns + lead_ns,
			      memory_order_release);
	atomic_store_explicit(&s->mono_ns, mono_ns + lead_ns,
			      memory_order_release);
	atomic_store_explicit(&s->mult, mult, memory_order_release);
	/* LMM(clock:B) the fields before the even seq; pairs with
	 * LMM(clock:C) */
	atomic_store_explicit(&s->seq, 2 * n + 2, memory_order_release);
	/* valid only if whole before its time: see the comment above */
	uint64_t done =
		done_raw ? done_raw : shmlog__clock_raw((int)f->clock);
	if ((int64_t)(raw + lead - done) <= 0)
		return false;
	atomic_store_explicit(&s->done_raw, done ? done : 1,
			      memory_order_release);
	return true;
}

/* The current (raw, wall, monotonic) triple, taken as tightly as we can. */
static void clock_triple(const struct shmlog__fixed *f, uint64_t *raw,
			 int64_t *wall, int64_t *mono)
{
	if (f->clock == SHMLOG_CLOCK_COARSE) {
		/* both coarse clocks move at the same tick */
		*raw = shmlog__clock_ns(CLOCK_MONOTONIC_COARSE);
		*wall = (int64_t)shmlog__clock_ns(CLOCK_REALTIME_COARSE);
		*mono = (int64_t)*raw;
		return;
	}
	uint64_t rw = 0, rm = 0, w = 0, mo = 0;
	tsc_pair(CLOCK_REALTIME, &rw, &w);
	tsc_pair(CLOCK_MONOTONIC, &rm, &mo);
	*raw = rw;
	*wall = (int64_t)w;
	/* the monotonic reading moved to the same raw instant (a few
	 * hundred ns apart: the calibration's rate is plenty) */
	*mono = (int64_t)mo + ticks_to_ns((int64_t)(rw - rm), cal_mult32(f));
}

void shmlog__anchor_refresh(const struct shmlog__fixed *f,
			    struct shmlog__hdr *hdr, uint64_t now_raw,
			    _Atomic uint64_t *due)
{
	if (!clock_has_anchors(f)) {
		atomic_store_explicit(due, UINT64_MAX, memory_order_relaxed);
		return;
	}
	struct shmlog__clockmap m;
	shmlog__clockmap_read(f, hdr, &m);
	uint64_t next = shmlog__anchor_due(f, &m);
	if ((int64_t)(now_raw - next) >= 0) {
		uint64_t raw;
		int64_t wall, mono;
		clock_triple(f, &raw, &wall, &mono);
		shmlog__anchor_publish(f, hdr, &m, raw, wall, mono, 0);
		shmlog__clockmap_read(f, hdr, &m);
		next = shmlog__anchor_due(f, &m);
	}
	/* lost the round, or an anchor under way: look again in a second */
	uint64_t soon = now_raw + ticks_of(f, NS);
	if ((int64_t)(next - soon) < 0)
		next = soon;
	atomic_store_explicit(due, next, memory_order_relaxed);
}
