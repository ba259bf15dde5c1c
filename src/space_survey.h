/* SPDX-License-Identifier: MIT */
/*
 * The space policy's pass over the descriptor table (space_survey.c),
 * shared with the chunk switch that runs it (space.c): what a pass
 * found, and the policy's answer from it.
 */
#ifndef SHMLOG_SPACE_SURVEY_H
#define SHMLOG_SPACE_SURVEY_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* How many of its own oldest LIVE chunks a writer keeps listed, to take
 * one by one with a CAS each and no look at the table. */
#define OWN_LIST 64
#define NO_PASS UINT32_MAX

/* What one pass over the descriptor table found: per lane, the chunks it
 * holds (bit 31: a LIVE one among them; bit 30: set by
 * shmlog__survey_decide(), the lane has a writer), the lanes seen, the
 * first never-used chunk, and the writer's own oldest LIVE chunks,
 * oldest first. */
struct survey_acc {
	uint32_t *held; /* lane_count entries, zero but the lanes seen */
	uint16_t *seen; /* lane_count entries */
	/* lane_count entries each: per lane seen, its claim_mark and its
	 * LIVE chunks older than it (the departed's in a writer's lane).
	 * mark is NULL in chunk_pick() without a survey (a borrowed
	 * record): the marks are read from the lanes as the pass goes.
	 * Without pre, a writer's lane would count the departed's chunks
	 * in it as its writer's, lane_oldest() (which skips them) find
	 * nothing to give, and every borrowed record be dropped. */
	uint64_t *mark;
	uint32_t *pre;
	uint32_t seen_n, zero, cand_n;
	uint32_t pre_me; /* the scanning writer's lane's departed LIVE chunks */
	/* shmlog__survey_decide()'s N, and what the departed hold and keep */
	int64_t n, departed, departed_cap;
	uint32_t cand_idx[OWN_LIST];
	uint64_t cand_word[OWN_LIST];
};

/* Is descriptor word @a's incarnation older than @b's? By difference, as
 * positions compare (the incarnation counter wraps). */
static inline bool inc_before(uint64_t a, uint64_t b)
{
	return (int64_t)((a >> CHUNK_INC_SHIFT << CHUNK_INC_SHIFT) -
			 (b >> CHUNK_INC_SHIFT << CHUNK_INC_SHIFT)) < 0;
}

#define HELD_LIVE (1u << 31) /* a LIVE chunk: the writer's or departed */
#define HELD_OWNED (1u << 30)
#define HELD_OWN_LIVE (1u << 29) /* a LIVE chunk of the lane's writer */
#define HELD_COUNT (HELD_OWN_LIVE - 1)

/* shmlog__survey_decide()'s answer when the departed give: their
 * oldest LIVE chunk (space.c, departed_take()). */
#define VICTIM_DEPARTED (UINT_MAX - 1)

/* Read descriptors [@from, @to) into @a (space_survey.c). */
void shmlog__survey_scan(const struct shmlog__seg *s, unsigned me,
			 uint64_t me_mark, struct survey_acc *a, uint32_t from,
			 uint32_t to, bool stop_at_zero);
/* The lane to take from, after a pass (space_survey.c). */
unsigned shmlog__survey_decide(const struct shmlog__seg *s, unsigned me,
			       struct survey_acc *a);

#endif
