/* SPDX-License-Identifier: MIT */
/*
 * shmlog_reader_wait_any(): one wait over readers of several buffers.
 * A writer in another process writes into one buffer once the waiting
 * reader is asleep (it watches the buffer's sleepers flag): the wait
 * returns that buffer's index, and only that reader has a record. The
 * timeout is honoured (never early), a signal ends the wait with -EINTR,
 * a reader whose file was truncated is ready and reports -EIO, NULL
 * entries are skipped, bad arguments are refused.
 */
#include <signal.h>
#include <sys/wait.h>

#include "internal.h"
#include "test.h"

#define NBUF 3
/* how long a helper waits for the reader to fall asleep before it goes
 * on anyway (a kernel without futex_waitv: the reader polls, and never
 * sets the flag) */
#define ASLEEP_MAX_MS 3000

static const char *names[NBUF];
static shmlog_reader_t *rs[NBUF];

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* In a helper: poll @h's buffer until a reader says it sleeps there,
 * at most ASLEEP_MAX_MS (1 ms between looks). */
static void until_reader_asleep(shmlog_t *h)
{
	uint64_t end = mono_ms() + ASLEEP_MAX_MS;
	while (!atomic_load(&h->seg.hdr->notify.sleepers) && mono_ms() < end) {
		struct timespec d = {0, 1000000};
		nanosleep(&d, NULL);
	}
}

/* A helper process: once the reader sleeps on buffer @k, write one
 * record "to @k" there (@sig 0), or send the parent @sig instead. */
static pid_t helper(int k, int sig)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid)
		return pid;
	shmlog_t *h;
	if (shmlog_open(names[k], 0, &h))
		_exit(2);
	until_reader_asleep(h);
	if (sig) {
		kill(parent, sig);
		_exit(0);
	}
	char msg[32];
	snprintf(msg, sizeof(msg), "to %d", k);
	_exit(shmlog_write(h, SHMLOG_INFO, "wait_any", msg) ? 3 : 0);
}

static void reap(pid_t pid)
{
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Every reader has nothing but reader @k (-1: none) one record. */
static void only_one_record(int k)
{
	for (int i = 0; i < NBUF; i++) {
		struct shmlog_record rec;
		int ev = shmlog_reader_next(rs[i], &rec, NULL);
		if (i != k) {
			CHECK_EQ(ev, SHMLOG_EV_NONE);
			continue;
		}
		CHECK_EQ(ev, SHMLOG_EV_RECORD);
		char want[32];
		snprintf(want, sizeof(want), "to %d", k);
		if (ev == SHMLOG_EV_RECORD)
			CHECK_STR(rec.msg, want);
		CHECK_EQ(shmlog_reader_next(rs[i], &rec, NULL), SHMLOG_EV_NONE);
	}
}

static void bad_arguments(void)
{
	shmlog_reader_t *none[NBUF] = {NULL, NULL, NULL};
	CHECK_EQ(shmlog_reader_wait_any(NULL, 1, 0), -EINVAL);
	CHECK_EQ(shmlog_reader_wait_any(rs, SHMLOG_WAIT_ANY_MAX + 1, 0),
		 -EINVAL);
	CHECK_EQ(shmlog_reader_wait_any(none, NBUF, -1), -EINVAL);
	/* no reader: a sleep, as poll(2) with no descriptor */
	uint64_t t0 = mono_ms();
	CHECK_EQ(shmlog_reader_wait_any(none, NBUF, 30), -ETIMEDOUT);
	CHECK(mono_ms() - t0 >= 30);
}

static void timeout_honoured(void)
{
	CHECK_EQ(shmlog_reader_wait_any(rs, NBUF, 0), -ETIMEDOUT);
	uint64_t t0 = mono_ms();
	CHECK_EQ(shmlog_reader_wait_any(rs, NBUF, 150), -ETIMEDOUT);
	CHECK(mono_ms() - t0 >= 150);
}

/* A writer in another process, into each buffer in turn (last first):
 * the wait wakes for it and names its buffer. */
static void right_index(void)
{
	static const int order[] = {2, 0, 1, 2};
	for (size_t j = 0; j < sizeof(order) / sizeof(order[0]); j++) {
		int k = order[j];
		pid_t pid = helper(k, 0);
		int got = shmlog_reader_wait_any(rs, NBUF, 30000);
		CHECK_EQ(got, k);
		reap(pid);
		only_one_record(k);
	}
	/* a record already there: found by the first look, no sleep */
	shmlog_t *h;
	REQUIRE(shmlog_open(names[1], 0, &h) == 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "wait_any", "to 1"), 0);
	shmlog_close(h);
	CHECK_EQ(shmlog_reader_wait_any(rs, NBUF, 0), 1);
	only_one_record(1);
	/* a NULL entry is skipped: the others are still watched */
	shmlog_reader_t *some[NBUF] = {rs[0], NULL, rs[2]};
	pid_t pid = helper(2, 0);
	CHECK_EQ(shmlog_reader_wait_any(some, NBUF, 30000), 2);
	reap(pid);
	only_one_record(2);
}

/* A signal (no SA_RESTART) ends a wait with no timeout. */
static void interrupted(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
	pid_t pid = helper(0, SIGALRM);
	int got = shmlog_reader_wait_any(rs, NBUF, -1);
	CHECK_EQ(got, -EINTR);
	reap(pid);
	only_one_record(-1);
	signal(SIGALRM, SIG_DFL);
}

/* Buffer 1's file truncated: its reader is ready, reports -EIO once;
 * without it the set is quiet again. */
static void truncated(void)
{
	char path[512];
	REQUIRE(shmlog_path(names[1], path, sizeof(path)) > 0);
	REQUIRE(truncate(path, 4096) == 0);
	CHECK_EQ(shmlog_reader_wait_any(rs, NBUF, 30000), 1);
	struct shmlog_record rec;
	CHECK_EQ(shmlog_reader_next(rs[1], &rec, NULL), -EIO);
	CHECK_EQ(shmlog_reader_next(rs[1], &rec, NULL), SHMLOG_EV_NONE);
	shmlog_reader_t *rest[NBUF] = {rs[0], NULL, rs[2]};
	CHECK_EQ(shmlog_reader_wait_any(rest, NBUF, 20), -ETIMEDOUT);
}

int main(void)
{
	for (int i = 0; i < NBUF; i++) {
		char stem[16];
		snprintf(stem, sizeof(stem), "wait-any%d", i);
		names[i] = test_buffer(stem);
		struct shmlog_create_opts o;
		shmlog_create_opts_init(&o);
		o.size = 256 * 1024;
		o.lanes = 2;
		REQUIRE(shmlog_create(names[i], &o) == 0);
		REQUIRE(shmlog_reader_open(names[i], 0, &rs[i]) == 0);
	}
	bad_arguments();
	timeout_honoured();
	right_index();
	interrupted();
	truncated();
	for (int i = 0; i < NBUF; i++) {
		shmlog_reader_close(rs[i]);
		shmlog_remove(names[i]);
	}
	return test_done("test_wait_any");
}
