/* SPDX-License-Identifier: MIT */
/*
 * printf-style calls formatted by the reader: where the formats live in
 * the segment, how a call site gets its format's id, what a deferred
 * record holds, and how a reader turns it back into text. The codec (the
 * argument block, what is refused, matching glibc byte for byte) is
 * fmtarg.c's.
 *
 * The format table
 * ----------------
 * A region of the segment (fixed header: fmt_off, fmt_size), written once
 * per call site and buffer, read by readers:
 *
 *   offset  size  meaning
 *   0       4     next: offset of the first free byte (64 at creation)
 *   4       4     count: entries taken
 *   64..          entries, each at an 8-byte boundary:
 *     +0    4     word: len | FMT_READY (bit 31) once the bytes are there
 *     +4    4     0
 *     +8    len   the format string, its NUL included, padded to 8
 *
 * A writer takes room with one fetch-add of next, copies the string in,
 * then stores the word (release). The entry's offset is the format's id.
 * A writer that dies before the word is stored wastes the room and nothing
 * else: no record names an id before its word is ready. A full table (or
 * one whose next makes no sense) sends the call back to the caller, which
 * formats the text itself; every such call is counted in the header's
 * stats.fmt_full (an atomic add per call, only once the table is full).
 *
 * A deferred record
 * -----------------
 * Flag REC_FLAG_DEFERRED in its header; its message is the format's id
 * (u32, little-endian) and the argument block (fmtarg.c). The block is
 * made to fit the record whole: a string argument is cut instead, and
 * marked so (the reader prints "<...>" after it).
 *
 * Which calls are deferred
 * ------------------------
 * Those of a call site of the SHMLOG_x macros (and SHMLOG_LOG_TO) whose
 * format is a string literal, and shmlog_print_ex() calls with
 * SHMLOG_WRITE_DEFERRED: the format is a string that never changes at its
 * address.
 *
 * A handle caches, per format address, the compiled format and its id (a
 * small open-addressing table, no lock): the first call of a format
 * compiles and registers it; a thread that finds it being made by another
 * formats its own call in the meantime. shmlog_print_ex() looks the format
 * up there on every call.
 *
 * A macro's call site (struct shmlog_fmt_site, static in the expansion)
 * keeps what never changes, so its calls look nothing up:
 *   plan  the compiled format (struct shmlog__fmt_plan), made on the
 *         site's first call whatever the handle, published with a CAS
 *         (two threads may both compile; one plan is kept), never freed
 *         (the site is static); or &plan_refused
 *   key   handle id << 21 | the format's id in that handle's buffer (0 if
 *         its table was full; 8-aligned: bit 0 set if the typed fast
 *         path does not take the site's calls, bit 2 if its plan writes
 *         two strings or more, deferred.h), stored with release once the
 *         handle's cache has registered the format: LMM(site:A), paired
 *         with the call's acquire load, LMM(site:B) (deferred.h)
 *   types the macro's compile-time codes of the call's values
 *         (include/shmlog.h, SHMLOG__TYPES): a typed site's plan also
 *         says which class each value is written as (fmtarg_typed.h),
 *         decided when the plan is made, before its first call fetches
 *         its values (shmlog__site_prepare); an untyped site (values of
 *         types the compiler could not tell: a va_list) is counted in
 *         the header's stats.fmt_untyped each time its key is stored
 * A call whose key names another handle (another buffer, a handle opened
 * again: ids are never reused) asks the handle's cache and stores the new
 * key; a site switching between two buffers registers the format once per
 * handle however often it switches. A fork child keeps the handles, the
 * mapping and so the keys. Handle ids of 2^43 and above are never cached.
 *
 * Trust
 * -----
 * A reader takes nothing in the table or the record on faith: the id is
 * checked against the table, the length against the table's end, the
 * string is copied out and NUL-terminated, and the codec parses it itself
 * and never hands it to printf.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmtarg_typed.h"
#include "internal.h"
#include "json.h"

/* ---- the writer: call sites and the table ----------------------------- */

enum { SITE_EMPTY, SITE_MAKING, SITE_READY, SITE_REFUSED, SITE_FULL };

struct defer_site {
	_Atomic(const char *) fmt; /* the key: the format's address */
	_Atomic uint32_t state;
	uint32_t id;
	struct shmlog__fmt_plan plan; /* fmt: the key's value */
};

#define DEFER_SITES 1024 /* per handle; a power of two */
#define DEFER_PROBES 16

struct shmlog__defer_cache {
	struct defer_site site[DEFER_SITES];
};

/* The handle's cache, made on the first deferred call. */
static struct shmlog__defer_cache *defer_cache(struct shmlog *h)
{
	struct shmlog__defer_cache *c =
		atomic_load_explicit(&h->defer, memory_order_acquire);
	if (c)
		return c;
	struct shmlog__defer_cache *made = calloc(1, sizeof(*made));
	if (!made)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(&h->defer, &c, made,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		free(made);
		return c;
	}
	return made;
}

void shmlog__defer_free(struct shmlog *h)
{
	free(atomic_load(&h->defer));
	atomic_store(&h->defer, NULL);
}

static struct shmlog__fmt_table *fmt_table(const struct shmlog__seg *s)
{
	return (struct shmlog__fmt_table *)(void *)(s->base + s->fixed.fmt_off);
}

/* Put @fmt into the buffer's table: its id, or -ENOSPC (full, or a table
 * whose next makes no sense) or -E2BIG (longer than a message). */
static int64_t fmt_register(struct shmlog *h, const char *fmt)
{
	const struct shmlog__fixed *f = &h->seg.fixed;
	size_t len = strnlen(fmt, SHMLOG_MSG_MAX + 1) + 1;
	if (len > SHMLOG_MSG_MAX)
		return -E2BIG;
	uint32_t size = FMT_ENTRY_HDR + (uint32_t)((len + 7) & ~(size_t)7);
	struct shmlog__fmt_table *t = fmt_table(&h->seg);
	uint32_t off = atomic_fetch_add_explicit(&t->next, size,
						 memory_order_relaxed);
	if (off < sizeof(*t) || off % 8 || off > f->fmt_size ||
	    size > f->fmt_size - off) {
		/* full: put next back where it was, if it still is */
		uint32_t was = off + size;
		atomic_compare_exchange_strong(&t->next, &was, off);
		return -ENOSPC;
	}
	unsigned char *e = h->seg.base + f->fmt_off + off;
	memset(e + FMT_ENTRY_HDR + len - 1, 0, size - FMT_ENTRY_HDR - len + 1);
	memcpy(e + FMT_ENTRY_HDR, fmt, len - 1);
	atomic_fetch_add_explicit(&t->count, 1, memory_order_relaxed);
	TESTPOINT(14); /* room taken, the word not stored */
	atomic_store_explicit((_Atomic uint32_t *)(void *)e,
			      (uint32_t)len | FMT_READY, memory_order_release);
	return off;
}

static uint32_t site_hash(const char *fmt)
{
	uint64_t x = (uint64_t)(uintptr_t)fmt * UINT64_C(0x9e3779b97f4a7c15);
	return (uint32_t)(x >> 40) & (DEFER_SITES - 1);
}

/* Find, or make, the handle's entry for @fmt: SITE_READY with *@out, or
 * why the caller formats this call itself: SITE_REFUSED or SITE_FULL
 * (each such call counted), SITE_MAKING (another thread is making it right
 * now) or SITE_EMPTY (the cache is crowded around @fmt). */
static unsigned site_find(struct shmlog *h, const char *fmt,
			  const struct defer_site **out)
{
	struct shmlog__defer_cache *c = defer_cache(h);
	if (!c)
		return SITE_EMPTY;
	uint32_t i = site_hash(fmt);
	for (int p = 0; p < DEFER_PROBES; p++, i = (i + 1) & (DEFER_SITES - 1)) {
		struct defer_site *s = &c->site[i];
		const char *k = atomic_load_explicit(&s->fmt,
						     memory_order_acquire);
		if (k == fmt) {
			uint32_t st = atomic_load_explicit(
				&s->state, memory_order_acquire);
			if (st == SITE_FULL || st == SITE_REFUSED)
				/* every such call is counted */
				atomic_fetch_add_explicit(
					st == SITE_FULL
						? &h->seg.hdr->stats.fmt_full
						: &h->seg.hdr->stats.fmt_refused,
					1, memory_order_relaxed);
			*out = s;
			return st == SITE_EMPTY ? SITE_MAKING : st;
		}
		if (k)
			continue;
		if (!atomic_compare_exchange_strong(&s->fmt, &k, fmt)) {
			if (k == fmt) /* another thread is making it */
				return SITE_MAKING;
			continue;
		}
		/* ours to make: compile, register, publish */
		uint32_t st = SITE_REFUSED;
		s->plan.fmt = fmt;
		if (shmlog__fmt_compile(fmt, &s->plan.spec) != 0) {
			atomic_fetch_add_explicit(&h->seg.hdr->stats.fmt_refused,
						  1, memory_order_relaxed);
		} else {
			int64_t id = fmt_register(h, fmt);
			if (id >= 0) {
				s->id = (uint32_t)id;
				st = SITE_READY;
			} else if (id == -ENOSPC) {
				st = SITE_FULL;
				atomic_fetch_add_explicit(
					&h->seg.hdr->stats.fmt_full, 1,
					memory_order_relaxed);
			}
		}
		atomic_store_explicit(&s->state, st, memory_order_release);
		*out = s;
		return st;
	}
	return SITE_EMPTY; /* the cache is crowded here: format in the caller */
}

/* The call site of @fmt, ready, or NULL: the caller formats this call. */
static const struct defer_site *site_get(struct shmlog *h, const char *fmt)
{
	const struct defer_site *s = NULL;
	return site_find(h, fmt, &s) == SITE_READY ? s : NULL;
}

/* ---- the writer: the SHMLOG_x macros' call sites ---------------------- */

/* A site's plan for a format the codec refuses: the caller formats. */
static const struct shmlog__fmt_plan plan_refused;

/* The plan of @site, made on its first call (any handle): NULL if memory
 * ran out. Two threads may make one at once; one plan is kept. */
static const struct shmlog__fmt_plan *site_plan(struct shmlog_fmt_site *site,
						const char *fmt, uint64_t types)
{
	const void *p = __atomic_load_n(&site->plan, __ATOMIC_ACQUIRE);
	if (p)
		return p;
	struct shmlog__fmt_plan *made = malloc(sizeof(*made));
	if (!made)
		return NULL;
	made->fmt = fmt;
	const void *want = made;
	memset(&made->typed, 0, sizeof(made->typed));
	if (shmlog__fmt_compile(fmt, &made->spec) != 0) {
		free(made);
		want = &plan_refused;
	} else if (types & SHMLOG__TYPED_SITE) {
		/* the site's types never change: how its values are written
		 * is decided here, once */
		shmlog__fmt_typed_layout(&made->spec, types, &made->typed);
	}
	if (!__atomic_compare_exchange_n(&site->plan, &p, want, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (want != &plan_refused)
			free(made);
		return p; /* another thread's, the same */
	}
	return want;
}

int shmlog__site_prepare(struct shmlog_fmt_site *site, const char *fmt)
{
	if (!site || !fmt || !(site->types & SHMLOG__TYPED_SITE))
		return 0;
	const struct shmlog__fmt_plan *p = site_plan(site, fmt, site->types);
	if (!p)
		return 0; /* no memory: asked again next call */
	int ok = p != &plan_refused && p->fmt == fmt &&
		 p->typed.types == site->types;
	__atomic_store_n(&site->typed_ok, ok ? 1 : -1, __ATOMIC_RELAXED);
	return ok;
}

const struct shmlog__fmt_plan *shmlog__defer_site(struct shmlog *h,
						  struct shmlog_fmt_site *site,
						  const char *fmt,
						  uint64_t types,
						  uint32_t *id)
{
	const struct shmlog__fmt_plan *p = site_plan(site, fmt, types);
	if (!p)
		return NULL;
	if (p == &plan_refused) {
		atomic_fetch_add_explicit(&h->seg.hdr->stats.fmt_refused, 1,
					  memory_order_relaxed);
		return NULL;
	}
	const struct defer_site *s = NULL;
	if (p->fmt != fmt) {
		/* not one literal (two formats through one site): the
		 * handle's cache, as shmlog_print_ex() */
		if (site_find(h, fmt, &s) != SITE_READY)
			return NULL;
		*id = s->id;
		return &s->plan;
	}
	bool cacheable = h->id < (UINT64_C(1) << (64 - SHMLOG__SITE_ID_BITS));
	uint64_t key = __atomic_load_n(&site->key, __ATOMIC_ACQUIRE);
	if ((key & ~SHMLOG__SITE_FLAGS) == h->id << SHMLOG__SITE_ID_BITS &&
	    cacheable) {
		/* this buffer's table was full for it: counted per call */
		atomic_fetch_add_explicit(&h->seg.hdr->stats.fmt_full, 1,
					  memory_order_relaxed);
		return NULL;
	}
	/* The format's id in this buffer: the handle's cache registers each
	 * format once per handle, however many sites or switches of handle
	 * ask for it. */
	unsigned st = site_find(h, fmt, &s);
	if (st == SITE_READY)
		*id = s->id;
	if (!cacheable || (st != SITE_READY && st != SITE_FULL))
		return st == SITE_READY ? p : NULL;
	key = h->id << SHMLOG__SITE_ID_BITS | (st == SITE_READY ? s->id : 0);
	/* not the typed fast path's: its common function takes a block
	 * with a string under 16 bytes as fitting (fmtarg_call.c) */
	if (st != SITE_READY || !p->typed.fast ||
	    4 + (uint32_t)p->typed.fixed + 15 > h->msg_fit)
		key |= SHMLOG__SITE_SLOW;
	if (p->typed.sone > SHMLOG__TYPED_MAX) /* two strings or more */
		key |= SHMLOG__SITE_SEVERAL;
	if (types & SHMLOG__UNTYPED_SITE) /* once per site and handle */
		atomic_fetch_add_explicit(&h->seg.hdr->stats.fmt_untyped, 1,
					  memory_order_relaxed);
	/* LMM(site:A): the plan, and the table's entry (fmt_register's
	 * release store, seen by site_find's acquire), before the key */
	__atomic_store_n(&site->key, key, __ATOMIC_RELEASE);
	return st == SITE_READY ? p : NULL;
}

int shmlog__defer_encode(struct shmlog *h, const char *tag, const char *fmt,
			 va_list ap, unsigned char *buf, size_t cap,
			 size_t *len, unsigned *flags)
{
	if (!h || !fmt)
		return 1;
	const struct defer_site *site = site_get(h, fmt);
	if (!site)
		return 1;
	/* the block must fit the record whole, beside the longest tag (not
	 * measured here: the write measures it) */
	(void)tag;
	size_t room = shmlog__defer_room(h);
	if (room < cap)
		cap = room;
	if (cap <= 4)
		return 1;
	uint32_t id = site->id;
	memcpy(buf, &id, 4);
	bool cut = false;
	ssize_t n = shmlog__fmt_encode_inline(&site->plan.spec, ap, buf + 4, cap - 4,
					      &cut);
	if (n < 0)
		return 1;
	*len = 4 + (size_t)n;
	*flags = REC_FLAG_DEFERRED | (cut ? SHMLOG_REC_TRUNCATED : 0);
	return 0;
}

/* ---- the reader ------------------------------------------------------- */

ssize_t shmlog__defer_fmt_lookup(const struct shmlog__seg *s, uint32_t id,
				 char *buf, size_t cap)
{
	const struct shmlog__fixed *f = &s->fixed;
	if (id % 8 || id < sizeof(struct shmlog__fmt_table) ||
	    id > f->fmt_size - FMT_ENTRY_HDR)
		return -1;
	const unsigned char *e = s->base + f->fmt_off + id;
	uint32_t word = atomic_load_explicit(
		(const _Atomic uint32_t *)(const void *)e, memory_order_acquire);
	uint32_t len = word & ~FMT_READY;
	if (!(word & FMT_READY) || len < 1 || len > cap ||
	    len > f->fmt_size - id - FMT_ENTRY_HDR)
		return -1;
	shmlog__copy_out(buf, e + FMT_ENTRY_HDR, len);
	buf[len - 1] = '\0';
	return (ssize_t)strlen(buf);
}

size_t shmlog__defer_format(const struct shmlog__seg *s,
			    const unsigned char *msg, size_t len, char *out,
			    size_t cap, char *fmt_buf, size_t fmt_cap,
			    size_t *fmt_len)
{
	*fmt_len = 0;
	if (fmt_cap)
		fmt_buf[0] = '\0';
	uint32_t id = 0;
	ssize_t n = -1;
	if (len >= 4) {
		memcpy(&id, msg, 4);
		n = shmlog__defer_fmt_lookup(s, id, fmt_buf, fmt_cap);
	}
	if (n < 0) {
		/* no format to go by: say so, never guess */
		int w = snprintf(out, cap, "<no format %u>", id);
		return w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap - 1;
	}
	*fmt_len = (size_t)n;
	size_t w = shmlog__fmt_format(fmt_buf, (size_t)n, msg + 4, len - 4, out,
				      cap);
	return w < cap ? w : cap - 1;
}

/* ---- the values as JSON (shmlog_reader_deferred) ---------------------- */

/* One value of the block at @blk + *@i (@len bytes in all) as JSON into
 * @dst (@cap bytes): its length (above @cap: it did not fit), and *@i
 * past it; or -1 if the block does not hold a whole value there (a tag no
 * writer makes, a value cut short): the damage. */
static ssize_t arg_json(const unsigned char *blk, size_t len, size_t *i,
			char *dst, size_t cap)
{
	size_t at = *i;
	unsigned cls = blk[at++] & SHMLOG__FMT_TAG_CLASS;
	char num[64];
	int w;
	if (cls == SHMLOG__FMT_INT32 && len - at >= 4) {
		int32_t v;
		memcpy(&v, blk + at, 4);
		at += 4;
		w = snprintf(num, sizeof(num), "%d", (int)v);
	} else if (cls == SHMLOG__FMT_INT64 && len - at >= 8) {
		int64_t v;
		memcpy(&v, blk + at, 8);
		at += 8;
		w = snprintf(num, sizeof(num), "%lld", (long long)v);
	} else if ((cls == SHMLOG__FMT_DOUBLE && len - at >= 8) ||
		   (cls == SHMLOG__FMT_LDOUBLE && len - at >= 16)) {
		double v;
		if (cls == SHMLOG__FMT_DOUBLE) {
			memcpy(&v, blk + at, 8);
		} else {
			long double l;
			memcpy(&l, blk + at, sizeof(l) < 16 ? sizeof(l) : 16);
			v = (double)l;
		}
		at += cls == SHMLOG__FMT_DOUBLE ? 8 : 16;
		/* JSON has no NaN nor infinity: those as strings */
		w = v == v && v - v == 0
			    ? snprintf(num, sizeof(num), "%.17g", v)
			    : snprintf(num, sizeof(num), "\"%g\"", v);
	} else if (cls == SHMLOG__FMT_POINTER && len - at >= 8) {
		uint64_t v;
		memcpy(&v, blk + at, 8);
		at += 8;
		w = snprintf(num, sizeof(num), "\"0x%llx\"",
			     (unsigned long long)v);
	} else if (cls == SHMLOG__FMT_STRING && len - at >= 2) {
		uint16_t l;
		memcpy(&l, blk + at, 2);
		at += 2;
		if (l > len - at)
			return -1; /* longer than what the block holds */
		*i = at + l;
		return (ssize_t)shmlog__json_str(dst, cap, (const char *)blk + at,
						 l, NULL);
	} else {
		return -1; /* a tag no writer makes, or a value cut short */
	}
	*i = at;
	if (w <= 0 || (size_t)w >= sizeof(num))
		return -1; /* not reached: 64 bytes hold any of these */
	if ((size_t)w <= cap)
		memcpy(dst, num, (size_t)w);
	return w;
}

int shmlog__defer_args_json(const unsigned char *blk, size_t len, char *out,
			    size_t cap)
{
	if (cap < 3) { /* not even room for "[]" */
		if (cap)
			out[0] = '\0';
		return SHMLOG_DEFERRED_CUT;
	}
	size_t n = 0, i = 0;
	int cut = 0;
	out[n++] = '[';
	for (unsigned k = 0; i < len; k++) {
		/* room for the value: all but the "]" and the NUL */
		size_t room = cap - n - 2, comma = k ? 1 : 0;
		if (k == SHMLOG__FMT_MAX_ARGS || room < comma) {
			cut = 1; /* more values than a call takes, or full */
			break;
		}
		ssize_t w = arg_json(blk, len, &i, out + n + comma, room - comma);
		if (w < 0 || (size_t)w > room - comma) {
			cut = 1; /* damaged, or no room: what came before */
			break;
		}
		if (comma)
			out[n] = ',';
		n += comma + (size_t)w;
	}
	out[n++] = ']';
	out[n] = '\0';
	return cut ? SHMLOG_DEFERRED_CUT : 0;
}
