/* SPDX-License-Identifier: MIT */
/*
 * The machinery behind shmlog.h's printf-style macros (SHMLOG_LOG,
 * SHMLOG_LOG_TO, SHMLOG_x, SHMLOGx): per-call-site caches, the checks the
 * compiler does for them, and the library entry points they call. Nothing
 * here is API: the names are shmlog__ / SHMLOG__, may change with any
 * release, and a program calls only what shmlog.h declares. The structures
 * and the functions declared here are ABI all the same (a binary built
 * with an older header keeps calling them), so they change only as the
 * library's symbol versions allow (src/libshmlog.map).
 *
 * Included by shmlog.h after its own declarations; include shmlog.h, never
 * this file on its own.
 *
 * What a call site does:
 *  1. SHMLOG_LOG checks the compile-time floor (SHMLOG_MIN_PRIORITY), then
 *     its tag's cached answer (struct shmlog_site, SHMLOG__SITE_WANTS):
 *     one load of the default handle's filter generation and two compares
 *     while the filter is unchanged; the arguments are not evaluated for
 *     a disabled call.
 *  2. SHMLOG__PRINT_AS picks the call's path: typed when the format is a
 *     string literal and the compiler told every value's type
 *     (shmlog__print_typed, no va_list), through the site's cache with a
 *     va_list when the format is a string literal
 *     (shmlog__print_untyped), else the plain shmlog_print_ex().
 *  3. A site's struct shmlog_fmt_site keeps what never changes between
 *     its calls: the compiled format (plan) and its id in the buffer last
 *     written to. Only the library reads or writes it, atomically.
 */
#ifndef SHMLOG_MACROS_H
#define SHMLOG_MACROS_H

#ifndef SHMLOG_H
#error "include shmlog.h: it includes shmlog_macros.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Per-call-site cache used by the SHMLOG_x macros: the answer for one tag,
 * valid while the buffer's filter generation equals @gen. */
struct shmlog_site {
	uint32_t gen; /* generation the answer was computed at; 0: never */
	int32_t level; /* lowest priority enabled for this tag */
	const char *tag;
};

/* Internal to the macros: the default handle's filter generation word
 * (points at a private word until the default handle is opened). */
extern const uint32_t *shmlog__filter_gen;
int shmlog__site_refresh(struct shmlog_site *site, int prio);
/* As shmlog__site_refresh(), for the tag of this call. */
int shmlog__site_update(struct shmlog_site *site, int prio, const char *tag);

/* Internal to the macros: is @prio enabled for @tag on the default handle?
 * For tags that are not fixed strings (C++), which no call site caches. */
int shmlog__tag_enabled(int prio, const char *tag);

/* A call site caches the answer for its tag, so in C the tag must be the
 * same string on every call (the static initialiser insists). In C++ a
 * tag that is not a constant array is asked about on each call instead
 * (shmlog__tag_enabled()), and the call is then stored as any other. */
#ifdef __cplusplus
/* shmlog__cxx::tag_fixed(): include/shmlog_cxx.h */
#define SHMLOG__TAG_FIXED(tag) ::shmlog__cxx::tag_fixed(tag)
/* A call whose tag is not fixed, once the filter let it through: as any
 * other (deferred, typed): its site keeps the format, never the tag. */
#define SHMLOG__PRINT_ANY_TAG(h, flags, prio, tag, ...)                        \
	SHMLOG__PRINT(h, flags, prio, tag, __VA_ARGS__)
#else
#define SHMLOG__TAG_FIXED(tag) 1
/* never taken in C, where every tag is fixed: the plain call */
#define SHMLOG__PRINT_ANY_TAG(h, flags, prio, tag, ...)                        \
	shmlog_print_ex(h, flags, prio, tag, __VA_ARGS__);
#endif

/* The format of a call (its first argument after the tag), and whether
 * it is a string literal the compiler can see: then the call is deferred
 * (SHMLOG_WRITE_DEFERRED). */
#define SHMLOG__FMT_(fmt, ...) fmt
#define SHMLOG__FMT(...) SHMLOG__FMT_(__VA_ARGS__, 0)
#if defined(__GNUC__) || defined(__clang__)
#define SHMLOG__DEFER(...)                                                     \
	(__builtin_constant_p(SHMLOG__FMT(__VA_ARGS__)) ? SHMLOG_WRITE_DEFERRED \
							: 0)
#else
#define SHMLOG__DEFER(...) 0
#endif

/* Internal to the macros: what a printf-style call site keeps once it is
 * deferred (src/fmtarg_table.c), zero until its first call; only the library
 * reads or writes it, atomically. @types is the macro's: what it knew of
 * the call's arguments at compile time (SHMLOG__TYPES), 0 if nothing. */
struct shmlog_fmt_site {
	uint64_t key; /* the handle written to, and the format's id there */
	const void *plan; /* the format, checked and compiled */
	unsigned flags; /* the macro's: 0 or SHMLOG_WRITE_UNFILTERED */
	uint64_t types; /* SHMLOG__TYPES() of the call, or 0 */
	int typed_ok; /* 1: typed calls; -1: a va_list (refused); 0: ask */
};

/* Internal to the macros: a deferred call through @site (@fmt a string
 * literal, the same on every call of the site). As shmlog_print_ex() with
 * the site's flags otherwise. Five arguments before the values, so that
 * one of them still travels in a register. */
int shmlog__print_site(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		       const char *tag, const char *fmt, ...)
	SHMLOG_PRINTF(5, 6);

/* Internal to the macros: shmlog__print_site() for a site of these
 * macros (its types field set) whose values have no types the compiler
 * could tell: counted once per site and buffer it writes to, in the
 * buffer's header (stats). A site whose format the reader does not
 * format (%m, %n) comes here too, counted as refused, per call. */
int shmlog__print_untyped(shmlog_t *h, struct shmlog_fmt_site *site,
			  int prio, const char *tag, const char *fmt, ...)
	SHMLOG_PRINTF(5, 6);

/* Internal to the macros: one argument of a printf-style call whose type
 * the compiler told the macro (C11 _Generic), in 8 bytes: integers
 * widened to 64 bits with their sign, float and double as double, strings
 * and void pointers as the pointer. */
union shmlog__arg {
	long long i;
	unsigned long long u;
	double d;
	const void *p;
};

/* Internal to the macros: as shmlog__print_site(), the values already
 * fetched into @args, @site->types saying what they are (at most 8; see
 * SHMLOG__TYPES). No va_list and no parsing per call: the site's plan,
 * checked once against the types, says where each value goes, and the
 * block is written straight into the record. Six arguments: all in
 * registers. */
int shmlog__print_typed(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
			const char *tag, const char *fmt,
			const union shmlog__arg *args);

/* Internal to the macros: make @site's plan before its first typed call
 * (the values not yet fetched): 1 if its calls can be typed, 0 if they go
 * through a va_list (a conversion the reader does not format, such as %m
 * or %n: the caller formats it; or no memory). Sets @site->typed_ok. */
int shmlog__site_prepare(struct shmlog_fmt_site *site, const char *fmt);

/*
 * What a call's arguments are, known at compile time. Each argument gets
 * a code: SHMLOG__TY_INT (any integer type, enums, _Bool), SHMLOG__TY_DBL
 * (float, double), SHMLOG__TY_PTR (char, signed char and unsigned char
 * pointers, void pointers, const or not), 0 for anything else (long
 * double, other pointers, structures); SHMLOG__TYPES(fmt, ...) packs the
 * count in bits 0-3 and argument i's code in bits 4i..4i+3. A call with
 * more than 8 values, or with a value of code 0, is not typed: it goes
 * through shmlog__print_site() and its va_list, as before (the library
 * counts such call sites in the buffer's stats). C11 tells the types with
 * _Generic (below); C++11 and later with templates, the same codes and
 * values (include/shmlog_cxx.h, included at the end of this file); older
 * C and C++ take the va_list path.
 */
#define SHMLOG__TY_INT 1
#define SHMLOG__TY_DBL 2
#define SHMLOG__TY_PTR 3
#if !defined(__cplusplus) && defined(__STDC_VERSION__) &&                     \
	__STDC_VERSION__ >= 201112L && (defined(__GNUC__) || defined(__clang__))
#define SHMLOG__TYPED_CALLS 1
#define SHMLOG__TY(x)                                                          \
	_Generic((x), _Bool: 1, char: 1, signed char: 1, unsigned char: 1,    \
		 short: 1, unsigned short: 1, int: 1, unsigned: 1, long: 1,    \
		 unsigned long: 1, long long: 1, unsigned long long: 1,        \
		 float: 2, double: 2, char *: 3, const char *: 3,              \
		 signed char *: 3, const signed char *: 3, unsigned char *: 3, \
		 const unsigned char *: 3, void *: 3, const void *: 3,         \
		 default: 0)
/* The value itself where its type has a code, else 0: the branch that
 * uses it is never taken then, but must compile. */
#define SHMLOG__TYV(x)                                                         \
	_Generic((x), _Bool: (x), char: (x), signed char: (x),                \
		 unsigned char: (x), short: (x), unsigned short: (x),          \
		 int: (x), unsigned: (x), long: (x), unsigned long: (x),       \
		 long long: (x), unsigned long long: (x), float: (x),          \
		 double: (x), char *: (x), const char *: (x),                  \
		 signed char *: (x), const signed char *: (x),                 \
		 unsigned char *: (x), const unsigned char *: (x),             \
		 void *: (x), const void *: (x), default: 0)
static inline union shmlog__arg shmlog__arg_i(long long v)
{
	union shmlog__arg a;
	a.i = v;
	return a;
}
static inline union shmlog__arg shmlog__arg_u(unsigned long long v)
{
	union shmlog__arg a;
	a.u = v;
	return a;
}
static inline union shmlog__arg shmlog__arg_d(double v)
{
	union shmlog__arg a;
	a.d = v;
	return a;
}
static inline union shmlog__arg shmlog__arg_p(const void *v)
{
	union shmlog__arg a;
	a.p = v;
	return a;
}
#define SHMLOG__ARG(x)                                                         \
	_Generic((x), unsigned: shmlog__arg_u, unsigned long: shmlog__arg_u,  \
		 unsigned long long: shmlog__arg_u, float: shmlog__arg_d,      \
		 double: shmlog__arg_d, char *: shmlog__arg_p,                 \
		 const char *: shmlog__arg_p, signed char *: shmlog__arg_p,    \
		 const signed char *: shmlog__arg_p,                           \
		 unsigned char *: shmlog__arg_p,                               \
		 const unsigned char *: shmlog__arg_p, void *: shmlog__arg_p,  \
		 const void *: shmlog__arg_p, default: shmlog__arg_i)(         \
		SHMLOG__TYV(x))
#elif defined(__cplusplus) && __cplusplus >= 201103L &&                       \
	(defined(__GNUC__) || defined(__clang__))
/* C++: SHMLOG__TY and SHMLOG__ARG are templates' (include/shmlog_cxx.h),
 * defined once this file's C declarations are done. */
#define SHMLOG__TYPED_CALLS 1
#else
#define SHMLOG__TY(x) 0
#define SHMLOG__ARG(x) {0}
#endif

/* The number of values after the format: 0 to 8, or M (more). */
#define SHMLOG__CAT_(a, b) a##b
#define SHMLOG__CAT(a, b) SHMLOG__CAT_(a, b)
#define SHMLOG__NVAL_(f, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, \
	a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, \
	a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, \
	a43, a44, a45, a46, a47, a48, a49, a50, a51, a52, a53, a54, a55, a56, a57, \
	a58, a59, a60, a61, a62, a63, a64, n, ...) n
#define SHMLOG__NVAL(...) \
	SHMLOG__NVAL_(__VA_ARGS__, M, M, M, M, M, M, M, M, M, M, M, M, M, \
		M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, \
		M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, \
		M, M, M, 8, 7, 6, 5, 4, 3, 2, 1, 0, ~)
/* Per count: all typed (KNOWN), the codes packed (CODES), the values
 * (VALUES), each value once. */
#define SHMLOG__KNOWN_0(f) 1
#define SHMLOG__KNOWN_1(f, a1) (SHMLOG__TY(a1) && SHMLOG__KNOWN_0(f))
#define SHMLOG__KNOWN_2(f, a1, a2) (SHMLOG__TY(a1) && SHMLOG__KNOWN_1(f, a2))
#define SHMLOG__KNOWN_3(f, a1, a2, a3) (SHMLOG__TY(a1) && SHMLOG__KNOWN_2(f, a2, a3))
#define SHMLOG__KNOWN_4(f, a1, a2, a3, a4) (SHMLOG__TY(a1) && SHMLOG__KNOWN_3(f, a2, a3, a4))
#define SHMLOG__KNOWN_5(f, a1, a2, a3, a4, a5) (SHMLOG__TY(a1) && SHMLOG__KNOWN_4(f, a2, a3, a4, a5))
#define SHMLOG__KNOWN_6(f, a1, a2, a3, a4, a5, a6) (SHMLOG__TY(a1) && SHMLOG__KNOWN_5(f, a2, a3, a4, a5, a6))
#define SHMLOG__KNOWN_7(f, a1, a2, a3, a4, a5, a6, a7) (SHMLOG__TY(a1) && SHMLOG__KNOWN_6(f, a2, a3, a4, a5, a6, a7))
#define SHMLOG__KNOWN_8(f, a1, a2, a3, a4, a5, a6, a7, a8) (SHMLOG__TY(a1) && SHMLOG__KNOWN_7(f, a2, a3, a4, a5, a6, a7, a8))
#define SHMLOG__CODES_0(f) 0
#define SHMLOG__CODES_1(f, a1) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_0(f) << 4)
#define SHMLOG__CODES_2(f, a1, a2) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_1(f, a2) << 4)
#define SHMLOG__CODES_3(f, a1, a2, a3) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_2(f, a2, a3) << 4)
#define SHMLOG__CODES_4(f, a1, a2, a3, a4) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_3(f, a2, a3, a4) << 4)
#define SHMLOG__CODES_5(f, a1, a2, a3, a4, a5) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_4(f, a2, a3, a4, a5) << 4)
#define SHMLOG__CODES_6(f, a1, a2, a3, a4, a5, a6) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_5(f, a2, a3, a4, a5, a6) << 4)
#define SHMLOG__CODES_7(f, a1, a2, a3, a4, a5, a6, a7) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_6(f, a2, a3, a4, a5, a6, a7) << 4)
#define SHMLOG__CODES_8(f, a1, a2, a3, a4, a5, a6, a7, a8) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_7(f, a2, a3, a4, a5, a6, a7, a8) << 4)
#define SHMLOG__VALUES_0(f) {0}
#define SHMLOG__VALUES_1(f, a1) SHMLOG__ARG(a1)
#define SHMLOG__VALUES_2(f, a1, a2) SHMLOG__ARG(a1), SHMLOG__VALUES_1(f, a2)
#define SHMLOG__VALUES_3(f, a1, a2, a3) SHMLOG__ARG(a1), SHMLOG__VALUES_2(f, a2, a3)
#define SHMLOG__VALUES_4(f, a1, a2, a3, a4) SHMLOG__ARG(a1), SHMLOG__VALUES_3(f, a2, a3, a4)
#define SHMLOG__VALUES_5(f, a1, a2, a3, a4, a5) SHMLOG__ARG(a1), SHMLOG__VALUES_4(f, a2, a3, a4, a5)
#define SHMLOG__VALUES_6(f, a1, a2, a3, a4, a5, a6) SHMLOG__ARG(a1), SHMLOG__VALUES_5(f, a2, a3, a4, a5, a6)
#define SHMLOG__VALUES_7(f, a1, a2, a3, a4, a5, a6, a7) SHMLOG__ARG(a1), SHMLOG__VALUES_6(f, a2, a3, a4, a5, a6, a7)
#define SHMLOG__VALUES_8(f, a1, a2, a3, a4, a5, a6, a7, a8) SHMLOG__ARG(a1), SHMLOG__VALUES_7(f, a2, a3, a4, a5, a6, a7, a8)
#define SHMLOG__KNOWN_M(...) 0
#define SHMLOG__CODES_M(...) 0
#define SHMLOG__VALUES_M(...) {0}
/* Are all the call's values typed (a constant)? Their types (a constant)
 * and their values (an initialiser list, the values evaluated once). No
 * cast: C++ programs built with -Wold-style-cast expand these too. */
#define SHMLOG__KNOWN(...)                                                     \
	SHMLOG__CAT(SHMLOG__KNOWN_, SHMLOG__NVAL(__VA_ARGS__))(__VA_ARGS__)
#define SHMLOG__TYPES(...)                                                     \
	((UINT64_C(0) + SHMLOG__CAT(SHMLOG__NUM_, SHMLOG__NVAL(__VA_ARGS__))) | \
	 SHMLOG__CAT(SHMLOG__CODES_, SHMLOG__NVAL(__VA_ARGS__))(__VA_ARGS__)   \
		 << 4)
#define SHMLOG__NUM_0 0
#define SHMLOG__NUM_1 1
#define SHMLOG__NUM_2 2
#define SHMLOG__NUM_3 3
#define SHMLOG__NUM_4 4
#define SHMLOG__NUM_5 5
#define SHMLOG__NUM_6 6
#define SHMLOG__NUM_7 7
#define SHMLOG__NUM_8 8
#define SHMLOG__NUM_M 0
#define SHMLOG__VALUES(...)                                                    \
	SHMLOG__CAT(SHMLOG__VALUES_, SHMLOG__NVAL(__VA_ARGS__))(__VA_ARGS__)
/* A site's types: SHMLOG__TYPED_SITE with the call's SHMLOG__TYPES(), or
 * SHMLOG__UNTYPED_SITE (its calls take a va_list). */
#define SHMLOG__TYPED_SITE (UINT64_C(1) << 63)
#define SHMLOG__UNTYPED_SITE (UINT64_C(1) << 62)
#ifdef SHMLOG__TYPED_CALLS
static inline int shmlog__site_typed(struct shmlog_fmt_site *site,
				     const char *fmt)
{
	int ok = __atomic_load_n(&site->typed_ok, __ATOMIC_RELAXED);
	return ok > 0 || (ok == 0 && shmlog__site_prepare(site, fmt));
}
#define SHMLOG__TYPED_OK(site, ...)                                            \
	(SHMLOG__KNOWN(__VA_ARGS__) &&                                         \
	 shmlog__site_typed(&(site), SHMLOG__FMT(__VA_ARGS__)))
#define SHMLOG__SITE_TYPES(...)                                                \
	(SHMLOG__KNOWN(__VA_ARGS__)                                            \
		 ? SHMLOG__TYPED_SITE | SHMLOG__TYPES(__VA_ARGS__)             \
		 : SHMLOG__UNTYPED_SITE)
#else
#define SHMLOG__TYPED_OK(site, ...) 0
#define SHMLOG__SITE_TYPES(...) SHMLOG__UNTYPED_SITE
#endif

/* A printf-style call, its result into @res: typed when the format is a
 * string literal and the compiler told every value's type, else through
 * its site's cache with a va_list when the format is a string literal,
 * else formatted by the caller. A statement. */
#define SHMLOG__PRINT_AS(res, h, flags, prio, tag, ...)                        \
	{                                                                      \
		static struct shmlog_fmt_site shmlog__fsite_ = {               \
			0, 0, flags, SHMLOG__SITE_TYPES(__VA_ARGS__), 0};      \
		if (SHMLOG__DEFER(__VA_ARGS__) &&                              \
		    SHMLOG__TYPED_OK(shmlog__fsite_, __VA_ARGS__)) {           \
			const union shmlog__arg shmlog__args_[] = {            \
				SHMLOG__VALUES(__VA_ARGS__)};                  \
			(res) = shmlog__print_typed(                           \
				(h), &shmlog__fsite_, (prio), (tag),           \
				SHMLOG__FMT(__VA_ARGS__), shmlog__args_);      \
		} else if (SHMLOG__DEFER(__VA_ARGS__)) {                       \
			(res) = shmlog__print_untyped((h), &shmlog__fsite_,    \
						      (prio), (tag),           \
						      __VA_ARGS__);            \
		} else {                                                       \
			(res) = shmlog_print_ex((h), (flags), (prio), (tag),   \
						__VA_ARGS__);                  \
		}                                                              \
	}

/* The same, its result dropped. */
#define SHMLOG__PRINT(h, flags, prio, tag, ...)                                \
	{                                                                      \
		int shmlog__res_;                                              \
		SHMLOG__PRINT_AS(shmlog__res_, h, flags, prio, tag,            \
				 __VA_ARGS__)                                  \
		(void)shmlog__res_;                                            \
	}

/* The cached check of a call site whose tag is fixed. */
#define SHMLOG__SITE_WANTS(prio, tag)                                          \
	static struct shmlog_site shmlog__site_ = {0, 0, tag};                 \
	if (__atomic_load_n(shmlog__filter_gen, __ATOMIC_ACQUIRE) ==           \
			    shmlog__site_.gen                                  \
		    ? (prio) >= shmlog__site_.level                            \
		    : shmlog__site_update(&shmlog__site_, (prio), (tag)))


/* ---- The public macros, documented in shmlog.h. ---- */

/* Through a handle of the caller's: the handle's filter is asked by
 * shmlog_print_ex() (flags 0), on every call. */
#define SHMLOG_LOG_TO(h, prio, tag, ...)                                       \
	do {                                                                   \
		SHMLOG__PRINT((h), 0, (prio), (tag), __VA_ARGS__)              \
	} while (0)

/* Compile-time floor: calls below it vanish from the binary. */
#ifndef SHMLOG_MIN_PRIORITY
#define SHMLOG_MIN_PRIORITY SHMLOG_VERBOSE
#endif

/* SHMLOG_LOG(prio, tag, fmt, ...): through shmlog_default(), if @prio is
 * enabled for @tag. A disabled call costs a load and two compares and does
 * not evaluate the arguments: the call site caches its tag's answer, so the
 * tag is the same string on every call, a string literal or a constant
 * array (in C++ any other tag is asked about on each call). */
#define SHMLOG_LOG(prio, tag, ...)                                             \
	do {                                                                   \
		if ((prio) >= SHMLOG_MIN_PRIORITY) {                           \
			if (SHMLOG__TAG_FIXED(tag)) {                          \
				SHMLOG__SITE_WANTS(prio, tag)                  \
				SHMLOG__PRINT(shmlog_default(),                \
					      SHMLOG_WRITE_UNFILTERED, (prio), \
					      (tag), __VA_ARGS__)              \
			} else if (shmlog__tag_enabled((prio), (tag))) {       \
				SHMLOG__PRINT_ANY_TAG(shmlog_default(),        \
						      SHMLOG_WRITE_UNFILTERED, \
						      (prio), (tag),           \
						      __VA_ARGS__)             \
			}                                                      \
		}                                                              \
	} while (0)

#define SHMLOG_V(tag, ...) SHMLOG_LOG(SHMLOG_VERBOSE, tag, __VA_ARGS__)
#define SHMLOG_D(tag, ...) SHMLOG_LOG(SHMLOG_DEBUG, tag, __VA_ARGS__)
#define SHMLOG_I(tag, ...) SHMLOG_LOG(SHMLOG_INFO, tag, __VA_ARGS__)
#define SHMLOG_W(tag, ...) SHMLOG_LOG(SHMLOG_WARN, tag, __VA_ARGS__)
#define SHMLOG_E(tag, ...) SHMLOG_LOG(SHMLOG_ERROR, tag, __VA_ARGS__)
#define SHMLOG_F(tag, ...) SHMLOG_LOG(SHMLOG_FATAL, tag, __VA_ARGS__)

/* The file's default tag, as Android's LOG_TAG: define SHMLOG_TAG before
 * including this header, then SHMLOGI("link %s", "up"). Default "?". */
#ifndef SHMLOG_TAG
#define SHMLOG_TAG "?"
#endif
#define SHMLOGV(...) SHMLOG_LOG(SHMLOG_VERBOSE, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGD(...) SHMLOG_LOG(SHMLOG_DEBUG, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGI(...) SHMLOG_LOG(SHMLOG_INFO, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGW(...) SHMLOG_LOG(SHMLOG_WARN, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGE(...) SHMLOG_LOG(SHMLOG_ERROR, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGF(...) SHMLOG_LOG(SHMLOG_FATAL, SHMLOG_TAG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* SHMLOG_MACROS_H */
