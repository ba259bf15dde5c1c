/* SPDX-License-Identifier: MIT */
/*
 * printf-style calls: formatted here (shmlog_print(), shmlog_vprint()),
 * or deferred, their values stored for the reader to format
 * (SHMLOG_WRITE_DEFERRED, the SHMLOG_x macros' call sites, and the typed
 * calls whose values the macro fetched: shmlog__print_typed()). The codec
 * is fmtarg.c, the typed layouts fmtarg_typed.h, the format table and the
 * call sites' plans fmtarg_table.c; the append is writer.c's write path
 * (write_path.h) or, for a typed call's fast path, its own inline
 * append into the record (append.h's begin and commit).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "append.h"
#include "fmtarg_typed.h"
#include "internal.h"
#include "write_path.h"

/* A printf-style call stored as its format's id and its values, the text
 * made by whichever reader (fmtarg_table.c). Returns the write's result, or 1
 * if the call cannot be deferred: the caller formats it (with a va_list
 * of its own: @ap may have been read). */
static int print_deferred(shmlog_t *h, unsigned wflags, int prio,
			  const char *tag, const char *fmt, va_list ap)
{
	unsigned char blk[SHMLOG_MSG_MAX];
	size_t len;
	unsigned flags;
	if (shmlog__defer_encode(h, tag, fmt, ap, blk, sizeof(blk), &len,
				 &flags))
		return 1;
	return write_rec(h, prio, tag, (const char *)blk, len, flags,
			 wflags & ~SHMLOG_WRITE_DEFERRED, 0);
}

/* write_rec() out of line, for the calls that format their text first. */
static __attribute__((noinline)) int write_rec_call(shmlog_t *h, int prio,
						    const char *tag,
						    const char *msg, size_t len,
						    unsigned flags,
						    unsigned wflags)
{
	return write_rec(h, prio, tag, msg, len, flags, wflags, 0);
}

/* A printf-style call formatted here. */
static int print_text(shmlog_t *h, unsigned wflags, int prio, const char *tag,
		      const char *fmt, va_list ap)
{
	/* One byte past the maximum, so that the cut sees whether it splits
	 * a UTF-8 character. */
	char buf[SHMLOG_MSG_MAX + 2];
	wflags &= ~SHMLOG_WRITE_DEFERRED;
	if (!fmt)
		return write_rec_call(h, prio, tag, NULL, 0, 0, wflags);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n > SHMLOG_MSG_MAX)
		return write_rec_call(h, prio, tag, buf, SHMLOG_MSG_MAX + 1,
				      SHMLOG_REC_TRUNCATED, wflags);
	return write_rec_call(h, prio, tag, buf, (size_t)n, 0, wflags);
}

int shmlog_vprint(shmlog_t *h, int prio, const char *tag, const char *fmt,
		  va_list ap)
{
	return print_text(h, 0, prio, tag, fmt, ap);
}

int shmlog_vprint_ex(shmlog_t *h, unsigned flags, int prio, const char *tag,
		     const char *fmt, va_list ap)
{
	if (flags & ~(SHMLOG_WRITE_UNFILTERED | SHMLOG_WRITE_DEFERRED))
		return -EINVAL;
	if ((flags & SHMLOG_WRITE_DEFERRED) && fmt) {
		va_list aq;
		va_copy(aq, ap);
		int r = print_deferred(h, flags, prio, tag, fmt, aq);
		va_end(aq);
		if (r != 1)
			return r;
	}
	return print_text(h, flags, prio, tag, fmt, ap);
}

/* The macros' entry. With SHMLOG_WRITE_DEFERRED the arguments are walked
 * twice only when the call cannot be deferred: va_start again rather
 * than va_copy on every call (copying the va_list just written by
 * va_start costs a store-forwarding stall on the hot path). */
int shmlog_print_ex(shmlog_t *h, unsigned flags, int prio, const char *tag,
		    const char *fmt, ...)
{
	if (flags & ~(SHMLOG_WRITE_UNFILTERED | SHMLOG_WRITE_DEFERRED))
		return -EINVAL;
	va_list ap;
	int r = 1;
	if ((flags & SHMLOG_WRITE_DEFERRED) && fmt) {
		va_start(ap, fmt);
		r = print_deferred(h, flags, prio, tag, fmt, ap);
		va_end(ap);
	}
	if (r == 1) {
		va_start(ap, fmt);
		r = print_text(h, flags, prio, tag, fmt, ap);
		va_end(ap);
	}
	return r;
}

/* A deferred call through its site's cache (the SHMLOG_x macros): the
 * plan and the format's id without a lookup, the values encoded by the
 * plan. 1: the caller formats this call (with a va_list of its own). */
static inline __attribute__((always_inline)) int
print_site(shmlog_t *h, struct shmlog_fmt_site *site, uint64_t types,
	   unsigned wflags, int prio, const char *tag, const char *fmt,
	   va_list ap)
{
	uint32_t id;
	const struct shmlog__fmt_plan *p =
		shmlog__defer_site_ready(h, site, fmt, &id);
	if (SHMLOG_UNLIKELY(!p)) {
		p = shmlog__defer_site(h, site, fmt, types, &id);
		if (!p)
			return 1;
	}
	size_t room = shmlog__defer_room(h);
	if (SHMLOG_UNLIKELY(room <= 4))
		return 1; /* lanes too small for any block */
	unsigned char blk[SHMLOG_MSG_MAX];
	bool cut = false;
	memcpy(blk, &id, 4);
	ssize_t n = shmlog__fmt_encode_inline(&p->spec, ap, blk + 4, room - 4,
					      &cut);
	if (SHMLOG_UNLIKELY(n < 0))
		return 1;
	return write_rec(h, prio, tag, (const char *)blk, 4 + (size_t)n,
			 REC_FLAG_DEFERRED | (cut ? SHMLOG_REC_TRUNCATED : 0),
			 wflags, 0);
}

/* The va_list entries: shmlog__print_site() for sites of callers built
 * before sites had types (@site->types is not read: it may not be
 * there), shmlog__print_untyped() for the macros' sites whose values had
 * no types (counted once per site and buffer, fmtarg_table.c). */
#define PRINT_SITE_BODY(types)                                                 \
	unsigned flags = site ? site->flags : 0;                               \
	if (flags & ~SHMLOG_WRITE_UNFILTERED)                                  \
		return -EINVAL;                                                \
	va_list ap;                                                            \
	int r = 1;                                                             \
	if (SHMLOG_LIKELY(h && site && fmt)) {                                 \
		va_start(ap, fmt);                                             \
		r = print_site(h, site, (types), flags, prio, tag, fmt, ap);   \
		va_end(ap);                                                    \
	}                                                                      \
	if (r == 1) {                                                          \
		va_start(ap, fmt);                                             \
		r = print_text(h, flags, prio, tag, fmt, ap);                  \
		va_end(ap);                                                    \
	}                                                                      \
	return r

int shmlog__print_site(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		       const char *tag, const char *fmt, ...)
{
	PRINT_SITE_BODY(0);
}

int shmlog__print_untyped(shmlog_t *h, struct shmlog_fmt_site *site,
			  int prio, const char *tag, const char *fmt, ...)
{
	PRINT_SITE_BODY(SHMLOG__UNTYPED_SITE);
}

/* ---- typed calls: the values fetched by the macro ---- */

/* A typed call that its fast path does not take: the first call of a
 * site, a site switching buffers, * values, a string cut to fit, the
 * first write of a thread, a filter that changed, a long tag, a clock
 * anchor due, a new chunk to take. The block is encoded on the stack and
 * written as any record (write_rec); a call that cannot be deferred (a
 * format the codec refuses, a full table: counted in fmtarg_table.c) is
 * formatted here from the values, a conversion at a time. */
static __attribute__((noinline)) int
print_typed_general(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		    const char *tag, const char *fmt,
		    const union shmlog__arg *v)
{
	if (!site || (site->flags & ~SHMLOG_WRITE_UNFILTERED) ||
	    !(site->types & SHMLOG__TYPED_SITE))
		return -EINVAL;
	unsigned wflags = site->flags;
	if (SHMLOG_UNLIKELY(!h)) {
		shmlog__debug(SHMLOG__DBG_NULL_HANDLE, -EINVAL, NULL);
		return -EINVAL;
	}
	if (!fmt)
		return write_rec_call(h, prio, tag, NULL, 0, 0, wflags);
	uint32_t id;
	const struct shmlog__fmt_plan *p =
		shmlog__defer_site_ready(h, site, fmt, &id);
	if (!p)
		p = shmlog__defer_site(h, site, fmt, site->types, &id);
	size_t room = shmlog__defer_room(h);
	/* a record's block (room <= SHMLOG_MSG_MAX), or below the values
	 * of a text made here: more than the text, each value's encoding
	 * may be longer than its text (a 1-digit int takes 8 bytes), so
	 * that a text that fits the record is not cut for its values */
	unsigned char blk[SHMLOG_MSG_MAX + 1024];
	bool cut = false;
	struct shmlog__fmt_typed lay;
	if (p && room > 4) {
		const struct shmlog__fmt_typed *t = &p->typed;
		if (t->types != site->types) {
			/* the handle's plan of a format that is not this
			 * site's literal: laid out per call */
			shmlog__fmt_typed_layout(&p->spec, site->types, &lay);
			t = &lay;
		}
		memcpy(blk, &id, 4);
		ssize_t n = shmlog__fmt_encode_typed(t, v, blk + 4, room - 4,
						     &cut);
		if (n >= 0)
			return write_rec_call(
				h, prio, tag, (const char *)blk, 4 + (size_t)n,
				REC_FLAG_DEFERRED |
					(cut ? SHMLOG_REC_TRUNCATED : 0),
				wflags);
	}
	/* Not deferred (a full table, counted; another thread registering
	 * the format right now): the text made here, by the readers'
	 * formatter from the same block. A format the codec refuses never
	 * comes here from the macros (shmlog__site_prepare()). */
	struct shmlog__fmt_spec spec;
	if (shmlog__fmt_compile(fmt, &spec) != 0)
		return -EINVAL;
	shmlog__fmt_typed_layout(&spec, site->types, &lay);
	ssize_t n = shmlog__fmt_encode_typed(&lay, v, blk, sizeof(blk), &cut);
	if (n < 0)
		return -EINVAL;
	char text[SHMLOG_MSG_MAX + 2];
	size_t len = shmlog__fmt_format(fmt, strlen(fmt), blk, (size_t)n, text,
					sizeof(text));
	unsigned flags = cut || len > SHMLOG_MSG_MAX ? SHMLOG_REC_TRUNCATED : 0;
	return write_rec_call(h, prio, tag, text,
			      len > SHMLOG_MSG_MAX ? SHMLOG_MSG_MAX + 1 : len,
			      flags, wflags);
}

/* An exit of the typed fast path once it has checked the site and the
 * lane: print_typed_general()'s arguments recovered from what the path
 * keeps anyway, so that fewer of them stay live (in registers saved and
 * restored, or spilled) to its end: the handle is the lane's (its key is
 * the handle's id), the format the site's plan's (the path checked that
 * it is this call's). */
static __attribute__((noinline)) int
print_typed_exit(const struct shmlog__wlane *w, struct shmlog_fmt_site *site,
		 int prio, const char *tag, const union shmlog__arg *v)
{
	const struct shmlog__fmt_plan *p = shmlog__site_plan(site);
	return print_typed_general(w->h, site, prio, tag, p->fmt, v);
}

/* A late exit of the typed fast path (the clock's anchor due, a new
 * chunk to take): print_typed_exit() with the tag rebuilt from @tw, its
 * bytes if it is shorter than 8 (its NUL among them; what follows the
 * NUL is not the tag's), else its address, and the priority from
 * @meta. */
static __attribute__((noinline)) int
print_typed_late(const struct shmlog__wlane *w, struct shmlog_fmt_site *site,
		 const union shmlog__arg *v, uint64_t meta, uint64_t tw)
{
	char tb[8];
	const char *tag = (const char *)(uintptr_t)tw;
	if (META_TAG_LEN(meta) < 8) {
		memcpy(tb, &tw, 8);
		tag = tb;
	}
	return print_typed_exit(w, site, (int)(uint8_t)(meta >> 32), tag, v);
}

/* The typed fast path's record did not fit the OPEN chunk: take another
 * (ring.c), as the leaf of shmlog_write_n() does, then make the call
 * again from the start, into the new chunk, its values written straight
 * into the record, where the general path would lay out the block on
 * the stack and copy it. The switch under the general path's guard
 * (w->busy, the key 0): a signal handler's write meanwhile takes a
 * shared lane. Once: the call made again that misses too (only a
 * scribbled chunk word does) is the general path's. */
static __attribute__((noinline)) int
print_typed_switch(struct shmlog__wlane *w, struct shmlog_fmt_site *site,
		   const union shmlog__arg *v, uint64_t meta, uint64_t tw)
{
	if (w->typed_again)
		return print_typed_late(w, site, v, meta, tw);
	struct shmlog *h = w->h;
	uint32_t len = rec_len(META_TAG_LEN(meta), META_MSG_LEN(meta));
	guard_enter(w);
	bool ok = shmlog__ring_make_room(&h->seg, w, len);
	guard_leave(w, h);
	if (SHMLOG_UNLIKELY(!ok))
		return appended(h, false);
	char tb[8];
	const char *tag = (const char *)(uintptr_t)tw;
	if (META_TAG_LEN(meta) < 8) {
		memcpy(tb, &tw, 8);
		tag = tb;
	}
	const struct shmlog__fmt_plan *p = shmlog__site_plan(site);
	w->typed_again = true;
	int r = shmlog__print_typed(h, site, (int)(uint8_t)(meta >> 32), tag,
				    p->fmt, v);
	w->typed_again = false;
	return r;
}

/* A typed call's string @s measured (at most @room bytes) into *@len and
 * added to the block's length *@blen. false: the call cannot take it as
 * it is (a null pointer prints "(null)": measured as longer than @room;
 * a string past @room is cut), the general path's. */
static inline __attribute__((always_inline)) bool
typed_measure(const char *s, size_t room, size_t *blen, uint32_t *len)
{
	size_t n = shmlog__typed_strlen(s, room);
	*blen += n;
	if (SHMLOG_UNLIKELY(*blen > room))
		return false;
	*len = (uint32_t)n;
	return true;
}

static int print_typed_several(shmlog_t *h, struct shmlog_fmt_site *site,
			       int prio, const char *tag, const char *fmt,
			       const union shmlog__arg *v);
static int print_typed_long(shmlog_t *h, struct shmlog_fmt_site *site,
			    int prio, const char *tag, const char *fmt,
			    const union shmlog__arg *v);

/*
 * The macros' typed call (include/shmlog.h): the site's plan laid out
 * how each value is written when it was made, so a call measures its
 * strings (once), reserves the record, writes the format's id and the
 * values straight into it, and commits: no va_list, no parsing, no copy
 * through the stack, and no call. The conditions are the leaf's of
 * shmlog_write_n() (the TSC clock among them) but the message's length,
 * and the site's: ready for this handle, no * values, no string to cut.
 * Anything else is print_typed_general()'s, with the same values (a
 * jump). @several: the body for a site with two strings or more
 * (print_typed_several()); the other, shmlog__print_typed(), measures at
 * most one. @full: a string measured to any length; else one 16-byte
 * load measures it, and a string of 16 bytes or more (or one near the end
 * of its page) goes to print_typed_long(), the same body with @full: the
 * loop over 16-byte blocks, and the registers it takes, kept out of the
 * common case's function.
 */
static inline __attribute__((always_inline)) int
print_typed_body(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		 const char *tag, const char *fmt, const union shmlog__arg *v,
		 const bool several, const bool full)
{
	/* a null tag: tag_short()'s 0, an exit */
	if (SHMLOG_UNLIKELY(!h || !site ||
			    (unsigned)(prio - SHMLOG_VERBOSE) >
				    SHMLOG_FATAL - SHMLOG_VERBOSE))
		goto general;
	/* shmlog__defer_site_ready() with the plan's fast flag in the key
	 * (SHMLOG__SITE_SLOW), LMM(site:B) as there: this handle's, bit 0
	 * clear, bit 2 (SHMLOG__SITE_SEVERAL) as @several, in one compare */
	uint64_t key = __atomic_load_n(&site->key, __ATOMIC_ACQUIRE);
	if (SHMLOG_UNLIKELY(SHMLOG__SITE_HANDLE(key) !=
			    (h->site_key | (several ? SHMLOG__SITE_SEVERAL : 0)))) {
		if (!several && SHMLOG__SITE_HANDLE(key) ==
					(h->site_key | SHMLOG__SITE_SEVERAL))
			return print_typed_several(h, site, prio, tag, fmt, v);
		goto general;
	}
	const struct shmlog__fmt_plan *p = shmlog__site_plan(site);
	/* the site's own literal: laid out for its types (fast) */
	if (SHMLOG_UNLIKELY(p->fmt != fmt))
		goto general;
	const struct shmlog__fmt_typed *t = &p->typed;
	unsigned one = t->sone; /* at most SHMLOG__TYPED_MAX unless @several */
	struct shmlog__wlane *w =
		(struct shmlog__wlane *)(void *)((char *)shmlog__tls_lanes + h->tls_off);
	__asm__("" : "+r"(w));
	/* the thread's own lane at rest, no leaf inside it (KEY_BUSY) */
	if (SHMLOG_UNLIKELY(w->key != h->id))
		goto general;
	if (!(site->flags & SHMLOG_WRITE_UNFILTERED)) {
		int pass = shmlog__filter_fast(
			atomic_load_explicit(&h->filter_fast,
					     memory_order_relaxed),
			atomic_load_explicit(&h->seg.hdr->config.filter_gen,
					     memory_order_relaxed),
			prio);
		if (SHMLOG_UNLIKELY(pass <= 0)) {
			if (pass == 0)
				return 0; /* below every tag's level */
			goto exit; /* the tag decides */
		}
	}
	/* the strings measured, once; the block's length (typed_fit: what
	 * fits a record beside the longest tag, as shmlog__defer_room()).
	 * The common function checks none: the site's key matched, so the
	 * handle's clock is the TSC and writers need no fence (else its
	 * site_key matches no site), and the block fits with any string
	 * under 16 bytes (else the key has SHMLOG__SITE_SLOW:
	 * shmlog__defer_site()) */
	size_t room = h->typed_fit;
	size_t blen = t->fixed_id; /* 4 + t->fixed */
	uint32_t slen[SHMLOG__TYPED_MAX]; /* the k-th string's (several) */
	size_t n1 = 0; /* the one string's length */
	if (SHMLOG_LIKELY(one < SHMLOG__TYPED_MAX)) {
		/* one string: no loop, nothing kept but its length */
		if (!full) {
			uint32_t n = shmlog__typed_strlen16(
				(const char *)v[one].p);
			if (SHMLOG_UNLIKELY(n >= 16))
				return print_typed_long(h, site, prio, tag,
							fmt, v);
			blen += n;
			n1 = n;
		} else {
			uint32_t n;
			if (SHMLOG_UNLIKELY(!typed_measure(
				    (const char *)v[one].p, room, &blen, &n)))
				goto exit;
			n1 = n;
		}
		if (several)
			slen[0] = (uint32_t)n1;
	} else if (several) {
		unsigned ns = 0;
		for (unsigned m = t->smask; m; m &= m - 1) {
			if (SHMLOG_UNLIKELY(!typed_measure(
				    (const char *)v[__builtin_ctz(m)].p, room,
				    &blen, &slen[ns++])))
				goto exit;
		}
	} else if (full) {
		if (SHMLOG_UNLIKELY(blen > room))
			goto exit; /* no string: the values alone */
	} else if (SHMLOG_UNLIKELY(blen == 4)) {
		/* no value: a block of 4 bytes might not cover the tag's
		 * word past its NUL (below) */
		return print_typed_long(h, site, prio, tag, fmt, v);
	}
	uint32_t id = SHMLOG__SITE_ID(key);

	/* the tag measured after the strings: fewer values kept
	 * across their loop. The common function keeps the 8 bytes read
	 * as they are (the record's 8-byte store of a tag under 8 bytes):
	 * the block, 7 bytes or more with a value, overwrites those past
	 * the tag's NUL, never bytes of the caller's left in the record */
	uint64_t tword;
	uint32_t tag_len = tag_short_as(tag, &tword, full);
	if (SHMLOG_UNLIKELY(!tag_len))
		goto exit;
	/* from here on, a late exit needs only the lane, the site, the tag,
	 * the values and this word (print_typed_exit()) */
	uint64_t meta = rec_meta(0, (uint32_t)blen, prio, REC_FLAG_DEFERRED,
				 tag_len);
	/* the tag's bytes if it is shorter than 8, else its address: one
	 * value kept to the end instead of two (a late exit rebuilds the
	 * tag from it, print_typed_late()) */
	uint64_t tw = tag_len < 8 ? tword : (uint64_t)(uintptr_t)tag;
	uint64_t time = shmlog__rdtsc();
	if (SHMLOG_UNLIKELY(time >= atomic_load_explicit(&h->anchor_due,
							 memory_order_relaxed)))
		goto late;
	/* w->key is h->id (checked above): stored, not changed in place,
	 * here and at the end, so that this call's key word does not wait
	 * on the previous call's (a read-modify-write of memory is slower
	 * than a store, by time, not by instructions) */
	w->key = h->busy_key; /* h->id | KEY_BUSY */
	atomic_signal_fence(memory_order_seq_cst);
	struct shmlog__append_at at;
	if (SHMLOG_UNLIKELY(!shmlog__append_begin(
		    w, time, meta, (const char *)(uintptr_t)tw, tag_len, tw,
		    (uint32_t)blen, &at))) {
		atomic_signal_fence(memory_order_seq_cst);
		w->key = w->handle_id;
		goto next; /* a new chunk to take */
	}
	/* the plan again from the site (not kept across the reservation);
	 * the classes in a register: the stores below may alias the plan */
	t = &shmlog__site_plan(site)->typed;
	unsigned char *q = at.msg;
	memcpy(q, &id, 4);
	q += 4;
	const uint32_t *sl = slen;
	uint64_t cw = t->clsw; /* each class nonzero */
	/* the common shapes: straight-line stores, chosen by one jump (the
	 * common function only: a long string's copy outweighs the loop) */
	if (!several && !full) {
		switch (t->shape) {
#define TYPED_SHAPE_CASE(a, b, c)                                              \
	case SHMLOG__SHAPE(a, b, c):                                           \
		shmlog__typed_put_shape(q, SHMLOG__SHAPE(a, b, c), cw, v, n1); \
		goto commit;
			SHMLOG__TYPED_SHAPES(TYPED_SHAPE_CASE)
#undef TYPED_SHAPE_CASE
		default:
			break;
		}
	}
	/* the common function has a value at least (print_typed_long()
	 * takes a site with none) */
	if (full && !cw)
		goto commit;
	do {
		unsigned char c = (unsigned char)cw; /* compared as a byte */
		unsigned k = shmlog__typed_kind(c);
		q = shmlog__typed_put(q, k, c, v++,
				      k == SHMLOG__TK_S && several ? *sl++
								   : n1);
	} while (cw >>= 8);
commit:
	shmlog__append_commit(w, &at);
	atomic_signal_fence(memory_order_seq_cst);
	w->key = w->handle_id; /* h->id: the lane is the handle's */
	/* wake_readers(); no fence needed here (typed_fit), the wake-up a
	 * jump */
	if (SHMLOG_UNLIKELY(shmlog__append_wake_due(w)))
		return wake_then_0(w->h);
	return 0;
late:
	return print_typed_late(w, site, v, meta, tw);
next:
	return print_typed_switch(w, site, v, meta, tw);
exit:
	return print_typed_exit(w, site, prio, tag, v);
general:
	return print_typed_general(h, site, prio, tag, fmt, v);
}

/* A site with two strings or more: the loop over them, and the registers
 * it takes, kept out of the common case's function. */
static __attribute__((noinline)) int
print_typed_several(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		    const char *tag, const char *fmt,
		    const union shmlog__arg *v)
{
	return print_typed_body(h, site, prio, tag, fmt, v, true, true);
}

/* A site with one string, 16 bytes or longer (print_typed_body()). */
static __attribute__((noinline)) int
print_typed_long(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		 const char *tag, const char *fmt, const union shmlog__arg *v)
{
	return print_typed_body(h, site, prio, tag, fmt, v, false, true);
}

int shmlog__print_typed(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
			const char *tag, const char *fmt,
			const union shmlog__arg *v)
{
	return print_typed_body(h, site, prio, tag, fmt, v, false, false);
}

int shmlog_print(shmlog_t *h, int prio, const char *tag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = shmlog_vprint(h, prio, tag, fmt, ap);
	va_end(ap);
	return r;
}

