/* SPDX-License-Identifier: MIT */
/*
 * Where the time of a constant-message call goes, beside its floor: a
 * log record cannot cost less than reading the clock once and copying its
 * bytes somewhere. Measured in this process, one thread, the 2012 LKML
 * shared-memory logger RFC's 16 sample messages in turn, each step in a
 * loop of its own timed in this thread's CPU time, the steps taking turns
 * rep by rep so that drift in the machine's speed touches all of them
 * alike:
 *
 *   clock     the buffer's clock read alone (rdtsc for the default TSC)
 *   floor     that read, and a copy of the record's bytes (a 40-byte
 *             header holding the time, the tag, the message, padded to 8)
 *             into a private ring of the buffer's capacity: what any
 *             logger that stores a timestamped record must do
 *   filtered  shmlog_write_n() into a buffer whose filter drops every
 *             record, by a thread that holds a lane in it: the call, its
 *             argument checks and the filter check, with no clock read,
 *             no copy and no look at the tag
 *   write     shmlog_write_n(): all of it
 *
 * and the same for the printf-style call of the shmlog-printf contender
 * (SHMLOG_LOG_TO with three values, formatted by the reader: the
 * format's id and the values stored):
 *
 *   printf floor  the clock read and a copy of the record that call
 *                 writes (the header, the tag, the 4-byte id and the
 *                 values as the argument block holds them)
 *   printf        the call, as the macro expands it
 *   printf C++    the same call site compiled as C++ (breakdown_cxx.cc:
 *                 the values' types told by templates, not _Generic),
 *                 in the same loop: it must cost what the C call costs.
 *                 Both loops' instructions a call are also counted under
 *                 callgrind (when valgrind is installed), in runs of
 *                 their own (--internal-printf-loop)
 *   shmlog_print  the same call through shmlog_print() (the
 *                 shmlog-vsnprintf contender's: vsnprintf in the caller,
 *                 the text stored), in the same driver loop, so that the
 *                 two calls' ratio leaves out what the main table's loop
 *                 adds to each (the call through the contender, the
 *                 message's pick, the clock read per batch); a tenth as
 *                 many calls, each about ten times as long, so that the
 *                 step lasts about as long as the others
 *
 * The steps do not add up exactly: a CPU runs independent work side by
 * side (a copy overlaps the clock read), so each row is what the work up
 * to it costs, not a slice of the last.
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../filter/callgrind.h"
#include "breakdown.h"
#include "floor.h"
#include "log.h"

#include "shmlog.h"

/* Rounds (one loop of each step): at least BD_MIN_ROUNDS, about 0.3 s,
 * and BD_REPS of them at full speed, in at most BD_MAX_ROUNDS. */
enum {
	BD_REPS = 21,
	BD_MIN_ROUNDS = 6 * BD_REPS,
	BD_MAX_ROUNDS = 20 * BD_REPS,
	BD_N_PRINT = BD_N / 10, /* shmlog_print()'s calls a loop */
	BD_STEPS = 8, /* clock, floor, filtered, write, printf floor, printf,
		       * shmlog_print, printf from C++ */
	BD_HDR = LB_FLOOR_HDR
};
/* A round counts if the core-speed probes (core.c) just before and just
 * after it found this CPU at its full speed, and its floor is within this
 * of the fastest such round's. On a shared host a neighbour (beyond what
 * a virtual machine can see) on the host core's other hardware thread
 * slows code that issues several instructions a cycle (shmlog's calls,
 * the probe), but not the clock read, so the floor barely moves: the
 * probe is what sees that neighbour. The floor test stays
 * beside it for what does slow loads and stores (a neighbour sharing the
 * caches or memory). While the probe finds the CPU contended, the next
 * round waits (lb_core_wait_here(), as a run of the plan waits) instead
 * of running; the steps of a round see the same state, so
 * rounds are kept or left whole. */
#define BD_FULL_SPEED 1.10

static volatile uint64_t bd_sink;

/* This thread's CPU time: what a loop costs, not the time other
 * processes held the CPU meanwhile (on a shared machine, most of it). */
uint64_t lb_bd_cpu_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double loop_clock(int clock)
{
	uint64_t acc = 0, t0 = lb_bd_cpu_now_ns();
	for (int i = 0; i < BD_N; i++)
		acc += lb_clock_read(clock);
	double ns = (double)(lb_bd_cpu_now_ns() - t0) / BD_N;
	bd_sink += acc;
	return ns;
}

/* The floor: the clock, then the record's bytes appended to @ring. */
static double loop_floor(int clock, const struct lb_work *w,
			 unsigned char *ring, size_t cap)
{
	unsigned char hdr[BD_HDR] = {0};
	size_t pos = 0;
	uint64_t t0 = lb_bd_cpu_now_ns();
	for (int i = 0; i < BD_N; i++)
		lb_floor_append(clock, hdr, &w->m[i % LB_WORK_N], ring, cap,
				&pos);
	double ns = (double)(lb_bd_cpu_now_ns() - t0) / BD_N;
	bd_sink += ring[pos / 2];
	return ns;
}

/* The bytes of the argument block of the shmlog-printf contender's call
 * (breakdown.h): the format's id (4), then each value's class byte and
 * its bytes: an int (4), a string (its 2-byte length and its bytes), a
 * double (8). */
enum { BD_PRINTF_BLOCK = 4 + (1 + 4) + (1 + 2 + 8) + (1 + 8) };
_Static_assert(sizeof(BD_PRINTF_STR) - 1 == 8, "the block's string");

static double loop_printf_floor(int clock, const struct lb_work *w,
				unsigned char *ring, size_t cap)
{
	unsigned char hdr[BD_HDR] = {0};
	static const unsigned char blk[BD_PRINTF_BLOCK] = {1};
	size_t pos = 0;
	uint64_t t0 = lb_bd_cpu_now_ns();
	for (int i = 0; i < BD_N; i++) {
		const struct lb_msg *m = &w->m[i % LB_WORK_N];
		uint64_t now = lb_clock_read(clock);
		size_t len = (BD_HDR + m->tag_len + BD_PRINTF_BLOCK + 7) &
			     ~(size_t)7;
		if (cap - pos < len)
			pos = 0;
		memcpy(hdr + 16, &now, sizeof(now));
		memcpy(ring + pos, hdr, BD_HDR);
		memcpy(ring + pos + BD_HDR, m->tag, m->tag_len);
		memcpy(ring + pos + BD_HDR + m->tag_len, blk, BD_PRINTF_BLOCK);
		pos += len;
	}
	double ns = (double)(lb_bd_cpu_now_ns() - t0) / BD_N;
	bd_sink += ring[pos / 2];
	return ns;
}

double lb_bd_loop_printf_c(shmlog_t *h, const struct lb_work *w, long *errs)
{
	BD_TIMED_LOOP(BD_N, w, errs, BD_PRINTF_CALL(e, h, m));
}

/* The same call as lb_bd_loop_printf_c()'s, by shmlog_print(). */
static double loop_print(shmlog_t *h, const struct lb_work *w, long *errs)
{
	BD_TIMED_LOOP(BD_N_PRINT, w, errs,
		      e = shmlog_print(h, m->prio, m->tag, BD_PRINTF_FMT,
				       (int)m->len, BD_PRINTF_STR,
				       (double)m->len * 0.125));
}

static double loop_write(shmlog_t *h, const struct lb_work *w, long *errs)
{
	BD_TIMED_LOOP(BD_N, w, errs,
		      e = shmlog_write_n(h, m->prio, m->tag, m->msg, m->len));
}

/* Copy the rounds of @v (of @n) that the probes found at full speed
 * (@fast; all of them if none was) and whose floor is within
 * BD_FULL_SPEED of the fastest of those into @kept; returns how many. */
static int full_speed(double v[BD_STEPS][BD_MAX_ROUNDS], const bool *fast,
		      int n, double kept[BD_STEPS][BD_MAX_ROUNDS])
{
	bool any = false;
	for (int i = 0; i < n; i++)
		any |= fast[i];
	double best = INFINITY;
	for (int i = 0; i < n; i++)
		if ((fast[i] || !any) && v[1][i] < best)
			best = v[1][i];
	int k = 0;
	for (int i = 0; i < n; i++) {
		if ((!fast[i] && any) || v[1][i] > best * BD_FULL_SPEED)
			continue;
		for (int s = 0; s < BD_STEPS; s++)
			kept[s][k] = v[s][i];
		k++;
	}
	return k;
}

/* Pin this thread to the CPU it is on; the old mask into @was. */
static bool pin_here(cpu_set_t *was)
{
	int cpu = sched_getcpu();
	cpu_set_t one;
	if (cpu < 0 || sched_getaffinity(0, sizeof(*was), was) != 0)
		return false;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one) == 0;
}

static int make_buffer(char *name, size_t len, const char *suffix,
		       const char *filter, shmlog_t **h, char *why,
		       size_t whylen)
{
	snprintf(name, len, "bench-%d-%s", (int)getpid(), suffix);
	shmlog_remove(name); /* a leftover of a killed run */
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	int err = shmlog_create(name, &o);
	if (!err)
		err = shmlog_open(name, 0, h);
	/* a record first: the thread holds a lane from then on, as any
	 * thread that logged before a filter silenced its records does */
	if (!err && filter)
		err = shmlog_write(*h, SHMLOG_INFO, "bench", "before the filter");
	if (!err && filter)
		err = shmlog_set_filter(name, filter, NULL);
	if (err && *h) {
		shmlog_close(*h);
		*h = NULL;
	}
	if (err) {
		snprintf(why, whylen, "buffer %s: %s", name,
			 shmlog_strerror(err));
		shmlog_remove(name);
		return -1;
	}
	return 0;
}

/* ---- instruction counts of the printf-style call, C and C++ ---- */

int lb_bd_internal_printf(int argc, char **argv)
{
	/* argv: log --internal-printf-loop c|cxx LOOPS */
	bool cxx = argc >= 4 && !strcmp(argv[2], "cxx");
	int loops = argc >= 4 ? atoi(argv[3]) : 0;
	if (argc < 4 || (!cxx && strcmp(argv[2], "c")) || loops < 1 ||
	    loops > 100) {
		fprintf(stderr, "shmlog-bench log: --internal-printf-loop "
				"wants c or cxx and 1 to 100 loops\n");
		return 1;
	}
	struct lb_work w;
	lb_work_seed(&w);
	char name[64], why[200];
	shmlog_t *h = NULL;
	if (make_buffer(name, sizeof(name), "bd-count", NULL, &h, why,
			sizeof(why)) < 0) {
		fprintf(stderr, "shmlog-bench log: %s\n", why);
		return 1;
	}
	long errs = 0;
	for (int i = 0; i < loops; i++)
		(cxx ? lb_bd_loop_printf_cxx : lb_bd_loop_printf_c)(h, &w,
								    &errs);
	shmlog_close(h);
	shmlog_remove(name);
	if (errs)
		fprintf(stderr, "shmlog-bench log: %ld calls failed\n", errs);
	return errs ? 1 : 0;
}

/* Instructions a call of the loop of @lang ("c" or "cxx"), by callgrind:
 * runs of 1 and 3 loops, the difference over the calls it adds, so that
 * the set-up and the site's first call cancel. NaN if valgrind is
 * missing or a run failed. */
static double count_printf(const char *lang)
{
	const char *func = strcmp(lang, "c") ? "lb_bd_loop_printf_cxx"
					     : "lb_bd_loop_printf_c";
	int64_t cnt[2];
	static char *const loops[2] = {"1", "3"};
	for (int i = 0; i < 2; i++) {
		char *args[] = {"log", "--internal-printf-loop", (char *)lang,
				loops[i], NULL};
		cnt[i] = fb_callgrind_count(func, args);
		if (cnt[i] < 0)
			return NAN;
	}
	return (double)(cnt[1] - cnt[0]) / (2.0 * BD_N);
}

void lb_breakdown_run(struct lb_breakdown *b, const struct lb_work *w,
		      bool quick)
{
	memset(b, 0, sizeof(*b));
	char name_w[64], name_f[64];
	shmlog_t *hw = NULL, *hf = NULL;
	if (make_buffer(name_w, sizeof(name_w), "bd-write", NULL, &hw, b->why,
			sizeof(b->why)) < 0)
		return;
	if (make_buffer(name_f, sizeof(name_f), "bd-filtered", "*:S", &hf,
			b->why, sizeof(b->why)) < 0) {
		shmlog_close(hw);
		shmlog_remove(name_w);
		return;
	}
	struct shmlog_info info;
	unsigned char *ring = NULL;
	if (shmlog_stat(name_w, &info) == 0)
		ring = calloc(1, info.capacity);
	if (!ring) {
		snprintf(b->why, sizeof(b->why), "no memory for the floor's ring");
		goto out;
	}
	b->clock = info.clock;
	double sum = 0;
	for (int i = 0; i < LB_WORK_N; i++)
		sum += (double)((BD_HDR + w->m[i].tag_len + w->m[i].len + 7) &
				~(size_t)7);
	b->record_bytes = sum / LB_WORK_N;
	sum = 0;
	for (int i = 0; i < LB_WORK_N; i++)
		sum += (double)((BD_HDR + w->m[i].tag_len + BD_PRINTF_BLOCK +
				 7) &
				~(size_t)7);
	b->printf_record_bytes = sum / LB_WORK_N;

	double v[BD_STEPS][BD_MAX_ROUNDS], kept[BD_STEPS][BD_MAX_ROUNDS];
	long errs = 0;
	/* warm-up: lanes claimed, pages resident, caches and predictors
	 * trained */
	loop_floor(b->clock, w, ring, info.capacity);
	loop_write(hw, w, &errs);
	loop_write(hf, w, &errs);
	loop_printf_floor(b->clock, w, ring, info.capacity);
	lb_bd_loop_printf_c(hw, w, &errs);
	loop_print(hw, w, &errs);
	lb_bd_loop_printf_cxx(hw, w, &errs);
	errs = 0;
	int r = 0, k = 0;
	static bool fast[BD_MAX_ROUNDS];
	/* the probes measure the CPU this thread is on: it stays there */
	cpu_set_t was;
	bool pinned = pin_here(&was);
	double pre = lb_core_wait_here(&b->core, quick, NAN, 1);
	while (r < BD_MAX_ROUNDS && (r < BD_MIN_ROUNDS || k < BD_REPS)) {
		v[0][r] = loop_clock(b->clock);
		v[1][r] = loop_floor(b->clock, w, ring, info.capacity);
		v[2][r] = loop_write(hf, w, &errs);
		v[3][r] = loop_write(hw, w, &errs);
		v[4][r] = loop_printf_floor(b->clock, w, ring, info.capacity);
		v[5][r] = lb_bd_loop_printf_c(hw, w, &errs);
		v[6][r] = loop_print(hw, w, &errs);
		v[7][r] = lb_bd_loop_printf_cxx(hw, w, &errs);
		double share = 1;
		double post = lb_core_slowdown(lb_core_probe_here(&share));
		bool pre_ok = !lb_core_measured() || pre <= LB_CORE_FULL;
		bool post_ok = !lb_core_measured() || post <= LB_CORE_FULL;
		lb_core_count_after(&b->core, post, share);
		b->core.rounds_full += fast[r] = pre_ok && post_ok;
		r++;
		k = full_speed(v, fast, r, kept);
		if (r < BD_MAX_ROUNDS && (r < BD_MIN_ROUNDS || k < BD_REPS))
			pre = lb_core_wait_here(&b->core, quick, post, share);
	}
	if (pinned)
		sched_setaffinity(0, sizeof(was), &was);
	b->core.rounds = r;
	b->rounds = r;
	b->rounds_kept = k;
	if (errs) {
		snprintf(b->why, sizeof(b->why),
			 "%ld writes failed: the figures would not be the "
			 "write path's", errs);
		goto out;
	}
	/* the C++ call over the C call round by round, the median of those
	 * (a round runs the two loops back to back, on one CPU): before the
	 * medians below, which sort kept[] in place */
	double x[BD_MAX_ROUNDS];
	for (int i = 0; i < k; i++)
		x[i] = kept[7][i] / kept[5][i];
	b->printf_cxx_x = isnan(kept[7][0]) ? NAN : bench_median(x, k);
	b->clock_ns = bench_median(kept[0], k);
	b->floor_ns = bench_median(kept[1], k);
	b->filtered_ns = bench_median(kept[2], k);
	b->write_ns = bench_median(kept[3], k);
	b->printf_floor_ns = bench_median(kept[4], k);
	b->printf_ns = bench_median(kept[5], k);
	b->print_ns = bench_median(kept[6], k);
	b->printf_cxx_ns = isnan(kept[7][0]) ? NAN : bench_median(kept[7], k);
	b->printf_ir = count_printf("c");
	b->printf_cxx_ir = isnan(b->printf_cxx_ns) ? NAN : count_printf("cxx");
	b->ok = true;
out:
	free(ring);
	shmlog_close(hf);
	shmlog_close(hw);
	shmlog_remove(name_f);
	shmlog_remove(name_w);
}

void lb_breakdown_print(FILE *f, const struct lb_breakdown *b)
{
	fprintf(f, "\n# where a constant-message call goes (shmlog_write_n, "
		   "one thread, the RFC's 16 messages;\n# loops of %d calls "
		   "each in the thread's CPU time, the steps taking turns)\n",
		BD_N);
	if (b->ok)
		fprintf(f,
			"# the median of the %d of %d rounds at the core's full "
			"speed (the probes around\n# the round at full speed, "
			"its floor within %.0f %% of the fastest such round's)\n",
			b->rounds_kept, b->rounds, (BD_FULL_SPEED - 1) * 100);
	if (!b->ok) {
		fprintf(f, "not measured: %s\n", b->why[0] ? b->why
							   : "not selected");
		return;
	}
	static const char *const clocks[] = {"?", "rdtsc", "CLOCK_REALTIME",
					     "CLOCK_MONOTONIC_COARSE"};
	const char *cn = b->clock >= 1 && b->clock <= 3 ? clocks[b->clock] : "?";
	char what[4][64];
	snprintf(what[0], sizeof(what[0]), "clock read (%s)", cn);
	snprintf(what[1], sizeof(what[1]),
		 "floor: clock read + copy of the record (%.0f B)",
		 b->record_bytes);
	snprintf(what[2], sizeof(what[2]),
		 "shmlog_write_n() the filter drops (no clock)");
	snprintf(what[3], sizeof(what[3]), "shmlog_write_n()");
	const double v[4] = {b->clock_ns, b->floor_ns, b->filtered_ns,
			     b->write_ns};
	fprintf(f, "%-51s %7s  %7s\n", "step", "ns/call", "x floor");
	for (int i = 0; i < 4; i++)
		fprintf(f, "%-51s %7.1f  %7.2f\n", what[i], v[i],
			v[i] / b->floor_ns);
	char pf[64];
	snprintf(pf, sizeof(pf),
		 "floor: clock read + copy of the record (%.0f B)",
		 b->printf_record_bytes);
	fprintf(f, "\n# the printf-style call of shmlog-printf (SHMLOG_LOG_TO, "
		   "3 values, formatted by the reader)\n");
	fprintf(f, "%-51s %7.1f  %7.2f\n", pf, b->printf_floor_ns, 1.0);
	fprintf(f, "%-51s %7.1f  %7.2f\n", "SHMLOG_LOG_TO(\"" BD_PRINTF_FMT "\")",
		b->printf_ns, b->printf_ns / b->printf_floor_ns);
	if (!isnan(b->printf_cxx_ns))
		fprintf(f, "%-51s %7.1f  %7.2f\n",
			"the same call site compiled as C++ (templates)",
			b->printf_cxx_ns, b->printf_cxx_ns / b->printf_floor_ns);
	else
		fprintf(f, "%-51s %7s\n",
			"the same call site compiled as C++", "n/a (no C++)");
	fprintf(f, "%-51s %7.1f  %7s\n",
		"shmlog_print(), the same call: vsnprintf, the text",
		b->print_ns, "-");
	fprintf(f, "# shmlog_print() / SHMLOG_LOG_TO: %.2fx (loops of %d "
		   "shmlog_print() calls, in the same turns)\n",
		b->print_ns / b->printf_ns, BD_N_PRINT);
	if (!isnan(b->printf_cxx_ns))
		fprintf(f, "# SHMLOG_LOG_TO from C++ / from C: %.2fx (the "
			   "median of the rounds' ratios)\n",
			b->printf_cxx_x);
	if (!isnan(b->printf_ir))
		fprintf(f, "# instructions a call (callgrind): from C %.1f, "
			   "from C++ %.1f\n",
			b->printf_ir, b->printf_cxx_ir);
	else
		fprintf(f, "# instructions a call: n/a (valgrind missing, or its "
			   "run failed)\n");
}
