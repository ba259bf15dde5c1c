/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench disabled: what a log call that is filtered out costs.
 *
 * Cases (see docs/filtering.md for what each counts):
 *   empty        the measuring loop alone (counter, compare, branch)
 *   floor        SHMLOG_D built with SHMLOG_MIN_PRIORITY=SHMLOG_INFO
 *   global       SHMLOG_D("net") with the spec "*:W"
 *   tag100       SHMLOG_D("tag057") with 100 "tagNNN:W" entries and "*:V",
 *                so only the tag's own entry turns the call off
 *   change_first the first call of a site just after shmlog_set_filter():
 *                the process recompiles the 100-tag spec (slow path)
 *   change_other the first call of another site after the same change:
 *                the spec is already compiled, the site looks its tag up
 *   change_steady every later call after a live change (fast path again)
 *   uncached     shmlog_enabled() on every call: what the site cache saves
 *
 * Timing: loops of N calls, repeated; the cases are interleaved within each
 * repetition and the empty loop of the same repetition is subtracted, so a
 * frequency change or a neighbour's burst hits every case alike. Instruction
 * counts: callgrind, run at two loop lengths; the difference cancels the
 * set-up and the site's first (slow) call.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "callgrind.h"
#include "filter_bench.h"
#include "shmlog.h"

#define NTAGS 100
#define SPEC_MAX 2048

enum spec_kind {
	SPEC_NONE, /* whatever is set: the case does not look at it */
	SPEC_GLOBAL, /* "*:W" */
	SPEC_TAGS, /* 100 tags at W, "*:V" */
	SPEC_TAGS_TOGGLE, /* a live change: alternate two 100-tag specs */
};

struct dcase {
	const char *name;
	const char *what;
	void (*loop)(uint64_t n); /* NULL: an event case */
	void (*event)(void); /* one first call after a change */
	const char *func; /* the symbol callgrind collects in */
	enum spec_kind spec;
	unsigned div; /* run N / div calls: the case is slow */
};

static const struct dcase cases[] = {
	{"empty", "the measuring loop alone", fb_loop_empty, NULL,
	 "fb_loop_empty", SPEC_NONE, 1},
	{"floor", "below the compile-time floor (SHMLOG_MIN_PRIORITY)",
	 fb_loop_floor, NULL, "fb_loop_floor", SPEC_NONE, 1},
	{"global", "below the global level ('*:W')", fb_loop_global, NULL,
	 "fb_loop_global", SPEC_GLOBAL, 1},
	{"tag100", "filtered by tag, 100 tags configured", fb_loop_tag, NULL,
	 "fb_loop_tag", SPEC_TAGS, 1},
	{"change_first", "first call after a live change (recompiles)", NULL,
	 fb_first_call, "fb_first_call", SPEC_TAGS_TOGGLE, 1},
	{"change_other", "another site's first call after the change", NULL,
	 fb_other_site_call, "fb_other_site_call", SPEC_TAGS_TOGGLE, 1},
	{"change_steady", "later calls after a live change", fb_loop_change,
	 NULL, "fb_loop_change", SPEC_TAGS_TOGGLE, 1},
	{"uncached", "shmlog_enabled() per call, 100 tags (no site cache)",
	 fb_loop_uncached, NULL, "fb_loop_uncached", SPEC_TAGS, 50},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

struct opts {
	bool quick;
	const char *json;
	uint64_t iters; /* calls per timed loop */
	int reps;
	int events; /* live changes timed one by one */
	bool no_callgrind;
};

struct result {
	double ns_med, ns_p99; /* net of the empty loop (events: per event) */
	double ns_gross; /* median per iteration, loop included */
	double ns_wall; /* as ns_med, from wall time instead of CPU time */
	double ins_net, ins_gross; /* NAN: not measured */
};

static char buffer_name[128];
static char spec_global[] = "*:W";
static char spec_tags[2][SPEC_MAX];
static unsigned toggle;

static int apply_spec(enum spec_kind k)
{
	const char *s;
	switch (k) {
	case SPEC_GLOBAL:
		s = spec_global;
		break;
	case SPEC_TAGS:
		s = spec_tags[0];
		break;
	case SPEC_TAGS_TOGGLE:
		s = spec_tags[++toggle & 1];
		break;
	default:
		return 0;
	}
	return shmlog_set_filter(buffer_name, s, NULL);
}

/* Quantile of the sorted @v (nearest rank). */
static double quantile(const double *v, int n, double q)
{
	int i = (int)ceil(q * n) - 1;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static void summarize(double *v, int n, double *med, double *p99)
{
	*med = bench_median(v, n); /* sorts */
	*p99 = quantile(v, n, 0.99);
}

static double thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Per-call time of @n calls: thread CPU time in *@cpu (what the machine's
 * other tenants cannot inflate by taking the core away) and wall time in
 * *@wall (bench_now_ns). */
static void time_loop(void (*loop)(uint64_t), uint64_t n, double *cpu,
		      double *wall)
{
	double c0 = thread_cpu_ns();
	uint64_t t0 = bench_now_ns();
	loop(n);
	uint64_t t1 = bench_now_ns();
	double c1 = thread_cpu_ns();
	*cpu = (c1 - c0) / (double)n;
	*wall = (double)(t1 - t0) / (double)n;
}

/* All loop cases, interleaved within each repetition. */
static int time_loops(const struct opts *o, struct result *res)
{
	size_t n = (size_t)(NCASES * o->reps);
	double *cpu = calloc(n, sizeof(double));
	double *wall = calloc(n, sizeof(double));
	double *net = calloc((size_t)o->reps, sizeof(double));
	int err = cpu && wall && net ? 0 : -ENOMEM;
	for (int r = 0; !err && r < o->reps; r++) {
		for (int c = 0; !err && c < NCASES; c++) {
			const struct dcase *d = &cases[c];
			if (!d->loop)
				continue;
			err = apply_spec(d->spec);
			d->loop(1); /* the site refreshes here, untimed */
			size_t i = (size_t)(c * o->reps + r);
			time_loop(d->loop, o->iters / d->div, &cpu[i],
				  &wall[i]);
		}
	}
	/* Cases from the last to the first: bench_median() sorts its
	 * argument, and the empty loop's row (case 0) must stay in
	 * repetition order until every case has subtracted it. */
	for (int c = NCASES - 1; !err && c >= 0; c--) {
		if (!cases[c].loop)
			continue;
		double *g = &cpu[c * o->reps], *w = &wall[c * o->reps];
		for (int r = 0; r < o->reps; r++)
			net[r] = c == 0 ? 0 : g[r] - cpu[r];
		summarize(net, o->reps, &res[c].ns_med, &res[c].ns_p99);
		for (int r = 0; r < o->reps; r++)
			net[r] = c == 0 ? 0 : w[r] - wall[r];
		res[c].ns_wall = bench_median(net, o->reps);
		res[c].ns_gross = bench_median(g, o->reps);
	}
	free(cpu);
	free(wall);
	free(net);
	return err;
}

/* The event cases: one live change, then each site's first call, timed
 * one by one (the timer's own cost subtracted). */
static int time_events(const struct opts *o, struct result *res)
{
	int ci = -1, co = -1;
	for (int c = 0; c < NCASES; c++) {
		if (cases[c].event == fb_first_call)
			ci = c;
		if (cases[c].event == fb_other_site_call)
			co = c;
	}
	double tc = bench_timer_cost_ns();
	double *first = calloc((size_t)o->events, sizeof(double));
	double *other = calloc((size_t)o->events, sizeof(double));
	int err = first && other ? 0 : -ENOMEM;
	fb_first_call();
	fb_other_site_call();
	for (int e = 0; !err && e < o->events; e++) {
		err = apply_spec(SPEC_TAGS_TOGGLE);
		uint64_t t0 = bench_now_ns();
		fb_first_call();
		uint64_t t1 = bench_now_ns();
		fb_other_site_call();
		uint64_t t2 = bench_now_ns();
		first[e] = (double)(t1 - t0) - tc;
		other[e] = (double)(t2 - t1) - tc;
	}
	if (!err) {
		summarize(first, o->events, &res[ci].ns_med, &res[ci].ns_p99);
		summarize(other, o->events, &res[co].ns_med, &res[co].ns_p99);
		res[ci].ns_gross = res[ci].ns_wall = res[ci].ns_med;
		res[co].ns_gross = res[co].ns_wall = res[co].ns_med;
	}
	free(first);
	free(other);
	return err;
}

/* ---- instruction counts ---- */

/* The hidden mode run under callgrind: set up as the timed run does, then
 * run one case @n times. */
static int internal_count(const char *name, uint64_t n)
{
	const struct dcase *d = NULL;
	for (int c = 0; c < NCASES; c++)
		if (!strcmp(cases[c].name, name))
			d = &cases[c];
	if (!d)
		return 2;
	int err = apply_spec(d->spec);
	if (err)
		return 1;
	if (d->loop) {
		d->loop(1);
		d->loop(n);
		return 0;
	}
	for (uint64_t i = 0; i < n && !err; i++) {
		err = apply_spec(d->spec);
		fb_first_call();
		fb_other_site_call();
	}
	return err ? 1 : 0;
}

/* Instructions per call of case @c: two runs, @n1 and @n2 calls. */
static double count_case(const struct dcase *d, uint64_t n1, uint64_t n2)
{
	int64_t cnt[2];
	uint64_t n[2] = {n1, n2};
	for (int i = 0; i < 2; i++) {
		char num[32];
		snprintf(num, sizeof(num), "%" PRIu64, n[i]);
		char *args[] = {"disabled", "--internal-count", (char *)d->name,
				num, NULL};
		cnt[i] = fb_callgrind_count(d->func, args);
		if (cnt[i] < 0)
			return NAN;
	}
	return (double)(cnt[1] - cnt[0]) / (double)(n2 - n1);
}

static void count_all(const struct opts *o, struct result *res)
{
	uint64_t big = o->quick ? 100000 : 1000000;
	for (int c = 0; c < NCASES; c++) {
		const struct dcase *d = &cases[c];
		uint64_t lo = d->loop ? 1000 : 10;
		uint64_t hi = d->loop ? lo + big / d->div : o->quick ? 20 : 110;
		res[c].ins_gross =
			o->no_callgrind ? NAN : count_case(d, lo, hi);
		res[c].ins_net = res[c].ins_gross;
	}
	for (int c = 1; c < NCASES; c++)
		if (cases[c].loop)
			res[c].ins_net -= res[0].ins_gross;
	res[0].ins_net = 0;
}

/* ---- output ---- */

static void fmt_ins(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.2f", v);
}

static void print_results(const struct opts *o, const struct result *res)
{
	printf("\n%-14s %10s %10s %10s %10s %11s\n", "case", "time/call",
	       "p99", "wall", "instr/call", "(loop incl)");
	for (int c = 0; c < NCASES; c++) {
		const struct result *r = &res[c];
		char ni[32], gi[32], t[3][24];
		fmt_ins(ni, sizeof(ni), r->ins_net);
		fmt_ins(gi, sizeof(gi), r->ins_gross);
		/* a difference of two loops can come out a hair below 0 */
		printf("%-14s %10s %10s %10s %10s %11s\n", cases[c].name,
		       bench_dur(t[0], 24, r->ns_med < 0 ? 0 : r->ns_med),
		       bench_dur(t[1], 24, r->ns_p99 < 0 ? 0 : r->ns_p99),
		       bench_dur(t[2], 24, r->ns_wall < 0 ? 0 : r->ns_wall), ni,
		       gi);
	}
	printf("\n# cases\n");
	for (int c = 0; c < NCASES; c++)
		printf("#  %-14s %s\n", cases[c].name, cases[c].what);
	char empty_ins[32], tag_ins[32];
	fmt_ins(empty_ins, sizeof(empty_ins), res[0].ins_gross);
	fmt_ins(tag_ins, sizeof(tag_ins), res[3].ins_net);
	printf("\ntime/call: thread CPU time, median (p99) over %d "
	       "repetitions of %" PRIu64 " calls,\nminus the empty loop of "
	       "the same repetition; wall: the same from wall time\n"
	       "(change_first/change_other: one call each after %d live "
	       "changes, timer cost subtracted).\n"
	       "instr/call: callgrind, minus the empty loop's %s instructions "
	       "per iteration;\n'(loop incl)' keeps them.\n",
	       o->reps, o->iters, o->events, empty_ins);
	if (isnan(res[0].ins_gross))
		printf("instruction counts n/a: --no-callgrind, or valgrind "
		       "missing or failed.\n");
	const struct result *t = &res[3];
	printf("\ntarget (tag100): <= 1 ns and <= 8 instructions per call: "
	       "%.2f ns, %s instructions -> %s\n",
	       t->ns_med, tag_ins,
	       t->ns_med <= 1.0 && (isnan(t->ins_net) || t->ins_net <= 8.0)
		       ? "met"
		       : "MISSED");
}

static int write_json(const struct opts *o, const struct bench_machine *m,
		      const struct result *res)
{
	struct jsonw j;
	if (!bench_json_open(&j, o->json, "disabled", m))
		return -errno;
	jsonw_int(&j, "iterations", (long long)o->iters);
	jsonw_int(&j, "repetitions", o->reps);
	jsonw_int(&j, "events", o->events);
	jsonw_int(&j, "tags_configured", NTAGS);
	jsonw_key(&j, "results");
	jsonw_begin_arr(&j);
	for (int c = 0; c < NCASES; c++) {
		jsonw_begin_obj(&j);
		jsonw_str(&j, "case", cases[c].name);
		jsonw_str(&j, "what", cases[c].what);
		jsonw_num(&j, "ns_per_call", res[c].ns_med);
		jsonw_num(&j, "ns_per_call_p99", res[c].ns_p99);
		jsonw_num(&j, "ns_per_call_wall", res[c].ns_wall);
		jsonw_num(&j, "ns_per_iteration", res[c].ns_gross);
		jsonw_num(&j, "instructions_per_call", res[c].ins_net);
		jsonw_num(&j, "instructions_per_iteration",
			       res[c].ins_gross);
		jsonw_end_obj(&j);
	}
	jsonw_end_arr(&j);
	return bench_json_close(&j);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: shmlog-bench disabled [--quick] [--json FILE] "
		"[--iters N] [--reps N] [--events N] [--no-callgrind]\n"
		"Cost of a log call that is filtered out: ns (timed loops) "
		"and instructions\n(callgrind) per call, per case.\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.iters = 100000000, .reps = 11, .events = 2000};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			o->quick = true;
			o->iters = 2000000;
			o->reps = 3;
			o->events = 100;
		} else if (!strcmp(a, "--json") && v) {
			o->json = argv[++i];
		} else if (!strcmp(a, "--iters") && v) {
			o->iters = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(a, "--reps") && v) {
			o->reps = atoi(argv[++i]);
		} else if (!strcmp(a, "--events") && v) {
			o->events = atoi(argv[++i]);
		} else if (!strcmp(a, "--no-callgrind")) {
			o->no_callgrind = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		} else {
			fprintf(stderr, "shmlog-bench disabled: bad option "
					"'%s'\n",
				a);
			usage(stderr);
			return 2;
		}
	}
	if (o->iters < 1000 || o->reps < 1 || o->events < 1) {
		fprintf(stderr, "shmlog-bench disabled: --iters must be >= "
				"1000, --reps and --events >= 1\n");
		return 2;
	}
	return 0;
}

static int run(const struct opts *o)
{
	struct bench_machine m;
	bench_machine_get(&m);
	bench_machine_print(stdout, &m, "");
	double load[3] = {NAN, NAN, NAN};
	if (getloadavg(load, 3) == 3) /* a busy host shows in wall times */
		printf("load average: %.2f %.2f %.2f (%d cores)\n", load[0],
		       load[1], load[2], m.cores);
	printf("disabled: %" PRIu64 " calls x %d repetitions per case, "
	       "%d live changes;\nbuffer %s\n",
	       o->iters, o->reps, o->events, buffer_name);
	fflush(stdout);
	struct result res[NCASES];
	memset(res, 0, sizeof(res));
	int err = time_loops(o, res);
	if (!err)
		err = time_events(o, res);
	if (err) {
		fprintf(stderr, "shmlog-bench disabled: %s\n",
			shmlog_strerror(err));
		return 1;
	}
	err = fb_buffer_check_empty(buffer_name, "disabled");
	if (err)
		return 1;
	count_all(o, res);
	print_results(o, res);
	if (o->json && (err = write_json(o, &m, res))) {
		fprintf(stderr, "shmlog-bench disabled: cannot write %s: %s\n",
			o->json, strerror(-err));
		return 1;
	}
	return 0;
}

int bench_disabled_main(int argc, char **argv)
{
	/* The hidden mode callgrind runs: --internal-count CASE N. */
	bool internal = argc == 4 && !strcmp(argv[1], "--internal-count");
	struct opts o;
	int rc = internal ? 0 : parse_args(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	fb_spec_tags(spec_tags[0], SPEC_MAX, NTAGS, 'W', 'V');
	fb_spec_tags(spec_tags[1], SPEC_MAX, NTAGS, 'E', 'V');
	int err = fb_buffer_setup(buffer_name, sizeof(buffer_name));
	if (err) {
		fprintf(stderr, "shmlog-bench disabled: cannot create buffer "
				"%s: %s\n",
			buffer_name, shmlog_strerror(err));
		return 1;
	}
	if (internal)
		rc = internal_count(argv[2], strtoull(argv[3], NULL, 10));
	else
		rc = run(&o);
	fb_buffer_remove(buffer_name);
	return rc;
}
