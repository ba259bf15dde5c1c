/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench log: every contender measured side by side in one run, with
 * the machine and the conditions printed next to the figures.
 *
 * Plan of a run (each contender is set up once and torn down after all of
 * its parts, so a daemon starts once):
 *   1. single writer, seed 000's 16 messages: --reps runs, medians
 *   2. syscalls per record under strace (difference of two run lengths)
 *   3. message-size sweep, 16 B .. 4 KiB, single writer
 *   4. scaling: 1, 2, 4, 8 writers as threads and as processes
 *   5. shmlog's readers: dump rate, follow latency, follower cost
 * then the tables, the targets of issue 4, JSON and plots.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

#define MAX_REPS 15
#define N_SIZES 5
#define N_SCALE 4
static const size_t sweep_sizes[N_SIZES] = {16, 64, 256, 1024, 4096};
static const int scale_writers[N_SCALE] = {1, 2, 4, 8};

static const struct lb_contender *const all[] = {
    &lb_shmlog_default, &lb_shmlog_realtime,
    &lb_shmlog_coarse,	&lb_seed,
    &lb_kmsg,		&lb_syslog,
    &lb_logd,		&lb_file_write,
    &lb_file_stdio,	&lb_pipe,
    &lb_mqueue,		&lb_spdlog,
};
#define N_ALL ((int)(sizeof(all) / sizeof(all[0])))

const struct lb_contender *lb_find(const char *name)
{
	for (int i = 0; i < N_ALL; i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

/* Everything measured about one contender. */
struct entry {
	const struct lb_contender *ct;
	struct lb_ctx c;
	bool selected, skipped, failed, set_up;
	char why[400], note[400];
	int nrep;
	double rps[MAX_REPS], e2e[MAX_REPS];
	double records_per_s, mb_per_s, e2e_per_s;
	struct bench_hist hist;
	/* shmlog and the seed design only: every call timed (--batch 1), for
	 * the tail: a batch mean turns one interrupted call in a batch into a
	 * slow batch, which moves rare stalls up the percentiles 16-fold */
	struct bench_hist hist1;
	uint64_t recs, bytes, errs;
	double cpu_s, coll_cpu_s, delivered;
	long minflt, majflt, nvcsw, nivcsw;
	double syscalls; /* per record; -1 unknown */
	/* sweep: records/s and median ns per size; < 0 not run */
	double sw_rps[N_SIZES], sw_mbps[N_SIZES], sw_p50[N_SIZES];
	/* scaling: [0] threads, [1] processes; records/s of wall time, and
	 * records per CPU-second the writers actually got */
	double sc_rps[2][N_SCALE], sc_cpu_rps[2][N_SCALE];
};

static struct entry entries[N_ALL];

struct opts {
	struct lb_config main, sweep, scale;
	const char *json, *plot, *only;
	bool no_sweep, no_scaling, no_readers;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: shmlog-bench log [options]\n"
	    "  --quick          short runs (CI smoke test, < 30 s)\n"
	    "  --json FILE      write all results as JSON\n"
	    "  --plot DIR       draw SVG plots into DIR (needs "
	    "python3-matplotlib)\n"
	    "  --only A,B,...   run only these contenders (see the legend)\n"
	    "  --dur SECONDS    measured time per run (default 0.5)\n"
	    "  --reps N         runs per figure, median reported (default 5)\n"
	    "  --batch N        calls per timed batch (default 16; 1 = every "
	    "call)\n"
	    "  --dir DIR        where file-based contenders write (default "
	    "/tmp)\n"
	    "  --no-strace --no-sweep --no-scaling --no-readers  skip parts\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){
	    .main = {.dur_s = 0.5,
		     .warm_s = 0.1,
		     .reps = 5,
		     .batch = 16,
		     .strace = true},
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--quick")) {
			o->main.quick = true;
		} else if (!strcmp(a, "--no-strace")) {
			o->main.strace = false;
		} else if (!strcmp(a, "--no-sweep")) {
			o->no_sweep = true;
		} else if (!strcmp(a, "--no-scaling")) {
			o->no_scaling = true;
		} else if (!strcmp(a, "--no-readers")) {
			o->no_readers = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (v && !strcmp(a, "--json")) {
			o->json = v, i++;
		} else if (v && !strcmp(a, "--plot")) {
			o->plot = v, i++;
		} else if (v && !strcmp(a, "--only")) {
			o->only = v, i++;
		} else if (v && !strcmp(a, "--dir")) {
			lb_scratch = v, i++;
		} else if (v && !strcmp(a, "--dur") && atof(v) > 0) {
			o->main.dur_s = atof(v), i++;
		} else if (v && !strcmp(a, "--reps") && atoi(v) > 0) {
			o->main.reps = atoi(v) > MAX_REPS ? MAX_REPS : atoi(v),
			i++;
		} else if (v && !strcmp(a, "--batch") && atoi(v) > 0) {
			o->main.batch = atoi(v), i++;
		} else {
			fprintf(stderr, "shmlog-bench log: bad option '%s'\n\n",
				a);
			usage(stderr);
			return -1;
		}
	}
	if (o->main.quick) {
		o->main.dur_s = 0.05;
		o->main.warm_s = 0.02;
		o->main.reps = 1;
	}
	/* The sweep and the scaling runs are shorter: many more of them. */
	o->sweep = o->main;
	o->sweep.dur_s = o->main.quick ? 0.02 : o->main.dur_s * 0.3;
	o->sweep.warm_s = o->main.quick ? 0.01 : 0.05;
	o->sweep.reps = o->main.quick ? 1 : 3;
	o->scale = o->sweep;
	o->scale.dur_s = o->main.quick ? 0.03 : o->main.dur_s * 0.5;
	return 0;
}

static bool selected(const struct opts *o, const char *name)
{
	if (!o->only)
		return true;
	size_t n = strlen(name);
	for (const char *p = o->only; *p;) {
		size_t l = strcspn(p, ",");
		if (l == n && !strncmp(p, name, n))
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/* ---- measuring ----
 *
 * Every selected contender is set up first (daemons and collectors then sit
 * idle side by side), and the runs are interleaved: repetition 1 of every
 * contender, then repetition 2, and so on. On a machine whose load drifts
 * (a shared one always does), each contender then sees the same mix of
 * conditions, and the ratios between them are what stays stable. */

static bool live(const struct entry *e)
{
	return e->selected && !e->skipped && !e->failed;
}

static void progress(const char *name, const char *what)
{
	fprintf(stderr, "  %-16s %s\n", name, what);
}

static void fail(struct entry *e, const char *err)
{
	e->failed = true;
	snprintf(e->why, sizeof(e->why), "%s", err);
	progress(e->ct->name, "FAILED");
}

static void setup_one(struct entry *e)
{
	e->syscalls = -1;
	e->delivered = 1;
	for (int m = 0; m < 2; m++)
		for (int i = 0; i < N_SCALE; i++)
			e->sc_rps[m][i] = e->sc_cpu_rps[m][i] = -1;
	for (int i = 0; i < N_SIZES; i++)
		e->sw_rps[i] = e->sw_mbps[i] = e->sw_p50[i] = -1;
	bench_hist_init(&e->hist);
	bench_hist_init(&e->hist1);
	e->c = (struct lb_ctx){.ct = e->ct};
	if (e->ct->setup(&e->c) < 0) {
		e->skipped = true;
		snprintf(e->why, sizeof(e->why), "%s", e->c.why);
		progress(e->ct->name, "SKIPPED");
		return;
	}
	e->set_up = true;
	snprintf(e->note, sizeof(e->note), "%s", e->c.note);
}

static void main_rep(struct entry *e, const struct lb_config *cfg,
		     const struct lb_work *w)
{
	static struct lb_result r;
	lb_run(&e->c, w, cfg, 1, 1, &r);
	if (!r.ok || r.wall_s <= 0) {
		fail(e, r.err);
		return;
	}
	e->rps[e->nrep] = (double)r.recs / r.wall_s;
	e->e2e[e->nrep] = (double)r.recs / r.e2e_s;
	e->nrep++;
	e->recs += r.recs;
	e->bytes += r.bytes;
	e->errs += r.errs;
	e->cpu_s += r.cpu_s;
	e->coll_cpu_s += r.coll_cpu_s;
	e->minflt += r.minflt;
	e->majflt += r.majflt;
	e->nvcsw += r.nvcsw;
	e->nivcsw += r.nivcsw;
	if (r.delivered < e->delivered)
		e->delivered = r.delivered;
	bench_hist_merge(&e->hist, &r.hist);
}

static void main_finish(struct entry *e)
{
	double v[MAX_REPS];
	if (!e->nrep)
		return;
	memcpy(v, e->rps, sizeof(v));
	e->records_per_s = bench_median(v, e->nrep);
	memcpy(v, e->e2e, sizeof(v));
	e->e2e_per_s = bench_median(v, e->nrep);
	e->mb_per_s =
	    e->records_per_s * ((double)e->bytes / (double)e->recs) / 1e6;
}

static bool wants_per_call(const struct entry *e)
{
	return live(e) && ((e->ct->flags & LB_SHMLOG) || e->ct == &lb_seed);
}

static void measure_per_call(const struct opts *o, const struct lb_work *w)
{
	static struct lb_result r;
	struct lb_config one = o->main;
	one.batch = 1;
	for (int rep = 0; rep < one.reps; rep++)
		for (int i = 0; i < N_ALL; i++) {
			struct entry *e = &entries[i];
			if (!wants_per_call(e))
				continue;
			if (rep == 0)
				progress(e->ct->name, "every call timed");
			lb_run(&e->c, w, &one, 1, 1, &r);
			if (r.ok)
				bench_hist_merge(&e->hist1, &r.hist);
		}
}

static void measure_main(const struct opts *o, const struct lb_work *w)
{
	for (int rep = 0; rep < o->main.reps; rep++)
		for (int i = 0; i < N_ALL; i++)
			if (live(&entries[i])) {
				if (rep == 0)
					progress(entries[i].ct->name,
						 "single writer");
				main_rep(&entries[i], &o->main, w);
			}
	for (int i = 0; i < N_ALL; i++)
		if (live(&entries[i]))
			main_finish(&entries[i]);
	measure_per_call(o, w);
}

/* Per-repetition values of one cell of the sweep or scaling tables. */
struct cell {
	int n;
	bool bad;
	double rps[MAX_REPS], aux[MAX_REPS];
};

static void cell_run(struct entry *e, struct cell *cl,
		     const struct lb_config *cfg, const struct lb_work *w,
		     int procs, int threads, bool per_cpu)
{
	static struct lb_result r;
	if (cl->bad)
		return;
	lb_run(&e->c, w, cfg, procs, threads, &r);
	if (!r.ok || r.wall_s <= 0) {
		cl->bad = true;
		return;
	}
	cl->rps[cl->n] = (double)r.recs / r.wall_s;
	if (per_cpu)
		cl->aux[cl->n] = r.cpu_s + r.coll_cpu_s > 0
				     ? (double)r.recs / (r.cpu_s + r.coll_cpu_s)
				     : -1;
	else
		cl->aux[cl->n] = (double)bench_hist_quantile(&r.hist, 0.5);
	cl->n++;
}

static void cell_result(struct cell *cl, double *rps, double *aux)
{
	*rps = *aux = -1;
	if (cl->bad || !cl->n)
		return;
	*rps = bench_median(cl->rps, cl->n);
	*aux = bench_median(cl->aux, cl->n);
}

static bool fits(const struct entry *e, size_t size)
{
	return size <= (e->ct->max_msg ? e->ct->max_msg : LB_MSG_MAX);
}

static void measure_sweep(const struct opts *o)
{
	static struct cell cells[N_ALL][N_SIZES];
	struct lb_work w;
	memset(cells, 0, sizeof(cells));
	progress("all", "size sweep");
	for (int s = 0; s < N_SIZES; s++) {
		lb_work_sized(&w, sweep_sizes[s]);
		for (int rep = 0; rep < o->sweep.reps; rep++)
			for (int i = 0; i < N_ALL; i++)
				if (live(&entries[i]) &&
				    fits(&entries[i], sweep_sizes[s]))
					cell_run(&entries[i], &cells[i][s],
						 &o->sweep, &w, 1, 1, false);
	}
	for (int i = 0; i < N_ALL; i++)
		for (int s = 0; live(&entries[i]) && s < N_SIZES; s++) {
			struct entry *e = &entries[i];
			cell_result(&cells[i][s], &e->sw_rps[s], &e->sw_p50[s]);
			if (e->sw_rps[s] > 0)
				e->sw_mbps[s] =
				    e->sw_rps[s] * (double)sweep_sizes[s] / 1e6;
		}
}

/* Three runs per cell for shmlog and the seed design, whose ratios are
 * targets; one for the others, to keep the whole run short. */
static int scale_reps(const struct entry *e, const struct lb_config *cfg)
{
	return (e->ct->flags & LB_SHMLOG) || e->ct == &lb_seed ? cfg->reps : 1;
}

static void measure_scaling(const struct opts *o, const struct lb_work *w)
{
	static struct cell cells[N_ALL][2][N_SCALE];
	memset(cells, 0, sizeof(cells));
	progress("all", "scaling");
	for (int m = 0; m < 2; m++)
		for (int s = 0; s < N_SCALE; s++) {
			int n = scale_writers[s];
			if (o->main.quick && n > 2)
				continue;
			for (int rep = 0; rep < o->scale.reps; rep++)
				for (int i = 0; i < N_ALL; i++) {
					struct entry *e = &entries[i];
					if (!live(e) ||
					    (e->ct->flags & LB_NO_SCALING) ||
					    rep >= scale_reps(e, &o->scale))
						continue;
					cell_run(e, &cells[i][m][s], &o->scale,
						 w, m ? n : 1, m ? 1 : n, true);
				}
		}
	for (int i = 0; i < N_ALL; i++)
		for (int m = 0; live(&entries[i]) && m < 2; m++)
			for (int s = 0; s < N_SCALE; s++)
				cell_result(&cells[i][m][s],
					    &entries[i].sc_rps[m][s],
					    &entries[i].sc_cpu_rps[m][s]);
}

static void measure_all(const struct opts *o, const struct lb_work *w)
{
	for (int i = 0; i < N_ALL; i++)
		if (entries[i].selected)
			setup_one(&entries[i]);
	measure_main(o, w);
	for (int i = 0; o->main.strace && i < N_ALL; i++)
		if (live(&entries[i])) {
			progress(entries[i].ct->name, "syscalls under strace");
			entries[i].syscalls =
			    lb_syscalls_per_rec(&entries[i].c, &o->main);
		}
	if (!o->no_sweep)
		measure_sweep(o);
	if (!o->no_scaling)
		measure_scaling(o, w);
	for (int i = 0; i < N_ALL; i++)
		if (entries[i].set_up)
			entries[i].ct->teardown(&entries[i].c);
}

/* ---- reporting ---- */

static double per_mrec(long v, uint64_t recs)
{
	return recs ? (double)v * 1e6 / (double)recs : NAN;
}

static double cpu_ns_per_rec(const struct entry *e)
{
	return e->recs ? (e->cpu_s + e->coll_cpu_s) * 1e9 / (double)e->recs
		       : NAN;
}

static void print_main_table(FILE *f, double timer_ns, const struct opts *o,
			     const struct lb_work *w)
{
	fprintf(f,
		"\n# single writer, seed 000's %d messages (%.1f B average) "
		"with tag and priority\n",
		LB_WORK_N, w->avg_len);
	fprintf(f,
		"# %d run(s) of %.2f s after %.2f s warm-up; records/s is the "
		"median run,\n"
		"# ns/call percentiles are of %d-call batch means (timer: %.1f "
		"ns per read,\n"
		"# %.2f ns per call at this batch size); faults and switches "
		"per million\n"
		"# records; CPU includes the daemon/collector; e2e = until it "
		"has it all.\n",
		o->main.reps, o->main.dur_s, o->main.warm_s, o->main.batch,
		timer_ns, timer_ns / o->main.batch);
	fprintf(
	    f,
	    "%-16s %11s %8s %11s %7s %7s %7s %8s %7s %6s %7s %7s %8s %8s %8s\n",
	    "contender", "records/s", "MB/s", "e2e rec/s", "p50", "p99",
	    "p99.9", "max", "minflt", "majflt", "vcsw", "ivcsw", "sysc/rec",
	    "cpu ns", "daemon");
	for (int i = 0; i < N_ALL; i++) {
		const struct entry *e = &entries[i];
		if (!e->selected)
			continue;
		if (e->skipped || e->failed) {
			fprintf(f, "%-16s %s: %s\n", e->ct->name,
				e->skipped ? "SKIPPED" : "FAILED", e->why);
			continue;
		}
		char sys[16];
		if (e->syscalls < 0)
			snprintf(sys, sizeof(sys), "n/a");
		else
			snprintf(sys, sizeof(sys), "%.3f", e->syscalls);
		fprintf(
		    f,
		    "%-16s %11.0f %8.1f %11.0f %7llu %7llu %7llu %8llu %7.1f "
		    "%6.1f %7.1f %7.1f %8s %8.1f %8.1f\n",
		    e->ct->name, e->records_per_s, e->mb_per_s, e->e2e_per_s,
		    (unsigned long long)bench_hist_quantile(&e->hist, 0.5),
		    (unsigned long long)bench_hist_quantile(&e->hist, 0.99),
		    (unsigned long long)bench_hist_quantile(&e->hist, 0.999),
		    (unsigned long long)e->hist.max,
		    per_mrec(e->minflt, e->recs), per_mrec(e->majflt, e->recs),
		    per_mrec(e->nvcsw, e->recs), per_mrec(e->nivcsw, e->recs),
		    sys, cpu_ns_per_rec(e),
		    e->recs ? e->coll_cpu_s * 1e9 / (double)e->recs : 0.0);
		if (e->errs || e->delivered < 0.9999)
			fprintf(
			    f,
			    "%-16s   ! %llu write errors, %.2f%% delivered\n",
			    "", (unsigned long long)e->errs,
			    e->delivered * 100);
	}
}

/* Quantile of the every-call histogram less the timer's cost, which each
 * sample includes once. */
static double call_q(const struct entry *e, double q, double timer_ns)
{
	double v = (double)bench_hist_quantile(&e->hist1, q) - timer_ns;
	return v > 0 ? v : 0;
}

static void print_per_call(FILE *f, double timer_ns)
{
	fprintf(f,
		"\n# every call timed (--batch 1), the timer's %.1f ns "
		"subtracted: the tail per call\n",
		timer_ns);
	fprintf(f, "%-16s %7s %7s %7s %7s %9s\n", "contender", "p50", "p99",
		"p99.9", "p99.99", "p99.9/p50");
	for (int i = 0; i < N_ALL; i++) {
		const struct entry *e = &entries[i];
		if (!e->hist1.count)
			continue;
		double p50 = call_q(e, 0.5, timer_ns);
		fprintf(f, "%-16s %7.0f %7.0f %7.0f %7.0f %9.1f\n", e->ct->name,
			p50, call_q(e, 0.99, timer_ns),
			call_q(e, 0.999, timer_ns), call_q(e, 0.9999, timer_ns),
			p50 > 0 ? call_q(e, 0.999, timer_ns) / p50 : NAN);
	}
}

static const struct entry *entry_of(const struct lb_contender *ct)
{
	for (int i = 0; i < N_ALL; i++)
		if (entries[i].ct == ct)
			return &entries[i];
	return NULL;
}

static bool usable(const struct entry *e)
{
	return e && e->selected && !e->skipped && !e->failed && e->nrep > 0;
}

/* Seed 000's table: bytes per second, one row per design, the clock noted. */
static void print_seed_table(FILE *f, const struct bench_machine *m)
{
	static const struct {
		const struct lb_contender *ct;
		const char *label;
	} rows[] = {
	    {&lb_shmlog_default, "shmlog, default clock"},
	    {&lb_shmlog_realtime, "shmlog, CLOCK_REALTIME"},
	    {&lb_shmlog_coarse, "shmlog, CLOCK_MONOTONIC_COARSE"},
	    {&lb_seed, "Shared Memory (seed 000 design)"},
	    {&lb_kmsg, "/dev/kmsg (kernel logger)"},
	};
	const struct entry *k = entry_of(&lb_kmsg);
	fprintf(f, "\n# seed 000's table, this machine (clocksource %s)\n",
		m->clocksource);
	fprintf(f, "+---------------------------------+----------------------+-"
		   "-----------+\n");
	fprintf(f, "| %-31s | %20s | %10s |\n", "Design", "Bytes/second",
		"vs kmsg");
	fprintf(f, "+---------------------------------+----------------------+-"
		   "-----------+\n");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct entry *e = entry_of(rows[i].ct);
		if (!usable(e)) {
			fprintf(f, "| %-31s | %20s | %10s |\n", rows[i].label,
				"skipped", "");
			continue;
		}
		char vs[16] = "";
		if (usable(k))
			snprintf(vs, sizeof(vs), "%.1fx",
				 e->mb_per_s / k->mb_per_s);
		fprintf(f, "| %-31s | %16.1fB/s | %10s |\n", rows[i].label,
			e->mb_per_s * 1e6, vs);
	}
	fprintf(f, "+---------------------------------+----------------------+-"
		   "-----------+\n");
}

static void print_sweep(FILE *f)
{
	fprintf(f, "\n# message-size sweep, single writer: MB/s (median ns per "
		   "call)\n");
	fprintf(f, "%-16s", "contender");
	for (int i = 0; i < N_SIZES; i++)
		fprintf(f, " %17zu B", sweep_sizes[i]);
	fprintf(f, "\n");
	for (int i = 0; i < N_ALL; i++) {
		const struct entry *e = &entries[i];
		if (!usable(e) || e->sw_rps[0] < 0)
			continue;
		fprintf(f, "%-16s", e->ct->name);
		for (int s = 0; s < N_SIZES; s++) {
			if (e->sw_rps[s] < 0)
				fprintf(f, " %19s", "n/a");
			else
				fprintf(f, " %9.1f (%6.0f)", e->sw_mbps[s],
					e->sw_p50[s]);
		}
		fprintf(f, "\n");
	}
}

static void print_scaling(FILE *f)
{
	fprintf(f, "\n# scaling: aggregate records/s with N writers (threads | "
		   "processes);\n"
		   "# 'per CPU-s': records per CPU-second the writers (and "
		   "daemon) used,\n"
		   "# which separates the design's scaling from CPU taken by "
		   "other tenants\n");
	fprintf(f, "%-16s", "contender");
	for (int m = 0; m < 2; m++)
		for (int i = 0; i < N_SCALE; i++)
			fprintf(f, " %9s%d", m ? "proc x" : "thr x",
				scale_writers[i]);
	fprintf(f, "\n");
	for (int i = 0; i < N_ALL; i++) {
		const struct entry *e = &entries[i];
		if (!usable(e) || e->sc_rps[0][0] < 0)
			continue;
		fprintf(f, "%-16s", e->ct->name);
		for (int m = 0; m < 2; m++)
			for (int s = 0; s < N_SCALE; s++) {
				if (e->sc_rps[m][s] < 0)
					fprintf(f, " %10s", "-");
				else
					fprintf(f, " %10.0f", e->sc_rps[m][s]);
			}
		fprintf(f, "\n%-16s", "  per CPU-s");
		for (int m = 0; m < 2; m++)
			for (int s = 0; s < N_SCALE; s++) {
				if (e->sc_cpu_rps[m][s] < 0)
					fprintf(f, " %10s", "-");
				else
					fprintf(f, " %10.0f",
						e->sc_cpu_rps[m][s]);
			}
		fprintf(f, "\n");
	}
}

static void print_readers(FILE *f, const struct lb_readers *r)
{
	fprintf(f, "\n# shmlog readers\n");
	if (!r->ok) {
		fprintf(f, "skipped: %s\n", r->why);
		return;
	}
	fprintf(f,
		"dump of %llu records to /dev/null: raw %.0f rec/s, threadtime "
		"%.0f rec/s, json %.0f rec/s\n",
		(unsigned long long)r->dump_recs, r->dump_raw_rps,
		r->dump_threadtime_rps, r->dump_json_rps);
	fprintf(f,
		"follow latency, write call to a blocked reader having the "
		"record: median %.0f ns, p99 %.0f ns (%llu samples)\n",
		r->follow_p50, r->follow_p99,
		(unsigned long long)r->follow.count);
	fprintf(
	    f,
	    "one writer alone: %.0f rec/s (p99 %.0f ns, %.1f CPU ns/record); "
	    "with an active\nfollower: %.0f rec/s (p99 %.0f ns, %.1f CPU "
	    "ns/record), %.1f%% of alone; the follower: %.1f CPU ns/record\n",
	    r->alone_rps, r->alone_p99, r->alone_cpu_ns, r->followed_rps,
	    r->followed_p99, r->followed_cpu_ns,
	    r->alone_rps > 0 ? 100 * r->followed_rps / r->alone_rps : 0,
	    r->follower_cpu_ns_per_rec);
}

/* ---- issue 4's targets ---- */

struct target {
	const char *what;
	double value, want;
	bool higher_better, known;
};

static int collect_targets(struct target *t, const struct lb_readers *rd,
			   double timer_ns)
{
	const struct entry *s = entry_of(&lb_shmlog_default);
	const struct entry *seed = entry_of(&lb_seed), *k = entry_of(&lb_kmsg),
			   *sp = entry_of(&lb_spdlog);
	int n = 0;
	bool ok = usable(s);
	double rps = ok ? s->records_per_s : 0;
	t[n++] = (struct target){"shmlog records/s vs seed design", 0, 2, true,
				 ok && usable(seed)};
	if (t[n - 1].known)
		t[n - 1].value = rps / seed->records_per_s;
	t[n++] = (struct target){"shmlog records/s vs /dev/kmsg", 0, 40, true,
				 ok && usable(k)};
	if (t[n - 1].known)
		t[n - 1].value = rps / k->records_per_s;
	t[n++] = (struct target){"shmlog records/s vs spdlog async", 0, 10,
				 true, ok && usable(sp)};
	if (t[n - 1].known)
		t[n - 1].value = rps / sp->records_per_s;
	/* The same ratios in CPU time per record: what a record costs,
	 * whatever share of the machine the run got. */
	t[n++] = (struct target){"  same, CPU per record: vs seed", 0, 2, true,
				 ok && usable(seed)};
	if (t[n - 1].known)
		t[n - 1].value = cpu_ns_per_rec(seed) / cpu_ns_per_rec(s);
	t[n++] = (struct target){"  same, CPU per record: vs kmsg", 0, 40, true,
				 ok && usable(k)};
	if (t[n - 1].known)
		t[n - 1].value = cpu_ns_per_rec(k) / cpu_ns_per_rec(s);
	t[n++] = (struct target){"  same, CPU per record: vs spdlog", 0, 10,
				 true, ok && usable(sp)};
	if (t[n - 1].known)
		t[n - 1].value = cpu_ns_per_rec(sp) / cpu_ns_per_rec(s);
	t[n++] = (struct target){"shmlog p99.9 / median, per call", 0, 5, false,
				 ok && s->hist1.count &&
				     call_q(s, 0.5, timer_ns) > 0};
	if (t[n - 1].known)
		t[n - 1].value =
		    call_q(s, 0.999, timer_ns) / call_q(s, 0.5, timer_ns);
	t[n++] = (struct target){"shmlog p99.9 / median, 16-call batches", 0, 5,
				 false, ok};
	if (ok)
		t[n - 1].value = (double)bench_hist_quantile(&s->hist, 0.999) /
				 (double)bench_hist_quantile(&s->hist, 0.5);
	t[n++] =
	    (struct target){"shmlog minor faults per Mrec", 0, 0, false, ok};
	if (ok)
		t[n - 1].value = per_mrec(s->minflt, s->recs);
	t[n++] = (struct target){"shmlog syscalls per record", 0, 0, false,
				 ok && s->syscalls >= 0};
	if (t[n - 1].known)
		t[n - 1].value = s->syscalls;
	t[n++] =
	    (struct target){"shmlog 2 processes / 1 process", 0, 1.7, true,
			    ok && s->sc_rps[1][0] > 0 && s->sc_rps[1][1] > 0};
	if (t[n - 1].known)
		t[n - 1].value = s->sc_rps[1][1] / s->sc_rps[1][0];
	(void)rd;
	return n;
}

static bool target_met(const struct target *t)
{
	return t->higher_better ? t->value >= t->want : t->value <= t->want;
}

static void print_targets(FILE *f, const struct target *t, int n)
{
	fprintf(f, "\n# issue 4 targets (this machine)\n");
	for (int i = 0; i < n; i++) {
		if (!t[i].known) {
			fprintf(f, "  %-40s  n/a (not measured)\n", t[i].what);
			continue;
		}
		fprintf(f, "  %-40s %10.3g  want %s %-6g %s\n", t[i].what,
			t[i].value, t[i].higher_better ? ">=" : "<=", t[i].want,
			target_met(&t[i]) ? "met" : "MISSED");
	}
}

/* ---- JSON ---- */

/* CDF points: every 2% and the tail. */
static double cdf_q[64];
static int cdf_n;

static void cdf_init(void)
{
	static const double tail[] = {0.98,   0.99,   0.995,   0.998, 0.999,
				      0.9995, 0.9999, 0.99999, 1};
	cdf_n = 0;
	for (int i = 0; i < 50; i++)
		cdf_q[cdf_n++] = i / 50.0;
	for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++)
		cdf_q[cdf_n++] = tail[i];
}

static double json_timer_ns;

static void json_entry(struct bench_json *j, const struct entry *e)
{
	bool ok = usable(e);
	bench_json_begin_obj(j);
	bench_json_str(j, "contender", e->ct->name);
	bench_json_str(j, "what", e->ct->what);
	bench_json_int(j, "skipped", e->skipped || e->failed);
	bench_json_str(j, "skip_reason", e->skipped || e->failed ? e->why : "");
	bench_json_str(j, "note", e->note);
	bench_json_num(j, "records_per_s", ok ? e->records_per_s : NAN);
	bench_json_num(j, "mb_per_s", ok ? e->mb_per_s : NAN);
	bench_json_num(j, "e2e_records_per_s", ok ? e->e2e_per_s : NAN);
	bench_json_num(j, "ns_p50",
		       ok ? (double)bench_hist_quantile(&e->hist, 0.5) : NAN);
	bench_json_num(j, "ns_p99",
		       ok ? (double)bench_hist_quantile(&e->hist, 0.99) : NAN);
	bench_json_num(j, "ns_p999",
		       ok ? (double)bench_hist_quantile(&e->hist, 0.999) : NAN);
	bench_json_num(j, "ns_max", ok ? (double)e->hist.max : NAN);
	bool pc = ok && e->hist1.count;
	bench_json_num(j, "call_ns_p50",
		       pc ? call_q(e, 0.5, json_timer_ns) : NAN);
	bench_json_num(j, "call_ns_p99",
		       pc ? call_q(e, 0.99, json_timer_ns) : NAN);
	bench_json_num(j, "call_ns_p999",
		       pc ? call_q(e, 0.999, json_timer_ns) : NAN);
	bench_json_num(j, "call_ns_p9999",
		       pc ? call_q(e, 0.9999, json_timer_ns) : NAN);
	bench_json_num(j, "minflt_per_mrec",
		       ok ? per_mrec(e->minflt, e->recs) : NAN);
	bench_json_num(j, "majflt_per_mrec",
		       ok ? per_mrec(e->majflt, e->recs) : NAN);
	bench_json_num(j, "vcsw_per_mrec",
		       ok ? per_mrec(e->nvcsw, e->recs) : NAN);
	bench_json_num(j, "ivcsw_per_mrec",
		       ok ? per_mrec(e->nivcsw, e->recs) : NAN);
	bench_json_num(j, "syscalls_per_rec",
		       ok && e->syscalls >= 0 ? e->syscalls : NAN);
	bench_json_num(j, "cpu_ns_per_rec", ok ? cpu_ns_per_rec(e) : NAN);
	bench_json_num(j, "daemon_cpu_ns_per_rec",
		       ok ? e->coll_cpu_s * 1e9 / (double)e->recs : NAN);
	bench_json_num(j, "delivered", ok ? e->delivered : NAN);
	bench_json_int(j, "write_errors", (long long)e->errs);
	bench_json_key(j, "reps_records_per_s");
	bench_json_begin_arr(j);
	for (int i = 0; i < e->nrep; i++)
		bench_json_num(j, NULL, e->rps[i]);
	bench_json_end_arr(j);
	bench_json_key(j, "cdf");
	bench_json_begin_arr(j);
	for (int i = 0; ok && i < cdf_n; i++) {
		bench_json_begin_arr(j);
		bench_json_num(j, NULL, cdf_q[i]);
		bench_json_num(j, NULL,
			       cdf_q[i] >= 1 ? (double)e->hist.max
					     : (double)bench_hist_quantile(
						   &e->hist, cdf_q[i]));
		bench_json_end_arr(j);
	}
	bench_json_end_arr(j);
	bench_json_key(j, "sweep");
	bench_json_begin_arr(j);
	for (int i = 0; ok && i < N_SIZES; i++) {
		if (e->sw_rps[i] < 0)
			continue;
		bench_json_begin_obj(j);
		bench_json_int(j, "size", (long long)sweep_sizes[i]);
		bench_json_num(j, "records_per_s", e->sw_rps[i]);
		bench_json_num(j, "mb_per_s", e->sw_mbps[i]);
		bench_json_num(j, "ns_p50", e->sw_p50[i]);
		bench_json_end_obj(j);
	}
	bench_json_end_arr(j);
	bench_json_key(j, "scaling");
	bench_json_begin_arr(j);
	for (int m = 0; ok && m < 2; m++)
		for (int i = 0; i < N_SCALE; i++) {
			if (e->sc_rps[m][i] < 0)
				continue;
			bench_json_begin_obj(j);
			bench_json_str(j, "mode", m ? "processes" : "threads");
			bench_json_int(j, "writers", scale_writers[i]);
			bench_json_num(j, "records_per_s", e->sc_rps[m][i]);
			bench_json_num(j, "records_per_cpu_s",
				       e->sc_cpu_rps[m][i]);
			bench_json_end_obj(j);
		}
	bench_json_end_arr(j);
	bench_json_end_obj(j);
}

static void json_readers(struct bench_json *j, const struct lb_readers *r)
{
	bench_json_key(j, "readers");
	bench_json_begin_obj(j);
	bench_json_int(j, "skipped", !r->ok);
	bench_json_str(j, "skip_reason", r->ok ? "" : r->why);
	if (r->ok) {
		bench_json_int(j, "dump_records", (long long)r->dump_recs);
		bench_json_num(j, "dump_raw_records_per_s", r->dump_raw_rps);
		bench_json_num(j, "dump_threadtime_records_per_s",
			       r->dump_threadtime_rps);
		bench_json_num(j, "dump_json_records_per_s", r->dump_json_rps);
		bench_json_num(j, "follow_ns_p50", r->follow_p50);
		bench_json_num(j, "follow_ns_p99", r->follow_p99);
		bench_json_int(j, "follow_samples", (long long)r->follow.count);
		bench_json_num(j, "writer_alone_records_per_s", r->alone_rps);
		bench_json_num(j, "writer_followed_records_per_s",
			       r->followed_rps);
		bench_json_num(j, "writer_alone_ns_p99", r->alone_p99);
		bench_json_num(j, "writer_followed_ns_p99", r->followed_p99);
		bench_json_num(j, "writer_alone_cpu_ns_per_rec",
			       r->alone_cpu_ns);
		bench_json_num(j, "writer_followed_cpu_ns_per_rec",
			       r->followed_cpu_ns);
		bench_json_num(j, "follower_cpu_ns_per_rec",
			       r->follower_cpu_ns_per_rec);
	}
	bench_json_end_obj(j);
}

static int write_json(const char *path, const struct bench_machine *m,
		      const struct opts *o, double timer_ns,
		      const struct lb_clocks *clk, const struct lb_work *w,
		      const struct lb_readers *rd, const struct target *t,
		      int nt)
{
	struct bench_json j;
	cdf_init();
	json_timer_ns = timer_ns;
	if (!bench_json_open(&j, path, "log", m)) {
		fprintf(stderr, "shmlog-bench log: cannot write %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	bench_json_key(&j, "config");
	bench_json_begin_obj(&j);
	bench_json_int(&j, "quick", o->main.quick);
	bench_json_num(&j, "dur_s", o->main.dur_s);
	bench_json_num(&j, "warm_s", o->main.warm_s);
	bench_json_int(&j, "reps", o->main.reps);
	bench_json_int(&j, "batch", o->main.batch);
	bench_json_num(&j, "timer_cost_ns", timer_ns);
	bench_json_num(&j, "rdtsc_ns", clk->rdtsc_ns);
	bench_json_num(&j, "clock_realtime_ns", clk->realtime_ns);
	bench_json_num(&j, "clock_realtime_coarse_ns", clk->coarse_ns);
	bench_json_num(&j, "gettimeofday_ns", clk->gettimeofday_ns);
	bench_json_num(&j, "sem_pair_ns", clk->sem_pair_ns);
	bench_json_num(&j, "atomic_add_ns", clk->atomic_add_ns);
	bench_json_num(&j, "avg_msg_bytes", w->avg_len);
	bench_json_str(&j, "scratch_dir", lb_scratch);
	bench_json_end_obj(&j);
	bench_json_key(&j, "contenders");
	bench_json_begin_arr(&j);
	for (int i = 0; i < N_ALL; i++)
		if (entries[i].selected)
			json_entry(&j, &entries[i]);
	bench_json_end_arr(&j);
	json_readers(&j, rd);
	bench_json_key(&j, "targets");
	bench_json_begin_arr(&j);
	for (int i = 0; i < nt; i++) {
		bench_json_begin_obj(&j);
		bench_json_str(&j, "what", t[i].what);
		bench_json_num(&j, "value", t[i].known ? t[i].value : NAN);
		bench_json_num(&j, "want", t[i].want);
		bench_json_str(&j, "direction",
			       t[i].higher_better ? ">=" : "<=");
		bench_json_str(&j, "status",
			       !t[i].known	   ? "n/a"
			       : target_met(&t[i]) ? "met"
						   : "missed");
		bench_json_end_obj(&j);
	}
	bench_json_end_arr(&j);
	return bench_json_close(&j);
}

/* ---- plots ---- */

static void run_plot(const char *json, const char *dir)
{
	static const char *const pythons[] = {"/usr/bin/python3", "python3"};
	char cmd[2048];
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "plots: cannot make %s: %s\n", dir,
			strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
		snprintf(cmd, sizeof(cmd),
			 "%s -c 'import matplotlib' 2>/dev/null", pythons[i]);
		if (system(cmd) != 0)
			continue;
		snprintf(cmd, sizeof(cmd), "%s '%s' '%.600s' '%.600s'",
			 pythons[i], LB_PLOT_SCRIPT, json, dir);
		if (system(cmd) != 0)
			fprintf(stderr, "plots: %s failed\n", LB_PLOT_SCRIPT);
		return;
	}
	fprintf(stderr, "plots skipped: no python3 with matplotlib "
			"(install the Debian package python3-matplotlib)\n");
}

static void print_fs(FILE *f)
{
	struct statfs s;
	const char *type = "?";
	if (statfs(lb_scratch, &s) == 0)
		type = s.f_type == 0x01021994	? "tmpfs"
		       : s.f_type == 0xEF53	? "ext2/3/4"
		       : s.f_type == 0x58465342 ? "xfs"
		       : s.f_type == 0x9123683E ? "btrfs"
						: "other";
	fprintf(f, "# files written in %s (%s)\n", lb_scratch, type);
}

int bench_log_main(int argc, char **argv)
{
	struct opts o;
	if (argc >= 2 && !strcmp(argv[1], "--internal-writer"))
		return lb_internal_writer(argc, argv);
	if (parse_opts(argc, argv, &o) < 0)
		return 2;

	struct bench_machine m;
	bench_machine_get(&m);
	double timer_ns = bench_timer_cost_ns();
	struct lb_work w;
	lb_work_seed(&w);

	printf("# shmlog-bench log%s\n", o.main.quick ? " --quick" : "");
	bench_machine_print(stdout, &m, "# ");
	print_fs(stdout);
	struct lb_clocks clk;
	lb_clock_costs(&clk);
	printf("# timer: bench_now_ns() costs %.1f ns\n", timer_ns);
	printf(
	    "# per call here: rdtsc %.1f ns, clock_gettime(REALTIME) %.1f ns, "
	    "(REALTIME_COARSE) %.1f ns, gettimeofday %.1f ns,\n"
	    "#   sem_wait+sem_post %.1f ns, atomic fetch-add %.1f ns\n",
	    clk.rdtsc_ns, clk.realtime_ns, clk.coarse_ns, clk.gettimeofday_ns,
	    clk.sem_pair_ns, clk.atomic_add_ns);
	fflush(stdout);

	uint64_t t0 = bench_now_ns();
	for (int i = 0; i < N_ALL; i++) {
		entries[i].ct = all[i];
		entries[i].selected = selected(&o, all[i]->name);
	}
	measure_all(&o, &w);
	struct lb_readers rd = {0};
	if (o.no_readers || !selected(&o, "shmlog")) {
		snprintf(rd.why, sizeof(rd.why), "not selected");
	} else {
		progress("shmlog", "readers");
		lb_readers_run(&o.main, &rd);
	}

	print_main_table(stdout, timer_ns, &o, &w);
	print_per_call(stdout, timer_ns);
	print_seed_table(stdout, &m);
	if (!o.no_sweep)
		print_sweep(stdout);
	if (!o.no_scaling)
		print_scaling(stdout);
	print_readers(stdout, &rd);
	struct target t[16];
	int nt = collect_targets(t, &rd, timer_ns);
	print_targets(stdout, t, nt);

	printf("\n# legend\n");
	for (int i = 0; i < N_ALL; i++)
		if (entries[i].selected)
			printf("#  %-16s %s%s%s%s\n", all[i]->name,
			       all[i]->what, entries[i].note[0] ? " [" : "",
			       entries[i].note, entries[i].note[0] ? "]" : "");
	printf("# total time %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
	fflush(stdout);

	char json_tmp[PATH_MAX];
	const char *json = o.json;
	if (!json && o.plot) {
		snprintf(json_tmp, sizeof(json_tmp), "%s/bench-log.json",
			 o.plot);
		mkdir(o.plot, 0755);
		json = json_tmp;
	}
	if (json &&
	    write_json(json, &m, &o, timer_ns, &clk, &w, &rd, t, nt) < 0)
		return 1;
	if (o.plot)
		run_plot(json, o.plot);
	return 0;
}
