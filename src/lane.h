/* SPDX-License-Identifier: MIT */
/*
 * Lanes (lane.c): who holds a lane (an OFD lock per lane), who
 * wrote there last (the ident), and claiming, repairing and giving lanes
 * back.
 */
#ifndef SHMLOG_LANE_H
#define SHMLOG_LANE_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"
#include "segment.h"

struct shmlog;

/* The owner word a writer stores: who holds the lane, for people. */
uint64_t shmlog__owner_word(uint32_t pid, uint32_t tid);
/* Is lane @lane, whose owner word is @owner, held by a live process (other
 * than through @s's own description)? 1 or 0, or a negative errno
 * (-EINVAL: no OFD locks). */
int shmlog__owner_alive(const struct shmlog__seg *s, unsigned lane,
			uint64_t owner);
/* Shared lanes: the word a borrower stores (naming its handle's slot), and
 * whether the borrower a word names is dead. */
uint64_t shmlog__borrow_word(const struct shmlog *h, uint32_t tid);
bool shmlog__is_borrow_word(uint64_t owner);
bool shmlog__borrower_dead(const struct shmlog *h, uint64_t owner);
/* Take a slot for @h's borrowers (h->slot -1 if none could be had). */
void shmlog__slot_take(struct shmlog *h);
/* Take lane @lane's lock for thread @tid of this process: false if a live
 * process or a live thread of ours holds it. Async-signal-safe. */
bool shmlog__lane_lock(struct shmlog *h, unsigned lane, uint32_t tid);
/* Drop it (the owner word must already say free). */
void shmlog__lane_unlock(struct shmlog *h, unsigned lane);
/* Open @h's lock descriptor (@path: the buffer's file), close it. */
int shmlog__owner_open(struct shmlog *h, const char *path);
void shmlog__owner_close(struct shmlog *h);
/* In a fork() child: a description of our own for @h, and no lanes held.
 * On failure the child may not claim lanes through @h. */
int shmlog__owner_reopen(struct shmlog *h);

/* Record lane @lane's claimer (format 2.2): @pid, @tid and the
 * process's name, in the lane's ident and in a slot of the recent writers
 * (page 0 of @s's writable header), kept after it gives the lane back.
 * The caller holds the lane (an exclusive one). A few syscalls: claims
 * only. Async-signal-safe. */
void shmlog__ident_store(const struct shmlog__seg *s, unsigned lane,
			 uint32_t pid, uint32_t tid);
#define IDENT_DIED 0x80000000u
/* Say in lane @ctl's ident that its writer died holding the lane: by the
 * claimer that found it dead, holding the lane now. */
void shmlog__ident_died(struct shmlog__lane *ctl);
/* An ident's writer: 0 with *@pid, *@tid, *@lane (the ident's lane
 * field) and @name (16 bytes, NUL-padded, not terminated if all 16 are
 * used), -ENOENT if nobody recorded itself, -EAGAIN if it kept changing
 * under the reader. Reads the mapping: call it guarded. */
int shmlog__ident_load(const struct shmlog__ident *id, uint32_t *pid,
		       uint32_t *tid, uint32_t *lane, char name[16]);
/* Claim lane @lane for the caller if free (or, with @steal_dead, abandoned
 * by a dead owner: then whatever it left is repaired). true on success,
 * with @w filled. @w->h and @w->tid must be set. */
bool shmlog__lane_claim(const struct shmlog__seg *s, unsigned lane,
			uint64_t me, bool steal_dead, struct shmlog__wlane *w);
/* Make lane @lane's OPEN chunks LIVE, and give its reserved ones back
 * (its owner is gone: shmlog_close() of a handle whose threads held it). */
void shmlog__lane_close_chunks(const struct shmlog__seg *s, unsigned lane);
/* Say that exclusive lane @lane was given back: threads without a lane
 * try again, and the next claim looks at it first (stats.last_released). */
void shmlog__lane_announce(struct shmlog__hdr *hdr, unsigned lane);
/* Give a lane back; @announce: shmlog__lane_announce() it (not for a
 * shared lane lent for one record). */
void shmlog__lane_release(struct shmlog__wlane *w, bool announce);
/* Forget a thread's lane view (zero it), unmapping its survey: the thread
 * exits, forks, loses the handle. Does not touch the segment. */
void shmlog__wlane_forget(struct shmlog__wlane *w);
/* Lanes [0, exclusive) are for threads to keep; the rest are lent out one
 * record at a time to threads that found none free. */
static inline unsigned shmlog__lanes_exclusive(const struct shmlog__fixed *f)
{
	return f->lane_count - f->lane_count / 8;
}
/* Claim and give back (repairing them) the lanes of dead owners that still
 * hold chunks, so that their space counts as nobody's share. Slow path:
 * a lock probe per such lane. */
void shmlog__reap_dead(struct shmlog *h, uint64_t me, uint32_t tid);

/* Give lane @lane's chunks back: its reserved ones to nobody, and with
 * @open its OPEN ones to its history (LIVE). */
void shmlog__lane_give_back(const struct shmlog__seg *s, unsigned lane,
			    bool open);

#endif
