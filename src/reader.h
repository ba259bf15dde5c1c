/* SPDX-License-Identifier: MIT */
/*
 * A reader's insides, shared by the files that make it up:
 *  - reader_cursor.c: a cursor per lane, the record protocol of ring.c
 *    (copy, check, re-check) and the reader's books;
 *  - reader_wait.c: following writers, the waits on one reader and on
 *    several;
 *  - reader.c: the public reader API, the lanes merged in time order;
 *  - reader_raw.c: records as stored, in batches, for the archiver.
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
 *
 * Internal: no file outside the reader includes this header.
 */
#ifndef SHMLOG_READER_INTERNAL_H
#define SHMLOG_READER_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* A reader's cursor over one lane: where it is, and its books. */
struct shmlog__rlane {
	uint64_t pos;
	uint32_t chunk; /* the chunk pos is in, CHUNK_NONE: find it */
	uint64_t cid, cbase, cend; /* its chunk_id() and positions */
	uint64_t head_seen; /* the lane's head when last loaded */
	uint64_t head_prev; /* head_seen before that load */
	uint64_t looked_ns; /* a follower's last look at head (0: no follower) */
	uint32_t look_gap_ns; /* a follower's time between looks (0: least) */
	uint64_t fast_ns; /* its last look that found the lane written at
			   * full speed (0: none) */
	/* a follower overtaken by a writer at full speed (cursor_rest()):
	 * when it last went on reading the lane, its head then, and until
	 * when it leaves the lane alone (0: it does not) */
	uint64_t read_from_ns, read_from_head, rest_until_ns;
	bool no_rest; /* never rests: shmlog__reader_no_rest() */
	uint64_t next_seq;
	uint64_t last_seq; /* of the newest record taken (seq_seen) */
	uint64_t chained; /* end of that record (and of PADs after it) */
	bool begun; /* has looked at the lane (pos is meaningful) */
	bool started, seq_known, seq_seen, have;
	/* a dump (SHMLOG_READ_DUMP): the lane's next_seq at the first read,
	 * and whether a record at or past it was found (nothing more) */
	uint64_t end_seq;
	bool ended;
	bool after_damage; /* records lost before the next one were damaged */
	uint64_t damage_bytes; /* skipped as damaged since the last record */
	bool damaged; /* stuck on damage: read again when fp changes */
	uint64_t fp[3]; /* head, chunk and word at pos when it got stuck */
	uint64_t read, overwritten, torn, skipped;
	uint64_t corrupt; /* places the lane was found damaged */
	uint64_t lost_overwritten, lost_torn; /* not yet reported */
	uint64_t lost_first; /* sequence number they begin at */
	struct shmlog__rec rec; /* pending record header */
	/* its tag and message, NUL-terminated (max_record + 2 bytes) */
	unsigned char *body;
};

/* A lane in the merge, with its record's time: the key sits in the heap,
 * so that sifting reads one array. */
struct heap_slot {
	uint64_t time;
	unsigned lane;
};

struct shmlog_reader {
	struct shmlog__seg seg;
	struct shmlog__rlane *lanes;
	unsigned char *bodies;
	/* a follower's looks (reader_wait.c): the head of each lane found
	 * quiet at its last look (nobody wrote it between its last two
	 * looks, nothing past the cursor, no record held), QUIET_NONE if
	 * not; one array, so a look at many idle lanes is a load each */
	uint64_t *quiet;
	bool membarrier_ok;
	struct heap_slot *heap; /* lanes holding a record, earliest first */
	unsigned heap_len;
	unsigned since_refresh; /* records since the last scan of all lanes */
	/* the raw clock when the last scan began, and the slack allowed for
	 * clocks read out of order with the loads around them (top_unsure()
	 * in reader.c) */
	uint64_t scanned_raw, order_slack;
	/* SHMLOG_READ_DUMP: lanes end at their end_seq, set at the first
	 * read (dump_set) */
	bool dump, dump_set;
	bool top_used; /* the heap top's record was returned */
	struct shmlog__clockmap clock; /* the segment's anchors, validated */
	int failed; /* 0, or -EIO once the file was truncated under us */
	bool failure_reported;
	uint64_t faults; /* SIGBUS caught while copying */
	/* the sequence numbers the last SHMLOG_EV_LOST covered */
	bool lost_known;
	uint64_t lost_first, lost_last;
	/* the last record returned, if its message was formatted here from
	 * a format in the buffer's table and its argument values */
	bool deferred;
	size_t fmt_len, args_len;
	const unsigned char *args; /* in its lane's body */
	char fmt[SHMLOG_MSG_MAX + 1];
	char text[SHMLOG_MSG_MAX + 1];
	/* a deferred record's message is handed out as stored (its format's
	 * id and its values), not formatted: shmlog__reader_keep_raw() */
	bool raw;
	/* shmlog__reader_drain()'s copy of a span of records (SPAN_CAP
	 * bytes), made on first use */
	unsigned char *span;
	/* not NULL: a reader of an archive, which every call is handed to
	 * (archive_read.c); nothing above is used then */
	struct shmlog__arc *arc;
};

/* Was raw time @time stamped after the last scan of the lanes began,
 * less the slack? Then records of the same thread published before it
 * may be in lanes that scan found empty (top_unsure() in reader.c). */
static inline bool shmlog__reader_after_scan(const struct shmlog_reader *r,
					     uint64_t time)
{
	return (int64_t)(time - r->scanned_raw) > -(int64_t)r->order_slack;
}

/* Has any lane but @lane records new since the last scan? If not, the
 * scan's time moves up to now (reader.c; the archiver's spans ask it,
 * reader_raw.c). */
bool shmlog__reader_others_new(struct shmlog_reader *r, unsigned lane);

/* Look for records in the lanes that had none every REFRESH records
 * (reader.c, refresh()), so a lane that was empty rejoins the merge soon
 * without every call paying for a scan of every lane. */
#define REFRESH 64

/* Not quiet: struct shmlog_reader's quiet[]. */
#define QUIET_NONE UINT64_MAX

/* Copies out of the mapping, to be checked afterwards (ring.c's
 * shmlog__copy_out()): here inline, so that a record's header is a few
 * moves and its body one memcpy each part. Under ThreadSanitizer they go
 * through shmlog__copy_out(), which it does not instrument: a writer may
 * be rewriting the bytes, and the re-check says whether it did. */
#if defined(__SANITIZE_THREAD__)
#define READER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define READER_TSAN 1
#endif
#endif

static inline void copy_bytes(void *dst, const void *src, size_t n)
{
#ifdef READER_TSAN
	shmlog__copy_out(dst, src, n);
#else
	memcpy(dst, src, n);
#endif
}

/* copy_bytes() for a span of records (up to 64 KiB): in 64-byte moves,
 * not the string instruction (rep movsb) memcpy() picks at this size.
 * Measured on AMD EPYC (Zen 4): `shmlog archive --once` of 4 M records
 * took 6.5 % less CPU (median of 15 runs each, taken in turn). */
static inline void copy_span_bytes(void *dst, const void *src, size_t n)
{
#ifdef READER_TSAN
	shmlog__copy_out(dst, src, n);
#else
	unsigned char *d = dst;
	const unsigned char *s = src;
	for (; n >= 64; n -= 64, d += 64, s += 64)
		__builtin_memcpy(d, s, 64);
	memcpy(d, s, n);
#endif
}

/* Could a writer of ours have committed this header? Anything else is a
 * damaged (or forged) record: a TORN header flipped to COMMITTED has
 * priority 0, for one. */
static inline bool rec_plausible(const struct shmlog__rec *r)
{
	return r->tag_len <= SHMLOG_TAG_MAX && r->prio >= SHMLOG_VERBOSE &&
	       r->prio <= SHMLOG_FATAL &&
	       !(r->flags & ~(SHMLOG_REC_TRUNCATED | REC_FLAG_DEFERRED)) &&
	       !r->reserved;
}

/* The end of what the cursor may read in its chunk: head if head is in
 * it, the chunk's end if head is past it; false if head is before the
 * chunk (the cursor cannot read it). */
static inline bool cursor_limit(const struct shmlog__fixed *f,
			 const struct shmlog__rlane *c, uint64_t head,
			 uint64_t *limit)
{
	if (head - c->cbase <= f->chunk_size)
		*limit = head;
	else if (pos_before(c->cend, head))
		*limit = c->cend;
	else
		return false;
	return true;
}

/* ---- surviving a file truncated under the reader (SIGBUS) ---- */

/* The guard (guard.c), under the names this file has always used. */
#define bus_guard shmlog__guard

static inline void bus_arm(const struct shmlog_reader *r, struct bus_guard *g)
{
	shmlog__guard_arm(g, &r->seg);
}

static inline void bus_disarm(void)
{
	shmlog__guard_disarm();
}

static inline void bus_recovered(void)
{
	shmlog__guard_recovered();
}

/* The mapping faulted, or the file is seen shorter than the mapping:
 * the reader is done. */
static inline void reader_fail(struct shmlog_reader *r, bool fault)
{
	r->failed = -EIO;
	if (fault) {
		bus_recovered();
		r->faults++;
	}
}

/* Has the file been truncated below what we mapped? One fstat, made once
 * per batch of records (when a reader runs out of records, and before it
 * sleeps), so that a reader that never touches the lost pages learns it
 * too. */
static inline bool reader_truncated(struct shmlog_reader *r)
{
	struct stat st;
	return fstat(r->seg.fd, &st) == 0 && (uint64_t)st.st_size < r->seg.size;
}

/* First report of a failure: -EIO, once; then nothing (SHMLOG_EV_NONE),
 * so that loops "until SHMLOG_EV_NONE" end. */
static inline int reader_report(struct shmlog_reader *r)
{
	if (r->failure_reported)
		return SHMLOG_EV_NONE;
	r->failure_reported = true;
	return r->failed;
}

/* A copy of the segment's clock anchors (clock.c); mapping guarded. */
static inline void reader_anchor(struct shmlog_reader *r)
{
	shmlog__clockmap_read(&r->seg.fixed, r->seg.hdr, &r->clock);
}

/* ---- across the reader's files ---- */

/* reader_cursor.c */
/* The cursor's next record, from the lane's chunks up to the head it has:
 * true with it in c->rec and c->body (c->have), false if none now.
 * Records older than @clear_raw are skipped (shmlog_clear()). */
bool shmlog__cursor_fetch(const struct shmlog__seg *s, unsigned lane,
			  struct shmlog__rlane *c, uint64_t clear_raw);
/* Has a damaged lane changed since it was found damaged (its fingerprint)? */
bool shmlog__cursor_lane_changed(const struct shmlog__seg *s, unsigned lane,
				 const struct shmlog__rlane *c);
/* Is lane @lane as a follower's look last found it quiet (quiet[]): its
 * head where it was then, so nothing new and nothing of its cursor to
 * update? One load of its head. A lane whose head moved is quiet no
 * more. */
static inline bool shmlog__lane_still_quiet(struct shmlog_reader *r,
					    unsigned lane)
{
	if (r->quiet[lane] == QUIET_NONE)
		return false;
	/* LMM(ring:F) */
	if (atomic_load_explicit(&seg_lane(&r->seg, lane)->head,
				 memory_order_acquire) == r->quiet[lane])
		return true;
	r->quiet[lane] = QUIET_NONE;
	return false;
}

/* Is there anything for shmlog__cursor_fetch() to read, or a head to look
 * at? One load of head for a lane nobody writes; a follower's lane being
 * written is left to shmlog__cursor_fetch(), which looks at it as
 * shmlog__cursor_may_look() says. Inline: the merge asks it of every lane
 * at every refresh. */
static inline bool shmlog__cursor_has_new(const struct shmlog__seg *s,
					  unsigned lane,
					  const struct shmlog__rlane *c)
{
	const struct shmlog__lane *ctl = seg_lane(s, lane);
	if (c->have)
		return true;
	if (c->ended)
		return false;
	if (c->damaged)
		return shmlog__cursor_lane_changed(s, lane, c);
	if (!c->begun || pos_before(c->pos, c->head_seen) ||
	    (c->looked_ns && c->head_seen != c->head_prev))
		return true;
	/* LMM(ring:F) */
	return pos_before(c->pos, atomic_load_explicit(&ctl->head,
						       memory_order_acquire));
}
/* Put the cursor at the lane's head: what was written before is skipped. */
void shmlog__cursor_skip_to_head(const struct shmlog__seg *s, unsigned lane,
				 struct shmlog__rlane *c);
/* A follower's look at the lane: the bytes published past the cursor
 * (UINT64_MAX: read it now); @gated: a lane being written keeps the head
 * it has if its last look is fresh. */
uint64_t shmlog__cursor_look(const struct shmlog__seg *s, unsigned lane,
			     struct shmlog__rlane *c, uint64_t now, bool gated);
/* The cursor reached the head it has: load it again? */
bool shmlog__cursor_may_look(struct shmlog__rlane *c);
/* reader.c: the body of shmlog_reader_next(), run with the mapping
 * guarded. */
int shmlog__reader_next_guarded(struct shmlog_reader *r,
				struct shmlog_record *rec,
				struct shmlog_lost *lost);

#endif
