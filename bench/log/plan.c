/* SPDX-License-Identifier: MIT */
/*
 * The run plan of `shmlog-bench log`. Each contender is set up once and
 * torn down after all of its parts, so a daemon starts once:
 *   1. single writer, the 2012 RFC's 16 messages: --reps runs, medians,
 *      then the same with every call timed (shmlog and the RFC's design)
 *   2. syscalls per record under strace (difference of two run lengths)
 *   3. message-size sweep, 16 B .. 4 KiB, single writer
 *   4. scaling: 1, 2, 4, 8 writers as threads and as processes, each
 *      run of shmlog on a fresh buffer; beside shmlog's process runs the
 *      floor of a record (a clock read and a copy into private memory,
 *      contenders/floor.c) as processes: what the machine allows N
 *      processes; and 2 of shmlog's writer processes joining a buffer
 *      that one writer filled
 * (shmlog's readers, the fifth part, are measured by readers.c; the history
 * each writer keeps, the sixth, by history.c.)
 */
#include <math.h>
#include <signal.h>
#include <string.h>

#include "plan.h"

const size_t lb_sweep_sizes[LB_N_SIZES] = {16, 64, 256, 1024, 4096};
const int lb_scale_writers[LB_N_SCALE] = {1, 2, 4, 8};

struct lb_entry lb_entries[LB_MAX_CONTENDERS];
struct lb_entry lb_floor_entry = {.ct = &lb_floor};
struct lb_entry lb_own_entry = {.ct = &lb_shmlog_own};
struct lb_core lb_core_main, lb_core_call, lb_core_sweep, lb_core_scale;

bool lb_usable(const struct lb_entry *e)
{
	return e && e->selected && !e->skipped && !e->failed && e->nrep > 0;
}

const struct lb_entry *lb_entry_of(const struct lb_contender *ct)
{
	for (int i = 0; i < lb_n_contenders; i++)
		if (lb_entries[i].ct == ct)
			return &lb_entries[i];
	return NULL;
}

double lb_per_mrec(long v, uint64_t recs)
{
	return recs ? (double)v * 1e6 / (double)recs : NAN;
}

double lb_cpu_ns_per_rec(const struct lb_entry *e)
{
	return e->recs ? (e->cpu_s + e->coll_cpu_s) * 1e9 / (double)e->recs
		       : NAN;
}

/* The timer's cost is in every sample once. */
double lb_call_q(const struct lb_entry *e, double q, double timer_ns)
{
	return lb_hist_q(&e->hist1, q, timer_ns);
}

double lb_hist_q(const struct bench_hist *h, double q, double timer_ns)
{
	double v = (double)bench_hist_quantile(h, q) - timer_ns;
	return v > 0 ? v : 0;
}

double lb_call_tail_runs(const struct lb_entry *e, double timer_ns)
{
	double r[LB_MAX_REPS];
	int n = 0;
	for (int i = 0; i < e->call_n; i++) {
		double p50 = e->call_p50_each[i] - timer_ns;
		if (p50 > 0)
			r[n++] = (e->call_p999_each[i] - timer_ns) / p50;
	}
	return n ? bench_median(r, n) : NAN;
}

/* ---- measuring ----
 *
 * Every selected contender is set up first (daemons and collectors then sit
 * idle side by side), and the runs are interleaved: repetition 1 of every
 * contender, then repetition 2, and so on. On a machine whose load drifts
 * (a shared one always does), each contender then sees the same mix of
 * conditions, and the ratios between them are what stays stable. */

static bool live(const struct lb_entry *e)
{
	return e->selected && !e->skipped && !e->failed;
}

static void progress(const char *name, const char *what)
{
	fprintf(stderr, "  %-16s %s\n", name, what);
}

static void fail(struct lb_entry *e, const char *err)
{
	e->failed = true;
	snprintf(e->why, sizeof(e->why), "%s", err);
	progress(e->ct->name, "FAILED");
}

static void setup_one(struct lb_entry *e)
{
	e->syscalls = -1;
	e->delivered = 1;
	for (int m = 0; m < 2; m++)
		for (int i = 0; i < LB_N_SCALE; i++)
			e->sc_rps[m][i] = e->sc_cpu_rps[m][i] = -1;
	e->sc_join_rps = e->sc_join_cpu_rps = -1;
	for (int i = 0; i < LB_N_SIZES; i++)
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

/* Stop (SIGSTOP) every other contender's collector or daemon, or let
 * them run again (SIGCONT), so that a run has the machine to itself: an
 * idle daemon still wakes for its timers, and one that has not caught up
 * with its backlog would run beside the next contender. */
static void hold_others(const struct lb_entry *e, int sig)
{
	for (int i = 0; i < lb_n_contenders; i++) {
		const struct lb_entry *o = &lb_entries[i];
		if (o != e && o->set_up && o->c.collector > 0)
			kill(o->c.collector, sig);
	}
}

/* One run of @e, alone: the other contenders' helpers stopped, every CPU
 * at its full speed if a wait of a few seconds finds it so (core.c), and
 * what the bench's other processes and the machine did meanwhile added to
 * @q, what the core-speed probes said before and after to @k. */
static void run_alone(struct lb_entry *e, const struct lb_work *w,
		      const struct lb_config *cfg, int procs, int threads,
		      struct lb_result *r, struct lb_quiet *q,
		      struct lb_core *k)
{
	static struct lb_quiet_mark a, b;
	bool together = procs * threads > 1;
	hold_others(e, SIGSTOP);
	lb_core_wait(k, cfg->quick, together);
	lb_quiet_mark(&a);
	lb_run(&e->c, w, cfg, procs, threads, r);
	lb_quiet_mark(&b);
	lb_core_after(k, together);
	hold_others(e, SIGCONT);
	/* its own collector's CPU is its price, not a neighbour's */
	lb_quiet_add(q, &a, &b, &e->c.collector, 1);
}

static void main_rep(struct lb_entry *e, const struct lb_config *cfg,
		     const struct lb_work *w)
{
	static struct lb_result r;
	run_alone(e, w, cfg, 1, 1, &r, &e->q_main, &lb_core_main);
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

static void main_finish(struct lb_entry *e)
{
	double v[LB_MAX_REPS];
	if (!e->nrep)
		return;
	memcpy(v, e->rps, sizeof(v));
	e->records_per_s = bench_median(v, e->nrep);
	memcpy(v, e->e2e, sizeof(v));
	e->e2e_per_s = bench_median(v, e->nrep);
	e->mb_per_s =
	    e->records_per_s * ((double)e->bytes / (double)e->recs) / 1e6;
}

static bool wants_per_call(const struct lb_entry *e)
{
	return live(e) && ((e->ct->flags & LB_SHMLOG) || e->ct == &lb_seed);
}

struct bench_hist lb_timer_hist;

/* The timer alone, timed as every call is (each sample from the previous
 * read to this one), as long as one run: the tail the machine gives any
 * sample (an interrupt, the host taking the vCPU), nobody's write. */
static void timer_alone(double dur_s)
{
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(dur_s * 1e9);
	while (t0 < end) {
		uint64_t t1 = bench_now_ns();
		bench_hist_add(&lb_timer_hist, t1 - t0);
		t0 = t1;
	}
}

/* Runs of the per-call part (--reps if more): its target is the median
 * run's p99.9, and a run the host slowed moves a run's p99.9 far more
 * than its median (docs/benchmarks.md, "The tail"). */
#define LB_CALL_REPS 9

static void measure_per_call(const struct lb_opts *o, const struct lb_work *w)
{
	static struct lb_result r;
	struct lb_config one = o->main;
	one.batch = 1;
	if (!o->main.quick && one.reps < LB_CALL_REPS)
		one.reps = LB_CALL_REPS;
	bench_hist_init(&lb_timer_hist);
	for (int rep = 0; rep < one.reps; rep++) {
		timer_alone(one.dur_s);
		for (int i = 0; i < lb_n_contenders; i++) {
			struct lb_entry *e = &lb_entries[i];
			if (!wants_per_call(e))
				continue;
			if (rep == 0)
				progress(e->ct->name, "every call timed");
			run_alone(e, w, &one, 1, 1, &r, &e->q_call, &lb_core_call);
			if (!r.ok)
				continue;
			bench_hist_merge(&e->hist1, &r.hist);
			if (e->call_n < LB_MAX_REPS) {
				e->call_p50_each[e->call_n] =
					(double)bench_hist_quantile(&r.hist,
								    0.5);
				e->call_p999_each[e->call_n++] =
					(double)bench_hist_quantile(&r.hist,
								    0.999);
			}
		}
	}
}

static void measure_main(const struct lb_opts *o, const struct lb_work *w)
{
	for (int rep = 0; rep < o->main.reps; rep++)
		for (int i = 0; i < lb_n_contenders; i++)
			if (live(&lb_entries[i])) {
				if (rep == 0)
					progress(lb_entries[i].ct->name,
						 "single writer");
				main_rep(&lb_entries[i], &o->main, w);
			}
	for (int i = 0; i < lb_n_contenders; i++)
		if (live(&lb_entries[i]))
			main_finish(&lb_entries[i]);
	measure_per_call(o, w);
}

/* Per-repetition values of one cell of the sweep or scaling tables. */
struct cell {
	int n;
	bool bad;
	double rps[LB_MAX_REPS], aux[LB_MAX_REPS];
};

static void cell_run(struct lb_entry *e, struct cell *cl,
		     const struct lb_config *cfg, const struct lb_work *w,
		     int procs, int threads, bool per_cpu)
{
	static struct lb_result r;
	if (cl->bad)
		return;
	run_alone(e, w, cfg, procs, threads, &r,
		  per_cpu ? &e->q_scale : &e->q_sweep,
		  per_cpu ? &lb_core_scale : &lb_core_sweep);
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
	/* bench_median() sorts: the runs' order is kept in the copy */
	double r[LB_MAX_REPS], a[LB_MAX_REPS];
	memcpy(r, cl->rps, sizeof(r));
	memcpy(a, cl->aux, sizeof(a));
	*rps = bench_median(r, cl->n);
	*aux = bench_median(a, cl->n);
}

/* A scaling cell's runs, records per CPU-second in run order, into
 * @each; their count into *@n (0 if the cell failed). */
static void cell_each(const struct cell *cl, double *each, int *n)
{
	*n = cl->bad ? 0 : cl->n;
	memcpy(each, cl->aux, sizeof(cl->aux));
}

static bool fits(const struct lb_entry *e, size_t size)
{
	return !(e->ct->flags & LB_NO_SWEEP) &&
	       size <= (e->ct->max_msg ? e->ct->max_msg : LB_MSG_MAX);
}

static void measure_sweep(const struct lb_opts *o)
{
	static struct cell cells[LB_MAX_CONTENDERS][LB_N_SIZES];
	struct lb_work w;
	memset(cells, 0, sizeof(cells));
	progress("all", "size sweep");
	for (int s = 0; s < LB_N_SIZES; s++) {
		lb_work_sized(&w, lb_sweep_sizes[s]);
		for (int rep = 0; rep < o->sweep.reps; rep++)
			for (int i = 0; i < lb_n_contenders; i++)
				if (live(&lb_entries[i]) &&
				    fits(&lb_entries[i], lb_sweep_sizes[s]))
					cell_run(&lb_entries[i], &cells[i][s],
						 &o->sweep, &w, 1, 1, false);
	}
	for (int i = 0; i < lb_n_contenders; i++)
		for (int s = 0; live(&lb_entries[i]) && s < LB_N_SIZES; s++) {
			struct lb_entry *e = &lb_entries[i];
			cell_result(&cells[i][s], &e->sw_rps[s], &e->sw_p50[s]);
			if (e->sw_rps[s] > 0)
				e->sw_mbps[s] =
				    e->sw_rps[s] * (double)lb_sweep_sizes[s] / 1e6;
		}
}

/* Runs per cell of the two-process targets (targets.c), shmlog's and
 * the floor's: a ratio of medians of three runs moved by 10-20 % from one
 * bench run to the next on a busy two-vCPU guest. */
#define LB_TARGET_REPS 15

/* Three runs per cell for shmlog and the RFC's design, whose ratios are
 * targets, LB_TARGET_REPS for the cells of the two-process targets
 * (@m 1: processes, @n writers); one for the others, to keep the whole
 * run short. */
static int scale_reps(const struct lb_entry *e, const struct lb_opts *o,
		      int m, int n)
{
	if (!o->main.quick && m == 1 && n <= 2 &&
	    (e->ct == &lb_shmlog_default || e->ct == &lb_floor ||
	     e->ct == &lb_shmlog_own))
		return o->scale.reps > LB_TARGET_REPS ? o->scale.reps
						      : LB_TARGET_REPS;
	return (e->ct->flags & LB_SHMLOG) || e->ct == &lb_seed ? o->scale.reps
								: 1;
}

/* A fresh buffer for one of shmlog's scaling runs: what N writers that
 * start together keep, whatever the runs before left. A buffer kept from
 * run to run holds the chunks of the writers of the runs before, in the
 * order they took them; writers that join it take those chunks oldest
 * first, and after writers of 1, 2, 4 and 8 processes came and went two
 * writers' chunks lay interleaved one by one, at a cost from nothing to
 * a third of their rate from one run to the next on an AMD EPYC guest
 * (docs/benchmarks.md, "Scaling"). Joining a buffer is measured on its
 * own (joined_run()). Other contenders keep theirs. */
static bool renew(struct lb_entry *e)
{
	if (!(e->ct->flags & LB_SHMLOG))
		return true;
	e->ct->teardown(&e->c);
	return e->ct->setup(&e->c) == 0;
}

static void scale_run(struct lb_entry *e, struct cell *cl,
		      const struct lb_config *cfg, const struct lb_work *w,
		      int procs, int threads)
{
	if (!cl->bad && !renew(e))
		cl->bad = true;
	cell_run(e, cl, cfg, w, procs, threads, true);
}

/* Two writer processes joining a buffer that one writer filled and left,
 * as the workers of a service started after another process logged:
 * a fresh buffer, a lone writer process writing it over many times (its
 * records fill it in a few milliseconds), then the two. */
static void joined_run(struct lb_entry *e, struct cell *cl,
		       const struct lb_config *cfg, const struct lb_work *w)
{
	static struct lb_result r;
	if (cl->bad || !renew(e)) {
		cl->bad = true;
		return;
	}
	struct lb_config fill = *cfg;
	fill.warm_s = fill.dur_s = 0.01;
	lb_run(&e->c, w, &fill, 1, 1, &r);
	if (!r.ok) {
		cl->bad = true;
		return;
	}
	cell_run(e, cl, cfg, w, 2, 1, true);
}

static void scale_result(struct lb_entry *e, struct cell *cl, int m, int s)
{
	cell_result(cl, &e->sc_rps[m][s], &e->sc_cpu_rps[m][s]);
	cell_each(cl, e->sc_cpu_each[m][s], &e->sc_n[m][s]);
}

static void measure_scaling(const struct lb_opts *o, const struct lb_work *w)
{
	static struct cell cells[LB_MAX_CONTENDERS][2][LB_N_SCALE];
	static struct cell floor[LB_N_SCALE], own[LB_N_SCALE], joined;
	memset(cells, 0, sizeof(cells));
	memset(floor, 0, sizeof(floor));
	memset(own, 0, sizeof(own));
	memset(&joined, 0, sizeof(joined));
	struct lb_entry *sl = NULL;
	for (int i = 0; i < lb_n_contenders; i++)
		if (lb_entries[i].ct == &lb_shmlog_default)
			sl = &lb_entries[i];
	progress("all", "scaling");
	/* Each repetition runs every writer count in turn, 1 to 8: what N
	 * writers keep of one writer's rate is then a ratio of runs made
	 * seconds apart, not a ratio of runs made a whole part apart. */
	int most = o->scale.reps > LB_TARGET_REPS ? o->scale.reps
						  : LB_TARGET_REPS;
	for (int m = 0; m < 2; m++)
		for (int rep = 0; rep < most; rep++)
			for (int s = 0; s < LB_N_SCALE; s++) {
				int n = lb_scale_writers[s];
				if (o->main.quick && n > 2)
					continue;
				for (int i = 0; i < lb_n_contenders; i++) {
					struct lb_entry *e = &lb_entries[i];
					if (!live(e) ||
					    (e->ct->flags & LB_NO_SCALING) ||
					    rep >= scale_reps(e, o, m, n))
						continue;
					scale_run(e, &cells[i][m][s], &o->scale,
						  w, m ? n : 1, m ? 1 : n);
				}
				/* the yardsticks right after the contenders'
				 * runs: the same conditions, as near as can be */
				if (m && live(&lb_floor_entry) &&
				    rep < scale_reps(&lb_floor_entry, o, m, n))
					cell_run(&lb_floor_entry, &floor[s],
						 &o->scale, w, n, 1, true);
				if (m && live(&lb_own_entry) &&
				    rep < scale_reps(&lb_own_entry, o, m, n))
					cell_run(&lb_own_entry, &own[s],
						 &o->scale, w, n, 1, true);
				if (m && n == 2 && sl && live(sl) &&
				    rep < scale_reps(sl, o, m, n))
					joined_run(sl, &joined, &o->scale, w);
			}
	for (int i = 0; i < lb_n_contenders; i++)
		for (int m = 0; live(&lb_entries[i]) && m < 2; m++)
			for (int s = 0; s < LB_N_SCALE; s++)
				scale_result(&lb_entries[i], &cells[i][m][s],
					     m, s);
	for (int s = 0; live(&lb_floor_entry) && s < LB_N_SCALE; s++)
		scale_result(&lb_floor_entry, &floor[s], 1, s);
	for (int s = 0; live(&lb_own_entry) && s < LB_N_SCALE; s++)
		scale_result(&lb_own_entry, &own[s], 1, s);
	if (sl && live(sl)) {
		cell_result(&joined, &sl->sc_join_rps, &sl->sc_join_cpu_rps);
		cell_each(&joined, sl->sc_join_cpu_each, &sl->sc_join_n);
	}
}

void lb_measure_all(const struct lb_opts *o, const struct lb_work *w)
{
	for (int i = 0; i < lb_n_contenders; i++)
		if (lb_entries[i].selected)
			setup_one(&lb_entries[i]);
	measure_main(o, w);
	for (int i = 0; o->main.strace && i < lb_n_contenders; i++)
		if (live(&lb_entries[i])) {
			progress(lb_entries[i].ct->name, "syscalls under strace");
			lb_entries[i].syscalls =
			    lb_syscalls_per_rec(&lb_entries[i].c, &o->main);
		}
	if (!o->no_sweep)
		measure_sweep(o);
	if (!o->no_scaling) {
		/* shmlog's yardsticks, if shmlog is measured */
		const struct lb_entry *sl = lb_entry_of(&lb_shmlog_default);
		for (int k = 0; sl && live(sl) && k < 2; k++) {
			struct lb_entry *y = k ? &lb_own_entry : &lb_floor_entry;
			y->selected = true;
			setup_one(y);
		}
		measure_scaling(o, w);
	}
	for (int i = 0; i < lb_n_contenders; i++)
		if (lb_entries[i].set_up)
			lb_entries[i].ct->teardown(&lb_entries[i].c);
	if (lb_floor_entry.set_up)
		lb_floor_entry.ct->teardown(&lb_floor_entry.c);
	if (lb_own_entry.set_up)
		lb_own_entry.ct->teardown(&lb_own_entry.c);
}

