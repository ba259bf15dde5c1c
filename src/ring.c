/* SPDX-License-Identifier: MIT */
/*
 * The shmlog ring protocol: how records are written into a lane's chunks,
 * how space moves between lanes, how a lane left by a dead writer is
 * repaired, and the record protocol readers follow to copy records out
 * (copy, check, re-check: shmlog__rec_check, shmlog__copy_out,
 * shmlog__rec_recheck). A reader's cursors and books (where it is in each
 * lane, what it counted lost) are reader.c's.
 *
 * ===================================================================
 * Segment layout (all offsets from the start of the file; format 2)
 * ===================================================================
 *
 *   0      page 0: struct shmlog__hdr
 *            lines 0-2  fixed header: magic, version, sizes, clock
 *                       calibration, FNV-1a checksum (immutable)
 *            line 3     notify: futex word, sleepers flag (readers write)
 *            line 4     stats: dropped writes, releases (rare)
 *            line 5     config: filter generation, clear mark (read-mostly)
 *            384..      filter spec text
 *            2560..     clock anchors (clock.c: stable wall-clock times)
 *   4096   lane table: lane_count x struct shmlog__lane (128 bytes each)
 *            line 0    owner (pid<<32|tid: who, not whether alive),
 *                      claims, torn                        (claim/release)
 *            line 1    reserve, head, next_seq             (owner, per record)
 *   chunks_off  the space line: epoch (once per 16 chunks a writer takes)
 *          + 64: chunk_count descriptor words, 8 bytes each
 *   data_off    chunk_count chunks of chunk_size bytes, page aligned
 *
 * The byte-exact tables are in docs/DESIGN.md ("Segment format") and are
 * asserted at compile time in seg_format.h. The file is built under a
 * temporary name and link(2)ed into place, so a segment with a name is
 * always completely initialised.
 *
 * ===================================================================
 * Lanes, chunks and the space policy
 * ===================================================================
 *
 * Each writing thread owns one lane while it logs (it claims a free lane on
 * its first write and releases it when it exits or closes the handle). A
 * lane has exactly one writer at a time, so the per-record write path needs
 * no atomic read-modify-write: plain stores, ordered by release semantics.
 *
 * The lane's records live in chunks. The data area is cut into chunk_count
 * chunks of chunk_size bytes, each described by one 64-bit word,
 *
 *     inc << 20 | lane << 4 | state          (0: never used)
 *
 * where inc, the incarnation, is new each time a chunk changes hands: a
 * writer reserves INC_BLOCK of them from the global epoch counter with
 * one fetch_add after it claims its lane (so once per 16 chunks, never
 * per record) and takes them in turn. It names the chunk's positions:
 * its byte 0 is at initial_pos + inc * chunk_size. Every incarnation is
 * handed out once, and a lane's grow: its writer's block was reserved
 * after every incarnation its chunks hold. Positions ("lpos") are 64-bit
 * and globally unique: a word left by an earlier incarnation never names
 * a position of a later one, so nothing has to be voided when a chunk is
 * reused. A lane's
 * positions grow across its chunks (each chunk it takes has a larger inc),
 * with holes between them. initial_pos starts close to 2^64 so the wrap of
 * the position counter is exercised from the first chunks on. All
 * comparisons of positions are by unsigned or signed difference.
 *
 *   OPEN   the owner's current chunk: the owner appends into it. Nobody
 *          else ever takes an OPEN chunk, and nobody else writes it.
 *   LIVE   a chunk of the lane's history, complete: anyone may take it
 *          with a compare-and-swap of its word.
 *
 * A writer whose record does not fit the rest of its OPEN chunk ends the
 * chunk with a PAD, makes it LIVE, and takes a chunk (chunk_take), in this
 * order of preference:
 *   1. a chunk never used;
 *   2. while the departed hold more than their bound, their oldest LIVE
 *      chunk (departed_oldest()), whoever else is above a share. The
 *      departed: the chunks of lanes with no writer, and those older
 *      than their writer's claim in a lane that has one (the lane's
 *      claim_mark: a writer that claims a lane a departed writer gave
 *      back goes on in its chunk). Counted as one more writer, they
 *      keep D = min(what they hold, chunk_count / max(16, N + 1));
 *   3. a reserved chunk (RESV, resv_take()), else the oldest LIVE
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
 * Taking a chunk is a compare-and-swap of its word from what the taker saw
 * (LIVE, some lane, some inc, or 0) to OPEN(new inc, taker's lane). The
 * whole word is the generation: inc only grows, so the CAS cannot succeed
 * on a chunk that changed hands meanwhile (no ABA). The one word that
 * comes back is a reserved chunk's, given back untouched to the lane it
 * was reserved from (resv_take()): its bytes never changed, so a CAS or a
 * reader's check that succeeds on it finds what it saw. A failed CAS means
 * somebody else took it: look again, at most TAKE_TRIES times, then drop
 * the record (counted). Nobody waits for anybody.
 *
 * ===================================================================
 * Records
 * ===================================================================
 *
 * A record is a 40-byte struct shmlog__rec, the tag, the message, padded to
 * 8 bytes, wholly inside one chunk. Its first word is (lpos | state): a
 * record is only taken as what it says when its word names the very
 * position it was found at.
 *
 *   COMMITTED  complete; safe to copy (and re-check, below)
 *   PAD        filler to the end of the chunk when a record would not fit;
 *              the rest of the chunk behind its word is zeroed first (but
 *              the seq slot: the lane's last number), as a TORN record's
 *              body is: no word that names its own position has bytes of
 *              an earlier incarnation behind it, whatever state it is
 *              given (pad_write)
 *   TORN       left unfinished by a writer that died; written by the writer
 *              that claimed the lane afterwards, so readers can skip it
 *
 * Lane positions, advanced by the owner only:
 *
 *   reserve   end of the bytes being written now (a claimer repairs
 *             [head, reserve) if the writer died there).
 *   head      end of the newest committed record: everything from the
 *             OPEN chunk's base to head is a chain of COMMITTED/TORN
 *             records; the lane's LIVE chunks are whole chains, each
 *             ended by a PAD or by its last byte.
 *
 * Writer (owner of the lane), one record of len bytes at pos = head
 * (steps 1-5 are shmlog__append_fit() in append.h, inline on the write
 * path; step 0 is shmlog__ring_append() below):
 *   0. if pos + len runs past the OPEN chunk: chunk_switch (below)
 *   1. reserve = pos + len; release fence                        LMM(C)
 *   2. record header, tag, message
 *   3. word = pos | COMMITTED (release)                          LMM(D)
 *   4. head = pos + len (release)                                LMM(E)
 *   5. next_seq = seq + 1
 *   6. if a reader sleeps, wake it (see below)                   LMM(W)
 *
 * chunk_switch, once per chunk:
 *   a. PAD at head if head is not the chunk's end (zeros to the chunk's
 *      end, then its word); head = chunk end (release)           LMM(E)
 *   b. the chunk's word OPEN -> LIVE (release): from now on it may be
 *      taken                                                     LMM(K)
 *   c. inc = the next of the writer's block (a fetch_add(epoch, 16) when
 *      it has none left); choose a chunk (the policy above)
 *   d. CAS its word to OPEN(inc, lane) (acq_rel)                 LMM(Q)
 *   e. release fence: the word changes before any byte of the
 *      chunk is rewritten                                        LMM(R)
 *   f. reserve = head = the new chunk's base (release)           LMM(E)
 *
 * Reader, one record at lpos in chunk c, whose word it read as id:
 *   1. h = head (acquire), pairs with LMM(E): everything below h is
 *      published. Loaded again only when the cursor reaches the h it
 *      has (a follower: less often, "Following writers"): the line is
 *      the writer's, hot.                                         LMM(F)
 *   2. copy the header, check word == lpos | state and the lengths, which
 *      must end inside the chunk and at or below h
 *   3. copy the body into private memory
 *   4. acquire fence, then read the record's word and c's descriptor
 *      word again                                            LMM(G,H,J)
 *      pairs with LMM(R): if the copy saw any byte a new owner of c wrote,
 *      the descriptor it re-reads names the new incarnation
 *   5. the copy is whole iff both are unchanged; otherwise c changed
 *      hands while we copied: go on in the lane's next chunk (a
 *      follower: its newest half). Losses are counted exactly by
 *      sequence gaps (they are "overwritten").
 *
 * Within one incarnation nothing is ever rewritten: a chunk's records are
 * appended once. So the descriptor word is a seqlock for the whole chunk,
 * and the record word names the record's place. Every path that gives
 * records up changes the descriptor word first (LMM(Q,R)): a steal, the
 * recycling of one's own oldest chunk.
 *
 * Reader's walk over a lane: its chunks in order of base (the positions
 * grow), found by a scan of the descriptor table (chunk_find: the chunk of
 * the lane with the smallest base that ends past the cursor; at most
 * chunk_count words, once per chunk). A chunk is entered only if its base
 * is at or below the lane's head (it holds something published).
 *
 * Progress. A reader's cursor only moves forward: to the end of a record
 * it checked, to the next chunk of the lane, or past damage. It reads only
 * records that end at or below a head loaded with acquire, and takes a
 * record only if it is numbered last + 1 right after the record before it
 * in the same chunk, or above every number taken after a jump (a chunk
 * boundary, damage). Damage (a word, a length or a header no writer makes,
 * a PAD inside the chain, a record out of sequence) is stepped over by one
 * scan, bounded by the chunk, for the next word that names its own
 * position; the records lost there count as torn, the place once
 * (corrupt). A lane the cursor cannot get past is left alone until its
 * head, its chunk's word or the word at the cursor change. Every fetch is
 * bounded by the capacity / 8 plus the chunk count.
 *
 * ===================================================================
 * Dead writers
 * ===================================================================
 *
 * A writer killed at any instruction leaves its lane's owner word naming a
 * dead thread, and its OPEN chunk OPEN. Nobody waits for it: other writers
 * have lanes and chunks of their own, and take LIVE chunks only.
 *
 * Whether an owner is alive is never judged from the pid and tid in its
 * word: a lane is held by the open file description that holds the lane's
 * OFD lock, one byte at 2^62 + lane in the buffer's file, which the kernel
 * drops when the owner's process dies. All of it is in owner.c and
 * docs/DESIGN.md ("Lane ownership").
 *
 * The next writer to claim the lane (shmlog__lane_claim; also a writer
 * that reaps dead lanes, shmlog__reap_dead, when it claims its own) finds
 * the lane's OPEN chunk, if any, and then one of:
 *   - head inside it: walk the chain [base, head) for the newest sequence
 *     number (next_seq lags by one if the writer died between steps 4
 *     and 5); reserve == head: nothing else to do; reserve != head: the
 *     writer died in steps 1-4: a record whose word says COMMITTED (or
 *     TORN: a claimer died repairing it) with the next seq is published
 *     as it is; anything else is marked TORN over [head, reserve) with
 *     the next seq and the lane's torn counter is bumped, once;
 *   - head outside it: the writer died in chunk_switch between d and f:
 *     head = the chunk's base, and the same repair from there;
 *   - no OPEN chunk: the writer died between b and d, or released the
 *     lane cleanly: the newest LIVE chunk of the lane is made OPEN again
 *     (CAS) if head is inside it, else the next record takes a chunk.
 * A chain that does not make sense (damage) gives its chunk up (LIVE) and
 * the lane starts in a new chunk, numbering on after its newest record.
 * A dead lane reaped is released: its chunks become nobody's share.
 *
 * ===================================================================
 * Following writers (reader.c)
 * ===================================================================
 *
 * What a follower (a reader that waits, shmlog_reader_wait()) costs a
 * writer is cache lines. A line the follower still holds when the writer
 * comes back to write it, a lap of the lane later, is a line the writer
 * must take back from the follower's core: a miss on every line written,
 * most of a full-speed writer's rate. So a follower
 *   - flushes (x86 CLFLUSHOPT) the lines of each record it copied and
 *     found whole, but the line the next record starts in: the writer's
 *     next write there misses to memory, which its prefetcher sees coming;
 *   - loads the head of a lane being written (which takes the writer's
 *     head line, and reading up to it the line the writer's next record
 *     starts in) only if its last look at that lane is 4 us old (16 us
 *     for a lane that moved more than 2 bytes a nanosecond: a writer at
 *     full speed), in shmlog_reader_next() and in its wait, which looks
 *     every 1 us and returns as soon as a look finds a record: two misses
 *     for the writer every 4 us, a record seen within about 5 us by a
 *     follower that keeps up; a lane that did not move at the last look
 *     is looked at freely (LMM(F) either way: it reads up to a head
 *     loaded with acquire, whoever loaded it);
 *   - when the writer took the chunk it was reading (it fell a history
 *     behind), goes on at the chunk holding the lane's newest half, not at
 *     the lane's oldest one, which the writer takes next: the skipped
 *     records count as overwritten, by the gap in sequence numbers;
 *   - overtaken by a writer at full speed, leaves the lane alone three
 *     times as long as it read (cursor_rest()): every line it reads is a
 *     miss for the writer a lap later, and one that cannot keep up would
 *     read as many as it can.
 *
 * ===================================================================
 * Waking readers
 * ===================================================================
 *
 * A follower whose looks found nothing for 20 us (and that neither rests
 * nor saw a lane written at full speed in the last 10 ms: then it naps,
 * polling, so that such a writer pays no wake-up) sets notify.sleepers,
 * issues membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), loads every lane's
 * head once more and only then sleeps on notify.futex (a follower that keeps up
 * with a steady writer never sleeps: no membarrier, no wake-up). A writer,
 * after storing head, reads notify.sleepers (a line written only when
 * readers go to sleep, so it stays shared in every writer's cache) and,
 * only if set, clears it, bumps the futex word and calls FUTEX_WAKE. The
 * membarrier gives the reader's side the full barrier that Dekker's
 * pattern needs, so the writer needs only a compiler barrier: either the
 * writer sees the flag, or the reader sees the new head (LMM(W) pairs with
 * the reader's membarrier). Where membarrier is not available, writers
 * issue a full fence instead. A woken follower loads every head before it
 * returns and reads at once. A reader killed while asleep leaves the flag
 * set: the next writer clears it with one futex call, and that is the
 * whole cost.
 *
 * ===================================================================
 * Memory-barrier pairs
 * ===================================================================
 *
 *   writer                      pairs with             guarantees
 *   LMM(C) reserve, fence       claimer's lock (full)  a dead writer's
 *                                                      reservation is seen
 *   LMM(D) record word release  reader LMM(F)          via head, below
 *   LMM(E) head release         reader LMM(F)          records (and the PAD
 *                                                      ending a chunk) below
 *                                                      head are published
 *   LMM(K) OPEN -> LIVE release taker's CAS LMM(Q)     the chunk's records
 *                                                      are complete
 *   LMM(Q) take CAS acq_rel     reader LMM(J)          (with R) below
 *   LMM(R) release fence        reader LMM(G) fence,   a copy that saw a
 *                               LMM(J) descriptor      byte of the new owner
 *                               re-read                sees the new word
 *   LMM(W) wake check           reader membarrier      no lost wake-up
 *
 * ===================================================================
 * Trust
 * ===================================================================
 *
 * Anyone who may write the file may write anything into it. Readers
 * therefore copy before they look, check every position, offset, index
 * and length against the mapping, and bound every loop by the capacity.
 * Writers treat the descriptor table the same way: a word no writer
 * stores is a free chunk to them, a lane index is checked before use, and
 * every scan is bounded by chunk_count. pid, tid and tag are what the
 * writer says they are.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "append.h"
#include "internal.h"

#ifdef SHMLOG_TESTPOINTS
void (*shmlog__testpoint_hook)(int point);
#endif

/* ---- reading a record header (shared by claimers and readers) ------- */

/* Is @r, found at @pos, a well-formed record of some state, with @room
 * bytes left in its chunk? Returns the state (0: not a record) and its
 * length in *@len. Only the first word of a PAD is read: a PAD always runs
 * to the end of the chunk and may be shorter than a header. */
unsigned shmlog__rec_check(const struct shmlog__fixed *f,
			  const struct shmlog__rec *r, uint64_t pos,
			  uint64_t room, uint32_t *len)
{
	uint64_t word = atomic_load_explicit(&r->word, memory_order_relaxed);
	unsigned state = (unsigned)(word & REC_STATE_MASK);
	if ((word & ~(uint64_t)REC_STATE_MASK) != pos)
		return 0;
	if (state == REC_PAD) {
		*len = (uint32_t)room;
		return state;
	}
	if (state != REC_COMMITTED && state != REC_TORN)
		return 0;
	if (room < REC_HDR)
		return 0;
	uint32_t l = r->len;
	if (l < REC_HDR || l % REC_ALIGN || l > f->max_record || l > room)
		return 0;
	if (state == REC_COMMITTED &&
	    (uint32_t)r->tag_len + r->msg_len > l - REC_HDR)
		return 0;
	*len = l;
	return state;
}

static struct shmlog__rec *rec_at(unsigned char *data, uint64_t off)
{
	return (struct shmlog__rec *)(void *)(data + off);
}

/* ---- the chunk table ------------------------------------------------- */

/* Lane @lane's chunk in @states whose base is the smallest (@newest:
 * the largest) among those that end past @from and begin at or before
 * @limit. One pass over the descriptor table, bounded by chunk_count. */
static bool chunk_best(const struct shmlog__seg *s, unsigned lane,
		       uint64_t from, uint64_t limit, unsigned states,
		       bool newest, unsigned *idx, uint64_t *word)
{
	const struct shmlog__fixed *f = &s->fixed;
	bool found = false;
	uint64_t best = 0;
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_acquire);
		if (chunk_lane(w) != lane || !chunk_valid(f, w) ||
		    !(states & 1u << chunk_state(w)))
			continue;
		uint64_t base = chunk_base(f, w);
		if (!pos_before(from, base + f->chunk_size) ||
		    pos_before(limit, base))
			continue;
		if (!found || pos_before(newest ? best : base,
					 newest ? base : best)) {
			found = true;
			best = base;
			*idx = i;
			*word = w;
		}
	}
	return found;
}

bool shmlog__chunk_find(const struct shmlog__seg *s, unsigned lane,
			uint64_t from, uint64_t limit, unsigned states,
			unsigned *idx, uint64_t *word)
{
	return chunk_best(s, lane, from, limit, states, false, idx, word);
}

/* Lane @lane's chunk with the largest base in @states. */
static bool chunk_newest(const struct shmlog__seg *s, unsigned lane,
			 unsigned states, unsigned *idx, uint64_t *word)
{
	/* every base lies within reach of the epoch's newest */
	uint64_t ref = s->fixed.initial_pos +
		       (atomic_load_explicit(&seg_space(s)->epoch,
					     memory_order_relaxed) &
			CHUNK_INC_MASK) * s->fixed.chunk_size;
	return chunk_best(s, lane, ref - SHMLOG__LANE_REACH,
			  ref + SHMLOG__LANE_REACH, states, true, idx, word);
}


/* Does chunk word @a go before @b in what a lane gives up first? Its
 * reserved chunks, which hold no record, then its LIVE ones oldest first
 * (by base). */
static inline bool give_before(const struct shmlog__fixed *f, uint64_t a,
			       uint64_t b)
{
	bool ra = chunk_state(a) == CHUNK_RESV, rb = chunk_state(b) == CHUNK_RESV;
	if (ra != rb)
		return ra;
	return pos_before(chunk_base(f, a), chunk_base(f, b));
}

/* Is chunk word @d older than the claim that @mark (a lane's claim_mark)
 * records: a chunk a departed writer left in the lane? */
static inline bool claim_before(uint64_t d, uint64_t mark)
{
	return mark && (int64_t)((d >> CHUNK_INC_SHIFT << CHUNK_INC_SHIFT) -
				 (mark >> CHUNK_INC_SHIFT << CHUNK_INC_SHIFT)) < 0;
}

/* The first @max chunks lane @lane gives up, in that order (give_before():
 * its reserved chunks, then its LIVE ones oldest first), into @idx and
 * @word: how many; and in *@held how many chunks the lane holds (LIVE,
 * OPEN and reserved). One pass over the descriptor table. A reserved
 * chunk goes first: taking it costs the lane no record, where its LIVE
 * chunks are its history, and a lane that counts its reserved chunks in
 * its share would otherwise lose history for room it has not filled. */
static unsigned lane_oldest(const struct shmlog__seg *s, unsigned lane,
			    uint32_t *idx, uint64_t *word, unsigned max,
			    uint32_t *held)
{
	const struct shmlog__fixed *f = &s->fixed;
	unsigned n = 0;
	*held = 0;
	/* the departed's chunks in the lane are not its writer's to give
	 * (departed_oldest() takes them) nor to count */
	uint64_t mark = atomic_load_explicit(&seg_lane(s, lane)->claim_mark,
					     memory_order_relaxed);
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (chunk_lane(w) != lane || !chunk_held(f, w))
			continue;
		if (chunk_state(w) == CHUNK_LIVE && claim_before(w, mark))
			continue;
		++*held;
		if (chunk_state(w) == CHUNK_OPEN)
			continue;
		/* insertion into the sorted few */
		unsigned k = n < max ? n++ : max;
		while (k > 0 && give_before(f, w, word[k - 1])) {
			if (k < max) {
				idx[k] = idx[k - 1];
				word[k] = word[k - 1];
			}
			k--;
		}
		if (k < max) {
			idx[k] = i;
			word[k] = w;
		}
	}
	return n;
}

/* ---- the space policy: which chunk a writer takes -------------------- */

/* How many of its own oldest LIVE chunks a writer keeps listed, to take
 * one by one with a CAS each and no look at the table. */
#define OWN_LIST 64
/* At most this many chunks a writer takes ahead (CHUNK_RESV), in a row
 * with the one it takes from another lane (chunk_pick()). */
#define RESV_MAX 8
/* A survey's pass runs on the last this many switches of the list (fewer
 * if the list is shorter), a slice of the table each. One: the whole
 * pass on the switch that takes the list's last chunk (survey_step). */
#define SURVEY_SPAN 1
#define NO_PASS UINT32_MAX

/* What one pass over the descriptor table found: per lane, the chunks it
 * holds (bit 31: a LIVE one among them; bit 30: set by survey_decide, the
 * lane has a writer), the lanes seen, the first never-used chunk, and the
 * writer's own oldest LIVE chunks, oldest first. */
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
	/* survey_decide()'s N, and the chunks the departed hold and keep */
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

struct shmlog__survey {
	uint32_t size; /* bytes of this mapping */
	uint32_t lanes; /* entries of held and seen */
	uint32_t at; /* descriptors of the pass read; NO_PASS: none */
	uint32_t start; /* the pass reads from here to the end, then on from 0 */
	uint32_t slice; /* descriptors read per switch in this pass */
	uint64_t below; /* the word of the chunk written when it began */
	/* every chunk below it has been used; a reserved chunk given back
	 * (resv: 0 again) is found by the next pass (survey_step()) */
	uint32_t fresh;
	uint32_t own_n, own_at; /* the list in use; own_at <= own_n */
	/* chunks reserved for us, to take in this order (chunk_pick()) */
	uint32_t resv_n, resv_at;
	uint32_t resv_idx[RESV_MAX];
	uint64_t resv_word[RESV_MAX];
	uint32_t own_idx[OWN_LIST];
	uint64_t own_word[OWN_LIST];
	struct survey_acc acc;
	/* mark[lanes], then held[lanes], pre[lanes], seen[lanes] (uint16_t) */
	uint64_t arrays[];
};

static void acc_reset(struct survey_acc *a)
{
	for (uint32_t k = 0; k < a->seen_n; k++) {
		a->held[a->seen[k]] = 0;
		if (a->pre)
			a->pre[a->seen[k]] = 0;
	}
	a->seen_n = 0;
	a->zero = NO_PASS;
	a->cand_n = 0;
	a->pre_me = 0;
}

/* Forget the list of own chunks to take. Both counters together: a list
 * shortened under its cursor (own_at > own_n) would be read past its end,
 * and the words there taken for chunk indices. */
static inline void own_list_drop(struct shmlog__survey *sv)
{
	sv->own_n = sv->own_at = 0;
}

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
static void survey_scan(const struct shmlog__seg *s, unsigned me,
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
 * of their chunks goes first (departed_oldest()). The bound keeps a
 * lone live writer at 15/16 of the buffer, less the chunk it fills,
 * whatever departed writers wrote before it. */
#define DEPARTED_DIV 16

/* survey_decide()'s answer when the departed give: departed_oldest(). */
#define VICTIM_DEPARTED (UINT_MAX - 1)

/* The oldest LIVE chunk of the departed, into *@idx and *@word: they lose
 * their oldest records first, so what they keep is their newest,
 * whichever lanes the writers that came and went used. A chunk is the
 * departed's if its lane has no writer, or if it is older than its
 * writer's claim (claim_mark). One more pass over the table, on the
 * switches that take from the departed only (while they hold more than
 * their bound). false: none found (the table changed meanwhile). */
static bool departed_oldest(const struct shmlog__seg *s,
			    const struct survey_acc *a, unsigned *idx,
			    uint64_t *word)
{
	const struct shmlog__fixed *f = &s->fixed;
	uint64_t oldest = 0;
	for (uint32_t i = 0; i < f->chunk_count; i++) {
		uint64_t d = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (!chunk_valid(f, d) || chunk_state(d) != CHUNK_LIVE)
			continue;
		unsigned l = chunk_lane(d);
		uint32_t h = a->held[l];
		if (!(h & HELD_LIVE))
			continue; /* a lane the pass did not see */
		if ((h & HELD_OWNED) &&
		    !claim_before(d, atomic_load_explicit(
					     &seg_lane(s, l)->claim_mark,
					     memory_order_relaxed)))
			continue; /* its writer's */
		if (!oldest || inc_before(d, oldest)) {
			oldest = d;
			*idx = i;
			*word = d;
		}
	}
	return oldest != 0;
}

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
static unsigned survey_decide(const struct shmlog__seg *s, unsigned me,
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

/* The pass's own oldest chunks, those whose words are still what the
 * pass read (we took some of them meanwhile), become the list to take.
 * @below (non-zero): a pass spread over switches lists only chunks older
 * than @below, the chunk we were writing when it began: one we took or
 * closed during the pass may have been read before (a stale word) or
 * after (a young chunk of ours), and a list holding the second but not
 * the first would recycle a chunk younger than one it left: a hole in
 * the lane's history. Everything older was ours throughout. */
static void survey_install(const struct shmlog__seg *s,
			   struct shmlog__survey *sv, uint32_t skip,
			   uint64_t below)
{
	uint32_t n = 0;
	for (uint32_t k = skip; k < sv->acc.cand_n; k++) {
		if (below && !inc_before(sv->acc.cand_word[k], below))
			break; /* sorted: the rest are younger still */
		if (atomic_load_explicit(seg_chunk(s, sv->acc.cand_idx[k]),
					 memory_order_relaxed) !=
		    sv->acc.cand_word[k])
			continue;
		sv->own_idx[n] = sv->acc.cand_idx[k];
		sv->own_word[n++] = sv->acc.cand_word[k];
	}
	sv->own_n = n;
	sv->own_at = 0;
}

/* Taking chunk @at from lane @victim (which held @now chunks), also take
 * its next oldest ones for ourselves, up to what we lack of our share
 * (@share; @mine held) and it holds above its own (@vshare), to write
 * into one by one: they are reserved (CHUNK_RESV), no record in them,
 * readers skip them. Without it the taker and a victim that recycles its
 * own oldest chunk take that writer's chunks in turn, and theirs end up
 * interleaved one by one (fresh_stretch(): about a tenth of each one's
 * rate);
 * with it the taker's come in rows. No more than the chunks we have
 * written since the lane was claimed (a writer that logs once and goes
 * takes one), nor RESV_MAX. The victim loses its reserved chunks first,
 * then its oldest, as it would chunk by chunk. */
static void resv_take(const struct shmlog__seg *s, struct shmlog__wlane *w,
		      struct shmlog__survey *sv, unsigned victim, unsigned at,
		      int64_t now, int64_t vshare, int64_t share, int64_t mine)
{
	sv->resv_n = sv->resv_at = 0;
	int64_t k = share - mine - 1; /* we lack, after this chunk */
	if (now - vshare - 1 < k)
		k = now - vshare - 1; /* it holds above its share, after it */
	if ((int64_t)w->switches < k)
		k = w->switches;
	if (k > RESV_MAX)
		k = RESV_MAX;
	if (k <= 0)
		return;
	uint32_t idx[RESV_MAX + 1];
	uint64_t word[RESV_MAX + 1], was[RESV_MAX];
	uint32_t held;
	unsigned n = lane_oldest(s, victim, idx, word, (unsigned)k + 1, &held);
	for (unsigned j = 0; j < n && sv->resv_n < (uint32_t)k; j++) {
		if (idx[j] == at)
			continue;
		uint64_t old = word[j];
		uint64_t resv = old >> CHUNK_INC_SHIFT << CHUNK_INC_SHIFT |
				(uint64_t)w->lane << CHUNK_LANE_SHIFT |
				CHUNK_RESV;
		if (!atomic_compare_exchange_strong_explicit(
			    seg_chunk(s, idx[j]), &old, resv,
			    memory_order_acq_rel, memory_order_relaxed))
			break; /* its owner took it: the row ends here */
		was[sv->resv_n] = word[j];
		sv->resv_idx[sv->resv_n] = idx[j];
		sv->resv_word[sv->resv_n++] = resv;
	}
	if (!sv->resv_n)
		return;
	TESTPOINT(16); /* reserved; the lane not counted again */
	/* Others may have taken from it meanwhile, on the same count (two
	 * takers at once, or one that was preempted between its count and
	 * its CASes): a writer that then stops writing would keep less than
	 * its share for good. Count again, and give the youngest of the
	 * reserved chunks back until it holds its share once we have taken
	 * @at: untouched, they still hold its records, and its history stays
	 * its newest records without a hole. (One that was its own reserved
	 * chunk goes back reserved; if its writer released the lane
	 * meanwhile, the lane's next claim gives it back, lane_resume().) */
	lane_oldest(s, victim, idx, word, 0, &held);
	for (int64_t under = vshare + 1 - (int64_t)held;
	     under > 0 && sv->resv_n; under--) {
		uint32_t j = --sv->resv_n;
		uint64_t resv = sv->resv_word[j];
		atomic_compare_exchange_strong_explicit(
			seg_chunk(s, sv->resv_idx[j]), &resv, was[j],
			memory_order_acq_rel, memory_order_relaxed);
	}
}

/* Give lane @lane's chunks back: its reserved ones to nobody (never
 * used: they hold no record), and with @open its OPEN ones to its history
 * (LIVE). Its owner releasing it (shmlog__lane_release(), close_lanes()
 * in writer.c), or the claimer of a lane whose owner died (reserved ones
 * only: lane_resume() repairs the OPEN chunk). CASes, not stores: a
 * hostile file may have changed a word. */
static void lane_give_back(const struct shmlog__seg *s, unsigned lane,
			   bool open)
{
	const struct shmlog__fixed *f = &s->fixed;
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (!chunk_held(f, w) || chunk_lane(w) != lane)
			continue;
		if (chunk_state(w) == CHUNK_RESV)
			atomic_compare_exchange_strong(seg_chunk(s, i), &w, 0);
		else if (open && chunk_state(w) == CHUNK_OPEN)
			atomic_compare_exchange_strong(
				seg_chunk(s, i), &w, chunk_id(w) | CHUNK_LIVE);
	}
}

/* The chunk the writer of lane w->lane takes next, asking the policy
 * whole (one pass over the table): a never-used one, else the oldest
 * LIVE chunk of the lane furthest above its fair share, else the taker's
 * own oldest LIVE chunk. *@word is what the descriptor held (the CAS's
 * expected value). With a survey, the next few own chunks are listed
 * too. false: no chunk can be taken (every chunk is some live writer's
 * OPEN one). */
static bool chunk_pick(const struct shmlog__seg *s, struct shmlog__wlane *w,
		       struct shmlog__survey *sv, unsigned *out, uint64_t *word)
{
	const struct shmlog__fixed *f = &s->fixed;
	uint32_t held[SHMLOG_LANES_MAX], pre[SHMLOG_LANES_MAX];
	uint16_t seen[SHMLOG_LANES_MAX];
	struct survey_acc stack_acc, *a = &stack_acc;
	if (sv) {
		a = &sv->acc;
		sv->at = NO_PASS; /* a pass in progress is given up */
		own_list_drop(sv);
		acc_reset(a);
	} else {
		memset(held, 0, f->lane_count * sizeof(held[0]));
		memset(pre, 0, f->lane_count * sizeof(pre[0]));
		a->held = held;
		a->seen = seen;
		a->mark = NULL; /* read from the lanes as the pass goes */
		a->pre = pre;
		a->seen_n = a->cand_n = a->pre_me = 0;
		a->zero = NO_PASS;
	}
	survey_scan(s, w->lane, w->claim_mark, a, 0, f->chunk_count, true);
	if (a->zero != NO_PASS) {
		*out = a->zero;
		*word = 0;
		return true;
	}
	unsigned victim = survey_decide(s, w->lane, a);
	if (victim == UINT_MAX)
		return false;
	if (victim == VICTIM_DEPARTED)
		return departed_oldest(s, a, out, word);
	if (victim == w->lane) {
		if (!a->cand_n)
			return false;
		*out = a->cand_idx[0];
		*word = a->cand_word[0];
		if (sv) /* the next oldest, for the switches to come */
			survey_install(s, sv, 1, 0);
		return true;
	}
	/* The table was read word by word while chunks changed hands: look
	 * at the victim once more, as it is now, and take from another
	 * writer only if it is still above its share. */
	uint32_t now = 0, at;
	int64_t n = a->n, cc = f->chunk_count;
	int64_t keep = a->departed < a->departed_cap ? a->departed
						     : a->departed_cap;
	int64_t share = (cc - keep) / n;
	if (!lane_oldest(s, victim, &at, word, 1, &now))
		return false;
	if ((int64_t)now * n <= cc - keep &&
	    (a->held[w->lane] & HELD_OWN_LIVE)) {
		/* no longer above its share: our own oldest instead */
		if (!a->cand_n)
			return false;
		*out = a->cand_idx[0];
		*word = a->cand_word[0];
		return true;
	}
	*out = at;
	if (sv)
		resv_take(s, w, sv, victim, at, now, share, share,
			  (a->held[w->lane] & HELD_COUNT) - a->pre_me);
	return true;
}

/* The survey of an exclusive lane's writer, mapped on its first switch
 * (private, a page or two: lane_count counters). NULL for a shared lane
 * (lent for one record) or if it cannot be had: each switch then asks
 * the policy whole. */
static struct shmlog__survey *survey_of(const struct shmlog__seg *s,
					struct shmlog__wlane *w)
{
	const struct shmlog__fixed *f = &s->fixed;
	struct shmlog__survey *sv = w->survey;
	if (SHMLOG_LIKELY(sv && sv->lanes == f->lane_count))
		return sv;
	if (w->lane >= shmlog__lanes_exclusive(f) || w->survey_failed)
		return NULL;
	if (sv) { /* made for another buffer */
		munmap(sv, sv->size);
		w->survey = NULL;
	}
	size_t size = sizeof(*sv) +
		      (size_t)f->lane_count *
			      (sizeof(uint64_t) + 2 * sizeof(uint32_t) +
			       sizeof(uint16_t));
	size = (size + SHMLOG__PAGE - 1) & ~(size_t)(SHMLOG__PAGE - 1);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		w->survey_failed = true;
		return NULL;
	}
	sv = p;
	sv->size = (uint32_t)size;
	sv->lanes = f->lane_count;
	sv->at = NO_PASS;
	sv->acc.mark = sv->arrays;
	sv->acc.held = (uint32_t *)(void *)(sv->acc.mark + f->lane_count);
	sv->acc.pre = sv->acc.held + f->lane_count;
	sv->acc.seen = (uint16_t *)(void *)(sv->acc.pre + f->lane_count);
	sv->acc.zero = NO_PASS;
	w->survey = sv;
	return sv;
}

/* A part of the survey, after a switch that took one of the listed own
 * chunks: the list's last SURVEY_SPAN switches (all of a shorter list's)
 * read the table once, a slice each, and the pass's answer replaces the
 * list before it runs out. The switches before them do none of it. With
 * SURVEY_SPAN 1 the pass is one switch's, the one that takes the list's
 * last chunk: one switch in about 60 for a lone writer with the default
 * buffer. A slice's cost is mostly its first touch of lines that the
 * records written since the last pass evicted (the survey's arrays, the
 * table), not its instructions: four switches reading a quarter each
 * took 100-200 ns apiece and were the per-call p99.9 (4 in 60 switches,
 * 1 in 150 calls a switch); the whole pass on one switch takes about
 * 350 ns, in 1 switch of 60: past the p99.9, at the p99.99.
 * Nothing while the buffer still has never-used chunks, nor while the
 * policy's last answer was another lane's chunk (each switch asks it
 * whole then). */
static void survey_step(const struct shmlog__seg *s, struct shmlog__wlane *w,
			struct shmlog__survey *sv)
{
	uint32_t cc = s->fixed.chunk_count;
	if (sv->at == NO_PASS) {
		if (sv->fresh < cc || sv->own_n == 0)
			return;
		/* the pass runs on the list's last switches: this one and
		 * one per chunk left on it */
		uint32_t left = sv->own_n - sv->own_at;
		if (left >= SURVEY_SPAN)
			return;
		sv->slice = (cc + left) / (left + 1);
		/* from the oldest chunk on: oldest first in table order */
		sv->start = sv->own_idx[sv->own_at < sv->own_n ? sv->own_at
							       : sv->own_n - 1];
		if (sv->start >= cc)
			sv->start = 0;
		sv->below = w->cword;
		acc_reset(&sv->acc);
		sv->at = 0;
	}
	uint32_t end = cc - sv->at > sv->slice ? sv->at + sv->slice : cc;
	/* [at, end) of the pass, in the table from start on, circularly */
	uint32_t lo = sv->start + sv->at, hi = sv->start + end;
	if (lo < cc)
		survey_scan(s, w->lane, w->claim_mark, &sv->acc, lo,
			    hi < cc ? hi : cc, false);
	if (hi > cc)
		survey_scan(s, w->lane, w->claim_mark, &sv->acc,
			    lo > cc ? lo - cc : 0,
			    hi - cc, false);
	sv->at = end;
	if (end < cc)
		return;
	sv->at = NO_PASS;
	if (sv->acc.zero != NO_PASS) { /* a never-used chunk: take it next */
		sv->fresh = sv->acc.zero;
		return;
	}
	if (survey_decide(s, w->lane, &sv->acc) == w->lane)
		survey_install(s, sv, 0, sv->below);
	else
		own_list_drop(sv); /* another lane is above its share */
}

void shmlog__wlane_forget(struct shmlog__wlane *w)
{
	if (w->survey)
		munmap(w->survey, w->survey->size);
	memset(w, 0, sizeof(*w));
}

/* ---- writer side ---------------------------------------------------- */

/* Make pages [@a, @b) resident and writable in this process. */
static void pages_prefault(uintptr_t a, uintptr_t b)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0)
		return;
#endif
	/* Older kernels: a write fault per page that changes nothing. */
	for (uintptr_t p = a; p < b; p += SHMLOG__PAGE)
		atomic_fetch_add_explicit((_Atomic uint64_t *)p, 0,
					  memory_order_relaxed);
}

/* Buffers up to this much data are made resident whole, with one call,
 * the first time a writer of the process takes a chunk; larger ones a
 * chunk at a time (page tables for gigabytes a writer may never touch). */
#define PREFAULT_WHOLE (64u << 20)

/* Make chunk @i's pages resident and writable in this process, once per
 * handle, so that appends take no page fault. */
static void chunk_prefault(const struct shmlog__seg *s, struct shmlog *h,
			   unsigned i)
{
	const struct shmlog__fixed *f = &s->fixed;
	if (!h || !h->prefaulted ||
	    atomic_load_explicit(&h->prefaulted[i], memory_order_relaxed))
		return;
	uint64_t data = (uint64_t)f->chunk_count * f->chunk_size;
	if (data <= PREFAULT_WHOLE) {
		/* the first chunk of this handle: all of them at once */
		if (atomic_exchange_explicit(&h->prefaulted[0], 2,
					     memory_order_relaxed) == 2)
			return;
		uintptr_t a = (uintptr_t)seg_chunk_data(s, 0);
		pages_prefault(a, a + data);
		for (unsigned k = 0; k < f->chunk_count; k++)
			atomic_store_explicit(&h->prefaulted[k], 2,
					      memory_order_relaxed);
		return;
	}
	if (atomic_exchange_explicit(&h->prefaulted[i], 1,
				     memory_order_relaxed))
		return;
	uintptr_t a = (uintptr_t)seg_chunk_data(s, i);
	pages_prefault(a, a + f->chunk_size);
}

/* Lines at the start of a chunk taken that the writer asks for, for
 * writing, as it takes the chunk: 1 KiB, a sixteenth of the default
 * chunk. Two writers whose chunks lie interleaved in the table (writers
 * that came and went left them so, docs/DESIGN.md) each lost 4-5 % a call
 * against the same writers on a buffer each, and the loss sat in the
 * first sixteenth of each chunk. A lone writer on such a buffer loses
 * nothing, so those lines were in the other writer's core, most likely
 * fetched there by its prefetcher running on past the end of a chunk of
 * its own next to ours in memory, and every first store to one waited
 * for it. Asked for at the switch, they come while the first records are
 * built: 1.5-2 % left (`shmlog-share-cost`, churned runs, AMD EPYC guest,
 * 2026-11-26). Asking only where a neighbour in the table is another
 * writer's left 2-2.5 % (the neighbours that count are physical, which
 * the table only suggests) and took more instructions (34 a switch) than
 * asking every time (about 20). 32 or 64 lines did no better than 16, and
 * a read prefetch did nothing. */
#define CHUNK_CLAIM_LINES 16

#if defined(__x86_64__) || defined(__i386__)
/* PREFETCHW: AMD's since the K6-2, Intel's since Broadwell (CPUID
 * 0x80000001, ECX bit 8); the same answer in any thread. */
static bool have_prefetchw(void)
{
	/* 0: not known yet, 1: no, 2: yes */
	static _Atomic int known;
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (SHMLOG_UNLIKELY(!k)) {
		unsigned a, b, c, d;
		k = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & 1u << 8)
			    ? 2
			    : 1;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 2;
}
#endif

static void chunk_claim_lines(const unsigned char *data)
{
#if defined(__x86_64__) || defined(__i386__)
	if (!have_prefetchw())
		return;
	for (int k = 0; k < CHUNK_CLAIM_LINES; k++)
		__asm__ volatile("prefetchw %0" ::"m"(data[64 * k]));
#else
	for (int k = 0; k < CHUNK_CLAIM_LINES; k++)
		__builtin_prefetch(data + 64 * k, 1, 3);
#endif
}

/* Make chunk @i, whose word is now @word (OPEN, ours), the writer's. */
static void chunk_install(const struct shmlog__seg *s, struct shmlog__wlane *w,
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
static void chunk_none(struct shmlog__wlane *w)
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
static void chunk_close(const struct shmlog__seg *s, struct shmlog__wlane *w)
{
	if (w->chunk == CHUNK_NONE)
		return;
	uint64_t live = (w->cword & ~(uint64_t)CHUNK_STATE_MASK) | CHUNK_LIVE;
	uint64_t open = w->cword;
	/* a CAS, not a store: a hostile file may have changed it */
	atomic_compare_exchange_strong_explicit(seg_chunk(s, w->chunk), &open,
						live, memory_order_release,
						memory_order_relaxed); /* LMM(K) */
	chunk_none(w);
}

/* Incarnations a writer reserves at once: the epoch's line, which every
 * writer of every process writes, is written once per INC_BLOCK chunks
 * taken, not once per chunk. */
#define INC_BLOCK 16

/* A new incarnation number for the lane @w owns, never 0: the next of its
 * block, reserved after the lane was claimed, so larger than any its
 * chunks have (positions grow along a lane) and unique (no ABA). */
static uint64_t chunk_inc(const struct shmlog__seg *s, struct shmlog__wlane *w)
{
	for (;;) {
		while (w->inc_next != w->inc_end) {
			uint64_t inc = w->inc_next++ & CHUNK_INC_MASK;
			if (inc)
				return inc;
		}
		w->inc_next = atomic_fetch_add_explicit(&seg_space(s)->epoch,
							INC_BLOCK,
							memory_order_relaxed) +
			      1;
		w->inc_end = w->inc_next + INC_BLOCK;
	}
}

/* End the OPEN chunk with a PAD at the writer's head (switch step a).
 * Readers read only a PAD's word, but the whole rest of the chunk is
 * zeroed too (the seq slot aside: the lane's last number): the bytes
 * behind a PAD were left by the chunk's earlier incarnation, often a
 * whole record of another lane, and a word given another state (a
 * hostile write: COMMITTED, TORN), or moved, would make them one again:
 * an old record shown after newer ones of its writer, or a number far
 * above the lane's taken as its last. Zeroed, they frame no record (a
 * length of 0, priority 0) whatever is done to the word. Fewer bytes
 * than the record that did not fit, once per chunk; before the word,
 * which is stored with release. */
static void pad_write(struct shmlog__wlane *w)
{
	struct shmlog__rec *r = rec_at(w->cdata, w->head - w->cbase);
	memset((char *)r + sizeof(r->word), 0,
	       (size_t)(w->cend - w->head) - sizeof(r->word));
	if (w->cend - w->head >= REC_HDR)
		r->seq = w->seq - 1;
	atomic_store_explicit(&r->word, w->head | REC_PAD,
			      memory_order_release);
}

#define TAKE_TRIES 16

/* Take chunk @i, whose word was @old, as the writer's OPEN chunk of
 * incarnation @inc (steps d-f). false: somebody else took it first. */
static inline bool chunk_take(const struct shmlog__seg *s,
			      struct shmlog__wlane *w, unsigned i, uint64_t old,
			      uint64_t inc)
{
	uint64_t open = chunk_word(inc, w->lane, CHUNK_OPEN);
	/* Every index a switch takes comes from a pass over the table or a
	 * list made from one; checked here, where it becomes an address,
	 * so that no slip in the lists' bookkeeping writes outside it. */
	if (SHMLOG_UNLIKELY(i >= s->fixed.chunk_count))
		return false;
	if (!atomic_compare_exchange_strong_explicit(
		    seg_chunk(s, i), &old, open, memory_order_acq_rel,
		    memory_order_relaxed)) /* d: LMM(Q) */
		return false;
	shmlog__fence_release(); /* e: LMM(R) */
	TESTPOINT(12);
	chunk_install(s, w, i, open);
	w->head = w->cbase; /* f */
	atomic_store_explicit(&w->ctl->reserve, w->head, memory_order_relaxed);
	atomic_store_explicit(&w->ctl->head, w->head,
			      memory_order_release); /* LMM(E) */
	TESTPOINT(13);
	return true;
}

/* Where a writer starts in a buffer that still has never-used chunks,
 * having none before it (@last: CHUNK_NONE) or not the one after its
 * last: the middle of the longest stretch of never-used chunks, the
 * table's start if all are. Writers that start together so take the
 * buffer in stretches, each going on into the chunk after its last,
 * rather than turn about chunk by chunk: interleaved chunks cost each
 * writer about a tenth of its rate (docs/DESIGN.md, the space policy).
 * Once per switch while the buffer has never-used chunks: a read of the
 * table. */
static unsigned fresh_stretch(const struct shmlog__seg *s, uint32_t from)
{
	uint32_t cc = s->fixed.chunk_count, best = cc, best_n = 0, run = 0;
	for (uint32_t i = from; i <= cc; i++) {
		if (i < cc && atomic_load_explicit(seg_chunk(s, i),
						   memory_order_relaxed) == 0) {
			run++;
			continue;
		}
		if (run > best_n) {
			best_n = run;
			best = i - run;
		}
		run = 0;
	}
	if (!best_n)
		return cc;
	/* all of it never used: its start; else past a stretch's middle, so
	 * that the writer before it has as much room to go on into */
	return best_n == cc ? 0 : best + best_n / 2;
}

/* The chunk to take next, from the survey's hints: a never-used one (the
 * one after @last if it is, else fresh_stretch()'s), else our own next
 * oldest as the survey said last (*@listed). false: neither, ask the
 * policy whole. */
static inline bool chunk_hint(const struct shmlog__seg *s,
			      struct shmlog__survey *sv, uint32_t last,
			      unsigned *i, uint64_t *old, bool *listed)
{
	uint32_t cc = s->fixed.chunk_count;
	/* never-used chunks first; the hint only moves up (a reserved
	 * chunk given back below it is the next pass's to find) */
	if (SHMLOG_UNLIKELY(sv->fresh < cc)) {
		while (sv->fresh < cc &&
		       atomic_load_explicit(seg_chunk(s, sv->fresh),
					    memory_order_relaxed) != 0)
			sv->fresh++;
		uint32_t at = last + 1;
		if (last == CHUNK_NONE || at >= cc ||
		    atomic_load_explicit(seg_chunk(s, at),
					 memory_order_relaxed) != 0)
			at = fresh_stretch(s, sv->fresh);
		if (at < cc) {
			*i = at;
			*old = 0;
			*listed = false;
			return true;
		}
		sv->fresh = cc; /* none left */
	}
	if (sv->resv_at < sv->resv_n) { /* ours, in a row (resv_take()) */
		*i = sv->resv_idx[sv->resv_at];
		*old = sv->resv_word[sv->resv_at++];
		*listed = false;
		return true;
	}
	if (sv->own_at >= sv->own_n)
		return false;
	*i = sv->own_idx[sv->own_at];
	*old = sv->own_word[sv->own_at++];
	*listed = true;
	return true;
}

/* The record does not fit the OPEN chunk (or there is none): end it and
 * take another (steps a-f in the design comment). false: none could be
 * had; the writer is left without a chunk and the record is dropped.
 * The common switch, a lone writer's or one at or under its share, is
 * steps a-f on the chunk its survey listed: no loop, no look at the
 * table (the survey's slice aside). */
static __attribute__((noinline)) bool
chunk_switch(const struct shmlog__seg *s, struct shmlog__wlane *w)
{
	struct shmlog__lane *ctl = w->ctl;
	uint32_t last = w->chunk;
	uint64_t last_word = chunk_id(w->cword) | CHUNK_LIVE;
	if (last != CHUNK_NONE) {
		if (w->head != w->cend) { /* a: PAD to the chunk's end */
			pad_write(w);
			TESTPOINT(2);
			w->head = w->cend;
			atomic_store_explicit(&ctl->reserve, w->head,
					      memory_order_relaxed);
			atomic_store_explicit(&ctl->head, w->head,
					      memory_order_release); /* LMM(E) */
		}
		TESTPOINT(10);
		/* b: OPEN -> LIVE; a CAS, not a store: a hostile file may
		 * have changed the word. The writer's view of the chunk is
		 * replaced when it takes the next one (chunk_none() if it
		 * takes none). */
		uint64_t open = w->cword;
		atomic_compare_exchange_strong_explicit(
			w->cdesc, &open, last_word, memory_order_release,
			memory_order_relaxed); /* LMM(K) */
		TESTPOINT(11);
	}
	/* the file was removed: its records are lost to every reader; take
	 * no more of it, and the write says so (-ESTALE). A relaxed load of
	 * the read-mostly line every write reads already (filter_gen). */
	if (SHMLOG_UNLIKELY(shmlog__seg_removed(s))) {
		chunk_none(w);
		return false;
	}
	uint64_t inc = chunk_inc(s, w); /* c */
	struct shmlog__survey *sv = survey_of(s, w);
	for (int t = 0; t < TAKE_TRIES; t++) {
		unsigned i;
		uint64_t old;
		bool listed = false;
		if (!(sv && chunk_hint(s, sv, last, &i, &old, &listed)) &&
		    !chunk_pick(s, w, sv, &i, &old))
			break;
		if (SHMLOG_UNLIKELY(!chunk_take(s, w, i, old, inc))) {
			if (listed) /* taken from us: ask the policy */
				own_list_drop(sv);
			continue;
		}
		chunk_prefault(s, w->h, i);
		chunk_claim_lines(w->cdata);
		w->switches++;
		if (sv)
			survey_step(s, w, sv);
		return true;
	}
	/* Nothing to take: every chunk is some live writer's OPEN one, or
	 * the table was scribbled on. The chunk we just filled is ours: go
	 * on in it, a new incarnation, rather than lose every record. */
	chunk_none(w);
	if (last == CHUNK_NONE || !chunk_take(s, w, last, last_word, inc))
		return false; /* none, or taken meanwhile */
	return true;
}

/* The readers' side of Dekker's pattern ("Waking readers"), and the
 * registration that makes the expedited command usable. */
bool shmlog__membarrier_register(void)
{
	return syscall(SYS_membarrier,
		       MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

int shmlog__membarrier(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) ==
			       0
		       ? 0
		       : -errno;
}

void shmlog__ring_wake(struct shmlog__hdr *hdr)
{
	if (!atomic_exchange_explicit(&hdr->notify.sleepers, 0,
				      memory_order_relaxed))
		return;
	atomic_fetch_add_explicit(&hdr->notify.futex, 1, memory_order_release);
	syscall(SYS_futex, &hdr->notify.futex, FUTEX_WAKE, INT_MAX, NULL, NULL,
		0);
}

/* The append, steps 0-5: the record fits the OPEN chunk (append.h), or a
 * chunk is switched to first. */
bool shmlog__ring_append(const struct shmlog__seg *s, struct shmlog__wlane *w,
			 uint64_t time, uint64_t meta, const char *tag,
			 uint64_t tword, const char *msg)
{
	if (SHMLOG_LIKELY(shmlog__append_fit(w, time, meta, tag,
					     META_TAG_LEN(meta), tword, msg,
					     META_MSG_LEN(meta))))
		return true;
	return shmlog__ring_append_next(s, w, time, meta, tag, tword, msg);
}

bool shmlog__ring_append_next(const struct shmlog__seg *s,
			      struct shmlog__wlane *w, uint64_t time,
			      uint64_t meta, const char *tag, uint64_t tword,
			      const char *msg)
{
	uint32_t tag_len = META_TAG_LEN(meta), msg_len = META_MSG_LEN(meta);
	uint32_t len = rec_len(tag_len, msg_len);
	if (!shmlog__ring_make_room(s, w, len))
		return false;
	return shmlog__append_fit(w, time, meta, tag, tag_len, tword, msg,
				  msg_len);
}

bool shmlog__ring_make_room(const struct shmlog__seg *s,
			    struct shmlog__wlane *w, uint32_t len)
{
	/* the OPEN chunk's word changed: the file was scribbled on, and
	 * another writer may take the chunk: leave it to them */
	if (w->chunk != CHUNK_NONE &&
	    atomic_load_explicit(w->cdesc, memory_order_relaxed) != w->cword) {
		w->head = w->cend; /* no PAD: not ours to write */
		chunk_none(w);
	}
	return w->cend - w->head >= len || chunk_switch(s, w);
}

/* ---- claiming and repairing a lane ------------------------------------ */

/* The owner died inside a write: publish or mark torn what it left in
 * [head, reserve) of its OPEN chunk. A reservation no writer could have
 * made (damage) is given up, the lane's history kept. Only called with the
 * lane's ownership held. */
static void lane_repair(const struct shmlog__fixed *f, struct shmlog__wlane *w,
			uint64_t reserve)
{
	struct shmlog__lane *ctl = w->ctl;
	uint64_t pos = w->head, len = reserve - pos;
	if (len < REC_HDR || len > f->max_record || len % REC_ALIGN ||
	    len > w->cend - pos) {
		/* nonsense: keep what the lane holds, forget the reservation */
		atomic_store_explicit(&ctl->reserve, pos, memory_order_relaxed);
		return;
	}
	TESTPOINT(8);
	struct shmlog__rec *r = rec_at(w->cdata, pos - w->cbase);
	uint32_t rlen;
	unsigned state = shmlog__rec_check(f, r, pos, w->cend - pos, &rlen);
	if (state && state != REC_PAD && rlen == len && r->seq == w->seq) {
		/* died after the commit: the record is whole; or a claimer
		 * died after marking it torn: counted already */
		w->seq++;
	} else {
		/* the header reads as no writer's (priority 0): a TORN
		 * record flipped to COMMITTED is still not shown; the body
		 * is zeroed too, like a PAD's (pad_write): no word moved
		 * into it frames what an earlier incarnation left there */
		atomic_store_explicit(&r->word, 0, memory_order_relaxed);
		memset((char *)r + sizeof(r->word), 0,
		       (size_t)len - sizeof(r->word));
		r->seq = w->seq++;
		r->len = (uint16_t)len;
		atomic_store_explicit(&r->word, pos | REC_TORN,
				      memory_order_release);
		atomic_fetch_add_explicit(&ctl->torn, 1, memory_order_relaxed);
	}
	TESTPOINT(9);
	w->head = reserve;
	atomic_store_explicit(&ctl->head, reserve, memory_order_release);
	/* with release, as a commit stores it: a reader that sees this
	 * next_seq sees this head too, so it never counts the torn record
	 * both as a gap (cursor_gone()) and as torn */
	atomic_store_explicit(&ctl->next_seq, w->seq, memory_order_release);
}

/* Walk the chain [base, head) of the OPEN chunk of a lane just claimed:
 * the newest record's seq tells where numbering resumes (next_seq may lag
 * by one when the last owner died between its last two stores). false if
 * the chain is broken (corruption). */
static bool lane_last_seq(const struct shmlog__fixed *f,
			  const struct shmlog__wlane *w, uint64_t *last)
{
	uint64_t pos = w->cbase;
	for (uint32_t guard = f->chunk_size / REC_ALIGN + 1; pos != w->head;) {
		struct shmlog__rec *r = rec_at(w->cdata, pos - w->cbase);
		uint32_t len;
		unsigned state = shmlog__rec_check(f, r, pos, w->cend - pos, &len);
		if (!state || state == REC_PAD || !guard-- ||
		    w->head - pos < len)
			return false;
		*last = r->seq;
		pos += len;
	}
	return true;
}

/* Take the lane's place in its chunks after a claim: its OPEN chunk (a
 * dead owner's), or its newest LIVE one made OPEN again if head is inside
 * it (a lane released cleanly); else none, and the first append takes
 * one. Returns the reservation left to repair (== w->head: none). */
static uint64_t lane_resume(const struct shmlog__seg *s,
			    struct shmlog__wlane *w, uint64_t head,
			    uint64_t reserve)
{
	const struct shmlog__fixed *f = &s->fixed;
	unsigned i;
	uint64_t word;
	w->head = head & ~(uint64_t)(REC_ALIGN - 1);
	/* the claim's incarnations come from a block reserved after it; the
	 * survey and its list describe whatever lane came before */
	w->inc_next = w->inc_end = 0;
	if (w->survey) {
		w->survey->at = NO_PASS;
		own_list_drop(w->survey);
		w->survey->resv_n = w->survey->resv_at = 0;
		w->survey->fresh = 0;
	}
	w->switches = 0;
	lane_give_back(s, w->lane, false); /* a dead owner's reserved */
	chunk_none(w);
	if (chunk_newest(s, w->lane, CHUNK_IN_OPEN, &i, &word)) {
		/* other OPEN chunks of ours (damage) go to the history */
		unsigned j;
		uint64_t other;
		uint64_t newest = chunk_base(f, word);
		for (unsigned guard = f->chunk_count;
		     guard && shmlog__chunk_find(s, w->lane,
						 newest - SHMLOG__LANE_REACH,
						 newest - 1, CHUNK_IN_OPEN, &j,
						 &other);
		     guard--) {
			uint64_t live = chunk_id(other) | CHUNK_LIVE;
			atomic_compare_exchange_strong(seg_chunk(s, j), &other,
						       live);
		}
	} else if (!chunk_newest(s, w->lane, CHUNK_IN_LIVE, &i, &word) ||
		   head - chunk_base(f, word) > f->chunk_size) {
		return w->head; /* nothing to resume in */
	} else {
		uint64_t open = chunk_id(word) | CHUNK_OPEN;
		if (!atomic_compare_exchange_strong(seg_chunk(s, i), &word,
						    open))
			return w->head; /* taken meanwhile */
		word = open;
	}
	chunk_install(s, w, i, word);
	if (head - w->cbase > f->chunk_size || (head & (REC_ALIGN - 1))) {
		/* died after taking the chunk, before its head moved in */
		w->head = w->cbase;
		atomic_store_explicit(&w->ctl->head, w->head,
				      memory_order_release);
	}
	if (reserve - w->head > w->cend - w->head)
		reserve = w->head; /* not a reservation in this chunk */
	return reserve;
}

bool shmlog__lane_claim(const struct shmlog__seg *s, unsigned lane,
			uint64_t me, bool steal_dead, struct shmlog__wlane *w)
{
	const struct shmlog__fixed *f = &s->fixed;
	struct shmlog__lane *ctl = seg_lane(s, lane);
	uint64_t owner = atomic_load_explicit(&ctl->owner, memory_order_relaxed);

	/* Liveness is a lock (owner.c), never the pid in the owner word. */
	if (owner != 0 && !steal_dead)
		return false;
	if (lane >= shmlog__lanes_exclusive(f)) {
		/* a shared lane, lent for one record: the word names the
		 * borrower's slot, whose lock says whether it lives; the CAS
		 * serialises claimers */
		if (owner != 0 && !shmlog__borrower_dead(w->h, owner))
			return false;
		if (!atomic_compare_exchange_strong_explicit(
			    &ctl->owner, &owner, me, memory_order_acquire,
			    memory_order_relaxed))
			return false;
	} else {
		/* the lane's own lock: taking it serialises claimers, and
		 * succeeds only if no live process holds the lane (nor a live
		 * thread of ours) */
		if (!shmlog__lane_lock(w->h, lane, w->tid))
			return false;
		owner = atomic_load_explicit(&ctl->owner,
					     memory_order_relaxed);
		/* Ours alone now: a non-zero word names a dead owner (or is
		 * junk). Without OFD locks nothing says it is dead. */
		if ((owner != 0 && w->h->no_ofd) ||
		    !atomic_compare_exchange_strong_explicit(
			    &ctl->owner, &owner, me, memory_order_acquire,
			    memory_order_relaxed)) {
			shmlog__lane_unlock(w->h, lane);
			return false;
		}
	}
	atomic_fetch_add_explicit(&ctl->claims, 1, memory_order_relaxed);

	w->ctl = ctl;
	w->lane = lane;
	/* What the lane holds now is a departed writer's: every incarnation
	 * handed out so far is at most the epoch (chunk_inc()), and ours
	 * will be above it (a shared lane, lent for one record, has no
	 * writer of its own to tell apart) */
	w->claim_mark = 0;
	if (lane < shmlog__lanes_exclusive(f)) {
		uint64_t e = atomic_load_explicit(&seg_space(s)->epoch,
						  memory_order_relaxed) + 1;
		w->claim_mark = (e & CHUNK_INC_MASK) << CHUNK_INC_SHIFT | 1;
		atomic_store_explicit(&ctl->claim_mark, w->claim_mark,
				      memory_order_relaxed);
	}
	uint64_t head = atomic_load_explicit(&ctl->head, memory_order_relaxed);
	uint64_t reserve =
		atomic_load_explicit(&ctl->reserve, memory_order_relaxed);
	uint64_t last = atomic_load_explicit(&ctl->next_seq,
					     memory_order_relaxed) - 1;
	reserve = lane_resume(s, w, head, reserve);
	TESTPOINT(7);
	/* A lane given back cleanly resumes from next_seq; one taken from a
	 * dead owner is walked, for next_seq may lag its last record. */
	if (owner && w->chunk != CHUNK_NONE) {
		uint64_t walked = last;
		if (lane_last_seq(f, w, &walked)) {
			if ((int64_t)(walked - last) > 0)
				last = walked;
		} else {
			/* nonsense: the chunk goes to the history as it is
			 * (readers step over its damage) and the lane goes
			 * on in a new one, numbering after the newest seen */
			if ((int64_t)(walked - last) > 0)
				last = walked;
			chunk_close(s, w);
			reserve = w->head;
		}
	}
	w->seq = last + 1;
	if (owner)
		atomic_store_explicit(&ctl->next_seq, w->seq,
				      memory_order_relaxed);
	/* the dead writer stays named, as dead (a writer that keeps the
	 * lane names itself next: shmlog__ident_store()) */
	if (owner && lane < shmlog__lanes_exclusive(f))
		shmlog__ident_died(ctl);
	if (reserve != w->head)
		lane_repair(f, w, reserve);
	else
		atomic_store_explicit(&ctl->reserve, w->head,
				      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	return true;
}

void shmlog__lane_announce(struct shmlog__hdr *hdr, unsigned lane)
{
	atomic_store_explicit(&hdr->stats.last_released, lane + 1,
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&hdr->stats.releases, 1,
				  memory_order_relaxed);
}

void shmlog__lane_release(struct shmlog__wlane *w, bool announce)
{
	/* The chunk, then the word, then the lock: whoever takes the lock
	 * next finds the lane free, not abandoned. */
	chunk_close(&w->h->seg, w);
	lane_give_back(&w->h->seg, w->lane, false);
	if (w->survey)
		w->survey->resv_n = w->survey->resv_at = 0;
	atomic_store_explicit(&w->ctl->owner, 0, memory_order_release);
	shmlog__lane_unlock(w->h, w->lane);
	/* threads borrowing lanes watch this to try for one of their own */
	if (announce)
		shmlog__lane_announce(w->h->seg.hdr, w->lane);
}

void shmlog__reap_dead(struct shmlog *h, uint64_t me, uint32_t tid)
{
	const struct shmlog__seg *s = &h->seg;
	const struct shmlog__fixed *f = &s->fixed;
	bool holds[SHMLOG_LANES_MAX];
	memset(holds, 0, f->lane_count * sizeof(holds[0]));
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t d = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (chunk_held(f, d))
			holds[chunk_lane(d)] = true;
	}
	for (unsigned l = 0; l < f->lane_count; l++) {
		if (!holds[l] || !atomic_load_explicit(&seg_lane(s, l)->owner,
						       memory_order_relaxed))
			continue;
		struct shmlog__wlane tmp;
		memset(&tmp, 0, sizeof(tmp));
		tmp.h = h;
		tmp.tid = tid;
		/* succeeds only if its owner is dead: repairs, then frees */
		if (shmlog__lane_claim(s, l, me, true, &tmp))
			shmlog__lane_release(&tmp, true);
	}
}

/* ---- the record protocol, for readers (reader.c) -------------------- */

/* Copy @n bytes out of the segment. The writer may be rewriting them: the
 * copy is checked afterwards (shmlog__rec_recheck), never trusted before. */
__attribute__((no_sanitize("thread"))) void
shmlog__copy_out(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

int shmlog__rec_recheck(const struct shmlog__seg *s, unsigned chunk,
			uint64_t off, uint64_t word, uint64_t cid)
{
	atomic_thread_fence(memory_order_acquire); /* LMM(G) */
	uint64_t now = atomic_load_explicit(
		&rec_at(seg_chunk_data(s, chunk), off)->word,
		memory_order_relaxed); /* LMM(H) */
	uint64_t desc = atomic_load_explicit(seg_chunk(s, chunk),
					     memory_order_relaxed); /* LMM(J) */
	if (chunk_id(desc) != cid)
		return REC_CHUNK_GONE;
	return now == word ? REC_WHOLE : REC_REWRITTEN;
}

/* ---- what the buffer holds (shmlog_stat, shmlog info) ---------------- */

uint64_t shmlog__space_used(const struct shmlog__seg *s, uint64_t *per_lane)
{
	const struct shmlog__fixed *f = &s->fixed;
	uint64_t used = 0;
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (!chunk_valid(f, w))
			continue;
		uint64_t n = f->chunk_size;
		if (chunk_state(w) == CHUNK_OPEN) {
			uint64_t head = atomic_load_explicit(
				&seg_lane(s, chunk_lane(w))->head,
				memory_order_relaxed);
			uint64_t in = head - chunk_base(f, w);
			n = in <= f->chunk_size ? in : 0;
		}
		used += n;
		if (per_lane) {
			per_lane[chunk_lane(w)] += n;
			per_lane[f->lane_count + chunk_lane(w)]++;
		}
	}
	return used;
}

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

void shmlog__lane_close_chunks(const struct shmlog__seg *s, unsigned lane)
{
	lane_give_back(s, lane, true);
}

bool shmlog__lane_empty(const struct shmlog__seg *s, unsigned lane)
{
	unsigned i;
	uint64_t w;
	return !chunk_newest(s, lane, CHUNK_IN_LIVE | CHUNK_IN_OPEN, &i, &w);
}
