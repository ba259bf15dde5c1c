/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench faults: the buffered-IO minor page-fault study (2010), on
 * today's glibc, beside shmlog's write path.
 *
 * The study found an application taking tens of thousands of minor faults
 * a second, traced them to stdio streams opened and closed in a loop (glibc
 * mmap()ed a fresh 4 KiB buffer for every stream, so every stream faulted
 * its buffer in) and cured them with setvbuf() to a static buffer; it also
 * cited malloc() as the other known source: blocks past glibc's mmap
 * threshold are mapped on malloc and unmapped on free, so each one faults
 * all its pages in again.
 *
 * Each case runs in a child process of its own (malloc's state and
 * mallopt() settings do not leak between cases), warms up, then counts
 * minor faults with getrusage(RUSAGE_SELF) around the measured loop:
 *   stdio-read-default   fopen("r") + fread 256 B until EOF + fclose of a
 *                        24 KiB file, the study's program
 *   stdio-read-setvbuf   the same with setvbuf() to a static buffer
 *   stdio-write-default  fopen("w") + 16 fwrite of 256 B + fclose
 *   stdio-write-setvbuf  the same with setvbuf() to a static buffer
 *   malloc-dynamic       malloc + touch + free of growing sizes, 64 KiB to
 *                        16 MiB, glibc's defaults (dynamic mmap threshold)
 *   malloc-fixed-low     the same with mallopt(M_MMAP_THRESHOLD, 128 KiB):
 *                        the threshold fixed where it starts
 *   malloc-fixed-high    M_MMAP_THRESHOLD 64 MiB and M_TRIM_THRESHOLD
 *                        128 MiB: the study's cure, nothing mapped or trimmed
 *   shmlog-write         shmlog_write() of the RFC's sample messages into a
 *                        1 MiB buffer that has wrapped
 */
#include <errno.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "sample_messages.h"
#include "shmlog.h"

#define N_SIZES 9
static const size_t malloc_sizes[N_SIZES] = {
    64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20,
    2 << 20,  4 << 20,	 8 << 20,   16 << 20};

struct opts {
	bool quick;
	const char *json;
	long stdio_ops, malloc_ops, shmlog_ops;
	char dir[200];
};

/* What a child reports through its pipe. */
struct outcome {
	int ok;
	char err[400];
	long ops;
	double minflt, ns;
	double per_size[N_SIZES]; /* malloc cases: faults per op, each size */
};

enum malloc_mode { M_DYNAMIC, M_FIXED_LOW, M_FIXED_HIGH };

struct fcase {
	const char *name, *what;
	void (*run)(const struct opts *o, int arg, struct outcome *r);
	int arg;
};

/* ---- counting ---- */

static long minflt_now(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

struct span {
	long flt;
	uint64_t ns;
};

static struct span span_start(void)
{
	return (struct span){minflt_now(), bench_now_ns()};
}

static void span_end(struct span s, long ops, struct outcome *r)
{
	r->ns = (double)(bench_now_ns() - s.ns) / (double)ops;
	r->minflt = (double)(minflt_now() - s.flt) / (double)ops;
	r->ops = ops;
	r->ok = 1;
}

/* ---- stdio ---- */

static char static_buf[8192];

static void stdio_path(const struct opts *o, char *p, size_t n)
{
	snprintf(p, n, "%s/shmlog-bench-faults-%d", o->dir, (int)getpid());
}

/* The study's input: a 24 KiB text file (its dmesg.txt was 23,818 B). */
static int make_input(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	for (int i = 0; i < 24 * 1024 / 64; i++)
		fprintf(f, "%-63s\n", seed_messages[i % 16].tag);
	return fclose(f) ? -errno : 0;
}

static bool stdio_read_once(const char *path, bool own_buffer)
{
	char buf[256];
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	if (own_buffer)
		setvbuf(f, static_buf, _IOFBF, 4096);
	while (fread(buf, sizeof(buf), 1, f) == 1)
		;
	fclose(f);
	return true;
}

static bool stdio_write_once(const char *path, bool own_buffer)
{
	char buf[256];
	memset(buf, 'x', sizeof(buf));
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	if (own_buffer)
		setvbuf(f, static_buf, _IOFBF, 4096);
	for (int i = 0; i < 16; i++)
		fwrite(buf, sizeof(buf), 1, f);
	return fclose(f) == 0;
}

/* arg: bit 0 own buffer (setvbuf), bit 1 write instead of read */
static void run_stdio(const struct opts *o, int arg, struct outcome *r)
{
	char path[256];
	bool own = arg & 1, wr = arg & 2;
	stdio_path(o, path, sizeof(path));
	int e = wr ? 0 : make_input(path);
	if (e < 0) {
		snprintf(r->err, sizeof(r->err), "%.200s: %s", path, strerror(-e));
		return;
	}
	for (long i = 0; i < o->stdio_ops / 10 + 1; i++) /* warm-up */
		(wr ? stdio_write_once : stdio_read_once)(path, own);
	struct span s = span_start();
	for (long i = 0; i < o->stdio_ops; i++)
		if (!(wr ? stdio_write_once : stdio_read_once)(path, own)) {
			snprintf(r->err, sizeof(r->err), "%.200s: %s", path,
				 strerror(errno));
			unlink(path);
			return;
		}
	span_end(s, o->stdio_ops, r);
	unlink(path);
}

/* ---- malloc ---- */

static void touch(char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (char)i;
	p[n - 1] = 1;
}

static void set_mode(enum malloc_mode m)
{
	if (m == M_FIXED_LOW) {
		mallopt(M_MMAP_THRESHOLD, 128 << 10);
	} else if (m == M_FIXED_HIGH) {
		mallopt(M_MMAP_THRESHOLD, 64 << 20);
		mallopt(M_TRIM_THRESHOLD, 128 << 20);
	}
}

/* Growing sizes in one process: glibc's dynamic threshold learns from each
 * freed mapping, which is the behaviour under study. */
static void run_malloc(const struct opts *o, int arg, struct outcome *r)
{
	set_mode((enum malloc_mode)arg);
	long total = 0;
	struct span all = span_start();
	for (int s = 0; s < N_SIZES; s++) {
		long f0 = minflt_now();
		for (long i = 0; i < o->malloc_ops; i++) {
			char *p = malloc(malloc_sizes[s]);
			if (!p) {
				snprintf(r->err, sizeof(r->err),
					 "malloc(%zu) failed", malloc_sizes[s]);
				return;
			}
			touch(p, malloc_sizes[s]);
			free(p);
		}
		r->per_size[s] =
		    (double)(minflt_now() - f0) / (double)o->malloc_ops;
		total += o->malloc_ops;
	}
	span_end(all, total, r);
}

/* ---- shmlog ---- */

static void run_shmlog(const struct opts *o, int arg, struct outcome *r)
{
	(void)arg;
	char name[64];
	shmlog_t *h;
	snprintf(name, sizeof(name), "bench-faults-%d", (int)getpid());
	shmlog_remove(name);
	int e = shmlog_open(name, SHMLOG_OPEN_CREATE, &h);
	if (e < 0) {
		snprintf(r->err, sizeof(r->err), "shmlog_open(%s): %s", name,
			 shmlog_strerror(e));
		return;
	}
	/* warm-up: the ring wraps, the lane is claimed, pages are in */
	for (long i = 0; i < 100000; i++)
		shmlog_write(h, seed_messages[i % 16].prio,
			     seed_messages[i % 16].tag,
			     seed_messages[i % 16].msg);
	struct span s = span_start();
	for (long i = 0; i < o->shmlog_ops; i++)
		shmlog_write(h, seed_messages[i % 16].prio,
			     seed_messages[i % 16].tag,
			     seed_messages[i % 16].msg);
	span_end(s, o->shmlog_ops, r);
	shmlog_close(h);
	shmlog_remove(name);
}

static const struct fcase cases[] = {
    {"stdio-read-default",
     "fopen + fread 256 B to EOF + fclose, 24 KiB file (the study's loop)",
     run_stdio, 0},
    {"stdio-read-setvbuf", "the same, setvbuf() to a static 4 KiB buffer",
     run_stdio, 1},
    {"stdio-write-default", "fopen + 16 x fwrite 256 B + fclose", run_stdio,
     2},
    {"stdio-write-setvbuf", "the same, setvbuf() to a static 4 KiB buffer",
     run_stdio, 3},
    {"malloc-dynamic",
     "malloc + touch + free, 64 KiB..16 MiB growing; glibc defaults",
     run_malloc, M_DYNAMIC},
    {"malloc-fixed-low", "the same, M_MMAP_THRESHOLD fixed at 128 KiB",
     run_malloc, M_FIXED_LOW},
    {"malloc-fixed-high",
     "the same, M_MMAP_THRESHOLD 64 MiB, M_TRIM_THRESHOLD 128 MiB",
     run_malloc, M_FIXED_HIGH},
    {"shmlog-write", "shmlog_write() of the RFC's messages, wrapped 1 MiB buffer",
     run_shmlog, 0},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

/* Run @c in a child of its own; its outcome comes back through a pipe. */
static void run_case(const struct opts *o, const struct fcase *c,
		     struct outcome *r)
{
	int p[2];
	memset(r, 0, sizeof(*r));
	if (pipe(p) < 0) {
		snprintf(r->err, sizeof(r->err), "pipe: %s", strerror(errno));
		return;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		struct outcome mine = {0};
		c->run(o, c->arg, &mine);
		ssize_t n = write(p[1], &mine, sizeof(mine));
		_exit(n == (ssize_t)sizeof(mine) ? 0 : 1);
	}
	close(p[1]);
	ssize_t n = pid < 0 ? -1 : read(p[0], r, sizeof(*r));
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (n != (ssize_t)sizeof(*r)) {
		memset(r, 0, sizeof(*r));
		snprintf(r->err, sizeof(r->err), "the measuring child died");
	}
}

/* ---- report ---- */

static void print_report(const struct outcome *res)
{
	char t[24];
	printf("\n%-20s %14s %10s %10s\n", "case", "minor faults/op", "ops",
	       "time/op");
	for (int i = 0; i < NCASES; i++) {
		const struct outcome *r = &res[i];
		if (!r->ok) {
			printf("%-20s FAILED: %s\n", cases[i].name, r->err);
			continue;
		}
		printf("%-20s %14.3f %10ld %10s\n", cases[i].name, r->minflt,
		       r->ops, bench_dur(t, sizeof(t), r->ns));
	}
	printf("\n# malloc + touch + free: minor faults per call, by size\n");
	printf("%-10s %14s %14s %14s\n", "size", "dynamic", "fixed 128 KiB",
	       "fixed 64 MiB");
	for (int s = 0; s < N_SIZES; s++) {
		printf("%6zu KiB", malloc_sizes[s] >> 10);
		for (int i = 0; i < NCASES; i++)
			if (cases[i].run == run_malloc)
				printf(" %14.2f", res[i].per_size[s]);
		printf("\n");
	}
	printf("\n# legend\n");
	for (int i = 0; i < NCASES; i++)
		printf("#  %-20s %s\n", cases[i].name, cases[i].what);
}

static int write_json(const struct opts *o, const struct bench_machine *m,
		      const struct outcome *res)
{
	struct jsonw j;
	if (!bench_json_open(&j, o->json, "faults", m))
		return -errno;
	jsonw_str(&j, "libc", "glibc");
	jsonw_str(&j, "libc_version", gnu_get_libc_version());
	jsonw_int(&j, "quick", o->quick);
	jsonw_key(&j, "results");
	jsonw_begin_arr(&j);
	for (int i = 0; i < NCASES; i++) {
		jsonw_begin_obj(&j);
		jsonw_str(&j, "case", cases[i].name);
		jsonw_str(&j, "what", cases[i].what);
		jsonw_int(&j, "ok", res[i].ok);
		jsonw_str(&j, "error", res[i].err);
		jsonw_int(&j, "ops", res[i].ops);
		jsonw_num(&j, "minflt_per_op", res[i].minflt);
		jsonw_num(&j, "ns_per_op", res[i].ns);
		jsonw_end_obj(&j);
	}
	jsonw_end_arr(&j);
	jsonw_key(&j, "malloc_sweep");
	jsonw_begin_arr(&j);
	for (int s = 0; s < N_SIZES; s++) {
		jsonw_begin_obj(&j);
		jsonw_int(&j, "size", (long long)malloc_sizes[s]);
		for (int i = 0; i < NCASES; i++)
			if (cases[i].run == run_malloc)
				jsonw_num(&j, cases[i].name + 7,
					       res[i].per_size[s]);
		jsonw_end_obj(&j);
	}
	jsonw_end_arr(&j);
	return bench_json_close(&j);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: shmlog-bench faults [--quick] [--json FILE] [--dir "
		"DIR]\n\n"
		"Minor page faults per operation (getrusage), the buffered-IO "
		"page-fault study\n(2010) on today's glibc: stdio streams with "
		"their default buffer and with\nsetvbuf(), malloc/free across "
		"glibc's mmap threshold (dynamic and fixed), and\nshmlog's "
		"write path. Each case runs in a process of its own.\n\n"
		"  --quick      fewer operations (the CI smoke test)\n"
		"  --json FILE  write every figure as JSON\n"
		"  --dir DIR    where the stdio cases open their file "
		"(default /tmp)\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.stdio_ops = 20000,
			   .malloc_ops = 200,
			   .shmlog_ops = 2000000};
	snprintf(o->dir, sizeof(o->dir), "/tmp");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			o->quick = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(a, "--json") && v) {
			o->json = argv[++i];
		} else if (!strcmp(a, "--dir") && v) {
			snprintf(o->dir, sizeof(o->dir), "%s", argv[++i]);
		} else {
			fprintf(stderr,
				"shmlog-bench faults: unknown option or missing "
				"value '%s'\n\n",
				a);
			usage(stderr);
			return -1;
		}
	}
	if (o->quick) {
		o->stdio_ops = 2000;
		o->malloc_ops = 20;
		o->shmlog_ops = 200000;
	}
	return 0;
}

int bench_faults_main(int argc, char **argv)
{
	struct opts o;
	int pr = parse(argc, argv, &o);
	if (pr)
		return pr > 0 ? 0 : 2;
	struct bench_machine m;
	bench_machine_get(&m);
	printf("# shmlog-bench faults%s\n", o.quick ? " --quick" : "");
	bench_machine_print(stdout, &m, "# ");
	printf("# glibc %s; stdio files in %s\n", gnu_get_libc_version(),
	       o.dir);
	static struct outcome res[NCASES];
	int failed = 0;
	for (int i = 0; i < NCASES; i++) {
		fprintf(stderr, "  %s\n", cases[i].name);
		run_case(&o, &cases[i], &res[i]);
		failed |= !res[i].ok;
	}
	print_report(res);
	int e = o.json ? write_json(&o, &m, res) : 0;
	if (e < 0) {
		fprintf(stderr, "shmlog-bench faults: cannot write %s: %s\n",
			o.json, strerror(-e));
		return 1;
	}
	return failed;
}
