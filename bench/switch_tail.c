/* SPDX-License-Identifier: MIT */
/*
 * shmlog-switch-tail: where the per-call tail of `shmlog-bench log` comes
 * from. One thread writes the RFC's sixteen messages into a private
 * buffer with shmlog_write_n(), every call timed as that table times it
 * (CLOCK_MONOTONIC around the call, the timer's median cost subtracted),
 * and each call is sorted by what it did: a chunk switch (the lane's head
 * jumped by more than the record, or the record begins a chunk), the
 * first record after one, a record
 * that crossed into a new page (in its tag and message, whose copies'
 * unaligned 8- and 16-byte stores can straddle the page boundary, or in
 * its header, aligned words), or none of these. It prints the percentiles
 * of each kind, the mean of its calls below its own p90 (the clock steps
 * by about 10 ns on some guests: the mean resolves what the percentiles
 * cannot, and the cut keeps the machine's stalls out of it), and how
 * many calls of each kind lie above the p99.9 of all calls. A
 * developer's tool: it reads the lane's head through the library's
 * internal header. Not installed.
 *
 *   shmlog-switch-tail [CALLS [BUFFER_BYTES]]   (default 3000000, 1 MiB)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "internal.h"
#include "sample_messages.h"
#include "shmlog.h"

#define WARM 200000L
#define CALLS_MAX 20000000L

enum kind { K_SWITCH, K_AFTER, K_PAGE_MSG, K_PAGE_HDR, K_OTHER, K_N };
static const char *const kind_name[K_N] = {
	"switch", "after a switch", "new page, msg", "new page, hdr", "other"};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* the @p quantile of the sorted @v[@n], less the timer's @t0 */
static double pct(const uint64_t *v, long n, double p, double t0)
{
	if (n <= 0)
		return 0;
	double x = (double)v[(long)((double)(n - 1) * p)] - t0;
	return x < 0 ? 0 : x;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 3000000L;
	uint64_t size = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
	if (calls < 1000 || calls > CALLS_MAX) {
		fprintf(stderr, "usage: %s [CALLS (1000..%ld) [BUFFER_BYTES]]\n",
			argv[0], CALLS_MAX);
		return 2;
	}
	char name[64];
	snprintf(name, sizeof(name), "switch-tail-%d", (int)getpid());
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = size;
	shmlog_t *h;
	int err = shmlog_create(name, &o);
	if (err == 0)
		err = shmlog_open(name, 0, &h);
	if (err < 0) {
		fprintf(stderr, "%s: buffer %s: %s\n", argv[0], name,
			shmlog_strerror(err));
		shmlog_remove(name);
		return 1;
	}
	/* the first write claims a lane: ours is the one with an owner */
	shmlog_write_n(h, SHMLOG_INFO, "tail", "start", 5);
	const struct shmlog__seg *s = &((struct shmlog *)h)->seg;
	struct shmlog__lane *ctl = NULL;
	for (unsigned i = 0; i < s->fixed.lane_count && !ctl; i++)
		if (atomic_load(&seg_lane(s, i)->owner))
			ctl = seg_lane(s, i);
	uint64_t *v[K_N];
	long n[K_N] = {0};
	uint64_t *all = malloc((size_t)calls * sizeof(*all));
	for (int k = 0; k < K_N; k++)
		v[k] = malloc((size_t)calls * sizeof(*v[k]));
	bool nomem = !all;
	for (int k = 0; k < K_N; k++)
		nomem |= !v[k];
	if (!ctl || nomem) {
		fprintf(stderr, "%s: no lane, or out of memory\n", argv[0]);
		shmlog_close(h);
		shmlog_remove(name);
		return 1;
	}
	size_t len[16];
	uint32_t rec[16];
	for (int i = 0; i < 16; i++) {
		len[i] = strlen(seed_messages[i].msg);
		rec[i] = rec_len((uint32_t)strlen(seed_messages[i].tag),
				 (uint32_t)len[i]);
	}
	uint64_t prev = atomic_load(&ctl->head);
	bool switched = false;
	long total = 0;
	for (long c = 0; c < WARM + calls; c++) {
		const struct seed_message *m = &seed_messages[c & 15];
		uint64_t t0 = bench_now_ns();
		shmlog_write_n(h, m->prio, m->tag, m->msg, len[c & 15]);
		uint64_t dt = bench_now_ns() - t0;
		uint64_t head = atomic_load_explicit(&ctl->head,
						     memory_order_relaxed);
		/* a switch: the head jumped, or the record begins a chunk
		 * (a lone writer's next chunk may lie right after its last
		 * in positions, when the last ended without a PAD) */
		bool sw = head - prev != rec[c & 15] ||
			  !((head - rec[c & 15] - s->fixed.initial_pos) &
			    (s->fixed.chunk_size - 1));
		if (c >= WARM) {
			/* a new page: its first byte lies in the record's
			 * tag and message (whose copies are unaligned
			 * stores), or at or before their start (the header
			 * is aligned words; head & 4095: the record's bytes
			 * in the new page) */
			enum kind k =
				sw	   ? K_SWITCH
				: switched ? K_AFTER
				: ((head - rec[c & 15]) ^ (head - 1)) >> 12
					? ((head & 4095) + REC_HDR < rec[c & 15]
						   ? K_PAGE_MSG
						   : K_PAGE_HDR)
					: K_OTHER;
			v[k][n[k]++] = dt;
			all[total++] = dt;
		}
		switched = sw;
		prev = head;
	}
	/* the timer alone */
	static uint64_t t[100000];
	const long tn = 100000;
	for (long i = 0; i < tn; i++) {
		uint64_t a = bench_now_ns();
		t[i] = bench_now_ns() - a;
	}
	qsort(t, (size_t)tn, sizeof(*t), cmp_u64);
	double timer = (double)t[tn / 2];
	for (int k = 0; k < K_N; k++)
		qsort(v[k], (size_t)n[k], sizeof(*v[k]), cmp_u64);
	qsort(all, (size_t)total, sizeof(*all), cmp_u64);
	uint64_t cut = all[(long)((double)(total - 1) * 0.999)];
	printf("buffer %llu KiB, chunks of %u bytes, %ld calls, one switch in "
	       "%.0f; the timer's %.1f ns subtracted\n",
	       (unsigned long long)(s->fixed.chunk_count *
				    (uint64_t)s->fixed.chunk_size >> 10),
	       s->fixed.chunk_size, total,
	       n[K_SWITCH] ? (double)total / (double)n[K_SWITCH] : 0, timer);
	printf("%-15s %8s %6s %6s %6s %6s %6s %6s %7s %9s %s\n", "calls", "n",
	       "p50", "p85", "p90", "p95", "p99", "p99.9", "p99.99",
	       "mean<p90", "> all p99.9");
	for (int k = 0; k <= K_N; k++) {
		const uint64_t *x = k < K_N ? v[k] : all;
		long m = k < K_N ? n[k] : total, above = 0;
		long m90 = (long)((double)m * 0.9);
		double sum = 0;
		for (long i = 0; i < m; i++) {
			above += x[i] > cut;
			if (i < m90)
				sum += (double)x[i];
		}
		printf("%-15s %8ld %6.0f %6.0f %6.0f %6.0f %6.0f %6.0f %7.0f "
		       "%9.1f %ld\n",
		       k < K_N ? kind_name[k] : "all", m, pct(x, m, .5, timer),
		       pct(x, m, .85, timer), pct(x, m, .9, timer),
		       pct(x, m, .95, timer), pct(x, m, .99, timer),
		       pct(x, m, .999, timer), pct(x, m, .9999, timer),
		       m90 ? sum / (double)m90 - timer : 0, above);
	}
	printf("all: p99.9 / p50 = %.2f\n",
	       pct(all, total, .999, timer) /
		       (pct(all, total, .5, timer) > 0
				? pct(all, total, .5, timer)
				: 1));
	for (int k = 0; k < K_N; k++)
		free(v[k]);
	free(all);
	shmlog_close(h);
	shmlog_remove(name);
	return 0;
}
