/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of shmlog-bench: clocks, latency histograms, resource
 * usage, the machine description and a tiny JSON writer. Every subcommand
 * (log, ipc, disabled, eventloop) reports through these so that the figures
 * of one run are comparable and printed with the conditions they came from.
 */
#ifndef SHMLOG_BENCH_H
#define SHMLOG_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "jsonw.h"

/* ---- time ---- */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The cost in ns of one bench_now_ns() call at full speed (the lowest of
 * 15 means of 20,000 back-to-back calls), measured now. Report it next to
 * any per-call latency: it is part of every sample. */
double bench_timer_cost_ns(void);

/* ---- histogram: log-linear buckets, ~1.6% relative error, 1 ns..~1 min ---- */
#define BENCH_HIST_SUB 64 /* sub-buckets per power of two */
#define BENCH_HIST_POW 36
struct bench_hist {
	uint64_t count;
	uint64_t min, max;
	double sum;
	uint64_t bucket[BENCH_HIST_POW * BENCH_HIST_SUB];
};
void bench_hist_init(struct bench_hist *h);
void bench_hist_add(struct bench_hist *h, uint64_t ns);
void bench_hist_merge(struct bench_hist *into, const struct bench_hist *from);
/* Value at quantile q in [0,1] (e.g. 0.99); 0 if empty. */
uint64_t bench_hist_quantile(const struct bench_hist *h, double q);
double bench_hist_mean(const struct bench_hist *h);

/* Median of an array of doubles (sorted in place). */
double bench_median(double *v, int n);

/* ---- resource usage ---- */
struct bench_usage {
	uint64_t wall_ns;
	double user_s, sys_s;
	long minflt, majflt, nvcsw, nivcsw;
};
/* who: RUSAGE_SELF, RUSAGE_THREAD or RUSAGE_CHILDREN. */
void bench_usage_now(struct bench_usage *u, int who);
/* b - a, field by field */
struct bench_usage bench_usage_diff(const struct bench_usage *a,
				   const struct bench_usage *b);

/* Syscalls per record are counted by re-running a contender under strace:
 * run @argv under `strace -f -c` and return the total number of syscalls
 * it made (all processes), or -1 if strace is missing or failed. */
long bench_strace_count(char *const argv[]);

/* ---- machine description ---- */
struct bench_machine {
	char cpu_model[128];
	int cores;
	char kernel[200];
	char clocksource[64];
	char date[64]; /* UTC, ISO 8601 */
	char git_commit[48];
	char hostname[72];
	/* "a KVM guest", "a virtual machine", or "" on bare metal: a VM's
	 * figures include its hypervisor, and a reader should know */
	char hypervisor[32];
};
void bench_machine_get(struct bench_machine *m);
/* Print "machine: ..." lines, each prefixed by @prefix ("# " for tables). */
void bench_machine_print(FILE *f, const struct bench_machine *m,
			 const char *prefix);

/* ---- JSON output: bench/common/jsonw.h, one document per file ---- */
/* Open @path and start {"bench": @bench, "machine": {...}, ...; then write
 * members with jsonw_*(). NULL path or failure: false, nothing to close. */
bool bench_json_open(struct jsonw *j, const char *path, const char *bench,
		     const struct bench_machine *m);
/* Close the document and the file; 0 or -errno if writing failed. */
int bench_json_close(struct jsonw *j);

/* ---- numbers a user reads ---- */
/* @v with an SI prefix and three significant digits into @buf:
 * (23033800, "") -> "23.0 M", (1.313e9, "B/s") -> "1.31 GB/s",
 * (42, "ns") -> "42.0 ns". Returns @buf; "n/a" for NaN or negative. */
const char *bench_eng(char *buf, size_t len, double v, const char *unit);
/* A duration in ns in the unit that reads best: "42 ns", "1.13 us",
 * "12.0 ms". Returns @buf; "n/a" for NaN or negative. */
const char *bench_dur(char *buf, size_t len, double ns);

/* ---- misc ---- */
/* Pin the calling thread to CPU @cpu (-1: no-op). Returns 0 or -errno. */
int bench_pin_cpu(int cpu);
/* Parse "64", "4K", "1M" into bytes; -1 on error. */
long long bench_parse_size(const char *s);

#endif
