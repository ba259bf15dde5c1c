/* SPDX-License-Identifier: MIT */
/*
 * Damaged printf-style records, made to order for the tests of every JSON
 * output (tests/hardening/test_json.c) and the seeds of the JSON fuzz
 * target (tests/fuzz/make_seeds.c): a value block (src/fmtarg.c's layout)
 * of random values, then damaged: cut in the middle of a value, a tag
 * byte no writer makes, a string longer than what follows, more values
 * than a call takes; tags and strings of hostile bytes (bytes that are
 * not UTF-8, overlong forms, surrogates, C0 and C1 controls, quotes,
 * backslashes, U+2028, a character cut at the end).
 *
 * The maker knows what it made: how many values a reader decodes whole
 * before the damage, and whether the block decodes whole.
 */
#ifndef SHMLOG_JSON_DAMAGE_H
#define SHMLOG_JSON_DAMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fmtarg.h"
#include "shmlog.h"

static inline uint64_t jd_rand(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Pieces of hostile text: each is whole, none holds a NUL. */
static const char *const jd_pieces[] = {
	"eth0", "a", " ", "\"", "\\", "\\u0000", "\n", "\r\n", "\t", "\x01",
	"\x1b[31m", "\x7f", "\xc2\x80", "\xc2\x9b", "\xc2\x9f", "\xc3\xa9",
	"\xe2\x80\xa8", "\xe2\x80\xa9", "\xef\xbf\xbd", "\xf0\x9f\x98\x80",
	"\xf8\x80\x80", "\xf8\x88\x80\x80\x80", "\xc0\xaf", "\xc1\xbf",
	"\xe0\x80\xaf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf4\x90\x80\x80",
	"\xf5\x80\x80\x80", "\xff", "\xfe", "\x80", "\xbf", "\xc3", "\xe2\x82",
	"\xf0\x9f\x98", "</script>", "%s", "%d", "%%", "%n", "%*.*s", "%.3f",
	"{\"a\":1}", "],[", "\",\"", "null",
};
#define JD_PIECES (sizeof(jd_pieces) / sizeof(jd_pieces[0]))

/* Up to @cap bytes of hostile text into @out (no NUL); its length. */
static inline size_t jd_text(uint64_t *s, char *out, size_t cap)
{
	size_t n = 0, want = jd_rand(s) % (cap + 1);
	while (n < want) {
		const char *p = jd_pieces[jd_rand(s) % JD_PIECES];
		size_t l = strlen(p);
		if (n + l > cap)
			break;
		memcpy(out + n, p, l);
		n += l;
	}
	/* sometimes a random byte (not NUL) in the middle */
	if (n && jd_rand(s) % 4 == 0)
		out[jd_rand(s) % n] = (char)(1 + jd_rand(s) % 255);
	return n;
}

enum jd_damage {
	JD_NONE,  /* a block as a writer makes it */
	JD_CUT,   /* cut short at a random byte */
	JD_TAG,   /* a value's tag byte replaced by one no writer makes */
	JD_LONG,  /* a string's length past the block's end */
	JD_MANY,  /* more values than a call takes */
	JD_JUNK,  /* random bytes */
	JD_KINDS
};

struct jd_rec {
	char tag[SHMLOG_TAG_MAX + 1]; /* NUL-terminated, no NUL inside */
	size_t tag_len;
	unsigned char blk[3000]; /* fits beside any tag, whatever the lanes */
	size_t blk_len;
	enum jd_damage damage;
	unsigned whole; /* values a reader decodes whole */
	bool complete; /* every byte of the block decodes */
	bool exact; /* false: junk, of which @whole is a lower bound and
		     * @complete unknown */
};

/* One value of a random class at @p (room for any); its size. */
static inline size_t jd_value(uint64_t *s, unsigned char *p, size_t room)
{
	static const unsigned char classes[] = {
		SHMLOG__FMT_INT32,   SHMLOG__FMT_INT64,  SHMLOG__FMT_DOUBLE,
		SHMLOG__FMT_LDOUBLE, SHMLOG__FMT_STRING, SHMLOG__FMT_STRING,
		SHMLOG__FMT_POINTER,
	};
	unsigned char cls = classes[jd_rand(s) % sizeof(classes)];
	uint64_t v[2] = {jd_rand(s), jd_rand(s)};
	if (jd_rand(s) % 4 == 0) /* infinities, NaNs, extremes */
		v[0] = jd_rand(s) % 2 ? 0x7ff0000000000000ull | (v[0] & 1)
				      : 0x8000000000000000ull;
	size_t size;
	switch (cls) {
	case SHMLOG__FMT_INT32: size = 5; break;
	case SHMLOG__FMT_LDOUBLE: size = 17; break;
	case SHMLOG__FMT_STRING: size = 3; break;
	default: size = 9;
	}
	if (size > room)
		return 0;
	p[0] = cls;
	memcpy(p + 1, v, size - 1);
	if (cls == SHMLOG__FMT_STRING) {
		char text[256];
		size_t cap = room - 3 < sizeof(text) ? room - 3 : sizeof(text);
		uint16_t l = (uint16_t)jd_text(s, text, cap);
		if (jd_rand(s) % 8 == 0)
			p[0] |= SHMLOG__FMT_TAG_TRUNC;
		memcpy(p + 1, &l, 2);
		memcpy(p + 3, text, l);
		size += l;
	}
	return size;
}

/* A record: a hostile tag and a value block, damaged as @s decides. */
static inline void jd_make(uint64_t *s, struct jd_rec *r)
{
	r->tag_len = jd_text(s, r->tag, SHMLOG_TAG_MAX);
	r->tag[r->tag_len] = '\0';
	r->damage = (enum jd_damage)(jd_rand(s) % JD_KINDS);
	size_t at[SHMLOG__FMT_MAX_ARGS + 8]; /* where each value starts */
	unsigned max = r->damage == JD_MANY ? SHMLOG__FMT_MAX_ARGS + 8
					    : 1 + (unsigned)(jd_rand(s) % 8);
	unsigned n = 0;
	size_t len = 0, room = sizeof(r->blk) / (jd_rand(s) % 2 ? 1 : 8);
	while (n < max) {
		size_t k = jd_value(s, r->blk + len, room - len);
		if (!k)
			break;
		at[n++] = len;
		len += k;
	}
	r->blk_len = len;
	r->whole = n < SHMLOG__FMT_MAX_ARGS ? n : SHMLOG__FMT_MAX_ARGS;
	r->complete = n <= SHMLOG__FMT_MAX_ARGS;
	r->exact = true;
	if (!n || r->damage == JD_NONE || r->damage == JD_MANY)
		return;
	unsigned v = (unsigned)(jd_rand(s) % n); /* the value damaged */
	size_t end = v + 1 < n ? at[v + 1] : len;
	r->whole = v;
	r->complete = false;
	switch (r->damage) {
	case JD_CUT: /* inside the value: past its tag, before its end */
		r->blk_len = at[v] + 1 + jd_rand(s) % (end - at[v] - 1);
		break;
	case JD_TAG: {
		static const unsigned char bad[] = {0x00, 0x07, 0x0f, 0x70,
						    0x87, 0xff};
		r->blk[at[v]] = bad[jd_rand(s) % sizeof(bad)];
		break;
	}
	case JD_LONG:
		if ((r->blk[at[v]] & SHMLOG__FMT_TAG_CLASS) ==
		    SHMLOG__FMT_STRING) {
			uint16_t l = (uint16_t)(len - at[v] - 3 + 1 +
						jd_rand(s) % 100);
			memcpy(r->blk + at[v] + 1, &l, 2);
		} else { /* not a string: cut after its tag instead */
			r->blk_len = at[v] + 1;
		}
		break;
	default: /* JD_JUNK: the block's bytes from value v on */
		for (size_t i = at[v]; i < len; i++)
			r->blk[i] = (unsigned char)jd_rand(s);
		/* what a reader makes of junk is the reader's own: only
		 * the values before it are known */
		r->whole = v;
		r->exact = false;
		break;
	}
}

#endif
