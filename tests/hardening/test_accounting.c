/* SPDX-License-Identifier: MIT */
/*
 * Exact accounting over a long run, for every writer.
 *
 * WRITERS processes write at different rates (one flat out, the others in
 * bursts with pauses of random length) into a small buffer for SECONDS,
 * while a reader follows and falls behind at random. Each writer keeps its
 * lane for its whole life, so a lane's counters are its writer's. For
 * every writer, independently counted:
 *   written (what the writer says it wrote) = read + overwritten + torn,
 *   read        = the records of that writer the reader got, all intact,
 *   overwritten = the gaps in its record numbers = the losses the reader
 *                 reported for its lane, and torn = 0.
 * (test_crash covers the same equation per lane with writers killed.)
 *
 * usage: test_accounting [SECONDS]
 */
#include <sys/mman.h>

#include "hostile.h"

#define WRITERS 6

struct shared {
	uint64_t written[WRITERS];
	volatile int stop;
	_Atomic unsigned stopped; /* writers done writing, lanes still held */
};

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	const char *b = test_create("acct", 128 * 1024, WRITERS);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(sh != MAP_FAILED);
	pid_t pids[WRITERS];
	for (unsigned w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		REQUIRE(pids[w] >= 0);
		if (pids[w])
			continue;
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(10);
		char tag[16], msg[512];
		int prio;
		uint64_t seed = w + 1, i = 0;
		while (!sh->stop) {
			seed = sc_mix(seed);
			unsigned burst = w == 0 ? 1000 : (unsigned)(seed % 300);
			for (unsigned k = 0; k < burst; k++, i++) {
				size_t len = sc_make(w, i, tag, &prio, msg);
				if (shmlog_write_n(h, prio, tag, msg, len))
					_exit(11);
			}
			if (w != 0)
				sleep_ns(seed % 3000000);
		}
		sh->written[w] = i;
		/* Keep the lane until every writer has stopped: a lane given
		 * back is nobody's share, and a writer still finishing its
		 * burst would take its chunks, newest records and all, while
		 * the reader waits for us to exit (bounded: 10 s). */
		atomic_fetch_add(&sh->stopped, 1);
		for (int t = 0; t < 10000 && atomic_load(&sh->stopped) < WRITERS;
		     t++)
			sleep_ns(1000000);
		shmlog_close(h);
		_exit(0);
	}
	uint64_t read[WRITERS] = {0}, gaps[WRITERS] = {0},
		 reported[WRITERS] = {0}, bad = 0;
	int64_t last[WRITERS];
	unsigned lane_of[WRITERS];
	for (unsigned w = 0; w < WRITERS; w++) {
		last[w] = -1;
		lane_of[w] = ~0u;
	}
	uint64_t lost_lane[WRITERS * 2] = {0};
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9), seed = 5;
	bool stopping = false;
	for (;;) {
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev = shmlog_reader_next(r, &rec, &l);
		if (ev == SHMLOG_EV_LOST) {
			if (l.lane < WRITERS * 2)
				lost_lane[l.lane] += l.overwritten + l.torn;
			continue;
		}
		if (ev == SHMLOG_EV_RECORD) {
			unsigned w;
			uint64_t i;
			if (!sc_check(&rec, &w, &i) || w >= WRITERS ||
			    (int64_t)i <= last[w] ||
			    (lane_of[w] != ~0u && lane_of[w] != rec.lane)) {
				bad++;
				continue;
			}
			lane_of[w] = rec.lane;
			gaps[w] += i - (uint64_t)(last[w] + 1);
			last[w] = (int64_t)i;
			read[w]++;
			/* fall behind now and then */
			seed = sc_mix(seed);
			if (seed % 20000 == 0)
				sleep_ns(seed % 20000000);
			continue;
		}
		/* drained: a follower's shmlog_reader_next() may say NONE with
		 * records still to come (a look not due yet, a lane it rests
		 * on: shmlog.h); drained is a wait that only looks finding
		 * nothing (test_caught_up()) */
		if (stopping) {
			if (test_caught_up(r))
				break;
			continue;
		}
		if (now_ns() >= end) {
			sh->stop = 1;
			for (unsigned w = 0; w < WRITERS; w++)
				CHECK_EQ(hw_reap(pids[w]), 0);
			stopping = true; /* drain what is left */
			continue;
		}
		shmlog_reader_wait(r, 10);
	}
	uint64_t total_w = 0, total_r = 0, total_o = 0;
	for (unsigned w = 0; w < WRITERS; w++) {
		REQUIRE(lane_of[w] != ~0u);
		struct shmlog_lane_stats st;
		REQUIRE(shmlog_reader_lane_stats(r, lane_of[w], &st) == 0);
		reported[w] = lost_lane[lane_of[w]];
		/* records lost before the reader's first look at the lane
		 * are counted as overwritten but not reported as a gap */
		uint64_t first_gap = st.overwritten - reported[w];
		printf("writer %u (lane %u): wrote %llu = read %llu + "
		       "overwritten %llu + torn %llu; gaps in its numbers "
		       "%llu (%llu before the first read)\n",
		       w, lane_of[w], (unsigned long long)sh->written[w],
		       (unsigned long long)read[w],
		       (unsigned long long)st.overwritten,
		       (unsigned long long)st.torn,
		       (unsigned long long)(gaps[w] + (uint64_t)0),
		       (unsigned long long)first_gap);
		CHECK_EQ(st.written, sh->written[w]);
		CHECK_EQ(st.read, read[w]);
		CHECK_EQ(st.torn, 0);
		CHECK_EQ(st.written, st.read + st.overwritten + st.torn);
		CHECK_EQ(gaps[w], st.overwritten);
		CHECK_EQ((uint64_t)last[w] + 1, sh->written[w]);
		total_w += st.written;
		total_r += st.read;
		total_o += st.overwritten;
	}
	printf("accounting over %.0f s: %llu written = %llu read + %llu "
	       "overwritten, %llu bad\n",
	       secs, (unsigned long long)total_w, (unsigned long long)total_r,
	       (unsigned long long)total_o, (unsigned long long)bad);
	CHECK_EQ(bad, 0);
	CHECK(total_o > 0); /* the run did lap and lose records */
	shmlog_reader_close(r);
	shmlog_remove(b);
	return test_done("test_accounting");
}
