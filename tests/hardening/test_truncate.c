/* SPDX-License-Identifier: MIT */
/*
 * The segment truncated under a reader by another process.
 *
 * Whoever may write the file may ftruncate(2) it; touching a page of a
 * shared mapping past the new end of the file raises SIGBUS. The reader
 * must survive it (reader.c catches the fault), report -EIO once, then
 * nothing; shmlog_reader_wait() keeps saying -EIO; a new reader refuses
 * the file (-ENODATA). A SIGBUS that is not a reader's still kills the
 * process, or reaches the handler the application installed before.
 *
 * usage: test_truncate [ROUNDS]
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "selfcheck.h"
#include "test.h"

static char *path_of(const char *name)
{
	static char p[512];
	REQUIRE(shmlog_path(name, p, sizeof(p)) > 0);
	return p;
}

/* Truncate @name to @size from another process, as a hostile one would. */
static void truncate_elsewhere(const char *name, off_t size)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int fd = open(path_of(name), O_RDWR);
		_exit(fd >= 0 && ftruncate(fd, size) == 0 ? 0 : 1);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void fill(const char *b, unsigned w, long n)
{
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	REQUIRE(sc_write(h, w, 0, n) == 0);
	shmlog_close(h);
}

/* Read until the reader reports something other than a record; every
 * record it gave must be intact. Returns the final event. */
static int read_until_error(shmlog_reader_t *r, long *good, long *bad)
{
	struct shmlog_record rec;
	struct shmlog_lost lost;
	for (long k = 0; k < 1000000; k++) {
		int ev = shmlog_reader_next(r, &rec, &lost);
		if (ev == SHMLOG_EV_LOST)
			continue;
		if (ev != SHMLOG_EV_RECORD)
			return ev;
		unsigned w;
		uint64_t i;
		if (sc_check(&rec, &w, &i))
			++*good;
		else
			++*bad;
	}
	return 1000; /* never ended: a loop */
}

/* Truncate to @size after reading @before records of a full buffer. */
static void truncate_case(off_t size, long before)
{
	const char *b = test_create("trunc", 256 * 1024, 4);
	fill(b, 1, 3000);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	long good = 0, bad = 0;
	for (long k = 0; k < before; k++)
		if (shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD)
			good++;
	truncate_elsewhere(b, size);
	int ev = read_until_error(r, &good, &bad);
	CHECK_EQ(ev, -EIO);
	CHECK_EQ(bad, 0);
	/* then nothing, so that loops until SHMLOG_EV_NONE end */
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_NONE);
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_NONE);
	CHECK_EQ(shmlog_reader_wait(r, 0), -EIO);
	CHECK_EQ(shmlog_reader_wait(r, -1), -EIO); /* never sleeps */
	struct shmlog_lane_stats st;
	CHECK_EQ(shmlog_reader_lane_stats(r, 0, &st), 0);
	shmlog_reader_close(r);
	/* a new reader does not take the remains for a buffer */
	shmlog_reader_t *r2 = NULL;
	CHECK_EQ(shmlog_reader_open(b, 0, &r2), size < 4096 ? -ENODATA : -ENODATA);
	printf("truncated to %lld after %ld records: %ld intact records, "
	       "then -EIO\n",
	       (long long)size, before, good);
	shmlog_remove(b);
}

/* A follower, live writers, and a truncation at a random moment. */
static void live_case(unsigned seed)
{
	const char *b = test_create("trlive", 128 * 1024, 4);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	pid_t w[2];
	for (int k = 0; k < 2; k++) {
		w[k] = fork();
		REQUIRE(w[k] >= 0);
		if (w[k] == 0) {
			/* writers are not protected from SIGBUS: they die
			 * of the truncation (docs/SECURITY.md) */
			signal(SIGBUS, SIG_DFL); /* no sanitizer report */
			shmlog_t *h;
			if (shmlog_open(b, 0, &h))
				_exit(1);
			char tag[16], msg[512];
			int prio;
			for (uint64_t i = 0;; i++) {
				size_t len = sc_make((unsigned)k, i, tag, &prio,
						     msg);
				shmlog_write_n(h, prio, tag, msg, len);
				if (i % 64 == 0)
					usleep(100);
			}
		}
	}
	long until = 200 + (long)(sc_mix(seed) % 3000);
	long good = 0, bad = 0, n = 0;
	bool truncated = false;
	int ev = 0;
	off_t sizes[] = {0, 4096, 8192, 64 * 1024};
	for (long spins = 0; spins < 2000000; spins++) {
		struct shmlog_record rec;
		ev = shmlog_reader_next(r, &rec, NULL);
		if (ev < 0)
			break;
		if (ev == SHMLOG_EV_RECORD) {
			unsigned ww;
			uint64_t i;
			if (sc_check(&rec, &ww, &i))
				good++;
			else
				bad++;
		} else {
			shmlog_reader_wait(r, 10);
		}
		if (!truncated && ++n >= until) {
			truncate_elsewhere(b, sizes[seed % 4]);
			truncated = true;
		}
	}
	CHECK_EQ(ev, -EIO);
	CHECK_EQ(bad, 0);
	for (int k = 0; k < 2; k++) {
		kill(w[k], SIGKILL);
		waitpid(w[k], NULL, 0);
	}
	shmlog_reader_close(r);
	shmlog_remove(b);
}

/* A SIGBUS that is not a reader's copy: the process dies of it as before,
 * or the application's own handler runs. */
static volatile sig_atomic_t app_handler_ran;
static void app_handler(int sig)
{
	(void)sig;
	app_handler_ran = 1;
	_exit(42);
}

static void foreign_fault(bool with_app_handler)
{
	const char *b = test_buffer("foreign");
	REQUIRE(shmlog_create(b, NULL) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (with_app_handler)
			signal(SIGBUS, app_handler);
		shmlog_reader_t *r;
		if (shmlog_reader_open(b, 0, &r)) /* installs its handler */
			_exit(11);
		char tmp[] = "/dev/shm/shmlog-test-bus-XXXXXX";
		int fd = mkstemp(tmp);
		if (fd < 0 || ftruncate(fd, 8192))
			_exit(12);
		unlink(tmp);
		volatile char *p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || ftruncate(fd, 0))
			_exit(13);
		char c = p[4096]; /* SIGBUS, outside any reader */
		(void)c;
		_exit(14); /* survived: the reader's handler swallowed it */
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (with_app_handler)
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
	else /* killed by it; or a sanitizer's handler reported it and
	      * exited (ASan: 1, TSan: 66); never survived (14) */
		CHECK((WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS) ||
		      (WIFEXITED(st) && WEXITSTATUS(st) != 0 &&
		       (WEXITSTATUS(st) < 11 || WEXITSTATUS(st) > 14)));
	shmlog_remove(b);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 6;
	/* 0: nothing left; 4096: header only, the lane table faults;
	 * 8192: the lane table, no records; 64 KiB: some lanes left */
	off_t sizes[] = {0, 4096, 8192, 64 * 1024};
	for (int k = 0; k < 4; k++) {
		truncate_case(sizes[k], 0);
		truncate_case(sizes[k], 100);
	}
	for (long k = 0; k < rounds; k++)
		live_case((unsigned)k);
	foreign_fault(false);
	foreign_fault(true);
	return test_done("test_truncate");
}
