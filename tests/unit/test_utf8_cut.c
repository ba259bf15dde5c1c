/* SPDX-License-Identifier: MIT */
/*
 * A tag or message cut at its maximum is cut on a UTF-8 character boundary,
 * whichever way it was written (shmlog_write, shmlog_write_n, shmlog_print)
 * and wherever the cut falls in a 2-, 3- or 4-byte character; text that is
 * not UTF-8 is cut at the maximum, as before.
 */
#include "test.h"

/* @pre ASCII bytes then @ch repeated, then ASCII: longer than @max. */
static size_t fill(char *buf, size_t pre, const char *ch, size_t total)
{
	size_t n = 0, cl = strlen(ch);
	memset(buf, 'a', pre);
	n = pre;
	while (n + cl < total) {
		memcpy(buf + n, ch, cl);
		n += cl;
	}
	buf[n] = '\0';
	return n;
}

/* Is @s of @n bytes whole UTF-8 (no character cut at its end)? */
static bool ends_whole(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (i + len > n)
			return false;
		i += len;
	}
	return true;
}

static void check_cuts(shmlog_t *h, shmlog_reader_t *r, const char *ch,
		       size_t max)
{
	static char buf[SHMLOG_MSG_MAX * 2];
	struct shmlog_record rec;
	size_t cl = strlen(ch);
	for (size_t shift = 0; shift < cl; shift++) {
		/* the character straddles the maximum at every offset */
		size_t pre = max - cl * 4 + shift;
		size_t n = fill(buf, pre, ch, sizeof(buf) - 1);
		CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "w", buf), 0);
		CHECK_EQ(shmlog_write_n(h, SHMLOG_INFO, "n", buf, n), 0);
		CHECK_EQ(shmlog_print(h, SHMLOG_INFO, "p", "%s", buf), 0);
		for (int k = 0; k < 3; k++) {
			REQUIRE(shmlog_reader_next(r, &rec, NULL) ==
				SHMLOG_EV_RECORD);
			CHECK(rec.flags & SHMLOG_REC_TRUNCATED);
			CHECK(ends_whole(rec.msg, rec.msg_len));
			CHECK(rec.msg_len <= max && rec.msg_len + cl > max);
			CHECK(memcmp(rec.msg, buf, rec.msg_len) == 0);
		}
	}
	/* tags: 64 bytes at most, cut whole too */
	char tag[SHMLOG_TAG_MAX * 2];
	for (size_t shift = 0; shift < cl; shift++) {
		fill(tag, SHMLOG_TAG_MAX - cl * 2 + shift, ch, sizeof(tag) - 1);
		CHECK_EQ(shmlog_write(h, SHMLOG_INFO, tag, "m"), 0);
		REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
		CHECK(rec.flags & SHMLOG_REC_TRUNCATED);
		CHECK(ends_whole(rec.tag, rec.tag_len));
		CHECK(rec.tag_len <= SHMLOG_TAG_MAX &&
		      rec.tag_len + cl > SHMLOG_TAG_MAX);
	}
}

int main(void)
{
	const char *b = test_buffer("utf8");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	shmlog_reader_t *r;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	REQUIRE(shmlog_reader_open(b, SHMLOG_READ_TAIL, &r) == 0);
	check_cuts(h, r, "\xc3\xa9", SHMLOG_MSG_MAX); /* é */
	check_cuts(h, r, "\xe2\x82\xac", SHMLOG_MSG_MAX); /* € */
	check_cuts(h, r, "\xf0\x9f\x98\x80", SHMLOG_MSG_MAX); /* U+1F600 */

	/* not UTF-8: continuation bytes only, cut at the maximum */
	static char junk[SHMLOG_MSG_MAX + 100];
	memset(junk, 0x80, sizeof(junk) - 1);
	junk[sizeof(junk) - 1] = '\0';
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "j", junk), 0);
	struct shmlog_record rec;
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK_EQ(rec.msg_len, SHMLOG_MSG_MAX);
	/* ASCII: cut exactly at the maximum */
	memset(junk, 'x', sizeof(junk) - 1);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "x", junk), 0);
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK_EQ(rec.msg_len, SHMLOG_MSG_MAX);

	shmlog_reader_close(r);
	shmlog_close(h);
	CHECK_EQ(shmlog_remove(b), 0);
	return test_done("test_utf8_cut");
}
