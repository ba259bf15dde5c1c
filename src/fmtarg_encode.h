/* SPDX-License-Identifier: MIT */
/*
 * The encoder of fmtarg.c (its top comment: the argument block), inline,
 * for the write path: writer.c expands it where the va_list was started,
 * so the values are fetched without a call and without reloading the
 * va_list after every byte stored. fmtarg.c's shmlog__fmt_encode() is the
 * same code out of line.
 */
#ifndef SHMLOG_FMTARG_ENCODE_H
#define SHMLOG_FMTARG_ENCODE_H

#include <errno.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "fmtarg.h"
#include "utf8.h"

#define SHMLOG__FMT_STRING_MAX 0xffffu

/* ---- encode: the write path ---- */

static inline unsigned char *put_u16(unsigned char *p, uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 2);
#else
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
#endif
	return p + 2;
}

static inline unsigned char *put_u32(unsigned char *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 4);
#else
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
#endif
	return p + 4;
}

static inline unsigned char *put_u64(unsigned char *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 8);
#else
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
#endif
	return p + 8;
}

static inline unsigned char *put_double(unsigned char *p, double d)
{
	uint64_t bits;
	memcpy(&bits, &d, 8);
	return put_u64(p, bits);
}

/* Only the value's bytes: the x87 format's 6 padding bytes are whatever
 * the stack held, and must not leak into a shared segment. */
static inline unsigned char *put_ldouble(unsigned char *p, long double v)
{
#if LDBL_MANT_DIG == 64
	memcpy(p, &v, 10);
	memset(p + 10, 0, 6);
#else
	memcpy(p, &v, sizeof(v));
	memset(p + sizeof(v), 0, 16 - sizeof(v));
#endif
	return p + 16;
}

#if defined(__SSE2__) && !defined(__SANITIZE_ADDRESS__) &&                    \
	!defined(__SANITIZE_THREAD__)
#include <emmintrin.h>
#define SHMLOG__FMT_SHORT_COPY 1

/*
 * A string shorter than 16 bytes, measured and copied with one 16-byte
 * load and store instead of strnlen() and memcpy(): its length, or 16 if
 * it is not that short (nothing stored then). It reads up to 15 bytes
 * past the string's NUL, never across a 4 KiB boundary, so never a page
 * the string does not share: no fault, as glibc's own strlen. The bytes
 * stored past the NUL are overwritten by the next value or left out of the
 * record. The sanitizer builds, which would report that read, take the
 * strnlen() path. @dst has room for 16 bytes.
 */
static inline size_t shmlog__fmt_short_copy(unsigned char *dst, const char *s)
{
	if (((uintptr_t)s & 4095) > 4096 - 16)
		return 16;
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
	unsigned nul = (unsigned)_mm_movemask_epi8(
		_mm_cmpeq_epi8(v, _mm_setzero_si128()));
	if (!nul)
		return 16;
	_mm_storeu_si128((__m128i *)(void *)dst, v);
	return (size_t)__builtin_ctz(nul);
}
#endif

/*
 * A string into at most @room content bytes, @prec the precision it is
 * printed with (< 0: none): glibc reads no further than the precision, so
 * neither may we.
 */
static inline unsigned char *put_string(unsigned char *p, const char *s,
					int prec, size_t room, bool *truncated)
{
	static const char null_text[] = "(null)";
	unsigned char tag = SHMLOG__FMT_STRING;
	size_t n;

	if (!s)
		s = (prec < 0 || prec >= 6) ? null_text : "";
	if (room > SHMLOG__FMT_STRING_MAX)
		room = SHMLOG__FMT_STRING_MAX;
#ifdef SHMLOG__FMT_SHORT_COPY
	if (prec < 0 && room >= 16) {
		n = shmlog__fmt_short_copy(p + 3, s);
		if (n < 16) {
			*p++ = tag;
			p = put_u16(p, (uint16_t)n);
			return p + n;
		}
	}
#endif
	if (prec >= 0 && (size_t)prec <= room) {
		n = strnlen(s, (size_t)prec);
	} else {
		n = strnlen(s, room + 1);
		if (n > room) {
			n = shmlog__utf8_cut(s, room);
			tag |= SHMLOG__FMT_TAG_TRUNC;
			if (truncated)
				*truncated = true;
		}
	}
	*p++ = tag;
	p = put_u16(p, (uint16_t)n);
	memcpy(p, s, n);
	return p + n;
}

static inline bool star_out_of_range(int v)
{
	return v > SHMLOG__FMT_WIDTH_MAX || v < -SHMLOG__FMT_WIDTH_MAX;
}

static inline ssize_t shmlog__fmt_encode_inline(
	const struct shmlog__fmt_spec *spec, va_list ap, unsigned char *buf,
	size_t cap, bool *truncated)
{
	/* Room is checked once for every fixed-size byte; strings get what
	 * is left after the fixed bytes still to come. */
	size_t fixed = spec->fixed;
	unsigned char *p = buf;
	int prec = -1;

	if (cap < fixed)
		return -ENOSPC;
	for (unsigned i = 0; i < spec->nargs; i++) {
		const struct shmlog__fmt_arg *a = &spec->arg[i];
		switch (a->cls) {
		case SHMLOG__FMT_INT32: {
			int v = va_arg(ap, int);
			if (a->role == SHMLOG__FMT_ROLE_WIDTH &&
			    star_out_of_range(v))
				return -ERANGE;
			if (a->role == SHMLOG__FMT_ROLE_PREC) {
				if (v > SHMLOG__FMT_WIDTH_MAX)
					return -ERANGE;
				prec = v < 0 ? -1 : v;
			}
			*p++ = SHMLOG__FMT_INT32;
			p = put_u32(p, (uint32_t)v);
			fixed -= 5;
			break;
		}
		case SHMLOG__FMT_INT64:
			*p++ = SHMLOG__FMT_INT64;
			p = put_u64(p, (uint64_t)va_arg(ap, long long));
			fixed -= 9;
			break;
		case SHMLOG__FMT_DOUBLE:
			*p++ = SHMLOG__FMT_DOUBLE;
			p = put_double(p, va_arg(ap, double));
			fixed -= 9;
			break;
		case SHMLOG__FMT_LDOUBLE:
			*p++ = SHMLOG__FMT_LDOUBLE;
			p = put_ldouble(p, va_arg(ap, long double));
			fixed -= 17;
			break;
		case SHMLOG__FMT_STRING: {
			const char *s = va_arg(ap, const char *);
			size_t room = cap - (size_t)(p - buf) - fixed;
			int sprec = a->prec == SHMLOG__FMT_PREC_STAR ? prec :
				    a->prec == SHMLOG__FMT_PREC_NONE ? -1 :
								       a->prec;
			p = put_string(p, s, sprec, room, truncated);
			fixed -= 3;
			break;
		}
		case SHMLOG__FMT_POINTER:
			*p++ = SHMLOG__FMT_POINTER;
			p = put_u64(p, (uint64_t)(uintptr_t)va_arg(ap, void *));
			fixed -= 9;
			break;
		default:
			return -EINVAL; /* not a compiled spec */
		}
	}
	return (ssize_t)(p - buf);
}

#endif
