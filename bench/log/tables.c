/* SPDX-License-Identifier: MIT */
/*
 * The tables `shmlog-bench log` prints: rates and sizes in engineering
 * units, durations in the unit that reads best, 100 columns unless --wide.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "plan.h"

#define E(v, u) bench_eng((char[24]){0}, 24, (v), (u))
#define D(ns) bench_dur((char[24]){0}, 24, (ns))

static bool shown(const struct lb_entry *e, FILE *f)
{
	if (!e->selected)
		return false;
	if (e->skipped || e->failed) {
		fprintf(f, "%-16s %s: %s\n", e->ct->name,
			e->skipped ? "SKIPPED" : "FAILED", e->why);
		return false;
	}
	return true;
}

/* What ran beside shmlog's runs of one part of the plan (the struct
 * lb_quiet at @off in each entry), summed over shmlog's variants. */
static void shmlog_quiet(FILE *f, const char *what, size_t off)
{
	struct lb_quiet sum = {0};
	for (int i = 0; i < lb_n_contenders; i++) {
		const struct lb_entry *e = &lb_entries[i];
		if (!lb_usable(e) || !(e->ct->flags & LB_SHMLOG))
			continue;
		const struct lb_quiet *q =
		    (const struct lb_quiet *)((const char *)e + off);
		sum.runs += q->runs;
		sum.others_s += q->others_s;
		if (q->others_max_s > sum.others_max_s)
			sum.others_max_s = q->others_max_s;
		sum.outside_s += q->outside_s;
		sum.wall_s += q->wall_s;
	}
	lb_quiet_print(f, what, &sum);
}

static const char *syscalls(char *buf, size_t n, const struct lb_entry *e)
{
	if (e->syscalls < 0)
		snprintf(buf, n, "n/a");
	else
		snprintf(buf, n, "%.3g", e->syscalls);
	return buf;
}

static void main_row(FILE *f, const struct lb_entry *e, bool wide)
{
	char sys[16];
	const struct bench_hist *h = &e->hist;
	fprintf(f, "%-16s %9s %10s %8s %8s %8s %7.1f %7s %8s %8s",
		e->ct->name, E(e->records_per_s, ""),
		E(e->mb_per_s * 1e6, "B/s"),
		D((double)bench_hist_quantile(h, 0.5)),
		D((double)bench_hist_quantile(h, 0.99)),
		D((double)bench_hist_quantile(h, 0.999)),
		lb_per_mrec(e->minflt, e->recs), syscalls(sys, sizeof(sys), e),
		D(lb_cpu_ns_per_rec(e)),
		D(e->recs ? e->coll_cpu_s * 1e9 / (double)e->recs : 0));
	if (wide)
		fprintf(f, " %9s %8s %6.1f %8.1f %8.1f", E(e->e2e_per_s, ""),
			D((double)h->max), lb_per_mrec(e->majflt, e->recs),
			lb_per_mrec(e->nvcsw, e->recs),
			lb_per_mrec(e->nivcsw, e->recs));
	fprintf(f, "\n");
	if (e->errs || e->delivered < 0.9999)
		fprintf(f, "%-16s   ! %llu write errors, %.2f %% delivered\n", "",
			(unsigned long long)e->errs, e->delivered * 100);
}

void lb_print_main(FILE *f, const struct lb_opts *o, double timer_ns,
		   const struct lb_work *w)
{
	fprintf(f,
		"\n# one writer, the 2012 RFC's %d sample messages (%.1f B "
		"average), tag and priority\n"
		"# records/s: the median of %d runs of %.2f s after %.2f s "
		"warm-up; payload: message bytes/s\n"
		"# p50..p99.9: time per call, percentiles of %d-call batch "
		"means (the timer, %.1f ns\n"
		"# a read, adds %.2f ns a call); minflt: minor faults per "
		"million records;\n"
		"# CPU/rec: writer and daemon CPU per record, daemon: its "
		"share%s\n",
		LB_WORK_N, w->avg_len, o->main.reps, o->main.dur_s,
		o->main.warm_s, o->main.batch, timer_ns,
		timer_ns / o->main.batch,
		o->wide ? "; e2e rec/s: until the\n# daemon has it all; "
			  "majflt, vcsw, ivcsw per million records"
			: " (--wide: more)");
	fprintf(f, "%-16s %9s %10s %8s %8s %8s %7s %7s %8s %8s", "contender",
		"records/s", "payload", "p50", "p99", "p99.9", "minflt",
		"sysc/rec", "CPU/rec", "daemon");
	if (o->wide)
		fprintf(f, " %9s %8s %6s %8s %8s", "e2e rec/s", "max", "majflt",
			"vcsw", "ivcsw");
	fprintf(f, "\n");
	for (int i = 0; i < lb_n_contenders; i++)
		if (shown(&lb_entries[i], f))
			main_row(f, &lb_entries[i], o->wide);
	shmlog_quiet(f, "beside shmlog's runs",
		     offsetof(struct lb_entry, q_main));
	lb_core_print(f, "every contender's runs", &lb_core_main);
}

void lb_print_per_call(FILE *f, double timer_ns)
{
	fprintf(f,
		"\n# every call timed (--batch 1), the timer's %.1f ns "
		"subtracted: the tail per call\n",
		timer_ns);
	fprintf(f, "%-16s %8s %8s %8s %8s %9s\n", "contender", "p50", "p99",
		"p99.9", "p99.99", "p99.9/p50");
	for (int i = 0; i < lb_n_contenders; i++) {
		const struct lb_entry *e = &lb_entries[i];
		if (!e->hist1.count)
			continue;
		double p50 = lb_call_q(e, 0.5, timer_ns);
		fprintf(f, "%-16s %8s %8s %8s %8s %8.1fx\n", e->ct->name,
			D(p50), D(lb_call_q(e, 0.99, timer_ns)),
			D(lb_call_q(e, 0.999, timer_ns)),
			D(lb_call_q(e, 0.9999, timer_ns)),
			p50 > 0 ? lb_call_q(e, 0.999, timer_ns) / p50 : NAN);
	}
	const struct bench_hist *t = &lb_timer_hist;
	/* the same percentiles of samples with no call in them: a call's
	 * tail at or below these is the machine's, not the call's */
	if (t->count)
		fprintf(f, "%-16s %8s %8s %8s %8s\n", "(timer alone)",
			D(lb_hist_q(t, 0.5, timer_ns)),
			D(lb_hist_q(t, 0.99, timer_ns)),
			D(lb_hist_q(t, 0.999, timer_ns)),
			D(lb_hist_q(t, 0.9999, timer_ns)));
	shmlog_quiet(f, "beside shmlog's runs",
		     offsetof(struct lb_entry, q_call));
	lb_core_print(f, "every contender's runs", &lb_core_call);
}

/* The 2012 RFC's table: bytes per second, one row per design, against the
 * kernel's logger. */
void lb_print_rfc_table(FILE *f, const struct bench_machine *m)
{
	static const struct {
		const struct lb_contender *ct;
		const char *label;
	} rows[] = {
	    {&lb_shmlog_default, "shmlog, default clock"},
	    {&lb_shmlog_realtime, "shmlog, CLOCK_REALTIME"},
	    {&lb_shmlog_coarse, "shmlog, CLOCK_MONOTONIC_COARSE"},
	    {&lb_seed, "Shared memory (the RFC's design)"},
	    {&lb_kmsg, "/dev/kmsg (kernel logger)"},
	};
	const struct lb_entry *k = lb_entry_of(&lb_kmsg);
	fprintf(f,
		"\n# the 2012 RFC's table (\"Android Logger vs. Shared Memory"
		"\"), this machine\n# (clocksource %s)%s\n",
		m->clocksource,
		lb_usable(k) ? "" : "; /dev/kmsg only with --with-kmsg");
	fprintf(f, "%-34s %14s %10s\n", "design", "payload bytes/s",
		"vs kmsg");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct lb_entry *e = lb_entry_of(rows[i].ct);
		if (!lb_usable(e)) {
			fprintf(f, "%-34s %14s\n", rows[i].label, "not run");
			continue;
		}
		char vs[16] = "n/a";
		if (lb_usable(k))
			snprintf(vs, sizeof(vs), "%.1fx",
				 e->mb_per_s / k->mb_per_s);
		fprintf(f, "%-34s %14s %10s\n", rows[i].label,
			E(e->mb_per_s * 1e6, "B/s"), vs);
	}
}

static void sweep_header(FILE *f)
{
	fprintf(f, "%-16s", "contender");
	for (int i = 0; i < LB_N_SIZES; i++)
		fprintf(f, " %11zu B", lb_sweep_sizes[i]);
	fprintf(f, "\n");
}

void lb_print_sweep(FILE *f)
{
	for (int part = 0; part < 2; part++) {
		fprintf(f, "\n# message-size sweep, one writer: %s\n",
			part ? "median time per call (batch means)"
			     : "payload bytes/s");
		sweep_header(f);
		for (int i = 0; i < lb_n_contenders; i++) {
			const struct lb_entry *e = &lb_entries[i];
			if (!lb_usable(e) || e->sw_rps[0] < 0)
				continue;
			fprintf(f, "%-16s", e->ct->name);
			for (int s = 0; s < LB_N_SIZES; s++)
				fprintf(f, " %13s",
					e->sw_rps[s] < 0 ? "n/a"
					: part	 ? D(e->sw_p50[s])
						 : E(e->sw_mbps[s] * 1e6, "B/s"));
			fprintf(f, "\n");
		}
	}
	shmlog_quiet(f, "beside shmlog's runs",
		     offsetof(struct lb_entry, q_sweep));
	lb_core_print(f, "every contender's runs", &lb_core_sweep);
}

static void scaling_row(FILE *f, const char *name, const double v[2][LB_N_SCALE])
{
	fprintf(f, "%-16s", name);
	for (int m = 0; m < 2; m++)
		for (int s = 0; s < LB_N_SCALE; s++)
			fprintf(f, " %9s", v[m][s] < 0 ? "-" : E(v[m][s], ""));
	fprintf(f, "\n");
}

void lb_print_scaling(FILE *f)
{
	fprintf(f, "\n# scaling: records/s with N writers, as threads of one "
		   "process and as processes;\n"
		   "# 'per CPU-s': records per CPU-second the writers (and "
		   "daemon) used, which\n"
		   "# separates the design's scaling from CPU taken by other "
		   "tenants;\n"
		   "# each of shmlog's runs starts on a fresh buffer\n");
	fprintf(f, "%-16s", "contender");
	for (int m = 0; m < 2; m++)
		for (int i = 0; i < LB_N_SCALE; i++)
			fprintf(f, " %7s %d", m ? "proc x" : "thr x",
				lb_scale_writers[i]);
	fprintf(f, "\n");
	for (int i = 0; i < lb_n_contenders; i++) {
		const struct lb_entry *e = &lb_entries[i];
		if (!lb_usable(e) || e->sc_rps[0][0] < 0)
			continue;
		scaling_row(f, e->ct->name, (const double(*)[LB_N_SCALE])e->sc_rps);
		scaling_row(f, "  per CPU-s",
			    (const double(*)[LB_N_SCALE])e->sc_cpu_rps);
		if (e->sc_join_cpu_rps > 0)
			fprintf(f, "  2 processes joining a buffer one writer "
				   "filled: %s, per CPU-s %s\n",
				E(e->sc_join_rps, ""),
				E(e->sc_join_cpu_rps, ""));
	}
	static const char *const about[2] = {
	    "not a logger, a clock read and a copy of each record into the "
	    "writer's own\n# memory; what N of them keep of one's records per "
	    "CPU-s is what the machine allows",
	    "shmlog's calls, each writer process on a buffer of its own; "
	    "shmlog's figure\n# over it is what sharing one buffer costs"};
	for (int k = 0; k < 2; k++) {
		const struct lb_entry *y = k ? &lb_own_entry : &lb_floor_entry;
		if (!y->set_up || y->sc_cpu_rps[1][0] <= 0)
			continue;
		fprintf(f, "# %s: %s\n", y->ct->name, about[k]);
		scaling_row(f, y->ct->name,
			    (const double(*)[LB_N_SCALE])y->sc_rps);
		scaling_row(f, "  per CPU-s",
			    (const double(*)[LB_N_SCALE])y->sc_cpu_rps);
	}
	shmlog_quiet(f, "beside shmlog's runs",
		     offsetof(struct lb_entry, q_scale));
	lb_core_print(f, "every contender's runs", &lb_core_scale);
}

/* A share as a percentage; "-" where there is none (NaN). */
static const char *pct(char *buf, size_t n, double v)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.1f %%", v * 100);
	return buf;
}

void lb_print_history(FILE *f, const struct lb_history *hs)
{
	fprintf(f, "\n# history kept (shmlog): the bytes of each writer's "
		   "newest records still readable\n"
		   "# (40 B header + tag + message, padded to 8) as a share of "
		   "the capacity;\n"
		   "# writer 0 floods, the others first write more than their "
		   "fair share\n");
	if (!hs->ok) {
		fprintf(f, "not measured: %s\n", hs->why);
		return;
	}
	fprintf(f,
		"# (capacity %llu KiB, %u lanes; flood %g x capacity, others "
		"%g x capacity / writers;\n"
		"# flood/rec: the flood's write cost, the ring full, the "
		"others idle)\n",
		(unsigned long long)(hs->capacity >> 10), hs->lanes,
		hs->flood_x, hs->others_x);
	fprintf(f, "%-8s %11s %13s %10s %10s\n", "writers", "fair share",
		"others (min)", "flooder", "flood/rec");
	for (int i = 0; i < LB_N_HISTORY; i++) {
		const struct lb_history_row *r = &hs->rows[i];
		char a[16], b[16], c[16];
		fprintf(f, "%-8d %11s %13s %10s %10s\n", r->writers,
			pct(a, sizeof(a), r->fair_share),
			pct(b, sizeof(b), r->others_min),
			pct(c, sizeof(c), r->flooder), D(r->flood_ns));
		if (r->errs)
			fprintf(f, "%-8s   ! %llu write errors\n", "",
				(unsigned long long)r->errs);
	}
}

/* Keep-all once more another way (@v, if it ran), named @how: its rate,
 * records lost, CPU and (with @decimals >= 0, so many of them) bytes of
 * files per record. */
static void print_variant(FILE *f, const char *how,
			  const struct lb_archive_variant *v, int decimals)
{
	if (!v->ok) {
		if (v->why[0])
			fprintf(f, "  %s: not measured: %s\n", how, v->why);
		return;
	}
	fprintf(f, "  %s: %s records/s kept (%llu lost), %s of CPU", how,
		E(v->rps, ""), (unsigned long long)v->lost,
		D(v->cpu_ns_per_rec));
	if (decimals >= 0)
		fprintf(f, " and %.*f bytes of files", decimals,
			v->bytes_per_rec);
	fprintf(f, " a record\n");
}

/* `shmlog archive` behind one writer (archive.c). */
static void print_archive(FILE *f, const struct lb_archive *a)
{
	if (!a->ok) {
		fprintf(f, "shmlog archive behind one writer: not measured: "
			   "%s\n", a->why);
		return;
	}
	fprintf(f,
		"shmlog archive behind one writer: every record kept up to "
		"%s records/s\n  (%.2fx the writer alone, %s/s; the median of "
		"%d sweep%s of runs of %llu records\n  paced at steps of %.0f %% "
		"of it into a %llu MiB buffer, each sweep up to the\n  first pace "
		"that lost records in %d runs:",
		E(a->keep_rps, ""),
		a->writer_alone_rps > 0 ? a->keep_rps / a->writer_alone_rps : 0,
		E(a->writer_alone_rps, ""), a->sweeps, a->sweeps == 1 ? "" : "s",
		(unsigned long long)a->keep_written, 100 * a->keep_step,
		(unsigned long long)(a->keep_buffer_bytes >> 20), a->keep_tries);
	for (int i = 0; i < a->sweeps; i++) {
		const struct lb_archive_sweep *s = &a->sweep[i];
		fprintf(f, "%s %s", i ? "," : "", E(s->rps, ""));
		if (s->retried)
			fprintf(f, " (%d pace%s whole in a second run)",
				s->retried, s->retried == 1 ? "" : "s");
		if (s->next_rps > 0)
			fprintf(f, " (%s lost %llu)", E(s->next_rps, ""),
				(unsigned long long)s->next_lost);
	}
	fprintf(f,
		");\n  the archiver spends %s of CPU a record there (user + "
		"system; %s to start),\n  %.0f bytes of files a record; the "
		"disk writes %s/s: %s records/s reach it\n  at most\n",
		D(a->cpu_ns_per_rec), D(a->start_cpu_ns), a->bytes_per_rec,
		E(a->disk_bytes_per_s, "B"),
		E(a->bytes_per_rec > 0 ? a->disk_bytes_per_s / a->bytes_per_rec
				       : 0,
		  ""));
	fprintf(f,
		"  at full speed (%d run%s, %s records/s written): %s records/s "
		"kept, %llu of %llu\n  lost, %s of CPU and %.0f bytes of files "
		"a record\n",
		a->runs, a->runs == 1 ? "" : "s", E(a->full_writer_rps, ""),
		E(a->full_rps, ""),
		(unsigned long long)a->full_lost,
		(unsigned long long)a->full_written, D(a->full_cpu_ns_per_rec),
		a->full_bytes_per_rec);
	if (a->paced_ok)
		fprintf(f,
			"  one writer paced at %s records/s (it wrote %s/s) "
			"into a %llu KiB buffer: %llu of %llu records lost,\n"
			"  %s of CPU a record\n",
			E(a->paced_target_rps, ""), E(a->paced_writer_rps, ""),
			(unsigned long long)(a->paced_buffer_bytes >> 10),
			(unsigned long long)a->paced_lost,
			(unsigned long long)a->paced_written,
			D(a->paced_cpu_ns_per_rec));
	print_variant(f, "at full speed, two writers, half the records each",
		      &a->two, -1);
	print_variant(f, "at full speed with --compact", &a->compact, 0);
	print_variant(f, "at full speed with --as-stored", &a->as_stored, 0);
	print_variant(f, "at full speed with --zstd", &a->zstd, 1);
}

void lb_print_readers(FILE *f, const struct lb_readers *r)
{
	fprintf(f, "\n# shmlog's readers\n");
	if (!r->ok) {
		fprintf(f, "not measured: %s\n", r->why);
		return;
	}
	fprintf(f,
		"dump of %s records to /dev/null: raw %s records/s, threadtime "
		"%s/s, json %s/s\n",
		E((double)r->dump_recs, ""), E(r->dump_raw_rps, ""),
		E(r->dump_threadtime_rps, ""), E(r->dump_json_rps, ""));
	fprintf(f,
		"follow latency, write call to a blocked reader having the "
		"record: median %s,\n  p99 %s (%llu samples)\n",
		D(r->follow_p50), D(r->follow_p99),
		(unsigned long long)r->follow.count);
	fprintf(f,
		"one writer alone: %s records/s (p99 %s, %s of CPU a record)\n"
		"with an active follower: %s records/s (p99 %s, %s of CPU a "
		"record):\n  the writer keeps %.0f %% of its rate alone, its "
		"p99 per call is %.2fx its p99 alone; the "
		"follower spends %s of CPU a record\n",
		E(r->alone_rps, ""), D(r->alone_p99), D(r->alone_cpu_ns),
		E(r->followed_rps, ""), D(r->followed_p99),
		D(r->followed_cpu_ns),
		r->alone_rps > 0 ? 100 * r->followed_rps / r->alone_rps : 0,
		r->alone_p99 > 0 ? r->followed_p99 / r->alone_p99 : 0,
		D(r->follower_cpu_ns_per_rec));
	if (r->fc_pairs > 1)
		fprintf(f,
			"  the p99 ratio of each of %d pairs of runs: %.2fx to "
			"%.2fx; the writer woke the follower %.0f times a "
			"second\n",
			r->fc_pairs, r->fc_ratio_min, r->fc_ratio_max,
			r->fc_wakes_per_s);
	lb_core_print(f, "around the dumps and these alone and followed runs",
		      &r->core);
	print_archive(f, &r->archive);
	if (!r->paced_ok) {
		fprintf(f, "a follower behind a paced writer: not measured\n");
		return;
	}
	uint64_t lost = r->paced_written > r->paced_shown
				? r->paced_written - r->paced_shown
				: 0;
	fprintf(f,
		"a follower formatting threadtime into a file, one writer "
		"paced at %s records/s\n  (it wrote %s/s; %llu KiB buffer, %d "
		"runs): %llu of %llu records lost (%llu reported);\n  lag "
		"behind the writer: median %s, p99 %s, max %s; the follower "
		"spends %s of CPU a record\n",
		E(r->paced_target_rps, ""), E(r->paced_writer_rps, ""),
		(unsigned long long)(r->paced_buffer_bytes >> 10), r->paced_runs,
		(unsigned long long)lost,
		(unsigned long long)r->paced_written,
		(unsigned long long)r->paced_reported_lost, D(r->paced_lag_p50),
		D(r->paced_lag_p99), D(r->paced_lag_max),
		D(r->paced_shown ? r->paced_follower_cpu_s * 1e9 /
					   (double)r->paced_shown
				 : 0));
}

void lb_print_legend(FILE *f)
{
	fprintf(f, "\n# legend\n");
	for (int i = 0; i < lb_n_contenders; i++) {
		const struct lb_entry *e = &lb_entries[i];
		if (!e->selected)
			continue;
		fprintf(f, "#  %-16s %s\n", e->ct->name, e->ct->what);
		if (e->note[0])
			fprintf(f, "#  %-16s (%s)\n", "", e->note);
	}
}
