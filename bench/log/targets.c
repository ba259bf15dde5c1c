/* SPDX-License-Identifier: MIT */
/*
 * The project's targets for the write path, one definition each: what is
 * compared, against what, and the value wanted. Each throughput ratio is
 * also given in CPU time per record (writer plus daemon), which does not
 * depend on the share of the CPUs a run happened to get.
 */
#include <math.h>

#include "plan.h"

enum measure {
	RATE_VS,      /* shmlog records/s over the peer's */
	CPU_VS,	      /* the peer's CPU per record over shmlog's */
	TAIL_CALL,    /* p99.9 / p50, every call timed: the median run's */
	TAIL_CALL_MERGED, /* the same over all runs' calls (information) */
	TAIL_BATCH,   /* p99.9 / p50 of batch means */
	MINFLT,	      /* minor faults per million records */
	SYSCALLS,     /* syscalls per record */
	TWO_PROCESSES, /* records/s of 2 writer processes over 1 */
	TWO_PROCESSES_CPU, /* the same per CPU-second the writers used */
	TWO_PROCESSES_CPU_FLOOR, /* that over the same ratio of the floor
				  * (contenders/floor.c): of what the
				  * machine allows two processes */
	TWO_PROCESSES_CPU_OWN, /* that over the same ratio of shmlog's
				* writers with a buffer each: what sharing
				* one costs */
	TWO_JOINED_CPU, /* 2 processes joining a filled buffer, per CPU-s,
			 * over 1 process (information) */
	PRINTF_VS, /* printf-style formatted by the reader over by the
		    * caller, CPU per record in the main table: its loop's
		    * cost added to both (information) */
	PRINTF_VS_CALL, /* the same, the two calls alone (breakdown.c):
			 * shmlog_print() over the typed call, without the
			 * main table's loop around each */
	FLOOR_X, /* a shmlog_write_n() call over the floor (breakdown.c) */
	PRINTF_FLOOR_X, /* shmlog-printf's call over its record's floor */
	PRINTF_CXX_X, /* that call compiled as C++ over compiled as C11 */
	ARC_KEEP_X, /* the fastest paced writer whose every record the
		     * archive kept, over the writer alone (archive.c) */
	ARC_FULL_X, /* records/s the archive kept behind a writer at full
		     * speed, losing the rest, over the writer alone
		     * (information) */
	ARC_DISK_X, /* the disk's bound (records/s its write rate takes at
		     * the archive's bytes a record) over the writer alone:
		     * what ARC_KEEP_X can reach at most (information) */
	ARC_CPU, /* the archiver's CPU per record at ARC_KEEP_X's rate, ns */
	ARC_PACED_LOST /* records lost behind a writer paced at 10 M/s */
};

static const struct {
	const char *what;
	enum measure m;
	const struct lb_contender *peer;
	double want;
	bool higher_better;
	bool info; /* information beside the targets, not one */
} defs[] = {
    {"shmlog records/s vs RFC design", RATE_VS, &lb_seed, 2, true},
    {"shmlog call / floor (clock read + copy)", FLOOR_X, NULL, 1.2, false},
    {"shmlog records/s vs /dev/kmsg", RATE_VS, &lb_kmsg, 40, true},
    {"shmlog records/s vs spdlog async", RATE_VS, &lb_spdlog, 10, true},
    {"  same, CPU per record: vs RFC design", CPU_VS, &lb_seed, 2, true},
    {"  same, CPU per record: vs kmsg", CPU_VS, &lb_kmsg, 40, true},
    {"  same, CPU per record: vs spdlog", CPU_VS, &lb_spdlog, 10, true},
    {"shmlog p99.9 / median, per call", TAIL_CALL, NULL, 5, false},
    {"  same, all runs' calls together", TAIL_CALL_MERGED, NULL, 0, false,
     true},
    {"shmlog p99.9 / median, batch means", TAIL_BATCH, NULL, 5, false},
    {"shmlog minor faults per Mrec", MINFLT, NULL, 0, false},
    {"shmlog syscalls per record", SYSCALLS, NULL, 0, false},
    {"shmlog 2 processes / 1 process", TWO_PROCESSES, NULL, 1.7, true},
    {"  same, records per CPU-second", TWO_PROCESSES_CPU, NULL, 0.95, true},
    {"  same, over a private copy loop's", TWO_PROCESSES_CPU_FLOOR, NULL,
     0.95, true},
    {"  same, over writers with a buffer each", TWO_PROCESSES_CPU_OWN, NULL,
     0.95, true},
    {"  same, joining a filled buffer", TWO_JOINED_CPU, NULL, 0,
     true, true},
    {"printf-style: by reader vs vsnprintf", PRINTF_VS_CALL,
     NULL, 10, true},
    {"  same, per record in the main table", PRINTF_VS,
     &lb_shmlog_vsnprintf, 0, true, true},
    {"printf-style call / floor (clock + copy)", PRINTF_FLOOR_X, NULL, 1.5,
     false},
    {"printf-style call: from C++ / from C11", PRINTF_CXX_X, NULL, 1.1,
     false},
    {"archive: all kept, records/s / writer alone", ARC_KEEP_X, NULL, 0.3,
     true},
    {"  same, full speed: kept / writer alone", ARC_FULL_X, NULL,
     0, true, true},
    {"  same, the disk's bound / writer alone", ARC_DISK_X, NULL, 0, true,
     true},
    {"archive: CPU per record there (ns)", ARC_CPU, NULL, 40, false},
    {"archive: lost behind 10 M records/s", ARC_PACED_LOST, NULL, 0, false},
};

/* What two writer processes of @e keep of one's records per CPU-second;
 * NaN where either was not measured. */
static double cpu_keep(const struct lb_entry *e)
{
	return e->set_up && e->sc_cpu_rps[1][0] > 0 && e->sc_cpu_rps[1][1] > 0
		       ? e->sc_cpu_rps[1][1] / e->sc_cpu_rps[1][0]
		       : NAN;
}

/* The value of measure @m, NaN where it was not measured. */
static double measure(enum measure m, const struct lb_entry *s,
		      const struct lb_entry *p, double timer_ns,
		      const struct lb_breakdown *bd, const struct lb_archive *a)
{
	bool arc = a && a->ok;
	switch (m) {
	case ARC_KEEP_X:
		return arc && a->writer_alone_rps > 0
			       ? a->keep_rps / a->writer_alone_rps
			       : NAN;
	case ARC_FULL_X:
		return arc && a->writer_alone_rps > 0
			       ? a->full_rps / a->writer_alone_rps
			       : NAN;
	case ARC_DISK_X:
		return arc && a->writer_alone_rps > 0 && a->bytes_per_rec > 0 &&
				       a->disk_bytes_per_s > 0
			       ? a->disk_bytes_per_s / a->bytes_per_rec /
					 a->writer_alone_rps
			       : NAN;
	case ARC_CPU:
		return arc ? a->cpu_ns_per_rec : NAN;
	case ARC_PACED_LOST:
		return arc && a->paced_ok ? (double)a->paced_lost : NAN;
	case FLOOR_X:
		return bd && bd->ok && bd->floor_ns > 0
			       ? bd->write_ns / bd->floor_ns
			       : NAN;
	case PRINTF_VS_CALL:
		return bd && bd->ok && bd->printf_ns > 0 && bd->print_ns > 0
			       ? bd->print_ns / bd->printf_ns
			       : NAN;
	case PRINTF_FLOOR_X:
		return bd && bd->ok && bd->printf_floor_ns > 0
			       ? bd->printf_ns / bd->printf_floor_ns
			       : NAN;
	case PRINTF_CXX_X:
		return bd && bd->ok ? bd->printf_cxx_x : NAN;
	case RATE_VS:
		return lb_usable(p) ? s->records_per_s / p->records_per_s : NAN;
	case CPU_VS:
		return lb_usable(p) ? lb_cpu_ns_per_rec(p) / lb_cpu_ns_per_rec(s)
				    : NAN;
	case TAIL_CALL:
		return s->hist1.count ? lb_call_tail_runs(s, timer_ns) : NAN;
	case TAIL_CALL_MERGED:
		return s->hist1.count && lb_call_q(s, 0.5, timer_ns) > 0
			   ? lb_call_q(s, 0.999, timer_ns) /
				 lb_call_q(s, 0.5, timer_ns)
			   : NAN;
	case TAIL_BATCH:
		return (double)bench_hist_quantile(&s->hist, 0.999) /
		       (double)bench_hist_quantile(&s->hist, 0.5);
	case MINFLT:
		return lb_per_mrec(s->minflt, s->recs);
	case SYSCALLS:
		return s->syscalls >= 0 ? s->syscalls : NAN;
	case TWO_PROCESSES:
		return s->sc_rps[1][0] > 0 && s->sc_rps[1][1] > 0
			   ? s->sc_rps[1][1] / s->sc_rps[1][0]
			   : NAN;
	case TWO_PROCESSES_CPU:
		return cpu_keep(s);
	case TWO_PROCESSES_CPU_FLOOR:
		return cpu_keep(s) / cpu_keep(&lb_floor_entry);
	case TWO_PROCESSES_CPU_OWN:
		return cpu_keep(s) / cpu_keep(&lb_own_entry);
	case TWO_JOINED_CPU:
		return s->sc_join_cpu_rps > 0 && s->sc_cpu_rps[1][0] > 0
			       ? s->sc_join_cpu_rps / s->sc_cpu_rps[1][0]
			       : NAN;
	case PRINTF_VS: {
		const struct lb_entry *d = lb_entry_of(&lb_shmlog_printf);
		return lb_usable(d) && lb_usable(p)
			       ? d->records_per_s / p->records_per_s
			       : NAN;
	}
	}
	return NAN;
}

int lb_targets_collect(struct lb_target *t, double timer_ns,
		       const struct lb_breakdown *bd, const struct lb_archive *a)
{
	const struct lb_entry *s = lb_entry_of(&lb_shmlog_default);
	int n = (int)(sizeof(defs) / sizeof(defs[0]));
	for (int i = 0; i < n && i < LB_MAX_TARGETS; i++) {
		double v = lb_usable(s) ? measure(defs[i].m, s,
						  lb_entry_of(defs[i].peer),
						  timer_ns, bd, a)
					: NAN;
		t[i] = (struct lb_target){defs[i].what, v, defs[i].want,
					  defs[i].higher_better, !isnan(v),
					  defs[i].info};
	}
	return n;
}

bool lb_target_met(const struct lb_target *t)
{
	if (t->info)
		return true;
	return t->higher_better ? t->value >= t->want : t->value <= t->want;
}

void lb_print_targets(FILE *f, const struct lb_target *t, int n)
{
	fprintf(f, "\n# targets for shmlog's write path and archiver, on this "
		   "machine\n");
	for (int i = 0; i < n; i++) {
		if (!t[i].known) {
			fprintf(f, "  %-40s  n/a (not measured)\n", t[i].what);
			continue;
		}
		if (t[i].info) {
			fprintf(f, "  %-40s %10.3g  (information, not a target)\n",
				t[i].what, t[i].value);
			continue;
		}
		fprintf(f, "  %-40s %10.3g  want %s %-6g %s\n", t[i].what,
			t[i].value, t[i].higher_better ? ">=" : "<=", t[i].want,
			lb_target_met(&t[i]) ? "met" : "MISSED");
	}
}
