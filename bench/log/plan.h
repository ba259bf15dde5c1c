/* SPDX-License-Identifier: MIT */
/*
 * What the parts of `shmlog-bench log` share: the options of a run and, per
 * contender, everything measured about it. options.c fills struct lb_opts,
 * plan.c fills the entries, tables.c, targets.c, json.c and plot.c read
 * them.
 */
#ifndef SHMLOG_BENCH_LOG_PLAN_H
#define SHMLOG_BENCH_LOG_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "log.h"

#define LB_MAX_REPS 15
#define LB_N_SIZES 5
#define LB_N_SCALE 4
#define LB_MAX_CONTENDERS 16
extern const size_t lb_sweep_sizes[LB_N_SIZES];
extern const int lb_scale_writers[LB_N_SCALE];

/* ---- was a measurement alone? (quiet.c) ---- */
#define LB_QUIET_MAX 256
/* A snapshot: the bench's live descendants and their CPU, the machine's
 * busy ticks, the bench's own CPU, the time. */
struct lb_quiet_mark {
	int n;
	pid_t desc[LB_QUIET_MAX];
	uint64_t cpu[LB_QUIET_MAX]; /* ns */
	uint64_t busy_ticks, bench_ns, wall_ns;
};
/* Summed over the runs of one figure. */
struct lb_quiet {
	int runs;
	double others_s, others_max_s; /* the bench's other processes' CPU */
	double outside_s; /* CPU the machine spent outside the bench */
	double wall_s;
};
void lb_quiet_mark(struct lb_quiet_mark *m);
/* Add the interval @a..@b; processes in @skip (the ones measured) are
 * not "others". */
void lb_quiet_add(struct lb_quiet *q, const struct lb_quiet_mark *a,
		  const struct lb_quiet_mark *b, const pid_t *skip, int nskip);
/* The bench's other processes used (next to) no CPU. */
bool lb_quiet_alone(const struct lb_quiet *q);
/* One line (two) for a section: alone or not, and the figures. */
void lb_quiet_print(FILE *f, const char *what, const struct lb_quiet *q);

/* What the core-speed probe (core.c) said around the runs of each part of
 * the plan: the main table, every call timed, the sweep, the scaling. */
extern struct lb_core lb_core_main, lb_core_call, lb_core_sweep,
    lb_core_scale;

struct lb_opts {
	struct lb_config main, sweep, scale;
	const char *json, *plot, *only;
	bool no_sweep, no_scaling, no_readers, no_history;
	bool with_kmsg; /* /dev/kmsg writes into the machine's kernel log */
	bool wide;	/* every column, past 100 characters */
	bool no_wait_core; /* probe each CPU's speed, do not wait for it */
};

/* Fill @o from the command line. Returns 0, 1 after printing the help
 * (exit 0), or -1 after printing what was wrong (exit 2). */
int lb_parse_opts(int argc, char **argv, struct lb_opts *o);
/* Is contender @ct part of this run? */
bool lb_selected(const struct lb_opts *o, const struct lb_contender *ct);

/* Everything measured about one contender. */
struct lb_entry {
	const struct lb_contender *ct;
	struct lb_ctx c;
	bool selected, skipped, failed, set_up;
	char why[400], note[400];
	int nrep;
	double rps[LB_MAX_REPS], e2e[LB_MAX_REPS];
	double records_per_s, mb_per_s, e2e_per_s;
	struct bench_hist hist; /* batch means */
	/* shmlog and the RFC's design only: every call timed (--batch 1), for
	 * the tail: a batch mean turns one interrupted call in a batch into a
	 * slow batch, which moves rare stalls up the percentiles 16-fold */
	struct bench_hist hist1;
	/* each run's own p50 and p99.9 of hist1's calls, in ns as timed
	 * (the timer's cost in them), in run order */
	double call_p50_each[LB_MAX_REPS], call_p999_each[LB_MAX_REPS];
	int call_n;
	uint64_t recs, bytes, errs;
	double cpu_s, coll_cpu_s, delivered;
	long minflt, majflt, nvcsw, nivcsw;
	double syscalls; /* per record; -1 unknown */
	/* sweep: records/s and median ns per size; < 0 not run */
	double sw_rps[LB_N_SIZES], sw_mbps[LB_N_SIZES], sw_p50[LB_N_SIZES];
	/* scaling: [0] threads, [1] processes; records/s of wall time, and
	 * records per CPU-second the writers actually got */
	double sc_rps[2][LB_N_SCALE], sc_cpu_rps[2][LB_N_SCALE];
	/* shmlog's default only: 2 writer processes joining a buffer that
	 * one writer filled and left (the runs above each start on a fresh
	 * buffer); < 0 where not run */
	double sc_join_rps, sc_join_cpu_rps;
	/* the runs behind the scaling medians, records per CPU-second in
	 * run order: [m][writers] as sc_cpu_rps, then the joined runs */
	double sc_cpu_each[2][LB_N_SCALE][LB_MAX_REPS];
	int sc_n[2][LB_N_SCALE];
	double sc_join_cpu_each[LB_MAX_REPS];
	int sc_join_n;
	/* what ran beside its timed runs (quiet.c), per part of the plan */
	struct lb_quiet q_main, q_call, q_sweep, q_scale;
};

/* One entry per registered contender, in registry order. */
extern struct lb_entry lb_entries[LB_MAX_CONTENDERS];
/* The floor (contenders/floor.c) as writer processes, run beside
 * shmlog's default in the scaling part: its sc_ figures, processes only
 * (sc_[1][]), < 0 where not run; not usable if shmlog's were not. */
extern struct lb_entry lb_floor_entry;
/* shmlog with a buffer per writer process (contenders/shmlog.c), run the
 * same way beside shmlog's default: what two writers keep without
 * sharing a buffer, in the same instructions as shmlog's. */
extern struct lb_entry lb_own_entry;

/* Set up every selected contender, run the plan, tear them down. */
void lb_measure_all(const struct lb_opts *o, const struct lb_work *w);

/* Measured and not skipped or failed. */
bool lb_usable(const struct lb_entry *e);
const struct lb_entry *lb_entry_of(const struct lb_contender *ct);
/* Per million records; NaN without records. */
double lb_per_mrec(long v, uint64_t recs);
/* CPU per record, writer and daemon; NaN without records. */
double lb_cpu_ns_per_rec(const struct lb_entry *e);
/* Quantile @q of the every-call histogram less the timer's cost. */
double lb_call_q(const struct lb_entry *e, double q, double timer_ns);
double lb_hist_q(const struct bench_hist *h, double q, double timer_ns);
/* The median over the runs of each run's per-call p99.9 / p50 (the
 * timer's cost less): one run the host slowed moves the merged
 * histogram's p99.9, not this. NaN if no run was timed. */
double lb_call_tail_runs(const struct lb_entry *e, double timer_ns);
/* The timer alone, sampled as the per-call runs sample a call (plan.c):
 * what the machine adds to any sample's tail. */
extern struct bench_hist lb_timer_hist;

/* ---- history kept (history.c) ---- */
#define LB_N_HISTORY 3
extern const int lb_history_writers[LB_N_HISTORY]; /* 1, 2, 8 */

/* Shares of the buffer's capacity, in bytes of each writer's newest
 * records still readable (common/kept.h), with writer 0 flooding. */
struct lb_history_row {
	int writers;
	double fair_share; /* 1 / writers */
	double others_min; /* least kept by a writer that does not flood;
			    * NaN with one writer */
	double flooder;	   /* kept by the flooder (the lone writer) */
	double flood_ns;   /* the flood's write cost, ns per record */
	uint64_t errs;	   /* writes that failed */
};
struct lb_history {
	bool ok;
	char why[200];
	uint64_t capacity;
	unsigned lanes;
	double flood_x, others_x; /* flood in capacities, others in shares */
	struct lb_history_row rows[LB_N_HISTORY];
};
void lb_history_run(const struct lb_config *cfg, struct lb_history *hs);

/* ---- tables (tables.c) ---- */
void lb_print_main(FILE *f, const struct lb_opts *o, double timer_ns,
		   const struct lb_work *w);
void lb_print_per_call(FILE *f, double timer_ns);
void lb_print_rfc_table(FILE *f, const struct bench_machine *m);
void lb_print_sweep(FILE *f);
void lb_print_scaling(FILE *f);
void lb_print_readers(FILE *f, const struct lb_readers *r);
void lb_print_history(FILE *f, const struct lb_history *hs);
void lb_print_legend(FILE *f);

/* ---- targets (targets.c) ---- */
struct lb_target {
	const char *what;
	double value, want;
	bool higher_better, known;
	bool info; /* shown beside the targets, not one (no want) */
};
#define LB_MAX_TARGETS 32
/* Evaluate every target on the entries (and the archiver's run, @a, NULL
 * if not measured); returns how many. */
int lb_targets_collect(struct lb_target *t, double timer_ns,
		       const struct lb_breakdown *bd, const struct lb_archive *a);
bool lb_target_met(const struct lb_target *t);
void lb_print_targets(FILE *f, const struct lb_target *t, int n);

/* ---- JSON and plots (json.c, plot.c) ---- */
struct lb_report {
	const struct bench_machine *m;
	const struct lb_opts *o;
	double timer_ns;
	const struct lb_clocks *clk;
	const struct lb_work *w;
	const struct lb_readers *rd;
	const struct lb_history *hk;
	const struct lb_breakdown *bd;
	const struct lb_target *t;
	int nt;
};
int lb_write_json(const char *path, const struct lb_report *r);
void lb_run_plot(const char *json, const char *dir);

#endif
