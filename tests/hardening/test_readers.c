/* SPDX-License-Identifier: MIT */
/*
 * Readers killed at random while following (often while
 * asleep in shmlog_reader_wait(), having told writers to wake them).
 *
 * Writers are unaffected: they finish, and their worst write latency is
 * reported (a killed sleeper costs the next writer one futex wake, once).
 * Each new reader resumes from the oldest record still there and reports
 * the gap since the killed one exactly: for each writer, the records
 * between the last one the killed reader got and the first one the new
 * reader gets were overwritten, and the new reader's counters say so.
 *
 * usage: test_readers [KILLS]
 */
#include <sys/mman.h>

#include "hostile.h"

#define WRITERS 3

struct shared {
	int64_t last[WRITERS]; /* newest record any reader got, per writer */
	uint64_t bad, gap_unreported, gaps, resumed_overlap;
	uint64_t worst_write_ns[WRITERS];
	uint64_t reads;
};

static struct shared *sh;
static const char *buffer;

static void reader_child(void)
{
	shmlog_reader_t *r;
	if (shmlog_reader_open(buffer, 0, &r))
		_exit(10);
	bool first[WRITERS] = {true, true, true};
	for (;;) {
		struct shmlog_record rec;
		int ev = shmlog_reader_next(r, &rec, NULL);
		if (ev == SHMLOG_EV_NONE) {
			shmlog_reader_wait(r, -1);
			continue;
		}
		if (ev != SHMLOG_EV_RECORD)
			continue;
		unsigned w;
		uint64_t i;
		if (!sc_check(&rec, &w, &i) || w >= WRITERS || rec.seq != i) {
			__atomic_add_fetch(&sh->bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (first[w]) {
			first[w] = false;
			int64_t prev = sh->last[w];
			/* the oldest record still there: everything before it
			 * in the lane is counted as overwritten */
			struct shmlog_lane_stats st;
			shmlog_reader_lane_stats(r, rec.lane, &st);
			if (st.overwritten != i)
				__atomic_add_fetch(&sh->gap_unreported, 1,
						   __ATOMIC_RELAXED);
			if ((int64_t)i > prev + 1)
				__atomic_add_fetch(&sh->gaps, 1,
						   __ATOMIC_RELAXED);
			else
				__atomic_add_fetch(&sh->resumed_overlap, 1,
						   __ATOMIC_RELAXED);
		}
		if ((int64_t)i > sh->last[w])
			sh->last[w] = (int64_t)i;
		__atomic_add_fetch(&sh->reads, 1, __ATOMIC_RELAXED);
	}
}

static void writer_child(unsigned w, long n)
{
	shmlog_t *h;
	if (shmlog_open(buffer, 0, &h))
		_exit(10);
	for (long i = 0; i < n; i++) {
		if (hw_write_timed(h, w, (uint64_t)i, &sh->worst_write_ns[w]))
			_exit(11);
		if (i % 4 == 0)
			sleep_ns(200000);
	}
	shmlog_close(h);
	_exit(0);
}

int main(int argc, char **argv)
{
	long kills = argc > 1 ? atol(argv[1]) : 25;
	buffer = test_buffer("readers");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.lanes = WRITERS + 1;
	REQUIRE(shmlog_create(buffer, &o) == 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(sh != MAP_FAILED);
	for (int w = 0; w < WRITERS; w++)
		sh->last[w] = -1;
	/* writers run for the whole test: ~100 ms per kill */
	long n = 4 * (kills + 2) * 100000 / 250;
	pid_t wp[WRITERS];
	for (unsigned w = 0; w < WRITERS; w++) {
		wp[w] = fork();
		REQUIRE(wp[w] >= 0);
		if (wp[w] == 0)
			writer_child(w, n);
	}
	uint64_t seed = 7;
	for (long k = 0; k < kills; k++) {
		pid_t rp = fork();
		REQUIRE(rp >= 0);
		if (rp == 0)
			reader_child();
		seed = sc_mix(seed);
		sleep_ns(20000000 + seed % 120000000);
		hw_kill(rp);
		/* sometimes leave nobody reading for a while: gaps */
		if (seed & 1)
			sleep_ns(50000000);
	}
	for (unsigned w = 0; w < WRITERS; w++)
		CHECK_EQ(hw_reap(wp[w]), 0);
	/* a last reader, after the writers: the accounting is exact */
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(buffer, 0, &r) == 0);
	struct shmlog_record rec;
	while (shmlog_reader_next(r, &rec, NULL) > 0)
		;
	for (unsigned k = 0; k < shmlog_reader_lanes(r); k++) {
		struct shmlog_lane_stats st;
		REQUIRE(shmlog_reader_lane_stats(r, k, &st) == 0);
		CHECK_EQ(st.written, st.read + st.overwritten + st.torn);
		CHECK_EQ(st.torn, 0);
	}
	struct shmlog_lane_stats s = hw_sum(r);
	CHECK_EQ(s.written, (uint64_t)n * WRITERS);
	shmlog_reader_close(r);
	uint64_t worst = 0;
	for (unsigned w = 0; w < WRITERS; w++)
		if (sh->worst_write_ns[w] > worst)
			worst = sh->worst_write_ns[w];
	printf("%ld readers killed while following: %llu records read, %llu "
	       "bad; resumed with a gap %llu times (all reported: %s), with "
	       "an overlap %llu times; writers' worst write %.2f ms\n",
	       kills, (unsigned long long)sh->reads,
	       (unsigned long long)sh->bad, (unsigned long long)sh->gaps,
	       sh->gap_unreported ? "no" : "yes",
	       (unsigned long long)sh->resumed_overlap, (double)worst / 1e6);
	CHECK_EQ(sh->bad, 0);
	CHECK_EQ(sh->gap_unreported, 0);
	CHECK(sh->gaps > 0);
	CHECK(sh->reads > 0);
	CHECK(worst < 500000000); /* nobody waited for a dead reader */
	shmlog_remove(buffer);
	return test_done("test_readers");
}
