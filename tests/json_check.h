/* SPDX-License-Identifier: MIT */
/*
 * Strict checks of text the project emits, written apart from the code
 * they check (src/json.c, src/utf8.h) so that a shared mistake cannot
 * hide: a UTF-8 validator (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF, no cut sequence) and a JSON validator (RFC 8259:
 * one value, whitespace around it; strings with no raw control
 * character, only the escapes the RFC lists, \u escapes that name whole
 * characters: a high surrogate only followed by a low one).
 *
 * Header-only, for the tests and the fuzz targets.
 */
#ifndef SHMLOG_JSON_CHECK_H
#define SHMLOG_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Is @s (@n bytes) valid UTF-8? */
static inline bool jc_utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t len;
		uint32_t cp, min;
		if ((c & 0xe0) == 0xc0) {
			len = 2, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			len = 3, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			len = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

struct jc {
	const unsigned char *p, *end;
	int depth;
};

static inline void jc_ws(struct jc *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static inline bool jc_lit(struct jc *j, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return false;
	j->p += n;
	return true;
}

static inline int jc_hex4(struct jc *j)
{
	if (j->end - j->p < 4)
		return -1;
	int v = 0;
	for (int k = 0; k < 4; k++) {
		unsigned char c = j->p[k];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	j->p += 4;
	return v;
}

static inline bool jc_string(struct jc *j)
{
	if (j->p >= j->end || *j->p++ != '"')
		return false;
	while (j->p < j->end) {
		unsigned char c = *j->p++;
		if (c == '"')
			return true;
		if (c < 0x20)
			return false;
		if (c != '\\')
			continue;
		if (j->p >= j->end)
			return false;
		c = *j->p++;
		if (c == 'u') {
			int u = jc_hex4(j);
			if (u < 0 || (u >= 0xdc00 && u <= 0xdfff))
				return false;
			if (u >= 0xd800 && u <= 0xdbff) {
				if (!jc_lit(j, "\\u"))
					return false;
				int lo = jc_hex4(j);
				if (lo < 0xdc00 || lo > 0xdfff)
					return false;
			}
		} else if (!strchr("\"\\/bfnrt", c) || !c) {
			return false;
		}
	}
	return false;
}

static inline bool jc_digits(struct jc *j)
{
	const unsigned char *s = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static inline bool jc_number(struct jc *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!jc_digits(j))
		return false;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!jc_digits(j))
			return false;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!jc_digits(j))
			return false;
	}
	return true;
}

static inline bool jc_value(struct jc *j);

/* An array or an object: @close its closing byte. */
static inline bool jc_list(struct jc *j, unsigned char close, bool members)
{
	if (++j->depth > 64)
		return false;
	j->p++;
	jc_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return true;
	}
	for (;;) {
		jc_ws(j);
		if (members) {
			if (!jc_string(j))
				return false;
			jc_ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return false;
		}
		if (!jc_value(j))
			return false;
		jc_ws(j);
		if (j->p >= j->end)
			return false;
		unsigned char c = *j->p++;
		if (c == close) {
			j->depth--;
			return true;
		}
		if (c != ',')
			return false;
	}
}

static inline bool jc_value(struct jc *j)
{
	jc_ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p) {
	case '{': return jc_list(j, '}', true);
	case '[': return jc_list(j, ']', false);
	case '"': return jc_string(j);
	case 't': return jc_lit(j, "true");
	case 'f': return jc_lit(j, "false");
	case 'n': return jc_lit(j, "null");
	default: return jc_number(j);
	}
}

/* Is @s (@n bytes) one JSON text, valid UTF-8? */
static inline bool jc_json_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (!jc_utf8_valid(u, n))
		return false;
	struct jc j = {u, u + n, 0};
	if (!jc_value(&j))
		return false;
	jc_ws(&j);
	return j.p == j.end;
}

#endif
