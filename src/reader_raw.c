/* SPDX-License-Identifier: MIT */
/*
 * Records as stored, in batches, for the archiver (reader_raw.h): a
 * deferred record's message kept as its format's id and values, the
 * format looked up by id, and a drain that guards the mapping once per
 * batch and copies a lone lane's chunk in one span, handed over whole
 * (the archive's SPAN entry, or the records its coder codes).
 *
 * What must hold: every record handed out passed the checks
 * shmlog_reader_next() makes (reader_cursor.c); a span is trusted only
 * after its first record's word and its chunk's descriptor are re-read
 * unchanged; records come in the order shmlog_reader_next() gives them
 * for each thread.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "archive_format.h"
#include "reader.h"
#include "reader_raw.h"

int shmlog__reader_keep_raw(shmlog_reader_t *r)
{
	if (r->arc)
		return -EINVAL;
	r->raw = true;
	return 0;
}

int shmlog__reader_no_rest(shmlog_reader_t *r)
{
	if (r->arc)
		return -EINVAL;
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++)
		r->lanes[i].no_rest = true;
	return 0;
}

int shmlog__reader_initial_seq(const shmlog_reader_t *r, uint64_t *seq)
{
	if (r->arc)
		return -EINVAL;
	*seq = r->seg.fixed.initial_seq;
	return 0;
}

int shmlog__reader_format_of(const shmlog_reader_t *r, uint32_t id,
			     char *buf, size_t cap)
{
	if (r->arc || r->failed)
		return -EINVAL;
	if (cap < 2)
		return -ENOSPC;
	ssize_t n;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		n = shmlog__defer_fmt_lookup(&r->seg, id, buf, cap);
		bus_disarm();
	} else {
		bus_recovered();
		return -EIO;
	}
	return n < 0 ? -ENOENT : (int)n;
}

/* Spans: the drain of a lane that alone holds records takes, instead of
 * one record per turn of cursor_fetch(), the records of its chunk up to
 * the head in one copy: each header checked in the copy as cursor_fetch()
 * checks it (its place, length, state, plausibility, the very next
 * sequence number, the clear mark), then one re-check of the first
 * record's word and the chunk's descriptor, which within one incarnation
 * is a seqlock for the whole chunk (ring.c: nothing is rewritten until
 * the descriptor changes). Anything else (a loss, a torn record, damage,
 * a chunk's end or change of hands, a record not whole in the copy) ends
 * the span where it is, and cursor_fetch() takes it from there. A span
 * whose newest record was stamped after the merge's last scan began is
 * cut before that scan's time if another lane has records new since
 * (span_cut()): a thread's records stay in order when it moves lanes, as
 * the merge keeps them (reader.c, top_unsure()). */
#define SPAN_CAP (64u << 10)

/* Where a span's records go: to @span, whole, copied where @room says
 * (if not NULL). */
struct span_out {
	shmlog__span_fn span;
	shmlog__room_fn room;
	void *ctx;
};

/* The archive's SPAN record is the buffer's record header, byte for
 * byte. */
_Static_assert(sizeof(struct shmlog_arc_span_rec) == REC_HDR, "span record");
_Static_assert(offsetof(struct shmlog_arc_span_rec, seq) ==
			   offsetof(struct shmlog__rec, seq) &&
		       offsetof(struct shmlog_arc_span_rec, raw_time) ==
			   offsetof(struct shmlog__rec, time) &&
		       offsetof(struct shmlog_arc_span_rec, len) ==
			   offsetof(struct shmlog__rec, len) &&
		       offsetof(struct shmlog_arc_span_rec, tag_len) ==
			   offsetof(struct shmlog__rec, tag_len),
	       "span record fields");
_Static_assert(REC_FLAG_DEFERRED == SHMLOG_ARC_REC_DEFERRED, "deferred flag");

/* A span of @k records at @buf (@*at bytes) holds one stamped after the
 * merge's last scan began, and another lane has records new since
 * (shmlog__reader_others_new()): a thread that moved to the span's lane may have
 * left its record before in that one. The span ends before its first
 * record stamped after the scan, which the merge then orders: how many
 * records are left, their bytes into *@at and whether printf-style ones
 * are among them into *@deferred. */
static unsigned span_cut(const struct shmlog_reader *r,
			 const unsigned char *buf, unsigned k, size_t *at,
			 bool *deferred)
{
	uint64_t scanned = r->scanned_raw - r->order_slack;
	size_t pos = 0;
	unsigned i;
	*deferred = false;
	for (i = 0; i < k; i++) {
		struct shmlog__rec h;
		memcpy(&h, buf + pos, REC_HDR);
		if ((int64_t)(h.time - scanned) > 0)
			break;
		*deferred |= h.flags & REC_FLAG_DEFERRED;
		pos += h.len;
	}
	*at = pos;
	return i;
}

/* Deliver up to @max records of @lane's chunk to @out from one copy of
 * at most @bytes (and SPAN_CAP) bytes of it, at least one record's, all
 * on one piece of the clock conversion, their anchors read: the records
 * delivered (0: none, the record path goes on), *@stop if @out said to.
 * The mapping is guarded by the caller. */
static unsigned cursor_span(struct shmlog_reader *r, unsigned lane,
			    uint64_t clear, unsigned max, size_t bytes,
			    const struct span_out *out, bool *stop)
{
	const struct shmlog__seg *s = &r->seg;
	const struct shmlog__fixed *f = &s->fixed;
	struct shmlog__rlane *c = &r->lanes[lane];
	if (c->have || c->damaged || !c->begun || c->rest_until_ns ||
	    c->chunk == CHUNK_NONE || !c->seq_seen || !c->started ||
	    c->chained != c->pos || c->lost_overwritten || c->lost_torn ||
	    (c->pos & (REC_ALIGN - 1)))
		return 0;
	uint64_t head = c->head_seen;
	if (!pos_before(c->pos, head)) {
		if (!shmlog__cursor_may_look(c))
			return 0;
		head = c->head_seen = atomic_load_explicit(
			&seg_lane(s, lane)->head, memory_order_acquire); /* LMM(F) */
	}
	uint64_t limit;
	if (!cursor_limit(f, c, head, &limit) || !pos_before(c->pos, limit) ||
	    pos_before(c->cend, limit) || pos_before(c->pos, c->cbase))
		return 0;
	uint64_t n = limit - c->pos;
	if (bytes < f->max_record)
		bytes = f->max_record;
	if (n > bytes)
		n = bytes;
	if (n > SPAN_CAP)
		n = SPAN_CAP;
	const unsigned char *data = seg_chunk_data(s, c->chunk);
	uint64_t off0 = c->pos - c->cbase;
	/* copied where the caller wants it, if it says */
	unsigned char *buf = out->room ? out->room(out->ctx, n) : NULL;
	if (!buf)
		buf = r->span;
	copy_span_bytes(buf, data + off0, (size_t)n);
	/* the clock piece of the first record: the span's records are all
	 * on it */
	struct shmlog__clock_piece piece = {.lo = 0, .hi = UINT64_MAX};
	if (n >= REC_HDR) {
		struct shmlog__rec h;
		memcpy(&h, buf, REC_HDR);
		if (shmlog__clockmap_stale(&r->clock, s->hdr, h.time))
			reader_anchor(r);
		shmlog__clock_piece(f, &r->clock, h.time, &piece);
	}
	/* No anchor published since the copy of them: none is missing for
	 * any record of the span (each was stamped before head, read before
	 * the copy, and an anchor before the stamp), so one look here, not
	 * one a record. */
	bool anchors_held =
		!r->clock.pending &&
		atomic_load_explicit(&hdr_anchors(s->hdr)->count,
				     memory_order_relaxed) == r->clock.count;
	/* the copy's records, each the one after the last */
	size_t at = 0;
	unsigned k = 0;
	bool deferred = false;
	uint64_t first_word = 0, newest = 0;
	while (at + REC_HDR <= n && k < max) {
		struct shmlog__rec h;
		memcpy(&h, buf + at, REC_HDR);
		uint32_t len = 0;
		unsigned st = shmlog__rec_check(f, &h, c->pos + at,
						c->cend - (c->pos + at), &len);
		if (st != REC_COMMITTED || len > n - at || !rec_plausible(&h) ||
		    h.seq != c->last_seq + 1 + k ||
		    (clear && (int64_t)(h.time - clear) < 0))
			break;
		if (h.time < piece.lo || h.time >= piece.hi ||
		    (!anchors_held &&
		     shmlog__clockmap_stale(&r->clock, s->hdr, h.time)))
			break; /* the next span takes it on its own piece */
		if (!k)
			first_word = atomic_load_explicit(&h.word,
							  memory_order_relaxed);
		deferred |= h.flags & REC_FLAG_DEFERRED;
		newest = h.time > newest ? h.time : newest;
		at += len;
		k++;
	}
	/* a thread that moved here may have left its record before in
	 * another lane, not handed out yet, if the span holds one stamped
	 * after the last scan began: the others are looked at, which is a
	 * scan if they have nothing new */
	bool scanned = false;
	if (k && shmlog__reader_after_scan(r, newest)) {
		if (shmlog__reader_others_new(r, lane))
			k = span_cut(r, buf, k, &at, &deferred);
		else
			scanned = true;
	}
	if (!k || shmlog__rec_recheck(s, c->chunk, off0, first_word, c->cid) !=
			  REC_WHOLE)
		return 0;
	/* whole: handed out */
	size_t pos = at;
	struct shmlog__span sp = {
		.lane = lane,
		.count = k,
		.first_seq = c->last_seq + 1,
		.bytes = buf,
		.len = at,
		.base_raw = piece.base_raw,
		.base_ns = piece.base_ns,
		.mult = piece.mult,
		.shift = piece.shift,
		.deferred = deferred,
	};
	unsigned d = 0;
	if (!out->span(out->ctx, &sp, &d) || d < k)
		*stop = true;
	if (d > k)
		d = k;
	if (d < k) {
		pos = 0;
		for (unsigned i = 0; i < d; i++) {
			struct shmlog__rec h;
			memcpy(&h, buf + pos, REC_HDR);
			pos += h.len;
		}
	}
	/* the cursor past what was handed out, as cursor_seq() leaves it */
	c->pos += pos;
	c->chained = c->pos;
	c->last_seq += d;
	c->next_seq = c->last_seq + 1;
	c->after_damage = false;
	c->damage_bytes = 0;
	c->read += d;
	r->since_refresh = scanned ? 0 : r->since_refresh + d;
	r->deferred = false;
	return d;
}

int shmlog__reader_drain(shmlog_reader_t *r, unsigned max, size_t bytes,
			 shmlog__drain_fn take, shmlog__span_fn span,
			 shmlog__room_fn room, void *ctx)
{
	const struct span_out out = {.span = span, .room = room, .ctx = ctx};
	if (r->arc || !span)
		return -EINVAL;
	if (r->failed)
		return reader_report(r);
	if (r->raw && !r->span && !(r->span = malloc(SPAN_CAP)))
		return -ENOMEM;
	/* one guard for the batch: volatile, as it is read after a jump */
	volatile unsigned n = 0;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		uint64_t clear = atomic_load_explicit(
			&r->seg.hdr->config.clear_raw, memory_order_acquire);
		while (n < max) {
			/* one lane holds records, its last one handed out:
			 * the rest of its chunk at once (lanes are looked at
			 * again every REFRESH records, below) */
			if (r->raw && r->top_used && r->heap_len == 1) {
				bool stop = false;
				unsigned k = cursor_span(r, r->heap[0].lane,
							 clear, max - n, bytes,
							 &out, &stop);
				n += k;
				if (stop || n >= max)
					break;
				if (k && r->since_refresh < REFRESH)
					continue;
			}
			struct shmlog_record rec;
			struct shmlog_lost l;
			int ev = shmlog__reader_next_guarded(r, &rec, &l);
			if (ev == SHMLOG_EV_NONE)
				break;
			n++;
			if (!take(ctx, ev, &rec, &l))
				break;
		}
		bus_disarm();
	} else {
		reader_fail(r, true);
		return reader_report(r);
	}
	if (n < max && reader_truncated(r)) {
		reader_fail(r, false);
		return reader_report(r);
	}
	return (int)n;
}
