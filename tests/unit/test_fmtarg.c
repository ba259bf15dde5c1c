/* SPDX-License-Identifier: MIT */
/*
 * The reader-formatted message codec (src/fmtarg.c):
 *  - differential: random conversions and edge values, encoded from a real
 *    va_list and formatted back, must equal glibc's vsnprintf byte for byte
 *    (whole, and cut to a smaller buffer);
 *  - refusals: what compile refuses, and that it then leaves its output
 *    alone; encode's fallback errors; cut strings and their marker;
 *  - hostile: random and mutated formats and blocks never make the reader
 *    read outside its inputs, write past its buffer or leave it
 *    unterminated (exact-size heap copies, so ASan sees any overrun).
 * The pseudo-random sequence starts from a fixed value, or from
 * $SHMLOG_TEST_SEED; it is printed so a failure can be replayed.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "fmtarg.h"
#include "test.h"

#define OUT_MAX 32768
#define BLOCK_MAX 65536

/* ---- pseudo-random numbers: splitmix64 ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static unsigned below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* @s of @n bytes, escaped, for failure messages. */
static void show(const char *what, const char *s, size_t n)
{
	fprintf(stderr, "  %s (%zu): \"", what, n);
	for (size_t i = 0; i < n && i < 600; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			fputc(c, stderr);
		else
			fprintf(stderr, "\\x%02x", c);
	}
	fprintf(stderr, "%s\"\n", n > 600 ? "..." : "");
}

/* ---- the round trip through a real va_list ---- */

static char ref[OUT_MAX], got[OUT_MAX], small[OUT_MAX + 16];
static unsigned char block[BLOCK_MAX];
static long diff_cases, diff_mismatches;
/* the last round trip's format and block, for the hostile test to damage */
static char last_fmt[512];
static size_t last_blen;

static void mismatch(const char *fmt, const char *why, size_t rn, size_t gn)
{
	if (diff_mismatches++)
		return;
	fprintf(stderr, "first mismatch (%s):\n", why);
	show("format", fmt, strlen(fmt));
	show("vsnprintf", ref, rn < OUT_MAX ? rn : OUT_MAX - 1);
	show("fmtarg", got, gn < OUT_MAX ? gn : OUT_MAX - 1);
}

/* The same output cut to a random smaller buffer: a prefix, terminated,
 * nothing written past the end, the same length returned. */
static void check_cut(const char *fmt, size_t blen, size_t full)
{
	size_t cap = below((unsigned)full + 2);
	memset(small, 0xa5, cap + 16);
	size_t n = shmlog__fmt_format(fmt, strlen(fmt), block, blen, small,
				      cap);
	bool ok = n == full;
	if (cap) {
		size_t keep = full < cap ? full : cap - 1;
		ok = ok && !memcmp(small, ref, keep) && small[keep] == '\0';
	}
	for (size_t i = cap; i < cap + 16; i++)
		ok = ok && (unsigned char)small[i] == 0xa5;
	if (!ok)
		mismatch(fmt, "cut output", full, n);
}

static void roundtrip(const char *fmt, ...)
{
	struct shmlog__fmt_spec spec;
	va_list ap, ap2;
	bool cut = false;

	diff_cases++;
	int err = shmlog__fmt_compile(fmt, &spec);
	if (err) {
		fprintf(stderr, "compile refused a valid format (%d)\n", err);
		mismatch(fmt, "refused", 0, 0);
		return;
	}
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int rn = vsnprintf(ref, sizeof(ref), fmt, ap2);
	va_end(ap2);
	ssize_t bn = shmlog__fmt_encode(&spec, ap, block, sizeof(block), &cut);
	va_end(ap);
	if (rn < 0 || rn >= OUT_MAX || bn < 0 || cut) {
		fprintf(stderr, "vsnprintf %d, encode %zd, cut %d\n", rn,
			(ssize_t)bn, cut);
		mismatch(fmt, "encode", 0, 0);
		return;
	}
	snprintf(last_fmt, sizeof(last_fmt), "%s", fmt);
	last_blen = (size_t)bn;
	size_t gn = shmlog__fmt_format(fmt, strlen(fmt), block, (size_t)bn,
				       got, sizeof(got));
	if (gn != (size_t)rn || memcmp(ref, got, gn + 1)) {
		mismatch(fmt, "text", (size_t)rn, gn);
		return;
	}
	check_cut(fmt, (size_t)bn, gn);
}

/* ---- random conversions ---- */

enum kind {
	K_INT, /* d i u x X o c, none/hh/h: int */
	K_LONG,
	K_LLONG,
	K_SIZE,
	K_INTMAX,
	K_PTRDIFF,
	K_DOUBLE,
	K_LDOUBLE,
	K_STRING,
	K_POINTER,
	K_COUNT
};

/* Append to @b a conversion for @k; *@sw / *@sp say if it takes a * width
 * / precision (always both with @stars). */
static void gen_conv(char *b, enum kind k, bool stars, bool *sw, bool *sp)
{
	static const char flagset[] = "-+ #0'";
	static const char ints[] = "diuxXo";
	static const char floats[] = "fFeEgGaA";
	char *s = b + strlen(b);

	*s++ = '%';
	for (unsigned n = below(4); n; n--)
		*s++ = flagset[below(6)];
	*sw = stars || below(3) == 0;
	if (*sw)
		*s++ = '*';
	else if (below(2))
		s += sprintf(s, "%u",
			     below(20) ? 1 + below(30) :
					 1 + below(SHMLOG__FMT_WIDTH_MAX));
	*sp = stars || below(4) == 0;
	if (*sp)
		s += sprintf(s, ".*");
	else if (below(3) == 0)
		*s++ = '.';
	else if (below(2))
		s += sprintf(s, ".%u",
			     below(20) ? below(30) :
					 below(SHMLOG__FMT_WIDTH_MAX + 1));

	static const char *const int_len[] = { "", "hh", "h" };
	switch (k) {
	case K_INT:
		if (below(8) == 0) {
			*s++ = 'c';
			break;
		}
		s += sprintf(s, "%s%c", int_len[below(3)], ints[below(6)]);
		break;
	case K_LONG:
		s += sprintf(s, "l%c", ints[below(6)]);
		break;
	case K_LLONG:
		s += sprintf(s, "ll%c", ints[below(6)]);
		break;
	case K_SIZE:
		s += sprintf(s, "z%c", ints[below(6)]);
		break;
	case K_INTMAX:
		s += sprintf(s, "j%c", ints[below(6)]);
		break;
	case K_PTRDIFF:
		s += sprintf(s, "t%c", ints[below(6)]);
		break;
	case K_DOUBLE:
		s += sprintf(s, "%s%c", below(4) ? "" : "l", floats[below(8)]);
		break;
	case K_LDOUBLE:
		s += sprintf(s, "L%c", floats[below(8)]);
		break;
	case K_STRING:
		*s++ = 's';
		break;
	case K_POINTER:
		*s++ = 'p';
		break;
	default:
		break;
	}
	*s = '\0';
}

/* Literal text, with the odd %% and UTF-8. */
static void gen_text(char *b)
{
	static const char *const bits[] = { "", " ", "link ", " down after ",
					    "%%", "100%% ", "[", "] ", "é",
					    "ms", "=", "\t" };
	for (unsigned n = below(3); n; n--)
		strcat(b, bits[below(12)]);
}

/* A * value: mostly small, sometimes negative (left-justify, or no
 * precision), sometimes at the limit. */
static int gen_star(void)
{
	switch (below(8)) {
	case 0:
		return -(int)below(40);
	case 1:
		return (below(2) ? 1 : -1) * SHMLOG__FMT_WIDTH_MAX;
	case 2:
		return (int)below(SHMLOG__FMT_WIDTH_MAX);
	default:
		return (int)below(40);
	}
}

static int gen_int(void)
{
	static const int edge[] = { 0, 1, -1, INT_MIN, INT_MAX, 255, 256,
				    -128, -129, 65535, 32768, -32769, 'A' };
	switch (below(3)) {
	case 0:
		return edge[below(sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return (int)(int32_t)rnd();
	default:
		return (int)below(2000) - 1000;
	}
}

static long long gen_i64(void)
{
	static const long long edge[] = { 0, 1, -1, LLONG_MIN, LLONG_MAX,
					  (long long)UINT64_MAX,
					  INT_MIN, INT_MAX,
					  (long long)UINT32_MAX,
					  INT64_C(1) << 32,
					  -(INT64_C(1) << 53) };
	switch (below(3)) {
	case 0:
		return edge[below(sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return (long long)rnd();
	default:
		return (long long)(rnd() >> below(64));
	}
}

static double gen_double(void)
{
	static const double edge[] = {
		0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 0.1, 1e15, 1e16,
		9.5, 0.05, 123456.789, 1e300, -1e300, 1e-300, DBL_MIN,
		DBL_TRUE_MIN, -DBL_TRUE_MIN, DBL_MAX, -DBL_MAX, DBL_EPSILON,
		4.9406564584124654e-320 /* denormal */, 99999.5, 0.999999,
	};
	double d;
	uint64_t bits;
	switch (below(6)) {
	case 0:
		return edge[below(sizeof(edge) / sizeof(edge[0]))];
	case 1:
		switch (below(4)) {
		case 0: return NAN;
		case 1: return -NAN;
		case 2: return INFINITY;
		default: return -INFINITY;
		}
	case 2: /* any pattern: NaN payloads, denormals, everything */
		bits = rnd();
		memcpy(&d, &bits, sizeof(d));
		return d;
	default: /* a plausible number of any magnitude */
		d = (double)(rnd() >> 11) / (double)(UINT64_C(1) << 53);
		d = ldexp(d, (int)below(200) - 100);
		return below(2) ? d : -d;
	}
}

static long double gen_ldouble(void)
{
	static const long double edge[] = {
		0.0L, -0.0L, 1.0L, 0.5L, 2.5L, 0.1L, 1e4000L, -1e4000L,
		1e-4000L, LDBL_MIN, LDBL_MAX, -LDBL_MAX, LDBL_EPSILON,
		3.3621031431120935063e-4932L /* LDBL_MIN */,
#ifdef LDBL_TRUE_MIN
		LDBL_TRUE_MIN,
#endif
	};
	switch (below(5)) {
	case 0:
		return edge[below(sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return below(2) ? (long double)NAN : -(long double)INFINITY;
	case 2: {
#if LDBL_MANT_DIG == 64
		/* a canonical x87 pattern: the integer bit follows the
		 * exponent */
		long double v = 0;
		unsigned char b[16] = { 0 };
		uint64_t mant = rnd();
		unsigned exp = below(4) ? below(0x8000) : below(2) ? 0 : 0x7fff;
		mant = exp ? mant | (UINT64_C(1) << 63) :
			     mant & ~(UINT64_C(1) << 63);
		memcpy(b, &mant, 8);
		exp |= below(2) << 15;
		b[8] = (unsigned char)exp;
		b[9] = (unsigned char)(exp >> 8);
		memcpy(&v, b, 10);
		return v;
#else
		return (long double)gen_double();
#endif
	}
	default:
		return ldexpl((long double)gen_double(), (int)below(400) - 200);
	}
}

static char strbuf[4][512];

static const char *gen_string(unsigned slot)
{
	char *s = strbuf[slot];
	switch (below(8)) {
	case 0:
		return NULL;
	case 1:
		return "";
	case 2:
		return "eth0";
	case 3:
		return "(null)";
	default: {
		unsigned n = below(8) ? below(40) : below(sizeof(strbuf[0]));
		static const char *const alpha[] = { "a", "Z", " ", "%", "%s",
						     "é", "€", "😀", "\t", "0" };
		s[0] = '\0';
		while (strlen(s) + 4 < n)
			strcat(s, alpha[below(10)]);
		return s;
	}
	}
}

static void *gen_pointer(void)
{
	switch (below(4)) {
	case 0:
		return NULL;
	case 1:
		return (void *)(uintptr_t)1;
	case 2:
		return (void *)UINTPTR_MAX;
	default:
		return (void *)(uintptr_t)rnd();
	}
}

/* Call roundtrip() with the * values the conversion takes, then @v. */
#define CALL(fmt, sw, sp, v)                                                   \
	do {                                                                   \
		int w_ = gen_star(), p_ = gen_star();                          \
		if ((sw) && (sp))                                              \
			roundtrip(fmt, w_, p_, v);                             \
		else if (sw)                                                   \
			roundtrip(fmt, w_, v);                                 \
		else if (sp)                                                   \
			roundtrip(fmt, p_, v);                                 \
		else                                                           \
			roundtrip(fmt, v);                                     \
	} while (0)

static void one_conversion(void)
{
	char fmt[256] = "";
	enum kind k = (enum kind)below(K_COUNT);
	bool sw, sp;

	gen_text(fmt);
	gen_conv(fmt, k, false, &sw, &sp);
	gen_text(fmt);
	switch (k) {
	case K_INT:
		CALL(fmt, sw, sp, gen_int());
		break;
	case K_LONG:
		CALL(fmt, sw, sp, (long)gen_i64());
		break;
	case K_LLONG:
		CALL(fmt, sw, sp, gen_i64());
		break;
	case K_SIZE:
		CALL(fmt, sw, sp, (size_t)gen_i64());
		break;
	case K_INTMAX:
		CALL(fmt, sw, sp, (intmax_t)gen_i64());
		break;
	case K_PTRDIFF:
		CALL(fmt, sw, sp, (ptrdiff_t)gen_i64());
		break;
	case K_DOUBLE:
		CALL(fmt, sw, sp, gen_double());
		break;
	case K_LDOUBLE:
		CALL(fmt, sw, sp, gen_ldouble());
		break;
	case K_STRING:
		CALL(fmt, sw, sp, gen_string(0));
		break;
	case K_POINTER:
		CALL(fmt, sw, sp, gen_pointer());
		break;
	default:
		break;
	}
}

/* Three conversions with * width and precision each, in a few type
 * orders: arguments in sequence, and text between them. */
static void three_conversions(void)
{
	static const enum kind order[][3] = {
		{ K_INT, K_STRING, K_DOUBLE },
		{ K_STRING, K_LLONG, K_POINTER },
		{ K_LDOUBLE, K_INT, K_STRING },
		{ K_SIZE, K_DOUBLE, K_LONG },
		{ K_STRING, K_STRING, K_INT },
	};
	unsigned o = below(5);
	char fmt[512] = "";
	bool sw, sp;
	for (int i = 0; i < 3; i++) {
		gen_text(fmt);
		gen_conv(fmt, order[o][i], true, &sw, &sp);
	}
	gen_text(fmt);
#define S gen_star()
	switch (o) {
	case 0:
		roundtrip(fmt, S, S, gen_int(), S, S, gen_string(0), S, S,
			  gen_double());
		break;
	case 1:
		roundtrip(fmt, S, S, gen_string(0), S, S, gen_i64(), S, S,
			  gen_pointer());
		break;
	case 2:
		roundtrip(fmt, S, S, gen_ldouble(), S, S, gen_int(), S, S,
			  gen_string(0));
		break;
	case 3:
		roundtrip(fmt, S, S, (size_t)gen_i64(), S, S, gen_double(), S,
			  S, (long)gen_i64());
		break;
	default:
		roundtrip(fmt, S, S, gen_string(0), S, S, gen_string(1), S, S,
			  gen_int());
		break;
	}
#undef S
}

static void test_differential(uint64_t start, long n1, long n3)
{
	double t0 = now();
	rng = start;
	for (long i = 0; i < n1; i++)
		one_conversion();
	for (long i = 0; i < n3; i++)
		three_conversions();
	/* every case at once would drown the log: one CHECK for them all */
	CHECK_EQ(diff_mismatches, 0);
	printf("differential: %ld cases (%ld one-conversion, %ld "
	       "three-conversion), %ld mismatches, %.2f s\n",
	       diff_cases, n1, n3, diff_mismatches, now() - t0);
}

/* ---- fixed cases ---- */

static ssize_t encode(const char *fmt, unsigned char *buf, size_t cap,
		      bool *cut, ...)
{
	struct shmlog__fmt_spec spec;
	va_list ap;
	if (shmlog__fmt_compile(fmt, &spec))
		return -1000;
	va_start(ap, cut);
	ssize_t n = shmlog__fmt_encode(&spec, ap, buf, cap, cut);
	va_end(ap);
	return n;
}

static const char *decode(const char *fmt, const unsigned char *b, size_t n)
{
	shmlog__fmt_format(fmt, strlen(fmt), b, n, got, sizeof(got));
	return got;
}

static void test_layout(void)
{
	/* the example of fmtarg.c's layout table */
	static const unsigned char want[] = { 5, 4, 0, 'e', 't', 'h', '0',
					      1, 0xdc, 5, 0, 0 };
	unsigned char b[64];
	bool cut = false;
	const char *fmt = "link %s down after %d ms";
	CHECK_EQ(encode(fmt, b, sizeof(b), &cut, "eth0", 1500), sizeof(want));
	CHECK(!memcmp(b, want, sizeof(want)));
	CHECK(!cut);
	CHECK_STR(decode(fmt, b, sizeof(want)), "link eth0 down after 1500 ms");

	struct shmlog__fmt_spec spec;
	CHECK_EQ(shmlog__fmt_compile("%*.*s %lld %p %Lf %c", &spec), 0);
	CHECK_EQ(spec.nargs, 7);
	CHECK_EQ(spec.arg[0].role, SHMLOG__FMT_ROLE_WIDTH);
	CHECK_EQ(spec.arg[1].role, SHMLOG__FMT_ROLE_PREC);
	CHECK_EQ(spec.arg[2].cls, SHMLOG__FMT_STRING);
	CHECK_EQ(spec.arg[2].prec, SHMLOG__FMT_PREC_STAR);
	CHECK_EQ(spec.arg[3].cls, SHMLOG__FMT_INT64);
	CHECK_EQ(spec.arg[4].cls, SHMLOG__FMT_POINTER);
	CHECK_EQ(spec.arg[5].cls, SHMLOG__FMT_LDOUBLE);
	CHECK_EQ(spec.arg[6].cls, SHMLOG__FMT_INT32);
	CHECK_EQ(spec.fixed, 5 + 5 + 3 + 9 + 9 + 17 + 5);

	/* the x87 padding bytes are zero, whatever the stack held */
	CHECK_EQ(encode("%Lf", b, sizeof(b), &cut, 1.5L), 17);
	CHECK(b[11] == 0 && b[16] == 0);
}

static void test_refusals(void)
{
	static const char *const refused[] = {
		"%n", "x %hhn", "%m", "%1$d", "%2$s %1$s", "%*1$d", "%.*2$d",
		"%ls", "%lc", "%C", "%S", "%k", "%", "abc %", "%5%", "%-%",
		"%Ld", "%Lx", "%qd", "%hs", "%zf", "%hhf", "%lp", "%Ip",
		"%Id", "%ll", "%5", "%.", "%-", "%hhs", "%w", "%*5d", "%jc",
		"%lls", "%lld %n",
	};
	struct shmlog__fmt_spec spec, before;
	memset(&spec, 0xaa, sizeof(spec));
	before = spec;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		int err = shmlog__fmt_compile(refused[i], &spec);
		if (err != -EINVAL)
			fprintf(stderr, "\"%s\": %d\n", refused[i], err);
		CHECK_EQ(err, -EINVAL);
		/* and a reader shown it prints a marker, never a crash */
		decode(refused[i], NULL, 0);
		CHECK(strstr(got, SHMLOG__FMT_BADSPEC) != NULL);
	}
	CHECK_EQ(shmlog__fmt_compile("%5000d", &spec), -ERANGE);
	CHECK_EQ(shmlog__fmt_compile("%.4097f", &spec), -ERANGE);
	CHECK_EQ(shmlog__fmt_compile(NULL, &spec), -EINVAL);
	CHECK_EQ(shmlog__fmt_compile("%d", NULL), -EINVAL);
	char many[200] = "";
	for (int i = 0; i < SHMLOG__FMT_MAX_ARGS; i++)
		strcat(many, "%d");
	struct shmlog__fmt_spec fits;
	CHECK_EQ(shmlog__fmt_compile(many, &fits), 0);
	CHECK_EQ(fits.nargs, SHMLOG__FMT_MAX_ARGS);
	strcat(many, "%d");
	CHECK_EQ(shmlog__fmt_compile(many, &spec), -E2BIG);
	/* each * is a value of its own: 11 conversions, 33 values */
	CHECK_EQ(shmlog__fmt_compile("%*.*d%*.*d%*.*d%*.*d%*.*d%*.*d"
				     "%*.*d%*.*d%*.*d%*.*d%*.*d",
				     &spec),
		 -E2BIG);
	CHECK(!memcmp(&spec, &before, sizeof(spec))); /* left untouched */

	static const char *const accepted[] = {
		"", "plain", "%%", "100%% sure", "%'d", "%lf", "%Lg", "%hhd",
		"%hu", "%zu", "%zd", "%jd", "%td", "%-+ #0'12.5lld", "%.d",
		"%4096d", "%.4096f", "%-*.*s", "%#o", "%#x", "%a", "%p", "%c",
	};
	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		int err = shmlog__fmt_compile(accepted[i], &spec);
		if (err)
			fprintf(stderr, "\"%s\": %d\n", accepted[i], err);
		CHECK_EQ(err, 0);
	}
}

/* Encode's own reasons to fall back, and strings cut to fit. */
static void test_encode_limits(void)
{
	unsigned char b[256];
	bool cut = false;

	CHECK_EQ(encode("%*d", b, sizeof(b), &cut, 5000, 1), -ERANGE);
	CHECK_EQ(encode("%*d", b, sizeof(b), &cut, INT_MIN, 1), -ERANGE);
	CHECK_EQ(encode("%.*f", b, sizeof(b), &cut, 4097, 1.0), -ERANGE);
	CHECK_EQ(encode("%.*f", b, sizeof(b), &cut, INT_MIN, 1.0), 14);
	CHECK_EQ(encode("%d %d", b, 9, &cut, 1, 2), -ENOSPC);
	CHECK_EQ(encode("%d %d", b, 10, &cut, 1, 2), 10);
	CHECK(!cut);

	/* a string cut to fit the room left after the fixed values */
	char lng[300];
	memset(lng, 'x', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	ssize_t n = encode("[%s] %d", b, 64, &cut, lng, 7);
	CHECK_EQ(n, 64);
	CHECK(cut);
	CHECK_EQ(b[0], SHMLOG__FMT_STRING | SHMLOG__FMT_TAG_TRUNC);
	char want[128];
	snprintf(want, sizeof(want), "[%.56s%s] 7", lng, SHMLOG__FMT_CUT);
	CHECK_STR(decode("[%s] %d", b, (size_t)n), want);

	/* cut on a UTF-8 character boundary: "é" is 2 bytes, "€" 3 */
	cut = false;
	n = encode("%s", b, 3 + 4, &cut, "abcé");
	CHECK(cut);
	CHECK_STR(decode("%s", b, (size_t)n), "abc" SHMLOG__FMT_CUT);
	n = encode("%s", b, 3 + 4, &cut, "ab€x");
	CHECK_STR(decode("%s", b, (size_t)n), "ab" SHMLOG__FMT_CUT);
	n = encode("%s", b, 3 + 5, &cut, "abcd€");
	CHECK_STR(decode("%s", b, (size_t)n), "abcd" SHMLOG__FMT_CUT);

	/* no room at all: an empty string, flagged */
	n = encode("%s", b, 3, &cut, "abc");
	CHECK_EQ(n, 3);
	CHECK_STR(decode("%s", b, (size_t)n), SHMLOG__FMT_CUT);

	/* a precision bounds what is read: an unterminated buffer, on the
	 * heap so ASan would see one byte too many */
	char *raw = malloc(5);
	REQUIRE(raw);
	memcpy(raw, "hello", 5);
	cut = false;
	n = encode("<%.5s|%.*s|%.9s>", b, sizeof(b), &cut, raw, 3, raw,
		   "(short)");
	CHECK(!cut);
	CHECK_STR(decode("<%.5s|%.*s|%.9s>", b, (size_t)n),
		  "<hello|hel|(short)>");
	free(raw);

	/* NULL strings print as glibc prints them */
	n = encode("%s|%.3s|%.6s|%10s", b, sizeof(b), &cut, (char *)NULL,
		   (char *)NULL, (char *)NULL, (char *)NULL);
	CHECK_STR(decode("%s|%.3s|%.6s|%10s", b, (size_t)n),
		  "(null)||(null)|    (null)");
}

/* What a reader shows for blocks that do not fit their format. */
static void test_reader_markers(void)
{
	unsigned char b[64];
	bool cut = false;
	ssize_t n = encode("%d %s", b, sizeof(b), &cut, 42, "hi");
	REQUIRE(n == 10);

	CHECK_STR(decode("%d %s", b, (size_t)n), "42 hi");
	CHECK_STR(decode("%d %s %d", b, (size_t)n), "42 hi <?>");
	CHECK_STR(decode("%d", b, (size_t)n), "42"); /* extra ignored */
	CHECK_STR(decode("%d %s", b, 7), "42 <?>"); /* cut inside "hi" */
	CHECK_STR(decode("%d %s", b, 0), "<?> <?>");
	/* wrong class: marked, and the value after still lines up */
	CHECK_STR(decode("%s %s", b, (size_t)n), "<?> hi");
	CHECK_STR(decode("%f %s", b, (size_t)n), "<?> hi");
	CHECK_STR(decode("%lld %s", b, (size_t)n), "<?> hi");
	/* a tag of no class breaks the rest */
	b[5] = 0x0e;
	CHECK_STR(decode("%d %s %d", b, (size_t)n), "42 <?> <?>");
	b[5] = SHMLOG__FMT_INT32 | SHMLOG__FMT_TAG_TRUNC;
	CHECK_STR(decode("%d %s", b, (size_t)n), "42 <?>");
	/* refused conversions in a hostile format take no value */
	b[5] = SHMLOG__FMT_STRING;
	CHECK_STR(decode("%d%n %s", b, (size_t)n), "42<?%> hi");
	CHECK_STR(decode("%d %5% %s", b, (size_t)n), "42 <?%> hi");
	CHECK_STR(decode("%1$d %s", b, (size_t)n), "<?%>d <?>");
	/* the format ends at its length, or at a NUL before it */
	CHECK_EQ(shmlog__fmt_format("%d %s", 2, b, (size_t)n, got, 64), 2);
	CHECK_STR(got, "42");
	CHECK_EQ(shmlog__fmt_format("%d\0%s", 5, b, (size_t)n, got, 64), 2);
	CHECK_EQ(shmlog__fmt_format("%d %", 4, b, (size_t)n, got, 64), 7);
	CHECK_STR(got, "42 <?%>");
	/* NULL inputs */
	CHECK_EQ(shmlog__fmt_format(NULL, 10, NULL, 10, got, 64), 0);
	CHECK_STR(got, "");
	CHECK_EQ(shmlog__fmt_format("abc", 3, NULL, 0, NULL, 0), 3);
	/* hostile * values are clamped, so the work stays bounded */
	unsigned char w[] = { SHMLOG__FMT_INT32, 0xff, 0xff, 0xff, 0x7f,
			      SHMLOG__FMT_INT32, 1, 0, 0, 0 };
	size_t len = shmlog__fmt_format("%*d", 3, w, sizeof(w), got, 64);
	CHECK_EQ(len, SHMLOG__FMT_WIDTH_MAX);
#if LDBL_MANT_DIG == 64
	/* a non-canonical x87 value (integer bit clear, exponent set) */
	unsigned char ld[17] = { SHMLOG__FMT_LDOUBLE };
	ld[9] = 0x01;
	ld[10] = 0x40;
	CHECK_STR(decode("%Lf", ld, sizeof(ld)), SHMLOG__FMT_MISSING);
	ld[8] = 0x80;
	CHECK_STR(decode("%Lf", ld, sizeof(ld)), "4.000000");
#endif
}

/* ---- hostile inputs ---- */

static const char fmt_alpha[] = "%%%%%%-+ #0'123456789.**hhllLqjztdiouxX"
				"csSCpnmfFeEgGaA$I \0";

static size_t hostile_format(char *f, size_t cap)
{
	size_t n = below((unsigned)cap);
	for (size_t i = 0; i < n; i++)
		f[i] = below(4) ? fmt_alpha[below(sizeof(fmt_alpha) - 1)] :
				  (char)rnd();
	return n;
}

/* A valid format and its block, then a few bytes of either changed, and
 * the block maybe cut short. */
static void mutated_pair(char *f, size_t *flen, unsigned char *b,
			 size_t *blen)
{
	bool sw, sp;
	f[0] = '\0';
	if (below(2)) {
		/* a genuine pair, from a round trip */
		if (below(2))
			one_conversion();
		else
			three_conversions();
		*flen = strlen(last_fmt);
		memcpy(f, last_fmt, *flen);
		*blen = last_blen;
		memcpy(b, block, last_blen);
		goto mutate;
	}
	for (unsigned n = 1 + below(4); n; n--) {
		gen_text(f);
		gen_conv(f, (enum kind)below(K_COUNT), true, &sw, &sp);
	}
	*flen = strlen(f);
	/* a block of plausible values: whatever the format wants, or not */
	size_t used = 0;
	for (unsigned n = below(12); n && used + 40 < BLOCK_MAX; n--) {
		unsigned cls = 1 + below(6);
		b[used++] = (unsigned char)(cls | (below(8) ? 0 : 0x80));
		if (cls == SHMLOG__FMT_STRING) {
			unsigned l = below(40);
			b[used++] = (unsigned char)l;
			b[used++] = 0;
			for (unsigned i = 0; i < l; i++)
				b[used++] = (unsigned char)rnd();
		} else {
			unsigned size = cls == SHMLOG__FMT_INT32   ? 4 :
					cls == SHMLOG__FMT_LDOUBLE ? 16 : 8;
			for (unsigned i = 0; i < size; i++)
				b[used++] = (unsigned char)rnd();
		}
	}
	*blen = used;
mutate:
	for (unsigned n = below(4); n; n--) {
		if (below(2) && *flen)
			f[below((unsigned)*flen)] =
				fmt_alpha[below(sizeof(fmt_alpha) - 1)];
		else if (*blen)
			b[below((unsigned)*blen)] = (unsigned char)rnd();
	}
	if (below(4) == 0 && *blen)
		*blen = below((unsigned)*blen);
}

static void test_hostile(long max_iter, double max_seconds)
{
	static char fsrc[sizeof(last_fmt)];
	static unsigned char bsrc[BLOCK_MAX];
	double t0 = now();
	long i;
	for (i = 0; i < max_iter; i++) {
		if ((i & 1023) == 0 && now() - t0 > max_seconds)
			break;
		size_t flen, blen;
		if (below(2)) {
			flen = hostile_format(fsrc, 80);
			blen = below(200);
			for (size_t k = 0; k < blen; k++)
				bsrc[k] = below(3) ? (unsigned char)below(7) :
						     (unsigned char)rnd();
		} else {
			mutated_pair(fsrc, &flen, bsrc, &blen);
		}
		/* exact-size heap copies: no slack to read or write into */
		char *f = malloc(flen ? flen : 1);
		unsigned char *b = malloc(blen ? blen : 1);
		size_t cap = below(4) ? below(64) : below(8192);
		char *o = malloc(cap + 16);
		REQUIRE(f && b && o);
		memcpy(f, fsrc, flen);
		memcpy(b, bsrc, blen);
		memset(o, 0xa5, cap + 16);
		size_t n = shmlog__fmt_format(f, flen, b, blen, o, cap);
		bool ok = true;
		for (size_t k = cap; k < cap + 16; k++)
			ok = ok && (unsigned char)o[k] == 0xa5;
		if (cap)
			ok = ok && o[n < cap ? n : cap - 1] == '\0';
		if (!ok) {
			fprintf(stderr, "hostile case %ld: cap %zu, len %zu\n",
				i, cap, n);
			show("format", f, flen);
		}
		CHECK(ok);
		free(f);
		free(b);
		free(o);
	}
	CHECK_EQ(diff_mismatches, 0); /* the round trips made on the way */
	printf("hostile: %ld cases, %.2f s\n", i, now() - t0);
}

/* Strings that end at, or start near, the end of a readable page, the
 * next one unmapped: the writer never reads across (the short-string copy
 * reads 16 bytes at once), and every length round-trips. A fault here
 * kills the test. */
static void test_page_end(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *m = (unsigned char *)test_pages(2, 1u << 1);
	long before = diff_cases + diff_mismatches;
	for (int len = 0; len <= 40; len++) {
		/* ending on the page's last byte, and starting at each of the
		 * last 40 bytes (cut by the page: the NUL is its last byte) */
		char *s = (char *)m + pg - 1 - len;
		memset(s, 'a' + len % 26, (size_t)len);
		s[len] = '\0';
		roundtrip("%s|%d", s, len);
		roundtrip("[%s] [%s]", s, (char *)m + pg - 1);
		char *t = (char *)m + pg - 1 - len;
		roundtrip("%.3s %s", t, t);
	}
	CHECK(diff_cases + diff_mismatches - before >= 41 * 3);
	CHECK_EQ(diff_mismatches, 0);
	munmap(m, (size_t)pg * 2);
}

int main(void)
{
	uint64_t start = 0x243f6a8885a308d3ULL;
	const char *env = getenv("SHMLOG_TEST_SEED");
	if (env && *env)
		start = strtoull(env, NULL, 0);
	printf("SHMLOG_TEST_SEED=%" PRIu64 "\n", start);

	test_layout();
	test_refusals();
	test_encode_limits();
	test_page_end();
	test_reader_markers();
	test_differential(start, 200000, 50000);
	rng = start ^ 1;
	test_hostile(300000, 30.0);
	return test_done("test_fmtarg");
}
