/* SPDX-License-Identifier: MIT */
/*
 * UTF-8, the one place that says what it is (RFC 3629): a validator of one
 * character and a cutter that never splits one. Header-only, inline: the
 * cutter runs in writers (a tag, a message or a string value cut to fit),
 * the validator in every formatter (src/json.c, tools/format.c).
 *
 * Well-formed means what RFC 3629 and Unicode's table 3-7 say: no
 * overlong form (C0, C1, E0 80-9F, F0 80-8F), no surrogate (ED A0-BF), no
 * code point past U+10FFFF (F4 90-BF, F5-FF), no sequence cut short.
 */
#ifndef SHMLOG_UTF8_H
#define SHMLOG_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed UTF-8 character at @s (@n > 0 bytes there),
 * its code point in *@cp; 0 if the bytes there are not one (an ASCII byte
 * is a character of length 1). */
static inline size_t shmlog__utf8_seq(const unsigned char *s, size_t n,
				      uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		*cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		*cp = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		*cp = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if (i > 1 && (s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	return len;
}

/* Is @s (@n bytes) all well-formed UTF-8? */
static inline int shmlog__utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;
	for (size_t i = 0, k; i < n; i += k)
		if (!(k = shmlog__utf8_seq(u + i, n - i, &cp)))
			return 0;
	return 1;
}

/* Where to cut @s, longer than @max bytes (s[max] is readable), to keep at
 * most @max: before the character that s[max] continues, if the cut would
 * split one, so that readers never see half of a character; at @max if
 * it would not, or if the bytes there are not UTF-8 (nothing to keep
 * whole). Never more than 3 bytes before @max. */
static inline size_t shmlog__utf8_cut(const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = max;
	for (int i = 0; i < 3 && n && (u[n] & 0xc0) == 0x80; i++)
		n--;
	if (n == max || u[n] < 0xc2 || u[n] > 0xf4)
		return max; /* not a lead byte */
	/* a lead byte: does its character reach past @max? */
	size_t len = u[n] >= 0xf0 ? 4 : u[n] >= 0xe0 ? 3 : 2;
	return max - n < len ? n : max;
}

#endif
