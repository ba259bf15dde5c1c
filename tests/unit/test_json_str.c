/* SPDX-License-Identifier: MIT */
/*
 * The JSON string encoder (src/json.c) and the UTF-8 module (src/utf8.h)
 * on their own: each row of json.h's policy, byte for byte; a cap that
 * is too small (the length still returned, nothing written past the cap);
 * the 16-byte copying path and the bounded one giving the same bytes for
 * random strings of every length; every output valid (tests/json_check.h);
 * the validator against RFC 3629's edge cases; the cutter at every offset
 * of 2-, 3- and 4-byte characters and over bytes that are not UTF-8.
 */
#include "json.h"
#include "json_check.h"
#include "test.h"
#include "utf8.h"

static char out[8192];

static const char *enc(const char *s, size_t n, unsigned *flags)
{
	size_t w = shmlog__json_str(out, sizeof(out) - 1, s, n, flags);
	REQUIRE(w < sizeof(out));
	out[w] = '\0';
	return out;
}

#define ENC(lit) enc(lit, sizeof(lit) - 1, NULL)

static void policy(void)
{
	CHECK_STR(ENC(""), "\"\"");
	CHECK_STR(ENC("plain text"), "\"plain text\"");
	CHECK_STR(ENC("q\"b\\"), "\"q\\\"b\\\\\"");
	CHECK_STR(ENC("\n\r\t"), "\"\\n\\r\\t\"");
	CHECK_STR(ENC("\x01\x1b\x7f"), "\"\\u0001\\u001b\\u007f\"");
	CHECK_STR(ENC("a\0b"), "\"a\\u0000b\"");
	CHECK_STR(ENC("\xc2\x80\xc2\x9b\xc2\x9f\xc2\xa0"),
		  "\"\\u0080\\u009b\\u009f\xc2\xa0\"");
	CHECK_STR(ENC("\xe2\x80\xa8\xe2\x80\xa9"), "\"\\u2028\\u2029\"");
	CHECK_STR(ENC("caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbd"),
		  "\"caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbd\"");
	unsigned fl = 0;
	CHECK_STR(ENC("ok"), "\"ok\"");
	/* not UTF-8: one U+FFFD a byte, and said */
	CHECK_STR(enc("\xf8\x80\x80", 3, &fl), "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK(fl & SHMLOG__JSON_NOT_UTF8);
	fl = 0;
	CHECK_STR(enc("\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xc3", 10, &fl),
		  "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd"
		  "\\ufffd\\ufffd\"");
	CHECK(fl & SHMLOG__JSON_NOT_UTF8);
	fl = 0;
	enc("caf\xc3\xa9", 5, &fl);
	CHECK_EQ(fl, 0);
	/* the worst case is the bound */
	static char ctl[1000];
	memset(ctl, 1, sizeof(ctl));
	CHECK_EQ(shmlog__json_str(out, sizeof(out), ctl, sizeof(ctl), NULL),
		 SHMLOG__JSON_STR_MAX(sizeof(ctl)));
}

/* Too small a cap: the whole length returned, not a byte past the cap. */
static void caps(void)
{
	const char *s = "0123456789abcdef0123456789\x01\xff\xc3\xa9 and more "
			"text to copy 16 bytes at a time, past the cap";
	size_t n = strlen(s);
	size_t whole = shmlog__json_str(out, sizeof(out), s, n, NULL);
	char ref[512];
	memcpy(ref, out, whole);
	for (size_t cap = 0; cap <= whole; cap++) {
		char buf[600];
		memset(buf, '#', sizeof(buf));
		CHECK_EQ(shmlog__json_str(buf, cap, s, n, NULL), whole);
		size_t past = 0;
		for (size_t i = cap; i < sizeof(buf); i++)
			past += buf[i] != '#';
		CHECK_EQ(past, 0);
		if (cap == whole)
			CHECK(!memcmp(buf, ref, whole));
	}
}

/* Random strings of every length, through the copying path (a cap of
 * room) and the bounded one (the exact cap): the same bytes, valid. */
static void random_strings(void)
{
	uint64_t x = 12345;
	static const char pool[] = "abc \"\\\n\x01\x7f\xc3\xa9\xe2\x80\xa8\xf0"
				   "\x9f\x98\x80\xff\x80\xc2\x9b";
	char s[300], a[2000], b[2000];
	unsigned bad = 0;
	for (int k = 0; k < 20000; k++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = (x >> 33) % sizeof(s);
		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			/* mostly plain runs, so that the 16-byte path runs */
			s[i] = (x >> 60) < 12 ? (char)('a' + (x >> 40) % 26)
					      : pool[(x >> 33) % (sizeof(pool) - 1)];
		}
		size_t wa = shmlog__json_str(a, sizeof(a), s, n, NULL);
		size_t wb = shmlog__json_str(b, wa, s, n, NULL);
		if (wa != wb || memcmp(a, b, wa) || !jc_json_valid(a, wa))
			bad++;
	}
	CHECK_EQ(bad, 0);
}

static void utf8_seq(void)
{
	static const struct {
		const char *s;
		size_t len; /* 0: not UTF-8 */
	} cases[] = {
		{"a", 1}, {"\xc2\x80", 2}, {"\xdf\xbf", 2}, {"\xe0\xa0\x80", 3},
		{"\xed\x9f\xbf", 3}, {"\xee\x80\x80", 3}, {"\xf0\x90\x80\x80", 4},
		{"\xf4\x8f\xbf\xbf", 4}, {"\xc0\x80", 0}, {"\xc1\xbf", 0},
		{"\xe0\x9f\xbf", 0}, {"\xed\xa0\x80", 0}, {"\xf0\x8f\xbf\xbf", 0},
		{"\xf4\x90\x80\x80", 0}, {"\xf5\x80\x80\x80", 0}, {"\xf8\x80", 0},
		{"\xff", 0}, {"\x80", 0}, {"\xc3", 0}, {"\xe2\x82", 0},
		{"\xe2\x28\xa1", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t cp;
		size_t n = strlen(cases[i].s);
		size_t got = shmlog__utf8_seq((const unsigned char *)cases[i].s,
					      n, &cp);
		if (got != cases[i].len)
			fprintf(stderr, "case %zu: %zu, want %zu\n", i, got,
				cases[i].len);
		CHECK_EQ(got, cases[i].len);
		CHECK_EQ(shmlog__utf8_valid(cases[i].s, n), cases[i].len == n);
		CHECK_EQ(jc_utf8_valid((const unsigned char *)cases[i].s, n),
			 cases[i].len == n);
	}
}

static void utf8_cut(void)
{
	static const char *const chars[] = {"\xc3\xa9", "\xe2\x82\xac",
					    "\xf0\x9f\x98\x80"};
	for (size_t c = 0; c < 3; c++) {
		char s[64];
		size_t l = strlen(chars[c]);
		for (size_t pre = 0; pre < 4; pre++) {
			memset(s, 'a', pre);
			size_t n = pre;
			while (n + l < sizeof(s) - 1) {
				memcpy(s + n, chars[c], l);
				n += l;
			}
			s[n] = '\0';
			for (size_t max = 1; max < n; max++) {
				size_t k = shmlog__utf8_cut(s, max);
				CHECK(k <= max && k + 3 >= max);
				CHECK(shmlog__utf8_valid(s, k));
				/* nothing more could be kept whole */
				CHECK(k == max || !shmlog__utf8_valid(s, k + 1));
			}
		}
	}
	/* not UTF-8: cut where asked */
	CHECK_EQ(shmlog__utf8_cut("\x80\x80\x80\x80\x80", 4), 4);
	CHECK_EQ(shmlog__utf8_cut("ab\xff\x80\x80", 4), 4);
	/* a lead byte whose character ends before the cut: not split */
	CHECK_EQ(shmlog__utf8_cut("\xc3\xa9\x80\x80", 3), 3);
	CHECK_EQ(shmlog__utf8_cut("a\xe2\x82\xac", 3), 1);
}

int main(void)
{
	policy();
	caps();
	random_strings();
	utf8_seq();
	utf8_cut();
	return test_done("test_json_str");
}
