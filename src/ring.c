/* SPDX-License-Identifier: MIT */
/*
 * The shmlog ring protocol: how records are written into a lane, how a lane
 * left by a dead writer is repaired, and how readers copy records out.
 *
 * ===================================================================
 * Segment layout (all offsets from the start of the file)
 * ===================================================================
 *
 *   0      page 0: struct shmlog__hdr
 *            line 0-2  fixed header: magic, version, sizes, clock
 *                      calibration, FNV-1a checksum (immutable)
 *            line 4    notify: futex word, sleepers flag (readers write)
 *            line 5    stats: dropped writes (rare)
 *            line 6    config: filter generation, clear mark (read-mostly)
 *            8..       filter spec text
 *            2560..    clock anchors (clock.c: stable wall-clock times)
 *   4096   lane table: lane_count x struct shmlog__lane (128 bytes each)
 *            line 0    owner (pid<<32|tid: who, not whether alive),
 *                      claims, torn                        (claim/release)
 *            line 1    tail, reserve, head, next_seq       (owner, per record)
 *   data   lane_count x lane_size bytes of records, page aligned
 *
 * The file is built under a temporary name and link(2)ed into place, so a
 * segment with a name is always completely initialised.
 *
 * ===================================================================
 * Lanes and fairness
 * ===================================================================
 *
 * Each writing thread owns one lane while it logs (it claims a free lane on
 * its first write and releases it when it exits or closes the handle). A
 * lane has exactly one writer at a time, so the write path needs no atomic
 * read-modify-write at all: plain stores, ordered by release semantics.
 * Overwriting happens only inside a lane: a writer that floods the buffer
 * overwrites its own oldest records and never anybody else's. The
 * guarantee, per writer: its most recent lane_size bytes of records
 * survive whatever other writers do.
 *
 * Positions are 64-bit logical byte counts ("lpos"); byte lpos lives at
 * (lpos - initial_pos) % lane_size. initial_pos starts close to 2^64 so the
 * wrap of the position counter is exercised from the first lap on. All
 * comparisons of positions are by unsigned difference.
 *
 * ===================================================================
 * Records
 * ===================================================================
 *
 * A record is a 40-byte struct shmlog__rec, the tag, the message, padded to
 * 8 bytes. Its first word is (lpos | state): a record is only taken as what
 * it says when its word names the very position it was found at.
 *
 *   COMMITTED  complete; safe to copy (and re-check, below)
 *   PAD        filler to the end of the lane when a record would not fit
 *   TORN       left unfinished by a writer that died; written by the writer
 *              that claimed the lane afterwards, so readers can skip it
 *
 * Lane positions, all advanced by the owner only:
 *
 *   tail <= head <= reserve,  reserve - tail <= lane_size
 *
 *   tail      the oldest record still whole. A writer about to overwrite
 *             bytes walks tail forward over the records it destroys.
 *   reserve   end of the bytes being written now (a claimer repairs
 *             [head, reserve) if the writer died there).
 *   head      end of the newest committed record: everything in
 *             [tail, head) is a chain of COMMITTED/PAD/TORN records.
 *
 * Writer (owner of the lane), one record:
 *   1. walk tail past the records the new one will overwrite;
 *      tail = new tail                                           LMM(A)
 *      release fence                                             LMM(B)
 *   2. void (zero) the word of each record walked over, and the word
 *      where the new record will start
 *   3. reserve = end of the new record (and of a PAD before it)
 *      release fence                                             LMM(C)
 *   4. write PAD header if needed, record header, tag, message
 *   5. word = lpos | COMMITTED (release)                         LMM(D)
 *   6. head = end (release)                                      LMM(E)
 *   7. next_seq = seq + 1
 *   8. if a reader sleeps, wake it (see below)                   LMM(W)
 *
 * Reader, one record at lpos:
 *   1. h = head (acquire), pairs with LMM(E): everything below h is
 *      published, words included. Loaded again only when the cursor
 *      reaches the h it has: the line is the writer's, hot.      LMM(F)
 *   2. copy the header, check word == lpos | state and the lengths
 *   3. copy the body into private memory
 *   4. acquire fence, then read the record's word again       LMM(G,H)
 *      pairs with LMM(C): if the copy saw any byte written over the
 *      record, the word it re-reads is the voided one
 *   5. the copy is whole iff the word is unchanged; otherwise the record
 *      was overwritten while we copied: resume at tail. Only a whole copy
 *      is judged. A word that was not a record at step 2 is told apart
 *      (overwritten, or a damaged lane) by tail, which moved past it
 *      first (LMM(A,B)). Losses are counted exactly by sequence gaps.
 *
 * This is a seqlock per record: the writer voids a record's word before it
 * destroys any of its bytes, the reader checks after copying that the word
 * it started from is still there. It needs nothing but the record itself,
 * so a reader that keeps up does not touch the writer's hot line for every
 * record, and a process that tampers with the lane's positions can make a
 * reader skip records, never return a torn one. Invariant: outside
 * [tail, reserve) no word names its own position. Every path that gives
 * records up voids them first: the tail walk (step 2, a PAD's bytes too),
 * a claim of a dead writer's lane (what lies behind tail and past reserve:
 * it may have died before voiding), a reset of a lane that makes no sense
 * (the whole lane). And step 2 voids the word where the new record will
 * start: a lap is written in order, so an old record a new one overwrites
 * has lost its word first even if damage (a rewritten length) made the
 * walk pass it. A dead writer's record is repaired only after the words
 * under it were voided: step 2 precedes 3.
 *
 * Progress. A reader's cursor only moves forward: to the end of a record
 * it checked, to tail when tail is ahead of it, or past damage. It reads
 * only records that end at or below a head loaded with acquire, and takes
 * a record only if it is numbered last + 1 right after the record before
 * it (the numbers of a lane follow its positions, across claims and
 * repairs), or above every number taken after a jump. Damage (a word, a
 * length or a header no writer makes, a PAD inside the chain, a record out
 * of sequence) is stepped over by one scan, bounded by the lane size, for
 * the next word that names its own position; the records lost there count
 * as torn, the place once (corrupt). A lane the cursor cannot get past
 * (its head behind the cursor or off a record boundary) is left alone
 * until its head, tail or the word at the cursor change. So a lane of N
 * bytes yields at most N/8 records per lap of its writer, whatever the
 * file says, and a damaged lane costs a sleeping reader nothing.
 *
 * ===================================================================
 * Dead writers
 * ===================================================================
 *
 * A writer killed at any instruction leaves its lane's owner word naming a
 * dead thread. Nobody waits for it: other writers have lanes of their own.
 *
 * Whether an owner is alive is never judged from the pid and tid in its
 * word (they mean nothing, or another process, in another pid namespace,
 * and outlive their process): a lane is held by the open file description
 * that holds the lane's OFD lock, one byte at 2^62 + lane in the buffer's
 * file, which the kernel drops when the owner's process dies, however and
 * wherever. A claimer takes the lock first (that serialises claimers across
 * processes), then finds the word set only if its owner died. Within a
 * process, whose threads share the description, the handle's table of
 * holders and tgkill() in our own namespace tell threads apart. Robust
 * futexes were rejected: glibc owns each thread's only robust list, and a
 * robust mutex in the segment would let whoever may write the file steer
 * glibc's list-unlinking stores in the writer. All of it is in owner.c and
 * docs/DESIGN.md ("Lane ownership").
 *
 * The next writer to claim the lane (shmlog__lane_claim) first walks the
 * chain [tail, head) to learn the newest sequence number (next_seq lags by
 * one if the writer died between steps 5 and 6), voids what lies outside
 * [tail, reserve), then finds one of:
 *   - reserve == head: the writer died between records; nothing to do.
 *   - reserve != head: the writer died inside steps 2-6. A reservation
 *     that runs past the lane's end is a PAD to the end (written, or
 *     written now) and the record at offset 0. A record whose word says
 *     COMMITTED (or TORN: a claimer died repairing it) with the next seq
 *     is published as it is; anything else is marked TORN over
 *     [lpos, reserve) with the next seq (its header reads as no writer's:
 *     priority 0), and the lane's torn counter is bumped, once. Readers
 *     skip TORN records and count them. A reservation no writer could
 *     have made is forgotten; the lane's history is kept.
 * Whatever a lane holds is validated on claim: a lane whose positions do
 * not make sense (a corrupted or hostile segment) is voided and started
 * afresh after its newest byte, numbering on after its newest record.
 *
 * ===================================================================
 * Waking readers
 * ===================================================================
 *
 * A reader that found nothing new watches the heads for up to 20 us (a
 * steady writer commits again within that: no sleep, no wake-up), then sets
 * notify.sleepers, issues
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), checks every lane's head
 * once more and only then sleeps on notify.futex. A writer, after storing
 * head, reads notify.sleepers (a line written only when readers go to
 * sleep, so it stays shared in every writer's cache) and, only if set,
 * clears it, bumps the futex word and calls FUTEX_WAKE. The membarrier
 * gives the reader's side the full barrier that Dekker's pattern needs, so
 * the writer needs only a compiler barrier: either the writer sees the
 * flag, or the reader sees the new head (LMM(W) pairs with the reader's
 * membarrier). Where membarrier is not available, writers issue a full
 * fence instead. A reader killed while asleep leaves the flag set: the next
 * writer clears it with one futex call, and that is the whole cost.
 *
 * ===================================================================
 * Trust
 * ===================================================================
 *
 * Anyone who may write the file may write anything into it. Readers
 * therefore copy before they look, check every position, offset and length
 * against the mapping, and bound every loop by the lane size. A writer
 * treats the records it walks over when advancing tail the same way: it
 * steps over a record that does not check out to the next one that
 * proves itself, rather than follow a bad length. pid, tid and tag are
 * what the writer says they are.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#ifdef SHMLOG_TESTPOINTS
void (*shmlog__testpoint_hook)(int point);
#endif

/* ---- reading a record header (shared by writers' tail walk and readers) */

/* Is @r, found at @pos at offset @off, a well-formed record of some state?
 * Returns the state (0: not a record) and its length in *@len. Only the
 * first word of a PAD is read: a PAD always runs to the end of the lane and
 * may be shorter than a header. */
static unsigned rec_check(const struct shmlog__fixed *f,
			  const struct shmlog__rec *r, uint64_t pos,
			  uint32_t off, uint32_t *len)
{
	uint64_t word = atomic_load_explicit(&r->word, memory_order_relaxed);
	unsigned state = (unsigned)(word & REC_STATE_MASK);
	if ((word & ~(uint64_t)REC_STATE_MASK) != pos)
		return 0;
	if (state == REC_PAD) {
		*len = f->lane_size - off;
		return state;
	}
	if (state != REC_COMMITTED && state != REC_TORN)
		return 0;
	if (off + REC_HDR > f->lane_size)
		return 0;
	uint32_t l = r->len;
	if (l < REC_HDR || l % REC_ALIGN || l > f->max_record ||
	    l > f->lane_size - off)
		return 0;
	if (state == REC_COMMITTED &&
	    (uint32_t)r->tag_len + r->msg_len > l - REC_HDR)
		return 0;
	*len = l;
	return state;
}

/* ---- writer side ---------------------------------------------------- */

static struct shmlog__rec *rec_at(unsigned char *data, uint32_t off)
{
	return (struct shmlog__rec *)(void *)(data + off);
}

/* Length of the record at the tail of the writer's lane, or 0 if it does
 * not check out; *@pad set if it is a PAD. The writer's own records, but
 * shared memory: checked as a reader would (rec_check), inlined because it
 * runs once per record. */
static inline uint32_t tail_len(const struct shmlog__fixed *f,
				const unsigned char *data, uint64_t tail,
				uint32_t off, bool *pad)
{
	const struct shmlog__rec *r = rec_at((unsigned char *)data, off);
	uint64_t word = atomic_load_explicit(&r->word, memory_order_relaxed);
	if (SHMLOG_UNLIKELY((word & ~(uint64_t)REC_STATE_MASK) != tail))
		return 0;
	if ((word & REC_STATE_MASK) == REC_PAD) {
		*pad = true;
		return f->lane_size - off;
	}
	if (SHMLOG_UNLIKELY(off + REC_HDR > f->lane_size))
		return 0;
	uint32_t len = r->len;
	if (SHMLOG_UNLIKELY(len < REC_HDR || len % REC_ALIGN ||
			    len > f->lane_size - off))
		return 0;
	return len;
}

/* Void every word in the @n bytes from offset @off (at most the lane,
 * wrapping at its end) that names its own position, in any lap, as a
 * record's word would: whatever record starts there is then nothing to a
 * reader, before its bytes are reused. Rare paths only (damage, claims,
 * long walks): one load per 8 bytes. */
__attribute__((noinline, cold)) static void
lane_void_span(const struct shmlog__fixed *f, unsigned char *data, uint32_t off,
	       uint64_t n)
{
	if (n > f->lane_size)
		n = f->lane_size;
	for (uint64_t k = 0; k < n; k += REC_ALIGN) {
		_Atomic uint64_t *p = &rec_at(data, off)->word;
		uint64_t word = atomic_load_explicit(p, memory_order_relaxed);
		unsigned state = (unsigned)(word & REC_STATE_MASK);
		if (state >= REC_COMMITTED && state <= REC_TORN &&
		    seg_off(f, word & ~(uint64_t)REC_STATE_MASK) == off)
			atomic_store_explicit(p, 0, memory_order_relaxed);
		off += REC_ALIGN;
		if (off == f->lane_size)
			off = 0;
	}
}

/* The record at the writer's tail does not check out (a damaged lane): the
 * first position after it, up to @pos, where a record proves itself (its
 * word names it), or @pos. One pass, at most lane_size / 8 words. */
__attribute__((noinline, cold)) static uint64_t
lane_resync(const struct shmlog__fixed *f, const unsigned char *data,
	    uint64_t tail, uint64_t pos)
{
	bool pad;
	for (uint64_t p = tail + REC_ALIGN; p != pos && pos - p <= f->lane_size;
	     p += REC_ALIGN)
		if (tail_len(f, data, p, seg_off(f, p), &pad))
			return p;
	return pos;
}

/* Records a walk of the tail remembers, to void their words (step 2b)
 * without walking again; a longer walk (a big record over many small ones)
 * or one that met damage voids the whole stretch it passed. */
#define VOID_MAX 8

struct walked {
	unsigned n; /* records passed; > VOID_MAX: void the stretch */
	uint32_t off[VOID_MAX];
};

/* The walk passed bytes that were not a chain of records, or a PAD (which
 * damage may have put over records): void every word in the stretch. */
#define WALKED_DAMAGED (1u << 30)

/* Step 1: walk tail past every record that [.., end) overwrites. A record
 * that does not check out (damage) is stepped over to the next record that
 * proves itself (lane_resync), so that one bad word costs one record, not
 * the lane's history; everything the walk passed is voided in step 2b. */
static inline void lane_make_room(const struct shmlog__fixed *f,
				  struct shmlog__wlane *w, uint64_t pos,
				  uint32_t off, uint64_t end,
				  struct walked *walked)
{
	uint64_t tail = w->tail;
	uint32_t toff = w->tail_off;
	for (uint32_t guard = f->lane_size / REC_ALIGN + 1;
	     end - tail > f->lane_size; guard--) {
		bool pad = false;
		uint32_t len = tail_len(f, w->data, tail, toff, &pad);
		if (SHMLOG_UNLIKELY(!guard || tail == pos)) {
			tail = pos;
			toff = off;
			walked->n = WALKED_DAMAGED;
			break;
		}
		if (SHMLOG_UNLIKELY(!len)) {
			walked->n = WALKED_DAMAGED;
			tail = lane_resync(f, w->data, tail, pos);
			toff = seg_off(f, tail);
			continue;
		}
		if (SHMLOG_UNLIKELY(pad)) /* void its bytes too, below */
			walked->n = WALKED_DAMAGED;
		if (walked->n < VOID_MAX)
			walked->off[walked->n] = toff;
		walked->n++;
		tail += len;
		toff += len;
		if (toff == f->lane_size)
			toff = 0;
	}
	w->tail = tail;
	w->tail_off = toff;
}

/* Step 2b: void the word of every record the walk passed, before any byte
 * of them is overwritten. A reader that copied one of them re-reads its
 * word after the copy (LMM(H)): a torn copy is caught even if the lane's
 * positions were tampered with. Past a PAD (once a lap) or damage, every
 * word of the stretch walked is voided: a PAD that damage put in the
 * middle of the chain covers records of its own. */
static inline void lane_void_words(const struct shmlog__fixed *f,
				   struct shmlog__wlane *w, uint64_t from,
				   const struct walked *walked)
{
	if (SHMLOG_UNLIKELY(walked->n > VOID_MAX)) {
		lane_void_span(f, w->data, seg_off(f, from), w->tail - from);
		return;
	}
	for (unsigned i = 0; i < walked->n; i++)
		atomic_store_explicit(&rec_at(w->data, walked->off[i])->word, 0,
				      memory_order_relaxed);
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

_Static_assert(offsetof(struct shmlog__rec, len) == 32 &&
		       offsetof(struct shmlog__rec, tag_len) == 38,
	       "rec_meta() packs the header's word at offset 32");

void shmlog__ring_append(const struct shmlog__seg *s, struct shmlog__wlane *w,
			 uint64_t time, uint64_t meta, const char *tag,
			 const char *msg)
{
	const uint32_t lane_size = s->fixed.lane_size;
	struct shmlog__lane *ctl = w->ctl;
	uint32_t tag_len = META_TAG_LEN(meta), msg_len = META_MSG_LEN(meta);
	uint32_t len = (REC_HDR + tag_len + msg_len + REC_ALIGN - 1) &
		       ~(REC_ALIGN - 1);
	uint64_t pos = w->head, seq = w->seq;
	uint32_t off = w->head_off;
	uint32_t pad = off + len > lane_size ? lane_size - off : 0;
	uint64_t end = pos + pad + len;

	uint64_t old_tail = w->tail;
	struct walked walked;
	walked.n = 0;
	if (end - old_tail > lane_size) {
		lane_make_room(&s->fixed, w, pos, off, end, &walked);
		atomic_store_explicit(&ctl->tail, w->tail,
				      memory_order_relaxed); /* LMM(A) */
		atomic_thread_fence(memory_order_release); /* LMM(B) */
		TESTPOINT(10);
		lane_void_words(&s->fixed, w, old_tail, &walked);
	}
	/* Step 2c: void the word where the record starts, before its header
	 * goes there. With the bytes of a lap written in order, every old
	 * record this one overwrites then has lost its word first, whatever
	 * the walk above made of a damaged lane: either it starts here, or
	 * its word was overwritten by an earlier record of this lap. */
	atomic_store_explicit(&rec_at(w->data, pad ? 0 : off)->word, 0,
			      memory_order_relaxed);
	atomic_store_explicit(&ctl->reserve, end, memory_order_relaxed);
	atomic_thread_fence(memory_order_release); /* LMM(C) */
	TESTPOINT(1);

	unsigned char *data = w->data;
	if (SHMLOG_UNLIKELY(pad)) {
		struct shmlog__rec *p = rec_at(data, off);
		atomic_store_explicit(&p->word, pos | REC_PAD,
				      memory_order_relaxed);
		pos += pad;
		off = 0;
		TESTPOINT(2);
	}

	/* the header but its word, which commits the record (step 4) */
	struct shmlog__rec *r = rec_at(data, off);
	r->seq = seq;
	r->time = time;
	uint64_t ids = (uint64_t)w->tid << 32 | w->pid;
	memcpy(&r->pid, &ids, sizeof(ids));
	meta |= len;
	memcpy(&r->len, &meta, sizeof(meta));
	char *body = (char *)(r + 1);
	memcpy(body, tag, tag_len);
	TESTPOINT(3);
	memcpy(body + tag_len, msg, msg_len);
	TESTPOINT(4);
	atomic_store_explicit(&r->word, pos | REC_COMMITTED,
			      memory_order_release); /* LMM(D) */
	TESTPOINT(5);
	atomic_store_explicit(&ctl->head, end, memory_order_release); /* LMM(E) */
	TESTPOINT(6);
	atomic_store_explicit(&ctl->next_seq, seq + 1, memory_order_relaxed);

	off += len;
	w->head = end;
	w->head_off = off == lane_size ? 0 : off;
	w->seq = seq + 1;
}

/* ---- claiming and repairing a lane ------------------------------------ */

/* Are a lane's published positions consistent? */
static bool lane_sane(const struct shmlog__fixed *f, uint64_t tail,
		      uint64_t head, uint64_t reserve)
{
	if ((tail | head | reserve) & (REC_ALIGN - 1))
		return false;
	if (head - tail > f->lane_size || reserve - tail > f->lane_size)
		return false;
	if (reserve - head > f->lane_size)
		return false;
	/* tail and head must sit on record boundaries of this layout */
	return true;
}

/* The owner died inside a write: publish or mark torn what it left in
 * [head, reserve). A reservation that runs past the lane's end is a PAD to
 * the end and the record at offset 0 (ring_append wrote or was about to
 * write both). A reservation no writer could have made (damage) is given
 * up, the lane's history kept. Only called with the lane's ownership held;
 * whatever the dead writer had walked over was voided before it stored
 * reserve (or is voided by the claim, lane_void_free). */
static void lane_repair(const struct shmlog__fixed *f, struct shmlog__wlane *w,
			uint64_t reserve)
{
	struct shmlog__lane *ctl = w->ctl;
	uint64_t pos = w->head, len = reserve - pos;
	uint32_t off = w->head_off, pad = 0;
	if (len <= f->lane_size && off + len > f->lane_size) {
		pad = f->lane_size - off;
		len -= pad;
	}
	uint32_t roff = pad ? 0 : off;
	if (len < REC_HDR || len > f->max_record || len % REC_ALIGN ||
	    roff + len > f->lane_size) {
		/* nonsense: keep what the lane holds, forget the reservation */
		atomic_store_explicit(&ctl->reserve, pos, memory_order_relaxed);
		return;
	}
	TESTPOINT(8);
	if (pad) {
		atomic_store_explicit(&rec_at(w->data, off)->word, pos | REC_PAD,
				      memory_order_relaxed);
		pos += pad;
	}
	struct shmlog__rec *r = rec_at(w->data, roff);
	uint32_t rlen;
	unsigned state = rec_check(f, r, pos, roff, &rlen);
	if (state && state != REC_PAD && rlen == len && r->seq == w->seq) {
		/* died after the commit: the record is whole; or a claimer
		 * died after marking it torn: counted already */
		w->seq++;
	} else {
		/* the header reads as no writer's (priority 0): a TORN
		 * record flipped to COMMITTED is still not shown */
		atomic_store_explicit(&r->word, 0, memory_order_relaxed);
		memset((char *)r + sizeof(r->word), 0,
		       REC_HDR - sizeof(r->word));
		r->seq = w->seq++;
		r->len = (uint16_t)len;
		atomic_store_explicit(&r->word, pos | REC_TORN,
				      memory_order_release);
		atomic_fetch_add_explicit(&ctl->torn, 1, memory_order_relaxed);
	}
	TESTPOINT(9);
	w->head = reserve;
	w->head_off = seg_off(f, reserve);
	atomic_store_explicit(&ctl->head, reserve, memory_order_release);
	atomic_store_explicit(&ctl->next_seq, w->seq, memory_order_relaxed);
}

/* A lane taken from a dead owner: void what may be left of records behind
 * tail (the owner may have died while voiding the records it walked over,
 * step 2) and beyond the reservation, before any byte there is reused. */
static void lane_void_free(const struct shmlog__fixed *f,
			   struct shmlog__wlane *w, uint64_t reserve)
{
	uint64_t n = w->tail + f->lane_size - reserve;
	lane_void_span(f, w->data, seg_off(f, reserve), n);
}

/* Walk the committed chain [tail, head) of a lane just claimed: the newest
 * record's seq tells where numbering resumes (next_seq may lag by one when
 * the last owner died between its last two stores). false if the chain is
 * broken (corruption). */
static bool lane_last_seq(const struct shmlog__fixed *f,
			  const struct shmlog__wlane *w, uint64_t *last)
{
	uint64_t pos = w->tail;
	uint32_t off = w->tail_off;
	for (uint32_t guard = f->lane_size / REC_ALIGN + 1; pos != w->head;) {
		struct shmlog__rec *r = rec_at(w->data, off);
		uint32_t len;
		unsigned state = rec_check(f, r, pos, off, &len);
		if (!state || !guard-- || w->head - pos < len)
			return false;
		if (state != REC_PAD)
			*last = r->seq;
		pos += len;
		off = off + len == f->lane_size ? 0 : off + len;
	}
	return true;
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
	w->data = seg_data(s, lane);
	w->lane = lane;
	uint64_t tail = atomic_load_explicit(&ctl->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&ctl->head, memory_order_relaxed);
	uint64_t reserve =
		atomic_load_explicit(&ctl->reserve, memory_order_relaxed);
	uint64_t last = atomic_load_explicit(&ctl->next_seq,
					     memory_order_relaxed) - 1;
	w->tail = tail;
	w->tail_off = seg_off(f, tail);
	w->head = head;
	w->head_off = seg_off(f, head);
	/* A lane given back cleanly resumes from next_seq; one taken from a
	 * dead owner is walked, for next_seq may lag its last record. */
	bool broken = !lane_sane(f, tail, head, reserve) ||
		      (owner && !lane_last_seq(f, w, &last));
	TESTPOINT(7);
	if (broken) {
		/* nonsense: start the lane afresh after its newest byte, its
		 * records voided first (a reader copying one must not take
		 * the new bytes for its own), numbering on after the newest
		 * record seen */
		uint64_t hint = atomic_load_explicit(&ctl->next_seq,
						     memory_order_relaxed) - 1;
		if ((int64_t)(hint - last) > 0)
			last = hint;
		tail = head = reserve =
			((int64_t)(reserve - head) > 0 ? reserve : head) &
			~(uint64_t)(REC_ALIGN - 1);
		lane_void_span(f, w->data, 0, f->lane_size);
		w->tail = w->head = tail;
		w->tail_off = w->head_off = seg_off(f, tail);
		atomic_store_explicit(&ctl->tail, tail, memory_order_relaxed);
		atomic_store_explicit(&ctl->reserve, tail, memory_order_relaxed);
		atomic_store_explicit(&ctl->head, tail, memory_order_release);
	} else if (owner) {
		lane_void_free(f, w, reserve);
	}
	w->seq = last + 1;
	if (owner)
		atomic_store_explicit(&ctl->next_seq, w->seq,
				      memory_order_relaxed);
	if (reserve != head)
		lane_repair(f, w, reserve);
	atomic_thread_fence(memory_order_release); /* voids before new bytes */
	return true;
}

void shmlog__lane_release(struct shmlog__wlane *w, bool announce)
{
	/* The word before the lock: whoever takes the lock next finds the
	 * lane free, not abandoned. */
	atomic_store_explicit(&w->ctl->owner, 0, memory_order_release);
	shmlog__lane_unlock(w->h, w->lane);
	/* threads borrowing lanes watch this to try for one of their own */
	if (announce)
		atomic_fetch_add_explicit(&w->h->seg.hdr->stats.releases, 1,
					  memory_order_relaxed);
}

/* ---- reader side ---------------------------------------------------- */

/* Copy @n bytes out of the segment. The writer may be rewriting them: the
 * copy is checked afterwards (LMM(G,H)), never trusted before. */
__attribute__((no_sanitize("thread"))) static void
copy_out(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

/* Where a reader starts on a lane it has not looked at yet: the lane's
 * oldest record, or its head if tail makes no sense. */
static void cursor_begin(const struct shmlog__fixed *f,
			 const struct shmlog__lane *ctl, struct shmlog__rlane *c)
{
	uint64_t head = c->head_seen =
		atomic_load_explicit(&ctl->head, memory_order_acquire); /* LMM(F) */
	uint64_t tail = atomic_load_explicit(&ctl->tail, memory_order_relaxed);
	if ((tail & (REC_ALIGN - 1)) || head - tail > f->lane_size)
		tail = head;
	c->pos = tail;
	c->next_seq = f->initial_seq;
	c->seq_known = true;
	c->begun = true;
}

/* The writer lapped the cursor: it moved tail past the cursor before it
 * voided or overwrote anything there (LMM(A,B)). Move the cursor forward
 * to tail; false if tail is not ahead of it (or makes no sense). */
static bool cursor_to_tail(const struct shmlog__fixed *f,
			   const struct shmlog__lane *ctl,
			   struct shmlog__rlane *c)
{
	(void)f;
	/* tail first: the head loaded after it is at or past it (a writer
	 * stores tail before head), however far the writer got between */
	uint64_t tail = atomic_load_explicit(&ctl->tail, memory_order_relaxed);
	uint64_t head = c->head_seen =
		atomic_load_explicit(&ctl->head, memory_order_acquire);
	if ((tail & (REC_ALIGN - 1)) || (int64_t)(head - tail) < 0 ||
	    (int64_t)(tail - c->pos) <= 0)
		return false;
	c->pos = tail;
	return true;
}

/* The cursor is not in [head - lane_size, head): the writer lapped it, or
 * the lane's positions were damaged. Move it forward only: to tail, or to
 * head if tail makes no sense. false if the cursor cannot move forward (it
 * is ahead of head, or head is not aligned). */
static bool cursor_catch_up(const struct shmlog__fixed *f,
			    const struct shmlog__lane *ctl,
			    struct shmlog__rlane *c, uint64_t head)
{
	if (cursor_to_tail(f, ctl, c))
		return true;
	if (!(head & (REC_ALIGN - 1)) && (int64_t)(head - c->pos) > 0) {
		c->pos = head;
		return true;
	}
	return false;
}

/* What a damaged lane looked like when the reader gave up on it: it reads
 * it again only once one of these changed (a writer wrote on). */
static void lane_fingerprint(const struct shmlog__fixed *f,
			     const struct shmlog__lane *ctl,
			     const unsigned char *data, uint64_t pos,
			     uint64_t fp[3])
{
	fp[0] = atomic_load_explicit(&ctl->head, memory_order_acquire);
	fp[1] = atomic_load_explicit(&ctl->tail, memory_order_relaxed);
	fp[2] = pos & (REC_ALIGN - 1)
			? 0
			: atomic_load_explicit(
				  &((const struct shmlog__rec *)(const void *)(data +
									       seg_off(f, pos)))
					   ->word,
				  memory_order_relaxed);
}

static void cursor_stop(const struct shmlog__fixed *f,
			const struct shmlog__lane *ctl,
			const unsigned char *data, struct shmlog__rlane *c)
{
	if (!c->damaged)
		c->corrupt++;
	c->damaged = true;
	lane_fingerprint(f, ctl, data, c->pos, c->fp);
}

static bool lane_changed(const struct shmlog__fixed *f,
			 const struct shmlog__lane *ctl,
			 const unsigned char *data,
			 const struct shmlog__rlane *c)
{
	uint64_t fp[3];
	lane_fingerprint(f, ctl, data, c->pos, fp);
	return fp[0] != c->fp[0] || fp[1] != c->fp[1] || fp[2] != c->fp[2];
}

/* The first record in [@from, @head) that proves itself: its word names
 * its own position, its header checks out and it ends by @head. One pass,
 * at most lane_size / 8 words. */
static bool lane_find_record(const struct shmlog__fixed *f,
			     const unsigned char *data, uint64_t from,
			     uint64_t head, uint64_t *at)
{
	if (from & (REC_ALIGN - 1))
		return false;
	for (uint64_t pos = from; pos != head && head - pos <= f->lane_size;
	     pos += REC_ALIGN) {
		uint32_t off = seg_off(f, pos), len;
		struct shmlog__rec r;
		uint32_t hlen = f->lane_size - off < REC_HDR ? f->lane_size - off
							     : REC_HDR;
		memset(&r, 0, sizeof(r));
		copy_out(&r, data + off, hlen);
		if (rec_check(f, &r, pos, off, &len) && len <= head - pos) {
			*at = pos;
			return true;
		}
	}
	return false;
}

/* The record at the cursor is damaged (its word, its length, its content
 * or its place in the chain): go on at the next record boundary that
 * proves itself, or at head. The cursor moves forward; the records lost on
 * the way are counted as torn (by the gap in sequence numbers at the next
 * record), the damage once. */
static void cursor_skip_damage(const struct shmlog__fixed *f,
			       const unsigned char *data,
			       struct shmlog__rlane *c, uint64_t head)
{
	uint64_t at;
	if (!lane_find_record(f, data, c->pos + REC_ALIGN, head, &at))
		at = head;
	c->damage_bytes += at - c->pos;
	c->pos = at;
	c->corrupt++;
	c->after_damage = true;
}

/* Does a record numbered @seq belong where the cursor is? Right after the
 * record read before it (the cursor got there by that record's length, over
 * PADs at most) it must be the very next number: records of a lane are
 * numbered in the order of their positions, across claims and repairs.
 * After a jump (lapped, past damage) it must only be newer than every
 * record read from the lane before. */
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

void shmlog__lane_skip_to_head(const struct shmlog__seg *s, unsigned lane,
			       struct shmlog__rlane *c)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	c->pos = c->head_seen =
		atomic_load_explicit(&ctl->head, memory_order_acquire);
	c->next_seq = atomic_load_explicit(&ctl->next_seq, memory_order_relaxed);
	c->seq_known = true;
	c->started = true;
	c->begun = true;
}

/* Could a writer of ours have committed this header? Anything else is a
 * damaged (or forged) record: a TORN header flipped to COMMITTED has
 * priority 0, for one. */
static bool rec_plausible(const struct shmlog__rec *r)
{
	return r->tag_len <= SHMLOG_TAG_MAX && r->prio >= SHMLOG_VERBOSE &&
	       r->prio <= SHMLOG_FATAL && !(r->flags & ~SHMLOG_REC_TRUNCATED) &&
	       !r->reserved;
}

bool shmlog__lane_has_new(const struct shmlog__seg *s, unsigned lane,
			  const struct shmlog__rlane *c)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	if (c->have)
		return true;
	if (c->damaged)
		return lane_changed(&s->fixed, ctl, seg_data(s, lane), c);
	return c->pos != atomic_load_explicit(&ctl->head, memory_order_acquire);
}

/* Progress: every step of the loop below moves the cursor strictly forward
 * or ends the call; a record is returned only if its sequence number is
 * above every one returned from the lane before. So a lane of N bytes
 * yields at most N/8 records per lap of its writer, whatever the file
 * says, and a lane found damaged in a way the cursor cannot get past (its
 * head behind the cursor or off a record boundary) is left alone until it
 * changes. */
bool shmlog__lane_fetch(const struct shmlog__seg *s, unsigned lane,
			struct shmlog__rlane *c, uint64_t clear_raw)
{
	const struct shmlog__fixed *f = &s->fixed;
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	const unsigned char *data = seg_data(s, lane);

	if (c->have)
		return true;
	if (c->damaged) {
		if (!lane_changed(f, ctl, data, c))
			return false;
		c->damaged = false;
	}
	if (!c->begun)
		cursor_begin(f, ctl, c); /* first look: its oldest record */
	for (uint32_t guard = f->lane_size / REC_ALIGN + 4; guard; guard--) {
		/* head is loaded again only when the cursor reaches the head
		 * last seen: the line it lives on is the writer's, written on
		 * every record, and each load of it costs the writer a miss */
		uint64_t head = c->head_seen;
		if (c->pos == head) {
			head = c->head_seen = atomic_load_explicit(
				&ctl->head, memory_order_acquire); /* LMM(F) */
			if (c->pos == head)
				return false;
		}
		if (head - c->pos > f->lane_size || (c->pos & (REC_ALIGN - 1))) {
			head = c->head_seen = atomic_load_explicit(
				&ctl->head, memory_order_acquire);
			if (head - c->pos <= f->lane_size &&
			    !(c->pos & (REC_ALIGN - 1)))
				continue;
			if (cursor_catch_up(f, ctl, c, head))
				continue; /* fell behind */
			cursor_stop(f, ctl, data, c); /* ahead of head */
			return false;
		}
		uint32_t off = seg_off(f, c->pos);
		uint32_t hlen = f->lane_size - off < REC_HDR
					? f->lane_size - off
					: REC_HDR;
		struct shmlog__rec r;
		memset(&r, 0, sizeof(r));
		copy_out(&r, data + off, hlen);
		uint32_t len = 0;
		unsigned state = rec_check(f, &r, c->pos, off, &len);
		if (state == REC_COMMITTED && rec_plausible(&r)) {
			/* tag and message, each NUL-terminated, ready to hand
			 * out: the reader's only copy */
			const unsigned char *src = data + off + REC_HDR;
			copy_out(c->body, src, r.tag_len);
			c->body[r.tag_len] = '\0';
			copy_out(c->body + r.tag_len + 1, src + r.tag_len,
				 r.msg_len);
			c->body[r.tag_len + 1 + r.msg_len] = '\0';
		}
		atomic_thread_fence(memory_order_acquire); /* LMM(G) */
		uint64_t word = atomic_load_explicit(
			&((const struct shmlog__rec *)(const void *)(data + off))
				 ->word,
			memory_order_relaxed); /* LMM(H) */
		if (word != atomic_load_explicit(&r.word, memory_order_relaxed)) {
			/* voided (or rewritten) while we copied: overwritten,
			 * and tail moved first (LMM(A,B)); else look again */
			cursor_to_tail(f, ctl, c);
			continue;
		}
		/* The copy is consistent: only now may it be judged. */
		if (state && len > head - c->pos) {
			/* only what lies below a head loaded with acquire
			 * is published: a record (or a PAD) running past it
			 * is not whole yet, or the lane is damaged */
			head = c->head_seen = atomic_load_explicit(
				&ctl->head, memory_order_acquire);
			if (head - c->pos > f->lane_size)
				continue;
			uint64_t at;
			if (len > head - c->pos) {
				/* a record boundary inside it: a PAD in the
				 * middle of the chain, a bad length */
				if (lane_find_record(f, data,
						     c->pos + REC_ALIGN, head,
						     &at)) {
					cursor_skip_damage(f, data, c, head);
					continue;
				}
				/* head is off a record boundary */
				cursor_stop(f, ctl, data, c);
				return false;
			}
		}
		if (!state) {
			/* Not a record: voided or overwritten before we looked
			 * (the writer moved tail past it first, LMM(A)), or,
			 * inside the published chain, a damaged lane: go on
			 * at the next record that proves itself. */
			if (!cursor_to_tail(f, ctl, c))
				cursor_skip_damage(f, data, c, head);
			continue;
		}
		if (state == REC_PAD) {
			if (c->chained == c->pos)
				c->chained += len;
			c->pos += len;
			continue;
		}
		if ((state == REC_COMMITTED && !rec_plausible(&r)) ||
		    !cursor_seq_fits(c, r.seq)) {
			/* no writer of ours made it, or it is out of place in
			 * the chain (a stale header brought back to life, a
			 * damaged one): its length is not to be trusted */
			cursor_skip_damage(f, data, c, head);
			continue;
		}
		c->pos += len;
		c->chained = c->pos;
		cursor_seq(c, r.seq);
		if (state == REC_TORN) {
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
