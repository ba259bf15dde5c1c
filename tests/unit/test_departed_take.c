/* SPDX-License-Identifier: MIT */
/*
 * Two writers that take from the departed at once leave them their bound.
 *
 * Writers that exited or died keep their newest records up to a bound;
 * above it a writer that needs a chunk takes their oldest. Two writers
 * that both saw the departed one chunk above the bound must not both take
 * one: on a busy machine, four flooders beside a departed writer left it
 * two chunks under its bound. The policy decides from a pass over the
 * table, and the chunk is looked for in another: here a test point
 * between the two stops writer B once it has decided to take from the
 * departed, writer A takes the chunk above the bound meanwhile, and then
 * B goes on: it must find the departed at their bound and take from
 * somebody else. The departed end at their bound, and their records are
 * their newest, without a hole. Every wait is bounded (alarm, and timed
 * semaphore waits that fail the test).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "test.h"

extern void (*shmlog__testpoint_hook)(int point);

#define REC_MSG 100 /* bytes of a message: about 160 records a chunk */

enum { A, B, WRITERS };

static shmlog_t *h;
static const char *buf;
static _Thread_local int me = -1; /* the writer thread's role */
/* a one-shot gate: the hook stops writer w where a switch has decided to
 * take from the departed, before it looks for their oldest chunk */
static atomic_bool gate18[WRITERS];
static sem_t at[WRITERS], go[WRITERS]; /* at a gate / let through */
static sem_t cmd[WRITERS], done[WRITERS];
static int todo[WRITERS]; /* records to write; -1: to the bound + 1 */
static int failed[WRITERS];
static atomic_int gate_timeouts;

static bool timed_wait(sem_t *s)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 30;
	while (sem_timedwait(s, &t) != 0)
		if (errno != EINTR)
			return false;
	return true;
}

static void hook(int point)
{
	if (me < 0)
		return;
	if (point != 18 || !atomic_exchange(&gate18[me], false))
		return;
	sem_post(&at[me]);
	if (!timed_wait(&go[me]))
		atomic_fetch_add(&gate_timeouts, 1);
}

static struct shmlog_space_stats space(void)
{
	struct shmlog_space_stats st;
	memset(&st, 0, sizeof(st));
	CHECK_EQ(shmlog_stat_space(buf, &st), 0);
	return st;
}

static int write_one(char tag, uint64_t i)
{
	char msg[REC_MSG + 1];
	memset(msg, 'x', REC_MSG);
	msg[REC_MSG] = '\0';
	int n = snprintf(msg, sizeof(msg), "%c %llu ", tag,
			 (unsigned long long)i);
	msg[n] = '.';
	return shmlog_write(h, SHMLOG_INFO, "take", msg);
}

static void *writer(void *p)
{
	me = (int)(intptr_t)p;
	uint64_t i = 0;
	for (;;) {
		if (!timed_wait(&cmd[me]))
			break;
		int n = todo[me];
		if (n == 0)
			break;
		if (n < 0) { /* until the departed hold their bound + 1 */
			struct shmlog_space_stats st = space();
			for (int k = 0; k < 100000 &&
					st.departed > st.departed_bound + 1;
			     k++) {
				failed[me] += write_one((char)('a' + me), i++) != 0;
				st = space();
			}
			CHECK_EQ(st.departed, st.departed_bound + 1);
		}
		for (int k = 0; k < n; k++)
			failed[me] += write_one((char)('a' + me), i++) != 0;
		sem_post(&done[me]);
	}
	return NULL;
}

static void command(int w, int n)
{
	todo[w] = n;
	sem_post(&cmd[w]);
}

/* The departed writer's records: newest kept, no hole. */
static void check_departed(uint64_t written, const char *scenario)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(buf, SHMLOG_READ_DUMP, &r) == 0);
	struct shmlog_record rec;
	struct shmlog_lost lost;
	uint64_t first = 0, last = 0, n = 0, holes = 0;
	for (int ev; (ev = shmlog_reader_next(r, &rec, &lost));) {
		REQUIRE(ev > 0);
		unsigned long long i;
		if (ev != SHMLOG_EV_RECORD || rec.msg[0] != 'd' ||
		    sscanf(rec.msg, "d %llu", &i) != 1)
			continue;
		if (n && i != last + 1)
			holes++;
		if (!n)
			first = i;
		last = i;
		n++;
	}
	shmlog_reader_close(r);
	printf("%s: the departed keep records %llu..%llu of %llu, %llu holes\n",
	       scenario, (unsigned long long)first, (unsigned long long)last,
	       (unsigned long long)written - 1, (unsigned long long)holes);
	CHECK(n > 0);
	CHECK_EQ(last, written - 1);
	CHECK_EQ(holes, 0);
}

static void *departed(void *p)
{
	uint64_t n = (uint64_t)(uintptr_t)p;
	for (uint64_t i = 0; i < n; i++)
		CHECK_EQ(write_one('d', i), 0);
	return NULL; /* its lane is given back */
}

/* A fresh buffer of @size bytes and @lanes lanes: a writer thread that
 * wrote three buffers' worth and exited, then A taking the departed's
 * chunks down to the bound + 1. */
static uint64_t setup(uint32_t size, unsigned lanes, pthread_t t[WRITERS])
{
	buf = test_create("take", size, lanes);
	REQUIRE(shmlog_open(buf, 0, &h) == 0);
	uint64_t n = 3 * size / (REC_MSG + 40);
	pthread_t d;
	REQUIRE(pthread_create(&d, NULL, departed, (void *)(uintptr_t)n) == 0);
	pthread_join(d, NULL);
	struct shmlog_space_stats st = space();
	printf("%u KiB, %u lanes: %llu chunks, %llu departed, bound %llu\n",
	       size >> 10, lanes, (unsigned long long)st.chunks, (unsigned long long)st.departed,
	       (unsigned long long)st.departed_bound);
	CHECK(st.departed > st.departed_bound + 2);
	for (int w = 0; w < WRITERS; w++) {
		failed[w] = 0;
		REQUIRE(pthread_create(&t[w], NULL, writer,
				       (void *)(intptr_t)w) == 0);
	}
	command(A, -1);
	REQUIRE(timed_wait(&done[A]));
	return n;
}

static void teardown(pthread_t t[WRITERS])
{
	for (int w = 0; w < WRITERS; w++) {
		command(w, 0);
		pthread_join(t[w], NULL);
		CHECK_EQ(failed[w], 0);
	}
	shmlog_close(h);
	shmlog_remove(buf);
}

/* B decided to take from the departed; A takes the chunk above the bound
 * before B looks for one: B finds them at the bound and asks again. */
static void decided_before(uint32_t size, unsigned lanes)
{
	pthread_t t[WRITERS];
	uint64_t n = setup(size, lanes, t);
	atomic_store(&gate18[B], true);
	command(B, 1);
	REQUIRE(timed_wait(&at[B]));
	command(A, 200);
	REQUIRE(timed_wait(&done[A]));
	struct shmlog_space_stats st = space();
	CHECK_EQ(st.departed, st.departed_bound);
	sem_post(&go[B]);
	REQUIRE(timed_wait(&done[B]));
	st = space();
	printf("decided before: the departed hold %llu chunks, bound %llu\n",
	       (unsigned long long)st.departed,
	       (unsigned long long)st.departed_bound);
	CHECK_EQ(st.departed, st.departed_bound);
	check_departed(n, "decided before");
	teardown(t);
}

int main(void)
{
	alarm(120);
	for (int w = 0; w < WRITERS; w++) {
		sem_init(&at[w], 0, 0);
		sem_init(&go[w], 0, 0);
		sem_init(&cmd[w], 0, 0);
		sem_init(&done[w], 0, 0);
	}
	shmlog__testpoint_hook = hook;
	decided_before(1u << 20, 4); /* 64 chunks of 16 KiB, bound 4 */
	decided_before(4u << 20, 16); /* 256 chunks, bound 16 */
	CHECK_EQ(atomic_load(&gate_timeouts), 0);
	return test_done("test_departed_take");
}
