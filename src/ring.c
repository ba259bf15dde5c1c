/* SPDX-License-Identifier: MIT */
/*
 * The shmlog ring protocol: the segment, the records in a lane's chunks,
 * the steps of a write and of a read, the memory-ordering pairs between
 * them and what is trusted. The code here is the record checks, the
 * chunk table's searches and the record protocol readers follow to copy
 * records out (copy, check, re-check: shmlog__copy_out, shmlog__rec_recheck,
 * and shmlog__rec_check, inline in reader_proto.h). The rest of the
 * protocol lives with its code:
 *
 *   space.c  which chunk a writer takes (the space policy), the chunk
 *            switch, the append's slow path
 *   lane.c   who owns a lane (OFD locks), claims, repairs of a dead
 *            writer's lane, releases
 *   wake.c   followers and waking sleeping readers
 *   append.h the append itself, inline on the write path (steps 1-6)
 *
 * A reader's cursors and books (where it is in each lane, what it counted
 * lost) are reader.c's.
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
 * path; step 0 is shmlog__ring_append() in space.c):
 *   0. if pos + len runs past the OPEN chunk: chunk_switch (space.c)
 *   1. reserve = pos + len; release fence                   LMM(ring:C)
 *   2. record header, tag, message
 *   3. word = pos | COMMITTED (release)                     LMM(ring:D)
 *   4. head = pos + len (release)                           LMM(ring:E)
 *   5. next_seq = seq + 1
 *   6. if a reader sleeps, wake it (see below)              LMM(ring:W)
 *
 * The chunk switch (step 0), its steps a-f and their labels: space.c.
 *
 * Reader, one record at lpos in chunk c, whose word it read as id:
 *   1. h = head (acquire), pairs with LMM(ring:E): everything below h is
 *      published. Loaded again only when the cursor reaches the h it
 *      has (a follower: less often, "Following writers"): the line is
 *      the writer's, hot.                                   LMM(ring:F)
 *   2. copy the header, check word == lpos | state and the lengths, which
 *      must end inside the chunk and at or below h
 *   3. copy the body into private memory
 *   4. acquire fence, then read the record's word and c's descriptor
 *      word again                                       LMM(ring:G,H,J)
 *      pairs with LMM(ring:R): if the copy saw any byte a new owner of c wrote,
 *      the descriptor it re-reads names the new incarnation
 *   5. the copy is whole iff both are unchanged; otherwise c changed
 *      hands while we copied: go on in the lane's next chunk (a
 *      follower: its newest half). Losses are counted exactly by
 *      sequence gaps (they are "overwritten").
 *
 * Within one incarnation nothing is ever rewritten: a chunk's records are
 * appended once. So the descriptor word is a seqlock for the whole chunk,
 * and the record word names the record's place. Every path that gives
 * records up changes the descriptor word first (LMM(ring:Q,R)): a steal, the
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
 * Memory-barrier pairs
 * ===================================================================
 *
 * Every ordering point of the library, one label each, in one style:
 * LMM(area:letter), the same label at the call site, which says what it
 * relies on. Each entry: where, what it orders, what it pairs with, and
 * what the pair guarantees.
 *
 * The ring (a lane's records; steps above, space.c's switch):
 *   ring:C  append.h append_reserve(): reserve stored, release fence.
 *           Pairs with the claimer's lane lock (a full barrier, lane.c):
 *           a claimer sees the reservation of a writer that died in it.
 *   ring:D  append.h append_publish(): the record's word, release.
 *           Read through ring:F: what is below head is published.
 *   ring:E  append_publish() and space.c chunk_switch(): head, release.
 *           Pairs with ring:F: records (and the PAD ending a chunk) below
 *           the head a reader loaded are whole in its view.
 *   ring:F  reader_cursor.c, every load of a lane's head, acquire (and
 *           reader_raw.c's). Pairs with ring:E.
 *   ring:N  append_publish(), lane.c lane_repair(): next_seq, release,
 *           after head. Pairs with ring:P.
 *   ring:P  reader_cursor.c cursor_gone(): next_seq, acquire, then head
 *           again (ring:F). Pairs with ring:N: a next_seq seen with an
 *           unchanged head is no newer than that head, so the records
 *           counted gone are not counted again as a gap or as torn.
 *   ring:K  ring.h chunk_close(): the chunk's word OPEN -> LIVE, release
 *           (a CAS). Pairs with ring:Q: a taker sees the chunk's records
 *           complete before it rewrites them.
 *   ring:Q  space.c chunk_take(): the CAS that takes a chunk, acq_rel.
 *           Pairs with ring:K (acquire side) and, with ring:R, with the
 *           readers' ring:G/J.
 *   ring:R  space.c chunk_take(): release fence after ring:Q, before any
 *           byte of the chunk is rewritten. Pairs with ring:G: a copy
 *           that saw a byte the new owner wrote re-reads the new word.
 *   ring:G  ring.c shmlog__rec_recheck(): acquire fence after the copy.
 *   ring:H  the record's word again, relaxed, after ring:G.
 *   ring:J  the chunk's word again, relaxed, after ring:G: changed iff
 *           the chunk changed hands during the copy (with ring:R).
 *   ring:W  append.h shmlog__append_wake_due(), write_path.h
 *           wake_fence(): the writer's side of Dekker's pattern, a
 *           compiler barrier (a full fence without membarrier). Pairs
 *           with ring:S: the writer sees the sleepers flag, or the
 *           reader sees the head (wake.c, "Waking readers").
 *   ring:S  reader_wait.c set_sleep(): the sleepers flags, then a
 *           membarrier (the full barrier on every writer's CPU), then a
 *           look at every head. Pairs with ring:W.
 *   ring:U  reader_wait.c reader_sleeps(): the futex word, acquire, before
 *           the sleepers flag; the value goes to FUTEX_WAIT, which
 *           returns at once if it changed. Pairs with ring:V.
 *   ring:V  wake.c shmlog__ring_wake(): the futex word bumped, release,
 *           after the head it announces. Pairs with ring:U: a reader that
 *           sees the bump sees the head.
 *
 * Lane idents (lane.c, a seqlock over the ident's fields):
 *   ident:A  odd gen, then a release fence, before the fields.
 *   ident:B  the fields, then the even gen, release.
 *   ident:C  reader: gen, acquire, before the fields. Pairs with B.
 *   ident:D  reader: acquire fence after the fields, gen again. Pairs
 *            with A: fields of a writer caught midway change gen.
 *
 * Clock anchors (clock.c, a seqlock per anchor):
 *   clock:A  anchor_publish(): odd seq (relaxed), ordered before every
 *            field by the fields' release stores.
 *   clock:B  anchor_publish(): the fields, release, then the even seq
 *            and done_raw, release.
 *   clock:C  anchor_copy(): seq, then every field, acquire each: the
 *            second look at seq comes after every field. Pairs with B.
 *   clock:D  anchor_copy(): seq again. Pairs with A: a field of a
 *            publication under way shows as a changed or odd seq.
 *   clock:E  anchor_publish(): the anchor count, a seq_cst CAS, before
 *            the slot's odd seq (A): one publisher per round.
 *   clock:F  shmlog__clockmap_read(): the count, acquire, before every
 *            slot's seq. Pairs with E: the newest round's slot, not yet
 *            whole, is seen pending (clock:D) and the map read again.
 *
 * The filter (filter.c; the spec is a seqlock on config.filter_gen):
 *   filter:A  spec_lock(): gen to odd by a seq_cst CAS, before the spec.
 *   filter:B  shmlog_set_filter(): the spec, then the even gen, release.
 *   filter:C  spec_read(): gen, acquire, before the spec. Pairs with B.
 *   filter:D  spec_read(): acquire fence after the copy, gen again.
 *             Pairs with A: a spec copied while being set is copied again.
 *   filter:E  filter_publish(): the compiled filter and the handle's
 *             filter word, release. Pairs with F: a writer that sees the
 *             word sees the filter it was made from.
 *   filter:F  shmlog__write_wanted_slow(): the word and the filter,
 *             acquire. The writers' fast path
 *             (write_path.h write_wanted()) loads gen and the word
 *             relaxed: the word holds its generation and both bounds in
 *             one atomic, and nothing is read through it.
 *   filter:G  spec_snapshot(), shmlog__write_wanted_slow(): gen, acquire,
 *             to decide whether to copy the spec again. Pairs with B;
 *             nothing is read through it: the copy runs under C and D.
 *
 * The reader's clear mark (shmlog_clear(): segment.c, reader.c):
 *   config:A  clear_mark(): clear_raw, release.
 *   config:B  the reader, once per shmlog_reader_next() and at its
 *             start: clear_raw, acquire. Pairs with A. One word, nothing
 *             read through it: records stamped before it are hidden.
 *
 * Call sites' plans (fmtarg_table.c, deferred.h):
 *   site:A  the site's key, release, after its plan and the table's
 *           entry are written. Pairs with B.
 *   site:B  shmlog__defer_site_ready(): the key, acquire: the plan and
 *           the entry it names are there.
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
#include <stddef.h>
#include <string.h>

#include "internal.h"

#ifdef SHMLOG_TESTPOINTS
void (*shmlog__testpoint_hook)(int point);
#endif

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
bool shmlog__chunk_newest(const struct shmlog__seg *s, unsigned lane,
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


/* ---- the record protocol, for readers (reader_cursor.c) ------------- */

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
	/* LMM(ring:G) the copy before the second look at both words; pairs
	 * with a taker's LMM(ring:R): a copy that saw its bytes sees its
	 * word */
	atomic_thread_fence(memory_order_acquire);
	uint64_t now = atomic_load_explicit(
		&rec_at(seg_chunk_data(s, chunk), off)->word,
		memory_order_relaxed); /* LMM(ring:H) */
	uint64_t desc = atomic_load_explicit(seg_chunk(s, chunk),
					     memory_order_relaxed); /* LMM(ring:J) */
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

void shmlog__lane_close_chunks(const struct shmlog__seg *s, unsigned lane)
{
	shmlog__lane_give_back(s, lane, true);
}

bool shmlog__lane_empty(const struct shmlog__seg *s, unsigned lane)
{
	unsigned i;
	uint64_t w;
	return !shmlog__chunk_newest(s, lane, CHUNK_IN_LIVE | CHUNK_IN_OPEN, &i, &w);
}

