/* SPDX-License-Identifier: MIT */
/*
 * printf-style calls formatted by the reader, through the whole path: a
 * writer's SHMLOG_WRITE_DEFERRED call, the buffer's format table, a
 * reader in another handle formatting the message, compared byte for byte
 * with what snprintf makes of the same call; the values as JSON; a full
 * table (the caller formats, counted); hostile ids and table entries; a
 * writer killed while registering a format. (fmtarg.c's own test compares
 * the codec with glibc over random conversions.)
 */
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>

#include "internal.h"
#include "test.h"

static const char *buffer;

/* One call both ways: deferred into the buffer, and snprintf into
 * @expect. */
static void both(shmlog_t *h, char *expect, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void both(shmlog_t *h, char *expect, size_t cap, const char *fmt, ...)
{
	va_list ap, aq;
	va_start(ap, fmt);
	va_copy(aq, ap);
	vsnprintf(expect, cap, fmt, aq);
	va_end(aq);
	CHECK_EQ(shmlog_vprint_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO,
				  "fmt", fmt, ap),
		 0);
	va_end(ap);
}

#define CALLS 24

/* The formats live at fixed addresses (string literals), as the flag
 * wants; @i picks a call, @v varies its values. */
/* NULL through a variable: glibc prints "(null)", and the compiler is
 * not to see it coming */
static const char *volatile null_str;

static void call(shmlog_t *h, int i, long v, char *e, size_t cap)
{
	double d = (double)v / 7.0;
	const char *s = v % 3 ? "eth0" : "";
	switch (i) {
	case 0: both(h, e, cap, "link %s down after %d ms", s, (int)v); break;
	case 1: both(h, e, cap, "%5d|%-5d|%05d|%+d|% d", (int)v, (int)-v, (int)v, (int)v, (int)v); break;
	case 2: both(h, e, cap, "%x %X %o %#x %#o", (unsigned)v, (unsigned)v, (unsigned)v, (unsigned)v, (unsigned)v); break;
	case 3: both(h, e, cap, "%ld %lu %lld %llu", v, (unsigned long)v, (long long)v * 1000000007LL, (unsigned long long)v); break;
	case 4: both(h, e, cap, "%hhd %hd %hhu %hu", (signed char)v, (short)v, (unsigned char)v, (unsigned short)v); break;
	case 5: both(h, e, cap, "%zu %zd %jd %td", (size_t)v, (ssize_t)-v, (intmax_t)v, (ptrdiff_t)v); break;
	case 6: both(h, e, cap, "%f %.3f %10.2f %-10.1f|", d, d, d, -d); break;
	case 7: both(h, e, cap, "%e %.0e %E %g %G", d, d * 1e100, d, d, d * 1e-10); break;
	case 8: both(h, e, cap, "%a %A %.3a", d, d, d); break;
	case 9: both(h, e, cap, "%Lf %Le %Lg", (long double)d, (long double)d, (long double)d); break;
	case 10: both(h, e, cap, "%c%c%c", 'a' + (int)(v % 26), 'Z', '!'); break;
	case 11: both(h, e, cap, "%s|%10s|%-10s|%.2s", s, s, s, "abcdef"); break;
	case 12: both(h, e, cap, "%*d|%-*d|%.*f|%*.*s", 8, (int)v, 6, (int)v, 2, d, 9, 3, "abcdef"); break;
	case 13: both(h, e, cap, "%p %p", (void *)(uintptr_t)v, (void *)0); break;
	case 14: both(h, e, cap, "100%% of %d", (int)v); break;
	case 15: both(h, e, cap, "no values at all"); break;
	case 16: both(h, e, cap, "%s", null_str); break;
	case 17: both(h, e, cap, "%.3s|%.10s", null_str, null_str); break;
	case 18: both(h, e, cap, "%d %d %d %d %d %d %d %d", 1, 2, 3, 4, 5, 6, 7, (int)v); break;
	case 19: both(h, e, cap, "%'d %'.2f", (int)v * 1000, d * 1000); break;
	case 20: both(h, e, cap, "%-+#12.4e|%#g|%#x", d, d, 0u); break;
	case 21: both(h, e, cap, "%f %e %g", 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0); break;
	case 22: both(h, e, cap, "%d%s%d", INT32_MIN, "-", INT32_MAX); break;
	default: both(h, e, cap, "%lld %llu", (long long)INT64_MIN, (unsigned long long)UINT64_MAX); break;
	}
}

/* Write every call with a few value sets, read them back in another
 * handle: the same text, flagged deferred, with the format and values. */
static void round_trip(void)
{
	shmlog_t *h;
	REQUIRE(shmlog_open(buffer, 0, &h) == 0);
	static char expect[CALLS * 5][SHMLOG_MSG_MAX + 1];
	int n = 0;
	for (long v = 0; v < 5; v++)
		for (int i = 0; i < CALLS; i++)
			call(h, i, v * 12345 - 7, expect[n++], sizeof(expect[0]));
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(buffer, 0, &r) == 0);
	struct shmlog_record rec;
	int k = 0, deferred = 0, ev;
	char args[4096];
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		REQUIRE(k < n);
		if (strcmp(rec.msg, expect[k]) != 0 ||
		    rec.msg_len != strlen(expect[k]))
			fprintf(stderr, "call %d: got '%s', want '%s'\n",
				k % CALLS, rec.msg, expect[k]);
		CHECK_STR(rec.msg, expect[k]);
		const char *fmt = NULL;
		if (rec.flags & SHMLOG_REC_DEFERRED) {
			deferred++;
			CHECK_EQ(shmlog_reader_deferred(r, &fmt, args,
							sizeof(args)),
				 0);
			CHECK(fmt != NULL);
			CHECK(args[0] == '[' && args[strlen(args) - 1] == ']');
		} else {
			CHECK_EQ(shmlog_reader_deferred(r, &fmt, args,
							sizeof(args)),
				 -ENOENT);
		}
		k++;
	}
	CHECK_EQ(k, n);
	/* every call here is one the codec takes */
	CHECK_EQ(deferred, n);
	printf("round trip: %d calls of %d formats formatted by the reader, "
	       "the same text as snprintf\n",
	       deferred, CALLS);
	struct shmlog_format_stats fs;
	REQUIRE(shmlog_stat_formats(buffer, &fs) == 0);
	CHECK_EQ(fs.formats, CALLS);
	CHECK_EQ(fs.full, 0);
	CHECK_EQ(fs.refused, 0);
	/* a conversion the reader does not format: the caller does, and the
	 * call is counted, each time */
	char e[64];
	int n0;
	both(h, e, sizeof(e), "%d%n refused", 5, &n0);
	both(h, e, sizeof(e), "%d%n refused", 6, &n0);
	REQUIRE(shmlog_stat_formats(buffer, &fs) == 0);
	CHECK_EQ(fs.refused, 2);
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "5 refused");
	CHECK(!(rec.flags & SHMLOG_REC_DEFERRED));
	shmlog_reader_close(r);
	shmlog_close(h);
}

/* The values as JSON, for one known call. */
static void json_values(void)
{
	shmlog_t *h;
	REQUIRE(shmlog_open(buffer, 0, &h) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(buffer, SHMLOG_READ_TAIL, &r) == 0);
	char e[256];
	both(h, e, sizeof(e), "%s=%d %.1f %p \"%s\"", "k\"ey", -3, 2.5,
	     (void *)0xabc, "caf\xc3\xa9\xff");
	struct shmlog_record rec;
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, e);
	const char *fmt;
	char args[512];
	CHECK_EQ(shmlog_reader_deferred(r, &fmt, args, sizeof(args)), 0);
	CHECK_STR(fmt, "%s=%d %.1f %p \"%s\"");
	CHECK_STR(args, "[\"k\\\"ey\",-3,2.5,\"0xabc\",\"caf\xc3\xa9\\ufffd\"]");
	/* cut to fit, whole values only, still an array, and said so */
	CHECK_EQ(shmlog_reader_deferred(r, &fmt, args, 12), SHMLOG_DEFERRED_CUT);
	CHECK_STR(args, "[\"k\\\"ey\"]");
	CHECK_EQ(shmlog_reader_deferred(r, &fmt, args, 2), SHMLOG_DEFERRED_CUT);
	CHECK_STR(args, "");
	shmlog_reader_close(r);
	shmlog_close(h);
}

/* A typed call (SHMLOG_LOG_TO) that finds the table full is formatted by
 * the caller: a text of the longest a message may be, whose values take
 * more room encoded than as text, is kept whole. */
static void table_full_long_text(void)
{
	const char *b = test_buffer("deferred-full-long");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 1024 * 1024; /* a table of 16 KiB, records of 4000 bytes */
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	static char fmts[600][64];
	for (int i = 0; i < 600; i++) {
		snprintf(fmts[i], sizeof(fmts[i]),
			 "site %04d of many, value %%d, padding padding", i);
		shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "fmt",
				fmts[i], i);
	}
	/* a format longer than the room the table has left, whose text is
	 * 4000 bytes and whose values take more: 16 ints of one digit each,
	 * 8 bytes each encoded */
#define LONG_FMT "no room left in the table: %d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%s"
	static char s[SHMLOG_MSG_MAX - (sizeof(LONG_FMT) - 1 - 18) + 1];
	memset(s, 'q', sizeof(s) - 1);
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "long", LONG_FMT, 0, 1, 2, 3, 4, 5, 6, 7,
		      8, 9, 0, 1, 2, 3, 4, 5, s);
#undef LONG_FMT
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, found = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD || strcmp(rec.tag, "long"))
			continue;
		found++;
		CHECK(!(rec.flags & SHMLOG_REC_DEFERRED)); /* the table is full */
		CHECK_EQ(rec.msg_len, SHMLOG_MSG_MAX);
		CHECK(!(rec.flags & SHMLOG_REC_TRUNCATED));
	}
	CHECK_EQ(found, 1);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Formats at distinct addresses until the table is full: the calls after
 * that are formatted by the caller, counted, and read back the same. */
static void table_full(void)
{
	const char *b = test_buffer("deferred-full");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024; /* a table of 16 KiB */
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	static char fmts[600][64];
	for (int i = 0; i < 600; i++) {
		snprintf(fmts[i], sizeof(fmts[i]),
			 "site %04d of many, value %%d, padding padding", i);
		CHECK_EQ(shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO,
					 "fmt", fmts[i], i),
			 0);
	}
	struct shmlog_format_stats fs;
	REQUIRE(shmlog_stat_formats(b, &fs) == 0);
	printf("a full table: %llu formats in %llu of %llu bytes, %llu calls "
	       "formatted by the caller\n",
	       (unsigned long long)fs.formats, (unsigned long long)fs.used,
	       (unsigned long long)fs.size, (unsigned long long)fs.full);
	CHECK(fs.formats > 100 && fs.formats < 600);
	CHECK_EQ(fs.full, 600 - fs.formats);
	/* a site refused for want of room: each of its calls counted */
	CHECK_EQ(shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "fmt",
				 fmts[599], 599),
		 0);
	struct shmlog_format_stats fs2;
	REQUIRE(shmlog_stat_formats(b, &fs2) == 0);
	CHECK_EQ(fs2.full, fs.full + 1);
	CHECK(fs.used <= fs.size);
	/* the newest records: formatted by the caller, the same text */
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int ev, last = -1, plain = 0;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		int i;
		REQUIRE(sscanf(rec.msg, "site %d", &i) == 1);
		char e[128];
		snprintf(e, sizeof(e), fmts[i], i);
		CHECK_STR(rec.msg, e);
		plain += !(rec.flags & SHMLOG_REC_DEFERRED);
		last = i;
	}
	CHECK_EQ(last, 599);
	CHECK(plain > 0);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Table entries scribbled on (a length past the table's end, a word that
 * is not ready, a format that says %n): marked text, never a crash, never
 * a format from outside the table. */
static void hostile(void)
{
	const char *b = test_buffer("deferred-hostile");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	char e[64];
	both(h, e, sizeof(e), "first %d", 1);
	both(h, e, sizeof(e), "second %d", 2);
	both(h, e, sizeof(e), "third %s", "x");
	const struct shmlog__fixed *f = &h->seg.fixed;
	unsigned char *t = h->seg.base + f->fmt_off;
	_Atomic uint32_t *w0 = (void *)(t + 64);
	uint32_t was = atomic_load(w0);
	uint32_t second = 64 + FMT_ENTRY_HDR + ((was & ~FMT_READY) + 7) / 8 * 8;
	_Atomic uint32_t *w1 = (void *)(t + second);
	atomic_store(w0, 0x7fffffffu | FMT_READY);
	atomic_store(w1, atomic_load(w1) & ~FMT_READY);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	char want[2][32];
	snprintf(want[0], sizeof(want[0]), "<no format %u>", 64u);
	snprintf(want[1], sizeof(want[1]), "<no format %u>", second);
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, want[0]);
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, want[1]);
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "third x");
	shmlog_reader_close(r);
	/* an entry whose format says %n: refused by the reader */
	atomic_store(w0, was);
	memcpy(t + 64 + FMT_ENTRY_HDR, "%n%d\0\0\0", 8);
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK(strstr(rec.msg, "%n") == NULL && strstr(rec.msg, "<?%>") != NULL);
	printf("hostile: scribbled entries read as '%s', '%s' and '%s'\n",
	       want[0], want[1], rec.msg);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

static void die_here(int point)
{
	if (point == 14)
		kill(getpid(), SIGKILL);
}

/* A writer killed after taking room in the table, before the entry's word
 * is stored: the room is lost, nothing else; a later writer registers the
 * format again and its records read right. */
static void killed_registering(void)
{
	const char *b = test_buffer("deferred-kill");
	REQUIRE(shmlog_create(b, NULL) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(1);
		shmlog__testpoint_hook = die_here;
		shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "fmt",
				"dies at %d", 1);
		_exit(2);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	char e[64];
	both(h, e, sizeof(e), "after the kill %d", 2);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	REQUIRE(shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "after the kill 2");
	CHECK(rec.flags & SHMLOG_REC_DEFERRED);
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_NONE);
	struct shmlog_format_stats fs;
	REQUIRE(shmlog_stat_formats(b, &fs) == 0);
	CHECK_EQ(fs.formats, 2); /* the dead one's room, and the new one */
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

/* Test point 13: a chunk just taken, nothing written into it yet. The
 * hook says another party closed every OPEN chunk (its word LIVE), as a
 * hostile write to the file would, and counts the chunks taken. */
static shmlog_t *scribbled_h;
static int taken;
static void close_open_chunks(int point)
{
	if (point != 13)
		return;
	taken++;
	const struct shmlog__seg *s = &((struct shmlog *)scribbled_h)->seg;
	for (uint32_t i = 0; i < s->fixed.chunk_count; i++) {
		uint64_t w = atomic_load(seg_chunk(s, i));
		if (chunk_state(w) == CHUNK_OPEN)
			atomic_store(seg_chunk(s, i), chunk_id(w) | CHUNK_LIVE);
	}
}

/* A typed printf-style call (the macro's values) whose record takes a
 * new chunk, each chunk scribbled on as it is taken: the call made again
 * in the new chunk misses too, and goes to the general path, whose
 * switch finds its chunk scribbled on as well and drops the record,
 * counted. Two chunks taken, no more: no loop that a file scribbled on
 * keeps going. Every record before it is read back whole, and a call
 * after it (the hook gone) is written. */
static void scribbled_at_switch(void)
{
	const char *b = test_buffer("deferred-scribbled");
	shmlog_remove(b);
	REQUIRE(shmlog_create(b, NULL) == 0);
	REQUIRE(shmlog_open(b, 0, &scribbled_h) == 0);
	shmlog_t *h = scribbled_h;
	int before = 0;
	for (; before < 100000 && taken == 0; before++) {
		if (before == 2) /* the site ready, the lane's first chunk */
			shmlog__testpoint_hook = close_open_chunks;
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "t", "call %d of %s", before,
			      "many");
	}
	shmlog__testpoint_hook = NULL;
	CHECK_EQ(taken, 2);
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "t", "call %d of %s", before, "many");
	struct shmlog_info in;
	REQUIRE(shmlog_stat(b, &in) == 0);
	CHECK_EQ(in.dropped, 1);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int got = 0, n = 0;
	while (shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD) {
		char want[64];
		/* the buffer keeps the newest: from the first one kept on,
		 * in order, but the dropped one */
		if (!got)
			REQUIRE(sscanf(rec.msg, "call %d", &n) == 1);
		if (n == before - 1)
			n++; /* the dropped one */
		snprintf(want, sizeof(want), "call %d of many", n++);
		CHECK_STR(rec.msg, want);
		got++;
	}
	CHECK_EQ(n, before + 1);
	CHECK(got > 1);
	shmlog_reader_close(r);
	shmlog_close(h);
	shmlog_remove(b);
}

int main(void)
{
	buffer = test_buffer("deferred");
	REQUIRE(shmlog_create(buffer, NULL) == 0);
	round_trip();
	json_values();
	shmlog_remove(buffer);
	hostile();
	table_full();
	table_full_long_text();
	killed_registering();
	scribbled_at_switch();
	return test_done("test_deferred");
}
