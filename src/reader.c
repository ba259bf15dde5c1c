/* SPDX-License-Identifier: MIT */
/*
 * Readers: a cursor per lane, which walks the lane's chunks with the record
 * protocol of ring.c (copy, check, re-check) and keeps the reader's books
 * (records read, overwritten, torn, damaged places); the lanes merged into
 * one stream in time order; and the wait for new records.
 *
 * A reader trusts nothing it maps (docs/SECURITY.md). Besides the checks of
 * every offset and length (ring.c), two things protect it from the file
 * itself:
 *  - guard pages around the mapping (segment.c), so that a bug that reads
 *    past either end faults at once instead of reading other memory;
 *  - a SIGBUS handler: whoever may write the file may also ftruncate(2) it,
 *    and touching a page past the new end of a shared mapping raises
 *    SIGBUS. Every access a reader makes to the mapping runs with a
 *    thread-local jump buffer armed (bus_arm() .. bus_disarm()); the
 *    handler jumps back only for a fault inside the armed reader's
 *    mapping, and gives every other SIGBUS to the disposition it
 *    replaced. The reader then reports -EIO once and nothing more (see
 *    shmlog_reader_next()). An fstat(2) per batch of records catches a
 *    truncation the reader has not touched yet.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "archive_read.h"
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
		atomic_load_explicit(&ctl->head, memory_order_acquire); /* LMM(F) */
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

static bool lane_changed(const struct shmlog__seg *s, unsigned lane,
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

static void cursor_skip_to_head(const struct shmlog__seg *s, unsigned lane,
			       struct shmlog__rlane *c)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	c->pos = c->head_seen =
		atomic_load_explicit(&ctl->head, memory_order_acquire);
	c->chunk = CHUNK_NONE;
	c->next_seq = atomic_load_explicit(&ctl->next_seq, memory_order_relaxed);
	c->seq_known = true;
	c->started = true;
	c->begun = true;
}

/* Is there anything for cursor_fetch() to read, or a head to look at? One
 * load of head for a lane nobody writes; a follower's lane being written
 * is left to cursor_fetch(), which looks at it as cursor_may_look() says.
 * (A check before cursor_fetch() for the record path, unused here.) */
__attribute__((unused)) static bool
cursor_has_new(const struct shmlog__seg *s, unsigned lane,
	       const struct shmlog__rlane *c)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	if (c->have)
		return true;
	if (c->damaged)
		return lane_changed(s, lane, c);
	if (!c->begun || pos_before(c->pos, c->head_seen) ||
	    (c->looked_ns && c->head_seen != c->head_prev))
		return true;
	return pos_before(c->pos, atomic_load_explicit(&ctl->head,
						       memory_order_acquire));
}

/* How often a follower (a reader that calls shmlog_reader_wait()) loads
 * the head of a lane being written: at most once every FOLLOW_LOOK_NS.
 * Each load takes the line head is in from the writer's core, and reading
 * up to that head takes the line the writer's next record starts in:
 * chasing the writer record by record would cost it two misses a record
 * (ring.c, "Following writers"); one look every FOLLOW_LOOK_NS costs it
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
static uint64_t cursor_look(const struct shmlog__seg *s, unsigned lane,
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
		return lane_changed(s, lane, c) ? UINT64_MAX : 0;
	}
	if (!gated || !cursor_look_fresh(c, now)) {
		uint64_t head = atomic_load_explicit(
			&ctl->head, memory_order_acquire); /* LMM(F) */
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
 * and a follower that cannot keep up reads lines as fast as it can: one
 * reading the lane's newest half after each overtaking read about 4 M
 * records a second behind a writer of 66 M, and made 2 % of the writer's
 * 16-call batches 10 times slower, each a run of misses to memory. It
 * loses most records either way; resting, it loses some more (counted as
 * overwritten, as the others) and costs the writer a quarter as much. A
 * rest lasts FOLLOW_REST_SHARE - 1 times the reading before it, at most
 * FOLLOW_REST_MAX_NS; afterwards the follower goes on at the lane's
 * newest half. A writer slower than FOLLOW_FAST_BYTES_US between two
 * overtakings (a follower that just falls behind a busy writer now and
 * then) is not rested from. */
#define FOLLOW_REST_SHARE 4
#define FOLLOW_REST_MAX_NS 10000000

static void cursor_rest(struct shmlog__rlane *c, uint64_t head, uint64_t now)
{
	if (lane_ran_fast(head - c->read_from_head, c->read_from_ns, now)) {
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
					     memory_order_acquire); /* LMM(F) */
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
static bool cursor_fetch(const struct shmlog__seg *s, unsigned lane,
			struct shmlog__rlane *c, uint64_t clear_raw)
{
	const struct shmlog__fixed *f = &s->fixed;
	const struct shmlog__lane *ctl = seg_lane(s, lane);

	if (c->have)
		return true;
	if (c->damaged) {
		if (!lane_changed(s, lane, c))
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
				&ctl->head, memory_order_acquire); /* LMM(F) */
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


static void reader_start(struct shmlog_reader *r, bool at_tail);

int shmlog_reader_open(const char *name, int flags, shmlog_reader_t **out)
{
	if (flags & ~SHMLOG_READ_TAIL)
		return -EINVAL;
	struct shmlog_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	int err = shmlog__seg_attach(name, 0, &r->seg);
	if (err) {
		free(r);
		return err;
	}
	const struct shmlog__fixed *f = &r->seg.fixed;
	r->lanes = calloc(f->lane_count, sizeof(*r->lanes));
	r->heap = calloc(f->lane_count, sizeof(*r->heap));
	size_t body = f->max_record + 2;
	r->bodies = malloc((size_t)f->lane_count * body);
	if (!r->lanes || !r->bodies || !r->heap) {
		shmlog_reader_close(r);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->lane_count; i++)
		r->lanes[i].body = r->bodies + (size_t)i * body;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		reader_start(r, flags & SHMLOG_READ_TAIL);
		reader_anchor(r);
		bus_disarm();
	} else {
		bus_recovered();
		shmlog_reader_close(r);
		return -EIO;
	}
	/* the reader's side of Dekker's pattern needs a real barrier; a
	 * registration makes GLOBAL_EXPEDITED usable for this process too */
	shmlog__membarrier_register();
	r->membarrier_ok = shmlog__membarrier() == 0;
	*out = r;
	return 0;
}

int shmlog__reader_wrap_archive(struct shmlog__arc *a, shmlog_reader_t **out)
{
	struct shmlog_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->arc = a;
	*out = r;
	return 0;
}

void shmlog_reader_close(shmlog_reader_t *r)
{
	if (!r)
		return;
	if (r->arc) {
		shmlog__arc_close(r->arc);
		free(r);
		return;
	}
	shmlog__seg_detach(&r->seg);
	free(r->lanes);
	free(r->heap);
	free(r->bodies);
	free(r->span);
	free(r);
}

unsigned shmlog_reader_lanes(const shmlog_reader_t *r)
{
	if (r->arc)
		return shmlog__arc_lanes(r->arc);
	return r->seg.fixed.lane_count;
}

static void fill_record(struct shmlog_reader *r, unsigned lane,
			struct shmlog_record *out)
{
	struct shmlog__rlane *c = &r->lanes[lane];
	const struct shmlog__rec *h = &c->rec;
	out->seq = h->seq;
	out->raw_time = h->time;
	/* the same record, the same time, in every reader (clock.c) */
	if (shmlog__clockmap_stale(&r->clock, r->seg.hdr, h->time))
		reader_anchor(r);
	out->time_ns = shmlog__clock_convert(&r->seg.fixed, &r->clock, h->time);
	out->pid = h->pid;
	out->tid = h->tid;
	out->prio = h->prio >= SHMLOG_VERBOSE && h->prio <= SHMLOG_FATAL
			    ? h->prio
			    : SHMLOG_INFO;
	out->flags = h->flags & SHMLOG_REC_TRUNCATED;
	out->lane = lane;
	out->tag = (const char *)c->body;
	out->tag_len = h->tag_len;
	out->msg = (const char *)c->body + h->tag_len + 1;
	out->msg_len = h->msg_len;
	r->deferred = h->flags & REC_FLAG_DEFERRED;
	if (r->deferred && r->raw) {
		/* as stored: the archiver keeps the values, readers of the
		 * archive format them (reader_raw.h) */
		out->flags |= SHMLOG_REC_DEFERRED;
	} else if (r->deferred) {
		/* a format in the table and the values: the text is made
		 * here (deferred.c), never trusting either */
		const unsigned char *m = (const unsigned char *)out->msg;
		size_t n = shmlog__defer_format(&r->seg, m, h->msg_len, r->text,
						sizeof(r->text), r->fmt,
						sizeof(r->fmt), &r->fmt_len);
		r->args = m + 4;
		r->args_len = h->msg_len >= 4 ? h->msg_len - 4u : 0;
		out->msg = r->text;
		out->msg_len = n;
		out->flags |= SHMLOG_REC_DEFERRED;
		if (n == sizeof(r->text) - 1)
			out->flags |= SHMLOG_REC_TRUNCATED;
	}
}

/* ---- merging lanes: a binary heap of the lanes holding a record ---- */

/* Earlier in time; ties go to the lower lane. */
static inline bool before(const struct heap_slot *a, const struct heap_slot *b)
{
	return a->time != b->time ? a->time < b->time : a->lane < b->lane;
}

static void heap_push(struct shmlog_reader *r, unsigned lane)
{
	struct heap_slot x = {r->lanes[lane].rec.time, lane};
	unsigned i = r->heap_len++;
	while (i && before(&x, &r->heap[(i - 1) / 2])) {
		r->heap[i] = r->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	r->heap[i] = x;
}

/* Put @x at the top and sift it down to its place: the hole moves down,
 * the slot is written once. */
static void heap_sift_down(struct shmlog_reader *r, struct heap_slot x)
{
	unsigned n = r->heap_len, i = 0;
	for (;;) {
		unsigned l = 2 * i + 1;
		if (l >= n)
			break;
		if (l + 1 < n && before(&r->heap[l + 1], &r->heap[l]))
			l++;
		if (!before(&r->heap[l], &x))
			break;
		r->heap[i] = r->heap[l];
		i = l;
	}
	r->heap[i] = x;
}

/* The top's lane holds a later record now: sift it down. */
static void heap_sift_top(struct shmlog_reader *r)
{
	struct heap_slot x = r->heap[0];
	x.time = r->lanes[x.lane].rec.time;
	heap_sift_down(r, x);
}

static void heap_pop(struct shmlog_reader *r)
{
	struct heap_slot x = r->heap[--r->heap_len];
	if (r->heap_len)
		heap_sift_down(r, x);
}

/* Look for records in the lanes that had none. Done when the heap runs dry
 * and every REFRESH records (reader.h). */
static void refresh(struct shmlog_reader *r, uint64_t clear)
{
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		/* cursor_has_new() first: a lane with nothing new (most, in
		 * a buffer with more lanes than writers) costs a load */
		if (!c->have && cursor_has_new(&r->seg, i, c) &&
		    cursor_fetch(&r->seg, i, c, clear))
			heap_push(r, i);
	}
	r->since_refresh = 0;
}

/* The body of shmlog_reader_next(), run with the mapping guarded. */
int shmlog__reader_next_guarded(struct shmlog_reader *r,
				struct shmlog_record *rec,
				struct shmlog_lost *lost)
{
	uint64_t clear = atomic_load_explicit(&r->seg.hdr->config.clear_raw,
					      memory_order_acquire);
	/* The lane at the top gave its record last time, and its buffer is
	 * free again: refill it in place, or drop it from the heap. */
	if (r->top_used) {
		unsigned top = r->heap[0].lane;
		if (cursor_fetch(&r->seg, top, &r->lanes[top], clear))
			heap_sift_top(r);
		else
			heap_pop(r);
		r->top_used = false;
	}
	if (!r->heap_len || r->since_refresh >= REFRESH)
		refresh(r, clear);
	if (!r->heap_len)
		return SHMLOG_EV_NONE;
	unsigned lane = r->heap[0].lane;
	struct shmlog__rlane *c = &r->lanes[lane];
	if ((c->lost_overwritten || c->lost_torn) && lost) {
		lost->lane = lane;
		lost->overwritten = c->lost_overwritten;
		lost->torn = c->lost_torn;
		/* they end before the record that follows them */
		r->lost_known = true;
		r->lost_first = c->lost_first;
		r->lost_last = c->rec.seq - 1;
		c->lost_overwritten = c->lost_torn = 0;
		return SHMLOG_EV_LOST;
	}
	c->lost_overwritten = c->lost_torn = 0;
	fill_record(r, lane, rec);
	c->have = false;
	c->read++;
	r->top_used = true;
	r->since_refresh++;
	return SHMLOG_EV_RECORD;
}

/* Where a new reader starts, fixed now, at open: after the newest record
 * of every lane (at_tail), or at the oldest one. Either way, what is lost
 * from now on is reported (SHMLOG_EV_LOST); what was gone before the
 * reader came is only counted. An empty lane starts at its head; a lane
 * with records has its oldest one fetched now. */
static void reader_start(struct shmlog_reader *r, bool at_tail)
{
	uint64_t clear = atomic_load_explicit(&r->seg.hdr->config.clear_raw,
					      memory_order_acquire);
	const struct shmlog__fixed *f = &r->seg.fixed;
	for (unsigned i = 0; i < f->lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		if (at_tail) {
			cursor_skip_to_head(&r->seg, i, c);
		} else if (shmlog__lane_empty(&r->seg, i)) {
			/* whatever the lane wrote is gone (its chunks went to
			 * other writers): counted, not reported */
			cursor_skip_to_head(&r->seg, i, c);
			if (c->next_seq - f->initial_seq < (UINT64_C(1) << 62))
				c->overwritten += c->next_seq - f->initial_seq;
		}
	}
	if (!at_tail)
		refresh(r, clear);
}

int shmlog_reader_next(shmlog_reader_t *r, struct shmlog_record *rec,
		       struct shmlog_lost *lost)
{
	if (r->arc)
		return shmlog__arc_next(r->arc, rec, lost);
	if (r->failed)
		return reader_report(r);
	struct shmlog_record out;
	struct shmlog_lost l;
	int ev;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		ev = shmlog__reader_next_guarded(r, &out, lost ? &l : NULL);
		bus_disarm();
	} else {
		reader_fail(r, true);
		return reader_report(r);
	}
	if (ev == SHMLOG_EV_NONE && reader_truncated(r)) {
		reader_fail(r, false);
		return reader_report(r);
	}
	if (ev == SHMLOG_EV_RECORD)
		*rec = out;
	else if (ev == SHMLOG_EV_LOST && lost)
		*lost = l;
	return ev;
}

static int futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms)
{
	struct timespec ts, *tp = NULL;
	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
		tp = &ts;
	}
	if (syscall(SYS_futex, word, FUTEX_WAIT, val, tp, NULL, 0) == 0)
		return 0;
	if (errno == EAGAIN)
		return 0;
	return errno == ETIMEDOUT ? -ETIMEDOUT : errno == EINTR ? -EINTR : 0;
}

/* Readers that may not write page 0, or have no membarrier, poll. */
#define POLL_MS 10

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ---- following: a look every few microseconds, never sooner ---- */

/* A follower that has read everything (ring.c, "Following writers")
 * looks at the lanes every LOOK_STEP_NS, and goes back to read as soon as
 * a look finds a record: the head of a lane being written is loaded at
 * most every FOLLOW_LOOK_NS (cursor_look()), a lane nobody writes at every
 * step, for free. If nothing comes for SPIN_NS, it sleeps: no membarrier
 * and no FUTEX_WAKE for a follower that keeps up with a steady writer. */
#define LOOK_STEP_NS 1000
#define SPIN_NS 20000
/* ... unless a lane was written at full speed in the last FOLLOW_NAP_NS:
 * then it naps (nanosleep) from NAP_MIN_NS, twice as long each time up to
 * NAP_MAX_NS, looking after each nap, before it sleeps (follow_nap()). */
#define FOLLOW_NAP_NS 10000000
#define NAP_MIN_NS 20000
#define NAP_MAX_NS 1000000

/* Look at every lane once (@gated: a lane being written only if its last
 * look is FOLLOW_LOOK_NS old): is anything published past a cursor, or a
 * lane to be read now? */
static bool reader_look(struct shmlog_reader *r, uint64_t now, bool gated)
{
	bool any = false;
	/* every lane, each head loaded: what the reads that follow go to */
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++)
		any |= cursor_look(&r->seg, i, &r->lanes[i], now, gated) != 0;
	return any;
}

/* Pause until @until (CLOCK_MONOTONIC) without touching shared memory. */
static void spin_ns(uint64_t until)
{
	do {
		for (int i = 0; i < 16; i++)
			cpu_relax();
	} while (shmlog__clock_ns(CLOCK_MONOTONIC) < until);
}

/* Wait, spinning, until a look finds something to read (true), or until
 * nothing came for SPIN_NS (false: go to sleep). Bounded: a look that
 * finds nothing moves nothing, and SPIN_NS ends the loop; a lane that
 * moved is looked at again within FOLLOW_LOOK_NS, and then either has
 * more (true) or stopped (its next looks are free). */
static bool follow_spin(struct shmlog_reader *r)
{
	uint64_t t0 = shmlog__clock_ns(CLOCK_MONOTONIC), now = t0;
	for (;;) {
		if (reader_look(r, now, true))
			return true;
		if (now - t0 >= SPIN_NS)
			return false;
		spin_ns(now + LOOK_STEP_NS);
		now = shmlog__clock_ns(CLOCK_MONOTONIC);
	}
}

/* Was a lane written at full speed (cursor_look_pace()) less than
 * FOLLOW_NAP_NS before @now, or is the follower resting on one
 * (cursor_rest())? */
static bool reader_was_fast(const struct shmlog_reader *r, uint64_t now)
{
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++) {
		uint64_t t = r->lanes[i].fast_ns;
		if ((t && now - t < FOLLOW_NAP_NS) || r->lanes[i].rest_until_ns)
			return true;
	}
	return false;
}

/* Every rest (cursor_rest()) over now: the caller of a wait that only
 * looks asks for what there is, and a follower's one way to know that it
 * has read everything published (shmlog.h) is such a wait that finds
 * nothing. The cursor goes on where cursor_resting() puts it. */
static void reader_rest_end(struct shmlog_reader *r)
{
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++)
		if (r->lanes[i].rest_until_ns)
			r->lanes[i].rest_until_ns = 1; /* long past */
}

/* After follow_spin() found nothing: nap, looking after each nap, while
 * reader_was_fast(). The writer is between two bursts, or off its CPU for
 * a moment, or the follower rests from it: a follower that went to sleep
 * each time would cost that writer a FUTEX_WAKE, a system call in its
 * write, and an interrupt (the membarrier) each time (a resting one about
 * 2000 times a second); a nap costs it nothing, and a look after it at
 * most the one miss of any look. 1: a look found something (or a rest is
 * over); 0: the lanes are quiet, go to sleep; -ETIMEDOUT: @timeout_ms
 * (counted from @t0) ran out; -EINTR: a signal. Bounded: a look that
 * finds a lane fast returns 1, and a rest lasts at most
 * FOLLOW_REST_MAX_NS, so the loop ends FOLLOW_NAP_NS after the last look
 * that found one, or when the rest is over. */
static int follow_nap(struct shmlog_reader *r, uint64_t t0, int timeout_ms)
{
	uint64_t nap = NAP_MIN_NS;
	for (;;) {
		uint64_t now = shmlog__clock_ns(CLOCK_MONOTONIC);
		if (!reader_was_fast(r, now))
			return 0;
		uint64_t d = nap;
		if (timeout_ms >= 0) {
			uint64_t left = (uint64_t)timeout_ms * 1000000;
			if (now - t0 >= left)
				return -ETIMEDOUT;
			if (d > left - (now - t0))
				d = left - (now - t0);
		}
		struct timespec ts = {0, (long)d};
		if (nanosleep(&ts, NULL) < 0)
			return -EINTR;
		if (reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), true))
			return 1;
		nap = nap * 2 > NAP_MAX_NS ? NAP_MAX_NS : nap * 2;
	}
}

/* shmlog_reader_wait() with the mapping guarded. */
static int reader_wait_guarded(struct shmlog_reader *r, int timeout_ms)
{
	struct shmlog__hdr *hdr = r->seg.hdr;
	if (timeout_ms == 0) { /* no waiting: what is there now */
		reader_rest_end(r);
		return reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), false)
			       ? 0
			       : -ETIMEDOUT;
	}
	uint64_t t0 = shmlog__clock_ns(CLOCK_MONOTONIC);
	if (follow_spin(r))
		return 0;
	int napped = follow_nap(r, t0, timeout_ms);
	if (napped)
		return napped > 0 ? 0 : napped;
	if (!r->seg.hdr_writable || !r->membarrier_ok) {
		int step = timeout_ms < 0 || timeout_ms > POLL_MS ? POLL_MS
								  : timeout_ms;
		struct timespec d = {0, (long)step * 1000000};
		int err = nanosleep(&d, NULL) < 0 ? -EINTR : 0;
		if (reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), false))
			return 0;
		if (!err && timeout_ms >= 0 && timeout_ms <= POLL_MS)
			return -ETIMEDOUT;
		return err;
	}
	uint32_t seen = atomic_load_explicit(&hdr->notify.futex,
					     memory_order_acquire);
	atomic_store_explicit(&hdr->notify.sleepers, 1, memory_order_relaxed);
	/* pairs with LMM(W) in every writer: see ring.c, "Waking readers" */
	shmlog__membarrier();
	if (reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), false))
		return 0;
	/* futex(2) reports a truncated page as EFAULT, not SIGBUS */
	int err = futex_wait(&hdr->notify.futex, seen, timeout_ms);
	/* woken: the heads the next shmlog_reader_next() reads up to */
	reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), false);
	return err;
}

int shmlog_reader_wait(shmlog_reader_t *r, int timeout_ms)
{
	if (r->arc)
		return shmlog__arc_wait(r->arc, timeout_ms);
	if (r->failed || reader_truncated(r)) {
		reader_fail(r, false);
		return r->failed;
	}
	int err;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		err = reader_wait_guarded(r, timeout_ms);
		bus_disarm();
	} else {
		reader_fail(r, true);
		return r->failed;
	}
	return err;
}

int shmlog_reader_lane_stats(const shmlog_reader_t *r, unsigned lane,
			     struct shmlog_lane_stats *st)
{
	if (r->arc)
		return shmlog__arc_lane_stats(r->arc, lane, st);
	const struct shmlog__fixed *f = &r->seg.fixed;
	if (lane >= f->lane_count)
		return -EINVAL;
	const struct shmlog__lane *l = seg_lane(&r->seg, lane);
	const struct shmlog__rlane *c = &r->lanes[lane];
	struct shmlog_lane_stats s;
	memset(&s, 0, sizeof(s));
	uint64_t owner, head, reserve, next;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		owner = atomic_load(&l->owner);
		head = atomic_load(&l->head);
		reserve = atomic_load(&l->reserve);
		next = atomic_load(&l->next_seq);
		bus_disarm();
	} else {
		bus_recovered();
		/* the counters are the reader's; the writers' are gone */
		owner = head = reserve = 0;
		next = c->seq_known ? c->next_seq : f->initial_seq;
	}
	/* alive by a lock (owner.c), not by the pid in the word */
	int alive = owner ? shmlog__owner_alive(&r->seg, lane, owner) : 0;
	/* next_seq lags by one if its writer died right after publishing */
	if (c->seq_known && (int64_t)(c->next_seq - next) > 0)
		next = c->next_seq;
	s.written = next - f->initial_seq;
	s.read = c->read;
	s.overwritten = c->overwritten;
	s.torn = c->torn;
	s.skipped = c->skipped;
	s.corrupt = c->corrupt;
	/* a writer that died inside a write: its record is torn, though no
	 * claimer has marked it yet */
	if (reserve != head && alive == 0) {
		s.written++;
		s.torn++;
	}
	if (shmlog__is_borrow_word(owner)) { /* a borrower: tid only */
		s.owner_pid = 0;
		s.owner_tid = (uint32_t)owner & ((1u << 22) - 1);
	} else {
		s.owner_pid = (uint32_t)(owner >> 32);
		s.owner_tid = (uint32_t)owner;
	}
	s.owner_alive = alive > 0 || (alive < 0 && owner);
	*st = s;
	return 0;
}

/* The writer an ident names, and whether it still holds lane @lane
 * (UINT32_MAX: the ident says no lane). */
static int ident_writer(const shmlog_reader_t *r, const struct shmlog__ident *id,
			unsigned lane_arg, struct shmlog_lane_writer *w)
{
	struct shmlog_lane_writer out;
	memset(&out, 0, sizeof(out));
	/* volatile: set between sigsetjmp() and a possible siglongjmp() */
	volatile uint64_t owner = 0;
	volatile unsigned lane = lane_arg;
	uint32_t id_lane = 0;
	int err;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		err = shmlog__ident_load(id, &out.pid, &out.tid, &id_lane,
					 out.name);
		if (lane == UINT32_MAX && (id_lane & ~IDENT_DIED) - 1 <
						  r->seg.fixed.lane_count)
			lane = (id_lane & ~IDENT_DIED) - 1;
		if (!err && lane != UINT32_MAX)
			owner = atomic_load(&seg_lane(&r->seg, lane)->owner);
		bus_disarm();
	} else {
		bus_recovered();
		return -EIO;
	}
	if (err)
		return err;
	out.died = (id_lane & IDENT_DIED) != 0;
	/* alive: the lane is still the one it claimed (its owner word) and
	 * a live process holds the lane's lock (owner.c) */
	if (owner && owner == shmlog__owner_word(out.pid, out.tid) &&
	    !shmlog__is_borrow_word(owner)) {
		int alive = shmlog__owner_alive(&r->seg, lane, owner);
		out.alive = alive > 0 || alive < 0;
	}
	*w = out;
	return 0;
}

int shmlog_reader_lane_writer(const shmlog_reader_t *r, unsigned lane,
			      struct shmlog_lane_writer *w)
{
	if (r->arc)
		return -ENOENT; /* archives keep no lanes' writers */
	if (lane >= r->seg.fixed.lane_count)
		return -EINVAL;
	return ident_writer(r, &seg_lane(&r->seg, lane)->ident, lane, w);
}

int shmlog_reader_recent_writer(const shmlog_reader_t *r, unsigned i,
				struct shmlog_lane_writer *w)
{
	if (r->arc)
		return -ENOENT;
	if (i >= SHMLOG_RECENT_WRITERS)
		return -EINVAL;
	_Static_assert(SHMLOG_RECENT_WRITERS == SHMLOG__RECENT,
		       "the API's count is the segment's");
	return ident_writer(r, &hdr_recent(r->seg.hdr)->slot[i], UINT32_MAX,
			    w);
}

int shmlog_reader_deferred(const shmlog_reader_t *r, const char **fmt,
			   char *args, size_t cap)
{
	if (r->arc)
		return shmlog__arc_deferred(r->arc, fmt, args, cap);
	if (!r->deferred || r->raw)
		return -ENOENT;
	if (fmt)
		*fmt = r->fmt[0] ? r->fmt : NULL;
	/* the block is in the lane's body, copied out already: no mapping
	 * is read here */
	if (args && cap)
		return shmlog__defer_args_json(r->args, r->args_len, args, cap);
	return 0;
}

int shmlog__reader_args(const struct shmlog_reader *r,
			const unsigned char **args, size_t *len)
{
	if (r->arc || !r->deferred)
		return -ENOENT;
	*args = r->args;
	*len = r->args_len;
	return 0;
}

int shmlog_reader_lost_seq(const shmlog_reader_t *r, uint64_t *first,
			   uint64_t *last)
{
	if (r->arc)
		return shmlog__arc_lost_seq(r->arc, first, last);
	if (!r->lost_known)
		return -ENOENT;
	*first = r->lost_first;
	*last = r->lost_last;
	return 0;
}

int shmlog_reader_lane_next_seq(const shmlog_reader_t *r, unsigned lane,
				uint64_t *next)
{
	if (r->arc)
		return shmlog__arc_lane_next_seq(r->arc, lane, next);
	struct shmlog_lane_stats st;
	int err = shmlog_reader_lane_stats(r, lane, &st);
	if (err)
		return err;
	*next = r->seg.fixed.initial_seq + st.written;
	return 0;
}

int shmlog_reader_archive_source(const shmlog_reader_t *r, const char *buffer,
				 struct shmlog_archive_source *src)
{
	if (!r->arc)
		return -EINVAL;
	return shmlog__arc_source(r->arc, buffer, src);
}

int shmlog_reader_archive_next_seq(const shmlog_reader_t *r,
				   const char *buffer, unsigned lane,
				   uint64_t *next)
{
	if (!r->arc)
		return -EINVAL;
	return shmlog__arc_next_seq(r->arc, buffer, lane, next);
}
