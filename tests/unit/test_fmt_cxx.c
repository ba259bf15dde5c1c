/* SPDX-License-Identifier: MIT */
/*
 * Printf-style calls from C++ are stored as C11 stores them: the calls of
 * typed_cases.h, compiled as C11 here and as C++ in test_fmt_cxx.cc,
 * each written into a buffer of its own, must give the same records: the
 * same priority, tag, flags, format and text, and the same argument block
 * byte for byte, holding the classes each case lists. Every C++ call that
 * C11 takes typed must be typed too: each buffer counts the same call
 * sites as not typed (a long double, nine values). The same for a call
 * of SHMLOG_I through the default handle, its tag fixed or not.
 */
#include "internal.h"
#include "test.h"

#ifndef SHMLOG__TYPED_CALLS
#error "this test needs a C11 compiler with _Generic (GCC or Clang)"
#endif

int typed_cases_c(shmlog_t *h, const char **expect, int max);
int typed_cases_cxx(shmlog_t *h, const char **expect, int max);
void typed_default_cxx(void);
void typed_runtime_tag_cxx(const char *tag);

#define TYPED_CASES_FN typed_cases_c
#include "typed_cases.h"

static void typed_default_c(void)
{
	long long big = 1LL << 40;
	SHMLOG_I("typed", "default %d %s %.2f %lld", 3, "three", 3.5, big);
}

#define MAX_RECS 128

static const char *fresh(const char *what)
{
	const char *b = test_buffer(what);
	shmlog_remove(b);
	REQUIRE(shmlog_create(b, NULL) == 0);
	return b;
}

/* The classes of block @p (@len bytes), one character each, into @out
 * (as typed_cases.h lists them); "!" where the block is not whole. */
static void classes(const unsigned char *p, size_t len, char *out,
		    size_t cap)
{
	static const char name[] = "?48dLsp";
	size_t i = 0, o = 0;
	while (i < len && o + 2 < cap) {
		unsigned c = p[i++] & SHMLOG__FMT_TAG_CLASS;
		size_t n = c == SHMLOG__FMT_INT32     ? 4
			   : c == SHMLOG__FMT_LDOUBLE ? 16
			   : c == SHMLOG__FMT_STRING  ? 2
			   : c >= 1 && c <= 6	      ? 8
						      : len;
		if (c == SHMLOG__FMT_STRING && i + 2 <= len)
			n += (size_t)p[i] | (size_t)p[i + 1] << 8;
		out[o++] = c >= 1 && c <= 6 ? name[c] : '?';
		if (n > len - i) {
			out[o++] = '!';
			break;
		}
		i += n;
	}
	out[o] = '\0';
}

struct rec_copy {
	int prio;
	unsigned flags;
	char tag[SHMLOG_TAG_MAX + 1];
	char msg[SHMLOG_MSG_MAX + 1];
	char fmt[SHMLOG_MSG_MAX + 1];
	unsigned char args[SHMLOG_MSG_MAX];
	size_t args_len;
	bool deferred;
};

/* Up to @max records of @b into @out (tag "typed" only); their count. */
static int read_all(const char *b, struct rec_copy *out, int max)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, n = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		REQUIRE(ev == SHMLOG_EV_RECORD); /* no loss in a fresh buffer */
		if (strcmp(rec.tag, "typed") || n >= max)
			continue;
		struct rec_copy *c = &out[n++];
		memset(c, 0, sizeof(*c));
		c->prio = rec.prio;
		c->flags = rec.flags;
		snprintf(c->tag, sizeof(c->tag), "%s", rec.tag);
		snprintf(c->msg, sizeof(c->msg), "%s", rec.msg);
		const char *fmt = NULL;
		const unsigned char *args;
		size_t len;
		c->deferred = shmlog_reader_deferred(r, &fmt, NULL, 0) == 0 &&
			      shmlog__reader_args(r, &args, &len) == 0;
		if (c->deferred) {
			snprintf(c->fmt, sizeof(c->fmt), "%s", fmt ? fmt : "");
			REQUIRE(len <= sizeof(c->args));
			memcpy(c->args, args, len);
			c->args_len = len;
		}
	}
	shmlog_reader_close(r);
	return n;
}

/* @n records of each, pairwise the same; those of C++ holding @expect's
 * classes. */
static void compare(const struct rec_copy *c, const struct rec_copy *x,
		    int n, const char *const *expect)
{
	for (int i = 0; i < n; i++) {
		CHECK_EQ(x[i].prio, c[i].prio);
		CHECK_EQ(x[i].flags, c[i].flags);
		CHECK_STR(x[i].tag, c[i].tag);
		CHECK_STR(x[i].msg, c[i].msg);
		CHECK(x[i].deferred && c[i].deferred);
		CHECK_STR(x[i].fmt, c[i].fmt);
		CHECK_EQ(x[i].args_len, c[i].args_len);
		CHECK(!memcmp(x[i].args, c[i].args, c[i].args_len));
		char cls[64];
		classes(x[i].args, x[i].args_len, cls, sizeof(cls));
		if (expect)
			CHECK_STR(cls, expect[i]);
		if (strcmp(x[i].msg, c[i].msg) ||
		    x[i].args_len != c[i].args_len ||
		    memcmp(x[i].args, c[i].args, c[i].args_len))
			fprintf(stderr, "record %d: C++ \"%s\" (%zu bytes), "
					"C \"%s\" (%zu bytes), format \"%s\"\n",
				i, x[i].msg, x[i].args_len, c[i].msg,
				c[i].args_len, c[i].fmt);
	}
}

static uint32_t untyped_sites(const char *b)
{
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	uint32_t n = atomic_load(&h->seg.hdr->stats.fmt_untyped);
	shmlog_close(h);
	return n;
}

static struct rec_copy rc[MAX_RECS], rx[MAX_RECS];

static void cases(void)
{
	const char *bc = fresh("cxx-c");
	const char *bx = fresh("cxx-cxx");
	shmlog_t *hc, *hx;
	REQUIRE(shmlog_open(bc, 0, &hc) == 0);
	REQUIRE(shmlog_open(bx, 0, &hx) == 0);
	const char *ec[MAX_RECS], *ex[MAX_RECS];
	int nc = typed_cases_c(hc, ec, MAX_RECS);
	int nx = typed_cases_cxx(hx, ex, MAX_RECS);
	REQUIRE(nc == nx && nc > 0 && nc < MAX_RECS);
	for (int i = 0; i < nc; i++)
		CHECK_STR(ex[i], ec[i]);
	shmlog_close(hc);
	shmlog_close(hx);

	/* the long double and the nine values, in either language */
	CHECK_EQ(untyped_sites(bc), 2);
	CHECK_EQ(untyped_sites(bx), 2);

	CHECK_EQ(read_all(bc, rc, MAX_RECS), nc);
	CHECK_EQ(read_all(bx, rx, MAX_RECS), nc);
	compare(rc, rx, nc, ex);
	/* the values the format does not take, shown as such */
	CHECK_STR(rx[nc - 1].msg, "1");
	CHECK_STR(rx[nc - 3].msg, "1 <?>");
	shmlog_remove(bc);
	shmlog_remove(bx);
}

/* SHMLOG_I through the default handle, from C and from C++, there with
 * a fixed tag and with one known at run time. */
static void default_handle(void)
{
	const char *b = fresh("cxx-default");
	REQUIRE(setenv("SHMLOG_BUFFER", b, 1) == 0);
	char tag[] = "typed"; /* not const: a tag the C++ site cannot keep */
	typed_default_c();
	typed_default_cxx();
	typed_runtime_tag_cxx(tag);
	CHECK_EQ(untyped_sites(b), 0);
	CHECK_EQ(read_all(b, rc, MAX_RECS), 3);
	compare(&rc[0], &rc[1], 1, NULL);
	compare(&rc[0], &rc[2], 1, NULL);
	CHECK_STR(rc[1].msg, "default 3 three 3.50 1099511627776");
	shmlog_remove(b);
}

int main(void)
{
	cases();
	default_handle();
	return test_done("test_fmt_cxx");
}
