/* SPDX-License-Identifier: MIT */
/*
 * Filters: spec parsing, per-tag levels, $SHMLOG_TAGS, live changes seen by
 * a running process and inherited by a late one, call-site caches that
 * never serve a stale answer, and the generation counter's wrap.
 */
#include <sys/wait.h>

#include "internal.h"
#include "test.h"

static void test_parse(void)
{
	size_t bad = 99;
	CHECK_EQ(shmlog_parse_filter("", &bad), 0);
	CHECK_EQ(shmlog_parse_filter("net:D *:W", &bad), 0);
	CHECK_EQ(shmlog_parse_filter("  net:d,ui:e  *:s ", &bad), 0);
	CHECK_EQ(shmlog_parse_filter("justatag", &bad), 0);
	CHECK_EQ(shmlog_parse_filter("a:b:W", &bad), 0); /* tag "a:b" */
	CHECK_EQ(shmlog_parse_filter("net:X", &bad), -EINVAL);
	CHECK_EQ(bad, 0);
	CHECK_EQ(shmlog_parse_filter("net:D ui:", &bad), -EINVAL);
	CHECK_EQ(bad, 6);
	CHECK_EQ(shmlog_parse_filter("net:D :W", &bad), -EINVAL);
	CHECK_EQ(bad, 6);
	CHECK_EQ(shmlog_parse_filter("net:DD", &bad), -EINVAL);
	/* '=' and '*' inside a tag are mistakes, never tags to store */
	CHECK_EQ(shmlog_parse_filter("net=D", &bad), -EINVAL);
	CHECK_EQ(bad, 0);
	CHECK_EQ(shmlog_parse_filter("ui:W net=D *:S", &bad), -EINVAL);
	CHECK_EQ(bad, 5);
	CHECK_EQ(shmlog_parse_filter("a=b:W", &bad), -EINVAL);
	CHECK_EQ(shmlog_parse_filter("net*:D", &bad), -EINVAL);
	CHECK_EQ(shmlog_parse_filter("**:D", &bad), -EINVAL);
	CHECK_EQ(shmlog_parse_filter("* *:W", &bad), 0);
	CHECK_EQ(shmlog_parse_filter(NULL, &bad), -EINVAL);
	char longtag[100];
	memset(longtag, 'x', 80);
	strcpy(longtag + 80, ":W");
	CHECK_EQ(shmlog_parse_filter(longtag, &bad), -EINVAL);

	shmlog_filter_t *f;
	CHECK_EQ(shmlog_filter_new("net:D ui:E *:W net:I", &bad, &f), 0);
	CHECK(!shmlog_filter_wants(f, SHMLOG_DEBUG, "net")); /* later wins */
	CHECK(shmlog_filter_wants(f, SHMLOG_INFO, "net"));
	CHECK(!shmlog_filter_wants(f, SHMLOG_WARN, "ui"));
	CHECK(shmlog_filter_wants(f, SHMLOG_ERROR, "ui"));
	CHECK(!shmlog_filter_wants(f, SHMLOG_INFO, "other"));
	CHECK(shmlog_filter_wants(f, SHMLOG_WARN, "other"));
	shmlog_filter_free(f);
	CHECK_EQ(shmlog_filter_new("*:S", &bad, &f), 0);
	CHECK(!shmlog_filter_wants(f, SHMLOG_FATAL, "any"));
	shmlog_filter_free(f);
	CHECK_EQ(shmlog_filter_new("x:Q", &bad, &f), -EINVAL);
}

/* The SHMLOG_x macros: count what reaches the buffer. */
static int site_calls;
static int arg(int v)
{
	site_calls++;
	return v;
}

static long count_tag(const char *b, const char *tag)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	long n = 0;
	while (shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD)
		n += !strcmp(rec.tag, tag);
	shmlog_reader_close(r);
	return n;
}

static void log_all_levels(void)
{
	SHMLOG_V("net", "v %d", arg(1));
	SHMLOG_D("net", "d %d", arg(1));
	SHMLOG_I("net", "i %d", arg(1));
	SHMLOG_W("net", "w %d", arg(1));
	SHMLOG_E("net", "e %d", arg(1));
	SHMLOG_F("net", "f %d", arg(1));
	SHMLOG_D("ui", "d %d", arg(1));
	SHMLOG_W("ui", "w %d", arg(1));
}

static void test_live(const char *b)
{
	/* no spec: everything */
	site_calls = 0;
	log_all_levels();
	CHECK_EQ(site_calls, 8);
	CHECK_EQ(count_tag(b, "net"), 6);

	/* a change reaches this process's cached call sites at once */
	CHECK_EQ(shmlog_set_filter(b, "net:W *:E", NULL), 0);
	site_calls = 0;
	log_all_levels();
	CHECK_EQ(site_calls, 3); /* disabled calls do not evaluate args */
	CHECK_EQ(count_tag(b, "net"), 9);
	CHECK_EQ(count_tag(b, "ui"), 2);

	char spec[256];
	CHECK_EQ(shmlog_get_filter(b, spec, sizeof(spec)), 9);
	CHECK_STR(spec, "net:W *:E");
	CHECK_EQ(shmlog_get_filter(b, spec, 4), -ENAMETOOLONG);
	size_t bad = 0;
	CHECK_EQ(shmlog_set_filter(b, "net:W bogus:Z", &bad), -EINVAL);
	CHECK_EQ(bad, 6);
	CHECK_EQ(shmlog_get_filter(b, spec, sizeof(spec)), 9); /* unchanged */
	CHECK_EQ(shmlog_set_filter(b, "net=D *:W", &bad), -EINVAL);
	CHECK_EQ(bad, 0);
	CHECK_EQ(shmlog_get_filter(b, spec, sizeof(spec)), 9); /* unchanged */

	/* a process started later inherits the spec */
	pid_t c = fork();
	if (c == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(1);
		int ok = !shmlog_enabled(h, SHMLOG_INFO, "net") &&
			 shmlog_enabled(h, SHMLOG_WARN, "net") &&
			 !shmlog_enabled(h, SHMLOG_WARN, "ui");
		_exit(ok ? 0 : 2);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* silence everything, then back to everything */
	CHECK_EQ(shmlog_set_filter(b, "*:S", NULL), 0);
	site_calls = 0;
	log_all_levels();
	CHECK_EQ(site_calls, 0);
	CHECK_EQ(shmlog_set_filter(b, "", NULL), 0);
	log_all_levels();
	CHECK_EQ(site_calls, 8);
}

/* $SHMLOG_TAGS is the base the buffer's spec is laid over. */
static void test_env(const char *b)
{
	CHECK_EQ(shmlog_set_filter(b, "", NULL), 0);
	pid_t c = fork();
	if (c == 0) {
		setenv("SHMLOG_TAGS", "net:E *:I", 1);
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(1);
		int ok = !shmlog_enabled(h, SHMLOG_WARN, "net") &&
			 shmlog_enabled(h, SHMLOG_ERROR, "net") &&
			 shmlog_enabled(h, SHMLOG_INFO, "ui") &&
			 !shmlog_enabled(h, SHMLOG_DEBUG, "ui");
		if (shmlog_set_filter(b, "net:V", NULL))
			ok = 0;
		ok = ok && shmlog_enabled(h, SHMLOG_VERBOSE, "net") &&
		     !shmlog_enabled(h, SHMLOG_DEBUG, "ui");
		_exit(ok ? 0 : 2);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(shmlog_set_filter(b, "", NULL), 0);
}

/* The generation wraps past 2^32 without ever becoming 0 (a site's
 * "never") or serving a stale answer. */
static void test_gen_wrap(const char *b)
{
	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(b, SEG_WRITE, &s) == 0);
	atomic_store(&s.hdr->config.filter_gen, UINT32_MAX - 5);
	for (int i = 0; i < 6; i++) {
		CHECK_EQ(shmlog_set_filter(b, i % 2 ? "net:S" : "net:V", NULL), 0);
		uint32_t g = atomic_load(&s.hdr->config.filter_gen);
		CHECK(g != 0 && g % 2 == 0);
		site_calls = 0;
		SHMLOG_V("net", "%d", arg(1));
		CHECK_EQ(site_calls, i % 2 ? 0 : 1);
	}
	shmlog__seg_detach(&s);
}

/* A setter killed while holding the spec's lock leaves the generation odd:
 * call sites keep the last answers (and cache them: no slow path on every
 * call), and the next `shmlog level` takes the lock over. */
static struct shmlog_site probe = {0, 0, "net"};

static void test_dead_setter(const char *b)
{
	CHECK_EQ(shmlog_set_filter(b, "net:S", NULL), 0);
	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(b, SEG_WRITE, &s) == 0);
	uint32_t g = atomic_load(&s.hdr->config.filter_gen);
	atomic_store(&s.hdr->config.filter_gen, g + 1); /* died mid-set */
	CHECK_EQ(shmlog__site_refresh(&probe, SHMLOG_FATAL), 0);
	CHECK_EQ(probe.gen, g + 1); /* cached under the odd generation */
	site_calls = 0;
	SHMLOG_F("net", "%d", arg(1));
	CHECK_EQ(site_calls, 0); /* still the last answer: silent */
	CHECK_EQ(shmlog_set_filter(b, "net:V", NULL), 0); /* takes over */
	CHECK(atomic_load(&s.hdr->config.filter_gen) % 2 == 0);
	SHMLOG_V("net", "%d", arg(1));
	CHECK_EQ(site_calls, 1);
	shmlog__seg_detach(&s);
	CHECK_EQ(shmlog_set_filter(b, "", NULL), 0);
}

/* shmlog_write_n() through a lane of its own, every priority and tag
 * under specs whose levels differ by tag: what reaches the buffer is
 * what the compiled filter wants, whichever of the writer's answers
 * (above every level: written; below every level: dropped without a
 * look at the tag; in between: the tag looked up) gives it. */
static void test_write_n_levels(const char *b)
{
	static const char *const specs[] = {
		"net:D ui:E *:W", "*:S", "net:V *:S", "", "ui:S *:I", "net:F"};
	static const char *const tags[] = {"net", "ui", "other"};
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	CHECK_EQ(shmlog_set_filter(b, "", NULL), 0);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "lane", "first"), 0);
	bool want[6][SHMLOG_FATAL + 1][3];
	memset(want, 0, sizeof(want));
	for (int s = 0; s < 6; s++) {
		shmlog_filter_t *f;
		REQUIRE(shmlog_filter_new(specs[s], NULL, &f) == 0);
		CHECK_EQ(shmlog_set_filter(b, specs[s], NULL), 0);
		for (int p = SHMLOG_VERBOSE; p <= SHMLOG_FATAL; p++) {
			for (int t = 0; t < 3; t++) {
				char m[32];
				int n = snprintf(m, sizeof(m), "s%d p%d", s, p);
				want[s][p][t] = shmlog_filter_wants(f, p, tags[t]);
				CHECK_EQ(shmlog_write_n(h, p, tags[t], m,
							(size_t)n), 0);
			}
		}
		shmlog_filter_free(f);
	}
	/* the answer the writer keeps for the last spec: "net:F" over
	 * everything else at V */
	uint64_t fast = atomic_load(&h->filter_fast);
	CHECK_EQ((int)(uint16_t)fast, SHMLOG_FATAL);
	CHECK_EQ((int)(uint16_t)(fast >> 16), SHMLOG_VERBOSE);
	shmlog_close(h);

	bool got[6][SHMLOG_FATAL + 1][3];
	memset(got, 0, sizeof(got));
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	while (shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD) {
		int s, p;
		if (sscanf(rec.msg, "s%d p%d", &s, &p) != 2 || s < 0 ||
		    s >= 6 || p < SHMLOG_VERBOSE || p > SHMLOG_FATAL)
			continue;
		for (int t = 0; t < 3; t++)
			if (!strcmp(rec.tag, tags[t])) {
				CHECK(!got[s][p][t]); /* once */
				CHECK_EQ(rec.prio, p);
				got[s][p][t] = true;
			}
	}
	shmlog_reader_close(r);
	for (int s = 0; s < 6; s++)
		for (int p = SHMLOG_VERBOSE; p <= SHMLOG_FATAL; p++)
			for (int t = 0; t < 3; t++)
				if (got[s][p][t] != want[s][p][t]) {
					fprintf(stderr, "spec \"%s\" %s at %d: "
						"%s\n", specs[s], tags[t], p,
						got[s][p][t] ? "written"
							     : "dropped");
					CHECK(0);
				}
	CHECK_EQ(shmlog_set_filter(b, "", NULL), 0);
}

int main(void)
{
	const char *b = test_buffer("filter");
	setenv("SHMLOG_BUFFER", b, 1);
	unsetenv("SHMLOG_TAGS");
	test_parse();
	REQUIRE(shmlog_create(b, NULL) == 0);
	test_live(b);
	test_env(b);
	test_gen_wrap(b);
	test_dead_setter(b);
	test_write_n_levels(b);
	shmlog_remove(b);
	return test_done("test_filter");
}
