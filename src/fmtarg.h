/* SPDX-License-Identifier: MIT */
/*
 * Messages formatted by the reader: a printf-style call is stored as its
 * raw argument values, and whoever reads the record formats the text.
 * fmtarg.c holds the codec (the argument block's layout, what is refused,
 * the trust model); the ring does not know about it.
 *
 *   compile   once per call site: validate the format, list its arguments
 *   encode    on every call: va_list -> argument block (no malloc, no locale)
 *   format    in any reader: untrusted format + untrusted block -> text
 */
#ifndef SHMLOG_FMTARG_H
#define SHMLOG_FMTARG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Argument classes: what the writer fetches with va_arg, and the tag of
 * the value in the block (its low 4 bits). 0 is never a valid tag. */
enum shmlog__fmt_class {
	SHMLOG__FMT_INT32 = 1, /* int, and char/short promoted; * values */
	SHMLOG__FMT_INT64 = 2, /* 64-bit integers (ll, and l z j t on LP64) */
	SHMLOG__FMT_DOUBLE = 3,
	SHMLOG__FMT_LDOUBLE = 4, /* this machine's long double, in 16 bytes */
	SHMLOG__FMT_STRING = 5, /* u16 length, then the bytes */
	SHMLOG__FMT_POINTER = 6, /* 8 bytes */
};

#define SHMLOG__FMT_TAG_CLASS 0x0f
#define SHMLOG__FMT_TAG_TRUNC 0x80 /* string: cut to fit the block */

/* A call site takes at most this many va_arg values (each * counts). */
#define SHMLOG__FMT_MAX_ARGS 32
/* Widths and precisions above this are refused (literal), make encode
 * fail (from *) and are clamped by the reader: a message is at most
 * SHMLOG_MSG_MAX bytes, and a hostile record must not make a reader pad
 * gigabytes. */
#define SHMLOG__FMT_WIDTH_MAX 4096

/* Markers the reader prints in place of what it cannot show. */
#define SHMLOG__FMT_MISSING "<?>" /* argument missing or of another class */
#define SHMLOG__FMT_CUT "<...>" /* after a string the writer cut */
#define SHMLOG__FMT_BADSPEC "<?%>" /* a conversion the codec refuses */

/* One va_arg fetch. @prec is only used by STRING arguments: the literal
 * precision, or SHMLOG__FMT_PREC_STAR (the * value fetched just before),
 * or SHMLOG__FMT_PREC_NONE; the writer never reads a string past it. */
#define SHMLOG__FMT_PREC_NONE 0xffff
#define SHMLOG__FMT_PREC_STAR 0xfffe

/* Roles of an INT32 fetch, for the writer only (the block says INT32). */
enum {
	SHMLOG__FMT_ROLE_VALUE = 0,
	SHMLOG__FMT_ROLE_WIDTH = 1, /* a * width */
	SHMLOG__FMT_ROLE_PREC = 2, /* a .* precision */
};

struct shmlog__fmt_arg {
	uint8_t cls; /* enum shmlog__fmt_class */
	uint8_t role;
	uint16_t prec;
};

/* A compiled format: immutable once made, so any number of threads may
 * encode with it at once. */
struct shmlog__fmt_spec {
	uint8_t nargs;
	uint8_t nstrings;
	uint16_t fixed; /* block bytes for everything but string contents */
	struct shmlog__fmt_arg arg[SHMLOG__FMT_MAX_ARGS];
};

/* Values a typed call carries at most (include/shmlog.h:
 * SHMLOG__NVAL's 0 to 8; fmtarg_typed.h). */
#define SHMLOG__TYPED_MAX 8

/* How a site's values are written, made once from its spec and types. */
struct shmlog__fmt_typed {
	uint64_t types; /* the site's SHMLOG__TYPES() this was made for */
	uint8_t n; /* values written */
	bool fast; /* no * value, no string precision: the writer's fast
		    * path takes every call */
	uint8_t smask; /* bit i: value i is written as a string */
	uint64_t clsw; /* cls[] again, value i in bits 8i..8i+7 */
	uint16_t fixed; /* block bytes but the strings' contents */
	uint16_t fixed_id; /* fixed + 4: with the format's id before the
			    * values, as a deferred record's message holds
			    * them (fmtarg_call.c) */
	uint8_t sone; /* the one string's index; SHMLOG__TYPED_MAX: none,
		       * SHMLOG__TYPED_MAX + 1: two or more */
	uint8_t shape; /* 1 to 3 values, at most one a string: each value's
			* kind (SHMLOG__TK_*), 2 bits a value, the first
			* lowest, for the writer's straight-line code; 0:
			* any other site (its loop) */
	uint8_t cls[SHMLOG__TYPED_MAX]; /* class written, per value */
	uint8_t role[SHMLOG__TYPED_MAX]; /* SHMLOG__FMT_ROLE_* */
	uint16_t prec[SHMLOG__TYPED_MAX]; /* strings: as fmt_arg.prec */
};

/*
 * Validate @fmt (trusted, NUL-terminated) and describe its arguments in
 * *@out. Returns 0, or a negative errno and leaves *@out untouched; the
 * caller then formats in place with vsnprintf, as before:
 *   -EINVAL  a conversion the codec refuses (%n, %m, %1$d, %ls, %lc, %C,
 *            %S, unknown ones, length modifiers that do not apply, a
 *            dangling %), or @fmt or @out NULL
 *   -E2BIG   more than SHMLOG__FMT_MAX_ARGS arguments
 *   -ERANGE  a literal width or precision above SHMLOG__FMT_WIDTH_MAX
 * Thread- and async-signal-safe.
 */
int shmlog__fmt_compile(const char *fmt, struct shmlog__fmt_spec *out);

/*
 * Copy the arguments that @ap holds, as @spec says, into @buf (@cap
 * bytes). Strings that do not fit are cut (on a UTF-8 character boundary)
 * and tagged, and *@truncated (if not NULL) is set; it is left alone
 * otherwise. Returns the bytes used, or a negative errno:
 *   -ENOSPC  @cap cannot hold the fixed-size values
 *   -ERANGE  a * width or precision outside +-SHMLOG__FMT_WIDTH_MAX
 * On failure @ap has been (partly) consumed: a caller that wants to fall
 * back to vsnprintf passes a va_copy. No malloc, no locale, no syscall;
 * thread- and async-signal-safe.
 */
ssize_t shmlog__fmt_encode(const struct shmlog__fmt_spec *spec, va_list ap,
			   unsigned char *buf, size_t cap, bool *truncated);

/*
 * Format the message of format @fmt (@fmt_len bytes, ends early at a NUL)
 * and argument block @args (@args_len bytes), both untrusted, into @out
 * (@outcap bytes, may be NULL if @outcap is 0). What glibc's vsnprintf
 * would print for the original call, byte for byte, where the block is
 * whole; markers (SHMLOG__FMT_*) where it is not. @out is always
 * NUL-terminated when @outcap > 0.
 * Returns the length of the whole message (without the NUL), as snprintf:
 * it was cut if the return is >= @outcap. Never reads outside the two
 * inputs, never writes past @outcap, bounded work for any input.
 * Thread-safe; uses snprintf, so not async-signal-safe.
 */
size_t shmlog__fmt_format(const char *fmt, size_t fmt_len,
			  const unsigned char *args, size_t args_len, char *out,
			  size_t outcap);

#endif
