/* SPDX-License-Identifier: MIT */
/*
 * Space taken from a lane while its owner appends and a reader copies.
 *
 * Three threads on a buffer of 16 chunks: the owner floods (it holds most
 * of the buffer, above its share), a second writer writes in bursts (it
 * is under its share, so every chunk it needs comes from the owner's
 * oldest ones), and a reader follows both, copying records out of the very
 * chunks being taken. Bounded by record counts, not by time. The reader
 * must see whole records only, each writer's in order, and the books must
 * balance: for each lane, written = read + overwritten + torn. Run under
 * ThreadSanitizer too (the suite's stress label).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "internal.h"
#include "selfcheck.h"
#include "test.h"

#define OWNER_RECORDS 60000
#define TAKER_RECORDS 15000

static const char *buffer;
static atomic_int writers_done;
static pthread_barrier_t both_wrote;
static atomic_int drained; /* the reader read everything: writers may go */

struct writer {
	unsigned id;
	long n, burst;
	long failed;
};

static void *writer(void *p)
{
	struct writer *w = p;
	shmlog_t *h = NULL;
	if (shmlog_open(buffer, 0, &h) != 0)
		w->failed = w->n;
	for (long i = 0; h && i < w->n; i += w->burst) {
		long n = w->n - i < w->burst ? w->n - i : w->burst;
		w->failed += sc_write(h, w->id, (uint64_t)i, n);
		sched_yield();
	}
	/* a writer that gives its lane back gives up its share (its records
	 * go first): both keep theirs until the reader has drained */
	pthread_barrier_wait(&both_wrote);
	atomic_fetch_add(&writers_done, 1);
	while (!atomic_load(&drained))
		sched_yield();
	if (h)
		shmlog_close(h);
	return NULL;
}

int main(void)
{
	buffer = test_buffer("steal");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024; /* 16 chunks of 4 KiB */
	o.lanes = 4;
	REQUIRE(shmlog_create(buffer, &o) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(buffer, 0, &r) == 0);

	struct writer ws[2] = {{1, OWNER_RECORDS, 1000, 0},
			       {2, TAKER_RECORDS, 50, 0}};
	pthread_t t[2];
	REQUIRE(pthread_barrier_init(&both_wrote, NULL, 2) == 0);
	for (int k = 0; k < 2; k++)
		REQUIRE(pthread_create(&t[k], NULL, writer, &ws[k]) == 0);

	uint64_t read = 0, bad = 0, disorder = 0;
	int64_t last[3] = {-1, -1, -1};
	for (;;) {
		struct shmlog_record rec;
		int ev = shmlog_reader_next(r, &rec, NULL);
		if (ev == SHMLOG_EV_RECORD) {
			unsigned w;
			uint64_t i;
			if (!sc_check(&rec, &w, &i) || w < 1 || w > 2) {
				bad++;
				continue;
			}
			if ((int64_t)i <= last[w])
				disorder++;
			last[w] = (int64_t)i;
			read++;
			continue;
		}
		if (ev == SHMLOG_EV_LOST)
			continue;
		if (atomic_load(&writers_done) == 2 &&
		    shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_NONE)
			break;
		sched_yield();
	}
	atomic_store(&drained, 1);
	for (int k = 0; k < 2; k++)
		REQUIRE(pthread_join(t[k], NULL) == 0);
	struct shmlog_lane_stats sum;
	test_sum_lanes(r, &sum);
	printf("steal: owner %d records, taker %d in bursts: %llu read, %llu "
	       "overwritten, %llu bad, %llu out of order\n",
	       OWNER_RECORDS, TAKER_RECORDS, (unsigned long long)read,
	       (unsigned long long)sum.overwritten, (unsigned long long)bad,
	       (unsigned long long)disorder);
	CHECK_EQ(ws[0].failed, 0);
	CHECK_EQ(ws[1].failed, 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(disorder, 0);
	CHECK_EQ(sum.written, OWNER_RECORDS + TAKER_RECORDS);
	/* chunks did change hands, many times over (the reader may or may
	 * not have been lapped: that depends on the scheduler) */
	shmlog_t *h;
	REQUIRE(shmlog_open(buffer, 0, &h) == 0);
	uint64_t takes = atomic_load(&seg_space(&h->seg)->epoch);
	printf("steal: %llu chunks taken in a table of %u\n",
	       (unsigned long long)takes, h->seg.fixed.chunk_count);
	CHECK(takes > 8 * (uint64_t)h->seg.fixed.chunk_count);
	shmlog_close(h);
	CHECK_EQ(last[1], OWNER_RECORDS - 1); /* each writer's newest kept */
	CHECK_EQ(last[2], TAKER_RECORDS - 1);
	shmlog_reader_close(r);
	shmlog_remove(buffer);
	return test_done("test_steal");
}
