/* SPDX-License-Identifier: MIT */
/*
 * Departed writers keep their most recent records: a writer that exited
 * or died is a flight recorder's evidence, and a live writer that floods
 * afterwards must not evict it. In a 4 MiB buffer (256 chunks of 16 KiB),
 * through the public API only:
 *   - "exited": 100 records from a writer process that closed its handle
 *     and exited, then 200,000 from a live flooder: 100 of 100 are kept;
 *   - "died": the same with a writer killed by SIGKILL after its 100;
 *   - "one-shot": 1,000 processes that each write one line and exit, then
 *     a flood: every one of the 1,000 lines is kept (they fit the
 *     departed writers' bound), and the flooder keeps >= 90 % of the
 *     capacity;
 *   - "bounded": a writer that wrote three times the capacity and exited,
 *     then a lone flooder: the flooder keeps >= 90 % of the capacity, the
 *     departed writer keeps its newest records, without a hole, up to the
 *     bound (1/16 of the buffer) less a chunk, and no more than the bound
 *     and a chunk;
 *   - the same departed writer beside 4 live flooders: each keeps >= 90 %
 *     of capacity / 4;
 *   - "claimed again": a departed writer that wrote half a buffer or
 *     three, then a burst writer that writes three buffers, beside none or
 *     a few quiet live writers, in 1, 2 and 4 MiB with 4 and 16 lanes;
 *     the burst has the departed's lane, another, or the departed was
 *     killed: the departed keep their newest records without a hole, no
 *     more than the bound and at most two chunks less, shmlog info's
 *     figures say so, the burst keeps >= 90 % of what neither the bound
 *     nor the quiet writers hold, and the quiet writers keep everything.
 * A writer that claims the lane a departed writer gave back goes on in
 * its last chunk (one-shot writers so pack their lines in time order):
 * its first records there are kept with the departed's, so its own may
 * show one hole.
 * Each writer's records are self-describing (selfcheck.h), checked as
 * they are read. Writers are processes, driven through their phases by
 * waiting for them to exit or to answer over a pipe: no sleeps. alarm()
 * bounds the run.
 */
#include "hostile.h"
#include "kept.h"

#define BUFFER_SIZE (4u << 20)
#define DEPARTED_BOUND (BUFFER_SIZE / 16)
#define MAX_W 8

/* shmlog_stat_space() while the flooders were live */
static struct shmlog_space_stats space;

struct kept {
	uint64_t n, bytes, first, last, holes, bad;
	unsigned lane; /* the lane of its newest record read */
	bool any;
};

/* Read the whole buffer; tally each writer's records (writer ids 0..7). */
static void read_kept(const char *b, struct kept *k)
{
	memset(k, 0, sizeof(*k) * MAX_W);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	struct shmlog_lost lost;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, &lost)) != SHMLOG_EV_NONE) {
		REQUIRE(ev > 0);
		if (ev != SHMLOG_EV_RECORD)
			continue;
		unsigned w;
		uint64_t i;
		if (!sc_check(&rec, &w, &i) || w >= MAX_W) {
			k[0].bad++;
			continue;
		}
		struct kept *x = &k[w];
		if (x->any && i != x->last + 1)
			x->holes++;
		if (!x->any)
			x->first = i;
		x->any = true;
		x->last = i;
		x->lane = rec.lane;
		x->n++;
		x->bytes += kept_record_bytes(rec.tag_len, rec.msg_len);
	}
	shmlog_reader_close(r);
}

/* Bytes writer @w's records 0..@n-1 take in the ring. */
static uint64_t written_bytes(unsigned w, uint64_t n)
{
	uint64_t sum = 0;
	char tag[16], msg[512];
	int prio;
	for (uint64_t i = 0; i < n; i++) {
		size_t len = sc_make(w, i, tag, &prio, msg);
		sum += kept_record_bytes(strlen(tag), len);
	}
	return sum;
}

/* A writer process: records [0, @n) of writer @w, then exit (or die). */
static void writer(const char *b, unsigned w, uint64_t n, bool die)
{
	pid_t p = fork();
	REQUIRE(p >= 0);
	if (p == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(10);
		if (sc_write(h, w, 0, (long)n))
			_exit(11);
		if (die)
			raise(SIGKILL);
		shmlog_close(h);
		_exit(0);
	}
	int st;
	REQUIRE(waitpid(p, &st, 0) == p);
	if (die)
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	else
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* @n flooders, writers 1..@n, @recs records each, writing at once; they
 * stay live (holding their lanes) until the buffer has been read, so the
 * figures are those of live writers. */
static void flood_and_read(const char *b, unsigned n, uint64_t recs,
			   struct kept *k)
{
	int go[2], done[2];
	REQUIRE(pipe(go) == 0 && pipe(done) == 0);
	pid_t p[MAX_W];
	for (unsigned f = 0; f < n; f++) {
		p[f] = fork();
		REQUIRE(p[f] >= 0);
		if (p[f])
			continue;
		close(go[1]);
		close(done[0]);
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(10);
		if (sc_write(h, 1 + f, 0, (long)recs))
			_exit(11);
		char c = 'd';
		if (write(done[1], &c, 1) != 1)
			_exit(12);
		/* hold the lane until the parent has read: EOF on go */
		while (read(go[0], &c, 1) > 0)
			;
		shmlog_close(h);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	for (unsigned f = 0; f < n; f++) {
		char c;
		REQUIRE(read(done[0], &c, 1) == 1);
	}
	read_kept(b, k);
	REQUIRE(shmlog_stat_space(b, &space) == 0);
	close(go[1]);
	close(done[0]);
	for (unsigned f = 0; f < n; f++) {
		int st;
		REQUIRE(waitpid(p[f], &st, 0) == p[f]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

static const char *fresh_sized(uint64_t size, unsigned lanes)
{
	shmlog_remove(test_buffer("departed"));
	return test_create("departed", size, lanes);
}

static const char *fresh(void)
{
	return fresh_sized(BUFFER_SIZE, 0);
}

static void case_last_words(bool die)
{
	const char *b = fresh();
	writer(b, 0, 100, die);
	struct kept k[MAX_W];
	flood_and_read(b, 1, 200000, k);
	printf("%s: departed writer kept %llu of 100 (records %llu..%llu), "
	       "flooder %llu bytes of %u\n",
	       die ? "died" : "exited", (unsigned long long)k[0].n,
	       (unsigned long long)k[0].first, (unsigned long long)k[0].last,
	       (unsigned long long)k[1].bytes, BUFFER_SIZE);
	CHECK_EQ(k[0].bad, 0);
	CHECK_EQ(k[0].n, 100);
	CHECK_EQ(k[0].holes, 0);
	CHECK(k[1].bytes >= BUFFER_SIZE * 0.9);
	CHECK(k[1].holes <= 1); /* see case_bounded() */
	shmlog_remove(b);
}

static void case_one_shot(void)
{
	const char *b = fresh();
	/* one line each, numbered by the writer: record i of writer 0 */
	for (uint64_t i = 0; i < 1000; i++) {
		pid_t p = fork();
		REQUIRE(p >= 0);
		if (p == 0) {
			shmlog_t *h;
			if (shmlog_open(b, 0, &h) || sc_write(h, 0, i, 1))
				_exit(10);
			shmlog_close(h);
			_exit(0);
		}
		int st;
		REQUIRE(waitpid(p, &st, 0) == p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	struct kept k[MAX_W];
	flood_and_read(b, 1, 200000, k);
	printf("one-shot: %llu of 1000 one-line writers kept (%llu..%llu), "
	       "flooder %llu bytes of %u\n",
	       (unsigned long long)k[0].n, (unsigned long long)k[0].first,
	       (unsigned long long)k[0].last, (unsigned long long)k[1].bytes,
	       BUFFER_SIZE);
	/* they fit the bound, with a chunk to spare */
	CHECK(written_bytes(0, 1000) + 16384 < DEPARTED_BOUND);
	CHECK_EQ(k[0].bad, 0);
	CHECK_EQ(k[0].n, 1000);
	CHECK_EQ(k[0].holes, 0);
	CHECK(k[1].bytes >= BUFFER_SIZE * 0.9);
	shmlog_remove(b);
}

/* A departed writer that wrote 3x the capacity, then @n live flooders. */
static void case_bounded(unsigned n)
{
	const char *b = fresh();
	uint64_t big = 3 * BUFFER_SIZE / 200; /* records of ~200 bytes */
	writer(b, 0, big, false);
	struct kept k[MAX_W];
	flood_and_read(b, n, 3 * BUFFER_SIZE / 200, k);
	uint64_t chunk = 16384;
	printf("bounded, %u live: departed writer keeps %llu bytes (bound %u), "
	       "records %llu..%llu of %llu;",
	       n, (unsigned long long)k[0].bytes, DEPARTED_BOUND,
	       (unsigned long long)k[0].first, (unsigned long long)k[0].last,
	       (unsigned long long)big - 1);
	for (unsigned f = 1; f <= n; f++)
		printf(" flooder %u: %llu bytes", f,
		       (unsigned long long)k[f].bytes);
	printf("\n");
	CHECK_EQ(k[0].bad, 0);
	CHECK_EQ(k[0].holes, 0);
	CHECK_EQ(k[0].last, big - 1); /* its newest */
	CHECK(k[0].bytes + 2 * chunk >= DEPARTED_BOUND);
	CHECK(k[0].bytes <= DEPARTED_BOUND + chunk);
	/* shmlog info's figures say the same */
	printf("  shmlog_stat_space: %llu chunks of writers, %llu departed "
	       "(bound %llu), %llu unused, of %llu\n",
	       (unsigned long long)space.writers,
	       (unsigned long long)space.departed,
	       (unsigned long long)space.departed_bound,
	       (unsigned long long)space.unused,
	       (unsigned long long)space.chunks);
	CHECK_EQ(space.departed_bound, space.chunks / 16);
	CHECK(space.departed <= space.departed_bound);
	CHECK(space.departed + 1 >= space.departed_bound);
	CHECK(space.writers + space.departed + space.unused <= space.chunks);
	CHECK(space.writers + space.departed + space.unused + 2 * n >=
	      space.chunks); /* reserved chunks aside */
	for (unsigned f = 1; f <= n; f++) {
		CHECK(k[f].bytes >= BUFFER_SIZE / n * 0.9);
		/* one hole at most: a writer that claims the lane given back
		 * last goes on in its chunk, and its first records there stay
		 * as long as the departed's beside them */
		CHECK(k[f].holes <= 1);
	}
	shmlog_remove(b);
}

/* ---- a departed writer's lane claimed again ------------------------- */

/* A writer process driven step by step over a pipe: each command writes
 * its next records, and is answered once they are written, so the parent
 * orders the writers' steps without sleeps. Its handle, and the lane it
 * claimed, stay its own between commands; EOF closes the handle and
 * exits, 'k' dies (SIGKILL) with the lane held. */
struct puppet {
	pid_t pid;
	int cmd, ack;
	uint64_t next; /* its next record's number */
};

struct puppet_cmd {
	uint64_t n;
	char op; /* 'w': write n records, 'k': die */
};

static void puppet_start(struct puppet *p, const char *b, unsigned w)
{
	int cmd[2], ack[2];
	REQUIRE(pipe(cmd) == 0 && pipe(ack) == 0);
	p->pid = fork();
	REQUIRE(p->pid >= 0);
	if (p->pid == 0) {
		/* the other puppets' pipe ends too: each must see EOF when
		 * the parent closes its command pipe */
		for (int fd = 3; fd < 256; fd++)
			if (fd != cmd[0] && fd != ack[1])
				close(fd);
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(10);
		uint64_t next = 0;
		struct puppet_cmd c;
		while (read(cmd[0], &c, sizeof(c)) == (ssize_t)sizeof(c)) {
			if (c.op == 'k')
				raise(SIGKILL);
			char ok = sc_write(h, w, next, (long)c.n) == 0;
			next += c.n;
			if (write(ack[1], &ok, 1) != 1)
				_exit(12);
		}
		shmlog_close(h);
		_exit(0);
	}
	close(cmd[0]);
	close(ack[1]);
	p->cmd = cmd[1];
	p->ack = ack[0];
	p->next = 0;
}

static void puppet_send(struct puppet *p, char op, uint64_t n)
{
	struct puppet_cmd c;
	memset(&c, 0, sizeof(c));
	c.op = op;
	c.n = n;
	REQUIRE(write(p->cmd, &c, sizeof(c)) == (ssize_t)sizeof(c));
}

static void puppet_write(struct puppet *p, uint64_t n)
{
	puppet_send(p, 'w', n);
	char ok = 0;
	REQUIRE(read(p->ack, &ok, 1) == 1);
	CHECK(ok);
	p->next += n;
}

/* It closes its handle and exits (@die: it is killed, its lane held), and
 * is waited for. */
static void puppet_end(struct puppet *p, bool die)
{
	if (die)
		puppet_send(p, 'k', 0);
	close(p->cmd);
	int st;
	REQUIRE(waitpid(p->pid, &st, 0) == p->pid);
	close(p->ack);
	if (die)
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	else
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

enum departure {
	GONE_LANE_RECLAIMED, /* exits; the next writer claims its lane */
	GONE_OTHER_LANE, /* exits; the next writer claimed another before */
	GONE_KILLED, /* killed; its lane reaped by the next claim */
};

static const char *const departure_name[] = {"lane claimed again",
					     "other lane", "killed"};

/* A departed writer (writer 0) that wrote @dep_laps times the capacity,
 * then a burst writer (writer 1) that writes three times the capacity,
 * beside @quiet live writers (2..) that write a few records between its
 * steps. Whether the burst has the departed's lane or another, and
 * however many live writers hold how little, the departed keep their
 * newest records up to their bound and no more, and the burst the rest
 * but what the quiet writers hold. */
static void case_claimed_again(uint64_t size, unsigned lanes, unsigned quiet,
			       enum departure how, double dep_laps)
{
	const char *b = fresh_sized(size, lanes);
	struct puppet q[MAX_W], dep, burst;
	for (unsigned i = 0; i < quiet; i++) {
		puppet_start(&q[i], b, 2 + i);
		puppet_write(&q[i], 8);
	}
	puppet_start(&dep, b, 0);
	puppet_write(&dep, (uint64_t)(dep_laps * (double)size / 200));
	puppet_start(&burst, b, 1);
	if (how == GONE_OTHER_LANE)
		puppet_write(&burst, 1); /* its lane claimed, dep's held */
	puppet_end(&dep, how == GONE_KILLED);
	const unsigned steps = 16;
	for (unsigned s = 0; s < steps; s++) {
		puppet_write(&burst, 3 * size / 200 / steps);
		for (unsigned i = 0; i < quiet; i++)
			puppet_write(&q[i], 4);
	}
	struct kept k[MAX_W];
	read_kept(b, k);
	REQUIRE(shmlog_stat_space(b, &space) == 0);
	puppet_end(&burst, false);
	for (unsigned i = 0; i < quiet; i++)
		puppet_end(&q[i], false);

	uint64_t chunk = space.chunk_size;
	uint64_t live = 1 + quiet;
	uint64_t bound = space.departed_bound * chunk;
	printf("claimed again: %llu KiB, %u lanes, %u quiet, %s, departed "
	       "wrote %.2f laps: keeps %llu bytes (bound %llu), records "
	       "%llu..%llu of %llu, lane %u; burst %llu bytes, lane %u; "
	       "chunks: %llu writers', %llu departed (bound %llu) of %llu\n",
	       (unsigned long long)size >> 10, lanes, quiet,
	       departure_name[how], dep_laps, (unsigned long long)k[0].bytes,
	       (unsigned long long)bound, (unsigned long long)k[0].first,
	       (unsigned long long)k[0].last,
	       (unsigned long long)dep.next - 1, k[0].lane,
	       (unsigned long long)k[1].bytes, k[1].lane,
	       (unsigned long long)space.writers,
	       (unsigned long long)space.departed,
	       (unsigned long long)space.departed_bound,
	       (unsigned long long)space.chunks);
	CHECK_EQ(k[0].bad, 0);
	/* the class under test: the burst has the departed's lane, or not */
	if (how == GONE_LANE_RECLAIMED)
		CHECK_EQ(k[1].lane, k[0].lane);
	if (how == GONE_OTHER_LANE)
		CHECK(k[1].lane != k[0].lane);
	/* shmlog info's figures: the bound for 1 + quiet live writers, and
	 * the departed held to it */
	CHECK_EQ(space.departed_bound,
		 space.chunks / (live + 1 > 16 ? live + 1 : 16));
	CHECK(space.departed <= space.departed_bound);
	CHECK(space.writers + space.departed + space.unused <= space.chunks);
	/* the departed: their newest, without a hole, up to the bound less
	 * a chunk or two (the PADs, the chunk the burst resumed in) */
	CHECK_EQ(k[0].holes, 0);
	CHECK_EQ(k[0].last, dep.next - 1);
	CHECK(k[0].bytes <= bound + chunk);
	CHECK(k[0].bytes + 2 * chunk >= bound);
	/* the burst: its newest, all but the bound and what the quiet
	 * writers hold (two chunks each at most); one hole at most (its
	 * first records in the departed's last chunk) */
	CHECK_EQ(k[1].last, burst.next - 1);
	CHECK(k[1].holes <= 1);
	CHECK(k[1].bytes >= (size - bound - 2 * quiet * chunk) * 0.9);
	/* the quiet: everything */
	for (unsigned i = 0; i < quiet; i++) {
		CHECK_EQ(k[2 + i].n, q[i].next);
		CHECK_EQ(k[2 + i].holes, 0);
	}
	shmlog_remove(b);
}

static void cases_claimed_again(void)
{
	static const struct {
		uint64_t size;
		unsigned lanes, quiet[2];
	} geo[] = {
		{1u << 20, 4, {0, 2}},
		{2u << 20, 4, {0, 2}},
		{4u << 20, 16, {0, 5}},
	};
	static const double laps[] = {0.45, 3};
	for (unsigned g = 0; g < sizeof(geo) / sizeof(geo[0]); g++)
		for (unsigned qi = 0; qi < 2; qi++)
			for (unsigned how = 0; how < 3; how++)
				for (unsigned l = 0; l < 2; l++)
					case_claimed_again(geo[g].size,
							   geo[g].lanes,
							   geo[g].quiet[qi],
							   how, laps[l]);
}

int main(void)
{
	alarm(300);
	case_last_words(false);
	case_last_words(true);
	case_one_shot();
	case_bounded(1);
	case_bounded(4);
	cases_claimed_again();
	return test_done("test_departed");
}
