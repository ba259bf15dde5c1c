/* SPDX-License-Identifier: MIT */
/*
 * Typed printf-style calls: SHMLOG_LOG_TO and the SHMLOG_x macros fetch
 * the values themselves when the compiler can tell every value's type
 * (C11 _Generic), and the library writes them into the record with no
 * va_list. Each case reads the records back and compares the text with
 * glibc's snprintf of the same call: every integer width and sign, float
 * and double, strings of every length class (the 16-byte load, the
 * aligned loop, the copy past 128 bytes), a string that ends just before
 * an unmapped page, a string and a tag at a page's first byte after an
 * unmapped one, precisions, * widths, NULL, no values, eight values;
 * the values evaluated once, filtered calls, a string cut to fit, a value
 * whose type the format does not take ("<?>", never a wrong value), every
 * shape the writer has straight-line code for, and
 * the calls that take a va_list instead (a type _Generic does not know,
 * more than eight values, %m), each such site counted.
 */
#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fmtarg_typed.h"
#include "internal.h"
#include "test.h"

#ifndef SHMLOG__TYPED_CALLS
#error "this test needs a C11 compiler with _Generic (GCC or Clang)"
#endif

/* The codes the macros give, at compile time: the count, then 4 bits a
 * value, the first value lowest. */
_Static_assert(SHMLOG__TYPES("f", 1, "s", 2.0, (void *)0, 'c', 5UL, 1.0f) ==
		       (7 | 0x2113231ull << 4),
	       "the value codes");
_Static_assert(SHMLOG__TYPES("no values") == 0, "no values");
_Static_assert(!SHMLOG__KNOWN("f", 1.0L) && !SHMLOG__KNOWN("f", L"w") &&
		       !SHMLOG__KNOWN("f", 1, 2, 3, 4, 5, 6, 7, 8, 9) &&
		       SHMLOG__KNOWN("f", 1, 2, 3, 4, 5, 6, 7, 8),
	       "what is not typed");

static const char *fresh(const char *what)
{
	const char *b = test_buffer(what);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	shmlog_remove(b);
	REQUIRE(shmlog_create(b, &o) == 0);
	return b;
}

#define WANT_MAX 128
static char want[WANT_MAX][2048];
static int nwant;

/* A call through SHMLOG_LOG_TO, twice (a site's first call makes its
 * plan; the second takes the fast path), and what glibc prints for it. */
#define CASE(h, ...)                                                           \
	do {                                                                   \
		for (int k_ = 0; k_ < 2; k_++) {                               \
			REQUIRE(nwant < WANT_MAX);                             \
			snprintf(want[nwant++], sizeof(want[0]), __VA_ARGS__); \
			SHMLOG_LOG_TO((h), SHMLOG_INFO, "typed", __VA_ARGS__); \
		}                                                              \
	} while (0)

/* Read @b: the records' texts must be want[] in order, each stored as
 * values if @deferred, and its raw time in [@lo, @hi] unless @hi is 0. */
static void check_texts_at(const char *b, bool deferred, int64_t lo,
			   int64_t hi)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, n = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		if (n < nwant) {
			CHECK_STR(rec.msg, want[n]);
			CHECK_STR(rec.tag, "typed");
			if (deferred)
				CHECK(rec.flags & SHMLOG_REC_DEFERRED);
			if (hi)
				CHECK((int64_t)rec.raw_time >= lo &&
				      (int64_t)rec.raw_time <= hi);
		}
		n++;
	}
	CHECK_EQ(n, nwant);
	shmlog_reader_close(r);
	nwant = 0;
}

static void check_texts(const char *b, bool deferred)
{
	check_texts_at(b, deferred, 0, 0);
}

static uint32_t untyped_sites(shmlog_t *h)
{
	return atomic_load(&h->seg.hdr->stats.fmt_untyped);
}

enum color { RED, GREEN = 7 };

/* Every type _Generic knows, against glibc, stored as values. */
static void types(void)
{
	const char *b = fresh("typed-types");
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
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
	_Bool t = 1;
	size_t z = 12345;
	enum color col = GREEN;
	float f = 1.5f;
	double d = -2.25e-300;
	const char *cs = "const";
	char buf[32] = "array";
	unsigned char ubuf[8] = "uchar";
	const void *vp = &i;
	const int ci = 77;

	CASE(h, "no values, a %% sign");
	CASE(h, "%c %hhd %hhu %hd %hu", c, sc, uc, s, us);
	CASE(h, "%d %u %x %o %X", i, u, i, u, u);
	CASE(h, "%ld %lu %lld %llu %llx", l, ul, ll, ull, ull);
	CASE(h, "%d %zu %d %d", t, z, col, ci);
	CASE(h, "%f %.3f %e %g %a %10.2f|%-10.2f|", f, d, d, f, d, 3.14159,
	     2.5);
	CASE(h, "[%s] [%s] [%s] [%s]", cs, buf, (const char *)ubuf, "lit");
	CASE(h, "%p %p %p", vp, (void *)0, (void *)buf);
	CASE(h, "%s|%.3s|%.0s|%10s|%-10s|%.10s", "", "abcdef", "gone", "right",
	     "left", "short");
	CASE(h, "%*d|%-*d|%.*s|", 8, 42, 6, 7, 3, "abcdef");
	CASE(h, "%*.*s|%-*.*s|%.*d", 9, 2, "xyz", -9, 5, "abcdefgh", 5, 42);
	CASE(h, "8 values %d %s %f %u %ld %c %p %x", 1, "two", 3.0, 4u, 5L,
	     '6', (void *)7, 8);
	CASE(h, "%5c|%-5c|%+d|% d|%#x|%#o|%08.3f", 'a', 'b', 5, 6, 255, 8,
	     -1.5);
	check_texts(b, true);
	CHECK_EQ(untyped_sites(h), 0);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Strings of every length class, and one that ends two bytes before a
 * page that is not mapped: the writer never reads past the page the
 * string ends in. A NULL string prints as glibc prints it. */
static void strings(void)
{
	const char *b = fresh("typed-strings");
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	static const size_t lens[] = {0, 1, 7, 8, 15, 16, 17, 31, 32, 33,
				      100, 127, 128, 129, 200, 1000};
	char *s = malloc(2000);
	REQUIRE(s);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		for (size_t j = 0; j < lens[k]; j++)
			s[j] = (char)('a' + (j + k) % 26);
		s[lens[k]] = '\0';
		/* at every alignment mod 16 of the string's start */
		const char *at = s;
		CASE(h, "<%s>", at);
	}
	long page = sysconf(_SC_PAGESIZE);
	char *two = test_pages(2, 1u << 1);
	for (int n = 1; n <= 40; n += 13) {
		char *end = two + page - 1 - n; /* n bytes and the NUL */
		memset(end, 'q', (size_t)n);
		end[n] = '\0';
		CASE(h, "tail [%s] %d", end, n);
	}
	/* a precision ends a string that has no NUL, at the page's end */
	memset(two + page - 5, 'p', 5);
	CASE(h, "[%.5s]", two + page - 5);
	const char *volatile null = NULL; /* unknown to -Wformat */
	CASE(h, "[%s] [%.3s] [%.6s]", null, null, null);
	check_texts(b, true);
	munmap(two, (size_t)page * 2);
	free(s);
	shmlog_close(h);
	shmlog_remove(b);
}

static int evaluated;
static int once(int v)
{
	evaluated++;
	return v;
}

/* Each value evaluated once, through the typed call and the va_list one
 * alike; a filtered call writes nothing. */
static void evaluation(void)
{
	const char *b = fresh("typed-once");
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	struct big {
		int x;
	} big = {3};
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "%d %d", once(1), once(2));
	CHECK_EQ(evaluated, 2);
	/* a structure pointer: not a type the macros know */
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "%d %p", once(3),
		      (void *)&big);
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "%d %p", once(4), &big);
	CHECK_EQ(evaluated, 4);
	REQUIRE(shmlog_set_filter(b, "typed:W", NULL) == 0);
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "%d", once(5));
	CHECK_EQ(evaluated, 5);
	REQUIRE(shmlog_set_filter(b, "", NULL) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, n = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE)
		n += ev == SHMLOG_EV_RECORD;
	CHECK_EQ(n, 3);
	shmlog_reader_close(r);
	/* the one site with a structure pointer took the va_list */
	CHECK_EQ(untyped_sites(h), 1);
	shmlog_close(h);
	shmlog_remove(b);
}

/* What takes the va_list path, each site counted once: a long double, a
 * structure pointer, nine values; %m is formatted by the caller. The
 * texts are glibc's all the same. */
static void untyped(void)
{
	const char *b = fresh("typed-untyped");
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	struct big {
		int x;
	} big;
	long double ld = 1.25L;
	for (int k = 0; k < 3; k++) {
		CASE(h, "%Lf", ld);
		CASE(h, "%p", (void *)&big);
		CASE(h, "%d %d %d %d %d %d %d %d %d", 1, 2, 3, 4, 5, 6, 7, 8,
		     9);
	}
	check_texts(b, true);
	CHECK_EQ(untyped_sites(h), 2); /* the (void *) cast is typed */
	REQUIRE(shmlog_clear(b) == 0);
	char e[128];
	errno = ENOENT;
	snprintf(e, sizeof(e), "open %s: %m", "x");
	for (int k = 0; k < 2; k++) {
		snprintf(want[nwant++], sizeof(want[0]), "%s", e);
		errno = ENOENT;
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "open %s: %m", "x");
	}
	check_texts(b, false);
	struct shmlog_format_stats fs;
	REQUIRE(shmlog_stat_formats(b, &fs) == 0);
	CHECK_EQ(fs.refused, 2);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A string too long for the record is cut as a va_list call cuts it, and
 * marked; a value of a type its conversion does not take prints "<?>"
 * (glibc would print garbage or crash), the values around it intact. */
static void cut_and_mismatch(void)
{
	const char *b = fresh("typed-cut");
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	char *s = malloc(6001);
	REQUIRE(s);
	memset(s, 'z', 6000);
	s[6000] = '\0';
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "%d [%s] %d", 1, s, 2);
	REQUIRE(shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "typed",
				"%d [%s] %d", 1, s, 2) == 0);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "%d|%d|%s|%f|%d", 1, 2.5, 3,
		      "four", 5);
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "%d %d %d", 1);
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "typed", "%ld|%d|%d", 7, -1L,
		      0x100000005LL);
#pragma GCC diagnostic pop
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	char first[SHMLOG_MSG_MAX + 64] = "";
	int ev, n = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		CHECK(rec.flags & SHMLOG_REC_DEFERRED);
		if (n == 0) {
			CHECK(rec.flags & SHMLOG_REC_TRUNCATED);
			CHECK(strstr(rec.msg, "zzz<...>] 2") != NULL);
			snprintf(first, sizeof(first), "%s", rec.msg);
		} else if (n == 1) {
			CHECK_STR(rec.msg, first); /* the va_list's cut */
		} else if (n == 2) {
			CHECK_STR(rec.msg, "1|<?>|<?>|<?>|5");
		} else if (n == 3) {
			CHECK_STR(rec.msg, "1 <?> <?>");
		} else if (n == 4) {
			/* widened with its sign; the low 32 bits, as va_arg */
			CHECK_STR(rec.msg, "7|-1|5");
		}
		n++;
	}
	CHECK_EQ(n, 5);
	shmlog_reader_close(r);
	free(s);
	shmlog_close(h);
	shmlog_remove(b);
}

/* The shape the plan of @fmt with values @codes (SHMLOG__TYPES) gets:
 * @shape, the writer's straight-line code for it, or 0: its loop. */
static void check_shape(const char *fmt, uint64_t codes, unsigned shape)
{
	struct shmlog__fmt_spec spec;
	struct shmlog__fmt_typed t;
	REQUIRE(shmlog__fmt_compile(fmt, &spec) == 0);
	CHECK_EQ(shmlog__fmt_typed_layout(&spec, codes, &t), 0);
	CHECK_EQ(t.shape, shape);
}

#define SHAPE_CASE(shape, ...)                                                 \
	do {                                                                   \
		check_shape(SHMLOG__FMT(__VA_ARGS__), SHMLOG__TYPES(__VA_ARGS__), \
			    (shape));                                          \
		CASE(h, __VA_ARGS__);                                          \
	} while (0)

/* Every shape the writer has straight-line code for (1 to 3 values of
 * 4 bytes, 8 bytes (an integer, a double, a pointer) or a string, at most
 * one string; strings of 0 to 16 bytes), and sites that take its loop
 * (more values, two strings), against glibc. */
static void shapes(void)
{
	const char *b = fresh("typed-shapes");
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	SHAPE_CASE(SHMLOG__SHAPE(1, 0, 0), "%x", 0u);
	SHAPE_CASE(SHMLOG__SHAPE(2, 0, 0), "%lld", (long long)5 * -1000000007LL);
	SHAPE_CASE(SHMLOG__SHAPE(3, 0, 0), "[%s]", "");
	SHAPE_CASE(SHMLOG__SHAPE(1, 1, 0), "%d %x", 9 - 40, 22u);
	SHAPE_CASE(SHMLOG__SHAPE(1, 2, 0), "%x %.3f", 28u, 21 * 0.375);
	SHAPE_CASE(SHMLOG__SHAPE(1, 3, 0), "%d [%s]", 15 - 40, "a");
	SHAPE_CASE(SHMLOG__SHAPE(2, 1, 0), "%p %d", (void *)(uintptr_t)(0x1000 + 30), 19 - 40);
	SHAPE_CASE(SHMLOG__SHAPE(2, 2, 0), "%lld %.3f", (long long)35 * -1000000007LL, 36 * 0.375);
	SHAPE_CASE(SHMLOG__SHAPE(2, 3, 0), "%p [%s]", (void *)(uintptr_t)(0x1000 + 40), "seven77");
	SHAPE_CASE(SHMLOG__SHAPE(3, 1, 0), "[%s] %x", "eight888", 64u);
	SHAPE_CASE(SHMLOG__SHAPE(3, 2, 0), "[%s] %lld", "fifteen15151515", (long long)51 * -1000000007LL);
	SHAPE_CASE(SHMLOG__SHAPE(1, 1, 1), "%d %x %d", 33 - 40, 78u, 35 - 40);
	SHAPE_CASE(SHMLOG__SHAPE(1, 1, 2), "%x %d %.3f", 84u, 37 - 40, 62 * 0.375);
	SHAPE_CASE(SHMLOG__SHAPE(1, 1, 3), "%d %x [%s]", 39 - 40, 92u, "sixteen161616161");
	SHAPE_CASE(SHMLOG__SHAPE(1, 2, 1), "%x %p %x", 98u, (void *)(uintptr_t)(0x1000 + 71), 100u);
	SHAPE_CASE(SHMLOG__SHAPE(1, 2, 2), "%d %lld %.3f", 45 - 40, (long long)76 * -1000000007LL, 77 * 0.375);
	SHAPE_CASE(SHMLOG__SHAPE(1, 2, 3), "%x %p [%s]", 112u, (void *)(uintptr_t)(0x1000 + 81), "");
	SHAPE_CASE(SHMLOG__SHAPE(1, 3, 1), "%d [%s] %d", 51 - 40, "a", 53 - 40);
	SHAPE_CASE(SHMLOG__SHAPE(1, 3, 2), "%x [%s] %lld", 126u, "seven77", (long long)92 * -1000000007LL);
	SHAPE_CASE(SHMLOG__SHAPE(2, 1, 1), "%.3f %x %d", 95 * 0.375, 134u, 59 - 40);
	SHAPE_CASE(SHMLOG__SHAPE(2, 1, 2), "%p %d %lld", (void *)(uintptr_t)(0x1000 + 100), 61 - 40, (long long)102 * -1000000007LL);
	SHAPE_CASE(SHMLOG__SHAPE(2, 1, 3), "%.3f %x [%s]", 105 * 0.375, 148u, "eight888");
	SHAPE_CASE(SHMLOG__SHAPE(2, 2, 1), "%p %lld %x", (void *)(uintptr_t)(0x1000 + 110), (long long)111 * -1000000007LL, 156u);
	SHAPE_CASE(SHMLOG__SHAPE(2, 2, 2), "%.3f %p %lld", 115 * 0.375, (void *)(uintptr_t)(0x1000 + 116), (long long)117 * -1000000007LL);
	SHAPE_CASE(SHMLOG__SHAPE(2, 2, 3), "%.3f %p [%s]", 120 * 0.375, (void *)(uintptr_t)(0x1000 + 121), "fifteen15151515");
	SHAPE_CASE(SHMLOG__SHAPE(2, 3, 1), "%lld [%s] %d", (long long)125 * -1000000007LL, "sixteen161616161", 77 - 40);
	SHAPE_CASE(SHMLOG__SHAPE(2, 3, 2), "%.3f [%s] %p", 130 * 0.375, "", (void *)(uintptr_t)(0x1000 + 132));
	SHAPE_CASE(SHMLOG__SHAPE(3, 1, 1), "[%s] %x %d", "a", 190u, 83 - 40);
	SHAPE_CASE(SHMLOG__SHAPE(3, 1, 2), "[%s] %d %lld", "seven77", 85 - 40, (long long)142 * -1000000007LL);
	SHAPE_CASE(SHMLOG__SHAPE(3, 2, 1), "[%s] %.3f %d", "eight888", 146 * 0.375, 89 - 40);
	SHAPE_CASE(SHMLOG__SHAPE(3, 2, 2), "[%s] %p %lld", "fifteen15151515", (void *)(uintptr_t)(0x1000 + 151), (long long)152 * -1000000007LL);
	SHAPE_CASE(0, "%d %d %d %d", 1, 2, 3, 4);
	SHAPE_CASE(0, "[%s] [%s]", "two", "strings");
	SHAPE_CASE(0, "%d [%s] %.3f [%s]", 5, "two", 0.5, "strings");
	SHAPE_CASE(0, "no values");
	check_texts(b, true);
	CHECK_EQ(untyped_sites(h), 0);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Two buffers in turn through one typed site, and many records: each
 * buffer gets its own id, chunks are switched on the way. */
static void many(void)
{
	char a[128];
	snprintf(a, sizeof(a), "%s", fresh("typed-many-a"));
	const char *b = fresh("typed-many-b");
	shmlog_t *ha, *hb;
	REQUIRE(shmlog_open(a, 0, &ha) == 0);
	REQUIRE(shmlog_open(b, 0, &hb) == 0);
	SHMLOG_LOG_TO(hb, SHMLOG_INFO, "x", "another format first %d", 0);
	REQUIRE(shmlog_clear(b) == 0);
	for (int i = 0; i < 20000; i++)
		SHMLOG_LOG_TO(i % 2 ? hb : ha, SHMLOG_INFO, "many",
			      "call %d from %s took %.3f ms", i, "10.1.2.3",
			      i * 0.125);
	const char *names[2] = {a, b};
	for (int k = 0; k < 2; k++) {
		shmlog_reader_t *r;
		REQUIRE(shmlog_reader_open(names[k], 0, &r) == 0);
		struct shmlog_record rec;
		int ev, n = 0;
		while ((ev = shmlog_reader_next(r, &rec, NULL)) !=
		       SHMLOG_EV_NONE) {
			if (ev != SHMLOG_EV_RECORD)
				continue;
			int i = -1;
			CHECK(sscanf(rec.msg, "call %d", &i) == 1);
			CHECK_EQ(i % 2, k);
			char e[128];
			snprintf(e, sizeof(e), "call %d from %s took %.3f ms",
				 i, "10.1.2.3", i * 0.125);
			CHECK_STR(rec.msg, e);
			CHECK(rec.flags & SHMLOG_REC_DEFERRED);
			n++;
		}
		CHECK(n > 100); /* the oldest overwritten, the rest read */
		shmlog_reader_close(r);
	}
	shmlog_close(ha);
	shmlog_close(hb);
	shmlog_remove(a);
	shmlog_remove(b);
}

/* A string and the call's tag at a page's first byte with the page
 * before it not mapped, and the tag at a page's last bytes with the page
 * after it not mapped: the typed call reads neither page (its one
 * compare per pointer sends a pointer at a page's first byte, and a null
 * one, the long way), and the record holds the string and the tag. */
static void page_edges(void)
{
	const char *b = fresh("typed-edges");
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	long page = sysconf(_SC_PAGESIZE);
	char *map = test_pages(3, 1u << 0 | 1u << 2);
	char *first = map + page, *last = map + 2 * page;
	char tags[2][16][16], strs[21][32];
	int n = 0;
	for (int tl = 1; tl <= 15; tl++) {
		for (int at = 0; at < 2; at++) {
			char *tag = at ? last - 1 - tl : first;
			for (int k = 0; k < tl; k++)
				tag[k] = (char)('A' + (k + tl + at) % 26);
			tag[tl] = '\0';
			memcpy(tags[at][tl], tag, (size_t)tl + 1);
			for (int k_ = 0; k_ < 2; k_++) /* plan, then fast */
				SHMLOG_LOG_TO(h, SHMLOG_INFO, tag, "t%d %d", tl,
					      at);
			n += 2;
		}
	}
	/* the tags' bytes rewritten: the string at the first byte now */
	for (int sl = 0; sl <= 20; sl++) {
		memset(first, 's', (size_t)sl);
		first[sl] = '\0';
		snprintf(strs[sl], sizeof(strs[sl]), "<%s> %d", first, sl);
		for (int k_ = 0; k_ < 2; k_++)
			SHMLOG_LOG_TO(h, SHMLOG_INFO, "edge", "<%s> %d", first,
				      sl);
	}
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, got = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		CHECK(rec.flags & SHMLOG_REC_DEFERRED);
		char text[32];
		if (got < n) {
			int tl = got / 4 + 1, at = got / 2 % 2;
			snprintf(text, sizeof(text), "t%d %d", tl, at);
			CHECK_STR(rec.tag, tags[at][tl]);
			CHECK_STR(rec.msg, text);
		} else if (got < n + 42) {
			CHECK_STR(rec.tag, "edge");
			CHECK_STR(rec.msg, strs[(got - n) / 2]);
		}
		got++;
	}
	CHECK_EQ(got, n + 42);
	shmlog_reader_close(r);
	munmap(map, (size_t)page * 3);
	shmlog_close(h);
	shmlog_remove(b);
}

/* The tag of call @i of late_exits(): 1 to 15 bytes, the end of one
 * string, or (every other call) the start of a buffer whose bytes go on,
 * not zeros, past the tag's NUL (the 8 bytes the fast path reads). */
static const char *late_tag(int i, char (*junk)[16], char *tag_want)
{
	static const char tags[] = "ABCDEFGHIJKLMNO";
	int len = 1 + i % 15;
	if (i / 15 % 2) {
		memcpy(tag_want, tags + 15 - len, (size_t)len + 1);
		return tags + 15 - len;
	}
	memcpy(tag_want, junk[len - 1], (size_t)len + 1);
	return junk[len - 1];
}

/* Enough calls for many chunk switches, with tags of every length the
 * fast path takes: a call that finds its chunk full leaves the fast path
 * after measuring its tag (the tag then rebuilt from the bytes it kept,
 * or its address), and its record must be the same. Every tenth call has
 * no value. */
static void late_exits(void)
{
	const char *b = fresh("typed-late");
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	char junk[15][16];
	for (int k = 0; k < 15; k++) {
		memcpy(junk[k], "ONMLKJIHGFEDCBA", 16);
		junk[k][k + 1] = 0; /* "O", "ON", ... then "LKJ..." */
	}
	enum { CALLS = 3000 };
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	int got = 0, i = 0;
	for (int round = 0; round < CALLS / 100; round++) {
		for (int k = 0; k < 100; k++, i++) {
			char want_tag[16];
			const char *tag = late_tag(i, junk, want_tag);
			if (i % 10 == 9)
				SHMLOG_LOG_TO(h, SHMLOG_INFO, tag, "late none");
			else
				SHMLOG_LOG_TO(h, SHMLOG_INFO, tag,
					      "late %d %s %.1f", i, "x",
					      i * 0.5);
		}
		/* read as we go: the buffer keeps only the newest */
		struct shmlog_record rec;
		int ev;
		while ((ev = shmlog_reader_next(r, &rec, NULL)) !=
		       SHMLOG_EV_NONE) {
			if (ev != SHMLOG_EV_RECORD)
				continue;
			char want_msg[64], want_tag[16];
			if (got % 10 == 9)
				snprintf(want_msg, sizeof(want_msg),
					 "late none");
			else
				snprintf(want_msg, sizeof(want_msg),
					 "late %d %s %.1f", got, "x",
					 got * 0.5);
			CHECK_STR(rec.msg, want_msg);
			late_tag(got, junk, want_tag);
			CHECK_STR(rec.tag, want_tag);
			CHECK(rec.flags & SHMLOG_REC_DEFERRED);
			got++;
		}
	}
	/* some 200 KiB of records: a chunk is at most a few tens of KiB */
	CHECK_EQ(got, CALLS);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A buffer whose clock is not the TSC: its typed calls never take the
 * fast path, which reads the TSC (the handle's site_key matches no
 * site's key); each record holds the buffer's own clock. */
static void other_clock(void)
{
	const char *b = test_buffer("typed-clock");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.clock = SHMLOG_CLOCK_REALTIME;
	shmlog_remove(b);
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_REALTIME, &t0);
	for (int i = 0; i < 2; i++)
		CASE(h, "clock %d %s %.1f", i, "x", i * 0.5);
	clock_gettime(CLOCK_REALTIME, &t1);
	check_texts_at(b, true, (int64_t)t0.tv_sec * 1000000000 + t0.tv_nsec,
		       (int64_t)t1.tv_sec * 1000000000 + t1.tv_nsec);
	shmlog_close(h);
	shmlog_remove(b);
}

int main(void)
{
	types();
	strings();
	shapes();
	page_edges();
	late_exits();
	evaluation();
	untyped();
	cut_and_mismatch();
	many();
	other_clock();
	return test_done("test_fmt_typed");
}
