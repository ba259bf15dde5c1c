// SPDX-License-Identifier: MIT
/*
 * Messages formatted by the reader: the codec.
 *
 * A call such as SHMLOG_I("net", "link %s down after %d ms", ifname, ms)
 * can store its format's identity and the raw argument values instead of
 * the text; any reader, in any process, formats the message later. This
 * file is that codec and nothing else (where the format and the block live
 * in the segment is the ring's business):
 *
 *   shmlog__fmt_compile()  once per call site, in the writer: validate the
 *                          format, list the va_arg fetches it implies
 *   shmlog__fmt_encode()   on every call: va_list -> argument block
 *   shmlog__fmt_format()   in a reader: format + block -> text, matching
 *                          glibc's vsnprintf of the original call byte for
 *                          byte
 *
 * The argument block
 * ------------------
 * A sequence of values, one per va_arg fetch of the call (a * width or
 * precision is a fetch of its own, before the value it applies to), in
 * call order, unaligned, multi-byte integers little-endian. Each value is
 * a tag byte followed by its payload:
 *
 *   offset  size   meaning
 *   0       1      tag: bits 0-3 class (enum shmlog__fmt_class),
 *                  bit 7 TRUNC (strings only: cut by the writer),
 *                  bits 4-6 zero
 *   1       n      payload, by class:
 *     INT32     4  int (char, short promoted; * widths and precisions)
 *     INT64     8  long long (and long, size_t, intmax_t, ptrdiff_t where
 *                  they are 64 bits)
 *     DOUBLE    8  IEEE 754 binary64, as its 64-bit pattern
 *     LDOUBLE  16  the machine's long double: x87 80-bit extended in bytes
 *                  0-9 then 6 zero bytes; binary128 in all 16; a double in
 *                  0-7 then zeros where long double is double
 *     STRING  2+L  u16 L, then L bytes (no NUL); a NULL pointer is stored
 *                  as the text glibc prints for it ("(null)", or "" under
 *                  a precision below 6)
 *     POINTER   8  the pointer's value as a u64
 *
 * Example, "link %s down after %d ms" with "eth0", 1500 (12 bytes):
 *   05 04 00 'e' 't' 'h' '0'  01 dc 05 00 00
 *
 * The block carries no count and no format identity: the reader re-parses
 * the format, which says what to expect, and the tags catch a block that
 * does not belong to it. The long double layout is the machine's own: a
 * block is read on the machine that wrote it.
 *
 * What is refused, and why
 * ------------------------
 * shmlog__fmt_compile() returns an error, and the caller formats the text
 * itself with vsnprintf as before, for:
 *   %n            writes through a pointer; meaningless in another process
 *   %m            glibc: strerror(errno), the writer's errno
 *   %1$d          positional arguments: the block is in call order
 *   %lc %ls %C %S wide characters: their bytes depend on the locale
 *   unknown conversions, glibc's I flag, q and L with integers, length
 *   modifiers that do not apply (%hs, %zf, %lp...), a dangling %, flags or
 *   a width on %%: undefined or non-portable, so not worth a second
 *   implementation
 *   widths and precisions above SHMLOG__FMT_WIDTH_MAX (see fmtarg.h)
 *   more than SHMLOG__FMT_MAX_ARGS fetches
 * The ' flag (thousands grouping) is accepted: it follows the reader's
 * LC_NUMERIC, as the decimal point of %f does (the C locale: no grouping).
 *
 * Trust model
 * -----------
 * The writer trusts its own format (a string literal at the call site) and
 * its arguments, as printf does; encode reads each string no further than
 * its precision, so "%.*s" over an unterminated buffer is safe.
 * The reader trusts nothing: both the format and the block come from a
 * segment any process can write. It never hands the format to printf. It
 * parses each conversion with the same strict parser the writer uses,
 * builds its own spec ("%" + known flags + "*.*" + a fixed length modifier
 * + a known conversion) and calls snprintf with exactly one value of the
 * type that spec takes: what glibc prints for the whole call is the
 * concatenation of what it prints for each conversion, so the text is the
 * same. Every read is bounds-checked against the block and the format
 * length; widths and precisions are clamped and at most
 * SHMLOG__FMT_MAX_ARGS values are formatted, so the work is bounded for
 * any bytes. A value that is missing or of another class prints
 * SHMLOG__FMT_MISSING, a conversion the parser refuses prints
 * SHMLOG__FMT_BADSPEC, a string the writer cut prints its bytes then
 * SHMLOG__FMT_CUT.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fmtarg.h"
#include "fmtarg_encode.h"

_Static_assert(sizeof(long double) <= 16, "long double fits its 16 bytes");
_Static_assert(sizeof(double) == 8, "double is binary64");
_Static_assert(sizeof(void *) <= 8, "pointers fit 8 bytes");

/* Payload bytes by class; 0: not a class. */
static const uint8_t payload_size[8] = {
	[SHMLOG__FMT_INT32] = 4,   [SHMLOG__FMT_INT64] = 8,
	[SHMLOG__FMT_DOUBLE] = 8,  [SHMLOG__FMT_LDOUBLE] = 16,
	[SHMLOG__FMT_STRING] = 2,  [SHMLOG__FMT_POINTER] = 8,
};

/* ---- the parser, shared by the writer and the reader ---- */

enum len_mod { LEN_NONE, LEN_HH, LEN_H, LEN_L, LEN_LL, LEN_Z, LEN_J, LEN_T,
	       LEN_BIGL };

enum {
	FL_MINUS = 1,
	FL_PLUS = 2,
	FL_SPACE = 4,
	FL_HASH = 8,
	FL_ZERO = 16,
	FL_QUOTE = 32,
};

#define ABSENT (-1)
#define STAR (-2)

struct conv {
	unsigned flags;
	int width; /* ABSENT, STAR or 0..SHMLOG__FMT_WIDTH_MAX */
	int prec; /* the same */
	enum len_mod len;
	char conv; /* '%' for %% */
	uint8_t cls; /* class of the value; 0 for %% */
};

static int int_class_of_size(size_t size)
{
	return size == 4 ? SHMLOG__FMT_INT32 :
	       size == 8 ? SHMLOG__FMT_INT64 : 0;
}

/* Bytes of the integer a length modifier names, in this process. */
static size_t len_size(enum len_mod len)
{
	switch (len) {
	case LEN_HH:
		return 1;
	case LEN_H:
		return 2;
	case LEN_NONE:
		return sizeof(int);
	case LEN_L:
		return sizeof(long);
	case LEN_LL:
		return sizeof(long long);
	case LEN_Z:
		return sizeof(size_t);
	case LEN_J:
		return sizeof(intmax_t);
	case LEN_T:
		return sizeof(ptrdiff_t);
	default:
		return 0;
	}
}

/* The class a conversion fetches, or 0 if the pair is refused. */
static int classify(char conv, enum len_mod len)
{
	switch (conv) {
	case 'd': case 'i': case 'u': case 'x': case 'X': case 'o':
		if (len == LEN_BIGL)
			return 0;
		/* char and short are promoted to int */
		if (len == LEN_HH || len == LEN_H)
			return SHMLOG__FMT_INT32;
		return int_class_of_size(len_size(len));
	case 'c':
		return len == LEN_NONE ? SHMLOG__FMT_INT32 : 0;
	case 's':
		return len == LEN_NONE ? SHMLOG__FMT_STRING : 0;
	case 'p':
		return len == LEN_NONE ? SHMLOG__FMT_POINTER : 0;
	case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
	case 'a': case 'A':
		if (len == LEN_NONE || len == LEN_L)
			return SHMLOG__FMT_DOUBLE;
		return len == LEN_BIGL ? SHMLOG__FMT_LDOUBLE : 0;
	default:
		return 0;
	}
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits at *@s (below @end): their value, or WIDTH_MAX + 1 if larger. */
static int parse_number(const char **s, const char *end)
{
	int v = 0;
	while (*s < end && is_digit(**s)) {
		if (v <= SHMLOG__FMT_WIDTH_MAX)
			v = v * 10 + (**s - '0');
		(*s)++;
	}
	return v;
}

static int parse_flags(const char **s, const char *end)
{
	int flags = 0;
	for (; *s < end; (*s)++) {
		switch (**s) {
		case '-': flags |= FL_MINUS; break;
		case '+': flags |= FL_PLUS; break;
		case ' ': flags |= FL_SPACE; break;
		case '#': flags |= FL_HASH; break;
		case '0': flags |= FL_ZERO; break;
		case '\'': flags |= FL_QUOTE; break;
		default: return flags;
		}
	}
	return flags;
}

static enum len_mod parse_len(const char **s, const char *end)
{
	if (*s >= end)
		return LEN_NONE;
	char c = **s, next = *s + 1 < end ? (*s)[1] : 0;
	enum len_mod len;
	switch (c) {
	case 'h': len = next == 'h' ? LEN_HH : LEN_H; break;
	case 'l': len = next == 'l' ? LEN_LL : LEN_L; break;
	case 'z': len = LEN_Z; break;
	case 'j': len = LEN_J; break;
	case 't': len = LEN_T; break;
	case 'L': len = LEN_BIGL; break;
	default: return LEN_NONE;
	}
	*s += (len == LEN_HH || len == LEN_LL) ? 2 : 1;
	return len;
}

/*
 * Parse the conversion whose '%' is just before @p, up to @end. Sets
 * *@used to the bytes taken after the '%' (up to the conversion character,
 * or up to where it went wrong, so a reader can skip them). Returns 0,
 * -EINVAL (refused) or -ERANGE (width or precision too large).
 */
static int parse_conv(const char *p, const char *end, struct conv *c,
		      size_t *used)
{
	const char *s = p;
	int err = 0;

	c->flags = parse_flags(&s, end);
	c->width = ABSENT;
	c->prec = ABSENT;
	if (s < end && *s == '*') {
		c->width = STAR;
		s++;
	} else if (s < end && is_digit(*s)) {
		c->width = parse_number(&s, end);
	}
	if (s < end && *s == '.') {
		s++;
		if (s < end && *s == '*') {
			c->prec = STAR;
			s++;
		} else {
			c->prec = parse_number(&s, end); /* "." alone is 0 */
		}
	}
	if (c->width > SHMLOG__FMT_WIDTH_MAX || c->prec > SHMLOG__FMT_WIDTH_MAX)
		err = -ERANGE;
	c->len = parse_len(&s, end);
	if (s >= end) {
		*used = (size_t)(s - p);
		return -EINVAL;
	}
	c->conv = *s++;
	*used = (size_t)(s - p);
	if (c->conv == '%') {
		/* only a bare %%: "%5%" is undefined */
		bool bare = s == p + 1;
		c->cls = 0;
		return bare ? 0 : -EINVAL;
	}
	c->cls = (uint8_t)classify(c->conv, c->len);
	if (!c->cls)
		return -EINVAL;
	return err;
}

/* ---- compile ---- */

static int spec_add(struct shmlog__fmt_spec *sp, int cls, int role, int prec)
{
	if (sp->nargs >= SHMLOG__FMT_MAX_ARGS)
		return -E2BIG;
	struct shmlog__fmt_arg *a = &sp->arg[sp->nargs++];
	a->cls = (uint8_t)cls;
	a->role = (uint8_t)role;
	a->prec = (uint16_t)prec;
	sp->fixed += 1 + payload_size[cls];
	sp->nstrings += cls == SHMLOG__FMT_STRING;
	return 0;
}

static int spec_add_conv(struct shmlog__fmt_spec *sp, const struct conv *c)
{
	const int star = SHMLOG__FMT_INT32;
	int err = 0;
	if (c->width == STAR)
		err = spec_add(sp, star, SHMLOG__FMT_ROLE_WIDTH, 0);
	if (!err && c->prec == STAR)
		err = spec_add(sp, star, SHMLOG__FMT_ROLE_PREC, 0);
	if (err)
		return err;
	int prec = c->prec == STAR   ? SHMLOG__FMT_PREC_STAR :
		   c->prec == ABSENT ? SHMLOG__FMT_PREC_NONE : c->prec;
	return spec_add(sp, c->cls, SHMLOG__FMT_ROLE_VALUE, prec);
}

int shmlog__fmt_compile(const char *fmt, struct shmlog__fmt_spec *out)
{
	if (!fmt || !out)
		return -EINVAL;
	struct shmlog__fmt_spec sp;
	memset(&sp, 0, sizeof(sp));
	const char *end = fmt + strlen(fmt);
	const char *p = fmt;
	while ((p = memchr(p, '%', (size_t)(end - p)))) {
		struct conv c;
		size_t used;
		int err = parse_conv(p + 1, end, &c, &used);
		if (err)
			return err;
		p += 1 + used;
		if (c.conv == '%')
			continue;
		err = spec_add_conv(&sp, &c);
		if (err)
			return err;
	}
	*out = sp;
	return 0;
}

/* ---- encode: the write path (fmtarg_encode.h) ---- */

ssize_t shmlog__fmt_encode(const struct shmlog__fmt_spec *spec, va_list ap,
			   unsigned char *buf, size_t cap, bool *truncated)
{
	return shmlog__fmt_encode_inline(spec, ap, buf, cap, truncated);
}

/* ---- format: the reader, on untrusted bytes ---- */

/* The output: what fits in @buf, and the length the whole would have. */
struct out {
	char *buf;
	size_t cap;
	size_t len;
};

static void out_bytes(struct out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t room = o->cap - o->len;
		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static void out_str(struct out *o, const char *s)
{
	out_bytes(o, s, strlen(s));
}

/* snprintf one value straight into the output (or only count it). */
#define out_printf(o, spec, ...)                                              \
	do {                                                                  \
		bool fits_ = (o)->len < (o)->cap;                             \
		int n_ = snprintf(fits_ ? (o)->buf + (o)->len : NULL,         \
				  fits_ ? (o)->cap - (o)->len : 0, spec,      \
				  __VA_ARGS__);                               \
		if (n_ < 0)                                                   \
			out_str((o), SHMLOG__FMT_MISSING);                    \
		else                                                          \
			(o)->len += (size_t)n_;                               \
	} while (0)

/* Reading the block. Once it is found broken (a tag of no class, a value
 * past its end) every later value is missing: nothing after can be
 * trusted to start where we would look. */
struct cursor {
	const unsigned char *p, *end;
	unsigned taken; /* values taken, at most SHMLOG__FMT_MAX_ARGS */
	bool broken;
};

struct value {
	uint8_t tag;
	const unsigned char *data; /* the payload; for strings the bytes */
	size_t len; /* string bytes */
};

static uint64_t get_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The next value, whatever its class; false if there is none. */
static bool cursor_next(struct cursor *cu, struct value *v)
{
	if (cu->broken || cu->taken >= SHMLOG__FMT_MAX_ARGS || cu->p >= cu->end)
		goto broken;
	v->tag = *cu->p;
	unsigned cls = v->tag & SHMLOG__FMT_TAG_CLASS;
	if (cls >= sizeof(payload_size) || !payload_size[cls] ||
	    (v->tag & ~(SHMLOG__FMT_TAG_CLASS | SHMLOG__FMT_TAG_TRUNC)) ||
	    ((v->tag & SHMLOG__FMT_TAG_TRUNC) && cls != SHMLOG__FMT_STRING))
		goto broken;
	size_t left = (size_t)(cu->end - cu->p) - 1;
	size_t size = payload_size[cls];
	if (left < size)
		goto broken;
	v->data = cu->p + 1;
	v->len = 0;
	if (cls == SHMLOG__FMT_STRING) {
		v->len = get_le(v->data, 2);
		v->data += 2;
		if (left - size < v->len)
			goto broken;
		size += v->len;
	}
	cu->p += 1 + size;
	cu->taken++;
	return true;
broken:
	cu->broken = true;
	return false;
}

/* The next value if it is of class @cls; a value of another class is
 * skipped, so one wrong value does not shift the ones after it. */
static bool cursor_take(struct cursor *cu, unsigned cls, struct value *v)
{
	if (!cursor_next(cu, v))
		return false;
	return (v->tag & SHMLOG__FMT_TAG_CLASS) == cls;
}

/* A * value, clamped: a hostile one must not make us pad for long. */
static bool take_star(struct cursor *cu, int *out, bool is_prec)
{
	struct value v;
	if (!cursor_take(cu, SHMLOG__FMT_INT32, &v))
		return false;
	int n = (int)(int32_t)get_le(v.data, 4);
	if (is_prec && n < 0)
		n = -1;
	if (n > SHMLOG__FMT_WIDTH_MAX)
		n = SHMLOG__FMT_WIDTH_MAX;
	if (n < -SHMLOG__FMT_WIDTH_MAX)
		n = -SHMLOG__FMT_WIDTH_MAX;
	*out = n;
	return true;
}

/* "%" + flags + "*.*" + @len + conversion: only bytes we chose. */
static void build_spec(char *sp, unsigned flags, const char *len, char conv)
{
	*sp++ = '%';
	if (flags & FL_MINUS)
		*sp++ = '-';
	if (flags & FL_PLUS)
		*sp++ = '+';
	if (flags & FL_SPACE)
		*sp++ = ' ';
	if (flags & FL_HASH)
		*sp++ = '#';
	if (flags & FL_ZERO)
		*sp++ = '0';
	if (flags & FL_QUOTE)
		*sp++ = '\'';
	memcpy(sp, "*.*", 3);
	sp += 3;
	while (*len)
		*sp++ = *len++;
	*sp++ = conv;
	*sp = '\0';
}

/* An integer as the length modifier makes printf see it: cut to its size,
 * then sign- or zero-extended. */
static uint64_t fit_int(uint64_t v, size_t size, bool is_signed)
{
	if (size >= 8)
		return v;
	unsigned bits = (unsigned)size * 8;
	uint64_t mask = (UINT64_C(1) << bits) - 1;
	v &= mask;
	if (is_signed && (v >> (bits - 1)) & 1)
		v |= ~mask;
	return v;
}

static bool is_signed_conv(char conv)
{
	return conv == 'd' || conv == 'i';
}

/* x87 extended values with an integer bit that disagrees with the
 * exponent (unnormals, pseudo-NaNs, pseudo-denormals) are not canonical:
 * no compiler makes them, and printf has choked on them before. */
static bool ldouble_canonical(const unsigned char *p)
{
#if LDBL_MANT_DIG == 64
	unsigned exp = (unsigned)get_le(p + 8, 2) & 0x7fff;
	bool int_bit = p[7] & 0x80;
	return exp ? int_bit : !int_bit;
#else
	(void)p;
	return true;
#endif
}

static void format_value(struct out *o, const struct conv *c,
			 const struct value *v, int width, int prec)
{
	char sp[16];

	switch (c->cls) {
	case SHMLOG__FMT_INT32:
	case SHMLOG__FMT_INT64: {
		uint64_t raw = get_le(v->data, payload_size[c->cls]);
		if (c->cls == SHMLOG__FMT_INT32) /* an int: sign-extend */
			raw = (uint64_t)(int64_t)(int32_t)raw;
		if (c->conv == 'c') {
			build_spec(sp, c->flags, "", 'c');
			out_printf(o, sp, width, prec, (int)(int32_t)raw);
			break;
		}
		bool sgn = is_signed_conv(c->conv);
		raw = fit_int(raw, len_size(c->len), sgn);
		build_spec(sp, c->flags, "ll", c->conv);
		if (sgn)
			out_printf(o, sp, width, prec, (long long)raw);
		else
			out_printf(o, sp, width, prec, (unsigned long long)raw);
		break;
	}
	case SHMLOG__FMT_DOUBLE: {
		uint64_t bits = get_le(v->data, 8);
		double d;
		memcpy(&d, &bits, 8);
		build_spec(sp, c->flags, "", c->conv);
		out_printf(o, sp, width, prec, d);
		break;
	}
	case SHMLOG__FMT_LDOUBLE: {
		long double ld = 0;
		if (!ldouble_canonical(v->data)) {
			out_str(o, SHMLOG__FMT_MISSING);
			break;
		}
#if LDBL_MANT_DIG == 64
		memcpy(&ld, v->data, 10);
#else
		memcpy(&ld, v->data, sizeof(ld));
#endif
		build_spec(sp, c->flags, "L", c->conv);
		out_printf(o, sp, width, prec, ld);
		break;
	}
	case SHMLOG__FMT_STRING: {
		/* the bytes are not NUL-terminated: the precision bounds
		 * what snprintf reads */
		int n = v->len > INT_MAX ? INT_MAX : (int)v->len;
		if (prec < 0 || prec > n)
			prec = n;
		build_spec(sp, c->flags, "", 's');
		out_printf(o, sp, width, prec, (const char *)v->data);
		if (v->tag & SHMLOG__FMT_TAG_TRUNC)
			out_str(o, SHMLOG__FMT_CUT);
		break;
	}
	case SHMLOG__FMT_POINTER: {
		uint64_t u = get_le(v->data, 8);
		build_spec(sp, c->flags, "", 'p');
		out_printf(o, sp, width, prec, (void *)(uintptr_t)u);
		break;
	}
	}
}

/* One parsed conversion: take its values in call order, then print. */
static void format_conv(struct out *o, struct cursor *cu, const struct conv *c)
{
	int width = c->width == ABSENT ? 0 : c->width;
	int prec = c->prec == ABSENT ? -1 : c->prec;
	bool ok = true;
	struct value v;

	if (c->width == STAR)
		ok = take_star(cu, &width, false);
	if (c->prec == STAR)
		ok = take_star(cu, &prec, true) && ok;
	ok = cursor_take(cu, c->cls, &v) && ok;
	if (!ok) {
		out_str(o, SHMLOG__FMT_MISSING);
		return;
	}
	format_value(o, c, &v, width, prec);
}

size_t shmlog__fmt_format(const char *fmt, size_t fmt_len,
			  const unsigned char *args, size_t args_len, char *out,
			  size_t outcap)
{
	struct out o = { .buf = out, .cap = out ? outcap : 0 };
	struct cursor cu = { .p = args, .end = args ? args + args_len : args };
	const char *p, *end;

	if (!fmt) {
		fmt = "";
		fmt_len = 0;
	}
	p = fmt;
	end = fmt + strnlen(fmt, fmt_len);
	while (p < end) {
		const char *pct = memchr(p, '%', (size_t)(end - p));
		if (!pct) {
			out_bytes(&o, p, (size_t)(end - p));
			break;
		}
		out_bytes(&o, p, (size_t)(pct - p));
		struct conv c;
		size_t used;
		int err = parse_conv(pct + 1, end, &c, &used);
		p = pct + 1 + used;
		if (err)
			out_str(&o, SHMLOG__FMT_BADSPEC);
		else if (c.conv == '%')
			out_bytes(&o, "%", 1);
		else
			format_conv(&o, &cu, &c);
	}
	if (o.cap)
		o.buf[o.len < o.cap ? o.len : o.cap - 1] = '\0';
	return o.len;
}
