/* SPDX-License-Identifier: MIT */
/*
 * The compile-time floor: this file is built as a program built with
 * -DSHMLOG_MIN_PRIORITY=SHMLOG_INFO would be, so its SHMLOG_D call must
 * leave no code behind. Compare its loop with fb_loop_empty().
 */
#define SHMLOG_MIN_PRIORITY SHMLOG_INFO
#include <inttypes.h>

#include "filter_bench.h"
#include "shmlog.h"

void fb_loop_floor(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		SHMLOG_D("net", "below the floor %" PRIu64, i);
		FB_KEEP();
	}
}
