/* SPDX-License-Identifier: MIT */
/* Every figure of a `shmlog-bench log` run as one JSON document: what
 * scripts/render-results turns into the tables of the docs. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "plan.h"

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

/* @n runs' values, in run order, under @key, less @minus each. */
static void json_runs(struct jsonw *j, const char *key, const double *v,
		      int n, double minus)
{
	jsonw_key(j, key);
	jsonw_begin_arr(j);
	for (int i = 0; i < n; i++)
		jsonw_num(j, NULL, v[i] - minus);
	jsonw_end_arr(j);
}

/* @n runs' records per CPU-second, in run order, under "..._each". */
static void json_each(struct jsonw *j, const double *v, int n)
{
	json_runs(j, "records_per_cpu_s_each", v, n, 0);
}

static void json_entry(struct jsonw *j, const struct lb_entry *e)
{
	bool ok = lb_usable(e);
	jsonw_begin_obj(j);
	jsonw_str(j, "contender", e->ct->name);
	jsonw_str(j, "what", e->ct->what);
	jsonw_int(j, "skipped", e->skipped || e->failed);
	jsonw_str(j, "skip_reason", e->skipped || e->failed ? e->why : "");
	jsonw_str(j, "note", e->note);
	jsonw_num(j, "records_per_s", ok ? e->records_per_s : NAN);
	jsonw_num(j, "mb_per_s", ok ? e->mb_per_s : NAN);
	jsonw_num(j, "e2e_records_per_s", ok ? e->e2e_per_s : NAN);
	jsonw_num(j, "ns_p50",
		       ok ? (double)bench_hist_quantile(&e->hist, 0.5) : NAN);
	jsonw_num(j, "ns_p99",
		       ok ? (double)bench_hist_quantile(&e->hist, 0.99) : NAN);
	jsonw_num(j, "ns_p999",
		       ok ? (double)bench_hist_quantile(&e->hist, 0.999) : NAN);
	jsonw_num(j, "ns_max", ok ? (double)e->hist.max : NAN);
	bool pc = ok && e->hist1.count;
	jsonw_num(j, "call_ns_p50",
		       pc ? lb_call_q(e, 0.5, json_timer_ns) : NAN);
	jsonw_num(j, "call_ns_p99",
		       pc ? lb_call_q(e, 0.99, json_timer_ns) : NAN);
	jsonw_num(j, "call_ns_p999",
		       pc ? lb_call_q(e, 0.999, json_timer_ns) : NAN);
	jsonw_num(j, "call_ns_p9999",
		       pc ? lb_call_q(e, 0.9999, json_timer_ns) : NAN);
	/* each run's, the timer's cost less: where the merged p99.9 came
	 * from (one slowed run, or all of them) */
	json_runs(j, "call_ns_p50_each", e->call_p50_each,
		  pc ? e->call_n : 0, json_timer_ns);
	json_runs(j, "call_ns_p999_each", e->call_p999_each,
		  pc ? e->call_n : 0, json_timer_ns);
	jsonw_num(j, "minflt_per_mrec",
		       ok ? lb_per_mrec(e->minflt, e->recs) : NAN);
	jsonw_num(j, "majflt_per_mrec",
		       ok ? lb_per_mrec(e->majflt, e->recs) : NAN);
	jsonw_num(j, "vcsw_per_mrec",
		       ok ? lb_per_mrec(e->nvcsw, e->recs) : NAN);
	jsonw_num(j, "ivcsw_per_mrec",
		       ok ? lb_per_mrec(e->nivcsw, e->recs) : NAN);
	jsonw_num(j, "syscalls_per_rec",
		       ok && e->syscalls >= 0 ? e->syscalls : NAN);
	jsonw_num(j, "cpu_ns_per_rec", ok ? lb_cpu_ns_per_rec(e) : NAN);
	jsonw_num(j, "daemon_cpu_ns_per_rec",
		       ok ? e->coll_cpu_s * 1e9 / (double)e->recs : NAN);
	jsonw_num(j, "delivered", ok ? e->delivered : NAN);
	jsonw_int(j, "write_errors", (long long)e->errs);
	jsonw_key(j, "reps_records_per_s");
	jsonw_begin_arr(j);
	for (int i = 0; i < e->nrep; i++)
		jsonw_num(j, NULL, e->rps[i]);
	jsonw_end_arr(j);
	jsonw_key(j, "cdf");
	jsonw_begin_arr(j);
	for (int i = 0; ok && i < cdf_n; i++) {
		jsonw_begin_arr(j);
		jsonw_num(j, NULL, cdf_q[i]);
		jsonw_num(j, NULL,
			       cdf_q[i] >= 1 ? (double)e->hist.max
					     : (double)bench_hist_quantile(
						   &e->hist, cdf_q[i]));
		jsonw_end_arr(j);
	}
	jsonw_end_arr(j);
	jsonw_key(j, "sweep");
	jsonw_begin_arr(j);
	for (int i = 0; ok && i < LB_N_SIZES; i++) {
		if (e->sw_rps[i] < 0)
			continue;
		jsonw_begin_obj(j);
		jsonw_int(j, "size", (long long)lb_sweep_sizes[i]);
		jsonw_num(j, "records_per_s", e->sw_rps[i]);
		jsonw_num(j, "mb_per_s", e->sw_mbps[i]);
		jsonw_num(j, "ns_p50", e->sw_p50[i]);
		jsonw_end_obj(j);
	}
	jsonw_end_arr(j);
	jsonw_key(j, "scaling");
	jsonw_begin_arr(j);
	for (int m = 0; ok && m < 2; m++)
		for (int i = 0; i < LB_N_SCALE; i++) {
			if (e->sc_rps[m][i] < 0)
				continue;
			jsonw_begin_obj(j);
			jsonw_str(j, "mode", m ? "processes" : "threads");
			jsonw_int(j, "writers", lb_scale_writers[i]);
			jsonw_num(j, "records_per_s", e->sc_rps[m][i]);
			jsonw_num(j, "records_per_cpu_s",
				       e->sc_cpu_rps[m][i]);
			json_each(j, e->sc_cpu_each[m][i], e->sc_n[m][i]);
			jsonw_end_obj(j);
		}
	jsonw_end_arr(j);
	if (ok && e->sc_join_cpu_rps > 0) {
		/* 2 writer processes joining a buffer one writer filled */
		jsonw_key(j, "scaling_joined");
		jsonw_begin_obj(j);
		jsonw_int(j, "writers", 2);
		jsonw_num(j, "records_per_s", e->sc_join_rps);
		jsonw_num(j, "records_per_cpu_s", e->sc_join_cpu_rps);
		json_each(j, e->sc_join_cpu_each, e->sc_join_n);
		jsonw_end_obj(j);
	}
	jsonw_end_obj(j);
}


/* Keep-all once more another way (@v, if it ran): @prefix's rate,
 * records lost, CPU per record and, with @bytes, bytes per record. */
static void json_variant(struct jsonw *j, const char *prefix,
			 const struct lb_archive_variant *v, bool bytes)
{
	if (!v->ok)
		return;
	char key[64];
	snprintf(key, sizeof(key), "%s_records_per_s", prefix);
	jsonw_num(j, key, v->rps);
	snprintf(key, sizeof(key), "%s_lost", prefix);
	jsonw_int(j, key, (long long)v->lost);
	snprintf(key, sizeof(key), "%s_cpu_ns_per_record", prefix);
	jsonw_num(j, key, v->cpu_ns_per_rec);
	if (bytes) {
		snprintf(key, sizeof(key), "%s_bytes_per_record", prefix);
		jsonw_num(j, key, v->bytes_per_rec);
	}
}

/* `shmlog archive` behind one writer (archive.c), inside "readers". Added
 * later: older files have no "archive". keep_all_records_per_s is, since
 * "keep_all_sweeps" was added, the fastest paced writer whose every
 * record was kept (the median of the sweeps); before, the rate kept
 * behind a writer at full speed (now full_speed_records_per_s), a
 * keep-everything rate only where keep_all_lost was 0. The disk's write
 * rate (and that over the archive's bytes per record) bounds it. The CPU
 * a record is the archiver's from the first write to the last record
 * archived (before archiver_start_cpu_ns was added: its whole life,
 * starting included, over fewer records). */
static void json_archive(struct jsonw *j, const struct lb_archive *a)
{
	jsonw_key(j, "archive");
	jsonw_begin_obj(j);
	jsonw_int(j, "skipped", !a->ok);
	jsonw_str(j, "skip_reason", a->ok ? "" : a->why);
	if (a->ok) {
		jsonw_int(j, "runs", a->runs);
		jsonw_num(j, "writer_alone_records_per_s", a->writer_alone_rps);
		jsonw_num(j, "keep_all_records_per_s", a->keep_rps);
		jsonw_int(j, "keep_all_written", (long long)a->keep_written);
		jsonw_int(j, "keep_all_lost", 0);
		jsonw_int(j, "keep_all_buffer_bytes",
			  (long long)a->keep_buffer_bytes);
		jsonw_num(j, "keep_all_step", a->keep_step);
		jsonw_int(j, "keep_all_tries", a->keep_tries);
		jsonw_key(j, "keep_all_sweeps");
		jsonw_begin_arr(j);
		for (int i = 0; i < a->sweeps; i++) {
			const struct lb_archive_sweep *s = &a->sweep[i];
			jsonw_begin_obj(j);
			jsonw_num(j, "records_per_s", s->rps);
			jsonw_num(j, "cpu_ns_per_record", s->cpu_ns_per_rec);
			jsonw_num(j, "bytes_per_record", s->bytes_per_rec);
			jsonw_num(j, "next_records_per_s", s->next_rps);
			jsonw_int(j, "next_lost", (long long)s->next_lost);
			jsonw_int(j, "retried", s->retried);
			jsonw_end_obj(j);
		}
		jsonw_end_arr(j);
		jsonw_num(j, "archiver_cpu_ns_per_record", a->cpu_ns_per_rec);
		jsonw_num(j, "archive_bytes_per_record", a->bytes_per_rec);
		jsonw_num(j, "full_speed_records_per_s", a->full_rps);
		jsonw_int(j, "full_speed_written", (long long)a->full_written);
		jsonw_int(j, "full_speed_lost", (long long)a->full_lost);
		jsonw_num(j, "full_speed_writer_records_per_s",
			  a->full_writer_rps);
		jsonw_num(j, "full_speed_cpu_ns_per_record",
			  a->full_cpu_ns_per_rec);
		jsonw_num(j, "full_speed_bytes_per_record",
			  a->full_bytes_per_rec);
		jsonw_num(j, "archiver_start_cpu_ns", a->start_cpu_ns);
		jsonw_num(j, "disk_write_bytes_per_s", a->disk_bytes_per_s);
		jsonw_num(j, "disk_bound_records_per_s",
			  a->bytes_per_rec > 0
				  ? a->disk_bytes_per_s / a->bytes_per_rec
				  : 0);
	}
	if (a->ok && a->paced_ok) {
		jsonw_num(j, "paced_target_records_per_s", a->paced_target_rps);
		jsonw_num(j, "paced_writer_records_per_s", a->paced_writer_rps);
		jsonw_int(j, "paced_buffer_bytes",
			  (long long)a->paced_buffer_bytes);
		jsonw_int(j, "paced_written", (long long)a->paced_written);
		jsonw_int(j, "paced_lost", (long long)a->paced_lost);
		jsonw_num(j, "paced_cpu_ns_per_record", a->paced_cpu_ns_per_rec);
	}
	json_variant(j, "two_writers", &a->two, false);
	json_variant(j, "compact", &a->compact, true);
	json_variant(j, "as_stored", &a->as_stored, true);
	json_variant(j, "zstd", &a->zstd, true);
	jsonw_end_obj(j);
}

/* A yardstick of shmlog's "scaling" figures as writer processes, under
 * @key: the floor (contenders/floor.c), what the machine allows N
 * processes; shmlog with a buffer per process, what N keep without
 * sharing one. */
static void json_yardstick(struct jsonw *j, const char *key,
			   const struct lb_entry *e)
{
	jsonw_key(j, key);
	jsonw_begin_obj(j);
	bool ok = e->set_up && e->sc_cpu_rps[1][0] > 0;
	jsonw_int(j, "skipped", !ok);
	jsonw_str(j, "what", e->ct->what);
	jsonw_str(j, "note", e->note);
	jsonw_key(j, "scaling");
	jsonw_begin_arr(j);
	for (int i = 0; ok && i < LB_N_SCALE; i++) {
		if (e->sc_rps[1][i] <= 0)
			continue;
		jsonw_begin_obj(j);
		jsonw_str(j, "mode", "processes");
		jsonw_int(j, "writers", lb_scale_writers[i]);
		jsonw_num(j, "records_per_s", e->sc_rps[1][i]);
		jsonw_num(j, "records_per_cpu_s", e->sc_cpu_rps[1][i]);
		json_each(j, e->sc_cpu_each[1][i], e->sc_n[1][i]);
		jsonw_end_obj(j);
	}
	jsonw_end_arr(j);
	jsonw_end_obj(j);
}

static void json_readers(struct jsonw *j, const struct lb_readers *r)
{
	jsonw_key(j, "readers");
	jsonw_begin_obj(j);
	jsonw_int(j, "skipped", !r->ok);
	jsonw_str(j, "skip_reason", r->ok ? "" : r->why);
	if (r->ok) {
		jsonw_int(j, "dump_records", (long long)r->dump_recs);
		jsonw_num(j, "dump_raw_records_per_s", r->dump_raw_rps);
		jsonw_num(j, "dump_threadtime_records_per_s",
			       r->dump_threadtime_rps);
		jsonw_num(j, "dump_json_records_per_s", r->dump_json_rps);
		jsonw_num(j, "follow_ns_p50", r->follow_p50);
		jsonw_num(j, "follow_ns_p99", r->follow_p99);
		jsonw_int(j, "follow_samples", (long long)r->follow.count);
		jsonw_num(j, "writer_alone_records_per_s", r->alone_rps);
		jsonw_num(j, "writer_followed_records_per_s",
			       r->followed_rps);
		jsonw_num(j, "writer_alone_ns_p99", r->alone_p99);
		jsonw_num(j, "writer_followed_ns_p99", r->followed_p99);
		jsonw_num(j, "writer_alone_cpu_ns_per_rec",
			       r->alone_cpu_ns);
		jsonw_num(j, "writer_followed_cpu_ns_per_rec",
			       r->followed_cpu_ns);
		jsonw_num(j, "follower_cpu_ns_per_rec",
			       r->follower_cpu_ns_per_rec);
		jsonw_int(j, "writer_followed_pairs", r->fc_pairs);
		jsonw_num(j, "writer_followed_p99_ratio_min", r->fc_ratio_min);
		jsonw_num(j, "writer_followed_p99_ratio_max", r->fc_ratio_max);
		jsonw_num(j, "writer_followed_wakes_per_s", r->fc_wakes_per_s);
	}
	/* Added later: older files have none of the paced_ fields. */
	if (r->ok && r->paced_ok) {
		jsonw_int(j, "paced_runs", r->paced_runs);
		jsonw_int(j, "paced_buffer_bytes",
			  (long long)r->paced_buffer_bytes);
		jsonw_num(j, "paced_target_records_per_s", r->paced_target_rps);
		jsonw_num(j, "paced_writer_records_per_s", r->paced_writer_rps);
		jsonw_int(j, "paced_written", (long long)r->paced_written);
		jsonw_int(j, "paced_shown", (long long)r->paced_shown);
		jsonw_int(j, "paced_lost",
			  r->paced_written > r->paced_shown
				  ? (long long)(r->paced_written -
						r->paced_shown)
				  : 0);
		jsonw_int(j, "paced_reported_lost",
			  (long long)r->paced_reported_lost);
		jsonw_num(j, "paced_lag_ns_p50", r->paced_lag_p50);
		jsonw_num(j, "paced_lag_ns_p99", r->paced_lag_p99);
		jsonw_num(j, "paced_lag_ns_max", r->paced_lag_max);
		jsonw_num(j, "paced_follower_cpu_ns_per_rec",
			  r->paced_shown ? r->paced_follower_cpu_s * 1e9 /
						   (double)r->paced_shown
					 : 0);
	}
	json_archive(j, &r->archive);
	jsonw_end_obj(j);
}

/* Added after the first committed results: readers of older files find no
 * "history_kept" (scripts/render-results reads none of it yet). */
static void json_history(struct jsonw *j, const struct lb_history *hs)
{
	jsonw_key(j, "history_kept");
	jsonw_begin_obj(j);
	jsonw_int(j, "skipped", !hs->ok);
	jsonw_str(j, "skip_reason", hs->ok ? "" : hs->why);
	if (hs->ok) {
		jsonw_str(j, "record_bytes",
			  "40 + tag_len + msg_len, padded to 8");
		jsonw_int(j, "capacity", (long long)hs->capacity);
		jsonw_int(j, "lanes", hs->lanes);
		jsonw_num(j, "flood_x_capacity", hs->flood_x);
		jsonw_num(j, "others_x_fair_share", hs->others_x);
		jsonw_key(j, "rows");
		jsonw_begin_arr(j);
		for (int i = 0; i < LB_N_HISTORY; i++) {
			const struct lb_history_row *w = &hs->rows[i];
			jsonw_begin_obj(j);
			jsonw_int(j, "writers", w->writers);
			jsonw_num(j, "fair_share", w->fair_share);
			jsonw_num(j, "others_min_share", w->others_min);
			jsonw_num(j, "flooder_share", w->flooder);
			jsonw_num(j, "flood_ns_per_rec", w->flood_ns);
			jsonw_int(j, "write_errors", (long long)w->errs);
			jsonw_end_obj(j);
		}
		jsonw_end_arr(j);
	}
	jsonw_end_obj(j);
}

/* "breakdown": where a constant-message call's time goes (breakdown.c);
 * absent where it was not measured. */
static void json_breakdown(struct jsonw *j, const struct lb_breakdown *b)
{
	if (!b || !b->ok)
		return;
	static const char *const clocks[] = {"default", "tsc", "realtime",
					     "coarse"};
	jsonw_key(j, "breakdown");
	jsonw_begin_obj(j);
	jsonw_str(j, "clock",
		  b->clock >= 0 && b->clock <= 3 ? clocks[b->clock] : "?");
	jsonw_num(j, "record_bytes", b->record_bytes);
	jsonw_num(j, "clock_ns", b->clock_ns);
	jsonw_num(j, "floor_ns", b->floor_ns);
	jsonw_num(j, "filtered_ns", b->filtered_ns);
	jsonw_num(j, "write_ns", b->write_ns);
	/* the medians are of rounds_kept of rounds, those at full speed */
	jsonw_num(j, "rounds", b->rounds);
	jsonw_num(j, "rounds_kept", b->rounds_kept);
	jsonw_num(j, "printf_record_bytes", b->printf_record_bytes);
	jsonw_num(j, "printf_floor_ns", b->printf_floor_ns);
	jsonw_num(j, "printf_ns", b->printf_ns);
	jsonw_num(j, "shmlog_print_ns", b->print_ns);
	/* the same call compiled as C++; absent without a C++ compiler */
	if (!isnan(b->printf_cxx_ns))
		jsonw_num(j, "printf_cxx_ns", b->printf_cxx_ns);
	if (!isnan(b->printf_cxx_x))
		jsonw_num(j, "printf_cxx_x", b->printf_cxx_x);
	/* instructions a call (callgrind); absent without valgrind */
	if (!isnan(b->printf_ir))
		jsonw_num(j, "printf_ir", b->printf_ir);
	if (!isnan(b->printf_cxx_ir))
		jsonw_num(j, "printf_cxx_ir", b->printf_cxx_ir);
	jsonw_end_obj(j);
}

static void json_core_part(struct jsonw *j, const char *part,
			   const struct lb_core *c)
{
	jsonw_begin_obj(j);
	jsonw_str(j, "part", part);
	jsonw_int(j, "runs", c->runs);
	jsonw_int(j, "full_speed_at_once", c->at_once);
	jsonw_int(j, "full_speed_after_wait", c->waited);
	jsonw_int(j, "contended_before", c->before);
	jsonw_int(j, "contended_after", c->after);
	/* of those, the ones with a CPU shared with another process */
	jsonw_int(j, "contended_before_cpu_shared", c->before_shared);
	jsonw_int(j, "contended_after_cpu_shared", c->after_shared);
	jsonw_int(j, "waits", c->waits);
	jsonw_num(j, "wait_s", c->wait_s);
	jsonw_num(j, "slowest_before", c->worst_before);
	jsonw_num(j, "slowest_after", c->worst_after);
	if (c->rounds) {
		jsonw_int(j, "rounds", c->rounds);
		jsonw_int(j, "rounds_full_speed", c->rounds_full);
	}
	jsonw_end_obj(j);
}

/* "core_speed": what the core-speed probe (core.c) found around the timed
 * runs of each part; added after the first committed results (older files
 * have none). A part that ran no run is left out. */
static void json_core(struct jsonw *j, const struct lb_report *r)
{
	jsonw_key(j, "core_speed");
	jsonw_begin_obj(j);
	jsonw_int(j, "measured", lb_core_measured());
	jsonw_int(j, "waits_for_full_speed", lb_core_waits);
	jsonw_num(j, "full_speed_within", LB_CORE_FULL);
	double b = lb_core_best();
	jsonw_num(j, "best_ticks_per_iteration", isfinite(b) ? b : NAN);
	jsonw_key(j, "parts");
	jsonw_begin_arr(j);
	const struct {
		const char *name;
		const struct lb_core *c;
	} parts[] = {{"main", &lb_core_main},
		     {"per_call", &lb_core_call},
		     {"sweep", &lb_core_sweep},
		     {"scaling", &lb_core_scale},
		     {"readers", r->rd ? &r->rd->core : NULL},
		     {"breakdown", r->bd ? &r->bd->core : NULL}};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i].c && (parts[i].c->runs || parts[i].c->rounds))
			json_core_part(j, parts[i].name, parts[i].c);
	jsonw_end_arr(j);
	jsonw_end_obj(j);
}

int lb_write_json(const char *path, const struct lb_report *r)
{
	struct jsonw j;
	const struct lb_opts *o = r->o;
	const struct lb_clocks *clk = r->clk;
	const struct lb_target *t = r->t;
	cdf_init();
	json_timer_ns = r->timer_ns;
	if (!bench_json_open(&j, path, "log", r->m)) {
		fprintf(stderr, "shmlog-bench log: cannot write %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	jsonw_key(&j, "config");
	jsonw_begin_obj(&j);
	jsonw_int(&j, "quick", o->main.quick);
	jsonw_num(&j, "dur_s", o->main.dur_s);
	jsonw_num(&j, "warm_s", o->main.warm_s);
	jsonw_int(&j, "reps", o->main.reps);
	jsonw_int(&j, "batch", o->main.batch);
	jsonw_num(&j, "timer_cost_ns", r->timer_ns);
	/* the per-call percentiles of samples with no call in them */
	bool ta = lb_timer_hist.count > 0;
	jsonw_num(&j, "timer_alone_ns_p50",
		  ta ? lb_hist_q(&lb_timer_hist, 0.5, r->timer_ns) : NAN);
	jsonw_num(&j, "timer_alone_ns_p99",
		  ta ? lb_hist_q(&lb_timer_hist, 0.99, r->timer_ns) : NAN);
	jsonw_num(&j, "timer_alone_ns_p999",
		  ta ? lb_hist_q(&lb_timer_hist, 0.999, r->timer_ns) : NAN);
	jsonw_num(&j, "timer_alone_ns_p9999",
		  ta ? lb_hist_q(&lb_timer_hist, 0.9999, r->timer_ns) : NAN);
	jsonw_num(&j, "rdtsc_ns", clk->rdtsc_ns);
	jsonw_num(&j, "clock_realtime_ns", clk->realtime_ns);
	jsonw_num(&j, "clock_realtime_coarse_ns", clk->coarse_ns);
	jsonw_num(&j, "gettimeofday_ns", clk->gettimeofday_ns);
	jsonw_num(&j, "sem_pair_ns", clk->sem_pair_ns);
	jsonw_num(&j, "atomic_add_ns", clk->atomic_add_ns);
	jsonw_num(&j, "avg_msg_bytes", r->w->avg_len);
	jsonw_int(&j, "with_kmsg", o->with_kmsg);
	jsonw_str(&j, "scratch_dir", lb_scratch);
	jsonw_end_obj(&j);
	jsonw_key(&j, "contenders");
	jsonw_begin_arr(&j);
	for (int i = 0; i < lb_n_contenders; i++)
		if (lb_entries[i].selected)
			json_entry(&j, &lb_entries[i]);
	jsonw_end_arr(&j);
	json_yardstick(&j, "scaling_floor", &lb_floor_entry);
	json_yardstick(&j, "scaling_own", &lb_own_entry);
	json_readers(&j, r->rd);
	json_history(&j, r->hk);
	json_breakdown(&j, r->bd);
	json_core(&j, r);
	jsonw_key(&j, "targets");
	jsonw_begin_arr(&j);
	for (int i = 0; i < r->nt; i++) {
		jsonw_begin_obj(&j);
		jsonw_str(&j, "what", t[i].what);
		jsonw_num(&j, "value", t[i].known ? t[i].value : NAN);
		jsonw_num(&j, "want", t[i].info ? NAN : t[i].want);
		jsonw_str(&j, "direction",
			       t[i].higher_better ? ">=" : "<=");
		jsonw_str(&j, "status",
			       !t[i].known	   ? "n/a"
			       : t[i].info	   ? "info"
			       : lb_target_met(&t[i]) ? "met"
						   : "missed");
		jsonw_end_obj(&j);
	}
	jsonw_end_arr(&j);
	return bench_json_close(&j);
}

