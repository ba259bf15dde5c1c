/* SPDX-License-Identifier: MIT */
/*
 * The ring protocol's writer side (ring.c, space.c, wake.c): a writing
 * thread's view of its lane, the append entry points behind append.h's
 * inline one, the space policy's figures and the reader wake-up.
 */
#ifndef SHMLOG_RING_H
#define SHMLOG_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "barrier.h"
#include "segment.h"

/* A writer's look at the whole descriptor table, spread over its chunk
 * switches, and the chunks it takes next (space.c: "The switch"). Private
 * memory of the writing thread, mapped when it first switches chunks in
 * a lane of its own. */
struct shmlog__survey;

struct shmlog__wlane {
	/* The write paths' one compare (writer.c): the handle's id while
	 * this slot holds a lane of its own for it (ctl set) and no write of
	 * this thread is inside it; 0 if the slot holds no lane, or while
	 * the general path writes; the id with its top bit set (KEY_BUSY)
	 * while an inline append is inside the lane. */
	uint64_t key;
	uint64_t handle_id; /* 0: slot unused */
	struct shmlog__lane *ctl;
	/* the OPEN chunk: its bytes less its base position (record at
	 * position p: rec_base + p), where its word is (NULL: no chunk) and
	 * what it holds */
	uintptr_t rec_base;
	_Atomic uint64_t *cdesc;
	uint64_t cword;
	uint64_t head, seq;
	uint64_t cend; /* the OPEN chunk's end; cend == head: none */
	uint32_t pid, tid; /* in this order: one load for the header */
	_Atomic uint32_t *sleepers; /* the buffer's notify.sleepers */
	volatile unsigned busy; /* a write is in progress on this thread */
	uint32_t chunk; /* the OPEN chunk's index, CHUNK_NONE */
	unsigned char *cdata; /* its bytes */
	uint64_t cbase; /* its base position */
	struct shmlog *h;
	unsigned lane;
	/* No lane of its own (ctl == NULL): the thread borrows a shared lane
	 * per record, and tries again for its own when a lane is released. */
	uint32_t releases_seen;
	/* The space policy's survey and the chunks it said to take next
	 * (NULL: none, each switch asks the policy whole; survey_failed:
	 * mapping it failed once, not tried again) */
	struct shmlog__survey *survey;
	bool survey_failed;
	/* a typed call is being made again after its switch (fmtarg_call.c,
	 * print_typed_switch()): a second miss is the general path's */
	bool typed_again;
	/* incarnations reserved for this lane's next chunks, [inc_next,
	 * inc_end): one fetch-add on the epoch per INC_BLOCK chunks */
	uint64_t inc_next, inc_end;
	uint32_t switches; /* chunks taken since the lane was claimed */
	uint64_t claim_mark; /* the lane's claim_mark, as this writer set it */
};

/* A record to append, as the writer passes it: the raw time, the header's
 * second-to-last word packed (len filled in by the append), tag and
 * message. Two registers of metadata instead of a struct in memory. */
struct shmlog__recdesc {
	uint64_t time;
	uint64_t meta; /* rec_meta(): msg_len, prio, flags, tag_len */
	const char *tag;
	uint64_t tword; /* the tag's bytes, if shorter than 8 (append.h) */
	const char *msg;
};

/* Append one record to the lane @w owns (@tword: the tag's bytes if it is
 * shorter than 8, as tag_measure() in append.h gives them). false if no
 * chunk could be had (the record is dropped: count it). */
bool shmlog__ring_append(const struct shmlog__seg *s, struct shmlog__wlane *w,
			 uint64_t time, uint64_t meta, const char *tag,
			 uint64_t tword, const char *msg);
/* Room for a record of @len bytes (header included, aligned) in the
 * lane @w owns: the OPEN chunk if it holds it and its word still names it
 * ours, else a new chunk taken. false: none could be had. */
bool shmlog__ring_make_room(const struct shmlog__seg *s,
			    struct shmlog__wlane *w, uint32_t len);
/* shmlog__ring_append() for a caller whose own try at the OPEN chunk
 * (shmlog__append_fit_as(): append.h) just failed: the chunk is switched
 * to first, no second try where the first was. */
bool shmlog__ring_append_next(const struct shmlog__seg *s,
			      struct shmlog__wlane *w, uint64_t time,
			      uint64_t meta, const char *tag, uint64_t tword,
			      const char *msg);
/* Bytes of the data area holding records: every LIVE chunk whole, each
 * OPEN chunk up to its lane's head. With @per_lane (lane_count entries,
 * zeroed by the caller): each lane's bytes and, in per_lane[lane_count +
 * lane], its chunks. Reads the mapping: call it guarded. */
uint64_t shmlog__space_used(const struct shmlog__seg *s, uint64_t *per_lane);
/* shmlog_stat_space()'s figures, by the space policy's rules
 * (space_survey.c). */
void shmlog__space_census(const struct shmlog__seg *s,
			  struct shmlog_space_stats *st);
/* Wake sleeping readers if any (slow path of every append). */
void shmlog__ring_wake(struct shmlog__hdr *hdr);
/* membarrier(2): register once per process; false if unsupported. */
bool shmlog__membarrier_register(void);
int shmlog__membarrier(void);

/* ---- a writer's OPEN chunk (space.c, lane.c) ---- */

/* The record at @off in a chunk's bytes @data. */
static inline struct shmlog__rec *rec_at(unsigned char *data, uint64_t off)
{
	return (struct shmlog__rec *)(void *)(data + off);
}

/* Make chunk @i, whose word is now @word (OPEN, ours), the writer's. */
static inline void chunk_install(const struct shmlog__seg *s, struct shmlog__wlane *w,
				 unsigned i, uint64_t word)
{
	w->chunk = i;
	w->cword = word;
	w->cdesc = seg_chunk(s, i);
	w->cdata = seg_chunk_data(s, i);
	w->cbase = chunk_base(&s->fixed, word);
	w->rec_base = (uintptr_t)w->cdata - (uintptr_t)w->cbase;
	w->cend = w->cbase + s->fixed.chunk_size;
}

/* The writer has no chunk: the next append takes one. */
static inline void chunk_none(struct shmlog__wlane *w)
{
	w->chunk = CHUNK_NONE;
	w->cdata = NULL;
	w->rec_base = 0;
	w->cword = 0;
	w->cdesc = NULL;
	w->cbase = w->cend = w->head;
}

/* Give the OPEN chunk back to the lane's history (switch step b, and a
 * release): from now on anybody may take it. */
static inline void chunk_close(const struct shmlog__seg *s, struct shmlog__wlane *w)
{
	if (w->chunk == CHUNK_NONE)
		return;
	uint64_t live = (w->cword & ~(uint64_t)CHUNK_STATE_MASK) | CHUNK_LIVE;
	uint64_t open = w->cword;
	/* a CAS, not a store: a hostile file may have changed it */
	atomic_compare_exchange_strong_explicit(seg_chunk(s, w->chunk), &open,
						live, memory_order_release,
						memory_order_relaxed);
	/* LMM(ring:K) above: the chunk's records before the word that
	 * lets a taker have it (its CAS, LMM(ring:Q)) */
	chunk_none(w);
}

/* Is chunk word @d older than the claim that @mark (a lane's claim_mark)
 * records: a chunk a departed writer left in the lane? */
static inline bool claim_before(uint64_t d, uint64_t mark)
{
	return mark && (int64_t)((d >> CHUNK_INC_SHIFT << CHUNK_INC_SHIFT) -
				 (mark >> CHUNK_INC_SHIFT << CHUNK_INC_SHIFT)) < 0;
}

/* Lane @lane's chunk (in @states) with the largest base (ring.c, the
 * chunk table). false if none. */
bool shmlog__chunk_newest(const struct shmlog__seg *s, unsigned lane,
			  unsigned states, unsigned *idx, uint64_t *word);
/* Forget what survey @sv knows of its lane (space.c). */
void shmlog__survey_forget(struct shmlog__survey *sv);
/* Forget the chunks @sv reserved for its lane (space.c). */
void shmlog__survey_resv_drop(struct shmlog__survey *sv);

#endif
