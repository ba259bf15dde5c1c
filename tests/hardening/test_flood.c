/* SPDX-License-Identifier: MIT */
/*
 * Flood fairness. One writer writes flat out for SECONDS
 * while 7 quiet writers write 10 records a second each, and a reader
 * follows. At least 99.9% of the quiet writers' records survive (they
 * are read), and every loss is attributed to the flooder: only its lane
 * counts records overwritten, and the reader's gap reports name its lane.
 *
 * usage: test_flood [SECONDS]   (the figure is 10; CI runs 3)
 */
#include <sys/mman.h>

#include "hostile.h"

#define QUIET 7

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	const char *b = test_buffer("flood");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 1024 * 1024; /* the default buffer */
	o.lanes = QUIET + 1;
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);

	uint64_t quiet_n = (uint64_t)(secs * 10);
	volatile uint64_t *flooded = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(flooded != MAP_FAILED);
	pid_t flooder = fork();
	REQUIRE(flooder >= 0);
	if (flooder == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(10);
		char tag[16], msg[512];
		int prio;
		uint64_t end = now_ns() + (uint64_t)(secs * 1e9), i = 0;
		for (; (i & 255) || now_ns() < end; i++) {
			size_t len = sc_make(0, i, tag, &prio, msg);
			shmlog_write_n(h, prio, tag, msg, len);
		}
		*flooded = i;
		_exit(0);
	}
	pid_t quiet[QUIET];
	for (unsigned w = 1; w <= QUIET; w++)
		quiet[w - 1] = hw_spawn(b, w, 0, quiet_n, 100000000);

	uint64_t got[QUIET + 1] = {0}, bad = 0, lost[QUIET + 1] = {0};
	int running = QUIET + 1;
	for (;;) {
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev = shmlog_reader_next(r, &rec, &l);
		if (ev == SHMLOG_EV_RECORD) {
			unsigned w;
			uint64_t i;
			if (!sc_check(&rec, &w, &i) || w > QUIET)
				bad++;
			else
				got[w]++;
			continue;
		}
		if (ev == SHMLOG_EV_LOST) { /* reported per lane */
			if (l.lane <= QUIET)
				lost[l.lane] += l.overwritten + l.torn;
			continue;
		}
		if (!running) {
			if (test_caught_up(r))
				break;
			continue;
		}
		running = hw_reap_exited(running);
		if (running)
			shmlog_reader_wait(r, 20);
	}
	/* per lane: which lanes lost records, and whose they were */
	uint64_t ow_flooder = 0, ow_quiet = 0, written = 0;
	uint64_t reported_flooder = 0, reported_quiet = 0;
	for (unsigned k = 0; k < shmlog_reader_lanes(r); k++) {
		struct shmlog_lane_stats st;
		REQUIRE(shmlog_reader_lane_stats(r, k, &st) == 0);
		CHECK_EQ(st.written, st.read + st.overwritten + st.torn);
		written += st.written;
		if (st.written > quiet_n) { /* the flooder's lane */
			ow_flooder += st.overwritten;
			reported_flooder += lost[k];
		} else {
			ow_quiet += st.overwritten;
			reported_quiet += lost[k];
		}
	}
	uint64_t quiet_got = 0;
	for (unsigned w = 1; w <= QUIET; w++)
		quiet_got += got[w];
	double survived = (double)quiet_got / (double)(quiet_n * QUIET);
	printf("flood %.0f s: flooder wrote %llu records, %llu read, %llu "
	       "overwritten in its lane; quiet writers %llu of %llu read "
	       "(%.3f%%), %llu overwritten in their lanes; %llu bad\n",
	       secs, (unsigned long long)*flooded,
	       (unsigned long long)got[0], (unsigned long long)ow_flooder,
	       (unsigned long long)quiet_got,
	       (unsigned long long)(quiet_n * QUIET), survived * 100,
	       (unsigned long long)ow_quiet, (unsigned long long)bad);
	CHECK(survived >= 0.999);
	CHECK_EQ(ow_quiet, 0);
	CHECK(ow_flooder > 0); /* the flood did overwrite: its own records */
	CHECK_EQ(ow_flooder + got[0], *flooded);
	/* the gaps the reader reported are the flooder's (those before the
	 * reader's first look at the lane are counted, not reported) */
	CHECK(reported_flooder > 0 && reported_flooder <= ow_flooder);
	CHECK_EQ(reported_quiet, 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(written, *flooded + quiet_n * QUIET);
	(void)quiet;
	shmlog_reader_close(r);
	shmlog_remove(b);
	return test_done("test_flood");
}
