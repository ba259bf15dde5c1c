/* SPDX-License-Identifier: MIT */
/*
 * A thread's records stay in order when the thread moves to another lane,
 * for a reader that reads while it writes.
 *
 * A thread that found every lane of its own taken borrows a shared lane
 * for each record; once a lane is given back it takes that one. Its last
 * record in the shared lane and its first in the new lane are published in
 * that order, but a reader that looked at the shared lane just before the
 * first, and at the new lane just after the second, would hand out the
 * second first: the merge only compares the records it holds. Here the
 * steps are driven one by one, so that the reader holds the new lane's
 * record and last looked at the shared lane before the borrowed record
 * went in: it must still hand out the borrowed record first.
 */
#include <pthread.h>
#include <semaphore.h>

#include "test.h"

#define LANES 8 /* 7 lanes of their own, 1 shared (lane.h) */
#define HOLDERS (LANES - 1)

static shmlog_t *h;
static sem_t ready, done, go[HOLDERS], quit[HOLDERS];
static int failed[HOLDERS]; /* writes that failed, checked once joined */

static void *holder(void *p)
{
	int i = (int)(intptr_t)p;
	failed[i] += shmlog_write(h, SHMLOG_INFO, "hold", "a lane of my own") != 0;
	sem_post(&ready);
	sem_wait(&go[i]);
	failed[i] += shmlog_write(h, SHMLOG_INFO, "other", "x") != 0;
	sem_post(&done);
	sem_wait(&quit[i]); /* returning gives the lane back */
	return NULL;
}

static void next_record(shmlog_reader_t *r, struct shmlog_record *rec)
{
	int ev;
	while ((ev = shmlog_reader_next(r, rec, NULL)) == SHMLOG_EV_LOST)
		;
	CHECK_EQ(ev, SHMLOG_EV_RECORD);
	if (ev != SHMLOG_EV_RECORD)
		memset(rec, 0, sizeof(*rec));
}

int main(void)
{
	const char *b = test_create("merge", 1 << 20, LANES);
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	sem_init(&ready, 0, 0);
	sem_init(&done, 0, 0);
	pthread_t t[HOLDERS];
	for (int i = 0; i < HOLDERS; i++) {
		sem_init(&go[i], 0, 0);
		sem_init(&quit[i], 0, 0);
		REQUIRE(pthread_create(&t[i], NULL, holder,
				       (void *)(intptr_t)i) == 0);
	}
	for (int i = 0; i < HOLDERS; i++)
		sem_wait(&ready);
	/* every lane of its own is held: this thread borrows */
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "0"), 0);

	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	struct shmlog_lost lost;
	unsigned shared = LANES, was_mine = LANES;
	for (int ev; (ev = shmlog_reader_next(r, &rec, &lost));)
		if (ev == SHMLOG_EV_RECORD && !strcmp(rec.tag, "mover"))
			shared = rec.lane;
	CHECK_EQ(shared, LANES - 1);

	/* the reader holds a record of holder 0's lane, the only one with
	 * anything new: handed out, that lane is read again in place */
	sem_post(&go[0]);
	sem_wait(&done);
	next_record(r, &rec);
	CHECK_STR(rec.tag, "other");
	was_mine = rec.lane;

	/* borrowed, in the shared lane the reader last found empty */
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "1"), 0);
	/* holder 0 gives its lane back; the next record goes there */
	sem_post(&quit[0]);
	pthread_join(t[0], NULL);
	CHECK_EQ(failed[0], 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "2"), 0);

	next_record(r, &rec);
	CHECK_STR(rec.tag, "mover");
	CHECK_STR(rec.msg, "1");
	CHECK_EQ(rec.lane, shared);
	next_record(r, &rec);
	CHECK_STR(rec.tag, "mover");
	CHECK_STR(rec.msg, "2");
	CHECK_EQ(rec.lane, was_mine); /* the thread did move */
	CHECK_EQ(shmlog_reader_next(r, &rec, &lost), SHMLOG_EV_NONE);

	shmlog_reader_close(r);
	for (int i = 1; i < HOLDERS; i++) {
		sem_post(&go[i]);
		sem_post(&quit[i]);
		pthread_join(t[i], NULL);
		CHECK_EQ(failed[i], 0);
	}
	shmlog_close(h);
	shmlog_remove(b);
	return test_done("test_merge");
}
