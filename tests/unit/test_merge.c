/* SPDX-License-Identifier: MIT */
/*
 * A thread's records stay in order when the thread moves to another lane,
 * for a reader that reads while it writes, and for the archiver's drain.
 *
 * A thread that found every lane of its own taken borrows a shared lane
 * for each record; once a lane is given back it takes that one. Its last
 * record in the shared lane and its first in the new lane are published in
 * that order, but a reader that looked at the shared lane just before the
 * first, and at the new lane just after the second, would hand out the
 * second first: the merge only compares the records it holds. Here the
 * steps are driven one by one, so that the reader holds the new lane's
 * record and last looked at the shared lane before the borrowed record
 * went in: it must still hand out the borrowed record first. The drain
 * (shmlog__reader_drain(), records as stored) would hand out the new
 * lane's records in one span, from one copy of its chunk: the same.
 */
#include <pthread.h>
#include <semaphore.h>

#include "internal.h"
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

/* What a reader handed out, in order: "tag msg lane" each. */
struct seen {
	char ev[64][64];
	unsigned n, spans;
};

static void seen_add(struct seen *s, const char *tag, size_t tag_len,
		     const char *msg, size_t msg_len, unsigned lane)
{
	if (s->n < 64)
		snprintf(s->ev[s->n++], sizeof(s->ev[0]), "%.*s %.*s %u",
			 (int)tag_len, tag, (int)msg_len, msg, lane);
}

static bool take(void *ctx, int ev, const struct shmlog_record *rec,
		 const struct shmlog_lost *lost)
{
	(void)lost;
	if (ev == SHMLOG_EV_RECORD)
		seen_add(ctx, rec->tag, rec->tag_len, rec->msg, rec->msg_len,
			 rec->lane);
	return true;
}

static bool span(void *ctx, const struct shmlog__span *sp, unsigned *took)
{
	struct seen *s = ctx;
	size_t at = 0;
	for (unsigned i = 0; i < sp->count; i++) {
		struct shmlog__rec r;
		memcpy(&r, sp->bytes + at, REC_HDR);
		const char *tag = (const char *)sp->bytes + at + REC_HDR;
		seen_add(s, tag, r.tag_len, tag + r.tag_len, r.msg_len,
			 sp->lane);
		at += r.len;
	}
	s->spans++;
	*took = sp->count;
	return true;
}

/* Up to @max events of @r into @s, by shmlog_reader_next() or the
 * archiver's drain. */
static void read_some(shmlog_reader_t *r, bool drain, unsigned max,
		      struct seen *s)
{
	if (drain) {
		CHECK(shmlog__reader_drain(r, max, 1 << 20, take, span, NULL,
					   s) >= 0);
		return;
	}
	struct shmlog_record rec;
	struct shmlog_lost lost;
	for (int ev; max-- && (ev = shmlog_reader_next(r, &rec, &lost));)
		take(s, ev, &rec, &lost);
}

static void moved(bool drain)
{
	const char *b = test_create(drain ? "merge-drain" : "merge", 1 << 20,
				    LANES);
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	sem_init(&ready, 0, 0);
	sem_init(&done, 0, 0);
	pthread_t t[HOLDERS];
	for (int i = 0; i < HOLDERS; i++) {
		failed[i] = 0;
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
	if (drain)
		REQUIRE(shmlog__reader_keep_raw(r) == 0);
	struct seen first = {0}, s = {0};
	read_some(r, drain, 64, &first);
	CHECK_EQ(first.n, HOLDERS + 1);
	CHECK(first.n && !strcmp(first.ev[first.n - 1], "mover 0 7"));

	/* the reader holds a record of holder 0's lane, the only one with
	 * anything new: handed out, that lane is read again in place (the
	 * drain: in a span, one lane alone holding records) */
	sem_post(&go[0]);
	sem_wait(&done);
	read_some(r, drain, 1, &s);
	CHECK_EQ(s.n, 1);
	unsigned mine = LANES;
	CHECK(sscanf(s.ev[0], "other x %u", &mine) == 1 && mine < LANES - 1);

	/* borrowed, in the shared lane the reader last found empty */
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", "1"), 0);
	/* holder 0 gives its lane back; the next records go there */
	sem_post(&quit[0]);
	pthread_join(t[0], NULL);
	CHECK_EQ(failed[0], 0);
	static const char *const later[] = {"2", "3", "4"};
	for (int i = 0; i < 3; i++)
		CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "mover", later[i]), 0);

	read_some(r, drain, 64, &s);
	char want[4][32];
	snprintf(want[0], sizeof(want[0]), "mover 1 %u", LANES - 1);
	for (int i = 1; i < 4; i++) /* the thread did move */
		snprintf(want[i], sizeof(want[0]), "mover %d %u", i + 1, mine);
	CHECK_EQ(s.n, 5);
	for (unsigned i = 1; i < 5 && i < s.n; i++)
		CHECK_STR(s.ev[i], want[i - 1]);

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
	moved(false);
	moved(true);
	return test_done("test_merge");
}
