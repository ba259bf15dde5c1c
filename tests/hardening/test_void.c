/* SPDX-License-Identifier: MIT */
/*
 * No abandoned record is taken for a new one.
 *
 * A reader copies a record, then re-reads the record's word and its
 * chunk's descriptor word: the copy is whole only because every path that
 * gives a chunk's records up changes the chunk's word first (ring.c,
 * LMM(ring:Q,R)), to an incarnation never used before. The paths: a lone
 * writer recycling its own oldest chunk, a writer taking the oldest chunk
 * of a writer above its share, a claim that gives a dead writer's broken
 * chunk up, a writer killed right after taking a chunk (before its head
 * moved in), another writer taking every chunk of a writer that died.
 * This test drives each one deterministically with a reader parked inside
 * the chunk that is given up, then checks that the reader
 * goes on with whole records only, in order, with every record accounted
 * for (written = read + overwritten + torn), that no chunk's word
 * ever comes back (incarnations only grow), and that no PAD or TORN
 * header has bytes of the chunk's earlier incarnation behind it
 * (hw_check_framing(); a writer killed with a record reserved in a
 * recycled chunk makes a TORN one over old bytes).
 */
#include <pthread.h>
#include <sys/wait.h>

#include "hostile.h"
#include "internal.h"
#include "selfcheck.h"

static const char *make(unsigned lanes)
{
	const char *b = test_buffer("void");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024; /* 16 chunks of 4 KiB */
	o.lanes = lanes;
	REQUIRE(shmlog_create(b, &o) == 0);
	return b;
}

/* The incarnation of every chunk seen so far: a chunk's word, once
 * changed, must name a newer incarnation. */
struct incs {
	uint64_t inc[64];
	unsigned n, regressed;
};

static void incs_sample(struct incs *s, shmlog_t *h)
{
	const struct shmlog__seg *g = &h->seg;
	s->n = g->fixed.chunk_count < 64 ? g->fixed.chunk_count : 64;
	for (unsigned i = 0; i < s->n; i++) {
		uint64_t inc = atomic_load(seg_chunk(g, i)) >> CHUNK_INC_SHIFT;
		if (inc < s->inc[i])
			s->regressed++;
		s->inc[i] = inc;
	}
}

struct tally {
	uint64_t read, bad, disorder;
	int64_t last[4];
};

/* Read what there is now; every record must check out and come in order
 * per writer. */
static void drain(shmlog_reader_t *r, struct tally *t, long most)
{
	struct shmlog_record rec;
	int ev;
	while (most-- && (ev = shmlog_reader_next(r, &rec, NULL)) !=
				 SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		unsigned w;
		uint64_t i;
		if (!sc_check(&rec, &w, &i) || w >= 4) {
			t->bad++;
			continue;
		}
		if ((int64_t)i <= t->last[w])
			t->disorder++;
		t->last[w] = (int64_t)i;
		t->read++;
	}
}

static void tally_init(struct tally *t)
{
	memset(t, 0, sizeof(*t));
	for (int w = 0; w < 4; w++)
		t->last[w] = -1;
}

/* Finish reading and check what the reader saw and counted. */
static void finish(const char *b, const char *what, shmlog_reader_t *r,
		   struct tally *t, const struct incs *s, uint64_t written)
{
	drain(r, t, -1);
	unsigned framed;
	CHECK_EQ(hw_check_framing(b, &framed), 0);
	struct shmlog_lane_stats sum = hw_sum(r);
	printf("%s: %llu written, %llu read, %llu overwritten, %llu torn, "
	       "%llu bad, %llu out of order, %u chunk words went back, "
	       "%u PAD and TORN headers with nothing behind them\n",
	       what, (unsigned long long)written,
	       (unsigned long long)t->read,
	       (unsigned long long)sum.overwritten,
	       (unsigned long long)sum.torn, (unsigned long long)t->bad,
	       (unsigned long long)t->disorder, s->regressed, framed);
	CHECK_EQ(t->bad, 0);
	CHECK_EQ(t->disorder, 0);
	CHECK_EQ(s->regressed, 0);
	CHECK_EQ(sum.written, written);
	CHECK_EQ(sum.written, sum.read + sum.overwritten + sum.torn);
	CHECK(t->read > 0);
}

/* A lone writer recycles every chunk, the one the reader sits in too. */
static void recycled_under_reader(void)
{
	const char *b = make(4);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	struct incs s = {0};
	struct tally t;
	tally_init(&t);
	CHECK_EQ(sc_write(h, 1, 0, 200), 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	drain(r, &t, 10); /* parked in the oldest chunk */
	uint64_t n = 200;
	for (int k = 0; k < 20; k++) { /* ~2 turnovers of the buffer */
		incs_sample(&s, h);
		CHECK_EQ(sc_write(h, 1, n, 100), 0);
		n += 100;
		drain(r, &t, 3);
	}
	incs_sample(&s, h);
	finish(b, "recycled under a reader", r, &t, &s, n);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

struct stealer {
	const char *b;
	long n;
};

static void *steal_thread(void *p)
{
	struct stealer *st = p;
	shmlog_t *h;
	if (shmlog_open(st->b, 0, &h) == 0) {
		sc_write(h, 2, 0, st->n);
		shmlog_close(h);
	}
	return NULL;
}

/* A writer holding the whole buffer has its oldest chunks taken by a
 * second writer (it is above its share), the reader parked in them. */
static void stolen_under_reader(void)
{
	const char *b = make(4);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	struct incs s = {0};
	struct tally t;
	tally_init(&t);
	CHECK_EQ(sc_write(h, 1, 0, 600), 0); /* all 16 chunks */
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	drain(r, &t, 10);
	incs_sample(&s, h);
	/* the second writer in a thread of its own: a lane of its own, kept
	 * (the handle stays open) while it writes half a buffer */
	struct stealer st = {b, 250};
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, steal_thread, &st) == 0);
	REQUIRE(pthread_join(th, NULL) == 0);
	incs_sample(&s, h);
	finish(b, "stolen under a reader", r, &t, &s, 600 + 250);
	CHECK(t.last[2] == 249); /* the taker's newest is there */
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

static int kill_point;

static void die_here(int point)
{
	if (point == kill_point)
		kill(getpid(), SIGKILL);
}

/* A writer process that fills buffer @b (600 records of writer 1: now
 * it recycles), then is killed at test point @point while writing its
 * records 600 to @end; returns once it is dead. */
static void killed_recycling(const char *b, int point, uint64_t end)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(1);
		sc_write(h, 1, 0, 600);
		kill_point = point;
		shmlog__testpoint_hook = die_here;
		sc_write(h, 1, 600, end);
		_exit(2); /* never reached the point */
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* A writer process that writes records 0 to @n - 1 of writer 1 into @b
 * and exits holding its lane (the next claim reaps it). */
static void died_holding_lane(const char *b, unsigned w, uint64_t n)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h) || sc_write(h, w, 0, n))
			_exit(1);
		_exit(0);
	}
	CHECK_EQ(hw_reap(pid), 0);
}

/* A writer killed right after it took a chunk (12: its word changed,
 * head still behind; 13: head moved in, nothing written) or half-way
 * through ending the last one (2, 10, 11); the next writer repairs the
 * lane and recycles on, past the reader parked in the chunk taken. */
static void killed_taking_a_chunk(int point)
{
	const char *b = make(1);
	shmlog_reader_t *r;
	killed_recycling(b, point, 1000);
	struct shmlog_info in;
	REQUIRE(shmlog_stat(b, &in) == 0);
	uint64_t written = in.written;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct tally t;
	tally_init(&t);
	drain(r, &t, 5);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	struct incs s = {0};
	incs_sample(&s, h);
	CHECK_EQ(sc_write(h, 3, 0, 1500), 0);
	incs_sample(&s, h);
	char what[64];
	snprintf(what, sizeof(what), "killed at point %d taking a chunk",
		 point);
	finish(b, what, r, &t, &s, written + 1500);
	CHECK_EQ(t.last[3], 1499);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A dead writer's OPEN chunk with a broken chain (a record word
 * scribbled over): the claim gives the chunk up as it is and the lane goes
 * on in a new one; the reader steps over the damage, counts it, and reads
 * on. */
static void broken_chunk_given_up(void)
{
	const char *b = make(1);
	died_holding_lane(b, 1, 30);
	char path[512];
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	size_t size;
	unsigned char *base = hw_map_rw(path, &size);
	REQUIRE(base);
	struct shmlog__fixed f;
	memcpy(&f, base, sizeof(f));
	long offs[64];
	size_t n = hw_lane_records(base, &f, 0, offs, NULL, 64);
	REQUIRE(n > 10);
	/* the word of a record in the middle of the chain */
	atomic_store((_Atomic uint64_t *)(void *)(base + offs[n / 2]),
		     0x5a5a5a5a5a5a5a58ull);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct tally t;
	tally_init(&t);
	drain(r, &t, 3);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	struct incs s = {0};
	incs_sample(&s, h);
	CHECK_EQ(sc_write(h, 3, 0, 1), 0); /* the claim */
	/* the broken chunk went to the history (LIVE), and the lane goes on
	 * in another chunk */
	unsigned broken = (unsigned)((offs[n / 2] - (long)f.data_off) /
				     (long)f.chunk_size);
	uint64_t bw = atomic_load(hw_desc(base, &f, broken));
	CHECK(chunk_valid(&f, bw) && chunk_lane(bw) == 0 &&
	      chunk_state(bw) == CHUNK_LIVE);
	bool elsewhere = false;
	for (unsigned i = 0; i < f.chunk_count; i++) {
		uint64_t d = atomic_load(hw_desc(base, &f, i));
		elsewhere |= i != broken && chunk_valid(&f, d) &&
			     chunk_lane(d) == 0 && chunk_state(d) == CHUNK_OPEN;
	}
	CHECK(elsewhere);
	drain(r, &t, -1); /* over the damage, before it is recycled */
	CHECK(hw_sum(r).corrupt > 0);
	CHECK_EQ(sc_write(h, 3, 1, 699), 0); /* recycle it all */
	incs_sample(&s, h);
	drain(r, &t, -1);
	struct shmlog_lane_stats sum = hw_sum(r);
	printf("broken chunk given up: %llu read, %llu bad, %llu out of "
	       "order, %llu corrupt places, %u chunk words went back\n",
	       (unsigned long long)t.read, (unsigned long long)t.bad,
	       (unsigned long long)t.disorder,
	       (unsigned long long)sum.corrupt, s.regressed);
	CHECK_EQ(t.bad, 0);
	CHECK_EQ(t.disorder, 0);
	CHECK_EQ(s.regressed, 0);
	CHECK_EQ(t.last[3], 699);
	CHECK_EQ(sum.written, sum.read + sum.overwritten + sum.torn);
	munmap(base, size);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A writer that has died (its lane reaped by the next writer's claim)
 * and a reader parked in its last chunk, the one its lane's head is in;
 * then a second writer dies, so that the first one's chunks are the
 * oldest of the departed's and above their bound (1 chunk of 16): a
 * flooder takes every chunk of the first. No later record of the lane
 * will show the gap; the reader must count the lost records all the same
 * (this once went uncounted). */
static void dead_taken_under_reader(void)
{
	const char *b = make(4);
	died_holding_lane(b, 1, 40);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct tally t;
	tally_init(&t);
	/* parked in its last chunk: the 37th record read, the cursor after
	 * it, the 38th to 40th ahead of it in the chunk the lane's head is
	 * in */
	drain(r, &t, 37);
	died_holding_lane(b, 0, 40);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	struct incs s = {0};
	incs_sample(&s, h);
	CHECK_EQ(sc_write(h, 2, 0, 600), 0); /* takes every chunk of 1 */
	incs_sample(&s, h);
	finish(b, "a dead writer's last chunk taken under a reader", r, &t, &s,
	       40 + 40 + 600);
	CHECK_EQ(t.last[1], 36); /* its newest records were taken */
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A writer killed with a record reserved and not written (test point 1),
 * in a chunk it recycled: the claimer repairs the record as TORN over
 * bytes of the chunk's earlier incarnation. Its body is zeroed, as a
 * PAD's rest of chunk is (hw_check_framing()): a word moved into it, or
 * given another state, frames nothing old. */
static void torn_over_old_bytes(void)
{
	const char *b = make(1);
	killed_recycling(b, 1, 601);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	CHECK_EQ(sc_write(h, 3, 0, 1), 0); /* the claim repairs the record */
	unsigned framed;
	CHECK_EQ(hw_check_framing(b, &framed), 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct tally t;
	tally_init(&t);
	drain(r, &t, -1);
	struct shmlog_lane_stats sum = hw_sum(r);
	printf("torn over old bytes: %llu torn, %u PAD and TORN headers "
	       "with nothing behind them\n",
	       (unsigned long long)sum.torn, framed);
	CHECK_EQ(sum.torn, 1);
	CHECK(framed > 0);
	CHECK_EQ(t.bad, 0);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

int main(void)
{
	recycled_under_reader();
	stolen_under_reader();
	int points[] = {2, 10, 11, 12, 13};
	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++)
		killed_taking_a_chunk(points[i]);
	broken_chunk_given_up();
	dead_taken_under_reader();
	torn_over_old_bytes();
	return test_done("test_void");
}
