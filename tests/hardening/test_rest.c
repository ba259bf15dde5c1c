/* SPDX-License-Identifier: MIT */
/*
 * A follower that rests still reads everything in the end.
 *
 * A follower overtaken by a writer at full speed leaves that lane alone
 * for a while (shmlog_reader_wait(), shmlog.h): meanwhile its
 * shmlog_reader_next() says SHMLOG_EV_NONE with records still to come. A
 * program that stops at that first NONE after the writers are done ends
 * with records it never read, its books not balanced (a test once did,
 * and failed one CI run in many). shmlog.h names the one way to know:
 * NONE, then a wait that only looks (timeout 0) finds nothing; that wait
 * also ends every rest.
 *
 * One process, one writer, one follower, taking turns (no timing on
 * either side decides anything but whether the follower rests): the
 * follower reads a record, the writer writes laps of its lane with large
 * records (many bytes a nanosecond, well above the rest's threshold), the
 * follower reads again, is overtaken, and may rest. Each round ends with
 * the writer's last record, numbered; the follower drains the shmlog.h
 * way and must then hold that record, every record it got in order, and
 * books that balance exactly. A round where the first NONE came with
 * records still pending is one where the follower rested (or its look
 * was not yet due); the test needs at least one such round, else it
 * could not have failed (a machine too slow for the threshold: skipped,
 * 77). Without the wait's end of rests most rounds fail.
 *
 * A second follower, made never to rest (shmlog__reader_no_rest(), the
 * archiver's), reads beside it: it must never rest where the first one
 * did, and its books must hold the same way.
 *
 * usage: test_rest [ROUNDS]
 */
#include "hostile.h"
#include "reader.h"
#include "reader_raw.h"

#define MSG 3000 /* bytes a record: the writer moves ~10 bytes a ns */
#define LAPS 4

struct rec_id {
	uint32_t round, index;
};

static void write_one(shmlog_t *h, uint32_t round, uint32_t index)
{
	static char msg[MSG];
	struct rec_id id = {round, index};
	memset(msg, 'a' + (int)(index % 26), sizeof(msg));
	memcpy(msg, &id, sizeof(id));
	REQUIRE(shmlog_write_n(h, SHMLOG_INFO, "rest", msg, sizeof(msg)) == 0);
}

struct books {
	struct rec_id last;
	uint64_t got, disorder, bad;
};

/* next() until NONE; true if it returned anything */
static bool read_some(shmlog_reader_t *r, struct books *b)
{
	struct shmlog_record rec;
	struct shmlog_lost lost;
	bool any = false;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, &lost)) > 0) {
		any = true;
		if (ev != SHMLOG_EV_RECORD)
			continue;
		struct rec_id id;
		if (rec.msg_len != MSG) {
			b->bad++;
			continue;
		}
		memcpy(&id, rec.msg, sizeof(id));
		if (id.round < b->last.round ||
		    (id.round == b->last.round && id.index <= b->last.index &&
		     b->got))
			b->disorder++;
		b->last = id;
		b->got++;
	}
	REQUIRE(ev == SHMLOG_EV_NONE);
	return any;
}

/* Is @r resting on a lane now (cursor_rest())? */
static bool resting(const shmlog_reader_t *r)
{
	for (unsigned k = 0; k < r->seg.fixed.lane_count; k++)
		if (r->lanes[k].rest_until_ns > 1)
			return true;
	return false;
}

/* Records the reader has not consumed yet: written - read - overwritten
 * - torn - skipped, over every lane. */
static uint64_t pending(shmlog_reader_t *r)
{
	uint64_t p = 0;
	for (unsigned k = 0; k < shmlog_reader_lanes(r); k++) {
		struct shmlog_lane_stats st;
		REQUIRE(shmlog_reader_lane_stats(r, k, &st) == 0);
		p += st.written - st.read - st.overwritten - st.torn -
		     st.skipped;
	}
	return p;
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 40;
	const char *b = test_create("rest", 256 * 1024, 2);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	shmlog_reader_t *k; /* the one that never rests */
	REQUIRE(shmlog_reader_open(b, 0, &k) == 0);
	REQUIRE(shmlog__reader_no_rest(k) == 0);
	struct shmlog_info in;
	REQUIRE(shmlog_stat(b, &in) == 0);
	/* records in a lap of the writer's lane */
	uint32_t lap = (uint32_t)(in.capacity / in.lanes / MSG) + 1;

	struct books bk, kb;
	memset(&bk, 0, sizeof(bk));
	memset(&kb, 0, sizeof(kb));
	unsigned rested = 0, looks = 0, r_rests = 0, k_rests = 0;
	shmlog_reader_wait(r, 0); /* a follower from now on */
	shmlog_reader_wait(k, 0);
	for (uint32_t round = 1; round <= rounds; round++) {
		uint32_t index = 0;
		/* twice overtaken: the second time is judged for speed */
		for (int turn = 0; turn < 3; turn++) {
			write_one(h, round, index++);
			read_some(r, &bk);
			read_some(k, &kb);
			r_rests += resting(r);
			k_rests += resting(k);
			for (uint32_t i = 0; i < lap * LAPS; i++)
				write_one(h, round, index++);
		}
		write_one(h, round, index); /* the round's last */
		read_some(r, &bk);
		read_some(k, &kb);
		r_rests += resting(r);
		k_rests += resting(k);
		if (pending(r))
			rested++; /* NONE, records still to come */
		/* shmlog.h: NONE, then a wait that only looks finds nothing */
		unsigned bound = 1000;
		while (shmlog_reader_wait(r, 0) == 0 && bound--) {
			looks++;
			read_some(r, &bk);
		}
		CHECK(bound <= 1000); /* the loop ended by finding nothing */
		CHECK_EQ(bk.last.round, round);
		CHECK_EQ(bk.last.index, index);
		CHECK_EQ(pending(r), 0);
		bound = 1000;
		while (shmlog_reader_wait(k, 0) == 0 && bound--)
			read_some(k, &kb);
		CHECK(bound <= 1000);
		CHECK_EQ(kb.last.round, round);
		CHECK_EQ(kb.last.index, index);
		CHECK_EQ(pending(k), 0);
	}
	struct shmlog_lane_stats sum = hw_sum(r);
	CHECK_EQ(bk.bad, 0);
	CHECK_EQ(bk.disorder, 0);
	CHECK_EQ(sum.torn, 0);
	CHECK_EQ(sum.read, bk.got);
	CHECK_EQ(sum.written, sum.read + sum.overwritten);
	struct shmlog_lane_stats ksum = hw_sum(k);
	CHECK_EQ(kb.bad, 0);
	CHECK_EQ(kb.disorder, 0);
	CHECK_EQ(ksum.read, kb.got);
	CHECK_EQ(ksum.written, ksum.read + ksum.overwritten);
	/* where the first follower rested, the second one did not */
	CHECK_EQ(k_rests, 0);
	printf("rest: %u rounds, %u with a rest pending at the first NONE, "
	       "%u looks to finish; %llu records read, %llu overwritten; "
	       "resting after %u reads, the one that never rests after %u "
	       "(%llu read)\n",
	       rounds, rested, looks, (unsigned long long)sum.read,
	       (unsigned long long)sum.overwritten, r_rests, k_rests,
	       (unsigned long long)ksum.read);
	shmlog_reader_close(k);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
	if (!test_failures && (!rested || !r_rests)) {
		printf("test_rest: no round rested (a writer below the rest's "
		       "threshold on this machine): skipped\n");
		return 77;
	}
	return test_done("test_rest");
}
