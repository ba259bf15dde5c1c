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
 *     of capacity / 4.
 * A writer that claims the lane a departed writer gave back goes on in
 * its last chunk (one-shot writers so pack their lines in time order):
 * its first records there are kept with the departed's, so its own may
 * show one hole.
 * Each writer's records are self-describing (selfcheck.h), checked as
 * they are read. Writers are processes, driven through their phases by
 * waiting for them to exit: no sleeps. alarm() bounds the run.
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

static const char *fresh(void)
{
	const char *b = test_buffer("departed");
	shmlog_remove(b);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = BUFFER_SIZE;
	REQUIRE(shmlog_create(b, &o) == 0);
	return b;
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

int main(void)
{
	alarm(300);
	case_last_words(false);
	case_last_words(true);
	case_one_shot();
	case_bounded(1);
	case_bounded(4);
	return test_done("test_departed");
}
