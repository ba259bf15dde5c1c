/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench log: every contender measured side by side in one run, with
 * the machine and the conditions printed next to the figures. The plan is
 * in plan.c, the tables in tables.c, the targets in targets.c; this file
 * puts them in order.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "breakdown.h"
#include "plan.h"

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

static void print_conditions(const struct lb_opts *o,
			     const struct bench_machine *m, double timer_ns,
			     const struct lb_clocks *clk)
{
	printf("# shmlog-bench log%s\n", o->main.quick ? " --quick" : "");
	bench_machine_print(stdout, m, "# ");
	print_fs(stdout);
	printf("# timer: bench_now_ns() costs %.1f ns\n", timer_ns);
	printf("# a call here: rdtsc %.1f ns, clock_gettime(REALTIME) %.1f ns, "
	       "(REALTIME_COARSE) %.1f ns,\n"
	       "#   gettimeofday %.1f ns, sem_wait+sem_post %.1f ns, atomic "
	       "fetch-add %.1f ns\n",
	       clk->rdtsc_ns, clk->realtime_ns, clk->coarse_ns,
	       clk->gettimeofday_ns, clk->sem_pair_ns, clk->atomic_add_ns);
	if (!o->with_kmsg && !o->only)
		printf("# /dev/kmsg not measured: it writes into the kernel "
		       "log; --with-kmsg adds it\n");
	fflush(stdout);
}

static void select_contenders(const struct lb_opts *o)
{
	for (int i = 0; i < lb_n_contenders; i++) {
		lb_entries[i].ct = lb_contenders[i];
		lb_entries[i].selected = lb_selected(o, lb_contenders[i]);
	}
}

static void measure_readers(const struct lb_opts *o, struct lb_readers *rd)
{
	memset(rd, 0, sizeof(*rd));
	if (o->no_readers || !lb_selected(o, &lb_shmlog_default)) {
		snprintf(rd->why, sizeof(rd->why), "not selected");
		return;
	}
	fprintf(stderr, "  %-16s %s\n", "shmlog", "readers");
	lb_readers_run(&o->main, rd);
}

/* Run @fn(@a, @b) and add what the bench's other processes and the
 * machine did meanwhile to @q. */
static void quietly(struct lb_quiet *q, void (*fn)(const void *, void *),
		    const void *a, void *b)
{
	static struct lb_quiet_mark m0, m1;
	lb_quiet_mark(&m0);
	fn(a, b);
	lb_quiet_mark(&m1);
	lb_quiet_add(q, &m0, &m1, NULL, 0);
}

static void history_run(const void *cfg, void *hk)
{
	lb_history_run(cfg, hk);
}

static void measure_history(const struct lb_opts *o, struct lb_history *hk,
			    struct lb_quiet *q)
{
	memset(hk, 0, sizeof(*hk));
	if (o->no_history || !lb_selected(o, &lb_shmlog_default)) {
		snprintf(hk->why, sizeof(hk->why), "not selected");
		return;
	}
	fprintf(stderr, "  %-16s %s\n", "shmlog", "history kept");
	quietly(q, history_run, &o->main, hk);
}

struct breakdown_arg {
	const struct lb_work *w;
	bool quick;
};

static void breakdown_run(const void *a, void *bd)
{
	const struct breakdown_arg *ba = a;
	lb_breakdown_run(bd, ba->w, ba->quick);
}

static void measure_breakdown(const struct lb_opts *o,
			      const struct lb_work *w, struct lb_breakdown *bd,
			      struct lb_quiet *q)
{
	memset(bd, 0, sizeof(*bd));
	if (!lb_selected(o, &lb_shmlog_default)) {
		snprintf(bd->why, sizeof(bd->why), "not selected");
		return;
	}
	fprintf(stderr, "  %-16s %s\n", "shmlog", "where a call goes");
	struct breakdown_arg a = {w, o->main.quick};
	quietly(q, breakdown_run, &a, bd);
}

static void print_tables(const struct lb_opts *o,
			 const struct bench_machine *m, double timer_ns,
			 const struct lb_work *w, const struct lb_readers *rd,
			 const struct lb_history *hk, const struct lb_quiet *qh)
{
	lb_print_main(stdout, o, timer_ns, w);
	lb_print_per_call(stdout, timer_ns);
	lb_print_rfc_table(stdout, m);
	if (!o->no_sweep)
		lb_print_sweep(stdout);
	if (!o->no_scaling)
		lb_print_scaling(stdout);
	lb_print_history(stdout, hk);
	lb_quiet_print(stdout, "beside these runs", qh);
	lb_print_readers(stdout, rd);
}

/* JSON for --json, and for --plot, which draws from it. */
static int write_outputs(const struct lb_opts *o, const struct lb_report *r)
{
	char tmp[PATH_MAX];
	const char *json = o->json;
	if (!json && o->plot) {
		mkdir(o->plot, 0755);
		snprintf(tmp, sizeof(tmp), "%s/bench-log.json", o->plot);
		json = tmp;
	}
	if (json && lb_write_json(json, r) < 0)
		return 1;
	if (o->plot)
		lb_run_plot(json, o->plot);
	return 0;
}

int bench_log_main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--internal-writer"))
		return lb_internal_writer(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "--internal-printf-loop"))
		return lb_bd_internal_printf(argc, argv);
	struct lb_opts o;
	int pr = lb_parse_opts(argc, argv, &o);
	if (pr)
		return pr > 0 ? 0 : 2;

	struct bench_machine m;
	bench_machine_get(&m);
	double timer_ns = bench_timer_cost_ns();
	struct lb_work w;
	lb_work_seed(&w);
	struct lb_clocks clk;
	lb_clock_costs(&clk);
	print_conditions(&o, &m, timer_ns, &clk);

	uint64_t t0 = bench_now_ns();
	select_contenders(&o);
	lb_measure_all(&o, &w);
	struct lb_history hk;
	struct lb_quiet qh = {0}, qb = {0};
	measure_history(&o, &hk, &qh);
	struct lb_readers rd;
	measure_readers(&o, &rd);
	struct lb_breakdown bd;
	measure_breakdown(&o, &w, &bd, &qb);

	print_tables(&o, &m, timer_ns, &w, &rd, &hk, &qh);
	lb_breakdown_print(stdout, &bd);
	lb_quiet_print(stdout, "beside these loops", &qb);
	lb_core_print(stdout, "these loops' CPU", &bd.core);
	struct lb_target t[LB_MAX_TARGETS];
	int nt = lb_targets_collect(t, timer_ns, &bd, &rd.archive);
	lb_print_targets(stdout, t, nt);
	lb_print_legend(stdout);
	printf("# total time %.1f s\n", (double)(bench_now_ns() - t0) / 1e9);
	fflush(stdout);

	struct lb_report r = {&m, &o, timer_ns, &clk, &w, &rd, &hk, &bd, t, nt};
	return write_outputs(&o, &r);
}
