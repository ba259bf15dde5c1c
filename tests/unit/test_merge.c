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
 *
 * Twice: through shmlog_reader_next(), and through the archiver's drain
 * (shmlog__reader_drain()), which hands out a lane that alone holds
 * records in spans, its chunk up to the head at once: a span must not
 * take the new lane's record past the borrowed one either, and must still
 * be taken when no other lane has anything new.
 */
#include <pthread.h>
#include <semaphore.h>

#include "archive_format.h"
#include "reader_raw.h"
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

/* A record read: its lane, tag and message, and whether a span gave it. */
struct got {
	unsigned lane;
	char tag[16], msg[16];
	bool in_span;
	bool any;
};

static bool take_event(void *ctx, int ev, const struct shmlog_record *rec,
		       const struct shmlog_lost *lost)
{
	struct got *g = ctx;
	(void)lost;
	if (ev != SHMLOG_EV_RECORD)
		return true;
	*g = (struct got){.lane = rec->lane, .any = true};
	snprintf(g->tag, sizeof(g->tag), "%s", rec->tag);
	snprintf(g->msg, sizeof(g->msg), "%s", rec->msg);
	return false;
}

/* A span's first record only: the rest stay for the next read. */
static bool take_span(void *ctx, const struct shmlog__span *sp,
		      unsigned *took)
{
	struct got *g = ctx;
	struct shmlog_arc_span_rec r;
	memcpy(&r, sp->bytes, sizeof(r));
	const char *tag = (const char *)sp->bytes + sizeof(r);
	*g = (struct got){.lane = sp->lane, .in_span = true, .any = true};
	snprintf(g->tag, sizeof(g->tag), "%.*s", (int)r.tag_len, tag);
	snprintf(g->msg, sizeof(g->msg), "%.*s", (int)r.msg_len,
		 tag + r.tag_len);
	*took = 1;
	return false;
}

/* The next record, through shmlog_reader_next() or, if @drained, the
 * archiver's drain: false if there is none. */
static bool next_got(shmlog_reader_t *r, bool drained, struct got *g)
{
	*g = (struct got){0};
	if (drained) {
		int n;
		while ((n = shmlog__reader_drain(r, 1, 1 << 16, take_event,
						 take_span, NULL, g)) > 0 &&
		       !g->any)
			; /* a loss: taken, not a record */
		CHECK(n >= 0);
		return g->any;
	}
	struct shmlog_record rec;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) == SHMLOG_EV_LOST)
		;
	if (ev == SHMLOG_EV_RECORD)
		take_event(g, ev, &rec, NULL);
	return g->any;
}

static void expect(shmlog_reader_t *r, bool drained, const char *tag,
		   const char *msg, struct got *g)
{
	CHECK(next_got(r, drained, g));
	CHECK_STR(g->tag, tag);
	CHECK_STR(g->msg, msg);
}

static void scenario(bool drained)
{
	const char *b = test_create(drained ? "merge-drain" : "merge", 1 << 20,
				    LANES);
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	sem_init(&ready, 0, 0);
	sem_init(&done, 0, 0);
	pthread_t t[HOLDERS];
	for (int i = 0; i < HOLDERS; i++) {
		sem_init(&go[i], 0, 0);
		sem_init(&quit[i], 0, 0);
		failed[i] = 0;
		REQUIRE(pthread_create(&t[i], NULL, holder,
				       (void *)(intptr_t)i) == 0);
	}
	for (int i = 0; i < HOLDERS; i++)
		sem_wait(&ready);
	/* every lane of its own is held: this thread borrows */
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "0"), 0);

	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	if (drained)
		REQUIRE(shmlog__reader_keep_raw(r) == 0);
	struct got g;
	unsigned shared = LANES, was_mine = LANES;
	while (next_got(r, drained, &g))
		if (!strcmp(g.tag, "mover"))
			shared = g.lane;
	CHECK_EQ(shared, LANES - 1);

	/* the reader holds a record of holder 0's lane, the only one with
	 * anything new: handed out, that lane is read again in place */
	sem_post(&go[0]);
	sem_wait(&done);
	expect(r, drained, "other", "x", &g);
	was_mine = g.lane;

	/* borrowed, in the shared lane the reader last found empty */
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "1"), 0);
	/* holder 0 gives its lane back; the next record goes there */
	sem_post(&quit[0]);
	pthread_join(t[0], NULL);
	CHECK_EQ(failed[0], 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "2"), 0);

	expect(r, drained, "mover", "1", &g);
	CHECK_EQ(g.lane, shared);
	expect(r, drained, "mover", "2", &g);
	CHECK_EQ(g.lane, was_mine); /* the thread did move */

	/* nothing new elsewhere: the drain takes the lane in a span again */
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "3"), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "4"), 0);
	expect(r, drained, "mover", "3", &g);
	CHECK_EQ(g.in_span, drained);
	expect(r, drained, "mover", "4", &g);
	CHECK(!next_got(r, drained, &g));

	shmlog_reader_close(r);
	for (int i = 1; i < HOLDERS; i++) {
		sem_post(&go[i]);
		sem_post(&quit[i]);
		pthread_join(t[i], NULL);
		CHECK_EQ(failed[i], 0);
	}
	shmlog_close(h);
	shmlog_remove(b);
}

int main(void)
{
	scenario(false);
	scenario(true);
	return test_done("test_merge");
}
