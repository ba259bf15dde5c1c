/* SPDX-License-Identifier: MIT */
/*
 * One filter for every write: `shmlog level` (shmlog_set_filter()) and
 * $SHMLOG_TAGS govern shmlog_write(), shmlog_print() and the macros alike;
 * SHMLOG_WRITE_UNFILTERED bypasses them on purpose; shmlog_write_ex() logs
 * for another pid; SHMLOG_TAG gives the tagless macros their tag; and with
 * SHMLOG_DEBUG=1 the library says, once, why it logs nothing.
 */
#define SHMLOG_TAG "deftag"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shmlog.h"
#include "test.h"

static const char *bufname;
static const char *macro_buf;

static void cleanup(void)
{
	shmlog_remove(bufname);
	shmlog_remove(macro_buf);
}

/* Read every record of @name into "TAG/P/msg" lines, one string. */
static void dump(const char *name, char *out, size_t cap, uint32_t *last_pid)
{
	shmlog_reader_t *r;
	out[0] = '\0';
	REQUIRE(shmlog_reader_open(name, 0, &r) == 0);
	struct shmlog_record rec;
	size_t used = 0;
	while (shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD) {
		int n = snprintf(out + used, cap - used, "%s/%c/%s\n", rec.tag,
				 shmlog_prio_char(rec.prio), rec.msg);
		REQUIRE(n > 0 && (size_t)n < cap - used);
		used += (size_t)n;
		if (last_pid)
			*last_pid = rec.pid;
	}
	shmlog_reader_close(r);
}

static void test_api_filtered(void)
{
	shmlog_t *h;
	REQUIRE(shmlog_create(bufname, NULL) == 0);
	REQUIRE(shmlog_open(bufname, 0, &h) == 0);
	CHECK_EQ(shmlog_set_filter(bufname, "net:W *:I", NULL), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_DEBUG, "x", "x debug: filtered"), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "x", "x info"), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "net", "net info: filtered"), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_WARN, "net", "net warn"), 0);
	CHECK_EQ(shmlog_print(h, SHMLOG_DEBUG, "x", "%s", "print: filtered"), 0);
	CHECK_EQ(shmlog_print(h, SHMLOG_ERROR, "net", "print %d", 1), 0);
	CHECK_EQ(shmlog_write_ex(h, SHMLOG_WRITE_UNFILTERED, 0, SHMLOG_DEBUG,
				 "x", "unfiltered", 10),
		 0);
	CHECK_EQ(shmlog_print_ex(h, SHMLOG_WRITE_UNFILTERED, SHMLOG_VERBOSE,
				 "net", "%s", "print unfiltered"),
		 0);
	CHECK_EQ(shmlog_print_ex(h, 0, SHMLOG_VERBOSE, "net", "%s",
				 "print_ex: filtered"),
		 0);
	CHECK_EQ(shmlog_write_ex(h, 0x80, 0, SHMLOG_INFO, "x", "bad", 3),
		 -EINVAL);
	CHECK_EQ(shmlog_write_ex(h, 0, -5, SHMLOG_INFO, "x", "bad", 3), -EINVAL);
	/* a live change reaches a handle already open */
	CHECK_EQ(shmlog_set_filter(bufname, "*:S", NULL), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_FATAL, "x", "silenced"), 0);
	CHECK_EQ(shmlog_set_filter(bufname, "", NULL), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_VERBOSE, "x", "x verbose after reset"),
		 0);
	/* a record for another process */
	CHECK_EQ(shmlog_write_ex(h, 0, 4242, SHMLOG_INFO, "child", "as 4242", 7),
		 0);
	shmlog_close(h);

	char got[4096];
	uint32_t pid = 0;
	dump(bufname, got, sizeof(got), &pid);
	CHECK_STR(got, "x/I/x info\n"
		       "net/W/net warn\n"
		       "net/E/print 1\n"
		       "x/D/unfiltered\n"
		       "net/V/print unfiltered\n"
		       "x/V/x verbose after reset\n"
		       "child/I/as 4242\n");
	CHECK_EQ(pid, 4242u);
}

/* $SHMLOG_TAGS is read when a handle compiles its filter. */
static void test_env_tags(void)
{
	shmlog_t *h;
	setenv("SHMLOG_TAGS", "env:S", 1);
	CHECK_EQ(shmlog_clear(bufname), 0);
	REQUIRE(shmlog_open(bufname, 0, &h) == 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_FATAL, "env", "env: filtered"), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "other", "other"), 0);
	shmlog_close(h);
	unsetenv("SHMLOG_TAGS");
	char got[1024];
	dump(bufname, got, sizeof(got), NULL);
	CHECK_STR(got, "other/I/other\n");
}

/* The macros: SHMLOG_TAG, and `shmlog level` as before. */
static void test_macros(void)
{
	REQUIRE(shmlog_create(macro_buf, NULL) == 0);
	CHECK_EQ(shmlog_set_filter(macro_buf, "deftag:I", NULL), 0);
	setenv("SHMLOG_BUFFER", macro_buf, 1);
	SHMLOGD("debug: filtered");
	SHMLOGI("tagless %d", 1);
	SHMLOG_D("other", "other debug");
	unsetenv("SHMLOG_BUFFER");
	char got[1024];
	dump(macro_buf, got, sizeof(got), NULL);
	CHECK_STR(got, "deftag/I/tagless 1\nother/D/other debug\n");
}

/* SHMLOG_DEBUG=1: one line on stderr for a default buffer that cannot be
 * opened, however often the macros are called; nothing without it. */
static void run_unopenable(const char *debug, char *out, size_t cap)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		setenv("SHMLOG_BUFFER", "/nonexistent-dir-shmlog/x", 1);
		if (debug)
			setenv("SHMLOG_DEBUG", debug, 1);
		else
			unsetenv("SHMLOG_DEBUG");
		for (int i = 0; i < 3; i++)
			SHMLOG_E("t", "lost %d", i);
		shmlog_t *h = NULL;
		for (int i = 0; i < 2; i++) {
			if (shmlog_open("/nonexistent-dir-shmlog/y", 0, &h) !=
			    -ENOENT)
				_exit(10);
			if (shmlog_write(h, SHMLOG_INFO, "t", "x") != -EINVAL)
				_exit(11);
		}
		_exit(0);
	}
	close(p[1]);
	size_t used = 0;
	ssize_t n;
	while (used + 1 < cap && (n = read(p[0], out + used, cap - 1 - used)) > 0)
		used += (size_t)n;
	out[used] = '\0';
	close(p[0]);
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_debug(void)
{
	char out[2048];
	run_unopenable("1", out, sizeof(out));
	CHECK(strstr(out, "cannot open the default buffer '/nonexistent-dir-"
			  "shmlog/x': No such file or directory") != NULL);
	CHECK(strstr(out, "shmlog_open() cannot open buffer '/nonexistent-dir-"
			  "shmlog/y'") != NULL);
	CHECK(strstr(out, "a write on a NULL handle") != NULL);
	int lines = 0; /* once per cause: 3 causes, each met 2 or 3 times */
	for (const char *c = out; (c = strchr(c, '\n')); c++)
		lines++;
	CHECK_EQ(lines, 3);
	run_unopenable(NULL, out, sizeof(out));
	CHECK_STR(out, "");
	run_unopenable("0", out, sizeof(out));
	CHECK_STR(out, "");
}

/* SHMLOG_DEBUG=1 and a record dropped for want of a lane: a buffer of one
 * lane (no shared lanes), held by the main thread; a second thread's writes
 * fail with -EAGAIN, and the library says so once. */
static shmlog_t *one_lane;

static void *second_writer(void *arg)
{
	int *errs = arg;
	errs[0] = shmlog_write(one_lane, SHMLOG_INFO, "t", "no lane 1");
	errs[1] = shmlog_write(one_lane, SHMLOG_INFO, "t", "no lane 2");
	return NULL;
}

static void test_debug_no_lane(void)
{
	const char *name = test_buffer("wfilter-lane");
	struct shmlog_create_opts o = {.lanes = 1, .size = SHMLOG_SIZE_MIN};
	REQUIRE(shmlog_create(name, &o) == 0);
	int p[2];
	REQUIRE(pipe(p) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		setenv("SHMLOG_DEBUG", "1", 1);
		int errs[2] = {1, 1};
		pthread_t t;
		if (shmlog_open(name, 0, &one_lane) ||
		    shmlog_write(one_lane, SHMLOG_INFO, "t", "held") ||
		    pthread_create(&t, NULL, second_writer, errs) ||
		    pthread_join(t, NULL))
			_exit(10);
		_exit(errs[0] == -EAGAIN && errs[1] == -EAGAIN ? 0 : 11);
	}
	close(p[1]);
	char out[2048];
	size_t used = 0;
	ssize_t n;
	while (used + 1 < sizeof(out) &&
	       (n = read(p[0], out + used, sizeof(out) - 1 - used)) > 0)
		used += (size_t)n;
	out[used] = '\0';
	close(p[0]);
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(out, "every lane of the buffer is held") != NULL);
	const char *nl = strchr(out, '\n');
	CHECK(nl && nl[1] == '\0'); /* once for two drops */
	struct shmlog_info in;
	CHECK_EQ(shmlog_stat(name, &in), 0);
	CHECK_EQ(in.dropped, 2u);
	shmlog_remove(name);
}

/* Writers on several threads while the filter changes under them: no
 * crash, no race (TSan runs this), and once the changes stop every thread
 * obeys the last filter. */
struct flip {
	shmlog_t *h;
	_Atomic int stop;
	_Atomic int errors;
};

static void *flip_writer(void *arg)
{
	struct flip *f = arg;
	for (int i = 0; i < 200000 && !f->stop; i++)
		if (shmlog_write(f->h, i % 2 ? SHMLOG_DEBUG : SHMLOG_WARN,
				 i % 3 ? "x" : "y", "flip") < 0)
			f->errors++;
	return NULL;
}

static void test_concurrent_changes(void)
{
	const char *name = test_buffer("wfilter-flip");
	struct shmlog_create_opts o = {.lanes = 8};
	REQUIRE(shmlog_create(name, &o) == 0);
	struct flip f = {0};
	REQUIRE(shmlog_open(name, 0, &f.h) == 0);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		REQUIRE(pthread_create(&t[i], NULL, flip_writer, &f) == 0);
	for (int i = 0; i < 200; i++)
		CHECK_EQ(shmlog_set_filter(name, i % 2 ? "x:S *:W" : "", NULL),
			 0);
	f.stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(f.errors, 0);
	CHECK_EQ(shmlog_set_filter(name, "x:S y:E", NULL), 0);
	CHECK_EQ(shmlog_clear(name), 0);
	CHECK_EQ(shmlog_write(f.h, SHMLOG_FATAL, "x", "x dropped"), 0);
	CHECK_EQ(shmlog_write(f.h, SHMLOG_WARN, "y", "y dropped"), 0);
	CHECK_EQ(shmlog_write(f.h, SHMLOG_ERROR, "y", "y kept"), 0);
	shmlog_close(f.h);
	char got[1024];
	dump(name, got, sizeof(got), NULL);
	CHECK_STR(got, "y/E/y kept\n");
	shmlog_remove(name);
}

int main(void)
{
	bufname = test_buffer("wfilter");
	macro_buf = test_buffer("wfilter-macro");
	unsetenv("SHMLOG_TAGS");
	cleanup();
	atexit(cleanup);
	test_debug(); /* first: its children must not inherit a default handle */
	test_api_filtered();
	test_env_tags();
	test_macros();
	test_debug_no_lane();
	test_concurrent_changes();
	return test_done("test_write_filter");
}
