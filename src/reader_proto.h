/* SPDX-License-Identifier: MIT */
/*
 * The record protocol for readers: the calls of ring.c a reader's cursor
 * (reader_cursor.c) makes to find a lane's chunks, check a record in its
 * copy and re-check that the copy was whole. Included by internal.h where
 * this block stood, after the segment's types it uses; include internal.h,
 * not this file.
 */
#ifndef SHMLOG_READER_PROTO_H
#define SHMLOG_READER_PROTO_H

/* ---- the record protocol for readers (ring.c; cursors: reader_cursor.c) ---- */

/* Is @a before @b? Positions compare by signed difference. */
static inline bool pos_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/* How far a lane's chunks may lie from a position of the same lane (the
 * lane's head, the epoch's newest base): the reach of every search of the
 * descriptor table by position. */
#define SHMLOG__LANE_REACH (UINT64_C(1) << 62)

/* The descriptor states shmlog__chunk_find() looks for (bits). */
#define CHUNK_IN_LIVE (1u << CHUNK_LIVE)
#define CHUNK_IN_OPEN (1u << CHUNK_OPEN)

/* Lane @lane's chunk (in @states) with the smallest base that ends past
 * @from, among those whose base is at or before @limit: its index and
 * word. One pass over the descriptor table. false if none. */
bool shmlog__chunk_find(const struct shmlog__seg *s, unsigned lane,
			uint64_t from, uint64_t limit, unsigned states,
			unsigned *idx, uint64_t *word);
/* Is @r, found at @pos, a well-formed record of some state, with @room
 * bytes left in its chunk? Returns the state (0: not a record) and its
 * length in *@len. Only the first word of a PAD is read: a PAD always runs
 * to the end of the chunk and may be shorter than a header. Inline: a
 * reader's drain calls it for every record of a span (reader_raw.c). */
static inline unsigned shmlog__rec_check(const struct shmlog__fixed *f,
					 const struct shmlog__rec *r,
					 uint64_t pos, uint64_t room,
					 uint32_t *len)
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
/* Copy out of the mapping, a writer possibly writing (checked after). */
void shmlog__copy_out(void *dst, const void *src, size_t n);
/* After a copy of the record at @off in chunk @chunk, whose word was
 * @word and the chunk's id @cid: was the copy whole? */
enum { REC_WHOLE, REC_REWRITTEN, REC_CHUNK_GONE };
int shmlog__rec_recheck(const struct shmlog__seg *s, unsigned chunk,
			uint64_t off, uint64_t word, uint64_t cid);

/* Does lane @lane hold no chunk? */
bool shmlog__lane_empty(const struct shmlog__seg *s, unsigned lane);

#endif
