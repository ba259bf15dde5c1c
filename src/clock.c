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
