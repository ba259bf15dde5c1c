/* SPDX-License-Identifier: MIT */
/*
 * shmlog_reader_wait_any(): one wait over readers of several buffers, on
 * both of the ways it can wait.
 *
 * CTest runs it twice. test_wait_any runs it as is: a set of readers
 * sleeps on all its buffers' futexes at once with futex_waitv(2).
 * test_wait_any_poll runs it with --poll: a seccomp filter makes
 * futex_waitv(2) fail with ENOSYS, as a kernel before 5.16 does, so the
 * set falls back to a look every 10 ms. Each run checks that it took the
 * path it names: test point 17 counts the looks of the poll (none on the
 * futex path, when the kernel has futex_waitv(2)) and times them.
 *
 * On each path:
 * - bad arguments are refused with -EINVAL: @r NULL; no reader and a
 *   negative timeout; @n one above SHMLOG_WAIT_ANY_MAX, every entry a
 *   reader, at once although one has a record. With no reader and a
 *   timeout, a plain sleep;
 * - the timeout is honoured, never early: 0 (only look), 1, 7, 10, 25
 *   and 150 ms;
 * - a writer in another process writes into one buffer once the reader
 *   waits (it watches the buffer's sleepers flag, or the poll's test
 *   point): the wait returns that buffer's index, and only that reader
 *   has a record; on the poll path, its first look after the write
 *   finds it (woken_by()), and its looks come every 10 ms, never sooner
 *   (main() checks the gaps). Each buffer in turn, a
 *   record already there, NULL entries skipped, one live reader (which
 *   sleeps on its futex with FUTEX_WAIT, even where futex_waitv(2) is
 *   refused: no poll);
 * - SHMLOG_WAIT_ANY_MAX readers over as many 64 KiB buffers: the timeout,
 *   then a writer into the last buffer, into the middle one and into one
 *   drawn at random (its index printed): the wait names it;
 * - a signal (no SA_RESTART) ends a wait with no timeout, and one with a
 *   long timeout, with -EINTR;
 * - a reader whose file was truncated is ready, and reports -EIO.
 * Every buffer is removed at the end, also when a REQUIRE stops the test.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "internal.h"
#include "reader.h"
#include "seccomp_errno.h"
#include "test.h"

#define NBUF 3
#define MAXBUF SHMLOG_WAIT_ANY_MAX
/* How long a helper waits for the reader to sleep or poll: the reader
 * needs a few microseconds of CPU to get there; a helper that never sees
 * it fails the test rather than hang. */
#define ASLEEP_MAX_MS 10000
/* A signal handled while the reader looks between two sleeps goes
 * unnoticed (as one handled just before poll(2)): a helper sends it again
 * every SIGNAL_EVERY_MS until the wait returns, at most SIGNAL_TRIES;
 * then it writes a record, so that a wait that ignores signals ends (and
 * fails the test) rather than hang. */
#define SIGNAL_EVERY_MS 50
#define SIGNAL_TRIES 100
/* The poll's look interval (shmlog_reader.h), and what a machine may add
 * to the shortest of many (on a quiet machine, within a millisecond). */
#define LOOK_MS 10
#define LOOK_SLACK_MS 100

/* Shared with the helpers (MAP_SHARED, made before any fork). */
struct shared {
	_Atomic uint32_t polling; /* test point 17 passed since cleared */
	_Atomic uint32_t done; /* the wait returned: stop signalling */
	_Atomic uint32_t signals; /* signals the last helper sent */
	_Atomic uint32_t committed; /* the helper's write returned */
	_Atomic uint64_t wrote_ns; /* CLOCK_MONOTONIC before the write */
};
static struct shared *sh;

static bool poll_path; /* --poll: futex_waitv(2) refused */
static bool waitv_works; /* futex_waitv(2) not refused here */
static unsigned long polls; /* looks of the poll (test point 17) */
static unsigned looks_after; /* ... after the helper's write returned */
/* The gaps between two looks of a wait (a nap, a look), but for the
 * last of each wait, whose nap the timeout or a signal may cut short. */
static uint64_t last_look_ns; /* the wait's last look; 0: none yet */
static uint64_t gap_ns; /* the gap before it, 0: none */
static uint64_t gap_min_ns = UINT64_MAX, gap_max_ns;
static unsigned wakeups;
static uint64_t latency_max_ns;

static const char *names[NBUF];
static shmlog_reader_t *rs[NBUF];
static char max_names[MAXBUF][96];
/* the buffers of the maximal set, and the first of them again: n one
 * above the maximum, every entry a real reader */
static shmlog_reader_t *mr[MAXBUF + 1];

/* Every buffer made, removed at exit by the process that made them. */
static const char *made[NBUF + MAXBUF];
static unsigned made_n;
static pid_t owner;

static void remove_made(void)
{
	if (getpid() != owner)
		return;
	while (made_n)
		shmlog_remove(made[--made_n]);
}

static void make_buffer(const char *name, size_t size,
			shmlog_reader_t **r)
{
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = size;
	o.lanes = 2;
	REQUIRE(shmlog_create(name, &o) == 0);
	made[made_n++] = name;
	REQUIRE(shmlog_reader_open(name, 0, r) == 0);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void pause_ms(unsigned ms)
{
	struct timespec d = {0, (long)ms * 1000000};
	nanosleep(&d, NULL);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void at_point(int point)
{
	if (point != 17)
		return;
	uint64_t now = mono_ns();
	polls++;
	looks_after += atomic_load(&sh->committed);
	if (gap_ns && gap_ns < gap_min_ns)
		gap_min_ns = gap_ns;
	if (gap_ns > gap_max_ns)
		gap_max_ns = gap_ns;
	gap_ns = last_look_ns ? now - last_look_ns : 0;
	last_look_ns = now;
	atomic_store(&sh->polling, 1);
}

/* Make futex_waitv(2) fail with ENOSYS in this process and its children,
 * as on a kernel that does not have it. 0, or -errno. */
static int refuse_waitv(void)
{
	return seccomp_errno(SYS_futex_waitv, ENOSYS);
}

/* Does the kernel take futex_waitv(2)? With no futex it answers EINVAL;
 * without the call (or refused), ENOSYS. */
static bool have_waitv(void)
{
	return syscall(SYS_futex_waitv, NULL, 0, 0, NULL, 0) < 0 &&
	       errno != ENOSYS;
}

/* In a helper: wait until the reader sleeps on @h's buffer (its sleepers
 * flag) or polls (test point 17), at most ASLEEP_MAX_MS. */
static bool until_reader_asleep(shmlog_t *h)
{
	uint64_t end = mono_ns() + (uint64_t)ASLEEP_MAX_MS * 1000000;
	while (!atomic_load(&h->seg.hdr->notify.sleepers) &&
	       !atomic_load(&sh->polling)) {
		if (mono_ns() >= end)
			return false;
		pause_ms(1);
	}
	return true;
}

/* In a helper: send the parent @sig until its wait returned. */
static int signal_until_done(pid_t parent, int sig, shmlog_t *h)
{
	for (int i = 0; i < SIGNAL_TRIES; i++) {
		atomic_fetch_add(&sh->signals, 1);
		kill(parent, sig);
		for (int t = 0; t < SIGNAL_EVERY_MS; t++) {
			if (atomic_load(&sh->done))
				return 0;
			pause_ms(1);
		}
	}
	shmlog_write(h, SHMLOG_INFO, "wait_any", "no signal seen");
	return 5;
}

/* A helper process: once the reader waits (@r is its reader of buffer
 * @name), write one record "to @k" there (@sig 0), or send the parent
 * @sig instead. Flags an earlier wait left set are cleared first, so that
 * the helper sees this wait's. */
static pid_t helper(const char *name, shmlog_reader_t *r, int k, int sig)
{
	atomic_store(&r->seg.hdr->notify.sleepers, 0);
	atomic_store(&sh->polling, 0);
	atomic_store(&sh->done, 0);
	atomic_store(&sh->signals, 0);
	atomic_store(&sh->committed, 0);
	atomic_store(&sh->wrote_ns, 0);
	looks_after = 0;
	last_look_ns = gap_ns = 0;
	pid_t parent = getpid();
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid)
		return pid;
	shmlog_t *h;
	if (shmlog_open(name, 0, &h))
		_exit(2);
	if (!until_reader_asleep(h))
		_exit(4);
	if (sig)
		_exit(signal_until_done(parent, sig, h));
	char msg[32];
	snprintf(msg, sizeof(msg), "to %d", k);
	atomic_store(&sh->wrote_ns, mono_ns());
	if (shmlog_write(h, SHMLOG_INFO, "wait_any", msg))
		_exit(3);
	atomic_store(&sh->committed, 1);
	_exit(0);
}

static void reap(pid_t pid)
{
	int st;
	atomic_store(&sh->done, 1);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Of the @n readers of @set, reader @k (-1: none) has one record, every
 * other none. */
static void only_one_record(shmlog_reader_t *const *set, size_t n, int k)
{
	for (size_t i = 0; i < n; i++) {
		if (!set[i])
			continue;
		struct shmlog_record rec;
		int ev = shmlog_reader_next(set[i], &rec, NULL);
		if ((int)i != k) {
			CHECK_EQ(ev, SHMLOG_EV_NONE);
			continue;
		}
		CHECK_EQ(ev, SHMLOG_EV_RECORD);
		char want[32];
		snprintf(want, sizeof(want), "to %d", k);
		if (ev == SHMLOG_EV_RECORD)
			CHECK_STR(rec.msg, want);
		CHECK_EQ(shmlog_reader_next(set[i], &rec, NULL),
			 SHMLOG_EV_NONE);
	}
}

/* A writer in another process writes into buffer @name, read by
 * @set[@k], once the wait over @set sleeps: the wait wakes and names @k.
 * The poll's first look after the write returned finds the record (test
 * point 17 comes just before a look): with its looks every 10 ms
 * (checked in main()), that is the poll's promise whatever the machine's
 * load adds. The delay in wall-clock time is reported. */
static void woken_by(shmlog_reader_t *const *set, size_t n, int k,
		     const char *name)
{
	pid_t pid = helper(name, set[k], k, 0);
	int got = shmlog_reader_wait_any(set, n, 30000);
	uint64_t now = mono_ns(), wrote = atomic_load(&sh->wrote_ns);
	CHECK_EQ(got, k);
	reap(pid);
	CHECK(looks_after <= 1);
	if (got == k && wrote) {
		wakeups++;
		if (now - wrote > latency_max_ns)
			latency_max_ns = now - wrote;
	}
	only_one_record(set, n, k);
}

/* -ETIMEDOUT, never before @ms. */
static void times_out(shmlog_reader_t *const *set, size_t n, int ms)
{
	last_look_ns = gap_ns = 0;
	uint64_t t0 = mono_ns();
	CHECK_EQ(shmlog_reader_wait_any(set, n, ms), -ETIMEDOUT);
	CHECK(mono_ns() - t0 >= (uint64_t)ms * 1000000);
}

static void bad_arguments(void)
{
	shmlog_reader_t *none[NBUF] = {NULL, NULL, NULL};
	CHECK_EQ(shmlog_reader_wait_any(NULL, 1, 0), -EINVAL);
	CHECK_EQ(shmlog_reader_wait_any(none, NBUF, -1), -EINVAL);
	CHECK_EQ(shmlog_reader_wait_any(none, NBUF, -2), -EINVAL);
	/* no reader: a sleep, as poll(2) with no descriptor */
	times_out(none, NBUF, 30);
	times_out(none, 0, 5);
}

static void timeout_honoured(void)
{
	static const int ms[] = {0, 1, 7, 10, 25, 150};
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
		times_out(rs, NBUF, ms[i]);
}

/* A writer in another process, into each buffer in turn (last first):
 * the wait wakes for it and names its buffer. */
static void right_index(void)
{
	static const int order[] = {2, 0, 1, 2};
	for (size_t j = 0; j < sizeof(order) / sizeof(order[0]); j++)
		woken_by(rs, NBUF, order[j], names[order[j]]);
	/* a record already there: found by the first look, no sleep */
	shmlog_t *h;
	REQUIRE(shmlog_open(names[1], 0, &h) == 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "wait_any", "to 1"), 0);
	shmlog_close(h);
	CHECK_EQ(shmlog_reader_wait_any(rs, NBUF, 0), 1);
	only_one_record(rs, NBUF, 1);
	/* a NULL entry is skipped: the others are still watched */
	shmlog_reader_t *some[NBUF] = {rs[0], NULL, rs[2]};
	woken_by(some, NBUF, 2, names[2]);
	/* one live reader sleeps on its futex alone (FUTEX_WAIT), with or
	 * without futex_waitv(2): no poll */
	shmlog_reader_t *one[NBUF] = {NULL, rs[1], NULL};
	unsigned long before = polls;
	woken_by(one, NBUF, 1, names[1]);
	if (rs[1]->membarrier_ok)
		CHECK_EQ(polls, before);
}

/* A signal (no SA_RESTART) ends a wait, with no timeout and with a long
 * one. */
static void interrupted(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	REQUIRE(sigaction(SIGALRM, &sa, NULL) == 0);
	static const int ms[] = {-1, 30000};
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		pid_t pid = helper(names[0], rs[0], 0, SIGALRM);
		CHECK_EQ(shmlog_reader_wait_any(rs, NBUF, ms[i]), -EINTR);
		reap(pid);
		if (atomic_load(&sh->signals) > 1)
			printf("wait_any: %u signals to end one wait\n",
			       atomic_load(&sh->signals));
		only_one_record(rs, NBUF, -1);
	}
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
	times_out(rest, NBUF, 20);
}

/* SHMLOG_WAIT_ANY_MAX readers over as many of the smallest buffers. */
static void at_the_maximum(void)
{
	for (int i = 0; i < MAXBUF; i++) {
		snprintf(max_names[i], sizeof(max_names[i]),
			 "test-wait-max%d-%d", i, (int)getpid());
		make_buffer(max_names[i], SHMLOG_SIZE_MIN, &mr[i]);
	}
	mr[MAXBUF] = mr[0];
	/* one above the maximum: refused at once, though buffer 0 has a
	 * record and there is no timeout */
	shmlog_t *h;
	REQUIRE(shmlog_open(max_names[0], 0, &h) == 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "wait_any", "to 0"), 0);
	shmlog_close(h);
	CHECK_EQ(shmlog_reader_wait_any(mr, MAXBUF + 1, -1), -EINVAL);
	CHECK_EQ(shmlog_reader_wait_any(mr, MAXBUF, -1), 0);
	only_one_record(mr, MAXBUF, 0);

	times_out(mr, MAXBUF, 0);
	times_out(mr, MAXBUF, 25);
	woken_by(mr, MAXBUF, MAXBUF - 1, max_names[MAXBUF - 1]);
	woken_by(mr, MAXBUF, MAXBUF / 2, max_names[MAXBUF / 2]);
	int k = 1 + (int)(mono_ns() / 1000 % (MAXBUF - 2));
	printf("wait_any: %d readers, a writer into buffer %d\n", MAXBUF, k);
	woken_by(mr, MAXBUF, k, max_names[k]);
	for (int i = 0; i < MAXBUF; i++)
		shmlog_reader_close(mr[i]);
}

int main(int argc, char **argv)
{
	const char *name = "test_wait_any";
	if (argc > 1 && !strcmp(argv[1], "--poll")) {
		name = "test_wait_any_poll";
		poll_path = true;
		int err = refuse_waitv();
		if (err)
			test_skip(name, "cannot refuse futex_waitv(2) "
				  "with a seccomp filter here: %s",
				  strerror(-err));
	}
	waitv_works = have_waitv();
	CHECK(!poll_path || !waitv_works);
	owner = getpid();
	REQUIRE(atexit(remove_made) == 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(sh != MAP_FAILED);
	shmlog__testpoint_hook = at_point;
	for (int i = 0; i < NBUF; i++) {
		char stem[16];
		snprintf(stem, sizeof(stem), "wait-any%d", i);
		names[i] = test_buffer(stem);
		make_buffer(names[i], 256 * 1024, &rs[i]);
	}
	uint64_t t0 = mono_ns();
	bad_arguments();
	timeout_honoured();
	right_index();
	interrupted();
	at_the_maximum();
	truncated();
	/* the path this run names is the one it took */
	bool sleeps = waitv_works && rs[0]->membarrier_ok;
	if (poll_path || sleeps)
		CHECK(poll_path ? polls > 0 : polls == 0);
	/* a poll looks every 10 ms: never sooner (a nap is never cut short
	 * but by the end of the wait), and the shortest gap between two
	 * looks shows it, however long a busy machine kept some of them */
	if (polls) {
		CHECK(gap_min_ns != UINT64_MAX);
		CHECK(gap_min_ns >= (uint64_t)LOOK_MS * 1000000);
		CHECK(gap_min_ns <=
		      (uint64_t)(LOOK_MS + LOOK_SLACK_MS) * 1000000);
	}
	printf("%s: %s", name,
	       polls ? "looks every 10 ms" : "asleep on futexes");
	if (polls)
		printf(" (%lu looks, %.3f to %.3f ms apart)", polls,
		       gap_min_ns / 1e6, gap_max_ns / 1e6);
	printf(", %u wake-ups, the slowest %.3f ms after its write; %.0f ms "
	       "in all\n",
	       wakeups, latency_max_ns / 1e6, (mono_ns() - t0) / 1e6);
	for (int i = 0; i < NBUF; i++)
		shmlog_reader_close(rs[i]);
	remove_made();
	return test_done(name);
}
