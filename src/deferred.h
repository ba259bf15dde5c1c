/* SPDX-License-Identifier: MIT */
/*
 * printf-style calls formatted by the reader (fmtarg_table.c; the codec:
 * fmtarg.c): encoding a call, the call sites' plans and keys, the format
 * table, and formatting a deferred record for a reader.
 */
#ifndef SHMLOG_DEFERRED_H
#define SHMLOG_DEFERRED_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fmtarg.h"
#include "handle.h"

/* Encode the call (@fmt a string that never changes at its address) as
 * its format's id and its argument values into @buf (@cap bytes, and no
 * more than fits a record beside @tag): 0 with *@len and the record's
 * *@flags, or 1 if it cannot be deferred, and the caller formats the text
 * itself (a conversion the codec refuses, a full table, a value too big).
 * Consumes @ap either way. */
int shmlog__defer_encode(struct shmlog *h, const char *tag, const char *fmt,
			 va_list ap, unsigned char *buf, size_t cap,
			 size_t *len, unsigned *flags);
/* A call site's plan (struct shmlog_fmt_site, include/shmlog.h): its
 * format, checked and compiled once per site, whatever the buffer. Never
 * freed: a site is static and outlives every handle. */
struct shmlog__fmt_plan {
	const char *fmt;
	struct shmlog__fmt_spec spec;
	/* a typed site's (its types nonzero): how its values are written
	 * (fmtarg_typed.h); types 0: not made */
	struct shmlog__fmt_typed typed;
};

/* A site's key: the handle's id, and the format's id in that handle's
 * buffer (the table is at most 1 MiB: 21 bits), 0 there if the table was
 * full. Handles whose id does not fit are never cached. */
#define SHMLOG__SITE_ID_BITS 21
#define SHMLOG__SITE_ID_MASK ((UINT64_C(1) << SHMLOG__SITE_ID_BITS) - 1)
/* Bit 0 of the key (a format's id is 8-aligned): the typed call's fast
 * path does not take this site's calls (its plan is not fast, or the
 * table was full), so that path checks one bit, not the plan. */
#define SHMLOG__SITE_SLOW UINT64_C(1)
/* Bit 2: a typed site whose plan writes two strings or more: the fast
 * path's other function takes it (fmtarg_call.c, print_typed_several), so
 * that the common one neither checks for it nor carries its loop. */
#define SHMLOG__SITE_SEVERAL UINT64_C(4)
#define SHMLOG__SITE_FLAGS (SHMLOG__SITE_SLOW | SHMLOG__SITE_SEVERAL)
#define SHMLOG__SITE_ID(key)                                                   \
	((uint32_t)((key) & SHMLOG__SITE_ID_MASK & ~SHMLOG__SITE_FLAGS))
/* A key with its format's id cleared (bits 0 and 2 kept: a slow site's
 * never equals a handle's site_key, a several-string site's equals it
 * with bit 2 added), and the site_key of a handle whose id does not fit
 * a key: bit 1, never set in a cleared key. */
#define SHMLOG__SITE_HANDLE(key) ((key) & ~(SHMLOG__SITE_ID_MASK & ~SHMLOG__SITE_FLAGS))
#define SHMLOG__SITE_NONE UINT64_C(2)

/* The site's plan and *@id if @site was made for @h and @fmt, else NULL:
 * ask shmlog__defer_site(). Three loads and three compares (the typed
 * fast path, fmtarg_call.c, checks the key's SHMLOG__SITE_SLOW bit instead of
 * the id and the plan). */
static inline const struct shmlog__fmt_plan *
shmlog__defer_site_ready(const struct shmlog *h,
			 const struct shmlog_fmt_site *site, const char *fmt,
			 uint32_t *id);
/* The slow path: make @site's plan (with its typed layout if @types,
 * the site's types, says SHMLOG__TYPED_SITE; @types is 0 for a site of a
 * caller built before sites had types), register its format in @h's
 * buffer, or say why the caller formats this call itself (NULL: a format the
 * codec refuses or a full table, each counted as shmlog_print_ex()
 * counts them; or another thread making the same format right now). */
const struct shmlog__fmt_plan *shmlog__defer_site(struct shmlog *h,
						  struct shmlog_fmt_site *site,
						  const char *fmt,
						  uint64_t types,
						  uint32_t *id);

/* A deferred record's argument block (@blk, @len bytes: hostile) as a
 * JSON array into @out (@cap bytes, NUL-terminated; "" if @cap < 3),
 * valid JSON and UTF-8 whatever the block holds (strings through json.c).
 * Returns 0 if the array holds every value of the block, or
 * SHMLOG_DEFERRED_CUT if it holds only those before the first that the
 * block does not hold whole (damage) or that did not fit. */
int shmlog__defer_args_json(const unsigned char *blk, size_t len, char *out,
			    size_t cap);
/* The argument block of the record shmlog_reader_next() returned last,
 * as the record holds it (after the format's id): for tests that compare
 * blocks byte for byte. 0, or -ENOENT if that record was not deferred
 * (reader.c). */
struct shmlog_reader;
int shmlog__reader_args(const struct shmlog_reader *r,
			const unsigned char **args, size_t *len);
/* Free a handle's cache of call sites (shmlog_close()). */
void shmlog__defer_free(struct shmlog *h);
/* The format whose id is @id in @s's table, copied into @buf (@cap
 * bytes, NUL-terminated): its length, or -1 if the id names no ready
 * entry. Reads the mapping: call it guarded. */
ssize_t shmlog__defer_fmt_lookup(const struct shmlog__seg *s, uint32_t id,
				 char *buf, size_t cap);
/* A deferred record's message (@msg, @len bytes: the id and the block)
 * as text into @out (@cap bytes, NUL-terminated); returns the length
 * (cut to cap - 1). *@fmt and *@fmt_len: the format as found in the
 * table, copied into @fmt_buf (@fmt_cap bytes); NULL if the id is bad.
 * Reads the mapping: call it guarded. Hostile input throughout. */
size_t shmlog__defer_format(const struct shmlog__seg *s,
			    const unsigned char *msg, size_t len, char *out,
			    size_t cap, char *fmt_buf, size_t fmt_cap,
			    size_t *fmt_len);

/* @site's plan, once its key, loaded with acquire (LMM(site:B)), named
 * a plan made for this handle: the key's acquire orders this load. */
static inline const struct shmlog__fmt_plan *
shmlog__site_plan(const struct shmlog_fmt_site *site)
{
	return (const struct shmlog__fmt_plan *)__atomic_load_n(
		&site->plan, __ATOMIC_RELAXED);
}

static inline const struct shmlog__fmt_plan *
shmlog__defer_site_ready(const struct shmlog *h,
			 const struct shmlog_fmt_site *site, const char *fmt,
			 uint32_t *id)
{
	/* LMM(site:B) pairs with the release store of the key
	 * (fmtarg_table.c, LMM(site:A)): the plan and the table's entry are
	 * there before the key names them */
	uint64_t key = __atomic_load_n(&site->key, __ATOMIC_ACQUIRE);
	if (SHMLOG_UNLIKELY(key >> SHMLOG__SITE_ID_BITS != h->id ||
			    !SHMLOG__SITE_ID(key)))
		return NULL;
	const struct shmlog__fmt_plan *p = shmlog__site_plan(site);
	if (SHMLOG_UNLIKELY(p->fmt != fmt))
		return NULL;
	*id = SHMLOG__SITE_ID(key);
	return p;
}

/* The bytes an argument block may take in @h's buffer: what fits a
 * record beside the longest tag, at most a message. */
static inline size_t shmlog__defer_room(const struct shmlog *h)
{
	size_t max = h->seg.fixed.max_record; /* >= REC_HDR + 8 (validated) */
	if (SHMLOG_UNLIKELY(max <= REC_HDR + SHMLOG_TAG_MAX))
		return 0;
	size_t room = max - REC_HDR - SHMLOG_TAG_MAX;
	return room < SHMLOG_MSG_MAX ? room : SHMLOG_MSG_MAX;
}

#endif
