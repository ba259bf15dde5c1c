/* SPDX-License-Identifier: MIT */
/*
 * `shmlog archive`: the block being filled (archive.h). Records go into
 * RUN entries (archive_format.h), each coded against the one before it:
 * a context (lane, pid, tid, tag) said once per run and named by a byte
 * after, or by a bit when it is the record before's; a sequence number
 * implied when it follows its lane's last; times as deltas; the message
 * as stored. A RUN entry ends where any other entry must go (a loss, a
 * format, a buffer), at the block's end, or when its contexts run out;
 * each one decodes alone, so a block or a file does too. Or into SPAN
 * entries: a lane's records as the buffer stores them, copied whole.
 * A span is coded into RUN entries instead with --compact or while the
 * disk lags (take_span()): its records straight from the reader's
 * checked copy, those of a context the run knows in a loop of their own
 * (code_known()), the rest one by one (put_record()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "reader_raw.h"

/* ---- the block being filled ---- */

/* Close the RUN entry being filled: its header, now that its size and
 * count are known. */
void run_end(struct archiver *a)
{
	struct run *e = &a->run;
	if (!e->off)
		return;
	struct shmlog_arc_run h = {
		.e = {.size = (uint32_t)(a->out_len - e->off),
		      .type = SHMLOG_ARC_RUN},
		.count = e->count,
		.base_time_ns = e->base_time_ns,
		.base_raw_time = e->base_raw_time,
	};
	memcpy(a->out + e->off, &h, sizeof(h));
	e->off = 0;
}

/* An empty block: its header's room, no entry. */
void out_reset(struct archiver *a)
{
	a->out_len = sizeof(struct shmlog_arc_block);
	a->out_entries = 0;
	a->run.off = 0;
}

static void *out_reserve(struct archiver *a, size_t n)
{
	run_end(a);
	void *p = a->out + a->out_len;
	a->out_len += n;
	a->out_entries++;
	return p;
}

/* Open a RUN entry, its times based on @r's. */
static void run_start(struct archiver *a, const struct shmlog_record *r)
{
	struct run *e = &a->run;
	run_end(a);
	e->off = a->out_len;
	a->out_len += sizeof(struct shmlog_arc_run);
	a->out_entries++;
	e->count = 0;
	e->base_time_ns = e->time_ns = r->time_ns;
	e->base_raw_time = e->raw_time = r->raw_time;
	e->last = -1;
	e->nctx = e->nlanes = 0;
	memset(e->hash, 0, sizeof(e->hash));
}


void put_buffer(struct archiver *a, unsigned id)
{
	const struct bufent *b = &a->bufs[id];
	size_t plen = strlen(b->path);
	size_t room = (plen + 7) & ~(size_t)7;
	size_t size = sizeof(struct shmlog_arc_buffer) + room + 16 * b->lanes;
	unsigned char *p = out_reserve(a, size);
	struct shmlog_arc_buffer h = {
		.e = {.size = (uint32_t)size,
		      .type = SHMLOG_ARC_BUFFER,
		      .buf = (uint16_t)id},
		.lanes = (uint16_t)b->lanes,
		.path_len = (uint16_t)plen,
		.known = b->lanes,
		.created_ns = b->created_ns,
		.ino = b->ino,
		.initial_seq = b->initial_seq,
	};
	memcpy(p, &h, sizeof(h));
	memset(p + sizeof(h), 0, room);
	memcpy(p + sizeof(h), b->path, plen);
	p += sizeof(h) + room;
	for (unsigned l = 0; l < b->lanes; l++, p += 16) {
		/* the position the file holds: the entries after this one
		 * in the block advance it */
		struct shmlog_arc_lanepos lp = {.lane = l, .next = b->flushed[l]};
		memcpy(p, &lp, sizeof(lp));
	}
}

void put_loss(struct archiver *a, const struct source *s, unsigned lane,
		     uint64_t first, uint64_t last, uint64_t torn)
{
	uint64_t n = last - first + 1;
	if (torn > n)
		torn = n;
	struct shmlog_arc_loss h = {
		.e = {.size = sizeof(h), .type = SHMLOG_ARC_LOSS, .buf = s->id},
		.lane = (uint16_t)lane,
		.first = first,
		.last = last,
		.overwritten = n - torn,
		.torn = torn,
	};
	memcpy(out_reserve(a, sizeof(h)), &h, sizeof(h));
	a->losses++;
	a->lost_records += n;
}

/* ---- formats of printf-style records ---- */

/* Format @id of @s's buffer, looked up in the buffer's table the first
 * time; NULL only without memory. */
static struct fmtent *fmt_get(struct source *s, uint32_t id)
{
	struct bufent *b = s->b;
	struct fmtent *f = shmlog__arc_idtab_find(&b->fmts, sizeof(*f), id);
	if (f)
		return f;
	if (!shmlog__arc_idtab_room(&b->fmts, sizeof(*f), UINT32_MAX))
		return NULL;
	static char text[SHMLOG_MSG_MAX + 1];
	int n = s->rd ? shmlog__reader_format_of(s->rd, id, text, sizeof(text))
		      : -ENOENT;
	char *copy = NULL;
	if (n > 0 && !(copy = malloc((size_t)n + 1)))
		return NULL;
	if (copy)
		memcpy(copy, text, (size_t)n + 1);
	f = shmlog__arc_idtab_add(&b->fmts, sizeof(*f), id);
	*f = (struct fmtent){.id = id,
			     .len = copy ? (uint32_t)n : 0,
			     .text = copy,
			     .file = UINT64_MAX,
			     .block = UINT64_MAX};
	return f;
}

size_t format_size(const struct fmtent *f)
{
	return sizeof(struct shmlog_arc_format) + ((f->len + 7) & ~7u);
}

void put_format(struct archiver *a, unsigned id, struct fmtent *f)
{
	size_t size = format_size(f);
	unsigned char *p = out_reserve(a, size);
	struct shmlog_arc_format h = {
		.e = {.size = (uint32_t)size,
		      .type = SHMLOG_ARC_FORMAT,
		      .buf = (uint16_t)id},
		.id = f->id,
		.len = f->len,
	};
	memcpy(p, &h, sizeof(h));
	memset(p + size - 8, 0, 8);
	memcpy(p + sizeof(h), f->text, f->len);
	f->file = a->file_no;
}

/* The format a deferred record of @s names by its message @msg (@len
 * bytes) if the file lacks its FORMAT entry, else NULL. */
static struct fmtent *format_needed(struct archiver *a, struct source *s,
				    const void *msg, size_t len)
{
	uint32_t id;
	if (len < 4)
		return NULL;
	memcpy(&id, msg, 4);
	if (!id)
		return NULL; /* no format has id 0: it reads "<no format>" */
	struct fmtent *f = fmt_get(s, id);
	if (!f || !f->len)
		return NULL; /* none in the buffer: read as a reader of it would */
	f->block = a->block_no;
	return f->file != a->file_no ? f : NULL;
}

/* The FORMAT entry a deferred record @r of @s needs before it, unless
 * the file has it already. */
static void need_format(struct archiver *a, struct source *s,
			const struct shmlog_record *r)
{
	struct fmtent *f = format_needed(a, s, r->msg, r->msg_len);
	if (f)
		put_format(a, s->id, f);
}

/* memcpy() for the short lengths of tags and messages: words, the last
 * one overlapping. (GCC expands a memcpy() of a length it knows to be
 * bounded into `rep movsq`, whose start-up costs more than a short copy
 * itself; the loop must not become a memcpy() call either.) */
#if defined(__GNUC__) && !defined(__clang__) /* GCC's own attribute */
#define NO_LOOP_TO_MEMCPY                                                      \
	__attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_LOOP_TO_MEMCPY
#endif
NO_LOOP_TO_MEMCPY static inline __attribute__((always_inline)) void
copy_short(unsigned char *dst,
						const char *src, size_t n)
{
	if (n >= 256) {
		memcpy(dst, src, n);
	} else if (n >= 16) {
		unsigned char w[16];
		for (size_t i = 0; i + 16 < n; i += 16) {
			memcpy(w, src + i, 16);
			memcpy(dst + i, w, 16);
		}
		memcpy(w, src + n - 16, 16);
		memcpy(dst + n - 16, w, 16);
	} else if (n >= 8) {
		uint64_t w, v;
		memcpy(&w, src, 8);
		memcpy(&v, src + n - 8, 8);
		memcpy(dst, &w, 8);
		memcpy(dst + n - 8, &v, 8);
	} else if (n >= 4) {
		uint32_t w, v;
		memcpy(&w, src, 4);
		memcpy(&v, src + n - 4, 4);
		memcpy(dst, &w, 4);
		memcpy(dst + n - 4, &v, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			dst[i] = (unsigned char)src[i];
	}
}

/* ---- runs of records ---- */

/* The first 8 bytes of tag @t (@tl long), zero-padded: a tag of the
 * usual length is told from another by this word and its length. */
static inline uint64_t tag_word(const char *t, size_t tl)
{
	uint64_t w = 0;
	if (tl >= 8) {
		memcpy(&w, t, 8);
	} else if (tl >= 4) {
		uint32_t lo, hi; /* overlapping: the same bytes twice */
		memcpy(&lo, t, 4);
		memcpy(&hi, t + tl - 4, 4);
		w = lo | (uint64_t)hi << (8 * (tl - 4));
	} else {
		for (size_t i = 0; i < tl; i++)
			w |= (uint64_t)(unsigned char)t[i] << (8 * i);
	}
	return w;
}

/* A record's context, as put_record() compares it: in whole words,
 * each stored and loaded whole (a word loaded from narrower fields just
 * stored waits for them to leave the store buffer). */
struct ctx_key {
	uint64_t word; /* tag_word() */
	uint64_t who; /* pid | tid << 32 */
	uint64_t where; /* (buf << 16 | lane) << 8 | tag_len */
	const char *tag;
};

static unsigned ctx_hash(const struct ctx_key *k)
{
	uint64_t h = (k->word ^ (k->who << 20 | k->who >> 44) ^
		      k->where << 40 ^ k->where) *
		     0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 55); /* 9 bits: sizeof(run.hash) */
}

/* Are tags @x and @y, both @n bytes long and of the same first word
 * (tag_word()), the same? Past the first word: words, the last one
 * overlapping. */
static inline bool tag_rest_is(const char *x, const char *y, size_t n)
{
	for (size_t i = 8; i < n; i += 8) {
		size_t at = i + 8 <= n ? i : n - 8;
		uint64_t u, v;
		memcpy(&u, x + at, 8);
		memcpy(&v, y + at, 8);
		if (u != v)
			return false;
	}
	return true;
}

static inline bool ctx_is(const struct run_ctx *c, const struct ctx_key *k)
{
	return c->word == k->word && c->who == k->who &&
	       c->where == k->where &&
	       tag_rest_is(c->tag, k->tag, (uint8_t)k->where);
}

/* The run's context of @k, or -1 (its hash slot in *@slot). */
static inline __attribute__((always_inline)) int
ctx_find(const struct run *e, const struct ctx_key *k,
		    unsigned *slot)
{
	unsigned i = ctx_hash(k);
	/* at most 255 of 512 slots used: a free one ends the probe */
	while (e->hash[i]) {
		if (ctx_is(&e->ctx[e->hash[i] - 1], k))
			return e->hash[i] - 1;
		i = (i + 1) & (sizeof(e->hash) - 1);
	}
	*slot = i;
	return -1;
}

/* Make @r's context the run's next (there is room): its number. */
static unsigned ctx_add(struct run *e, const struct ctx_key *k,
			unsigned slot)
{
	uint32_t key = (uint32_t)(k->where >> 8);
	unsigned c = e->nctx++, l = 0;
	while (l < e->nlanes && e->lane_of[l] != key)
		l++;
	if (l == e->nlanes) {
		e->lane_of[l] = key;
		e->lane_seen[l] = false;
		e->nlanes++;
	}
	struct run_ctx *x = &e->ctx[c];
	x->word = k->word;
	x->who = k->who;
	x->where = k->where;
	x->slot = (uint8_t)l;
	memcpy(x->tag, k->tag, (uint8_t)k->where);
	e->hash[slot] = (uint8_t)(c + 1);
	return c;
}

static inline unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline __attribute__((always_inline)) void
put_record(struct archiver *a, struct source *s,
		       const struct shmlog_record *r)
{
	size_t tl = r->tag_len > SHMLOG_TAG_MAX ? SHMLOG_TAG_MAX : r->tag_len;
	size_t ml = r->msg_len > SHMLOG_MSG_MAX ? SHMLOG_MSG_MAX : r->msg_len;
	bool deferred = r->flags & SHMLOG_REC_DEFERRED;
	if (deferred)
		need_format(a, s, r); /* an entry: it ends the run */
	struct run *e = &a->run;
	if (!e->off)
		run_start(a, r);
	unsigned head = (r->prio & SHMLOG_ARC_RUN_PRIO) |
			(r->flags & SHMLOG_REC_TRUNCATED ? SHMLOG_ARC_RUN_TRUNCATED
							  : 0) |
			(deferred ? SHMLOG_ARC_RUN_DEFERRED : 0);
	struct ctx_key k = {
		.word = tag_word(r->tag, tl),
		.who = r->pid | (uint64_t)r->tid << 32,
		.where = ((uint64_t)s->id << 16 | (uint16_t)r->lane) << 8 | tl,
		.tag = r->tag,
	};
	int c = e->last;
	unsigned hslot = 0;
	if (c >= 0 && ctx_is(&e->ctx[c], &k)) {
		head |= SHMLOG_ARC_RUN_SAMECTX;
	} else if ((c = ctx_find(e, &k, &hslot)) < 0) {
		if (e->nctx == SHMLOG_ARC_RUN_CTX_MAX) {
			run_start(a, r);
			ctx_find(e, &k, &hslot);
		}
		head |= SHMLOG_ARC_RUN_NEWCTX;
	}
	unsigned char *p0 = a->out + a->out_len, *p = p0 + 1;
	if (head & SHMLOG_ARC_RUN_NEWCTX) {
		c = (int)ctx_add(e, &k, hslot);
		p = put_varint(p, s->id);
		p = put_varint(p, r->lane);
		p = put_varint(p, r->pid);
		p = put_varint(p, r->tid);
		*p++ = (unsigned char)tl;
		memcpy(p, r->tag, tl);
		p += tl;
	} else if (!(head & SHMLOG_ARC_RUN_SAMECTX)) {
		*p++ = (unsigned char)c;
	}
	e->last = c;
	unsigned l = e->ctx[c].slot;
	if (!e->lane_seen[l] || e->lane_next[l] != r->seq) {
		head |= SHMLOG_ARC_RUN_SEQ;
		p = put_varint(p, r->seq);
		e->lane_seen[l] = true;
	}
	e->lane_next[l] = r->seq + 1;
	p = put_varint(p, zigzag((int64_t)((uint64_t)r->time_ns -
					   (uint64_t)e->time_ns)));
	p = put_varint(p, zigzag((int64_t)(r->raw_time - e->raw_time)));
	e->time_ns = r->time_ns;
	e->raw_time = r->raw_time;
	p = put_varint(p, ml);
	copy_short(p, r->msg, ml);
	p += ml;
	*p0 = (unsigned char)head;
	a->out_len = (size_t)(p - a->out);
	e->count++;
	a->records++;
}

/* A record read from @s: skipped if archived already, after a LOSS entry
 * if records before it are missing. */
void take_record(struct archiver *a, struct source *s,
			const struct shmlog_record *r)
{
	struct bufent *b = s->b;
	unsigned lane = r->lane;
	if (lane >= b->lanes)
		return;
	int64_t ahead = (int64_t)(r->seq - b->next[lane]);
	if (ahead < 0)
		return; /* in the archive already (read again after a restart) */
	if (ahead > 0)
		put_loss(a, s, lane, b->next[lane], r->seq - 1, s->torn[lane]);
	s->torn[lane] = 0;
	b->next[lane] = r->seq + 1;
	put_record(a, s, r);
}

/* ---- spans of records as stored ---- */

/* The length of the record at @p of a span (checked by the reader). */
static inline size_t span_rec_len(const unsigned char *p)
{
	struct shmlog_arc_span_rec h;
	memcpy(&h, p, sizeof(h));
	return h.len;
}

/* Where a span of @n bytes is copied to go into the block as it is: the
 * records of the SPAN entry put next, if nothing goes before it (NULL if
 * the block has no room: the reader's own copy then). */
unsigned char *span_room(struct archiver *a, size_t n)
{
	size_t at = a->out_len + sizeof(struct shmlog_arc_span);
	return at + n <= OUT_CAP ? a->out + at : NULL;
}

/* The records of a span from *@pp on (at most @n) whose context is one
 * the run knows, after a record coded by put_record(): of the same lane,
 * numbered one before the first. Coded as put_record() codes them (the
 * same context, or the number of a known one; the next sequence number of
 * their lane), with the run's state in locals (a byte stored into the
 * block could be any of the state's fields to the compiler, which would
 * load them again after each). How many, *@pp moved past them; it stops
 * at a record of a context new to the run, a printf-style one, or the
 * block's target (a block has room for one record more). @where: the
 * lane's, as in struct ctx_key, without the tag's length. */
static unsigned code_known(struct archiver *a, uint64_t where,
			   const struct shmlog_arc_span *pc,
			   const unsigned char **pp, unsigned n)
{
	struct run *e = &a->run;
	int last = e->last;
	const struct run_ctx *c = &e->ctx[last];
	const unsigned slot = c->slot;
	uint64_t who = c->who, word = c->word, cwhere = c->where;
	const struct shmlog_arc_span piece = *pc;
	const unsigned char *p = *pp;
	unsigned char *out = a->out + a->out_len;
	unsigned char *const target = a->out + a->block_target;
	uint64_t time_ns = (uint64_t)e->time_ns, raw_time = e->raw_time;
	unsigned k = 0;
	while (k < n && out < target) {
		struct shmlog_arc_span_rec h;
		memcpy(&h, p, sizeof(h));
		const char *tag = (const char *)p + sizeof(h);
		if ((h.flags & SHMLOG_ARC_REC_DEFERRED) ||
		    h.tag_len > SHMLOG_TAG_MAX)
			break;
		struct ctx_key key = {
			.word = tag_word(tag, h.tag_len),
			.who = h.pid | (uint64_t)h.tid << 32,
			.where = where | h.tag_len,
			.tag = tag,
		};
		unsigned char *q = out + 1;
		unsigned head = SHMLOG_ARC_RUN_SAMECTX;
		if (key.who != who || key.where != cwhere || key.word != word ||
		    !tag_rest_is(c->tag, tag, h.tag_len)) {
			unsigned free_slot;
			int i = ctx_find(e, &key, &free_slot);
			if (i < 0 || e->ctx[i].slot != slot)
				break; /* new to the run: put_record() */
			last = i;
			c = &e->ctx[i];
			who = c->who;
			word = c->word;
			cwhere = c->where;
			*q++ = (unsigned char)i;
			head = 0;
		}
		size_t ml = h.msg_len > SHMLOG_MSG_MAX ? SHMLOG_MSG_MAX
						       : h.msg_len;
		uint64_t t = (uint64_t)shmlog__arc_span_time(&piece, h.raw_time);
		q = put_varint(q, zigzag((int64_t)(t - time_ns)));
		q = put_varint(q, zigzag((int64_t)(h.raw_time - raw_time)));
		q = put_varint(q, ml);
		copy_short(q, tag + h.tag_len, ml);
		*out = (unsigned char)((h.prio & SHMLOG_ARC_RUN_PRIO) |
				       (h.flags & SHMLOG_REC_TRUNCATED
						? SHMLOG_ARC_RUN_TRUNCATED
						: 0) |
				       head);
		out = q + ml;
		time_ns = t;
		raw_time = h.raw_time;
		p += h.len;
		k++;
	}
	a->out_len = (size_t)(out - a->out);
	e->last = last;
	e->time_ns = (int64_t)time_ns;
	e->raw_time = raw_time;
	e->count += k;
	e->lane_next[slot] += k;
	a->records += k;
	*pp = p;
	return k;
}

/* The @count records of span @sp from @p on (the first numbered @seq, the
 * lane's next to archive) into RUN entries, each coded as put_record()
 * codes a record read one by one, without making one of each first: how
 * many went in. All of them unless the block filled: the first always
 * does (a block has room for one record more than its target). */
static unsigned code_span(struct archiver *a, struct source *s,
			  const struct shmlog__span *sp, const unsigned char *p,
			  unsigned count, uint64_t seq)
{
	const struct shmlog_arc_span piece = {.shift = (uint8_t)sp->shift,
					      .base_raw = sp->base_raw,
					      .base_ns = sp->base_ns,
					      .mult = sp->mult};
	const uint64_t where = ((uint64_t)s->id << 16 | (uint16_t)sp->lane)
			       << 8;
	unsigned i = 0;
	while (i < count) {
		if (i && a->out_len >= a->block_target)
			break;
		struct shmlog_arc_span_rec h;
		memcpy(&h, p, sizeof(h));
		const char *tag = (const char *)p + sizeof(h);
		const struct shmlog_record r = {
			.seq = seq + i,
			.time_ns = shmlog__arc_span_time(&piece, h.raw_time),
			.raw_time = h.raw_time,
			.pid = h.pid,
			.tid = h.tid,
			.prio = h.prio,
			.flags = (h.flags & SHMLOG_REC_TRUNCATED) |
				 (h.flags & SHMLOG_ARC_REC_DEFERRED
					  ? SHMLOG_REC_DEFERRED
					  : 0),
			.lane = sp->lane,
			.tag = tag,
			.tag_len = h.tag_len,
			.msg = tag + h.tag_len,
			.msg_len = h.msg_len,
		};
		put_record(a, s, &r);
		p += h.len;
		i++;
		/* the records after it of contexts the run knows: most,
		 * from a thread's few tags */
		i += code_known(a, where, &piece, &p, count - i);
	}
	s->b->next[sp->lane] = seq + i;
	return i;
}

/* Does a span of @s, copied into the block (span_room()), need entries
 * before it, which would overwrite it: a LOSS entry, records to skip, or
 * FORMAT entries? */
static bool span_needs_room(struct archiver *a, struct source *s,
			    const struct shmlog__span *sp)
{
	if (sp->first_seq != s->b->next[sp->lane])
		return true;
	const unsigned char *q = sp->bytes;
	for (unsigned i = 0; sp->deferred && i < sp->count; i++) {
		struct shmlog_arc_span_rec h;
		memcpy(&h, q, sizeof(h));
		if ((h.flags & SHMLOG_ARC_REC_DEFERRED) &&
		    format_needed(a, s, q + sizeof(h) + h.tag_len, h.msg_len))
			return true;
		q += h.len;
	}
	return false;
}

/* A span of @s's records (one lane's, as the buffer stores them) into a
 * SPAN entry, after the FORMAT entries its printf-style records need and a
 * LOSS entry if records before it are missing; those archived already are
 * skipped. How many records it took into *@took: all, unless the block
 * has no room for the formats of the rest. Copied into the block already
 * (span_room()), it stays there unless entries must go before it. */
void take_span(struct archiver *a, struct source *s,
	       const struct shmlog__span *sp, unsigned *took)
{
	struct bufent *b = s->b;
	unsigned lane = sp->lane;
	*took = sp->count;
	if (lane >= b->lanes)
		return;
	const unsigned char *p = sp->bytes, *end = sp->bytes + sp->len;
	bool in_place = p == span_room(a, sp->len);
	if (in_place && span_needs_room(a, s, sp)) {
		/* out of the way of the entries before it (rare: after a
		 * loss or a restart, or at a file's first use of a format) */
		if (!shmlog__arc_grow(&a->aside, &a->aside_cap, sp->len)) {
			*took = 0;
			return;
		}
		memcpy(a->aside, p, sp->len);
		p = a->aside;
		end = p + sp->len;
		in_place = false;
	}
	uint64_t seq = sp->first_seq;
	unsigned skip = 0;
	/* in the archive already (read again after a restart) */
	while (skip < sp->count && (int64_t)(seq - b->next[lane]) < 0) {
		p += span_rec_len(p);
		seq++;
		skip++;
	}
	if (skip == sp->count)
		return;
	if (seq != b->next[lane])
		put_loss(a, s, lane, b->next[lane], seq - 1, s->torn[lane]);
	s->torn[lane] = 0;
	if (a->runs) {
		unsigned coded = code_span(a, s, sp, p, sp->count - skip, seq);
		if (!a->compact)
			a->lag_records += coded;
		*took = skip + coded;
		return;
	}
	unsigned count = sp->count - skip;
	const unsigned char *stop = end;
	if (sp->deferred) {
		/* the formats first: entries of their own, before the span */
		const unsigned char *q = p;
		for (unsigned i = 0; i < count; i++) {
			struct shmlog_arc_span_rec h;
			memcpy(&h, q, sizeof(h));
			size_t next = (size_t)(q - p) + h.len;
			struct fmtent *f =
				h.flags & SHMLOG_ARC_REC_DEFERRED
					? format_needed(a, s, q + sizeof(h) +
								      h.tag_len,
							h.msg_len)
					: NULL;
			if (f && a->out_len + format_size(f) +
					     sizeof(struct shmlog_arc_span) +
					     next >
				     OUT_CAP) {
				count = i; /* the rest in the next block */
				*took = skip + i;
				stop = q;
				break;
			}
			if (f)
				put_format(a, s->id, f);
			q += h.len;
		}
		if (!count)
			return;
	}
	size_t len = (size_t)(stop - p);
	unsigned char *e = out_reserve(a, sizeof(struct shmlog_arc_span) + len);
	struct shmlog_arc_span h = {
		.e = {.size = (uint32_t)(sizeof(h) + len),
		      .type = SHMLOG_ARC_SPAN,
		      .buf = s->id},
		.lane = (uint16_t)lane,
		.shift = (uint8_t)sp->shift,
		.count = count,
		.first_seq = seq,
		.base_raw = sp->base_raw,
		.base_ns = sp->base_ns,
		.mult = sp->mult,
	};
	memcpy(e, &h, sizeof(h));
	if (!in_place)
		memcpy(e + sizeof(h), p, len);
	b->next[lane] = seq + count;
	a->records += count;
}
