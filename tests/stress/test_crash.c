/* SPDX-License-Identifier: MIT */
/*
 * Writers killed mid-write (SIGKILL).
 *
 * Part 1, every step: a writer is killed at each test point of the write
 * protocol (ring.c, TESTPOINT 1-6) and of the switch to a new chunk
 * (TESTPOINT 2 and 10-13: the PAD, the chunk given to the history, the
 * compare-and-swap that takes the next chunk, the lane's head moved into
 * it), on ordinary records and on records that take a new chunk, in a
 * one-lane buffer so that the next writer must take over the dead writer's
 * lane and repair it. Then the same again with the writer that takes over
 * killed too, inside its claim and its repair (test points 7-9), before a
 * third one repairs the lane. Every record committed before the kill is
 * read intact, the dead writer's history is kept, the interrupted record is
 * either published whole (killed after its commit) or counted torn once,
 * never shown half-written, and the next writer is not held up.
 *
 * Part 2, at random: WRITERS processes write self-describing records into
 * as many lanes, and are killed at random and replaced KILLS times, while
 * the reader follows. No record read is damaged, each writer's records come
 * in order, and written = read + overwritten + torn per lane. Then, with
 * every writer dead, a new one takes the whole buffer: no chunk leaked.
 *
 * Part 3: a reader that lags a lane whose history was all taken, up to an
 * empty chunk at the lane's head, counts what it lost (books balance).
 *
 * usage: test_crash [KILLS]; environment: CRASH_SEED (which writer each
 * kill picks, and when: 12345 by default), CRASH_RANDOM_ONLY (part 2 and 3
 * only)
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "internal.h"
#include "selfcheck.h"
#include "stall.h"
#include "test.h"

#define WRITERS 8

/* The writer's test points: inside a record (1, 3-6) and inside the
 * switch to a new chunk (2, 10-13). */
static const int points[] = {1, 2, 3, 4, 5, 6, 10, 11, 12, 13};
#define POINTS (sizeof(points) / sizeof(points[0]))

static int kill_at;
static bool want_switch; /* kill only in a write that takes a new chunk */
static bool switching; /* the write under way took a new chunk */

static void die_here(int point)
{
	if (point == 2 || point >= 10)
		switching = true;
	if (point == kill_at && (!want_switch || switching || point > 6))
		kill(getpid(), SIGKILL);
}

struct seen {
	uint64_t bad;
	int64_t last_i[3]; /* newest record read of writers 1 and 2 */
	uint64_t count[3];
	struct shmlog_lane_stats sum;
};

/* Read everything now in @b and sum up the lane counters. */
static void read_all(const char *b, struct seen *s)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev;
	memset(s, 0, sizeof(*s));
	s->last_i[1] = s->last_i[2] = -1;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		unsigned w;
		uint64_t i;
		if (!sc_check(&rec, &w, &i) || w < 1 || w > 2 ||
		    (int64_t)i <= s->last_i[w]) {
			s->bad++;
			continue;
		}
		s->last_i[w] = (int64_t)i;
		s->count[w]++;
	}
	test_sum_lanes(r, &s->sum);
	shmlog_reader_close(r);
}

/* Kill a writer at test point @point of its first write from record
 * @arm on (points 2 and 10-13 are reached only when a write takes a new
 * chunk; with @wrap, every point is hit in such a write). With @claim_point
 * (7-9), the first writer to take the lane over is killed at that point of
 * its claim and repair, and another one repairs the lane after it. */
static void kill_at_step(int point, int arm, bool wrap, int claim_point)
{
	const char *b = test_buffer("step");
	if (getenv("CRASH_VERBOSE"))
		fprintf(stderr, "point %d arm %d wrap %d claim %d\n", point,
			arm, wrap, claim_point);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.lanes = 1; /* the next writer must take over the dead one's lane */
	REQUIRE(shmlog_create(b, &o) == 0);
	volatile long *cur = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(cur != MAP_FAILED);

	pid_t pid = fork();
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(1);
		char tag[16], msg[512];
		int prio;
		for (long i = 0; i < 1000000; i++) {
			*cur = i;
			switching = false;
			if (i == arm) {
				kill_at = point;
				want_switch = wrap;
				shmlog__testpoint_hook = die_here;
			}
			size_t len = sc_make(1, (uint64_t)i, tag, &prio, msg);
			shmlog_write_n(h, prio, tag, msg, len);
		}
		_exit(2); /* the test point was never reached */
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	long j = *cur; /* the record being written when killed */

	/* after the kill, before anyone repairs */
	struct seen s;
	read_all(b, &s);
	/* record j reserved (not killed in the switch before it), committed,
	 * published (head stored: visible before any repair) */
	bool begun = point != 2 && point < 10;
	bool whole = point == 5 || point == 6;
	bool published = point == 6;
	long held = (long)s.count[1]; /* the dead writer's history */
	CHECK_EQ(s.bad, 0);
	CHECK_EQ(s.last_i[1], published ? j : j - 1);
	CHECK(held > 0 || j == 0);
	CHECK_EQ(s.sum.torn, begun && !published ? 1 : 0);
	CHECK_EQ(s.sum.written, j + (begun ? 1 : 0));
	CHECK_EQ(s.sum.written, s.sum.read + s.sum.overwritten + s.sum.torn);

	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	char tag[16], msg[512];
	int prio;
	if (claim_point) {
		/* a writer dies in the middle of taking the lane over */
		pid_t c = fork();
		if (c == 0) {
			kill_at = claim_point;
			want_switch = false;
			shmlog__testpoint_hook = die_here;
			size_t len = sc_make(3, 0, tag, &prio, msg);
			shmlog_write_n(h, prio, tag, msg, len);
			_exit(3); /* the test point was never reached */
		}
		REQUIRE(waitpid(c, &st, 0) == c);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	/* new writers take over the lanes at once; the one that gets the
	 * dead writer's lane repairs it, and nobody waits for the dead
	 * writer: none of them stalls (stall.h) a second in its writes (exit
	 * 2), however long the machine takes to run them */
	for (int t = 0; t < 4; t++) {
		pid_t c = fork();
		if (c == 0) {
			struct stall_mark m0 = stall_mark();
			for (int i = 0; i < 10; i++) {
				size_t len = sc_make(2, (uint64_t)(t * 10 + i),
						     tag, &prio, msg);
				if (shmlog_write_n(h, prio, tag, msg, len))
					_exit(1);
			}
			struct stall_mark m1 = stall_mark();
			_exit(stall_ns(&m0, &m1) < 1000000000 ? 0 : 2);
		}
		REQUIRE(waitpid(c, &st, 0) == c);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	shmlog_close(h);
	read_all(b, &s);
	CHECK_EQ(s.bad, 0);
	CHECK_EQ(s.last_i[1], whole ? j : j - 1);
	CHECK_EQ(s.count[2], 40);
	CHECK_EQ(s.sum.torn, begun && !whole ? 1 : 0);
	CHECK_EQ(s.sum.written, j + (begun ? 1 : 0) + 40);
	CHECK_EQ(s.sum.written, s.sum.read + s.sum.overwritten + s.sum.torn);
	/* the history survives the repair: only what the 40 new records
	 * overwrote is gone (they take less than half a lane) */
	CHECK((long)s.count[1] >= held / 3);
	struct shmlog_info in;
	REQUIRE(shmlog_stat(b, &in) == 0);
	CHECK_EQ(in.torn, begun && !whole ? 1 : 0); /* repaired once, once */
	munmap((void *)cur, 4096);
	shmlog_remove(b);
}

/* A reader that lags a lane whose history was all taken, up to a chunk
 * its writer took and died in before writing there (test point 13: the
 * lane's head at the chunk's base): the reader's cursor gets to head by
 * entering that empty chunk, and no record after the gap will ever number
 * the records it lost. They must be counted all the same: a reader that
 * never waits, drained until SHMLOG_EV_NONE, balances every lane's books
 * (written = read + overwritten + torn + skipped; shmlog.h). */
static void lost_up_to_empty_chunk(bool read_first)
{
	const char *b = test_create("empty", 64 * 1024, 2);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	char tag[16], msg[512];
	int prio;
	/* the first writer fills a few chunks of its lane, and dies just
	 * after it moved its head into the next one */
	pid_t pid = fork();
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(1);
		for (long i = 0; i < 1000000; i++) {
			switching = false;
			if (i == 60) {
				kill_at = 13;
				want_switch = true;
				shmlog__testpoint_hook = die_here;
			}
			size_t len = sc_make(1, (uint64_t)i, tag, &prio, msg);
			shmlog_write_n(h, prio, tag, msg, len);
		}
		_exit(2);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	struct shmlog_record rec;
	struct shmlog_lost l;
	uint64_t read = 0;
	if (read_first) /* the cursor is in the first chunk, not before it */
		read += shmlog_reader_next(r, &rec, &l) == SHMLOG_EV_RECORD;
	/* another writer reaps the dead lane (its chunks are nobody's share
	 * now) and takes its chunks, oldest first, up to the empty one */
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	const struct shmlog__fixed *f = &h->seg.fixed;
	uint64_t *per = calloc(2 * f->lane_count, sizeof(*per));
	REQUIRE(per);
	unsigned dead = 0; /* the first writer's lane: the one with records */
	shmlog__space_used(&h->seg, per);
	while (dead < f->lane_count && per[f->lane_count + dead] == 0)
		dead++;
	REQUIRE(dead < f->lane_count);
	CHECK(per[f->lane_count + dead] >= 3); /* a history to lose */
	for (uint64_t i = 0; i < 100000; i++) {
		memset(per, 0, 2 * f->lane_count * sizeof(*per));
		shmlog__space_used(&h->seg, per);
		if (per[f->lane_count + dead] <= 1)
			break;
		size_t len = sc_make(2, i, tag, &prio, msg);
		CHECK_EQ(shmlog_write_n(h, prio, tag, msg, len), 0);
	}
	CHECK_EQ(per[f->lane_count + dead], 1);
	/* the chunk left holds no record: it begins at the lane's head */
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load(seg_chunk(&h->seg, i));
		if (chunk_valid(f, w) && chunk_lane(w) == dead)
			CHECK_EQ(chunk_base(f, w),
				 atomic_load(&seg_lane(&h->seg, dead)->head));
	}
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, &l)) != SHMLOG_EV_NONE)
		read += ev == SHMLOG_EV_RECORD;
	struct shmlog_lane_stats sum;
	test_sum_lanes(r, &sum); /* every lane's books balance */
	CHECK_EQ(sum.read, read);
	struct shmlog_lane_stats d;
	CHECK_EQ(shmlog_reader_lane_stats(r, dead, &d), 0);
	CHECK(d.written >= 60);
	CHECK_EQ(d.read, read_first ? 1 : 0);
	CHECK_EQ(d.overwritten, d.written - d.read);
	free(per);
	shmlog_close(h);
	shmlog_reader_close(r);
	shmlog_remove(b);
}

/* ---- part 2: random kills ---- */

static void random_writer(const char *b, unsigned id)
{
	shmlog_t *h;
	if (shmlog_open(b, 0, &h))
		_exit(1);
	char tag[16], msg[512];
	int prio;
	for (uint64_t i = 0;; i++) {
		size_t len = sc_make(id, i, tag, &prio, msg);
		shmlog_write_n(h, prio, tag, msg, len);
	}
}

static pid_t spawn(const char *b, unsigned id)
{
	pid_t pid = fork();
	if (pid == 0)
		random_writer(b, id);
	return pid;
}

/* Every writer of @b is dead: a new one, writing two buffers' worth,
 * ends up holding every chunk but those the departed keep (the dead
 * lanes were reaped, no chunk leaked: every chunk is held by a lane),
 * all of them full of its records but the one it fills. */
static void whole_buffer_after(const char *b)
{
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	const struct shmlog__fixed *f = &h->seg.fixed;
	uint64_t capacity = (uint64_t)f->chunk_count * f->chunk_size;
	char tag[16], msg[512];
	int prio;
	for (uint64_t i = 0, bytes = 0; bytes < 2 * capacity; i++) {
		size_t len = sc_make(WRITERS + 1, i, tag, &prio, msg);
		CHECK_EQ(shmlog_write_n(h, prio, tag, msg, len), 0);
		bytes += len;
	}
	uint64_t *per = calloc(2 * f->lane_count, sizeof(*per));
	REQUIRE(per);
	shmlog__space_used(&h->seg, per);
	uint64_t most = 0, chunks = 0, held = 0;
	for (unsigned l = 0; l < f->lane_count; l++) {
		if (per[l] > most)
			most = per[l];
		chunks = per[f->lane_count + l] > chunks ? per[f->lane_count + l]
							 : chunks;
		held += per[f->lane_count + l];
	}
	printf("after every writer died: a new writer holds %llu of %u chunks, "
	       "%.1f%% of the capacity\n",
	       (unsigned long long)chunks, f->chunk_count,
	       100.0 * (double)most / (double)capacity);
	CHECK_EQ(held, f->chunk_count);
	/* the departed keep at most 1/16 (space.c, DEPARTED_DIV); the rest
	 * is the writer's, all full but the chunk it fills */
	uint64_t departed = f->chunk_count / 16;
	CHECK(chunks >= f->chunk_count - departed);
	CHECK(most >= (f->chunk_count - departed - 1) * f->chunk_size);
	free(per);
	shmlog_close(h);
}

/* Has a claimer repaired a write that a kill cut short? */
static bool kill_landed(const char *b)
{
	struct shmlog_info in;
	return shmlog_stat(b, &in) == 0 && in.torn > 0;
}

/* @kills writers killed at random instants; where none of them landed
 * inside a write (a short window, fewer and fewer instructions wide), a
 * hundred more at a time, up to 8 times as many, so that the repair path
 * is always exercised. */
static void random_kills(long kills)
{
	const char *b = test_create("kills", 256 * 1024, WRITERS);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);

	unsigned next_id = 0;
	pid_t pids[WRITERS];
	for (int k = 0; k < WRITERS; k++)
		pids[k] = spawn(b, next_id++);
	long limit = kills * 8;
	unsigned max_ids = (unsigned)limit + WRITERS + 1;
	int64_t *last = malloc(max_ids * sizeof(*last));
	REQUIRE(last);
	for (unsigned k = 0; k < max_ids; k++)
		last[k] = -1;

	const char *seed_env = getenv("CRASH_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 12345;
	uint64_t read = 0, bad = 0, disorder = 0;
	long done = 0;
	long until_kill = 1;
	while (done < limit) {
		struct shmlog_record rec;
		int ev = shmlog_reader_next(r, &rec, NULL);
		if (ev == SHMLOG_EV_RECORD) {
			unsigned w;
			uint64_t i;
			if (!sc_check(&rec, &w, &i) || w >= max_ids) {
				bad++;
			} else {
				if ((int64_t)i <= last[w] && !disorder++)
					fprintf(stderr,
						"writer %u: record %llu read "
						"after its record %lld (lane "
						"%u)\n",
						w, (unsigned long long)i,
						(long long)last[w], rec.lane);
				last[w] = (int64_t)i;
				read++;
			}
		}
		if (ev == SHMLOG_EV_RECORD && --until_kill > 0)
			continue;
		if (done >= kills && (done - kills) % 100 == 0 && kill_landed(b))
			break;
		/* kill one at random, replace it */
		seed = sc_mix(seed);
		int k = (int)(seed % WRITERS);
		kill(pids[k], SIGKILL);
		waitpid(pids[k], NULL, 0);
		pids[k] = spawn(b, next_id++);
		done++;
		until_kill = 1 + (long)(sc_mix(seed) % 200);
	}
	for (int k = 0; k < WRITERS; k++) {
		kill(pids[k], SIGKILL);
		waitpid(pids[k], NULL, 0);
	}
	struct shmlog_record rec;
	struct shmlog_lost l;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, &l)) != SHMLOG_EV_NONE) {
		unsigned w;
		uint64_t i;
		if (ev != SHMLOG_EV_RECORD)
			continue;
		if (!sc_check(&rec, &w, &i) || w >= max_ids)
			bad++;
		else
			read++;
	}
	struct shmlog_lane_stats sum;
	test_sum_lanes(r, &sum);
	uint64_t torn = sum.torn, written = sum.written;
	struct shmlog_info in;
	REQUIRE(shmlog_stat(b, &in) == 0);
	printf("random kills: %ld kills, %llu written, %llu read, %llu torn "
	       "seen by the reader, %llu repaired by writers, %llu bad, %llu "
	       "out of order\n",
	       done, (unsigned long long)written, (unsigned long long)read,
	       (unsigned long long)torn, (unsigned long long)in.torn,
	       (unsigned long long)bad, (unsigned long long)disorder);
	CHECK(in.torn > 0); /* some kills did land inside a write */
	CHECK_EQ(bad, 0);
	CHECK_EQ(disorder, 0);
	CHECK(read > 0);
	free(last);
	shmlog_reader_close(r);
	whole_buffer_after(b);
	shmlog_remove(b);
}

int main(int argc, char **argv)
{
	long kills = argc > 1 ? atol(argv[1]) : 300;
	lost_up_to_empty_chunk(false);
	lost_up_to_empty_chunk(true);
	/* CRASH_RANDOM_ONLY: parts 2 and 3 alone, to run them many times */
	bool steps = !getenv("CRASH_RANDOM_ONLY");
	for (size_t p = 0; steps && p < POINTS; p++)
		for (int arm = 0; arm < 900; arm += 97) {
			kill_at_step(points[p], arm, false, 0);
			kill_at_step(points[p], arm, true, 0);
		}
	/* the writer taking the lane over dies too, in its claim (7) or its
	 * repair (8, 9), after the first died on any step */
	for (int claim = 7; steps && claim <= 9; claim++)
		for (size_t p = 0; p < POINTS; p++) {
			/* 8 and 9 are reached only if there is a record to
			 * repair: the first writer died inside it */
			int point = points[p];
			if (claim > 7 && (point == 2 || point >= 5))
				continue;
			for (int arm = 0; arm < 900; arm += 299) {
				kill_at_step(point, arm, false, claim);
				kill_at_step(point, arm, true, claim);
			}
		}
	random_kills(kills);
	return test_done("test_crash");
}
