/* SPDX-License-Identifier: MIT */
/*
 * Typed calls: the argument block (fmtarg.c's top comment) made from
 * values the SHMLOG_x macros fetched themselves, their types told by the
 * compiler (include/shmlog.h, SHMLOG__TYPES), instead of from a va_list
 * walked by the format. A call site's types never change, nor does its
 * format: which class each value is written as is decided once per site
 * (shmlog__fmt_typed_layout), and a call only copies.
 *
 * A value is written as the class its conversion wants when its type
 * allows it exactly as printf would take it: an integer for %d %u %x %c
 * %ld (the low 32 bits for the 32-bit conversions, as a va_arg of int
 * reads them), a double for %f %e %g %a, a char or void pointer for %s and
 * %p. Any other pairing (a double for %d, an integer for %s: undefined in
 * printf, and the compiler's -Wformat says so) is written as the class of
 * its own type, and the reader, which checks every class, prints "<?>"
 * there: never a wrong value, never a pointer that is not one followed.
 * Values missing for the format end the block early ("<?>" again); extra
 * ones are dropped, as printf drops them.
 *
 * The one difference from a va_list call: a * width or precision beyond
 * +-SHMLOG__FMT_WIDTH_MAX is stored as it is and clamped by the reader
 * (the va_list path formats such a call in the caller instead). Either
 * way the message is cut at SHMLOG_MSG_MAX, below the clamp.
 */
#ifndef SHMLOG_FMTARG_TYPED_H
#define SHMLOG_FMTARG_TYPED_H

#include "fmtarg_encode.h"
#include "shmlog.h"

/*
 * A site's shape (shmlog__fmt_typed.shape): for a site of 1 to 3 values,
 * at most one of them a string, the kind of each, 2 bits a value, the
 * first lowest. The writer (fmtarg_call.c) has straight-line code for each
 * shape in SHMLOG__TYPED_SHAPES, chosen by one jump, instead of a loop
 * that looks at each value's class; any other site (more values, two
 * strings) takes the loop.
 */
enum {
	SHMLOG__TK_4 = 1, /* INT32: the class byte, 4 bytes */
	SHMLOG__TK_8 = 2, /* INT64, DOUBLE, POINTER: the class byte, 8 bytes */
	SHMLOG__TK_S = 3, /* STRING: the class byte, a u16 length, the bytes */
};
#define SHMLOG__SHAPE(a, b, c) ((a) | (b) << 2 | (c) << 4)

/* The kind of class @c (SHMLOG__FMT_*, as a typed call writes it). */
static inline unsigned shmlog__typed_kind(unsigned c)
{
	return c == SHMLOG__FMT_INT32	 ? SHMLOG__TK_4
	       : c == SHMLOG__FMT_STRING ? SHMLOG__TK_S
					 : SHMLOG__TK_8;
}

/* X(a, b, c) for each shape: the kinds of the first, second and third
 * value (0: no such value). */
#define SHMLOG__TYPED_SHAPES(X)                                                \
	X(1, 0, 0) X(2, 0, 0) X(3, 0, 0)                                       \
	X(1, 1, 0) X(1, 2, 0) X(1, 3, 0) X(2, 1, 0) X(2, 2, 0) X(2, 3, 0)      \
	X(3, 1, 0) X(3, 2, 0)                                                  \
	X(1, 1, 1) X(1, 1, 2) X(1, 2, 1) X(1, 2, 2) X(2, 1, 1) X(2, 1, 2)      \
	X(2, 2, 1) X(2, 2, 2)                                                  \
	X(3, 1, 1) X(3, 1, 2) X(3, 2, 1) X(3, 2, 2)                            \
	X(1, 3, 1) X(1, 3, 2) X(2, 3, 1) X(2, 3, 2)                            \
	X(1, 1, 3) X(1, 2, 3) X(2, 1, 3) X(2, 2, 3)

/* The code of value @i in @types. */
static inline unsigned shmlog__typed_code(uint64_t types, unsigned i)
{
	return (unsigned)(types >> (4 + 4 * i)) & 15;
}

/* Lay out the block of a call of @spec whose values are @types (a
 * nonzero SHMLOG__TYPES(): at most SHMLOG__TYPED_MAX values). Returns how
 * many values do not match their conversion (written in their own class,
 * or missing). */
static inline unsigned shmlog__fmt_typed_layout(const struct shmlog__fmt_spec *spec,
						uint64_t types,
						struct shmlog__fmt_typed *t)
{
	unsigned nt = (unsigned)(types & 15), bad = 0, kinds = 0;
	if (nt > SHMLOG__TYPED_MAX)
		nt = SHMLOG__TYPED_MAX;
	memset(t, 0, sizeof(*t));
	t->types = types;
	t->n = (uint8_t)(nt < spec->nargs ? nt : spec->nargs);
	t->fast = true;
	if (nt < spec->nargs)
		bad++; /* printf would read what is not there */
	for (unsigned i = 0; i < t->n; i++) {
		const struct shmlog__fmt_arg *a = &spec->arg[i];
		unsigned ty = shmlog__typed_code(types, i), c;
		if (ty == SHMLOG__TY_INT && (a->cls == SHMLOG__FMT_INT32 ||
					     a->cls == SHMLOG__FMT_INT64))
			c = a->cls;
		else if (ty == SHMLOG__TY_DBL && a->cls == SHMLOG__FMT_DOUBLE)
			c = a->cls;
		else if (ty == SHMLOG__TY_PTR &&
			 (a->cls == SHMLOG__FMT_STRING ||
			  a->cls == SHMLOG__FMT_POINTER))
			c = a->cls;
		else
			c = ty == SHMLOG__TY_INT   ? SHMLOG__FMT_INT64
			    : ty == SHMLOG__TY_DBL ? SHMLOG__FMT_DOUBLE
						   : SHMLOG__FMT_POINTER;
		if (c != a->cls)
			bad++;
		t->cls[i] = (uint8_t)c;
		t->clsw |= (uint64_t)c << (8 * i);
		if (c == SHMLOG__FMT_STRING)
			t->smask |= (uint8_t)(1u << i);
		t->role[i] = c == a->cls ? a->role : SHMLOG__FMT_ROLE_VALUE;
		t->prec[i] = a->prec;
		if (t->role[i] != SHMLOG__FMT_ROLE_VALUE ||
		    (c == SHMLOG__FMT_STRING && a->prec != SHMLOG__FMT_PREC_NONE))
			t->fast = false;
		unsigned k = shmlog__typed_kind(c);
		t->fixed += k == SHMLOG__TK_4 ? 5 : k == SHMLOG__TK_S ? 3 : 9;
		kinds |= k << (2 * i);
	}
	t->fixed_id = (uint16_t)(t->fixed + 4);
	t->sone = !t->smask			    ? SHMLOG__TYPED_MAX
		  : !(t->smask & (t->smask - 1)) ? (uint8_t)__builtin_ctz(t->smask)
						 : SHMLOG__TYPED_MAX + 1;
	if (t->n >= 1 && t->n <= 3 && !(t->smask & (t->smask - 1)))
		t->shape = (uint8_t)kinds;
	return bad;
}

/*
 * The block of a typed call, laid out by @t, from @v into @buf (@cap
 * bytes), strings cut to fit as shmlog__fmt_encode() cuts them. Returns
 * the bytes used, or -ENOSPC if @cap cannot hold the fixed-size values.
 */
static inline ssize_t shmlog__fmt_encode_typed(const struct shmlog__fmt_typed *t,
					       const union shmlog__arg *v,
					       unsigned char *buf, size_t cap,
					       bool *truncated)
{
	size_t fixed = t->fixed;
	unsigned char *p = buf;
	int prec = -1; /* the last .* value */

	if (cap < fixed)
		return -ENOSPC;
	for (unsigned i = 0; i < t->n; i++) {
		unsigned c = t->cls[i];
		*p++ = (unsigned char)c;
		switch (c) {
		case SHMLOG__FMT_INT32: {
			int x = (int)(uint32_t)v[i].u;
			if (t->role[i] == SHMLOG__FMT_ROLE_PREC)
				prec = x < 0 ? -1 : x;
			p = put_u32(p, (uint32_t)x);
			fixed -= 5;
			break;
		}
		case SHMLOG__FMT_STRING: {
			size_t room = cap - (size_t)(p - 1 - buf) - fixed;
			int sprec = t->prec[i] == SHMLOG__FMT_PREC_STAR ? prec
				    : t->prec[i] == SHMLOG__FMT_PREC_NONE
					? -1
					: t->prec[i];
			p = put_string(p - 1, (const char *)v[i].p, sprec, room,
				       truncated);
			fixed -= 3;
			break;
		}
		default: /* INT64, DOUBLE, POINTER: the 8 bytes as they are */
			p = put_u64(p, (uint64_t)v[i].u);
			fixed -= 9;
			break;
		}
	}
	return (ssize_t)(p - buf);
}

#ifdef SHMLOG__FMT_SHORT_COPY
/* One compare: 16 bytes from @a stay in its page, @a is not null (one
 * byte below it wraps to the page's last byte) and not at a page's first
 * byte (shmlog__typed_strlen()'s loop takes that one). */
static inline bool shmlog__typed_in_page16(uintptr_t a)
{
	return ((a - 1) & 4095) < 4096 - 16;
}

/* A bit for each NUL among the 16 bytes at @s, the first the lowest. */
static inline unsigned shmlog__typed_nul16(const char *s)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)s);
	return (unsigned)_mm_movemask_epi8(
		_mm_cmpeq_epi8(x, _mm_setzero_si128()));
}
#endif

/* The length of string @s if it is at most @max bytes, else more than
 * @max (a null @s too), with no call: 16-byte loads, the first where it
 * stays inside the string's page, the others aligned (never across a
 * page, so never a page the string does not reach: no fault, as the C
 * library's strlen). The sanitizer builds, which would report the bytes
 * read past the NUL, call strnlen(). */
static inline size_t shmlog__typed_strlen(const char *s, size_t max)
{
#ifdef SHMLOG__FMT_SHORT_COPY
	uintptr_t a = (uintptr_t)s;
	if (SHMLOG_LIKELY(shmlog__typed_in_page16(a))) {
		unsigned nul = shmlog__typed_nul16(s);
		if (SHMLOG_LIKELY(nul))
			return (unsigned)__builtin_ctz(nul);
	}
	if (SHMLOG_UNLIKELY(!s))
		return max + 1;
	/* from the 16-byte block holding s on, bytes before s masked off */
	const char *b = (const char *)(a & ~(uintptr_t)15);
	unsigned skip = (unsigned)(a & 15);
	for (size_t done = 0;; done += 16) {
		__m128i x = _mm_load_si128((const __m128i *)(const void *)(b + done));
		unsigned nul = (unsigned)_mm_movemask_epi8(
			_mm_cmpeq_epi8(x, _mm_setzero_si128()));
		if (!done)
			nul &= ~0u << skip;
		if (nul)
			return done + (size_t)__builtin_ctz(nul) - skip;
		if (done + 16 - skip > max)
			return max + 1;
	}
#else
	return s ? strnlen(s, max + 1) : max + 1;
#endif
}

/* The length of string @s if it is under 16 bytes, else 16 or more (a
 * null @s too): shmlog__typed_strlen()'s first load only. */
static inline uint32_t shmlog__typed_strlen16(const char *s)
{
#ifdef SHMLOG__FMT_SHORT_COPY
	if (SHMLOG_LIKELY(shmlog__typed_in_page16((uintptr_t)s)))
		/* bit 16: no NUL in the 16 bytes */
		return (unsigned)__builtin_ctz(shmlog__typed_nul16(s) |
					       0x10000u);
	return 16;
#else
	return s ? (uint32_t)strnlen(s, 16) : 16;
#endif
}

/* Copy @n bytes with no call: copy_short()'s moves up to 128, then
 * 16 bytes at a time (a string argument, at most a message long). */
static inline void shmlog__typed_copy(unsigned char *d, const char *s,
				      size_t n)
{
	if (SHMLOG_LIKELY(n < 16)) {
		if (n >= 8) {
			memcpy(d, s, 8);
			memcpy(d + n - 8, s + n - 8, 8);
		} else if (n >= 4) {
			memcpy(d, s, 4);
			memcpy(d + n - 4, s + n - 4, 4);
		} else if (n >= 2) {
			memcpy(d, s, 2);
			memcpy(d + n - 2, s + n - 2, 2);
		} else if (n) {
			d[0] = (unsigned char)s[0];
		}
		return;
	}
	for (size_t k = 0; k + 16 < n; k += 16)
		memcpy(d + k, s + k, 16);
	memcpy(d + n - 16, s + n - 16, 16);
}

/*
 * One value at @q, of kind @k (SHMLOG__TK_*): its class byte @cls, then
 * its bytes (a string: its 2-byte length @n and @n bytes, measured by the
 * caller). Returns the end of what it wrote. The writer's loop and its
 * straight-line code both write through it; with @k a constant the
 * kind's test folds away.
 */
static inline __attribute__((always_inline)) unsigned char *
shmlog__typed_put(unsigned char *q, unsigned k, unsigned char cls,
		  const union shmlog__arg *v, size_t n)
{
	*q = cls;
	if (k == SHMLOG__TK_4) {
		put_u32(q + 1, (uint32_t)v->u);
		return q + 5;
	}
	if (k == SHMLOG__TK_S) {
		put_u16(q + 1, (uint16_t)n);
		shmlog__typed_copy(q + 3, (const char *)v->p, n);
		return q + 3 + n;
	}
	put_u64(q + 1, (uint64_t)v->u);
	return q + 9;
}

/*
 * The values of a site of shape @shape (a constant: each value's kind
 * known, the code straight-line) at @q: the classes of 8-byte values from
 * @cw (shmlog__fmt_typed.clsw), the string's @n bytes (measured by the
 * caller). Returns the end of what it wrote.
 */
static inline __attribute__((always_inline)) unsigned char *
shmlog__typed_put_shape(unsigned char *q, const unsigned shape, uint64_t cw,
			const union shmlog__arg *v, size_t n)
{
	for (unsigned i = 0; i < 3; i++) {
		unsigned k = (shape >> (2 * i)) & 3;
		if (k)
			q = shmlog__typed_put(q, k,
					      (unsigned char)(cw >> (8 * i)),
					      &v[i], n);
	}
	return q;
}

#endif
