/* SPDX-License-Identifier: MIT */
/*
 * SHMLOG_READ_DUMP: a reader that ends where the buffer ended at its
 * first read.
 *
 * Records written after that are not shown (those written between the
 * open and the first read are); losses are reported up to the end and no
 * further; a dump does not wait. And the case it is for: behind writer
 * processes writing flat out, a loop until SHMLOG_EV_NONE ends, after no
 * more records than the buffer could hold: in a default buffer, and in
 * 128 MiB of 256 lanes. A reader without the flag may read on for as long
 * as the writers write (`shmlog cat` has its own end: tools/cli.c).
 */
#include <signal.h>
#include <sys/wait.h>

#include "test.h"

static void write_n(shmlog_t *h, unsigned from, unsigned n)
{
	char msg[64];
	for (unsigned i = from; i < from + n; i++) {
		snprintf(msg, sizeof(msg), "%u", i);
		CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "dump", msg), 0);
	}
}

/* Read @r to its end: records in *n (each numbered below @below, in
 * order), the losses reported in *lost. false if it did not end within
 * @bound events. */
static bool read_to_end(shmlog_reader_t *r, unsigned below, uint64_t bound,
			uint64_t *n, uint64_t *lost_n)
{
	struct shmlog_record rec;
	struct shmlog_lost lost;
	long last = -1;
	*n = *lost_n = 0;
	for (uint64_t k = 0; k < bound; k++) {
		int ev = shmlog_reader_next(r, &rec, &lost);
		if (ev == SHMLOG_EV_NONE)
			return true;
		if (ev == SHMLOG_EV_LOST) {
			*lost_n += lost.overwritten + lost.torn;
			continue;
		}
		CHECK_EQ(ev, SHMLOG_EV_RECORD);
		long i = atol(rec.msg);
		CHECK(i > last && (unsigned long)i < below);
		last = i;
		(*n)++;
	}
	return false;
}

/* Written after the first read: not the dump's. A dump does not wait. */
static void ends_at_first_read(void)
{
	const char *b = test_create("dump", 1 << 20, 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	write_n(h, 0, 400);
	shmlog_reader_t *d, *all;
	REQUIRE(shmlog_reader_open(b, SHMLOG_READ_DUMP, &d) == 0);
	REQUIRE(shmlog_reader_open(b, 0, &all) == 0);
	write_n(h, 400, 100); /* before the first read: the dump's */
	struct shmlog_record rec;
	CHECK_EQ(shmlog_reader_next(d, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "0");
	write_n(h, 500, 500); /* after it: not */
	uint64_t n, lost;
	CHECK(read_to_end(d, 500, 10000, &n, &lost));
	CHECK_EQ(1 + n, 500);
	CHECK_EQ(lost, 0);
	CHECK(read_to_end(all, 1000, 10000, &n, &lost));
	CHECK_EQ(n, 1000);
	/* ended for good, whatever comes */
	write_n(h, 1000, 10);
	CHECK_EQ(shmlog_reader_next(d, &rec, NULL), SHMLOG_EV_NONE);
	CHECK_EQ(shmlog_reader_wait(d, 0), -EINVAL);
	CHECK_EQ(shmlog_reader_wait(all, 0), 0);
	shmlog_reader_t *set[2] = {all, d};
	CHECK_EQ(shmlog_reader_wait_any(set, 2, 0), -EINVAL);
	shmlog_reader_t *bad;
	CHECK_EQ(shmlog_reader_open(b, 0x80, &bad), -EINVAL);
	shmlog_reader_close(d);
	shmlog_reader_close(all);
	/* from the tail: what came between the open and the first read */
	REQUIRE(shmlog_reader_open(b, SHMLOG_READ_DUMP | SHMLOG_READ_TAIL,
				   &d) == 0);
	write_n(h, 1010, 10);
	CHECK_EQ(shmlog_reader_next(d, &rec, NULL), SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "1010");
	write_n(h, 1020, 10);
	CHECK(read_to_end(d, 1020, 100, &n, &lost));
	CHECK_EQ(n, 9);
	shmlog_reader_close(d);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Everything after the first few records overwritten, then more written:
 * what was read and what was reported lost add up to what the buffer
 * held at the first read, exactly. */
static void losses_up_to_end(void)
{
	const char *b = test_create("dumplost", 64 * 1024, 2);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	write_n(h, 0, 300);
	shmlog_reader_t *d;
	REQUIRE(shmlog_reader_open(b, SHMLOG_READ_DUMP, &d) == 0);
	struct shmlog_record rec;
	for (int i = 0; i < 10; i++) {
		CHECK_EQ(shmlog_reader_next(d, &rec, NULL), SHMLOG_EV_RECORD);
		CHECK_EQ(atol(rec.msg), i);
	}
	write_n(h, 300, 20000); /* many times the buffer */
	uint64_t n, lost;
	CHECK(read_to_end(d, 300, 100000, &n, &lost));
	CHECK(lost > 0);
	CHECK_EQ(10 + n + lost, 300);
	printf("dump: 10 + %llu read, %llu reported lost of 300 at the first read\n",
	       (unsigned long long)n, (unsigned long long)lost);
	shmlog_reader_close(d);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Behind @writers processes that never pause, in a buffer of @size bytes
 * and @lanes lanes: the dump ends, after no more than the buffer could
 * hold at its first read (records of 48 bytes at the least). */
static void ends_behind_writers(uint64_t size, unsigned lanes,
				unsigned writers)
{
	const char *b = test_create("dumplive", size, lanes);
	pid_t pid[8];
	REQUIRE(writers <= 8);
	for (unsigned w = 0; w < writers; w++) {
		REQUIRE((pid[w] = fork()) >= 0);
		if (pid[w] == 0) {
			shmlog_t *h;
			if (shmlog_open(b, 0, &h))
				_exit(1);
			for (;;)
				shmlog_write(h, SHMLOG_INFO, "live", "flat out");
		}
	}
	/* at work: a few buffers' worth written, within a minute, every
	 * writer still there */
	struct shmlog_info in;
	struct timespec nap = {0, 1000000};
	for (int ms = 0;; ms++) {
		REQUIRE(shmlog_stat(b, &in) == 0);
		if (in.written >= 3 * in.capacity / 48)
			break;
		for (unsigned w = 0; w < writers; w++)
			REQUIRE(waitpid(pid[w], NULL, WNOHANG) == 0);
		REQUIRE(ms < 60000);
		nanosleep(&nap, NULL);
	}
	shmlog_reader_t *d;
	REQUIRE(shmlog_reader_open(b, SHMLOG_READ_DUMP, &d) == 0);
	uint64_t bound = in.capacity / 48 + 2 * in.lanes, n = 0, k;
	struct shmlog_record rec;
	struct shmlog_lost lost;
	int ev = SHMLOG_EV_RECORD;
	/* a loss report comes before a record, or at a lane's end */
	for (k = 0; k <= 2 * bound && ev != SHMLOG_EV_NONE; k++)
		if ((ev = shmlog_reader_next(d, &rec, &lost)) ==
		    SHMLOG_EV_RECORD)
			n++;
	CHECK_EQ(ev, SHMLOG_EV_NONE);
	CHECK(n <= bound);
	printf("dump behind %u writer%s that never pause%s (%llu MiB, %u "
	       "lanes): %llu records in %llu events, the bound %llu\n",
	       writers, writers > 1 ? "s" : "", writers > 1 ? "" : "s",
	       (unsigned long long)(size >> 20), in.lanes,
	       (unsigned long long)n, (unsigned long long)k,
	       (unsigned long long)bound);
	CHECK(n > 0);
	for (unsigned w = 0; w < writers; w++) {
		kill(pid[w], SIGKILL);
		waitpid(pid[w], NULL, 0);
	}
	shmlog_reader_close(d);
	shmlog_remove(b);
}

int main(void)
{
	ends_at_first_read();
	losses_up_to_end();
	ends_behind_writers(4 << 20, 0, 1);
	/* a large buffer of many lanes, several writers */
	ends_behind_writers(128 << 20, 256, 4);
	return test_done("test_dump");
}
