/* SPDX-License-Identifier: MIT */
/*
 * Where writers' chunks lie in the buffer. Writers that start together
 * take never-used chunks in stretches, each going on into the chunk after
 * its last (the space policy in docs/DESIGN.md), not in turn chunk by
 * chunk: two writers' chunks interleaved one by one cost each of them
 * about a tenth of its rate. Two handles on one buffer, written in turn
 * from one thread, are two writers that start together, call for call.
 *
 * A newcomer to a full buffer takes its share from a writer that keeps
 * recycling its own oldest chunks: it takes a few ahead (reserved chunks,
 * CHUNK_RESV) so that the two do not take that writer's chunks in turn.
 * Reserved chunks are given back when their lane is released, or claimed
 * after its writer died.
 *
 * Reserved chunks hold no record, yet count in their lane's share: a lane
 * above its share gives them up before any LIVE chunk (its history), and
 * a taker that reserved from a lane others took from meanwhile gives back
 * what would leave that lane under its share.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "shmlog.h"
#include "test.h"

/* Per lane of @name: its chunks and its runs of neighbouring chunks
 * (reserved ones count as the lane's); returns the reserved chunks. */
static unsigned layout(const char *name, unsigned *chunks, unsigned *runs,
		       unsigned *lanes)
{
	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(name, 0, &s) == 0);
	*lanes = s.fixed.lane_count;
	unsigned prev = UINT32_MAX, resv = 0;
	for (unsigned i = 0; i < s.fixed.chunk_count; i++) {
		uint64_t w = atomic_load(seg_chunk(&s, i));
		resv += chunk_held(&s.fixed, w) && chunk_state(w) == CHUNK_RESV;
		unsigned l = w ? chunk_lane(w) : UINT32_MAX;
		if (l < *lanes) {
			chunks[l]++;
			runs[l] += l != prev;
		}
		prev = l;
	}
	shmlog__seg_detach(&s);
	return resv;
}

/* The number of reserved chunks in buffer @b. */
static unsigned reserved(const char *b)
{
	unsigned chunks[SHMLOG_LANES_MAX] = {0}, runs[SHMLOG_LANES_MAX] = {0};
	unsigned lanes;
	return layout(b, chunks, runs, &lanes);
}

/* @n writers hold the chunks of buffer @b, each its share less a chunk
 * or two, in at most @max_runs runs each. */
static void check_rows(const char *b, unsigned n, unsigned max_runs,
		       const char *what)
{
	unsigned chunks[SHMLOG_LANES_MAX] = {0}, runs[SHMLOG_LANES_MAX] = {0};
	unsigned lanes, holders = 0;
	layout(b, chunks, runs, &lanes);
	for (unsigned l = 0; l < lanes; l++) {
		if (!chunks[l])
			continue;
		holders++;
		if (runs[l] > max_runs)
			fprintf(stderr, "%s, %u writers: lane %u holds %u chunks "
					"in %u runs, want at most %u\n",
				what, n, l, chunks[l], runs[l], max_runs);
		CHECK(runs[l] <= max_runs);
		CHECK(chunks[l] >= 64 / n - 2);
	}
	CHECK_EQ(holders, n);
}

/* A new buffer of 1 MiB (64 chunks of 16 KiB) and 16 lanes. */
static const char *new_buffer(const char *stem)
{
	const char *b = test_buffer(stem);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 1 << 20;
	o.lanes = 16;
	REQUIRE(shmlog_create(b, &o) == 0);
	return b;
}

static void write_turns(shmlog_t **h, unsigned n, long recs);

/* A new buffer that a writer, *@h, has filled four times over. */
static const char *filled(const char *stem, shmlog_t **h)
{
	const char *b = new_buffer(stem);
	REQUIRE(shmlog_open(b, 0, h) == 0);
	write_turns(h, 1, 4 * (1 << 20) / 256);
	return b;
}

/* A thread that opens @arg (a buffer's name) and writes one record: it
 * claims a lane, and reaps dead writers' lanes on the way. */
static void *claim_one(void *arg)
{
	shmlog_t *h;
	if (shmlog_open(arg, 0, &h) == 0) {
		CHECK_EQ(shmlog_write_n(h, SHMLOG_INFO, "claim", "x", 1), 0);
		shmlog_close(h);
	}
	return NULL;
}

/* @n writers written in turn, a record each, until the buffer has been
 * filled about twice: each holds its share in at most @max_runs runs. */
static void together(unsigned n, unsigned max_runs)
{
	const char *b = new_buffer("layout");
	shmlog_t *h[8];
	for (unsigned k = 0; k < n; k++)
		REQUIRE(shmlog_open(b, 0, &h[k]) == 0);
	write_turns(h, n, 2 * (1 << 20) / 256);
	check_rows(b, n, max_runs, "writers that start together");
	for (unsigned k = 0; k < n; k++)
		shmlog_close(h[k]);
	CHECK_EQ(reserved(b), 0); /* released: none */
	shmlog_remove(b);
}

/* Write @recs records of 256 bytes through @h[@n], in turn. */
static void write_turns(shmlog_t **h, unsigned n, long recs)
{
	char msg[200];
	memset(msg, 'x', sizeof(msg));
	for (long i = 0; i < recs; i++)
		CHECK_EQ(shmlog_write_n(h[i % n], SHMLOG_INFO, "layout", msg,
					sizeof(msg)),
			 0);
}

/* A writer fills the buffer several times over; then a newcomer writes
 * in turn with it until both have written the buffer's capacity again:
 * each holds about half, in a few runs (taking the first writer's oldest
 * chunk at each switch, while it recycles the next, gave 32 runs each). */
static void newcomer(void)
{
	shmlog_t *h[3];
	const char *b = filled("newcomer", &h[0]);
	REQUIRE(shmlog_open(b, 0, &h[1]) == 0);
	write_turns(h, 2, 4 * (1 << 20) / 256);
	check_rows(b, 2, 8, "a newcomer");
	/* and a third, to two writers that hold a share each: each keeps
	 * its share; its rows are shorter (taken from two, each a third
	 * above its share), and the two lose theirs into pieces where the
	 * newcomer's rows and their own recycling meet (9 to 15 runs each
	 * here) */
	REQUIRE(shmlog_open(b, 0, &h[2]) == 0);
	write_turns(h, 3, 6 * (1 << 20) / 256);
	check_rows(b, 3, 16, "a second newcomer");
	for (int k = 0; k < 3; k++)
		shmlog_close(h[k]);
	shmlog_remove(b);
}

struct holder {
	const char *b;
	shmlog_t *h;
	int ready[2], go[2]; /* pipes: it holds reserved chunks; it may end */
	int bad; /* the thread's failed calls */
};

/* A newcomer thread that writes until it holds a reserved chunk, then
 * waits, alive, while its handle is closed from another thread. */
static void *hold_reserved(void *arg)
{
	struct holder *t = arg;
	char msg[200], c = 'r';
	memset(msg, 'z', sizeof(msg));
	/* no CHECK here: the harness's counters are the main thread's; what
	 * went wrong is counted and checked after the join */
	for (long i = 0; i < 100000 && !reserved(t->b); i++)
		t->bad += shmlog_write_n(t->h, SHMLOG_INFO, "hold", msg,
					 sizeof(msg)) != 0;
	t->bad += write(t->ready[1], &c, 1) != 1;
	t->bad += read(t->go[0], &c, 1) != 1;
	return NULL;
}

/* shmlog_close() of a handle whose lane a live thread holds, with
 * reserved chunks: they are given back with the lane (the lane's OPEN
 * chunk goes to its history). */
static void close_with_reserved(void)
{
	shmlog_t *h0;
	struct holder t = {0};
	t.b = filled("closeres", &h0);
	REQUIRE(shmlog_open(t.b, 0, &t.h) == 0);
	REQUIRE(pipe(t.ready) == 0 && pipe(t.go) == 0);
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, hold_reserved, &t) == 0);
	char c;
	CHECK_EQ(read(t.ready[0], &c, 1), 1);
	CHECK(reserved(t.b) > 0);
	shmlog_close(t.h); /* the thread still holds its lane */
	CHECK_EQ(reserved(t.b), 0);
	CHECK_EQ(write(t.go[1], &c, 1), 1);
	REQUIRE(pthread_join(th, NULL) == 0);
	CHECK_EQ(t.bad, 0);
	for (int k = 0; k < 2; k++) {
		close(t.ready[k]);
		close(t.go[k]);
	}
	shmlog_close(h0);
	shmlog_remove(t.b);
}

/* A newcomer that dies holding reserved chunks: the next writer to claim
 * a lane reaps its lane, and gives them back. */
static void dead_newcomer(void)
{
	shmlog_t *h[2];
	const char *b = filled("deadres", &h[0]);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		/* the child's own handle and lane; it dies as soon as it
		 * holds a reserved chunk */
		shmlog_t *c;
		if (shmlog_open(b, 0, &c))
			_exit(1);
		char msg[200];
		memset(msg, 'y', sizeof(msg));
		for (long i = 0; i < 100000; i++) {
			if (shmlog_write_n(c, SHMLOG_INFO, "dead", msg,
					   sizeof(msg)))
				_exit(1);
			if (reserved(b))
				kill(getpid(), SIGKILL);
		}
		_exit(2);
	}
	/* the parent writes while the child does: it recycles its oldest,
	 * the child takes from it */
	int st;
	for (int spins = 0; waitpid(pid, &st, WNOHANG) == 0 && spins < 1000000;
	     spins++)
		write_turns(h, 1, 1);
	if (waitpid(pid, &st, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		REQUIRE(waitpid(pid, &st, 0) == pid);
	}
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CHECK(reserved(b) > 0); /* the dead one's */
	/* a new writer (another thread's lane: a claim) reaps it */
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, claim_one, (void *)b) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK_EQ(reserved(b), 0);
	shmlog_close(h[0]);
	shmlog_remove(b);
}

/* Lane @lane's chunks in the table of @s: how many it holds (LIVE, OPEN
 * and reserved), how many of them are reserved, and its LIVE words into
 * @live (chunk_count entries, 0 where not). */
static unsigned lane_census(const struct shmlog__seg *s, unsigned lane,
			    unsigned *resv, uint64_t *live)
{
	unsigned held = 0;
	*resv = 0;
	for (unsigned i = 0; i < s->fixed.chunk_count; i++) {
		uint64_t w = atomic_load(seg_chunk(s, i));
		bool ours = chunk_held(&s->fixed, w) && chunk_lane(w) == lane;
		held += ours;
		*resv += ours && chunk_state(w) == CHUNK_RESV;
		if (live)
			live[i] = ours && chunk_state(w) == CHUNK_LIVE ? w : 0;
	}
	return held;
}

/* The lane that holds the most chunks of @s, lane @not aside. */
static unsigned biggest_lane(const struct shmlog__seg *s, unsigned not)
{
	unsigned best = UINT32_MAX, most = 0, resv;
	for (unsigned l = 0; l < s->fixed.lane_count; l++) {
		unsigned n = l == not ? 0 : lane_census(s, l, &resv, NULL);
		if (n > most) {
			most = n;
			best = l;
		}
	}
	REQUIRE(best != UINT32_MAX);
	return best;
}

/* A writer above its share that holds reserved chunks (made here by
 * hand: four of its LIVE chunks, not its oldest) loses them before any
 * LIVE one to a newcomer: as long as it still holds one, its LIVE chunks
 * are all there, and then it loses its oldest. */
static void reserved_go_first(void)
{
	shmlog_t *h[2];
	const char *b = filled("resvfirst", &h[0]);
	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(b, SEG_WRITE, &s) == 0);
	unsigned cc = s.fixed.chunk_count, a = biggest_lane(&s, UINT32_MAX);
	uint64_t live[64], now[64];
	unsigned resv, made = 0;
	REQUIRE(cc <= 64);
	CHECK_EQ(lane_census(&s, a, &resv, live), cc);
	/* the chunks at 10, 20, 30, 40 of the table: LIVE, and none of them
	 * the oldest (a lone writer's table is its history, rotated: the
	 * oldest is after the OPEN one) */
	for (unsigned i = 10; i <= 40; i += 10) {
		uint64_t w = live[i];
		if (!w || !live[(i + cc - 1) % cc])
			continue;
		uint64_t r = (w & ~(uint64_t)CHUNK_STATE_MASK) | CHUNK_RESV;
		made += atomic_compare_exchange_strong(seg_chunk(&s, i), &w, r);
		live[i] = 0;
	}
	CHECK(made >= 3);
	REQUIRE(shmlog_open(b, 0, &h[1]) == 0);
	char msg[200];
	memset(msg, 'n', sizeof(msg));
	unsigned lost_with_resv = 0, writes = 0;
	for (; writes < 100000; writes++) {
		CHECK_EQ(shmlog_write_n(h[1], SHMLOG_INFO, "new", msg,
					sizeof(msg)),
			 0);
		lane_census(&s, a, &resv, now);
		if (!resv)
			break;
		for (unsigned i = 0; i < cc; i++)
			lost_with_resv += live[i] && now[i] != live[i];
	}
	CHECK_EQ(resv, 0); /* they went, and soon */
	CHECK(writes < 100000);
	CHECK_EQ(lost_with_resv, 0);
	/* what it has lost since are its oldest LIVE chunks */
	uint64_t oldest_kept = 0;
	for (unsigned i = 0; i < cc; i++)
		if (live[i] && now[i] == live[i] &&
		    (!oldest_kept || pos_before(chunk_base(&s.fixed, live[i]),
						oldest_kept)))
			oldest_kept = chunk_base(&s.fixed, live[i]);
	for (unsigned i = 0; i < cc; i++)
		if (live[i] && now[i] != live[i])
			CHECK(pos_before(chunk_base(&s.fixed, live[i]),
					 oldest_kept));
	shmlog__seg_detach(&s);
	shmlog_close(h[0]);
	shmlog_close(h[1]);
	shmlog_remove(b);
}

/* What the test point in the taker's reservation does: once the taker
 * holds 3 reserved chunks or more, move the victim's oldest LIVE chunks
 * but the one the taker takes to a lane nobody owns until the victim holds 2 chunks under its share,
 * as a second taker that counted it at the same moment would have. */
static struct {
	struct shmlog__seg *s;
	unsigned victim, taker, share, moved;
	bool done;
} gb;

static void take_meanwhile(int point)
{
	unsigned resv;
	if (point != 16 || gb.done)
		return;
	lane_census(gb.s, gb.taker, &resv, NULL);
	if (resv < 3)
		return;
	gb.done = true;
	const struct shmlog__fixed *f = &gb.s->fixed;
	for (;;) {
		uint64_t live[64];
		if (lane_census(gb.s, gb.victim, &resv, live) <= gb.share - 2)
			return;
		/* the oldest but one: the oldest is the chunk the taker
		 * is about to take (the two would race for it: one CAS
		 * wins) */
		unsigned old = UINT32_MAX, first = UINT32_MAX;
		for (unsigned i = 0; i < f->chunk_count; i++) {
			if (!live[i])
				continue;
			if (first == UINT32_MAX ||
			    pos_before(chunk_base(f, live[i]),
				       chunk_base(f, live[first]))) {
				old = first;
				first = i;
			} else if (old == UINT32_MAX ||
				   pos_before(chunk_base(f, live[i]),
					      chunk_base(f, live[old]))) {
				old = i;
			}
		}
		REQUIRE(old != UINT32_MAX);
		uint64_t w = live[old];
		uint64_t to = chunk_word(w >> CHUNK_INC_SHIFT,
					 f->lane_count - 1, CHUNK_LIVE);
		REQUIRE(atomic_compare_exchange_strong(seg_chunk(gb.s, old),
						       &w, to));
		gb.moved++;
	}
}

/* A newcomer reserves chunks of a writer above its share while another
 * taker takes from it on the same count (the test point): the newcomer
 * gives back, words as they were, what would leave the writer under its
 * share, and the writer keeps exactly its share. */
static void reserved_given_back(void)
{
	shmlog_t *h[2];
	const char *b = filled("resvback", &h[0]);
	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(b, SEG_WRITE, &s) == 0);
	unsigned cc = s.fixed.chunk_count, resv;
	REQUIRE(cc <= 64 && s.fixed.lane_count >= 3);
	gb.s = &s;
	gb.victim = biggest_lane(&s, UINT32_MAX);
	gb.share = cc / 2;
	gb.done = false;
	gb.moved = 0;
	uint64_t before[64], after[64];
	lane_census(&s, gb.victim, &resv, before);
	REQUIRE(shmlog_open(b, 0, &h[1]) == 0);
	char msg[200];
	memset(msg, 'g', sizeof(msg));
	/* the newcomer's lane: its first record claims it */
	CHECK_EQ(shmlog_write_n(h[1], SHMLOG_INFO, "back", msg, sizeof(msg)),
		 0);
	gb.taker = biggest_lane(&s, gb.victim);
	shmlog__testpoint_hook = take_meanwhile;
	for (int i = 0; i < 100000 && !gb.done; i++)
		CHECK_EQ(shmlog_write_n(h[1], SHMLOG_INFO, "back", msg,
					sizeof(msg)),
			 0);
	shmlog__testpoint_hook = NULL;
	CHECK(gb.done);
	CHECK(gb.moved >= 1);
	/* its share exactly: what it held then, the chunk taken, and what was
	 * given back */
	CHECK_EQ(lane_census(&s, gb.victim, &resv, after), gb.share);
	CHECK_EQ(resv, 0);
	/* and every LIVE chunk it holds is one it held before, its word as
	 * it was (given back untouched, or never taken) */
	unsigned same = 0, live = 0;
	for (unsigned i = 0; i < cc; i++) {
		live += after[i] != 0;
		same += after[i] && after[i] == before[i];
	}
	CHECK_EQ(same, live);
	CHECK_EQ(live, gb.share - 1); /* and its OPEN chunk */
	shmlog__seg_detach(&s);
	shmlog_close(h[0]);
	shmlog_close(h[1]);
	shmlog_remove(b);
}

int main(void)
{
	together(1, 1);
	together(2, 2);
	together(4, 4);
	newcomer();
	dead_newcomer();
	close_with_reserved();
	reserved_go_first();
	reserved_given_back();
	return test_done("test_layout");
}
