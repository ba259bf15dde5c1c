/* SPDX-License-Identifier: MIT */
/*
 * A minimal test harness: each test is a standalone program; CHECK failures
 * print where and why, and the program exits non-zero at the end.
 */
#ifndef SHMLOG_TEST_H
#define SHMLOG_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmlog.h"

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                            \
	do {                                                                   \
		test_checks++;                                                 \
		if (!(cond)) {                                                 \
			test_failures++;                                       \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long a_ = (long long)(a), b_ = (long long)(b);            \
		test_checks++;                                                 \
		if (a_ != b_) {                                                \
			test_failures++;                                       \
			fprintf(stderr,                                        \
				"%s:%d: CHECK_EQ failed: %s == %lld, %s == "   \
				"%lld\n",                                      \
				__FILE__, __LINE__, #a, a_, #b, b_);           \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *a_ = (a), *b_ = (b);                               \
		test_checks++;                                                 \
		if (!a_ || !b_ || strcmp(a_, b_)) {                            \
			test_failures++;                                       \
			fprintf(stderr,                                        \
				"%s:%d: CHECK_STR failed: %s == \"%s\", %s == " \
				"\"%s\"\n",                                    \
				__FILE__, __LINE__, #a, a_ ? a_ : "(null)",    \
				#b, b_ ? b_ : "(null)");                       \
		}                                                              \
	} while (0)

/* Fatal: stop the test now. */
#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: REQUIRE failed: %s\n",         \
				__FILE__, __LINE__, #cond);                    \
			exit(1);                                               \
		}                                                              \
	} while (0)

static inline int test_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
	return test_failures ? 1 : 0;
}

/* A test that cannot run its checks here says why on stderr and exits
 * TEST_SKIP, which CTest shows as skipped (SKIP_RETURN_CODE 77), never as
 * passed. */
#define TEST_SKIP 77
#define test_skip(name, ...)                                                   \
	do {                                                                   \
		fprintf(stderr, "%s: skipped: ", (name));                      \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		exit(TEST_SKIP);                                               \
	} while (0)

/* A buffer name private to this test process. */
static inline const char *test_buffer(const char *stem)
{
	static char buf[8][96];
	static int next;
	char *b = buf[next++ % 8];
	snprintf(b, sizeof(buf[0]), "test-%s-%d", stem, (int)getpid());
	return b;
}

/* A new buffer named after @stem (test_buffer()), of @size bytes and
 * @lanes lanes (0: the library's choice). */
static inline const char *test_create(const char *stem, uint64_t size,
				      unsigned lanes)
{
	const char *b = test_buffer(stem);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = size;
	o.lanes = lanes;
	REQUIRE(shmlog_create(b, &o) == 0);
	return b;
}

/* @n pages of private memory, those whose bit is set in @none unreadable
 * (PROT_NONE): a read past a string that ends a page faults. Given back
 * with munmap(p, n * sysconf(_SC_PAGESIZE)). */
static inline char *test_pages(unsigned n, unsigned none)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, page * n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	for (unsigned i = 0; i < n; i++)
		if (none >> i & 1)
			REQUIRE(mprotect(p + i * page, page, PROT_NONE) == 0);
	return p;
}

/* Has follower @r read everything published? Call it when its
 * shmlog_reader_next() said SHMLOG_EV_NONE: a follower's next() may say
 * that with records still to come (a look not yet due, a lane it rests
 * on), and a wait that only looks, which also ends its rests, finding
 * nothing is the one sure sign (shmlog.h). false: read on. Bounded: a
 * follower found not caught up TEST_CATCH_UP_MAX times in a row fails the
 * test and is let go. */
#define TEST_CATCH_UP_MAX 100000u
static inline bool test_caught_up(shmlog_reader_t *r)
{
	static unsigned behind;
	if (shmlog_reader_wait(r, 0) == -ETIMEDOUT || behind >= TEST_CATCH_UP_MAX) {
		CHECK(behind < TEST_CATCH_UP_MAX);
		behind = 0;
		return true;
	}
	behind++;
	return false;
}

/* Sum the counters of every lane of @r into *@sum, checking on the way
 * that each lane's books balance: written = read + overwritten + torn +
 * skipped (valid once the reader has drained the buffer). */
#define test_sum_lanes(r, sum)                                                 \
	do {                                                                   \
		memset((sum), 0, sizeof(*(sum)));                              \
		for (unsigned k_ = 0; k_ < shmlog_reader_lanes(r); k_++) {     \
			struct shmlog_lane_stats st_;                          \
			CHECK_EQ(shmlog_reader_lane_stats((r), k_, &st_), 0);  \
			CHECK_EQ(st_.written, st_.read + st_.overwritten +     \
						      st_.torn + st_.skipped); \
			(sum)->written += st_.written;                         \
			(sum)->read += st_.read;                               \
			(sum)->overwritten += st_.overwritten;                 \
			(sum)->torn += st_.torn;                               \
			(sum)->skipped += st_.skipped;                         \
		}                                                              \
	} while (0)

#endif
