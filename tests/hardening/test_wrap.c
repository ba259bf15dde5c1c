/* SPDX-License-Identifier: MIT */
/*
 * Counters started just below the 2^32 and 2^64
 * boundaries, with several writer processes and a follower (test_ring's
 * wrap_case does one writer in one process). Sequence numbers and logical
 * positions cross the boundaries while everybody writes: each writer's
 * records come out in order, each lane's sequence numbers follow on
 * exactly (every step is +1, or a gap reported as lost), and the
 * accounting is exact. By default each writer's records fit its lane, so
 * nothing may be lost; the long run laps the lanes many times.
 *
 * usage: test_wrap [RECORDS_PER_WRITER]
 */
#include <stdint.h>

#include "hostile.h"

#define WRITERS 4

static void wrap_case(uint64_t initial_pos, uint64_t initial_seq, long n)
{
	const char *b = test_buffer("wrap");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 4 * 1024 * 1024; /* 1 MiB lanes */
	o.lanes = WRITERS;
	o.initial_pos = initial_pos;
	o.initial_seq = initial_seq;
	o.clock = SHMLOG_CLOCK_REALTIME;
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	pid_t w[WRITERS];
	for (unsigned k = 0; k < WRITERS; k++)
		w[k] = hw_spawn(b, k, 0, (uint64_t)n, 20000);

	int64_t last[WRITERS];
	uint64_t next_seq[WRITERS * 2], lost[WRITERS * 2] = {0};
	bool seq_known[WRITERS * 2] = {false};
	uint64_t read = 0, bad = 0, disorder = 0, seq_breaks = 0, crossed = 0;
	for (unsigned k = 0; k < WRITERS; k++)
		last[k] = -1;
	int running = WRITERS;
	for (;;) {
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev = shmlog_reader_next(r, &rec, &l);
		if (ev == SHMLOG_EV_LOST) {
			lost[l.lane] += l.overwritten + l.torn;
			if (seq_known[l.lane])
				next_seq[l.lane] += l.overwritten + l.torn;
			continue;
		}
		if (ev == SHMLOG_EV_RECORD) {
			unsigned ww;
			uint64_t i;
			if (!sc_check(&rec, &ww, &i) || ww >= WRITERS) {
				bad++;
				continue;
			}
			if ((int64_t)i <= last[ww])
				disorder++;
			last[ww] = (int64_t)i;
			unsigned ln = rec.lane;
			if (seq_known[ln] && rec.seq != next_seq[ln])
				seq_breaks++;
			/* numbered beyond what was written: garbage */
			if (rec.seq - initial_seq >= (uint64_t)n * 2)
				bad++;
			if ((rec.seq ^ initial_seq) >> 32)
				crossed++;
			seq_known[ln] = true;
			next_seq[ln] = rec.seq + 1;
			read++;
			continue;
		}
		if (!running) {
			if (test_caught_up(r))
				break;
			continue;
		}
		running = hw_reap_exited(running);
		if (running)
			shmlog_reader_wait(r, 10);
	}
	struct shmlog_lane_stats s = hw_sum(r);
	uint64_t all_lost = 0;
	for (unsigned k = 0; k < WRITERS * 2; k++)
		all_lost += lost[k];
	printf("wrap from pos %#llx seq %#llx: %llu read (%llu numbered past "
	       "the wrap), %llu lost, %llu bad, %llu out of order, %llu seq "
	       "breaks\n",
	       (unsigned long long)initial_pos, (unsigned long long)initial_seq,
	       (unsigned long long)read, (unsigned long long)crossed,
	       (unsigned long long)all_lost, (unsigned long long)bad,
	       (unsigned long long)disorder, (unsigned long long)seq_breaks);
	CHECK_EQ(bad, 0);
	CHECK_EQ(disorder, 0);
	CHECK_EQ(seq_breaks, 0);
	CHECK_EQ(s.written, (uint64_t)n * WRITERS);
	CHECK_EQ(s.written, s.read + s.overwritten + s.torn);
	CHECK_EQ(s.read, read);
	CHECK_EQ(s.torn, 0);
	/* each record is at most 360 bytes: if a writer's records fit its
	 * lane, nothing may be lost whatever the scheduler does to the
	 * reader; if they lap it (long runs), every loss is accounted */
	if ((uint64_t)n * 360 < 1024 * 1024)
		CHECK_EQ(s.overwritten, 0);
	CHECK(all_lost <= s.overwritten);
	CHECK(crossed > 0);
	for (unsigned k = 0; k < WRITERS; k++)
		CHECK_EQ(last[k], n - 1);
	(void)w;
	shmlog_reader_close(r);
	shmlog_remove(b);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3000;
	/* positions cross 2^32 / 2^64 after ~100 KB per lane; sequence
	 * numbers after 1000 records */
	wrap_case(((uint64_t)1 << 32) - 100000, (uint64_t)UINT32_MAX - 1000, n);
	wrap_case((uint64_t)0 - 100000, UINT64_MAX - 1000, n);
	wrap_case((uint64_t)0 - 8 * 17, UINT64_MAX - 5, n);
	return test_done("test_wrap");
}
