/* SPDX-License-Identifier: MIT */
/*
 * The output buffer's writers, for the formatters (format.c) alone: bytes,
 * strings and numbers put into a struct out (format.h) with no stdio and
 * no bounds check per byte. The caller makes room first: out_room() for a
 * line or a record of @r, which every writer below then fits in. Inline:
 * a record's steps compile into one function, a constant string into a few
 * moves. Integers are formatted by hand, two digits per division.
 */
#ifndef SHMLOG_FORMAT_OUT_H
#define SHMLOG_FORMAT_OUT_H

#include <stdint.h>
#include <string.h>

#include "format.h"

/* Room for the largest record of a hostile segment (see out_room()); the
 * buffer is written out once OUT_BLOCK bytes are in it. */
#define OUT_CAP (1024 * 1024)
#define OUT_BLOCK (64 * 1024)

/* Inline always: a constant string is then a few moves, and the steps of
 * a record are one function. */
#define PUT_INLINE static inline __attribute__((always_inline))
/* Left to the compiler, which keeps them out of line: rarer steps (the
 * fraction of a second, an escape). format_out.c uses none of them. */
#define PUT_CALLED static __attribute__((unused))

/* Make room for one line or record of @r: at most 6 bytes out per byte in
 * (an escape), plus a base64 copy and the prefix. A record in a hostile
 * segment may be larger than SHMLOG_MSG_MAX, but its lengths are 8 and 16
 * bits wide in the segment, so that need stays under OUT_CAP / 2. */
PUT_INLINE void out_room(struct out *o, const struct shmlog_record *r)
{
	size_t tag = r->tag_len < 255 ? r->tag_len : 255;
	size_t msg = r->msg_len < 65535 ? r->msg_len : 65535;
	if (o->len >= OUT_BLOCK || o->cap - o->len < 1024 + (tag + msg) * 8)
		out_flush(o);
}

PUT_INLINE void put_c(struct out *o, char c)
{
	o->buf[o->len++] = c;
}

PUT_INLINE void put_n(struct out *o, const char *s, size_t n)
{
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

PUT_INLINE void put_s(struct out *o, const char *s)
{
	put_n(o, s, strlen(s));
}

/* "00" to "99": two digits per division. */
static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

/* How many decimal digits @v has. */
static inline unsigned dec_digits(uint64_t v)
{
	unsigned n = 1;
	for (; v >= 100000000; n += 8)
		v /= 100000000;
	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/* @v as @n decimal digits ending at @end, written backwards; 32-bit
 * divisions (cheaper) once @v fits. */
static inline void put_digits_at(char *end, uint64_t v, unsigned n)
{
	char *p = end;
	for (; n >= 2 && v > UINT32_MAX; n -= 2) {
		unsigned d = (unsigned)(v % 100) * 2;
		v /= 100;
		p -= 2;
		p[0] = digit_pairs[d];
		p[1] = digit_pairs[d + 1];
	}
	uint32_t w = (uint32_t)v;
	for (; n >= 2; n -= 2) {
		unsigned d = (w % 100) * 2;
		w /= 100;
		p -= 2;
		p[0] = digit_pairs[d];
		p[1] = digit_pairs[d + 1];
	}
	if (n)
		p[-1] = (char)('0' + w);
}

/* @v in decimal, right-aligned in @width columns (as %*llu). */
static inline void put_u64(struct out *o, uint64_t v, int width)
{
	unsigned n = dec_digits(v);
	char *p = o->buf + o->len;
	for (int pad = width - (int)n; pad > 0; pad--)
		*p++ = ' ';
	put_digits_at(p + n, v, n);
	o->len = (size_t)(p + n - o->buf);
}

static inline void put_i64(struct out *o, int64_t v, int width)
{
	if (v < 0) {
		put_c(o, '-');
		put_u64(o, (uint64_t)0 - (uint64_t)v, width - 1);
	} else {
		put_u64(o, (uint64_t)v, width);
	}
}

/* @v (below 10^@digits) zero-padded to @digits digits. */
PUT_CALLED void put_zeros(struct out *o, uint32_t v, int digits)
{
	put_digits_at(o->buf + o->len + digits, v, (unsigned)digits);
	o->len += (size_t)digits;
}

PUT_CALLED void put_hex_byte(struct out *o, const char *prefix, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	put_s(o, prefix);
	put_c(o, hex[c >> 4]);
	put_c(o, hex[c & 15]);
}

#endif /* SHMLOG_FORMAT_OUT_H */
