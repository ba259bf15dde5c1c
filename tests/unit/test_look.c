/* SPDX-License-Identifier: MIT */
/*
 * A follower's looks at many lanes: a lane found quiet at a look (nobody
 * wrote it, the cursor at its head) costs the next look one load of its
 * head, until the head moves. Here a follower over 1024 lanes waits, and
 * then a record comes into a lane it has found quiet many times, each
 * time another lane (each held by a thread of its own), then into the
 * first lane again: every wait must return for it (within 2 s: 0 at
 * once, by design), the record read must be it, and a wait that only
 * looks must then find nothing.
 */
#include <pthread.h>
#include <semaphore.h>

#include "test.h"

#define LANES 1024
#define THREADS 24

static shmlog_t *h;
static sem_t go[THREADS], done;
static int failed[THREADS];

static void *holder(void *p)
{
	int i = (int)(intptr_t)p;
	char msg[16];
	snprintf(msg, sizeof(msg), "t%d", i);
	sem_wait(&go[i]);
	failed[i] += shmlog_write(h, SHMLOG_INFO, "look", msg) != 0;
	sem_post(&done);
	sem_wait(&go[i]); /* returning gives the lane back */
	return NULL;
}

/* The follower waits for, then reads, @msg; then finds nothing more. */
static void follow_one(shmlog_reader_t *r, const char *msg, unsigned *lane)
{
	CHECK_EQ(shmlog_reader_wait(r, 2000), 0);
	struct shmlog_record rec;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) == SHMLOG_EV_LOST)
		;
	CHECK_EQ(ev, SHMLOG_EV_RECORD);
	if (ev == SHMLOG_EV_RECORD) {
		CHECK_STR(rec.msg, msg);
		*lane = rec.lane;
	}
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_NONE);
	/* looks at every lane: the quiet ones too, marked so again */
	CHECK_EQ(shmlog_reader_wait(r, 0), -ETIMEDOUT);
	CHECK_EQ(shmlog_reader_wait(r, 1), -ETIMEDOUT);
}

int main(void)
{
	const char *b = test_create("look", 4 << 20, LANES);
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	CHECK_EQ(shmlog_reader_wait(r, 1), -ETIMEDOUT); /* all quiet */

	unsigned first = LANES, lane = LANES;
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "look", "main 1"), 0);
	follow_one(r, "main 1", &first);

	sem_init(&done, 0, 0);
	pthread_t t[THREADS];
	bool seen[LANES] = {false};
	seen[first < LANES ? first : 0] = true;
	unsigned distinct = 1;
	for (int i = 0; i < THREADS; i++) {
		sem_init(&go[i], 0, 0);
		REQUIRE(pthread_create(&t[i], NULL, holder,
				       (void *)(intptr_t)i) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		char msg[16];
		snprintf(msg, sizeof(msg), "t%d", i);
		sem_post(&go[i]);
		sem_wait(&done);
		follow_one(r, msg, &lane);
		if (lane < LANES && !seen[lane]) {
			seen[lane] = true;
			distinct++;
		}
	}
	/* each thread held a lane of its own: each record was new to a lane
	 * the follower had found quiet */
	CHECK_EQ(distinct, THREADS + 1u);

	/* the first lane again, quiet since its record */
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "look", "main 2"), 0);
	follow_one(r, "main 2", &lane);
	CHECK_EQ(lane, first);

	for (int i = 0; i < THREADS; i++) {
		sem_post(&go[i]);
		pthread_join(t[i], NULL);
		CHECK_EQ(failed[i], 0);
	}
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
	return test_done("test_look");
}
