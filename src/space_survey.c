/* SPDX-License-Identifier: MIT */
/*
 * The space policy: which chunk a writer takes when its OPEN chunk is
 * full. A pass over the descriptor table counts what each lane holds
 * (shmlog__survey_scan()), and the policy answers from the counts
 * (shmlog__survey_decide()). The chunk switch (space.c) runs a pass once
 * per list of own chunks it takes, or on every switch while another
 * lane is above its share, never on the common switch: keeping the pass
 * in its own file costs the switch nothing.
 *
 * ===================================================================
 * The space policy
 * ===================================================================
 *
 * A writer whose record does not fit the rest of its OPEN chunk ends the
 * chunk with a PAD, makes it LIVE, and takes a chunk (chunk_take(),
 * space.c), in this order of preference:
 *   1. a chunk never used;
 *   2. while the departed hold more than their bound, their oldest LIVE
 *      chunk (departed_take(), space.c), whoever else is above a
 *      share. The departed: the chunks of lanes with no writer, and those older
 *      than their writer's claim in a lane that has one (the lane's
 *      claim_mark: a writer that claims a lane a departed writer gave
 *      back goes on in its chunk). Counted as one more writer, they
 *      keep D = min(what they hold, chunk_count / max(16, N + 1));
 *   3. a reserved chunk (RESV, resv_take(), space.c), else the oldest LIVE
 *      chunk, of the lane furthest above its fair share, share =
 *      (chunk_count - D) / N, N the lanes holding chunks whose owner
 *      word is set; ties go to the taker. The departed, at or under
 *      their bound, are one of the candidates;
 *   4. its own oldest LIVE chunk: it is at or under its share and so is
 *      everyone else. A lone writer recycles its own oldest chunk.
 * So a lone writer keeps all chunks but the one it is filling and what
 * the departed keep (at most 1/16), and with N writers each keeps its
 * share whatever the others write: a writer at or under its share is
 * only taken from when nobody is above it, and then it takes from itself.
 * A writer that went quiet keeps its chunks until somebody above it needs
 * space; one that exited or died keeps its newest records while the
 * departed hold no more than their bound. The guarantee is in whole
 * chunks: a writer holding S chunks keeps at least S - 1 full ones, less
 * the PAD at each chunk's end (under one record).
 *
 * Also here: what the policy sees, for shmlog_stat_space()
 * (shmlog__space_census()).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "space_survey.h"

/* Lane @l's claim mark, for a pass without a copy of the marks. */
static inline uint64_t lane_mark(const struct shmlog__seg *s, unsigned l)
{
	return atomic_load_explicit(&seg_lane(s, l)->claim_mark,
				    memory_order_relaxed);
}

/* Read descriptors [@from, @to) into @a; @me: the reading writer's lane,
 * whose LIVE chunks are listed oldest first. @stop_at_zero: return at the
 * first never-used chunk (a writer takes it at once). The loop reads a
 * word and counts it; the list of the oldest few costs a compare per
 * chunk of ours, a little more where the table's order and the chunks'
 * age disagree (a pass starts where the writer's oldest chunk is, and a
 * lone writer's table is its history rotated: then nowhere). */
void shmlog__survey_scan(const struct shmlog__seg *s, unsigned me,
			 uint64_t me_mark, struct survey_acc *a, uint32_t from,
			 uint32_t to, bool stop_at_zero)
{
	const uint32_t lanes = s->fixed.lane_count;
	_Atomic uint64_t *tab = seg_chunk(s, 0);
	uint32_t *held = a->held;
	uint16_t *seen = a->seen;
	uint32_t seen_n = a->seen_n, cand_n = a->cand_n, mine = 0, gone = 0;
	const uint64_t own_live = (uint64_t)me << CHUNK_LANE_SHIFT | CHUNK_LIVE;
	const uint64_t low = ((uint64_t)1 << CHUNK_INC_SHIFT) - 1;
	/* the youngest listed; the words listed differ in their incarnation
	 * only, so they compare by plain difference */
	uint64_t last = cand_n ? a->cand_word[cand_n - 1] : 0;
	for (uint32_t i = from; i < to; i++) {
		uint64_t d = atomic_load_explicit(&tab[i], memory_order_relaxed);
		if (SHMLOG_LIKELY((d & low) == own_live && d != own_live)) {
			if (SHMLOG_UNLIKELY(claim_before(d, me_mark))) {
				gone++; /* a departed writer's, not ours */
				continue;
			}
			/* one of our LIVE chunks: younger than those listed,
			 * as a pass read from our oldest on mostly finds
			 * them, it goes at the end */
			mine++;
			if (SHMLOG_LIKELY(cand_n < OWN_LIST &&
					  (!cand_n || (int64_t)(last - d) < 0))) {
				a->cand_idx[cand_n] = i;
				a->cand_word[cand_n++] = d;
				last = d;
				continue;
			}
		} else {
			if (d == 0) { /* never used */
				if (a->zero == NO_PASS)
					a->zero = i;
				if (stop_at_zero)
					break;
				continue;
			}
			unsigned st = chunk_state(d), l = chunk_lane(d);
			if (st - CHUNK_LIVE > CHUNK_RESV - CHUNK_LIVE ||
			    l >= lanes || !(d >> CHUNK_INC_SHIFT))
				continue; /* a word no writer stores */
			uint32_t h = held[l];
			if (!h) {
				seen[seen_n++] = (uint16_t)l;
				if (a->mark)
					a->mark[l] = atomic_load_explicit(
						&seg_lane(s, l)->claim_mark,
						memory_order_relaxed);
			}
			uint32_t live = 0;
			if (st == CHUNK_LIVE) {
				live = HELD_LIVE | HELD_OWN_LIVE;
				if (a->pre && l != me &&
				    claim_before(d, a->mark ? a->mark[l]
							    : lane_mark(s, l))) {
					a->pre[l]++;
					live = HELD_LIVE;
				}
			}
			held[l] = (h + 1) | live;
			continue;
		}
		/* else insertion into the sorted few, by incarnation (the
		 * order of the bases) */
		uint32_t k = cand_n;
		if (k == OWN_LIST) {
			if (!inc_before(d, a->cand_word[k - 1]))
				continue;
			k--;
		} else {
			cand_n++;
		}
		for (; k > 0 && inc_before(d, a->cand_word[k - 1]); k--) {
			a->cand_idx[k] = a->cand_idx[k - 1];
			a->cand_word[k] = a->cand_word[k - 1];
		}
		a->cand_idx[k] = i;
		a->cand_word[k] = d;
		last = a->cand_word[cand_n - 1];
	}
	if (mine || gone) {
		if (!held[me])
			seen[seen_n++] = (uint16_t)me;
		held[me] = (held[me] + mine + gone) | HELD_LIVE |
			   (mine ? HELD_OWN_LIVE : 0);
		a->pre_me += gone;
	}
	a->seen_n = seen_n;
	a->cand_n = cand_n;
}

/* What departed writers keep, together: the lanes that hold chunks and
 * no writer (their writers exited, or died and were reaped) count as one
 * more writer whose share is at most 1/DEPARTED_DIV of the buffer. Under
 * it they lose nothing, as a quiet live writer does not: a crashed
 * daemon's last records, a one-shot script's line. Above it, the oldest
 * of their chunks goes first (departed_take(), space.c). The bound
 * keeps a lone live writer at 15/16 of the buffer, less the chunk it fills,
 * whatever departed writers wrote before it. */
#define DEPARTED_DIV 16

/* The policy's answer from a pass (its held counts): the lane to take
 * from, VICTIM_DEPARTED, or UINT_MAX if no chunk can be taken. N is the
 * lanes holding chunks whose owner word is set, and @me; the departed
 * (the chunks of every other lane, and those older than their writer's
 * claim in a lane that has one) keep D = min(what they hold,
 * chunk_count / max(DEPARTED_DIV, N + 1)), and each of the N a share of
 * (chunk_count - D) / N. The departed give while they hold more than
 * their bound; else the lane furthest above its share, the departed as
 * one, gives; ties go to @me; @me if nobody is above the share and it
 * has a LIVE chunk. Leaves N, D's bound and what the departed hold in
 * @a for chunk_pick(). */
unsigned shmlog__survey_decide(const struct shmlog__seg *s, unsigned me,
			       struct survey_acc *a)
{
	const struct shmlog__fixed *f = &s->fixed;
	int64_t n = a->held[me] ? 0 : 1; /* us, even holding nothing */
	int64_t departed = 0;
	bool departed_live = false;
	for (uint32_t k = 0; k < a->seen_n; k++) {
		unsigned l = a->seen[k];
		uint32_t h = a->held[l];
		if (l == me || atomic_load_explicit(&seg_lane(s, l)->owner,
						    memory_order_relaxed) != 0) {
			a->held[l] |= HELD_OWNED;
			n++;
			uint32_t pre = l == me ? a->pre_me : a->pre ? a->pre[l] : 0;
			departed += pre;
			departed_live |= pre != 0;
			continue;
		}
		departed += h & HELD_COUNT;
		departed_live |= (h & HELD_LIVE) != 0;
	}
	int64_t cap = (int64_t)f->chunk_count / (n + 1 > DEPARTED_DIV
							 ? n + 1
							 : DEPARTED_DIV);
	int64_t keep = departed < cap ? departed : cap;
	a->n = n;
	a->departed = departed;
	a->departed_cap = cap;
	/* Above their bound the departed give first, whoever else is above
	 * a share. Weighed against the writers' excess, as one more writer,
	 * they would keep several times the bound for good beside writers
	 * that hold little: in 128 chunks (bound 8), two quiet writers
	 * holding a chunk each (N = 3), a flooder holding 79 is
	 * 79 * 3 - 120 = 117 above its share, departed holding 47 are
	 * (47 - 8) * 3 = 117 above theirs: from there on it recycles its
	 * own oldest, whichever lane it has. */
	if (departed_live && departed > cap)
		return VICTIM_DEPARTED;
	/* excess over the share, scaled by N: held * N - (chunk_count - D),
	 * held without the departed's; the departed's: (D - bound) * N */
	unsigned victim = UINT_MAX;
	int64_t most = 0;
	if (departed_live) {
		victim = VICTIM_DEPARTED;
		most = (departed - cap) * n;
	}
	for (uint32_t k = 0; k < a->seen_n; k++) {
		unsigned l = a->seen[k];
		uint32_t h = a->held[l];
		if (!(h & HELD_OWN_LIVE) || !(h & HELD_OWNED))
			continue; /* no LIVE chunk of a writer to give */
		uint32_t pre = l == me ? a->pre_me : a->pre ? a->pre[l] : 0;
		int64_t excess = (int64_t)((h & HELD_COUNT) - pre) * n -
				 ((int64_t)f->chunk_count - keep);
		if (victim == UINT_MAX || excess > most ||
		    (excess == most && l == me)) {
			victim = l;
			most = excess;
		}
	}
	/* at or under the share everybody: our own oldest, if we have one */
	if (victim != UINT_MAX && most <= 0 && (a->held[me] & HELD_OWN_LIVE))
		victim = me;
	return victim;
}

/* ---- what the space policy sees (shmlog_stat_space()) ---- */

void shmlog__space_census(const struct shmlog__seg *s,
			  struct shmlog_space_stats *st)
{
	const struct shmlog__fixed *f = &s->fixed;
	uint64_t n = 0;
	bool owned_seen[SHMLOG_LANES_MAX] = {false};
	st->chunk_size = f->chunk_size;
	st->chunks = f->chunk_count;
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t d = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (d == 0) {
			st->unused++;
			continue;
		}
		if (!chunk_held(f, d))
			continue; /* a word no writer stores */
		unsigned l = chunk_lane(d);
		const struct shmlog__lane *ctl = seg_lane(s, l);
		bool owned = atomic_load_explicit(&ctl->owner,
						  memory_order_relaxed) != 0;
		if (owned && !owned_seen[l]) {
			owned_seen[l] = true;
			n++;
		}
		if (owned && !(chunk_state(d) == CHUNK_LIVE &&
			       claim_before(d, atomic_load_explicit(
						       &ctl->claim_mark,
						       memory_order_relaxed))))
			st->writers++;
		else
			st->departed++;
	}
	st->departed_bound = f->chunk_count /
			     (n + 1 > DEPARTED_DIV ? n + 1 : DEPARTED_DIV);
}
