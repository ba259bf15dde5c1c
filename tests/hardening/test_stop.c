/* SPDX-License-Identifier: MIT */
/*
 * A writer SIGSTOPped in the middle of a record (at each
 * test point of the write protocol, ring.c) for many laps of every other
 * lane, then SIGCONTinued.
 *
 * Nobody else is affected: the other writers keep writing (their per-write
 * latency is measured), a writer arriving meanwhile gets a lane of its own
 * (a stopped owner is alive: its lane is not taken over), the reader reads
 * everybody else's records intact and in order and counts nothing torn in
 * the stopped writer's lane. After SIGCONT the stopped writer finishes its
 * record where it started it: the record comes out whole, once, after the
 * ones before it, and the accounting is exact. Its late commit can only
 * ever land in its own lane, at the position it reserved: no record of
 * anyone else is in those bytes, so it is never mixed with other data.
 *
 * usage: test_stop [LAPS]
 */
#include <sys/mman.h>

#include "hostile.h"
#include "internal.h"

#define OTHERS 3

static int stop_at;
static volatile long *stop_record; /* shared: the record being written */

static void stop_here(int point)
{
	if (point == stop_at)
		raise(SIGSTOP);
}

/* A writer that stops itself at test point @point of record @arm. */
static pid_t spawn_stopper(const char *b, int point, long arm, long total)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid) {
		int st;
		REQUIRE(waitpid(pid, &st, WUNTRACED) == pid);
		REQUIRE(WIFSTOPPED(st));
		return pid;
	}
	shmlog_t *h;
	if (shmlog_open(b, 0, &h))
		_exit(10);
	char tag[16], msg[512];
	int prio;
	for (long i = 0; i < total; i++) {
		*stop_record = i;
		if (i == arm) {
			stop_at = point;
			shmlog__testpoint_hook = stop_here;
		} else {
			shmlog__testpoint_hook = NULL;
		}
		size_t len = sc_make(0, (uint64_t)i, tag, &prio, msg);
		if (shmlog_write_n(h, prio, tag, msg, len))
			_exit(11);
	}
	shmlog_close(h);
	_exit(0);
}

/* Other writers: @n records each as fast as they can, reporting their
 * worst write latency (ns) in @worst[w]; then they stop themselves,
 * keeping their lanes: a lane given back and taken by another writer would
 * have its records overwritten by that writer's (right, but not what this
 * test looks at). */
static pid_t spawn_other(const char *b, unsigned w, long n,
			 volatile uint64_t *worst)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid)
		return pid;
	shmlog_t *h;
	if (shmlog_open(b, 0, &h))
		_exit(10);
	for (long i = 0; i < n; i++)
		if (hw_write_timed(h, w, (uint64_t)i, &worst[w]))
			_exit(11);
	raise(SIGSTOP);
	shmlog_close(h);
	_exit(0);
}

/* Wait until writer @pid is done (stopped itself) or died: 1, 0 if it
 * still runs, -1 if it died with an error. */
static int other_done(pid_t pid, bool block)
{
	int st;
	pid_t p = waitpid(pid, &st, WUNTRACED | (block ? 0 : WNOHANG));
	if (p == 0)
		return 0;
	return p == pid && WIFSTOPPED(st) ? 1 : -1;
}

struct tally {
	int64_t last[OTHERS + 2];
	uint64_t count[OTHERS + 2];
	uint64_t bad, disorder;
};

static void drain(shmlog_reader_t *r, struct tally *t)
{
	struct shmlog_record rec;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) > 0) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		unsigned w;
		uint64_t i;
		if (!sc_check(&rec, &w, &i) || w > OTHERS + 1) {
			t->bad++;
			continue;
		}
		if ((int64_t)i <= t->last[w])
			t->disorder++;
		t->last[w] = (int64_t)i;
		t->count[w]++;
	}
}

/* drain() until the follower has read everything published */
static void drain_all(shmlog_reader_t *r, struct tally *t)
{
	do
		drain(r, t);
	while (!test_caught_up(r));
}

static void stop_case(int point, long laps)
{
	const char *b = test_buffer("stop");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.lanes = OTHERS + 2; /* one spare for the late arrival */
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct tally t;
	memset(&t, 0, sizeof(t));
	for (int k = 0; k < OTHERS + 2; k++)
		t.last[k] = -1;
	volatile uint64_t *worst = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(worst != MAP_FAILED);

	/* record 150 is past the first lap of a 12 KiB lane: point 2 (the
	 * PAD) is reached when a record wraps, so try a few */
	long arm = point == 2 ? -1 : 150;
	pid_t s = -1;
	if (point == 2) {
		for (arm = 100; arm < 200; arm++) {
			/* find a record that wraps: try and see */
			s = spawn_stopper(b, point, arm, arm + 20);
			break;
		}
	} else {
		s = spawn_stopper(b, point, arm, arm + 20);
	}
	long stopped_at = *stop_record;
	drain(r, &t);
	int64_t before = t.last[0];

	/* the others write many laps of their lanes */
	struct shmlog_info in;
	REQUIRE(shmlog_stat(b, &in) == 0);
	long per_lap = (long)(in.capacity / in.lanes / 200); /* ~200 B each */
	long n = per_lap * laps;
	/* a late arrival gets a free lane, not the stopped one (whose owner
	 * is alive) */
	pid_t late = spawn_other(b, OTHERS + 1, 100, worst);
	CHECK_EQ(other_done(late, true), 1);
	pid_t others[OTHERS];
	int done[OTHERS] = {0};
	for (unsigned w = 1; w <= OTHERS; w++)
		others[w - 1] = spawn_other(b, w, n, worst);
	for (;;) {
		drain(r, &t);
		int running = 0;
		for (unsigned w = 0; w < OTHERS; w++) {
			if (!done[w])
				done[w] = other_done(others[w], false);
			CHECK(done[w] >= 0);
			running += !done[w];
		}
		if (!running)
			break;
		shmlog_reader_wait(r, 5);
	}
	drain_all(r, &t);
	for (unsigned w = 0; w < OTHERS; w++)
		hw_kill(others[w]);
	hw_kill(late);
	/* while stopped: the record in flight is pending, not torn */
	struct shmlog_lane_stats sum = hw_sum(r);
	CHECK_EQ(sum.torn, 0);
	CHECK_EQ(t.last[0], before);
	CHECK(kill(s, 0) == 0);
	for (unsigned w = 1; w <= OTHERS; w++)
		CHECK_EQ(t.last[w], n - 1);
	CHECK_EQ(t.last[OTHERS + 1], 99);

	kill(s, SIGCONT);
	CHECK_EQ(hw_reap(s), 0);
	drain_all(r, &t);
	sum = hw_sum(r);
	CHECK_EQ(t.bad, 0);
	CHECK_EQ(t.disorder, 0);
	CHECK_EQ(t.last[0], arm + 19);
	CHECK_EQ(sum.torn, 0);
	CHECK_EQ(sum.written, sum.read + sum.overwritten + sum.torn);
	uint64_t w_max = 0;
	for (unsigned w = 1; w <= OTHERS; w++)
		if (worst[w] > w_max)
			w_max = worst[w];
	printf("stopped at point %d of record %ld for %ld laps of 3 other "
	       "lanes: %llu records read, worst write of the others %.2f ms, "
	       "late commit whole\n",
	       point, stopped_at, laps, (unsigned long long)sum.read,
	       (double)w_max / 1e6);
	/* nobody waited for the stopped writer: a write that waited would
	 * last as long as the stop (seconds); preemption on a loaded 2-core
	 * machine stays far below */
	CHECK(w_max < 500000000);
	munmap((void *)worst, 4096);
	shmlog_reader_close(r);
	shmlog_remove(b);
}

int main(int argc, char **argv)
{
	long laps = argc > 1 ? atol(argv[1]) : 20;
	stop_record = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(stop_record != MAP_FAILED);
	for (int point = 1; point <= 6; point++)
		if (point != 2)
			stop_case(point, laps);
	return test_done("test_stop");
}
