/* SPDX-License-Identifier: MIT */
/*
 * A follower keeps up with a writer paced below its rate: it loses
 * nothing, reads every record once and in order, and goes back to read
 * as soon as a record is there, not after a batch.
 *
 * A writer process writes RECORDS records at RATE a second (it waits for
 * each one's time on the clock: no sleeps), each message its index and
 * the CLOCK_MONOTONIC time it was written, and counts them in a shared
 * word; the buffer holds them all, so the follower can never be
 * overtaken and must lose nothing. The follower (this process:
 * shmlog_reader_next(), shmlog_reader_wait() when it has nothing) times
 * each wait that returned for a record. A wait is judged only if both
 * sides ran throughout it: the follower's CPU time is most of its length
 * and the writer kept its pace meanwhile (on a busy machine the
 * scheduler decides the rest). A record then comes every 1 / RATE, so
 * the median judged wait must be short: under WAIT_MAX_NS. A follower
 * that waits for a batch of tens of microseconds while the writer keeps
 * writing, as one once did, fails it. Too few waits to judge (a machine
 * too busy): the run is tried again, up to RUNS times, then the verdict
 * is "skipped" (77); every run must lose nothing and read every record
 * in order. The delivery latency (now - stamp) is shown, not judged.
 *
 * usage: test_follow [RUNS]
 */
#include "hostile.h"

#define RATE 2000000.0 /* records a second: two a microsecond */
#define RECORDS 200000u
#define WAIT_MAX_NS 20000u
#define JUDGED_MIN 50 /* waits both sides ran through, for a verdict */
#define RUN_MAX_NS (30 * 1000000000ull) /* a follower left behind */

struct stamp {
	uint64_t index, written_ns;
};

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static _Atomic uint64_t *written; /* shared with the writer */

static void __attribute__((noreturn)) paced_writer(const char *b)
{
	shmlog_t *h;
	if (shmlog_open(b, 0, &h))
		_exit(10);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < RECORDS; i++) {
		uint64_t due = t0 + (uint64_t)((double)i * 1e9 / RATE), now;
		while ((now = now_ns()) < due)
			;
		struct stamp s = {i, now};
		if (shmlog_write_n(h, SHMLOG_INFO, "pace", (const char *)&s,
				   sizeof(s)))
			_exit(11);
		atomic_store_explicit(written, i + 1, memory_order_relaxed);
	}
	shmlog_close(h);
	_exit(0);
}

/* Did both sides run through a wait of @wall ns (@cpu of it the
 * follower's), the writer writing @moved records meanwhile? */
static bool wait_judged(uint64_t wall, uint64_t cpu, uint64_t moved)
{
	double due = (double)wall * RATE / 1e9;
	return (double)cpu >= 0.8 * (double)wall &&
	       (double)moved >= 0.8 * due - 1;
}

/* One run: 1 if its median judged wait was under the bound, -1 if it
 * was not, 0 if too few waits could be judged. */
static int follow_run(int run, uint64_t *lat, uint64_t *waits)
{
	const char *b = test_buffer("follow");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 16u << 20; /* every record fits: nothing is overwritten */
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0); /* from the oldest */
	atomic_store(written, 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		paced_writer(b);

	uint64_t n = 0, out_of_order = 0, lost = 0, bad = 0, nwait = 0;
	uint64_t deadline = now_ns() + RUN_MAX_NS, waited = 0, waits_all = 0;
	while (n < RECORDS && now_ns() < deadline) {
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev = shmlog_reader_next(r, &rec, &l);
		if (ev == SHMLOG_EV_RECORD) {
			uint64_t now = now_ns();
			struct stamp s;
			if (rec.msg_len != sizeof(s) || strcmp(rec.tag, "pace")) {
				bad++;
				continue;
			}
			memcpy(&s, rec.msg, sizeof(s));
			out_of_order += s.index != n;
			if (waited && nwait < RECORDS) /* it waited for this */
				waits[nwait++] = waited;
			waited = 0;
			lat[n++] = now > s.written_ns ? now - s.written_ns : 0;
		} else if (ev == SHMLOG_EV_LOST) {
			lost += l.overwritten + l.torn;
		} else {
			REQUIRE(ev == SHMLOG_EV_NONE);
			uint64_t w0 = atomic_load(written);
			uint64_t c0 = cpu_ns(), t0 = now_ns();
			int err = shmlog_reader_wait(r, 100);
			uint64_t t1 = now_ns(), c1 = cpu_ns();
			uint64_t moved = atomic_load(written) - w0;
			CHECK(err == 0 || err == -ETIMEDOUT || err == -EINTR);
			/* judged if it returned for a record (see above) */
			waited = err == 0 && wait_judged(t1 - t0, c1 - c0,
							  moved)
					 ? t1 - t0
					 : 0;
			waits_all++;
		}
	}
	CHECK_EQ(hw_reap(pid), 0);
	struct shmlog_lane_stats st = hw_sum(r);
	CHECK_EQ(n, RECORDS);
	CHECK_EQ(lost, 0);
	CHECK_EQ(out_of_order, 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(st.written, RECORDS);
	CHECK_EQ(st.read, RECORDS);
	CHECK_EQ(st.overwritten, 0);
	CHECK_EQ(st.torn, 0);
	shmlog_reader_close(r);
	shmlog_remove(b);

	qsort(lat, n, sizeof(*lat), hw_cmp_u64);
	qsort(waits, nwait, sizeof(*waits), hw_cmp_u64);
	uint64_t w50 = hw_pct(waits, nwait, 0.5);
	printf("run %d: %llu records at %.0f k/s; %llu waits, %llu judged: "
	       "median %.1f us (bound %.0f us), p99 %.1f us; delivery "
	       "median %.1f us, p99 %.1f us\n",
	       run, (unsigned long long)n, RATE / 1e3,
	       (unsigned long long)waits_all, (unsigned long long)nwait,
	       (double)w50 / 1e3, WAIT_MAX_NS / 1e3,
	       (double)hw_pct(waits, nwait, 0.99) / 1e3,
	       (double)hw_pct(lat, n, 0.5) / 1e3,
	       (double)hw_pct(lat, n, 0.99) / 1e3);
	if (nwait < JUDGED_MIN)
		return 0;
	return w50 < WAIT_MAX_NS ? 1 : -1;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	uint64_t *lat = malloc(RECORDS * sizeof(*lat));
	uint64_t *waits = malloc(RECORDS * sizeof(*waits));
	written = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(lat && waits && runs > 0 && written != MAP_FAILED);
	int verdict = 0;
	for (int i = 1; i <= runs && verdict <= 0; i++) {
		int v = follow_run(i, lat, waits);
		verdict = v ? v : verdict;
	}
	CHECK(verdict >= 0);
	free(lat);
	free(waits);
	if (test_failures || verdict > 0)
		return test_done("test_follow");
	printf("test_follow: skipped: too few waits both sides ran through "
	       "in %d runs (a machine this busy cannot judge them)\n",
	       runs);
	return 77;
}
