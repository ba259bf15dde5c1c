/* SPDX-License-Identifier: MIT */
/*
 * History kept: how much of its own recent output each writer still finds
 * in a buffer of the library's default size and lanes (the buffer the
 * shmlog contender writes), with 1, 2 and 8 writer threads, one of them
 * flooding:
 *   - the flooder writes 10 x capacity, half while the others write 1.5 x
 *     their fair share (capacity / N), half after they are done, so the
 *     end of the flood is newer than every record of theirs;
 *   - every writer then holds on to its place (a thread that exits gives up
 *     its lane) until a reader has counted, per writer (by tid), the bytes
 *     of its records still readable: kept_record_bytes() of each
 *     (common/kept.h: 40-byte header + tag + message, padded to 8).
 * Reported as shares of the buffer's capacity (shmlog_info.capacity): the
 * smallest among the writers that do not flood, and the flooder's; with
 * one writer, the lone writer's. Next to them, the flood's write cost in
 * the same run: ns per record of its second half, written alone on a full
 * ring. tests/hardening/test_capacity.c holds the same figures to bounds.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kept.h"
#include "plan.h"

#include "shmlog.h"

const int lb_history_writers[LB_N_HISTORY] = {1, 2, 8};

#define FLOOD_X 10     /* the flood, in capacities */
#define OTHERS_X 1.5   /* what each other writer writes, in fair shares */
#define MAX_HK_WRITERS 8

struct hk_writer {
	const struct lb_work *w;
	uint64_t target[2]; /* bytes of history to write in each phase */
	pid_t tid;
	uint64_t recs[2], bytes[2], ns[2], errs;
	uint64_t kept; /* bytes of history a reader found */
};

struct hk_run {
	shmlog_t *h;
	/* held while the threads are started: if one cannot be, the others
	 * see @abort and return before the first barrier */
	pthread_mutex_t gate;
	bool abort;
	pthread_barrier_t bar; /* the writers and the measuring thread */
	struct hk_writer wr[MAX_HK_WRITERS];
	int n;
};

static void hk_phase(struct hk_run *run, struct hk_writer *me, int p)
{
	uint64_t i = 0, bytes = 0, t0 = bench_now_ns();
	while (bytes < me->target[p]) {
		const struct lb_msg *m = &me->w->m[i++ % LB_WORK_N];
		if (shmlog_write_n(run->h, m->prio, m->tag, m->msg, m->len)) {
			me->errs++; /* shown with the figures, which are void */
			break;
		}
		bytes += kept_record_bytes(m->tag_len, m->len);
		me->recs[p]++;
	}
	me->ns[p] = bench_now_ns() - t0;
	me->bytes[p] = bytes;
}

struct hk_arg {
	struct hk_run *run;
	struct hk_writer *me;
};

/* gate, phase 0, barrier, phase 1, barrier: measured; barrier: released */
static void *hk_thread(void *p)
{
	struct hk_arg *a = p;
	a->me->tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&a->run->gate);
	bool abort = a->run->abort;
	pthread_mutex_unlock(&a->run->gate);
	if (abort)
		return NULL;
	hk_phase(a->run, a->me, 0);
	pthread_barrier_wait(&a->run->bar);
	hk_phase(a->run, a->me, 1);
	pthread_barrier_wait(&a->run->bar);
	pthread_barrier_wait(&a->run->bar);
	return NULL;
}

/* Add up the history each writer of @run still has in buffer @name. */
static int hk_count(const char *name, struct hk_run *run)
{
	shmlog_reader_t *rd;
	struct shmlog_record rec;
	struct shmlog_lost lost;
	int ev;
	if (shmlog_reader_open(name, 0, &rd) < 0)
		return -1;
	while ((ev = shmlog_reader_next(rd, &rec, &lost)) > 0) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		for (int k = 0; k < run->n; k++)
			if ((uint32_t)run->wr[k].tid == rec.tid) {
				run->wr[k].kept += kept_record_bytes(
				    rec.tag_len, rec.msg_len);
				break;
			}
	}
	shmlog_reader_close(rd);
	return ev < 0 ? -1 : 0;
}

/* One run with @n writers, writer 0 flooding, on a fresh buffer; fills
 * @row with its figures. Returns 0, or -1 with @why set. */
static int hk_run_once(int n, const struct lb_work *w, struct lb_history *hs,
		       struct lb_history_row *row, char *why, size_t whylen)
{
	static struct hk_run run;
	struct shmlog_info info;
	pthread_t thr[MAX_HK_WRITERS];
	struct hk_arg args[MAX_HK_WRITERS];
	char name[64];
	int started = 0, err = -1;

	snprintf(name, sizeof(name), "bench-%d-history", (int)getpid());
	shmlog_remove(name); /* a leftover of a killed run */
	if (shmlog_create(name, NULL) < 0 || shmlog_stat(name, &info) < 0 ||
	    shmlog_open(name, 0, &run.h) < 0) {
		snprintf(why, whylen, "cannot create and open %s", name);
		shmlog_remove(name);
		return -1;
	}
	hs->capacity = info.capacity;
	hs->lanes = info.lanes;
	memset(run.wr, 0, sizeof(run.wr));
	run.n = n;
	uint64_t share = info.capacity / (uint64_t)n;
	for (int k = 0; k < n; k++) {
		run.wr[k].w = w;
		if (k == 0) {
			run.wr[k].target[0] = FLOOD_X * info.capacity / 2;
			run.wr[k].target[1] = FLOOD_X * info.capacity / 2;
		} else {
			run.wr[k].target[0] =
			    (uint64_t)(OTHERS_X * (double)share);
		}
	}
	pthread_barrier_init(&run.bar, NULL, (unsigned)n + 1);
	pthread_mutex_init(&run.gate, NULL);
	pthread_mutex_lock(&run.gate);
	run.abort = false;
	for (; started < n; started++) {
		args[started] = (struct hk_arg){&run, &run.wr[started]};
		if (pthread_create(&thr[started], NULL, hk_thread,
				   &args[started]))
			break;
	}
	run.abort = started < n;
	pthread_mutex_unlock(&run.gate); /* go */
	if (started == n) {
		pthread_barrier_wait(&run.bar); /* the others are done */
		pthread_barrier_wait(&run.bar); /* the flood is done */
		err = hk_count(name, &run);	/* all of them holding on */
		pthread_barrier_wait(&run.bar); /* let them go */
		if (err)
			snprintf(why, whylen, "cannot read %s", name);
	} else {
		snprintf(why, whylen, "cannot start %d writer threads", n);
	}
	for (int k = 0; k < started; k++)
		pthread_join(thr[k], NULL);
	pthread_barrier_destroy(&run.bar);
	pthread_mutex_destroy(&run.gate);
	shmlog_close(run.h);
	shmlog_remove(name);
	if (err)
		return -1;

	double cap = (double)info.capacity;
	row->writers = n;
	row->fair_share = 1.0 / n;
	row->others_min = n > 1 ? INFINITY : NAN;
	for (int k = 1; k < n; k++)
		if ((double)run.wr[k].kept / cap < row->others_min)
			row->others_min = (double)run.wr[k].kept / cap;
	row->flooder = (double)run.wr[0].kept / cap;
	const struct hk_writer *fl = &run.wr[0];
	row->flood_ns =
	    fl->recs[1] ? (double)fl->ns[1] / (double)fl->recs[1] : NAN;
	for (int k = 0; k < n; k++)
		row->errs += run.wr[k].errs;
	return 0;
}

void lb_history_run(const struct lb_config *cfg, struct lb_history *hs)
{
	struct lb_work w;
	lb_work_seed(&w);
	memset(hs, 0, sizeof(*hs));
	hs->flood_x = FLOOD_X;
	hs->others_x = OTHERS_X;
	int reps = cfg->quick ? 1 : 3;
	for (int i = 0; i < LB_N_HISTORY; i++) {
		struct lb_history_row *row = &hs->rows[i];
		double ns[3];
		for (int rep = 0; rep < reps; rep++) {
			struct lb_history_row one = {0};
			if (hk_run_once(lb_history_writers[i], &w, hs, &one,
					hs->why, sizeof(hs->why)) < 0)
				return;
			/* the worst of the runs for what is kept, the
			 * median for the cost */
			if (rep == 0 || one.others_min < row->others_min)
				row->others_min = one.others_min;
			if (rep == 0 || one.flooder < row->flooder)
				row->flooder = one.flooder;
			row->writers = one.writers;
			row->fair_share = one.fair_share;
			row->errs += one.errs;
			ns[rep] = one.flood_ns;
		}
		row->flood_ns = bench_median(ns, reps);
	}
	hs->ok = true;
}
