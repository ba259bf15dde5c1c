/* SPDX-License-Identifier: MIT */
/*
 * No abandoned record keeps a valid word.
 *
 * A reader copies a record, then re-reads its word: the copy is whole only
 * because a writer voids a record's word before it reuses any of its bytes
 * (ring.c, step 2). So every path that gives up records (a lane reset on a
 * claim, a dead writer's lane taken over, the tail walk meeting damage, a
 * writer killed after moving tail but before voiding) must void them, or a
 * lagging reader can take the new record's header and tag for the old
 * record's message. This test drives each path deterministically and then
 * checks the invariant that makes the copy safe: outside [tail, reserve),
 * no 8-byte slot of the lane holds a word naming its own position (in any
 * lap) with a record state; inside it, only records of the chain do.
 *
 * It also checks that a writer killed in the wrap window (its reservation
 * runs past the lane's end: a PAD, then the record at offset 0) has its
 * history kept and its record counted torn once.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "hostile.h"
#include "internal.h"

struct img {
	const char *name;
	unsigned char *base;
	size_t size;
	struct shmlog__fixed f;
};

static void img_open(struct img *m, const char *name)
{
	m->name = name;
	char path[512];
	REQUIRE(shmlog_path(name, path, sizeof(path)) > 0);
	m->base = hw_map_rw(path, &m->size);
	REQUIRE(m->base != NULL);
	memcpy(&m->f, m->base, sizeof(m->f));
}

static struct shmlog__lane *img_lane(struct img *m)
{
	return (void *)(m->base + m->f.lanes_off);
}

static unsigned char *img_data(struct img *m)
{
	return m->base + m->f.data_off;
}

/* Slots of lane 0 whose word names its own position with a record state
 * but that are not records of the chain [tail, reserve): each one is an
 * abandoned record a reader could still take for whole. */
static unsigned stale_words(struct img *m)
{
	struct shmlog__lane *l = img_lane(m);
	uint64_t tail = atomic_load(&l->tail), reserve = atomic_load(&l->reserve);
	unsigned stale = 0;
	for (uint32_t off = 0; off < m->f.lane_size; off += 8) {
		uint64_t w = atomic_load((_Atomic uint64_t *)(void *)(img_data(m) + off));
		unsigned st = w & 7;
		uint64_t pos = w & ~7ull;
		if (st < REC_COMMITTED || st > REC_TORN || seg_off(&m->f, pos) != off)
			continue;
		if (pos - tail < reserve - tail)
			continue; /* a record of the chain, or being written */
		if (tail - pos > 8ull * m->f.lane_size)
			continue; /* bytes that only look like a word (a time
				   * value), far from any place a reader goes */
		if (stale++ < 3)
			fprintf(stderr, "stale word at %u: %#llx (tail %#llx, "
					"reserve %#llx)\n",
				off, (unsigned long long)w,
				(unsigned long long)tail,
				(unsigned long long)reserve);
	}
	return stale;
}

static const char *make(void)
{
	const char *b = test_buffer("void");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.lanes = 1;
	shmlog_remove(b);
	REQUIRE(shmlog_create(b, &o) == 0);
	return b;
}

/* Write records @from.. of writer @w in a child, which dies at test point
 * @point on its record @arm (or from @arm on, on the first record whose
 * reservation wraps, with @wrap); returns the record it died in. */
static int kill_point;
static bool kill_wrap, cur_wraps;
static struct img *kill_img;

static void die_here(int point)
{
	if (point == 1 && kill_img) {
		struct shmlog__lane *l = img_lane(kill_img);
		uint64_t head = atomic_load(&l->head);
		uint64_t reserve = atomic_load(&l->reserve);
		cur_wraps = seg_off(&kill_img->f, head) + (reserve - head) >
			    kill_img->f.lane_size;
	}
	if (point == kill_point && (!kill_wrap || cur_wraps || point == 10))
		kill(getpid(), SIGKILL);
}

static long write_and_die(struct img *m, unsigned w, long arm, int point,
			  bool wrap)
{
	volatile long *cur = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(cur != MAP_FAILED);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(m->name, 0, &h))
			_exit(1);
		kill_img = m;
		char tag[16], msg[512];
		int prio;
		for (long i = 0; i < 100000; i++) {
			*cur = i;
			if (i == arm) {
				kill_point = point;
				kill_wrap = wrap;
				shmlog__testpoint_hook = die_here;
			}
			size_t len = sc_make(w, (uint64_t)i, tag, &prio, msg);
			shmlog_write_n(h, prio, tag, msg, len);
		}
		_exit(2);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	long j = *cur;
	munmap((void *)cur, 4096);
	return j;
}

/* A new writer takes the lane over and writes @n records. */
static void take_over(const char *b, unsigned w, long n)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(1);
		_exit(sc_write(h, w, 0, n) ? 2 : 0);
	}
	CHECK_EQ(hw_reap(pid), 0);
}

struct tally {
	long count[4], bad;
	int64_t last[4];
	struct shmlog_lane_stats sum;
	uint64_t corrupt;
};

static void read_all(const char *b, struct tally *t)
{
	memset(t, 0, sizeof(*t));
	for (int k = 0; k < 4; k++)
		t->last[k] = -1;
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev;
	for (long calls = 0; calls < 1000000 &&
			     (ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE;
	     calls++) {
		unsigned w;
		uint64_t i;
		if (ev != SHMLOG_EV_RECORD)
			continue;
		if (!sc_check(&rec, &w, &i) || w >= 4 || (int64_t)i <= t->last[w]) {
			t->bad++;
			continue;
		}
		t->last[w] = (int64_t)i;
		t->count[w]++;
	}
	t->sum = hw_sum(r);
	shmlog_reader_close(r);
}

/* A writer killed in the wrap window, at each step of it: its history is
 * kept, its record counted torn once, and the lane holds no stale word. */
static void wrap_window(void)
{
	int points[] = {1, 2, 3, 4, 5};
	for (unsigned k = 0; k < sizeof(points) / sizeof(points[0]); k++) {
		const char *b = make();
		struct img m;
		img_open(&m, b);
		long j = write_and_die(&m, 1, 700, points[k], true);
		struct tally t0;
		read_all(b, &t0);
		take_over(b, 2, 5);
		struct tally t;
		read_all(b, &t);
		bool whole = points[k] >= 5;
		CHECK_EQ(t.bad, 0);
		CHECK_EQ(t.last[1], whole ? j : j - 1);
		CHECK(t0.count[1] > 100);
		CHECK(t.count[1] >= t0.count[1] - 10); /* history kept */
		CHECK_EQ(t.count[2], 5);
		CHECK_EQ(t.sum.torn, whole ? 0 : 1);
		CHECK_EQ(t.sum.written, t.sum.read + t.sum.overwritten + t.sum.torn);
		struct shmlog_info in;
		REQUIRE(shmlog_stat(b, &in) == 0);
		CHECK_EQ(in.torn, whole ? 0 : 1);
		CHECK_EQ(stale_words(&m), 0);
		munmap(m.base, m.size);
		shmlog_remove(b);
	}
}

/* A writer killed after it moved tail over the records it is about to
 * overwrite, before it voided them: the writer that takes the lane over
 * voids them. */
static void killed_before_voiding(void)
{
	const char *b = make();
	struct img m;
	img_open(&m, b);
	write_and_die(&m, 1, 900, 10, false);
	take_over(b, 2, 1);
	CHECK_EQ(stale_words(&m), 0);
	struct tally t;
	read_all(b, &t);
	CHECK_EQ(t.bad, 0);
	CHECK_EQ(t.count[2], 1);
	munmap(m.base, m.size);
	shmlog_remove(b);
}

/* A lane whose positions make no sense is started afresh by the writer
 * that claims it: every record it held is voided first. */
static void broken_lane_reset(void)
{
	uint64_t deltas[] = {4, 1, (uint64_t)1 << 40};
	for (unsigned k = 0; k < 3; k++) {
		const char *b = make();
		struct img m;
		img_open(&m, b);
		take_over(b, 1, 900); /* more than a lap */
		struct shmlog__lane *l = img_lane(&m);
		if (k < 2) {
			atomic_store(&l->head, atomic_load(&l->head) + deltas[k]);
			atomic_store(&l->reserve, atomic_load(&l->head));
		} else {
			atomic_store(&l->tail, atomic_load(&l->tail) - deltas[k]);
		}
		take_over(b, 2, 3);
		CHECK_EQ(stale_words(&m), 0);
		struct tally t;
		read_all(b, &t);
		CHECK_EQ(t.bad, 0);
		CHECK_EQ(t.count[2], 3);
		munmap(m.base, m.size);
		shmlog_remove(b);
	}
}

/* The tail walk meets a damaged record (its word, its length, a PAD in
 * the middle): the writer steps over it to the next record that proves
 * itself, instead of dropping the lane's history, and voids what it
 * passed. */
static void walk_meets_damage(void)
{
	for (int what = 0; what < 3; what++) {
		const char *b = make();
		struct img m;
		img_open(&m, b);
		shmlog_t *h;
		REQUIRE(shmlog_open(b, 0, &h) == 0);
		REQUIRE(sc_write(h, 1, 0, 500) == 0); /* a lap and more */
		struct shmlog__lane *l = img_lane(&m);
		/* damage the record 3 after tail */
		uint64_t pos = atomic_load(&l->tail);
		struct shmlog__rec *r = NULL;
		for (int k = 0; k <= 3; k++) {
			r = (void *)(img_data(&m) + seg_off(&m.f, pos));
			if ((atomic_load(&r->word) & 7) == REC_PAD) {
				pos += m.f.lane_size - seg_off(&m.f, pos);
				k--;
				continue;
			}
			if (k < 3)
				pos += r->len;
		}
		if (what == 0)
			atomic_store(&r->word, atomic_load(&r->word) ^ (1u << 9));
		else if (what == 1)
			r->len = (uint16_t)(r->len + 8);
		else
			atomic_store(&r->word, pos | REC_PAD);
		REQUIRE(sc_write(h, 1, 500, 20) == 0); /* the walk passes it */
		CHECK_EQ(stale_words(&m), 0);
		struct tally t;
		read_all(b, &t);
		CHECK_EQ(t.bad, 0);
		CHECK_EQ(t.last[1], 519);
		/* one bad record costs a record or two, not the lane */
		CHECK(t.count[1] > 200);
		shmlog_close(h);
		munmap(m.base, m.size);
		shmlog_remove(b);
	}
}

int main(void)
{
	wrap_window();
	killed_before_voiding();
	broken_lane_reset();
	walk_meets_damage();
	return test_done("test_void");
}
