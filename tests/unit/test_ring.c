/* SPDX-License-Identifier: MIT */
/*
 * Writing and reading in one process: round trips, defaults for bad input,
 * truncation, order, overwrite accounting, counter wrap, clear.
 */
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>

#include "shmlog.h"
#include "test.h"

static shmlog_reader_t *reader(const char *name)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(name, 0, &r) == 0);
	return r;
}

/* Read everything there is; returns the number of records. */
static long drain(shmlog_reader_t *r, uint64_t *lost)
{
	struct shmlog_record rec;
	struct shmlog_lost l;
	long n = 0;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, &l)) != SHMLOG_EV_NONE) {
		if (ev == SHMLOG_EV_RECORD)
			n++;
		else if (lost)
			*lost += l.overwritten + l.torn;
	}
	return n;
}

static void test_roundtrip(void)
{
	const char *b = test_buffer("rt");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_WARN, "net", "hello"), 0);
	CHECK_EQ(shmlog_print(h, SHMLOG_ERROR, "disk", "%d%s", 42, "x"), 0);
	CHECK_EQ(shmlog_write_n(h, SHMLOG_INFO, "bin", "a\0b", 3), 0);

	shmlog_reader_t *r = reader(b);
	struct shmlog_record rec;
	struct shmlog_lost l;
	CHECK_EQ(shmlog_reader_next(r, &rec, &l), SHMLOG_EV_RECORD);
	CHECK_STR(rec.tag, "net");
	CHECK_STR(rec.msg, "hello");
	CHECK_EQ(rec.prio, SHMLOG_WARN);
	CHECK_EQ(rec.pid, getpid());
	CHECK_EQ(rec.seq, 0);
	int64_t now = (int64_t)time(NULL) * 1000000000;
	CHECK(rec.time_ns > now - 5000000000LL && rec.time_ns < now + 5000000000LL);
	CHECK_EQ(shmlog_reader_next(r, &rec, &l), SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "42x");
	CHECK_EQ(rec.prio, SHMLOG_ERROR);
	CHECK_EQ(shmlog_reader_next(r, &rec, &l), SHMLOG_EV_RECORD);
	CHECK_EQ(rec.msg_len, 3);
	CHECK(memcmp(rec.msg, "a\0b", 3) == 0);
	CHECK_EQ(shmlog_reader_next(r, &rec, &l), SHMLOG_EV_NONE);
	shmlog_reader_close(r);
	shmlog_close(h);
	CHECK_EQ(shmlog_remove(b), 0);
}

/* Every length the write path tells apart (a tag of under 8, 8-15 and
 * more bytes; messages copied by 4, 8, 16 bytes or by memcpy), with the
 * tag and the message ending at the end of a page followed by one that
 * faults: the record holds exactly the bytes given, nothing read past
 * them. */
static void test_lengths(void)
{
	const char *b = test_buffer("len");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	long page = sysconf(_SC_PAGESIZE);
	/* two pages, each followed by one that faults */
	char *map = test_pages(4, 1u << 1 | 1u << 3);
	char *end = map + page, *msg_end = map + 3 * page;
	char msgs[300];
	for (int i = 0; i < (int)sizeof(msgs); i++)
		msgs[i] = (char)('a' + i % 26);
	shmlog_reader_t *r = reader(b);
	int bad = 0, n = 0;
	for (size_t tl = 0; tl <= 20; tl++) {
		for (size_t ml = 0; ml <= 260; ml += ml < 40 ? 1 : 7) {
			/* the tag at the page's end, its NUL the last byte */
			char *tag = end - 1 - tl;
			for (size_t k = 0; k < tl; k++)
				tag[k] = (char)('A' + (k + tl) % 26);
			tag[tl] = '\0';
			/* the message at the end of the other page */
			const char *msg = memcpy(msg_end - ml, msgs, ml);
			CHECK_EQ(shmlog_write_n(h, SHMLOG_INFO, tag, msg, ml),
				 0);
			struct shmlog_record rec;
			struct shmlog_lost l;
			int ev;
			while ((ev = shmlog_reader_next(r, &rec, &l)) ==
			       SHMLOG_EV_LOST)
				;
			n++;
			if (ev != SHMLOG_EV_RECORD ||
			    rec.tag_len != (tl ? tl : 1) ||
			    memcmp(rec.tag, tl ? tag : "?", rec.tag_len) ||
			    rec.tag[rec.tag_len] || rec.msg_len != ml ||
			    memcmp(rec.msg, msgs, ml))
				bad++;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK(n > 1000);
	shmlog_reader_close(r);
	munmap(map, (size_t)page * 4);
	shmlog_close(h);
	CHECK_EQ(shmlog_remove(b), 0);
}

static void test_bad_input(void)
{
	const char *b = test_buffer("bad");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	CHECK_EQ(shmlog_write(NULL, SHMLOG_INFO, "t", "m"), -EINVAL);
	CHECK_EQ(shmlog_write(h, 99, NULL, NULL), 0);
	CHECK_EQ(shmlog_write(h, -5, "", "x"), 0);
	CHECK_EQ(shmlog_print(h, SHMLOG_INFO, "t", NULL), 0);
	char big[10000];
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	char bigtag[200];
	memset(bigtag, 't', sizeof(bigtag) - 1);
	bigtag[sizeof(bigtag) - 1] = '\0';
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, bigtag, big), 0);
	CHECK_EQ(shmlog_print(h, SHMLOG_INFO, "fmt", "%s", big), 0);

	shmlog_reader_t *r = reader(b);
	struct shmlog_record rec;
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK_STR(rec.tag, "?");
	CHECK_STR(rec.msg, "(null)");
	CHECK_EQ(rec.prio, SHMLOG_INFO);
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK_STR(rec.tag, "?");
	CHECK_STR(rec.msg, "x");
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "(null)");
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK(rec.flags & SHMLOG_REC_TRUNCATED);
	CHECK_EQ(rec.tag_len, SHMLOG_TAG_MAX);
	CHECK(rec.msg_len > 1000 && rec.msg_len <= SHMLOG_MSG_MAX);
	CHECK_EQ(strspn(rec.msg, "m"), rec.msg_len);
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK(rec.flags & SHMLOG_REC_TRUNCATED);
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_NONE);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Fill a small buffer many times over with records that describe
 * themselves; the reader sees the newest ones intact, in order, and the
 * count of the rest as overwritten. Positions and sequence numbers start
 * just below a wrap. */
static void wrap_case(uint64_t initial_pos, uint64_t initial_seq)
{
	const char *b = test_buffer("wrap");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.lanes = 4;
	o.initial_pos = initial_pos;
	o.initial_seq = initial_seq;
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	shmlog_reader_t *r = reader(b);
	uint64_t none[2] = {1, 2};
	CHECK_EQ(shmlog_reader_lost_seq(r, &none[0], &none[1]), -ENOENT);
	CHECK(none[0] == 1 && none[1] == 2); /* untouched */

	const long n = 20000;
	long read = 0;
	uint64_t lost = 0, expect = initial_seq;
	bool ordered = true, intact = true;
	for (long i = 0; i < n; i++) {
		/* vary the length so that records straddle the lane end */
		char msg[300];
		int len = snprintf(msg, sizeof(msg), "record %ld %.*s", i,
				   (int)(i * 7 % 200), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		CHECK_EQ(shmlog_write_n(h, SHMLOG_INFO, "w", msg, (size_t)len), 0);
		if (i % 997 != 0)
			continue;
		/* read now and then, falling behind in between */
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev;
		while ((ev = shmlog_reader_next(r, &rec, &l)) != SHMLOG_EV_NONE) {
			if (ev == SHMLOG_EV_LOST) {
				/* the range: from the record after the last
				 * one read to the one before the next */
				uint64_t first = 0, last = 0;
				CHECK_EQ(shmlog_reader_lost_seq(r, &first, &last),
					 0);
				if (read)
					CHECK_EQ(first - initial_seq,
						 expect - initial_seq);
				CHECK_EQ(last - first + 1,
					 l.overwritten + l.torn);
				lost += l.overwritten;
				expect += l.overwritten;
				continue;
			}
			long k = -1;
			sscanf(rec.msg, "record %ld", &k);
			if (read == 0) {
				expect = rec.seq; /* first record: baseline */
			}
			if (rec.seq != expect)
				ordered = false;
			if ((uint64_t)k != rec.seq - initial_seq)
				intact = false;
			if (rec.msg_len != strlen(rec.msg))
				intact = false;
			expect = rec.seq + 1;
			read++;
		}
	}
	read += drain(r, &lost);
	CHECK(ordered);
	CHECK(intact);
	CHECK(read > 100);
	struct shmlog_lane_stats sum;
	test_sum_lanes(r, &sum);
	CHECK_EQ(sum.written, n);
	CHECK_EQ(sum.read, read);
	CHECK_EQ(sum.torn, 0);
	CHECK_EQ(sum.written, sum.read + sum.overwritten + sum.torn);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

static void test_wrap(void)
{
	wrap_case(0, 0);
	wrap_case((uint64_t)0 - 100000, (uint64_t)UINT32_MAX - 5000);
	wrap_case((uint64_t)0 - 8 * 17, UINT64_MAX - 5000);
}

/* Records of several threads come out merged in time order: the merge
 * returns the oldest of the lanes' next records, so a record older than
 * the one before it can only come from that record's own lane. (A lane
 * itself may step back by the skew between two CPUs' clocks when its
 * thread moves, as raw TSC reads do on a guest whose vCPUs' counters are
 * not in step: the merge cannot order what its lane did not.) */
static void *thread_writer(void *arg)
{
	shmlog_t *h = arg;
	for (int i = 0; i < 500; i++)
		shmlog_print(h, SHMLOG_DEBUG, "thr", "%d", i);
	return NULL;
}

static void test_merge_order(void)
{
	const char *b = test_buffer("merge");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_writer, h);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	shmlog_reader_t *r = reader(b);
	struct shmlog_record rec;
	uint64_t last = 0;
	unsigned last_lane = UINT_MAX;
	long n = 0;
	bool sorted = true;
	uint32_t tids[4] = {0};
	int ntids = 0;
	while (shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD) {
		if (rec.raw_time < last && rec.lane != last_lane)
			sorted = false;
		last = rec.raw_time;
		last_lane = rec.lane;
		bool seen = false;
		for (int i = 0; i < ntids; i++)
			seen |= tids[i] == rec.tid;
		if (!seen && ntids < 4)
			tids[ntids++] = rec.tid;
		n++;
	}
	CHECK(sorted);
	CHECK_EQ(n, 2000);
	CHECK_EQ(ntids, 4);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

static void test_clear(void)
{
	const char *b = test_buffer("clear");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	shmlog_write(h, SHMLOG_INFO, "t", "before");
	CHECK_EQ(shmlog_clear(b), 0);
	shmlog_write(h, SHMLOG_INFO, "t", "after");
	shmlog_reader_t *r = reader(b);
	struct shmlog_record rec;
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "after");
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_NONE);
	struct shmlog_lane_stats st;
	shmlog_reader_lane_stats(r, rec.lane, &st);
	CHECK_EQ(st.skipped, 1);
	CHECK_EQ(st.written, st.read + st.skipped);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A reader started at the tail sees only what comes after. */
static void test_read_tail(void)
{
	const char *b = test_buffer("tail");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	shmlog_write(h, SHMLOG_INFO, "t", "old");
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, SHMLOG_READ_TAIL, &r) == 0);
	struct shmlog_record rec;
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_NONE);
	shmlog_write(h, SHMLOG_INFO, "t", "new");
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "new");
	CHECK_EQ(shmlog_reader_wait(r, 0), -ETIMEDOUT);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Helpers of the API. */
static void test_helpers(void)
{
	char p[256];
	CHECK(shmlog_path("abc", p, sizeof(p)) > 0);
	CHECK_STR(p, "/dev/shm/shmlog.abc");
	CHECK(shmlog_path("/tmp/x.log", p, sizeof(p)) > 0);
	CHECK_STR(p, "/tmp/x.log");
	CHECK_EQ(shmlog_path("a/b", p, sizeof(p)), -EINVAL);
	CHECK_EQ(shmlog_path("..", p, sizeof(p)), -EINVAL);
	CHECK_EQ(shmlog_path(".hidden", p, sizeof(p)), -EINVAL);
	CHECK_EQ(shmlog_path("a b", p, sizeof(p)), -EINVAL);
	CHECK_EQ(shmlog_path("abc", p, 5), -ENAMETOOLONG);
	setenv("SHMLOG_BUFFER", "fromenv", 1);
	CHECK(shmlog_path(NULL, p, sizeof(p)) > 0);
	CHECK_STR(p, "/dev/shm/shmlog.fromenv");
	unsetenv("SHMLOG_BUFFER");
	CHECK(shmlog_path("", p, sizeof(p)) > 0);
	CHECK_STR(p, "/dev/shm/shmlog.main");
	CHECK_EQ(shmlog_prio_char(SHMLOG_WARN), 'W');
	CHECK_EQ(shmlog_prio_char(42), '?');
	CHECK_EQ(shmlog_prio_parse("e"), SHMLOG_ERROR);
	CHECK_EQ(shmlog_prio_parse("warning"), SHMLOG_WARN);
	CHECK_EQ(shmlog_prio_parse("7"), SHMLOG_FATAL);
	CHECK_EQ(shmlog_prio_parse("x"), -EINVAL);
	CHECK_EQ(shmlog_prio_parse(NULL), -EINVAL);
	CHECK(strlen(shmlog_strerror(-EBADMSG)) > 5);
}

/* A reader's start is fixed when it opens: records written after that and
 * overwritten before it reads them are reported lost, even in a lane that
 * was empty at open, or whose records it had not looked at yet. */
static void test_loss_from_open(void)
{
	const char *b = test_create("lossopen", 64 * 1024, 4);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0); /* buffer empty */
	char msg[200];
	memset(msg, 'x', sizeof(msg));
	for (int i = 0; i < 1000; i++) /* laps of a 16 KiB lane */
		shmlog_write_n(h, SHMLOG_INFO, "t", msg, sizeof(msg));
	struct shmlog_record rec;
	struct shmlog_lost l;
	uint64_t lost = 0, read = 0;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, &l)) != SHMLOG_EV_NONE) {
		if (ev == SHMLOG_EV_LOST)
			lost += l.overwritten;
		else
			read++;
	}
	CHECK(lost > 0);
	CHECK_EQ(lost + read, 1000);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

int main(void)
{
	test_loss_from_open();
	test_helpers();
	test_roundtrip();
	test_lengths();
	test_bad_input();
	test_wrap();
	test_merge_order();
	test_clear();
	test_read_tail();
	return test_done("test_ring");
}
