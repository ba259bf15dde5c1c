/* SPDX-License-Identifier: MIT */
/*
 * The measured call sites. Each loop holds one SHMLOG_D expansion (so one
 * static struct shmlog_site) whose message argument depends on the loop
 * counter: if the macro evaluated its arguments or formatted, it would show.
 */
#include <inttypes.h>

#include "filter_bench.h"
#include "shmlog.h"

void fb_loop_empty(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		FB_KEEP();
}

void fb_loop_global(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		SHMLOG_D("net", "fd %" PRIu64 " ready", i);
		FB_KEEP();
	}
}

void fb_loop_tag(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		SHMLOG_D("tag057", "fd %" PRIu64 " ready", i);
		FB_KEEP();
	}
}

void fb_loop_change(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		SHMLOG_D("tag057", "fd %" PRIu64 " ready", i);
		FB_KEEP();
	}
}

void fb_loop_change2(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		SHMLOG_D("tag058", "fd %" PRIu64 " ready", i);
		FB_KEEP();
	}
}

/* What a call costs without the site cache: the library's own check,
 * which takes the filter mutex and binary-searches the tag table. */
void fb_loop_uncached(uint64_t n)
{
	shmlog_t *h = shmlog_default();
	for (uint64_t i = 0; i < n; i++) {
		if (shmlog_enabled(h, SHMLOG_DEBUG, "tag057"))
			shmlog_print(h, SHMLOG_DEBUG, "tag057",
				     "fd %" PRIu64 " ready", i);
		FB_KEEP();
	}
}

void fb_first_call(void)
{
	fb_loop_change(1);
}

void fb_other_site_call(void)
{
	fb_loop_change2(1);
}
