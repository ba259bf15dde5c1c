/* SPDX-License-Identifier: MIT */
/*
 * Filters (filter.c): the compiled spec, and the lock-free word writers
 * ask first (struct shmlog's filter_fast).
 */
#ifndef SHMLOG_FILTER_H
#define SHMLOG_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "shmlog.h"

struct shmlog__filter; /* compiled spec, process-private */
int shmlog__filter_level(const struct shmlog__filter *f, const char *tag);
struct shmlog;
/* Compile the buffer's filter for a new handle (shmlog_open()). */
void shmlog__filter_init(struct shmlog *h);
/* Free the handle's filters, current and retired (shmlog_close()). */
void shmlog__filter_free_all(struct shmlog *h);
/* Does the filter let a write of @prio with @tag through? The slow half of
 * write_wanted() in writer.c: no lock unless the filter changed. */
bool shmlog__write_wanted_slow(struct shmlog *h, int prio, const char *tag);
/* The macros' call sites (shmlog__site_update() in writer.c, which knows
 * the default handle): set @site's cached answer from @h's filter. */
int shmlog__site_set(struct shmlog_site *site, struct shmlog *h, int prio,
		     const char *tag);

/* generation << 32 | lowest << 16 | highest (levels 0..SHMLOG_SILENT) */
static inline uint64_t shmlog__filter_word(uint32_t gen, int min, int max)
{
	return (uint64_t)gen << 32 | (uint64_t)(uint16_t)min << 16 |
	       (uint16_t)max;
}

/* What the filter word @fast says of a write at @prio (a valid priority)
 * while the buffer's generation is @gen: 1 pass, 0 drop, -1 ask the
 * filter (shmlog__write_wanted_slow()). */
static inline int shmlog__filter_fast(uint64_t fast, uint32_t gen, int prio)
{
	if (SHMLOG_UNLIKELY((uint32_t)(fast >> 32) != gen))
		return -1;
	/* a valid priority is small and positive: compared in 16 bits */
	if (SHMLOG_LIKELY((uint16_t)prio >= (uint16_t)fast))
		return 1;
	return prio < (int)(uint16_t)(fast >> 16) ? 0 : -1;
}

#endif
