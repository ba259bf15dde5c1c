/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench log: shmlog against every other way a Linux program logs.
 *
 * Layout of this folder:
 *   log_main.c      the command: options in, plan run, reports out
 *   options.c       command-line options
 *   registry.c      the list of contenders
 *   plan.c          the run plan: what is measured, in which order
 *   tables.c        the tables printed for a user
 *   targets.c       the project's targets, a table of definitions
 *   json.c          every figure as JSON (docs/results/ holds these)
 *   plot.c          SVG plots through plot.py
 *   plan.h          what these share: struct lb_entry, struct lb_opts
 *   run.c           the measurement harness: writer processes and threads,
 *                   warm-up, batched timing, getrusage, collector CPU,
 *                   draining, syscall counting under strace
 *   workload.c      the 2012 RFC's 16 sample messages, the size sweep
 *   readers.c       shmlog's readers: dump rate, follow latency, follower cost
 *   history.c       shmlog's history kept per writer, one of them flooding
 *   clocks.c        what the clocks and primitives cost here
 *   breakdown.c     where a constant-message call's time goes, beside
 *                   its floor (one clock read and a copy of the record)
 *   floor.h         that floor, also run as writer processes in the
 *                   scaling part (contenders/floor.c)
 *   contenders/     one file per contender, each a struct lb_contender
 *
 * A contender is driven in three places:
 *   - the parent (setup/teardown/reset/consumed): creates the buffer, starts
 *     the daemon or collector process, knows how much it has received;
 *   - each writer process (open/write/close), forked by the harness or
 *     started under strace as `shmlog-bench log --internal-writer`: it only
 *     gets the string c->arg, so everything a writer needs must be in it;
 *   - the writer threads of that process share one handle, so write() must
 *     be thread-safe, as a logger's entry point is.
 */
#ifndef SHMLOG_BENCH_LOG_H
#define SHMLOG_BENCH_LOG_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

/* The C++ contender (spdlog) never touches the shared counters. */
#ifdef __cplusplus
#define LB_ATOMIC(t) t
extern "C" {
#else
#include <stdatomic.h>
#define LB_ATOMIC(t) _Atomic t
#endif

#define LB_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Longest message of the size sweep, and of any record. */
#define LB_MSG_MAX 4096

/* One log record as the workload hands it to a contender. */
struct lb_msg {
	int prio; /* Android numbering: 2 (V) .. 7 (F) */
	const char *tag;
	size_t tag_len;
	const char *msg;
	size_t len; /* bytes of msg: the payload counted in MB/s */
};

/* A workload: a cycle of messages (16 of them) written in turn. */
#define LB_WORK_N 16
struct lb_work {
	struct lb_msg m[LB_WORK_N];
	double avg_len;
	char name[32]; /* "rfc16" or "size=256" */
};
void lb_work_seed(struct lb_work *w);
/* Messages of exactly @size bytes. The text lives in static storage. */
void lb_work_sized(struct lb_work *w, size_t size);

/* Counters a collector process publishes in shared memory so that the
 * parent knows when everything sent has arrived. */
struct lb_sink {
	LB_ATOMIC(uint64_t) recs;
	LB_ATOMIC(uint64_t) bytes;
};

/* The common binary record header that the peers without a format of their
 * own (file, pipe, logd-style socket, mqueue) store in front of tag and
 * message: the same fields a shmlog record carries. */
struct lb_hdr {
	uint64_t time_ns; /* CLOCK_REALTIME, taken by the writer */
	uint32_t pid, tid;
	uint16_t len; /* bytes of tag + message that follow */
	uint8_t prio;
	uint8_t tag_len;
};
/* Fill @h for @m: one clock_gettime(CLOCK_REALTIME), cached pid and tid. */
void lb_hdr_fill(struct lb_hdr *h, const struct lb_msg *m);
/* Header, tag and message copied into @buf (at least
 * sizeof(struct lb_hdr) + 255 + LB_MSG_MAX); returns the length. */
size_t lb_rec_build(char *buf, const struct lb_msg *m);

struct lb_contender;

/* One contender's state in the parent between setup and teardown. */
struct lb_ctx {
	const struct lb_contender *ct;
	char arg[200];	 /* what a writer process needs to attach */
	char dir[160];	 /* private scratch directory, removed at teardown */
	pid_t collector; /* process whose CPU is part of the price, or 0 */
	struct lb_sink *sink; /* collector's counters (shared), or NULL */
	void *priv;	      /* contender's own parent-side state */
	char why[400];	      /* why it was skipped */
	char note[400];	      /* a condition worth printing with its results */
};

#define LB_SINK_BYTES 0x1 /* consumed() counts wire bytes, not records */
#define LB_SHMLOG 0x2	  /* one of shmlog's own variants */
#define LB_NO_SCALING 0x4 /* not run in the scaling part */
#define LB_NO_SWEEP 0x8	  /* writes its own message: no size sweep */

struct lb_contender {
	const char *name; /* short, used in --only and in JSON */
	const char *what; /* one line for the table's legend */
	unsigned flags;
	size_t max_msg; /* longest message accepted; 0: LB_MSG_MAX */
	/* Parent: 0, or -1 with c->why set (skipped, with the reason). */
	int (*setup)(struct lb_ctx *c);
	void (*teardown)(struct lb_ctx *c);
	/* Parent, before each measured run (truncate files...). Optional. */
	void (*reset)(struct lb_ctx *c);
	/* Writer process: attach; NULL with @err set on failure. */
	void *(*open)(const char *arg, char *err, size_t errlen);
	/* Write one record. Thread-safe. Returns the bytes put on the wire
	 * (what the collector counts with LB_SINK_BYTES), or -errno. */
	long (*write)(void *w, const struct lb_msg *m);
	/* Writer process: detach, after in-process queues have drained. */
	void (*close)(void *w);
	/* Parent: records (or bytes) the collector has consumed so far;
	 * NULL means use c->sink, and no sink means nothing to wait for. */
	int64_t (*consumed)(struct lb_ctx *c);
};

extern const struct lb_contender lb_shmlog_default, lb_shmlog_realtime,
    lb_shmlog_coarse, lb_shmlog_printf, lb_shmlog_vsnprintf, lb_seed, lb_kmsg, lb_syslog, lb_logd, lb_file_write,
    lb_file_stdio, lb_pipe, lb_mqueue, lb_spdlog;
/* Not in the list, shmlog's yardsticks in the scaling part: the floor of
 * a record run as a writer, not a logger (contenders/floor.c), and shmlog
 * with each writer process on a buffer of its own (contenders/shmlog.c). */
extern const struct lb_contender lb_floor, lb_shmlog_own;

/* ---- contender helpers (contenders/common.c) ---- */
/* Make c->dir: a fresh directory under the scratch dir. */
int lb_make_dir(struct lb_ctx *c);
/* Remove c->dir and what is in it (one level). */
void lb_remove_dir(struct lb_ctx *c);
/* Scratch directory for files (--dir), and its file system type. */
extern const char *lb_scratch;
/* A zeroed struct lb_sink in memory shared with children. */
struct lb_sink *lb_sink_new(void);
void lb_sink_free(struct lb_sink *s);
/* Fork a collector running fn(arg); it dies with the parent. Returns its
 * pid, or -1 with c->why set. */
pid_t lb_spawn(struct lb_ctx *c, void (*fn)(void *arg), void *arg);
/* Stop and reap a collector. */
void lb_stop(pid_t pid);
/* CPU seconds (user + system, all threads) a live process has used;
 * -1 if unknown. */
/* /proc/<@pid>/stat (@pid a number as text) read into @buf: its fields
 * after the command name (the state first), or NULL. */
const char *lb_proc_stat(const char *pid, char *buf, size_t len);
double lb_proc_cpu_s(pid_t pid);

/* ---- the harness (run.c) ---- */
struct lb_config {
	double dur_s;  /* measured time of one run */
	double warm_s; /* warm-up before it */
	int reps;      /* runs per figure; the median is reported */
	int batch;     /* calls per timed batch */
	bool quick;
	bool strace;
};

/* What one run produced, summed over its writers. */
struct lb_result {
	bool ok;
	char err[200];
	int writers;
	uint64_t recs, bytes, errs;
	double wall_s;	   /* go to the last writer's end */
	double e2e_s;	   /* go to everything consumed (collector drained) */
	double cpu_s;	   /* writer processes, all threads, incl. close() */
	double coll_cpu_s; /* collector or daemon, same interval */
	long minflt, majflt, nvcsw, nivcsw;
	double delivered;	/* consumed / sent, 1 if nothing to consume */
	struct bench_hist hist; /* per-call ns from batch means */
};

/* Run @c with @procs processes of @threads writers each on @w. */
void lb_run(struct lb_ctx *c, const struct lb_work *w,
	    const struct lb_config *cfg, int procs, int threads,
	    struct lb_result *res);

/* Syscalls per record of one writer of @c: the difference of two runs of
 * the internal writer under strace, so that start-up cancels out. Returns
 * -1 if strace is missing or failed. */
double lb_syscalls_per_rec(struct lb_ctx *c, const struct lb_config *cfg);

/* The hidden sub-mode that lb_syscalls_per_rec() runs under strace. */
int lb_internal_writer(int argc, char **argv);

/* ---- is every CPU at its full speed? (core.c) ---- */
/* A probe within this of the best seen is at full speed. */
#define LB_CORE_FULL 1.12
/* A contended probe that ran less than this of its wall time shared its
 * CPU with another process; one that ran all of it, slowly, ran beside a
 * neighbour this guest cannot see. */
#define LB_CORE_SHARED 0.9
#define LB_CORE_POLL_MS 60	    /* re-probe while waiting */
#define LB_CORE_WAIT_S 2.0	    /* at most, before one run */
#define LB_CORE_BUDGET_S 30.0	    /* at most, over a part */
#define LB_CORE_WAIT_QUICK_S 0.1    /* the same for --quick */
#define LB_CORE_BUDGET_QUICK_S 0.2
#define LB_CORE_MAX_CPUS 64
/* What the probes said around the runs (or rounds) of one part. */
struct lb_core {
	int runs;    /* runs that waited for full speed (or would have) */
	int at_once; /* every CPU at full speed at the first probe */
	int waited;  /* ... after waiting */
	int before;  /* still contended when the wait ended: run anyway */
	int after;   /* a CPU contended at the probe after the run */
	/* of before and after: a CPU shared with another process (the probe
	 * got < 90 % of its wall time), not a neighbour outside the guest */
	int before_shared, after_shared;
	int waits;   /* runs that waited */
	double wait_s; /* time spent waiting */
	double worst_before, worst_after; /* slowest CPU, x its best */
	int rounds, rounds_full; /* the breakdown: rounds, at full speed */
};
/* false (--no-wait-core): probe and count, never wait */
extern bool lb_core_waits;
/* Is the probe measured here (x86-64)? */
bool lb_core_measured(void);
/* Ticks an iteration of the probe on the calling thread's CPU (the best
 * updated); NaN where not measured. The share of the probe's wall time
 * the thread ran into @share (if given). */
double lb_core_probe_here(double *share);
/* The fewest ticks an iteration seen in this process; inf before any. */
double lb_core_best(void);
/* @ticks as a multiple of the best; NaN if unknown. */
double lb_core_slowdown(double ticks);
/* Probe every CPU this process may run on, a pinned thread each, all at
 * once (@at_once) or in turn; each one's slowdown into @each (if given),
 * their count into @ncpu, the least share of its wall time a probe ran
 * into @share; returns the slowest's (NaN: not measured). */
double lb_core_probe_all(bool at_once, double *each, int *ncpu,
			 double *share);
/* Before a timed run: wait (bounded) until every CPU is at full speed;
 * @together: probed all at once (a run of several busy writers), not in
 * turn (one: the others idle). */
void lb_core_wait(struct lb_core *c, bool quick, bool together);
/* The same for the calling thread's CPU alone, starting from its probe
 * @s (NaN: probe first); returns the last probe's slowdown (NaN where
 * not measured). */
double lb_core_wait_here(struct lb_core *c, bool quick, double s,
			 double share);
/* Count a probe after a run (or round): its slowdown @s, @share. */
void lb_core_count_after(struct lb_core *c, double s, double share);
/* After it: count a CPU found contended (@together as for the wait). */
void lb_core_after(struct lb_core *c, bool together);
/* Two lines for a part: how many runs started at full speed, waits. */
void lb_core_print(FILE *f, const char *what, const struct lb_core *c);

/* ---- shmlog's archiver behind one writer (archive.c) ---- */
/* One more full-speed run, another way. */
struct lb_archive_variant {
	bool ok;
	char why[80]; /* not ok: what failed, if it was run */
	uint64_t written, kept, lost;
	double rps; /* records kept per second, first write to last
		     * archive write */
	double writer_rps; /* the writer's rate */
	double start_cpu_ns; /* the archiver's, before the first write */
	double cpu_ns_per_rec; /* the archiver's user + system, from the
				* first write to the last record archived */
	double bytes_per_rec; /* of the archive's files */
};
/* One sweep for the keep-all rate: paced runs, each faster than the one
 * before, until one loses a record. */
struct lb_archive_sweep {
	double rps; /* the fastest writer whose every record was kept (0:
		     * none) */
	double cpu_ns_per_rec, bytes_per_rec; /* the archiver's there */
	double next_rps; /* the pace after it, which lost (0: none did) */
	uint64_t next_lost; /* in its last run */
	int retried; /* paces kept whole in their second run */
};
#define LB_ARC_SWEEPS 3
struct lb_archive {
	bool ok;
	char why[200];
	int runs;
	/* keep-all: the fastest writer, paced at steps of the writer's rate
	 * alone, whose every record the archive kept (the median of
	 * `sweeps` sweeps) */
	int sweeps;
	struct lb_archive_sweep sweep[LB_ARC_SWEEPS];
	uint64_t keep_written; /* records a run of a sweep */
	uint64_t keep_buffer_bytes;
	double keep_step; /* a sweep's step, in the writer's rate alone */
	int keep_tries; /* runs at most at a pace */
	double keep_rps; /* median of the sweeps' rates */
	double cpu_ns_per_rec; /* the archiver's user + system per record,
				* from the first write to the last record
				* archived, at the keep-all rate (median) */
	double bytes_per_rec; /* of the archive's files, there */
	double writer_alone_rps; /* the same writer, nobody reading */
	/* full speed: n records as fast as the writer goes, the archiver
	 * following and losing what it cannot read in time */
	uint64_t full_written, full_kept, full_lost; /* the best run's */
	double full_rps; /* records kept per second, first write to last
			  * archive write (median) */
	double full_writer_rps; /* the writer's rate in that run */
	double full_cpu_ns_per_rec, full_bytes_per_rec;
	double start_cpu_ns; /* what it spent before: starting */
	/* a writer paced at paced_target_rps into a paced_buffer_bytes
	 * buffer */
	bool paced_ok;
	double paced_target_rps, paced_writer_rps;
	uint64_t paced_buffer_bytes, paced_written, paced_lost;
	double paced_cpu_ns_per_rec; /* the archiver's, as cpu_ns_per_rec */
	double disk_bytes_per_s; /* 1 MiB write(2)s and an fdatasync */
	/* full speed again, one run each: with two writer processes at full
	 * speed, half of the records each (their records are coded one by
	 * one); with `shmlog archive --compact`; with `--as-stored`; with
	 * `--zstd` (not run by a shmlog built without zstd) */
	struct lb_archive_variant two, compact, as_stored, zstd;
};
void lb_archive_run(const struct lb_config *cfg, struct lb_archive *a);

/* ---- shmlog's readers (readers.c) ---- */
struct lb_readers {
	bool ok;
	char why[200];
	double dump_raw_rps, dump_threadtime_rps, dump_json_rps;
	uint64_t dump_recs;
	struct bench_hist follow; /* write call to the follower having it */
	double follow_p50, follow_p99;
	double alone_rps, followed_rps; /* one writer without/with follower */
	double alone_p99, followed_p99;
	double alone_cpu_ns, followed_cpu_ns; /* writer CPU per record */
	double follower_cpu_ns_per_rec;
	/* the p99 ratio of each alone/followed pair: fewest, most; the
	 * writer's wake-ups of the follower (FUTEX_WAKE) a second, followed */
	int fc_pairs;
	double fc_ratio_min, fc_ratio_max, fc_wakes_per_s;
	/* a follower formatting threadtime into a file behind one writer
	 * paced at paced_target_rps (records/s) */
	bool paced_ok;
	int paced_runs;
	uint64_t paced_buffer_bytes;
	double paced_target_rps, paced_writer_rps; /* asked, achieved */
	uint64_t paced_written, paced_shown; /* over all runs */
	uint64_t paced_reported_lost; /* as the reader reported them */
	double paced_lag_p50, paced_lag_p99, paced_lag_max; /* ns */
	double paced_follower_cpu_s; /* over all runs */
	/* the core-speed probes around the alone/followed runs */
	struct lb_core core;
	struct lb_archive archive; /* `shmlog archive` behind one writer */
};
void lb_readers_run(const struct lb_config *cfg, struct lb_readers *r);

/* ---- what the clocks and primitives cost here (clocks.c) ---- */
struct lb_clocks {
	double rdtsc_ns, realtime_ns, coarse_ns, gettimeofday_ns;
	double sem_pair_ns, atomic_add_ns; /* sem_wait+sem_post, fetch-add */
};
void lb_clock_costs(struct lb_clocks *c);

/* ---- where a constant-message call's time goes (breakdown.c) ---- */
struct lb_breakdown {
	bool ok;
	char why[200];
	int clock; /* the buffer's clock, enum shmlog_clock */
	double record_bytes; /* a record's bytes: header, tag, message, pad */
	double clock_ns; /* the clock read alone */
	double floor_ns; /* clock read + copy of the record into a ring */
	double filtered_ns; /* shmlog_write_n() that the filter drops */
	double write_ns; /* shmlog_write_n() */
	int rounds, rounds_kept; /* rounds run, at full speed (medians of) */
	/* the printf-style call of shmlog-printf (three values, formatted by
	 * the reader) beside the floor of the record it writes */
	double printf_record_bytes;
	double printf_floor_ns;
	double printf_ns;
	/* shmlog_print() with the same format and values (vsnprintf in the
	 * caller), by the same loop as printf_ns */
	double print_ns;
	/* the call of printf_ns compiled as C++ (breakdown_cxx.cc), by the
	 * same loop; NaN without a C++ compiler */
	double printf_cxx_ns;
	/* printf_cxx_ns / printf_ns round by round, the median of those */
	double printf_cxx_x;
	/* instructions a call of printf_ns's loop and of printf_cxx_ns's,
	 * by callgrind; NaN where not counted */
	double printf_ir, printf_cxx_ir;
	/* the core-speed probes around the rounds (and the wait before) */
	struct lb_core core;
};
/* Measure it with private buffers of the library's default size; @quick:
 * the --quick wait budget. */
void lb_breakdown_run(struct lb_breakdown *b, const struct lb_work *w,
		      bool quick);
void lb_breakdown_print(FILE *f, const struct lb_breakdown *b);

/* ---- the contenders, in table order (registry.c) ---- */
extern const struct lb_contender *const lb_contenders[];
extern const int lb_n_contenders;
/* The contender called @name, or NULL. */
const struct lb_contender *lb_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif
