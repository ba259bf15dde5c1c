/* SPDX-License-Identifier: MIT */
/*
 * Every JSON the project emits is valid JSON and valid UTF-8, whatever the
 * buffer holds: damaged printf-style records (tests/json_damage.h: value
 * blocks cut short, tag bytes no writer makes, strings longer than their
 * block, too many values, junk; tags, strings and formats of bytes that
 * are not UTF-8 and of controls) are put in a real buffer, then read
 * through each JSON output:
 *   shmlog_reader_deferred()       whole, and into buffers of every size
 *   shmlog cat -v json             the CLI's JSON lines
 *   shmlog forward --to jsonl:     forward's JSON lines
 *   jsonw (bench/common/jsonw.c)   the benchmarks' JSON documents
 * each checked by a strict JSON and UTF-8 validator (tests/json_check.h)
 * and, when python3 is installed, by Python's json module over strictly
 * decoded UTF-8. What a damaged block shows is checked too: the values
 * decoded before the damage, and the record marked "args_truncated". The
 * text formats (threadtime, brief, long, raw, with and without
 * "printable") go through the same records: valid UTF-8, no control
 * character but the newline that ends a line (and tabs), one line per
 * record in raw, every line prefixed in threadtime and brief.
 *
 * How: each damaged record is written with shmlog_write_n() (a format id
 * and the block as its message), found in the mapped file by its tag and
 * marked deferred there, as a hostile writer could.
 *
 * usage: test_json SHMLOG_CLI [RECORDS] [SEED]
 */
#include <ctype.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "hostile.h"
#include "json_check.h"
#include "json_damage.h"
#include "jsonw.h"

/* A cap for shmlog_reader_deferred() that holds the array of any block
 * whole, a hostile one's too (SHMLOG_DEFERRED_ARGS_MAX is for a writer's):
 * 6 bytes out for a byte in at most, and the brackets. */
#define ARGS_CAP (6 * 65536 + 16)

static const char *cli;
static char dir[128]; /* where the outputs go */

struct expect {
	struct jd_rec d;
	char tag[SHMLOG_TAG_MAX + 1];
	size_t tag_len;
	unsigned char msg[SHMLOG_MSG_MAX];
	size_t msg_len;
	bool known_id; /* the id names a format of the table */
	bool seen;
};

static struct expect *ex;
static unsigned nrec;
static uint32_t ids[16];
static unsigned nids;

/* A few formats in the table, by real deferred calls; their formats'
 * bytes themselves hostile in part. */
static void register_formats(shmlog_t *h)
{
	int rc = 0;
	rc |= shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "reg",
			      "link %s down after %d ms", "eth0", 1500);
	rc |= shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "reg",
			      "%d %lld %f %Lf %p %s", 1, 2LL, 3.0, 4.0L,
			      (void *)5, "six");
	rc |= shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "reg",
			      "bad \xf8\x80\x80 \xed\xa0\x80 \x01\x1b[31m %s %d",
			      "x", 7);
	rc |= shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "reg",
			      "%s|%s|%s|%s \"\\\xe2\x80\xa8 \xc3", "a", "b",
			      "c", "d");
	rc |= shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "reg",
			      "%.3s %*d %-8.2e %c", "abcdef", 5, 42, 1.5, 'z');
	REQUIRE(rc == 0);
}

/* The formats' ids: the offsets of the table's ready entries. */
static void find_ids(const unsigned char *base)
{
	struct shmlog__fixed f;
	memcpy(&f, base, sizeof(f));
	uint32_t off = sizeof(struct shmlog__fmt_table);
	while (off + FMT_ENTRY_HDR <= f.fmt_size && nids < 16) {
		uint32_t word;
		memcpy(&word, base + f.fmt_off + off, 4);
		if (!(word & FMT_READY))
			break;
		ids[nids++] = off;
		off += FMT_ENTRY_HDR + (((word & ~FMT_READY) + 7) & ~7u);
	}
	REQUIRE(nids == 5);
}

static void make_records(shmlog_t *h, uint64_t seed)
{
	uint64_t s = seed;
	for (unsigned i = 0; i < nrec; i++) {
		struct expect *e = &ex[i];
		jd_make(&s, &e->d);
		/* a tag that says which record it is, then hostile bytes */
		int m = snprintf(e->tag, sizeof(e->tag), "\x7fJ%04u", i);
		size_t rest = e->d.tag_len < SHMLOG_TAG_MAX - (size_t)m
				      ? e->d.tag_len
				      : SHMLOG_TAG_MAX - (size_t)m;
		memcpy(e->tag + m, e->d.tag, rest);
		e->tag_len = (size_t)m + rest;
		e->tag[e->tag_len] = '\0';
		/* the format's id: a real one mostly */
		uint64_t pick = jd_rand(&s) % 16;
		uint32_t id = pick < 12 ? ids[pick % nids]
			      : pick == 12 ? 0
			      : pick == 13 ? UINT32_MAX
					   : (uint32_t)jd_rand(&s);
		e->known_id = pick < 12;
		memcpy(e->msg, &id, 4);
		memcpy(e->msg + 4, e->d.blk, e->d.blk_len);
		e->msg_len = 4 + e->d.blk_len;
		if (jd_rand(&s) % 32 == 0) { /* not even an id */
			e->msg_len = jd_rand(&s) % 4;
			e->known_id = false;
			e->d.whole = 0;
			e->d.complete = e->d.exact = true;
		}
		REQUIRE(shmlog_write_n(h, SHMLOG_INFO, e->tag, (char *)e->msg,
				       e->msg_len) == 0);
	}
}

/* The record's number in its tag: 4 digits, then anything. */
static int digits4(const char *s)
{
	int v = 0;
	for (int k = 0; k < 4; k++) {
		if (!isdigit((unsigned char)s[k]))
			return -1;
		v = v * 10 + (s[k] - '0');
	}
	return v;
}

/* Mark each record deferred in the file, as a hostile writer could. */
static void mark_deferred(unsigned char *base, size_t size)
{
	unsigned marked = 0;
	for (size_t off = 0; off + REC_HDR + 8 <= size; off += REC_ALIGN) {
		const unsigned char *t = base + off + REC_HDR;
		if (t[0] != 0x7f || t[1] != 'J' || !isdigit(t[2]))
			continue;
		unsigned i = (unsigned)digits4((const char *)t + 2);
		struct shmlog__rec *r = (struct shmlog__rec *)(void *)(base + off);
		if (i >= nrec || r->tag_len != ex[i].tag_len ||
		    r->msg_len != ex[i].msg_len ||
		    off + REC_HDR + r->tag_len + r->msg_len > size ||
		    memcmp(t, ex[i].tag, ex[i].tag_len) ||
		    memcmp(t + r->tag_len, ex[i].msg, ex[i].msg_len) ||
		    (r->flags & REC_FLAG_DEFERRED))
			continue;
		r->flags |= REC_FLAG_DEFERRED;
		ex[i].seen = true;
		marked++;
	}
	for (unsigned i = 0; i < nrec && marked != nrec; i++)
		if (!ex[i].seen)
			fprintf(stderr, "record %u (tag %zu, message %zu bytes) "
					"not found\n",
				i, ex[i].tag_len, ex[i].msg_len);
	REQUIRE(marked == nrec);
}

/* Which record a tag names, or -1 (a registration call's). */
static int record_of(const char *tag, size_t len)
{
	if (len < 6 || tag[0] != 0x7f || tag[1] != 'J')
		return -1;
	int i = digits4(tag + 2);
	return i >= 0 && (unsigned)i < nrec ? i : -1;
}

static FILE *open_out(const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	REQUIRE(f != NULL);
	return f;
}

/* shmlog_reader_deferred(), whole and cut to every small size; the whole
 * arrays go to deferred.jsonl, the texts and formats through jsonw into
 * bench.json. */
static void library_outputs(const char *b)
{
	static char args[ARGS_CAP], small[256];
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	FILE *lines = open_out("deferred.jsonl"), *doc = open_out("bench.json");
	struct jsonw j;
	jsonw_init(&j, doc);
	jsonw_begin_arr(&j);
	struct shmlog_record rec;
	int ev;
	unsigned seen = 0, bad = 0, cut_wrong = 0;
	uint64_t s = 7;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) != SHMLOG_EV_NONE) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		const char *fmt = NULL;
		int rc = shmlog_reader_deferred(r, &fmt, args, sizeof(args));
		CHECK(rc >= 0);
		jsonw_begin_obj(&j);
		jsonw_str(&j, "tag", rec.tag);
		jsonw_str(&j, "msg", rec.msg);
		jsonw_str(&j, "fmt", fmt);
		jsonw_end_obj(&j);
		size_t full = strlen(args);
		if (!jc_json_valid(args, full) && bad++ < 5)
			fprintf(stderr, "not JSON: %s\n", args);
		int i = record_of(rec.tag, rec.tag_len);
		if (i < 0)
			continue;
		struct expect *e = &ex[i];
		seen++;
		e->seen = true;
		if (e->d.exact &&
		    rc != (e->d.complete ? 0 : SHMLOG_DEFERRED_CUT) &&
		    cut_wrong++ < 5)
			fprintf(stderr, "record %d: returned %d, block %s\n", i,
				rc, e->d.complete ? "whole" : "damaged");
		fprintf(lines,
			"{\"i\":%d,\"whole\":%u,\"exact\":%d,\"complete\":%d,"
			"\"args\":%s}\n",
			i, e->d.whole, e->d.exact, e->d.complete, args);
		/* the same values into smaller buffers: each a valid array,
		 * said to be cut when it is */
		size_t caps[] = {1, 2, 3, 4, 5, 8, 13, 3 + jd_rand(&s) % 250};
		for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
			memset(small, 'X', sizeof(small));
			int rk = shmlog_reader_deferred(r, &fmt, small, caps[k]);
			size_t n = strnlen(small, sizeof(small));
			CHECK(n < caps[k]);
			if (caps[k] < 3) {
				CHECK(n == 0);
				continue;
			}
			if (!jc_json_valid(small, n) && bad++ < 5)
				fprintf(stderr, "cap %zu: not JSON: %.*s\n",
					caps[k], (int)n, small);
			if (full < caps[k])
				CHECK(rk == rc && !strcmp(small, args));
			else
				CHECK(rk == SHMLOG_DEFERRED_CUT);
		}
	}
	jsonw_end_arr(&j);
	CHECK_EQ(jsonw_status(&j), 0);
	fclose(doc);
	fclose(lines);
	shmlog_reader_close(r);
	CHECK_EQ(bad, 0);
	CHECK_EQ(cut_wrong, 0);
	CHECK_EQ(seen, nrec);
	printf("shmlog_reader_deferred: %u damaged records, %s\n", seen,
	       bad ? "INVALID JSON" : "every array valid at every size");
}

/* Run the CLI with @argv, its stdout into @out (in dir), its stderr
 * into @out.err: its exit status, or -1 if it ran past @bound_ms
 * (killed) or died by a signal. */
static int run_cli(char *const argv[], const char *out, int bound_ms)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, out);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	char e[300];
	snprintf(e, sizeof(e), "%s.err", p);
	if (pid == 0) {
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || fe < 0 || dup2(fd, 1) < 0 || dup2(fe, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	uint64_t deadline = now_ns() + (uint64_t)bound_ms * 1000000;
	int st = 0;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fprintf(stderr, "%s %s: still running after %d ms\n",
				argv[0], argv[1], bound_ms);
			return -1;
		}
		sleep_ns(2000000); /* polling the child's exit, bounded */
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		if (WIFEXITED(st))
			fprintf(stderr, "%s %s: exit %d; its stderr in %s\n",
				argv[0], argv[1], WEXITSTATUS(st), e);
		else
			fprintf(stderr, "%s %s: killed by signal %d\n",
				argv[0], argv[1], WTERMSIG(st));
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *name, size_t *n)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "rb");
	REQUIRE(f != NULL);
	size_t cap = 1 << 20, len = 0, got;
	char *b = malloc(cap);
	while (b && (got = fread(b + len, 1, cap - len, f)) > 0) {
		len += got;
		if (len == cap)
			b = realloc(b, cap *= 2);
	}
	fclose(f);
	REQUIRE(b != NULL);
	*n = len;
	return b;
}

/* Each line of @name one valid JSON text; how many lines name a record
 * of ours. */
static unsigned check_lines(const char *name, unsigned *lines)
{
	size_t n;
	char *b = slurp(name, &n);
	unsigned bad = 0, ours = 0;
	*lines = 0;
	for (size_t at = 0; at < n;) {
		char *nl = memchr(b + at, '\n', n - at);
		size_t len = nl ? (size_t)(nl - (b + at)) : n - at;
		if (!jc_json_valid(b + at, len) && bad++ < 5)
			fprintf(stderr, "%s: not JSON: %.*s\n", name,
				(int)(len < 300 ? len : 300), b + at);
		ours += memmem(b + at, len, "\"tag\":\"\\u007fJ", 14) != NULL;
		(*lines)++;
		at += len + 1;
	}
	free(b);
	CHECK_EQ(bad, 0);
	return ours;
}

/* A text format's output: valid UTF-8; no control character but the
 * newline and the tab, no DEL, no C1 control (U+0080-U+009F) that a
 * terminal could take as one; @prefix: every line starts as a record's
 * first line does in that format. Its lines. */
static unsigned check_text(const char *name, int (*prefix)(const char *))
{
	size_t n;
	char *b = slurp(name, &n);
	const unsigned char *u = (const unsigned char *)b;
	CHECK(jc_utf8_valid(u, n));
	unsigned ctl = 0, lines = 0, unprefixed = 0;
	for (size_t i = 0; i < n; i++) {
		if ((u[i] < 0x20 && u[i] != '\n' && u[i] != '\t') ||
		    u[i] == 0x7f ||
		    (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 &&
		     u[i + 1] <= 0x9f))
			ctl++;
		if (i == 0 || u[i - 1] == '\n') {
			if (prefix && !prefix(b + i) && unprefixed++ < 3)
				fprintf(stderr, "%s: a line not a record's: "
						"%.60s\n",
					name, b + i);
		}
		lines += u[i] == '\n';
	}
	if (ctl)
		fprintf(stderr, "%s: %u control characters\n", name, ctl);
	CHECK_EQ(ctl, 0);
	CHECK_EQ(unprefixed, 0);
	free(b);
	return lines;
}

/* "MM-DD HH:MM:SS.mmm " */
static int threadtime_line(const char *s)
{
	const char *pat = "dd-dd dd:dd:dd.ddd ";
	for (size_t i = 0; pat[i]; i++)
		if (pat[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != pat[i])
			return 0;
	return 1;
}

/* "I/TAG(  PID): " */
static int brief_line(const char *s)
{
	return s[0] && strchr("VDIWEF", s[0]) && s[1] == '/';
}

static void cli_outputs(const char *b, unsigned total)
{
	char *cat_json[] = {(char *)cli, "cat", "-b", (char *)b, "-v", "json",
			    NULL};
	CHECK_EQ(run_cli(cat_json, "cat.jsonl", 60000), 0);
	unsigned lines, ours = check_lines("cat.jsonl", &lines);
	CHECK_EQ(lines, total);
	CHECK_EQ(ours, nrec);
	char to[300];
	snprintf(to, sizeof(to), "jsonl:%s/forward.jsonl", dir);
	char *fwd[] = {(char *)cli, "forward", "-b", (char *)b, "--to", to,
		       "--dump", NULL};
	CHECK_EQ(run_cli(fwd, "forward.out", 60000), 0);
	ours = check_lines("forward.jsonl", &lines);
	CHECK_EQ(lines, total);
	CHECK_EQ(ours, nrec);
	printf("cat -v json, forward --to jsonl: %u lines each, checked\n",
	       total);

	static const struct {
		const char *v, *file;
		int (*prefix)(const char *);
	} text[] = {
		{"threadtime", "threadtime.txt", threadtime_line},
		{"brief", "brief.txt", brief_line},
		{"long", "long.txt", NULL},
		{"raw", "raw.txt", NULL},
	};
	for (size_t k = 0; k < sizeof(text) / sizeof(text[0]); k++) {
		for (int printable = 0; printable < 2; printable++) {
			char file[64];
			snprintf(file, sizeof(file), "%s%s", text[k].file,
				 printable ? ".printable" : "");
			char *argv[] = {(char *)cli, "cat", "-b", (char *)b,
					"-v", (char *)text[k].v, "-v",
					printable ? "printable" : "msec", NULL};
			CHECK_EQ(run_cli(argv, file, 60000), 0);
			lines = check_text(file, text[k].prefix);
			if (!strcmp(text[k].v, "raw"))
				CHECK_EQ(lines, total); /* one line a record */
			else
				CHECK(lines >= total);
		}
	}
	printf("threadtime, brief, long, raw (and printable): valid UTF-8, "
	       "no controls, lines as records\n");
}

/* The second parser: Python's json module over strictly decoded UTF-8,
 * and what a damaged block shows. */
static const char py_check[] =
	"import json, sys\n"
	"d = sys.argv[1]; n = int(sys.argv[2])\n"
	"def const(c): raise ValueError('not JSON: ' + c)\n"
	"def lines(name):\n"
	"    text = open(d + '/' + name, 'rb').read().decode('utf-8', 'strict')\n"
	"    return [json.loads(l, parse_constant=const) for l in text.splitlines()]\n"
	"exp = {}\n"
	"for o in lines('deferred.jsonl'):\n"
	"    exp[o['i']] = o\n"
	"    w = len(o['args'])\n"
	"    assert w == o['whole'] if o['exact'] else w >= o['whole'], o\n"
	"assert len(exp) == n, len(exp)\n"
	"known = set(int(x) for x in open(d + '/known').read().split())\n"
	"seen = 0\n"
	"for o in lines('cat.jsonl'):\n"
	"    t = o['tag']\n"
	"    if not t.startswith('\\x7fJ'): continue\n"
	"    e = exp[int(t[2:6])]; seen += 1\n"
	"    assert 'args' in o, o\n"
	"    if e['exact']:\n"
	"        assert len(o['args']) == e['whole'], (o, e)\n"
	"        assert o.get('args_truncated', False) == (not e['complete']), (o, e)\n"
	"    assert ('fmt' in o) == (e['i'] in known), (o, e)\n"
	"assert seen == n, seen\n"
	"assert sum(1 for o in lines('forward.jsonl') if o['tag'].startswith('\\x7fJ')) == n\n"
	"json.loads(open(d + '/bench.json', 'rb').read().decode('utf-8', 'strict'), parse_constant=const)\n"
	"print('python3: every line parses, args and args_truncated as made')\n";

static void python_check(void)
{
	FILE *k = open_out("known");
	for (unsigned i = 0; i < nrec; i++)
		if (ex[i].known_id)
			fprintf(k, "%u\n", i);
	fclose(k);
	char n[16];
	snprintf(n, sizeof(n), "%u", nrec);
	char *argv[] = {"/usr/bin/env", "python3", "-c", (char *)py_check, dir,
			n, NULL};
	int rc = run_cli(argv, "python.out", 120000);
	if (rc == 127) {
		fprintf(stderr, "python3 not found: the second parser's checks "
				"are left out\n");
		return;
	}
	size_t len;
	char *out = slurp("python.out", &len);
	fwrite(out, 1, len, stdout);
	free(out);
	if (rc != 0) {
		out = slurp("python.out.err", &len);
		fwrite(out, 1, len, stderr);
		free(out);
	}
	CHECK_EQ(rc, 0);
}

static const char *buffer;

/* Leave no buffer behind, whatever stopped the test (REQUIRE too). */
static void remove_buffer(void)
{
	if (buffer)
		shmlog_remove(buffer);
}

static void remove_dir(void)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (dir[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_json SHMLOG_CLI [RECORDS] [SEED]\n");
		return 2;
	}
	cli = argv[1];
	nrec = argc > 2 ? (unsigned)atoi(argv[2]) : 1500;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
	REQUIRE(nrec > 0 && nrec <= 9999);
	printf("%u damaged records, seed %llu\n", nrec,
	       (unsigned long long)seed);
	snprintf(dir, sizeof(dir), "/tmp/shmlog-test-json-XXXXXX");
	REQUIRE(mkdtemp(dir) != NULL);
	ex = calloc(nrec, sizeof(*ex));
	REQUIRE(ex != NULL);

	const char *b = buffer = test_buffer("json");
	atexit(remove_buffer);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 16u << 20; /* every record kept */
	o.lanes = 4;
	shmlog_remove(b);
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	register_formats(h);
	char path[512];
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	size_t size;
	unsigned char *base = hw_map_rw(path, &size);
	REQUIRE(base != NULL);
	find_ids(base);
	make_records(h, seed);
	shmlog_close(h);
	mark_deferred(base, size);
	munmap(base, size);

	library_outputs(b);
	cli_outputs(b, nrec + nids);
	python_check();
	if (!test_failures)
		remove_dir();
	else
		fprintf(stderr, "outputs kept in %s\n", dir);
	free(ex);
	return test_done("test_json");
}
