/* SPDX-License-Identifier: MIT */
/*
 * The JSON string encoder (json.h says the policy and who uses it).
 *
 * Speed: `shmlog cat -v json` must format faster than writers write, so
 * runs of bytes that need no escape are found 16 bytes at a time (SSE2)
 * or 8 (a word's bit tricks) and copied with memcpy; with room for the
 * rest of the input, a run is copied as it is scanned, 16 bytes at once,
 * so that a plain message is read once. Only the bytes that stop a run go
 * through the escaping below, and only those above 0x7f through the UTF-8
 * validator (utf8.h).
 */
#include "json.h"

#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "utf8.h"

/* What has been written to @d, and what would have been past @cap. */
struct sink {
	char *d;
	size_t cap, len;
};

static inline void put(struct sink *o, const char *s, size_t n)
{
	if (o->len <= o->cap && n <= o->cap - o->len)
		memcpy(o->d + o->len, s, n);
	o->len += n;
}

/* ---- runs of bytes copied as they are: 0x20-0x7e but '"' and '\' ---- */

/* Word-at-a-time tests on 8 bytes (the classic bit tricks): does any
 * byte lie below @n (n <= 128), above @m (m <= 127), or equal @c? */
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
#define ANY_BELOW(x, n) (((x) - ONES * (n)) & ~(x) & HIGHS)
#define ANY_ABOVE(x, m) ((((x) + ONES * (127 - (m))) | (x)) & HIGHS)
#define ANY_EQUAL(x, c) ANY_BELOW((x) ^ (ONES * (c)), 1)

static inline uint64_t load8(const unsigned char *p)
{
	uint64_t x;
	memcpy(&x, p, 8);
	return x;
}

static inline int plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

static inline uint64_t word_stops(uint64_t x)
{
	return ANY_BELOW(x, 0x20) | ANY_ABOVE(x, 0x7e) | ANY_EQUAL(x, '"') |
	       ANY_EQUAL(x, '\\');
}

#ifdef __SSE2__
/* A bit for each of the 16 bytes of @x that JSON takes as it is:
 * printable ASCII is 0x20..0x7e, which as signed bytes is above 0x1f and
 * below 0x7f (0x80..0xff are negative). */
static inline unsigned plain16(__m128i x)
{
	const __m128i lo = _mm_set1_epi8(0x1f), hi = _mm_set1_epi8(0x7f);
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
	__m128i ok = _mm_and_si128(_mm_cmpgt_epi8(x, lo), _mm_cmplt_epi8(x, hi));
	__m128i special = _mm_or_si128(_mm_cmpeq_epi8(x, quote),
				       _mm_cmpeq_epi8(x, bslash));
	return (unsigned)_mm_movemask_epi8(_mm_andnot_si128(special, ok));
}
#endif

/* Length of the run at @u (@n bytes there) of bytes taken as they are. */
static size_t run_length(const unsigned char *u, size_t n)
{
	size_t i = 0;
#ifdef __SSE2__
	for (; i + 16 <= n; i += 16) {
		unsigned ok = plain16(_mm_loadu_si128((const __m128i *)(u + i)));
		if (ok != 0xffff)
			return i + (size_t)__builtin_ctz(~ok);
	}
	if (i < n && n >= 16) {
		/* the last 16 bytes, overlapping what is known plain: the
		 * first stop among them is the first one past i */
		unsigned ok = plain16(
			_mm_loadu_si128((const __m128i *)(u + n - 16)));
		return ok == 0xffff ? n : n - 16 + (size_t)__builtin_ctz(~ok);
	}
#endif
	for (; i + 8 <= n; i += 8)
		if (word_stops(load8(u + i)))
			break;
	if (i + 8 > n && n >= 8 && !word_stops(load8(u + n - 8)))
		return n; /* the last 8 bytes cover what is left */
	while (i < n && plain(u[i]))
		i++;
	return i;
}

#ifdef __SSE2__
/* The run at @u (@n >= 16 bytes there) copied to @d while it is scanned,
 * 16 bytes at a time; its length. The block holding the run's end is
 * copied whole: the bytes after the run land in @d, to be overwritten
 * next, but never past @d + @n. */
static size_t copy_run(char *d, const unsigned char *u, size_t n)
{
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(u + i));
		_mm_storeu_si128((__m128i *)(void *)(d + i), x);
		unsigned ok = plain16(x);
		if (ok != 0xffff)
			return i + (size_t)__builtin_ctz(~ok);
	}
	if (i < n) { /* the last 16, overlapping plain ones */
		__m128i x = _mm_loadu_si128((const __m128i *)(u + n - 16));
		_mm_storeu_si128((__m128i *)(void *)(d + n - 16), x);
		unsigned ok = plain16(x);
		i = ok == 0xffff ? n : n - 16 + (size_t)__builtin_ctz(~ok);
	}
	return i;
}
#endif

/* ---- the bytes that stop a run ---- */

static void put_u00(struct sink *o, unsigned c)
{
	static const char hex[] = "0123456789abcdef";
	char e[6] = {'\\', 'u', '0', '0', hex[c >> 4 & 15], hex[c & 15]};
	put(o, e, 6);
}

/* The character (or the byte that is not one) at @u (@n > 0 bytes
 * there), escaped as json.h says; how many bytes it took. */
static size_t put_escaped(struct sink *o, const unsigned char *u, size_t n,
			  unsigned *flags)
{
	unsigned char c = u[0];
	if (c < 0x80) {
		switch (c) {
		case '"': put(o, "\\\"", 2); break;
		case '\\': put(o, "\\\\", 2); break;
		case '\n': put(o, "\\n", 2); break;
		case '\r': put(o, "\\r", 2); break;
		case '\t': put(o, "\\t", 2); break;
		default:
			if (plain(c))
				put(o, (const char *)u, 1);
			else
				put_u00(o, c);
		}
		return 1;
	}
	uint32_t cp;
	size_t len = shmlog__utf8_seq(u, n, &cp);
	if (!len) {
		put(o, "\\ufffd", 6);
		*flags |= SHMLOG__JSON_NOT_UTF8;
		return 1;
	}
	if (cp <= 0x9f) /* C1 */
		put_u00(o, cp);
	else if (cp == 0x2028)
		put(o, "\\u2028", 6);
	else if (cp == 0x2029)
		put(o, "\\u2029", 6);
	else
		put(o, (const char *)u, len);
	return len;
}

size_t shmlog__json_str(char *dst, size_t cap, const char *s, size_t n,
			unsigned *flags)
{
	const unsigned char *u = (const unsigned char *)s;
	struct sink o = {dst, cap, 0};
	unsigned ignored = 0;
	if (!flags)
		flags = &ignored;
	put(&o, "\"", 1);
	size_t i = 0;
	while (i < n) {
		size_t run;
#ifdef __SSE2__
		if (n - i >= 16 && o.len <= o.cap && o.cap - o.len >= n - i) {
			run = copy_run(o.d + o.len, u + i, n - i);
			o.len += run;
		} else
#endif
		{
			run = run_length(u + i, n - i);
			put(&o, s + i, run);
		}
		i += run;
		if (i < n)
			i += put_escaped(&o, u + i, n - i, flags);
	}
	put(&o, "\"", 1);
	return o.len;
}
