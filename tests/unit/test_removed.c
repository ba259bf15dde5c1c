/* SPDX-License-Identifier: MIT */
/*
 * A buffer removed under its writers (shmlog_remove(), `shmlog rm
 * --force`): a writer goes on in its OPEN chunk, takes no other, and its
 * writes say -ESTALE from then on, in every path (the leaf, the general
 * path, printf-style calls, a second thread); closed and opened
 * again by name it writes into the buffer created again. A buffer that is
 * not removed never says -ESTALE. shmlog_check() says -ESTALE at once,
 * before any write does, whether the file was removed by shmlog_remove()
 * or by a plain unlink(2), and 0 for the buffer created again.
 */
#include <pthread.h>

#include "test.h"

#define MSG "a record of some length, to fill a chunk in a bounded loop"

/* Write until a write fails; the number written (bounded by @max), the
 * failure in *@err (0: none in @max). */
static long write_until_fail(shmlog_t *h, long max, int *err)
{
	*err = 0;
	for (long i = 0; i < max; i++) {
		int e = shmlog_write(h, SHMLOG_INFO, "rm", MSG);
		if (e) {
			*err = e;
			return i;
		}
	}
	return max;
}

static long count_records(const char *name)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(name, 0, &r) == 0);
	struct shmlog_record rec;
	long n = 0;
	/* bounded by what the buffer holds */
	while (shmlog_reader_next(r, &rec, 0) == SHMLOG_EV_RECORD && n < 10000000)
		n++;
	shmlog_reader_close(r);
	return n;
}

struct thread_arg {
	shmlog_t *h;
	int err;
	long written;
};

static void *second_writer(void *p)
{
	struct thread_arg *a = p;
	a->written = write_until_fail(a->h, 1000000, &a->err);
	return NULL;
}

int main(void)
{
	const char *name = test_buffer("removed");
	shmlog_remove(name);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 256 * 1024;
	REQUIRE(shmlog_create(name, &o) == 0);
	struct shmlog_space_stats sp;
	REQUIRE(shmlog_stat_space(name, &sp) == 0);
	/* a chunk holds at most this many records: the bound of every loop */
	long per_chunk = (long)(sp.chunk_size / 64) + 2;

	shmlog_t *h;
	REQUIRE(shmlog_open(name, 0, &h) == 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "rm", "before"), 0);

	/* not removed: a whole buffer's worth of writes, and laps, succeed */
	int err;
	long n = write_until_fail(h, 20 * per_chunk, &err);
	CHECK_EQ(err, 0);
	CHECK_EQ(n, 20 * per_chunk);
	CHECK_EQ(shmlog_check(h), 0);
	CHECK_EQ(shmlog_check(NULL), -EINVAL);

	CHECK_EQ(shmlog_remove(name), 0);
	CHECK_EQ(shmlog_remove(name), -ENOENT);
	/* said at once, while the OPEN chunk still takes records */
	CHECK_EQ(shmlog_check(h), -ESTALE);

	/* the OPEN chunk goes on, then -ESTALE, and it stays so */
	n = write_until_fail(h, per_chunk + 1, &err);
	CHECK_EQ(err, -ESTALE);
	CHECK(n < per_chunk);
	CHECK_EQ(shmlog_write(h, SHMLOG_ERROR, "rm", "again"), -ESTALE);
	CHECK_EQ(shmlog_write_ex(h, 0, 1, SHMLOG_INFO, "rm", "for pid 1", 9),
		 -ESTALE);
	/* a tag too long for the leaf: the general path */
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "a-tag-longer-than-the-leaf-takes",
			      "general"),
		 -ESTALE);
	CHECK_EQ(shmlog_print(h, SHMLOG_INFO, "rm", "printf %d %s", 42, "x"),
		 -ESTALE);
	/* the typed macro returns nothing: it must neither crash nor write */
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "rm", "typed %d %s", 42, "x");

	/* another thread of the process: its first chunk is refused too */
	struct thread_arg a = {.h = h};
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, second_writer, &a) == 0);
	pthread_join(t, NULL);
	CHECK(a.err == -ESTALE || a.err == -EAGAIN);
	CHECK(a.written < per_chunk);

	/* created again: the old handle still says -ESTALE (its file is the
	 * removed one); opened again by name, it writes into the new one */
	REQUIRE(shmlog_create(name, &o) == 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "rm", "still stale"), -ESTALE);
	CHECK_EQ(shmlog_check(h), -ESTALE);
	shmlog_close(h);
	REQUIRE(shmlog_open(name, 0, &h) == 0);
	CHECK_EQ(shmlog_check(h), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "rm", "after"), 0);
	n = write_until_fail(h, 4 * per_chunk, &err);
	CHECK_EQ(err, 0);
	CHECK_EQ(count_records(name) >= 1, 1);
	CHECK_EQ(shmlog_check(h), 0);

	/* unlinked without shmlog_remove() (rm(1)): nothing marks the file,
	 * so writes go on lapping it for good; the name tells. Then a new
	 * buffer under the name: still not the file @h maps. */
	char path[512];
	REQUIRE(shmlog_path(name, path, sizeof(path)) > 0);
	REQUIRE(unlink(path) == 0);
	CHECK_EQ(shmlog_check(h), -ESTALE);
	n = write_until_fail(h, 4 * per_chunk, &err);
	CHECK_EQ(err, 0);
	REQUIRE(shmlog_create(name, &o) == 0);
	CHECK_EQ(shmlog_check(h), -ESTALE);
	shmlog_close(h);
	shmlog_remove(name);
	return test_done("test_removed");
}
