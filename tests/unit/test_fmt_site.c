/* SPDX-License-Identifier: MIT */
/*
 * The call-site cache of deferred printf-style calls (SHMLOG_LOG_TO and
 * the SHMLOG_x macros): a site keeps its format's plan and its id in the
 * buffer of the handle it last wrote to. Each case reads the records back
 * and compares them with snprintf of the same call: one site switching
 * between two buffers (each registers the format once), a handle closed
 * and opened again, a fork child writing through the parent's site,
 * threads racing to make one site (run under TSan too), a full table and
 * a refused format (the caller formats, every call counted), and two
 * formats through one site.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "internal.h"
#include "test.h"

/* One call site, as the macros make it. */
static void site_call(shmlog_t *h, int i)
{
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "site", "call %d from %s took %.3f ms",
		      i, "10.1.2.3", i * 0.125);
}

/* Read every record of @b: each must be a site_call() of some i, with
 * its text. Returns the records read; *@deferred: how many were stored as
 * values; *@from_pid, if not 0: how many came from that process. */
static int read_back(const char *b, int *deferred, uint32_t pid,
		     int *from_pid)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, n = 0;
	*deferred = 0;
	if (from_pid)
		*from_pid = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		int i = -1;
		CHECK(sscanf(rec.msg, "call %d", &i) == 1);
		char e[128];
		snprintf(e, sizeof(e), "call %d from %s took %.3f ms", i,
			 "10.1.2.3", i * 0.125);
		CHECK_STR(rec.msg, e);
		CHECK_STR(rec.tag, "site");
		*deferred += !!(rec.flags & SHMLOG_REC_DEFERRED);
		if (from_pid && rec.pid == pid)
			(*from_pid)++;
		n++;
	}
	shmlog_reader_close(r);
	return n;
}

static uint64_t formats_in(const char *b)
{
	struct shmlog_format_stats fs;
	REQUIRE(shmlog_stat_formats(b, &fs) == 0);
	return fs.formats;
}

static const char *fresh(const char *what, uint64_t size)
{
	const char *b = test_buffer(what);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	if (size)
		o.size = size;
	shmlog_remove(b);
	REQUIRE(shmlog_create(b, &o) == 0);
	return b;
}

/* One site, two buffers, in turn: every call deferred in the right
 * buffer, and each buffer's table holds the format once. */
static void two_buffers(void)
{
	char a[128], b[128];
	snprintf(a, sizeof(a), "%s", fresh("site-a", 0));
	snprintf(b, sizeof(b), "%s", fresh("site-b", 0));
	shmlog_t *ha, *hb;
	REQUIRE(shmlog_open(a, 0, &ha) == 0);
	REQUIRE(shmlog_open(b, 0, &hb) == 0);
	/* the format's id differs between the two: B's table has another
	 * format first */
	CHECK_EQ(shmlog_print_ex(hb, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "x",
				 "another format first: %d", 1),
		 0);
	REQUIRE(shmlog_clear(b) == 0);
	for (int i = 0; i < 200; i++)
		site_call(i % 2 ? hb : ha, i);
	int da, db;
	CHECK_EQ(read_back(a, &da, 0, NULL), 100);
	CHECK_EQ(read_back(b, &db, 0, NULL), 100);
	CHECK_EQ(da, 100);
	CHECK_EQ(db, 100);
	CHECK_EQ(formats_in(a), 1);
	CHECK_EQ(formats_in(b), 2);
	shmlog_close(ha);
	shmlog_close(hb);
	shmlog_remove(a);
	shmlog_remove(b);
}

/* A handle closed, the buffer opened again: the new handle registers the
 * format for itself (once), and the site follows it. */
static void reopen(void)
{
	const char *b = fresh("site-reopen", 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	for (int i = 0; i < 10; i++)
		site_call(h, i);
	shmlog_close(h);
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	for (int i = 10; i < 20; i++)
		site_call(h, i);
	int d;
	CHECK_EQ(read_back(b, &d, 0, NULL), 20);
	CHECK_EQ(d, 20);
	CHECK_EQ(formats_in(b), 2);
	shmlog_close(h);
	shmlog_remove(b);
}

/* The site made in the parent, used by a fork child through the handle it
 * inherited: the same buffer, the same id. */
static void fork_child(void)
{
	const char *b = fresh("site-fork", 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	for (int i = 0; i < 10; i++)
		site_call(h, i);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		for (int i = 10; i < 30; i++)
			site_call(h, i);
		_exit(0);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	int d, child;
	CHECK_EQ(read_back(b, &d, (uint32_t)pid, &child), 30);
	CHECK_EQ(child, 20);
	CHECK_EQ(d, 30);
	CHECK_EQ(formats_in(b), 1);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Threads racing to make one fresh site on one fresh handle. */
enum { THREADS = 8, PER_THREAD = 500 };
static pthread_barrier_t start;
static shmlog_t *race_h;

static void race_call(shmlog_t *h, int i)
{
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "site", "call %d from %s took %.3f ms",
		      i, "10.1.2.3", i * 0.125);
}

static void *racer(void *arg)
{
	int t = (int)(intptr_t)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < PER_THREAD; i++)
		race_call(race_h, t * PER_THREAD + i);
	return NULL;
}

static void threads_racing(void)
{
	const char *b = fresh("site-race", 8u << 20);
	REQUIRE(shmlog_open(b, 0, &race_h) == 0);
	REQUIRE(pthread_barrier_init(&start, NULL, THREADS) == 0);
	pthread_t th[THREADS];
	for (int t = 0; t < THREADS; t++)
		REQUIRE(pthread_create(&th[t], NULL, racer,
				       (void *)(intptr_t)t) == 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&start);
	int d;
	int n = read_back(b, &d, 0, NULL);
	printf("%d threads racing on one site: %d records read, %d stored as "
	       "values\n",
	       THREADS, n, d);
	CHECK_EQ(n, THREADS * PER_THREAD);
	/* a call that finds the format being made by another thread formats
	 * itself; every other is deferred */
	CHECK(d >= n - THREADS);
	CHECK_EQ(formats_in(b), 1);
	struct shmlog_format_stats fs;
	REQUIRE(shmlog_stat_formats(b, &fs) == 0);
	CHECK_EQ(fs.full, 0);
	CHECK_EQ(fs.refused, 0);
	shmlog_close(race_h);
	shmlog_remove(b);
}

/* A table full before the site's first call: the caller formats, each
 * call counted, and the site does not ask the table again. */
static void table_full(void)
{
	const char *b = fresh("site-full", 64 * 1024);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	static char fmts[600][64];
	for (int i = 0; i < 600; i++) {
		snprintf(fmts[i], sizeof(fmts[i]),
			 "call %d of many, value %%d, padding padding", i);
		CHECK_EQ(shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO,
					 "site", fmts[i], i),
			 0);
	}
	struct shmlog_format_stats fs, fs2;
	REQUIRE(shmlog_stat_formats(b, &fs) == 0);
	CHECK(fs.full > 0);
	shmlog_clear(b);
	for (int i = 0; i < 5; i++)
		site_call(h, i);
	REQUIRE(shmlog_stat_formats(b, &fs2) == 0);
	CHECK_EQ(fs2.full, fs.full + 5);
	CHECK_EQ(fs2.formats, fs.formats);
	int d;
	CHECK_EQ(read_back(b, &d, 0, NULL), 5);
	CHECK_EQ(d, 0);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A format the codec refuses (%m: the writer's errno): formatted by the
 * caller, as glibc would, each call counted. */
static void refused(void)
{
	const char *b = fresh("site-refused", 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	char e[128];
	errno = ENOENT;
	snprintf(e, sizeof(e), "open: %m");
	for (int i = 0; i < 3; i++) {
		errno = ENOENT;
		SHMLOG_LOG_TO(h, SHMLOG_WARN, "site", "open: %m");
	}
	struct shmlog_format_stats fs;
	REQUIRE(shmlog_stat_formats(b, &fs) == 0);
	CHECK_EQ(fs.refused, 3);
	CHECK_EQ(fs.formats, 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, n = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		CHECK_STR(rec.msg, e);
		CHECK(!(rec.flags & SHMLOG_REC_DEFERRED));
		n++;
	}
	CHECK_EQ(n, 3);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* What the key says, and two formats through one site (a caller of the
 * internal entry that does not keep to one literal): both right, the
 * site's key left to the first. */
static void one_site_two_formats(void)
{
	const char *b = fresh("site-two", 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	static struct shmlog_fmt_site site;
	static const char f1[] = "call %d from %s took %.3f ms";
	static const char f2[] = "call %d from %s took %.3f ms (again)";
	CHECK_EQ(site.key, 0);
	CHECK_EQ(shmlog__print_site(h, &site, SHMLOG_INFO, "site", f1, 1,
				    "10.1.2.3", 0.125),
		 0);
	uint64_t key = site.key;
	CHECK_EQ(key >> SHMLOG__SITE_ID_BITS, h->id);
	CHECK((key & SHMLOG__SITE_ID_MASK) >= 64);
	CHECK_EQ(shmlog__print_site(h, &site, SHMLOG_INFO, "site", f2, 2,
				    "10.1.2.3", 0.25),
		 0);
	CHECK_EQ(site.key, key);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, n = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		CHECK_STR(rec.msg, n == 0 ? "call 1 from 10.1.2.3 took 0.125 ms"
					  : "call 2 from 10.1.2.3 took 0.250 "
					    "ms (again)");
		CHECK(rec.flags & SHMLOG_REC_DEFERRED);
		n++;
	}
	CHECK_EQ(n, 2);
	CHECK_EQ(formats_in(b), 2);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

int main(void)
{
	two_buffers();
	reopen();
	fork_child();
	threads_racing();
	table_full();
	refused();
	one_site_two_formats();
	return test_done("test_fmt_site");
}
