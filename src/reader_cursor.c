/* SPDX-License-Identifier: MIT */
/*
 * A reader's cursor over one lane: it walks the lane's chunks with the
 * record protocol of ring.c (copy, check, re-check) and keeps the reader's
 * books (records read, overwritten, torn, damaged places). A follower's
 * pacing lives here too: how often it loads the head of a lane being
 * written, and when it rests from a writer that overtook it.
 *
 * What must hold: nothing read from the mapping is used before it was
 * copied out and checked against the mapping's bounds; a record is handed
 * on only after its word and its chunk's descriptor were re-read
 * unchanged; every loop moves the cursor strictly forward or ends
 * (cursor_fetch()), so a hostile file cannot hold a reader.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reader.h"

/* ---- a cursor per lane: the record protocol of ring.c, and the books -- */

/* Records from sequence number @seq on are about to be counted as lost:
 * if they begin a loss not yet reported, it begins there. */
static inline void lost_from(struct shmlog__rlane *c, uint64_t seq)
{
	if (!c->lost_overwritten && !c->lost_torn)
		c->lost_first = seq;
}

/* A record header at @src with @room bytes left in its chunk; what lies
 * past the chunk reads as zeros. */
static inline void copy_header(struct shmlog__rec *r, const unsigned char *src,
			       uint64_t room)
{
	if (room >= REC_HDR) {
		copy_bytes(r, src, REC_HDR);
		return;
	}
	memset(r, 0, sizeof(*r));
	copy_bytes(r, src, (size_t)room);
}

/* Where a reader starts on a lane it has not looked at yet: before its
 * oldest chunk. */
static void cursor_begin(const struct shmlog__seg *s, unsigned lane,
			 struct shmlog__rlane *c)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	uint64_t head = c->head_seen =
		atomic_load_explicit(&ctl->head, memory_order_acquire); /* LMM(ring:F) */
	c->pos = (head & ~(uint64_t)(REC_ALIGN - 1)) - SHMLOG__LANE_REACH;
	c->chunk = CHUNK_NONE;
	c->next_seq = s->fixed.initial_seq;
	c->seq_known = true;
	c->begun = true;
}

/* The records up to the lane's head, @head, are gone (their chunks were
 * taken): count them as overwritten, as a gap before the next record
 * would, up to the lane's next_seq. That is the count for @head only if
 * head has not moved since (next_seq is stored after head, with release,
 * so a next_seq seen with the same head is no newer than it; it may lag
 * by the newest record, which a later gap counts). false if head moved. */
static bool cursor_gone(const struct shmlog__seg *s, unsigned lane,
			struct shmlog__rlane *c, uint64_t head)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	/* LMM(ring:P) next_seq, then head again (ring:F): pairs with ring:N */
	uint64_t next = atomic_load_explicit(&ctl->next_seq,
					     memory_order_acquire);
	if (atomic_load_explicit(&ctl->head, memory_order_acquire) != head)
		return false;
	uint64_t gap = next - c->next_seq;
	if (!c->seq_known || gap == 0 || gap >= (1ull << 62))
		return true;
	c->overwritten += gap;
	if (c->started) {
		lost_from(c, c->next_seq);
		c->lost_overwritten += gap;
	}
	c->next_seq = next;
	c->after_damage = false;
	c->damage_bytes = 0;
	return true;
}

/* The cursor stands at the lane's head, @head, or past it (its chunk was
 * taken from a dead writer's lane), and did not get there by reading the
 * record that ends there: it jumped, to the end of a chunk taken from
 * under it or into a chunk at its base. If records were lost on the way,
 * no record after them may ever number the gap: the lane's writer took a
 * chunk and died before writing in it, or the lane's history was taken up
 * to such an empty chunk. Count them now by the lane's next_seq, as
 * cursor_gone() does for a lane with no chunk left (a reader that never
 * waits, drained, balances its books: shmlog.h). Damage skipped on the
 * way is left to the next record's gap, as before. false if head moved:
 * read on. The line of next_seq is head's, just loaded. */
static bool cursor_settle(const struct shmlog__seg *s, unsigned lane,
			  struct shmlog__rlane *c, uint64_t head)
{
	return c->chained == c->pos || c->after_damage ||
	       cursor_gone(s, lane, c, head);
}

/* Put the cursor in the lane's chunk that holds its position, or the next
 * one, if something in it is published (its base at or below head). A
 * lane with no such chunk and a head ahead of the cursor had its records
 * taken: the cursor goes to head. false if there is no chunk to read. */
static bool cursor_enter(const struct shmlog__seg *s, unsigned lane,
			 struct shmlog__rlane *c)
{
	const struct shmlog__fixed *f = &s->fixed;
	unsigned i;
	uint64_t word;
	uint64_t head = c->head_seen;
	if (!shmlog__chunk_find(s, lane, c->pos, head,
				CHUNK_IN_LIVE | CHUNK_IN_OPEN, &i, &word)) {
		/* every chunk up to head was taken: what they held is
		 * overwritten, counted up to the lane's next_seq if head has
		 * not moved meanwhile (else the next look does it) */
		if (pos_before(c->pos, head) && !(head & (REC_ALIGN - 1)) &&
		    cursor_gone(s, lane, c, head))
			c->pos = head;
		return false;
	}
	c->chunk = i;
	c->cid = chunk_id(word);
	c->cbase = chunk_base(f, word);
	c->cend = c->cbase + f->chunk_size;
	if (pos_before(c->pos, c->cbase))
		c->pos = c->cbase;
	return true;
}

/* What a damaged lane looked like when the reader gave up on it: it reads
 * it again only once one of these changed (a writer wrote on). */
static void lane_fingerprint(const struct shmlog__seg *s, unsigned lane,
			     const struct shmlog__rlane *c, uint64_t fp[3])
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	/* LMM(ring:F) */
	fp[0] = atomic_load_explicit(&ctl->head, memory_order_acquire);
	fp[1] = c->chunk == CHUNK_NONE
			? 0
			: atomic_load_explicit(seg_chunk(s, c->chunk),
					       memory_order_relaxed);
	fp[2] = 0;
	if (c->chunk != CHUNK_NONE && !(c->pos & (REC_ALIGN - 1)) &&
	    c->cend - c->pos >= REC_ALIGN &&
	    c->pos - c->cbase < s->fixed.chunk_size) {
		const unsigned char *at =
			seg_chunk_data(s, c->chunk) + (c->pos - c->cbase);
		fp[2] = atomic_load_explicit(
			&((const struct shmlog__rec *)(const void *)at)->word,
			memory_order_relaxed);
	}
}

static void cursor_stop(const struct shmlog__seg *s, unsigned lane,
			struct shmlog__rlane *c)
{
	if (!c->damaged)
		c->corrupt++;
	c->damaged = true;
	lane_fingerprint(s, lane, c, c->fp);
}

bool shmlog__cursor_lane_changed(const struct shmlog__seg *s, unsigned lane,
				 const struct shmlog__rlane *c)
{
	uint64_t fp[3];
	lane_fingerprint(s, lane, c, fp);
	return fp[0] != c->fp[0] || fp[1] != c->fp[1] || fp[2] != c->fp[2];
}

/* The first record in [@from, @limit) of the cursor's chunk that proves
 * itself: its word names its own position, its header checks out and it
 * ends by @limit. One pass, at most chunk_size / 8 words. */
static bool chunk_find_record(const struct shmlog__fixed *f,
			      const unsigned char *data,
			      const struct shmlog__rlane *c, uint64_t from,
			      uint64_t limit, uint64_t *at)
{
	if (from & (REC_ALIGN - 1))
		return false;
	for (uint64_t pos = from;
	     pos != limit && limit - pos <= f->chunk_size &&
	     pos - c->cbase < f->chunk_size;
	     pos += REC_ALIGN) {
		uint64_t room = c->cend - pos;
		uint32_t len;
		struct shmlog__rec r;
		copy_header(&r, data + (pos - c->cbase), room);
		if (shmlog__rec_check(f, &r, pos, room, &len) && len <= limit - pos) {
			*at = pos;
			return true;
		}
	}
	return false;
}

/* The record at the cursor is damaged (its word, its length, its content
 * or its place in the chain): go on at the next record boundary that
 * proves itself, or at @limit. The cursor moves forward; the records lost
 * on the way are counted as torn (by the gap in sequence numbers at the
 * next record), the damage once. */
static void cursor_skip_damage(const struct shmlog__fixed *f,
			       const unsigned char *data,
			       struct shmlog__rlane *c, uint64_t limit)
{
	uint64_t at;
	if (!chunk_find_record(f, data, c, c->pos + REC_ALIGN, limit, &at))
		at = limit;
	c->damage_bytes += at - c->pos;
	c->pos = at;
	c->corrupt++;
	c->after_damage = true;
}

/* Does a record numbered @seq belong where the cursor is? Right after the
 * record read before it in the same chunk it must be the very next
 * number: records of a lane are numbered in the order of their positions,
 * across chunks, claims and repairs. After a jump (a chunk boundary, past
 * damage) it must only be newer than every record read from the lane. */
static bool cursor_seq_fits(const struct shmlog__rlane *c, uint64_t seq)
{
	if (!c->seq_seen)
		return true;
	if (c->chained == c->pos)
		return seq == c->last_seq + 1;
	return (int64_t)(seq - c->last_seq) > 0;
}

/* A COMMITTED or TORN record with sequence number @seq was found: account
 * for the records between the last one and it. Records lost where the lane
 * was damaged are counted as torn (they failed validation), others as
 * overwritten. */
static void cursor_seq(struct shmlog__rlane *c, uint64_t seq)
{
	if (c->seq_known && seq != c->next_seq) {
		uint64_t gap = seq - c->next_seq;
		if (gap < (1ull << 62)) { /* forward gap: records lost */
			/* no more than the damaged bytes could hold */
			uint64_t torn = 0;
			if (c->after_damage)
				torn = c->seq_seen ? gap : 1;
			if (torn > c->damage_bytes / (REC_HDR + REC_ALIGN) + 1)
				torn = c->damage_bytes / (REC_HDR + REC_ALIGN) + 1;
			if (torn || c->started)
				lost_from(c, c->next_seq);
			c->torn += torn;
			c->lost_torn += torn;
			c->overwritten += gap - torn;
			if (c->started)
				c->lost_overwritten += gap - torn;
		}
	}
	c->after_damage = false;
	c->damage_bytes = 0;
	c->seq_known = true;
	c->seq_seen = true;
	c->last_seq = seq;
	c->next_seq = seq + 1;
}

void shmlog__cursor_skip_to_head(const struct shmlog__seg *s, unsigned lane,
				 struct shmlog__rlane *c)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	/* LMM(ring:F) */
	c->pos = c->head_seen =
		atomic_load_explicit(&ctl->head, memory_order_acquire);
	c->chunk = CHUNK_NONE;
	c->next_seq = atomic_load_explicit(&ctl->next_seq, memory_order_relaxed);
	c->seq_known = true;
	c->started = true;
	c->begun = true;
}

/* How often a follower (a reader that calls shmlog_reader_wait()) loads
 * the head of a lane being written: at most once every FOLLOW_LOOK_NS.
 * Each load takes the line head is in from the writer's core, and reading
 * up to that head takes the line the writer's next record starts in:
 * chasing the writer record by record would cost it two misses a record
 * (wake.c, "Following writers"); one look every FOLLOW_LOOK_NS costs it
 * two misses that often, and is the most a record waits for the follower
 * to see it while it keeps up. A lane whose head
 * did not move at the last look is looked at freely: nobody writes its
 * line, a load costs nobody. */
#define FOLLOW_LOOK_NS 4000
/* A writer publishing more than FOLLOW_FAST_BYTES_US bytes a microsecond
 * (2 GB/s: tens of millions of records a second, a writer at full speed)
 * is looked at every FOLLOW_LOOK_FAST_NS: two misses every 4 us are most
 * of what a follower costs it, and a record written that fast is one of
 * hundreds a look finds whatever the gap. */
#define FOLLOW_FAST_BYTES_US 2000
#define FOLLOW_LOOK_FAST_NS 16000

static uint64_t cursor_look_gap(const struct shmlog__rlane *c)
{
	return c->look_gap_ns ? c->look_gap_ns : FOLLOW_LOOK_NS;
}

/* Is the follower's last look at this lane too recent to look again (the
 * lane moved then, so a writer is at work on its line)? */
static bool cursor_look_fresh(const struct shmlog__rlane *c, uint64_t now)
{
	return c->looked_ns && c->head_seen != c->head_prev &&
	       now - c->looked_ns < cursor_look_gap(c);
}

/* Was a lane written at full speed, its head @moved bytes on between
 * @then_ns (0: unknown) and @now? More than FOLLOW_FAST_BYTES_US a
 * microsecond; a head that went back (a lane taken over) is not. */
static bool lane_ran_fast(uint64_t moved, uint64_t then_ns, uint64_t now)
{
	return then_ns && now > then_ns && moved < (UINT64_C(1) << 40) &&
	       moved > ((now - then_ns) / 1000 + 1) * FOLLOW_FAST_BYTES_US;
}

/* A look at @now loaded head, the one before it was at @prev_ns: the gap
 * to the next, by how fast the lane moved in between. */
static void cursor_look_pace(struct shmlog__rlane *c, uint64_t now,
			     uint64_t prev_ns)
{
	bool fast = lane_ran_fast(c->head_seen - c->head_prev, prev_ns, now);
	c->look_gap_ns = fast ? FOLLOW_LOOK_FAST_NS : FOLLOW_LOOK_NS;
	if (fast)
		c->fast_ns = now;
}

/* A follower's look at the lane (shmlog_reader_wait()): the bytes
 * published past the cursor, its head loaded into head_seen, where the
 * cursor reads up to; UINT64_MAX: a record is held, or the lane is to be
 * read now whatever its head. @gated: a lane being written whose last
 * look is fresh keeps the head it has (its bytes past the cursor, if
 * any, are counted all the same). */
uint64_t shmlog__cursor_look(const struct shmlog__seg *s, unsigned lane,
			     struct shmlog__rlane *c, uint64_t now, bool gated)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	if (c->have || !c->begun) {
		c->looked_ns = now ? now : 1;
		return UINT64_MAX;
	}
	if (c->rest_until_ns) /* cursor_rest(): nothing until it is over */
		return now < c->rest_until_ns ? 0 : UINT64_MAX;
	if (c->damaged) {
		c->looked_ns = now ? now : 1;
		return shmlog__cursor_lane_changed(s, lane, c) ? UINT64_MAX : 0;
	}
	if (!gated || !cursor_look_fresh(c, now)) {
		uint64_t head = atomic_load_explicit(
			&ctl->head, memory_order_acquire); /* LMM(ring:F) */
		uint64_t prev = c->looked_ns;
		c->looked_ns = now ? now : 1;
		c->head_prev = c->head_seen;
		c->head_seen = head;
		cursor_look_pace(c, now, prev);
	}
	return pos_before(c->pos, c->head_seen) ? c->head_seen - c->pos : 0;
}

/* The cursor reached the head it has: load it again? Yes in a reader that
 * does not wait, and in a lane whose head did not move between the last
 * two loads (its line is not being written: a load costs nobody). A
 * follower loads the head of a lane being written only if its last look
 * is FOLLOW_LOOK_NS old; what it leaves here, its next wait returns for,
 * at most FOLLOW_LOOK_NS after that look. */
bool shmlog__cursor_may_look(struct shmlog__rlane *c)
{
	if (c->looked_ns && c->head_seen != c->head_prev) {
		uint64_t now = shmlog__clock_ns(CLOCK_MONOTONIC);
		if (now - c->looked_ns < cursor_look_gap(c))
			return false;
		c->looked_ns = now;
	}
	c->head_prev = c->head_seen;
	return true;
}

/* How many chunks lane @lane holds (LIVE and OPEN). One pass over the
 * descriptor table. */
static uint64_t lane_held(const struct shmlog__seg *s, unsigned lane)
{
	const struct shmlog__fixed *f = &s->fixed;
	uint64_t held = 0;
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		held += chunk_valid(f, w) && chunk_lane(w) == lane;
	}
	return held;
}

/* The writer took the chunk a follower was reading: the follower fell a
 * whole history behind. The lane's next chunk is its oldest, the one the
 * writer takes next: reading there, the follower would read each line as
 * the writer rewrites it, both slowed many times over, and be overtaken
 * again and again. So it goes on at the chunk that holds the lane's
 * newest half instead; what it steps over is counted as overwritten, by
 * the gap in sequence numbers, as it would have been. A reader that does
 * not wait reads on from the oldest. */
static void cursor_overtaken(const struct shmlog__seg *s, unsigned lane,
			     struct shmlog__rlane *c, uint64_t head)
{
	const struct shmlog__fixed *f = &s->fixed;
	if (!c->looked_ns || !pos_before(c->pos, head))
		return;
	uint64_t half = lane_held(s, lane) * f->chunk_size / 2;
	unsigned i;
	uint64_t word;
	if (pos_before(c->pos, head - half) &&
	    shmlog__chunk_find(s, lane, head - half, head,
			       CHUNK_IN_LIVE | CHUNK_IN_OPEN, &i, &word) &&
	    pos_before(c->pos, chunk_base(f, word)))
		c->pos = chunk_base(f, word);
}

/* A follower overtaken by a writer at full speed rests on the lane: it
 * reads it at most one part in FOLLOW_REST_SHARE of the time. Every line
 * it reads costs the writer a miss when it writes there again, a lap
 * later (the line is the follower's, or was flushed to memory: below),
 * and a follower that cannot keep up reads lines as fast as it can, so
 * that each lap turns runs of the writer's stores into misses to memory.
 * It loses most records either way; resting, it loses some more (counted
 * as overwritten, as the others) and costs the writer a quarter as much
 * (it reads one part in FOLLOW_REST_SHARE of the time). A
 * rest lasts FOLLOW_REST_SHARE - 1 times the reading before it, at most
 * FOLLOW_REST_MAX_NS; afterwards the follower goes on at the lane's
 * newest half. A writer slower than FOLLOW_FAST_BYTES_US between two
 * overtakings (a follower that just falls behind a busy writer now and
 * then) is not rested from. Nor is any writer by a reader whose job is to
 * keep records (the archiver: shmlog__reader_no_rest()). */
#define FOLLOW_REST_SHARE 4
#define FOLLOW_REST_MAX_NS 10000000

static void cursor_rest(struct shmlog__rlane *c, uint64_t head, uint64_t now)
{
	if (!c->no_rest &&
	    lane_ran_fast(head - c->read_from_head, c->read_from_ns, now)) {
		uint64_t rest = (now - c->read_from_ns) * (FOLLOW_REST_SHARE - 1);
		if (rest > FOLLOW_REST_MAX_NS)
			rest = FOLLOW_REST_MAX_NS;
		c->rest_until_ns = now + rest;
		c->fast_ns = now;
	}
	c->read_from_ns = now;
	c->read_from_head = head;
}

/* A resting follower's lane (cursor_rest()): still resting at @now? If
 * the rest is over, the cursor goes on at the lane's newest half (its
 * position was most likely overwritten meanwhile). */
static bool cursor_resting(const struct shmlog__seg *s, unsigned lane,
			   struct shmlog__rlane *c, uint64_t now)
{
	if (now < c->rest_until_ns)
		return true;
	c->rest_until_ns = 0;
	uint64_t head = atomic_load_explicit(&seg_lane(s, lane)->head,
					     memory_order_acquire); /* LMM(ring:F) */
	c->head_seen = head;
	if (c->chunk == CHUNK_NONE)
		cursor_overtaken(s, lane, c, head);
	c->read_from_ns = now;
	c->read_from_head = head;
	return false;
}

/* Give back the cache lines of a record a follower has copied: every line
 * of [@from, @to) but the one @to is in, which the record after it shares
 * (the writer may be writing it now). A line the follower keeps is one
 * the writer must take back from the follower's core when it writes there
 * again, a lap of the lane later: one such miss for every line written,
 * which costs a writer at full speed most of its rate. CLFLUSHOPT evicts
 * the line from every cache, writing it back: the writer's next write
 * there then misses to memory, a miss its prefetcher sees coming. Only
 * x86 with CLFLUSHOPT; elsewhere nothing. */
#define LINE 64

static bool lines_can_drop(void)
{
#if defined(__x86_64__) || defined(__i386__)
	/* 0: not known yet, 1: no, 2: yes (the same answer in any thread) */
	static _Atomic int known;
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (!k) {
		unsigned a, b, c, d;
		k = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & 1u << 23)
			    ? 2
			    : 1;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 2;
#else
	return false;
#endif
}

static void lines_drop(const unsigned char *from, const unsigned char *to)
{
#if defined(__x86_64__) || defined(__i386__)
	uintptr_t a = (uintptr_t)from & ~(uintptr_t)(LINE - 1);
	uintptr_t e = (uintptr_t)to & ~(uintptr_t)(LINE - 1);
	for (; a < e; a += LINE)
		__asm__ __volatile__("clflushopt %0" ::"m"(*(const char *)a));
#else
	(void)from;
	(void)to;
#endif
}

/* Progress: every step of the loop below moves the cursor strictly forward
 * or ends the call; a record is returned only if its sequence number is
 * above every one returned from the lane before. So a lane yields at most
 * capacity/8 records per turnover of the buffer, whatever the file says,
 * and a lane found damaged in a way the cursor cannot get past is left
 * alone until it changes. */
bool shmlog__cursor_fetch(const struct shmlog__seg *s, unsigned lane,
			  struct shmlog__rlane *c, uint64_t clear_raw)
{
	const struct shmlog__fixed *f = &s->fixed;
	const struct shmlog__lane *ctl = seg_lane(s, lane);

	if (c->have)
		return true;
	if (c->ended)
		return false;
	if (c->damaged) {
		if (!shmlog__cursor_lane_changed(s, lane, c))
			return false;
		c->damaged = false;
	}
	if (!c->begun)
		cursor_begin(s, lane, c); /* first look: its oldest record */
	if (c->rest_until_ns &&
	    cursor_resting(s, lane, c, shmlog__clock_ns(CLOCK_MONOTONIC)))
		return false;
	uint64_t guard = (uint64_t)f->chunk_count *
				 (f->chunk_size / REC_ALIGN + 2) + 4;
	/* steps that did not move the cursor: something changed under us;
	 * a few are normal, many are a file being scribbled on */
	unsigned again = 0;
	for (; guard && again < 64; guard--) {
		/* head is loaded again only when the cursor reaches the head
		 * last seen: the line it lives on is the writer's, written on
		 * every record, and each load of it costs the writer a miss */
		/* (a head behind the cursor: the chunk it was in was taken
		 * from a lane whose writer is gone; nothing new) */
		uint64_t head = c->head_seen;
		if (!pos_before(c->pos, head)) {
			if (!shmlog__cursor_may_look(c))
				return false;
			head = c->head_seen = atomic_load_explicit(
				&ctl->head, memory_order_acquire); /* LMM(ring:F) */
			if (!pos_before(c->pos, head)) {
				if (cursor_settle(s, lane, c, head))
					return false;
				again++;
				continue;
			}
		}
		if (c->chunk == CHUNK_NONE && !cursor_enter(s, lane, c)) {
			/* nothing up to the head we have: a newer one? */
			uint64_t seen = head;
			/* LMM(ring:F) */
			head = c->head_seen = atomic_load_explicit(
				&ctl->head, memory_order_acquire);
			if ((head == seen || c->pos == head) &&
			    (pos_before(c->pos, head) ||
			     cursor_settle(s, lane, c, head)))
				return false;
			again++;
			continue;
		}
		uint64_t limit;
		if (!cursor_limit(f, c, head, &limit)) {
			/* LMM(ring:F) */
			head = c->head_seen = atomic_load_explicit(
				&ctl->head, memory_order_acquire);
			if (cursor_limit(f, c, head, &limit)) {
				again++;
				continue;
			}
			cursor_stop(s, lane, c); /* head before its chunk */
			return false;
		}
		if (c->pos == limit) {
			if (limit == c->cend) { /* on to the next chunk */
				c->chunk = CHUNK_NONE;
				continue;
			}
			/* at head: look again */
			/* LMM(ring:F) */
			head = c->head_seen = atomic_load_explicit(
				&ctl->head, memory_order_acquire);
			if (c->pos == head && cursor_settle(s, lane, c, head))
				return false;
			again++;
			continue;
		}
		if ((c->pos & (REC_ALIGN - 1)) || pos_before(limit, c->pos)) {
			cursor_stop(s, lane, c); /* off a record boundary */
			return false;
		}
		const unsigned char *data = seg_chunk_data(s, c->chunk);
		uint64_t room = c->cend - c->pos;
		uint64_t off = c->pos - c->cbase;
		struct shmlog__rec r;
		copy_header(&r, data + off, room);
		uint32_t len = 0;
		unsigned state = shmlog__rec_check(f, &r, c->pos, room, &len);
		if (state == REC_COMMITTED && rec_plausible(&r)) {
			/* tag and message, each NUL-terminated, ready to hand
			 * out: the reader's only copy */
			const unsigned char *src = data + off + REC_HDR;
			copy_bytes(c->body, src, r.tag_len);
			c->body[r.tag_len] = '\0';
			copy_bytes(c->body + r.tag_len + 1, src + r.tag_len,
				   r.msg_len);
			c->body[r.tag_len + 1 + r.msg_len] = '\0';
		}
		int whole = shmlog__rec_recheck(s, c->chunk, off,
						atomic_load_explicit(
							&r.word,
							memory_order_relaxed),
						c->cid);
		if (whole == REC_CHUNK_GONE) {
			/* the chunk changed hands while we copied (or
			 * before): its records are gone, the gap in sequence
			 * numbers counts them; on to the lane's next chunk */
			c->chunk = CHUNK_NONE;
			c->pos = c->cend;
			/* if the lane's head was in it (or at its end), no
			 * later record will show the gap: count it now */
			/* LMM(ring:F) */
			head = c->head_seen = atomic_load_explicit(
				&ctl->head, memory_order_acquire);
			if (!pos_before(c->pos, head)) {
				cursor_gone(s, lane, c, head);
			} else if (c->looked_ns) { /* a follower */
				cursor_overtaken(s, lane, c, head);
				uint64_t now =
					shmlog__clock_ns(CLOCK_MONOTONIC);
				cursor_rest(c, head, now);
				if (c->rest_until_ns > now)
					return false;
			}
			continue;
		}
		if (whole == REC_REWRITTEN) {
			again++; /* rewritten under us: damage; look again */
			continue;
		}
		/* The copy is consistent: only now may it be judged. */
		if (!state || len > limit - c->pos ||
		    (state == REC_PAD && limit != c->cend)) {
			/* not a record, or one (or a PAD) running past what
			 * is published: inside the published chain, a
			 * damaged lane: go on at the next record that proves
			 * itself */
			cursor_skip_damage(f, data, c, limit);
			continue;
		}
		if (state == REC_PAD) {
			c->pos = c->cend;
			continue;
		}
		if ((state == REC_COMMITTED && !rec_plausible(&r)) ||
		    !cursor_seq_fits(c, r.seq)) {
			/* no writer of ours made it, or it is out of place in
			 * the chain (a stale header brought back to life, a
			 * damaged one): its length is not to be trusted */
			cursor_skip_damage(f, data, c, limit);
			continue;
		}
		if (c->looked_ns && lines_can_drop()) /* a follower */
			lines_drop(data + off, data + off + len);
		c->pos += len;
		c->chained = c->pos;
		cursor_seq(c, r.seq);
		if (state == REC_TORN) {
			lost_from(c, r.seq);
			c->torn++;
			c->lost_torn++;
			continue;
		}
		if (!c->started) {
			c->started = true;
			c->lost_overwritten = 0; /* losses before we came */
		}
		if ((int64_t)(r.time - clear_raw) < 0 && clear_raw) {
			c->skipped++;
			continue;
		}
		c->rec = r;
		c->have = true;
		return true;
	}
	return false;
}
