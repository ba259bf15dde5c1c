/* SPDX-License-Identifier: MIT */
/*
 * The printf-style calls of test_fmt_cxx, compiled twice: as C11 by
 * test_fmt_cxx.c and as C++ by test_fmt_cxx.cc. Each TU defines
 * TYPED_CASES_FN, the function's name, before including this file. The
 * function writes each case twice (a site's first call makes its plan,
 * the second takes the writer's fast path) through SHMLOG_LOG_TO with
 * tag "typed", and lists in @expect[] the argument block's classes each
 * record must hold, one character a value (4: INT32, 8: INT64, d: DOUBLE,
 * L: long double, s: STRING, p: POINTER); returns the records written
 * (at most @max).
 *
 * Where C++ has a type C lacks (scoped enumerations, char16_t, char32_t,
 * references, nullptr), the C side passes the value as the type C gives
 * it: the records must still be the same, byte for byte.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#include <string>
enum class typed_small : unsigned char { big = 200 };
enum class typed_wide : long long { low = -5000000000LL };
#endif

enum typed_color { TYPED_RED, TYPED_GREEN = 7 };

#define TYPED_CASE(cls, ...)                                                   \
	do {                                                                   \
		for (int k_ = 0; k_ < 2 && n < max; k_++) {                    \
			expect[n++] = (cls);                                   \
			SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", __VA_ARGS__);   \
		}                                                              \
	} while (0)

int TYPED_CASES_FN(shmlog_t *h, const char **expect, int max)
{
	int n = 0;
	char c = 'x';
	signed char sc = -5;
	unsigned char uc = 250;
	short s = -30000;
	unsigned short us = 65000;
	int i = -123456;
	unsigned u = 4000000000u;
	long l = -9000000000L;
	unsigned long ul = 18000000000000000000UL;
	long long ll = -(1LL << 62);
	unsigned long long ull = ~0ULL;
	bool t = true;
	size_t z = 12345;
	ptrdiff_t pd = -77;
	enum typed_color col = TYPED_GREEN;
	float f = 1.5f;
	double d = -2.25e-300;
	long double ld = 1.25L;
	const char *cs = "const";
	char buf[32] = "array";
	unsigned char ubuf[8] = "uchar";
	/* addresses the same in both TUs */
	const void *vp = (const void *)(uintptr_t)0x7f0012345678u;
	void *pp = (void *)(uintptr_t)0x1000u;
	volatile int vi = 31;
	const int ci = 77;
	wchar_t wc = L'w';
	const char *volatile nul = 0; /* unknown to -Wformat */
	static const char long_text[] =
		"a string longer than sixteen bytes, and longer than a "
		"cache line too, so that the writer takes its loop";
#ifdef __cplusplus
	typed_small small = typed_small::big;
	typed_wide wide = typed_wide::low;
	char16_t c16 = u'\x263a';
	char32_t c32 = U'\x1f600';
	const int &ref = i;
	std::string str("a std::string");
#define TYPED_SMALL small
#define TYPED_WIDE wide
#define TYPED_C16 c16
#define TYPED_C32 c32
#define TYPED_REF ref
#define TYPED_NULLPTR nullptr
#define TYPED_NULLSTR nullptr
#define TYPED_STR str.c_str()
#else
#define TYPED_SMALL ((unsigned char)200)
#define TYPED_WIDE (-5000000000LL)
#define TYPED_C16 ((uint_least16_t)0x263a)
#define TYPED_C32 ((uint_least32_t)0x1f600)
#define TYPED_REF i
#define TYPED_NULLPTR ((void *)0)
#define TYPED_NULLSTR ((const char *)0)
#define TYPED_STR "a std::string"
#endif

	TYPED_CASE("", "no values, a %% sign");
	TYPED_CASE("44444", "%c %hhd %hhu %hd %hu", c, sc, uc, s, us);
	TYPED_CASE("44444", "%d %u %x %o %X", i, u, i, u, u);
	TYPED_CASE("88888", "%ld %lu %lld %llu %llx", l, ul, ll, ull, ull);
	TYPED_CASE("48448", "%d %zu %d %d %td", t, z, col, ci, pd);
	TYPED_CASE("444", "%d %d %c", vi, wc, (int)wc);
	TYPED_CASE("4", "%c", 'q'); /* a char in C++, an int in C */
	TYPED_CASE("44", "%u %u", TYPED_C16, TYPED_C32);
	TYPED_CASE("4", "%d", TYPED_REF);
	TYPED_CASE("dddddd", "%f %.3f %e %g %a %10.2f", f, d, d, f, d, 3.14159);
	TYPED_CASE("ssss", "[%s] [%s] [%s] [%s]", cs, buf, (const char *)ubuf,
		   "lit");
	TYPED_CASE("s4s", "%s %d %s", ubuf, 5, TYPED_STR);
	TYPED_CASE("ppp", "%p %p %p", vp, (void *)0, pp);
	TYPED_CASE("s", "%s", nul);
	TYPED_CASE("s4", "%s %d", long_text, 3);
	TYPED_CASE("ssssss", "%s|%.3s|%.0s|%10s|%-10s|%.10s", "", "abcdef",
		   "gone", "right", "left", "short");
	TYPED_CASE("44444s", "%*d|%-*d|%.*s|", 8, 42, 6, 7, 3, "abcdef");
	TYPED_CASE("4s8d", "%d %s %lu %f", 1, "two", 3UL, 4.0);
	TYPED_CASE("4sd484p4", "8 values %d %s %f %u %ld %c %p %x", 1, "two",
		   3.0, 4u, 5L, '6', (void *)7, 8);
	/* not typed, in either language: a long double, nine values (the
	 * va_list path, the same block) */
	TYPED_CASE("L", "%Lf", ld);
	TYPED_CASE("444444444", "%d%d%d%d%d%d%d%d%d", 1, 2, 3, 4, 5, 6, 7, 8, 9);
	/* values the format does not take: stored in their own class, the
	 * reader prints "<?>" */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
#ifdef __clang__
#pragma GCC diagnostic ignored "-Wformat-pedantic"
#else
#pragma GCC diagnostic ignored "-Wformat-overflow"
#endif
	/* -Wformat rejects scoped enumerations (no promotion through ...),
	 * and a null %s; what is stored is the same all the same */
	TYPED_CASE("48", "%d %lld", TYPED_SMALL, TYPED_WIDE);
	TYPED_CASE("sp", "%s %p", TYPED_NULLSTR, TYPED_NULLPTR);
	/* 32-bit values widened for a 64-bit conversion: each with its sign */
	TYPED_CASE("88", "%llu %lld", u, i);
	TYPED_CASE("d", "%d", 2.5);
	TYPED_CASE("8", "%s", 42);
	TYPED_CASE("p", "%d", (const char *)vp); /* the same address in both */
	TYPED_CASE("4", "%d %d", 1);
	TYPED_CASE("4", "%d", 1, 2);
#pragma GCC diagnostic pop
	return n;
}
