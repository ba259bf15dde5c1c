/* SPDX-License-Identifier: MIT */
/*
 * shmlog-share-cost: what two writer processes lose by sharing one
 * buffer, apart from what the machine takes from two busy CPUs. The
 * "2 processes per CPU-second" row of `shmlog-bench log` mixes the two:
 * a guest's two CPUs may be one host core's two hardware threads, or
 * share its caches, and then any two busy processes slow each other,
 * logging or not.
 *
 * Rounds of four runs, in an order that turns each round:
 *   alone   one writer process (on CPU 0), its own buffer;
 *   shared  two writer processes (CPUs 0 and 1), one fresh buffer;
 *   own     two writer processes (CPUs 0 and 1), a buffer each;
 *   churned two writer processes (CPUs 0 and 1), one buffer that writers
 *           came and went on first: eight at once, then one alone, each
 *           writing it over several times, as on a service's buffer
 *           whose workers come and go. The lone writer takes the eight
 *           lanes' chunks oldest first and recycles them in that order,
 *           which jumps about the table; the two take its chunks oldest
 *           first, and theirs interleave.
 * Each writer writes the RFC's sixteen messages with shmlog_write_n(),
 * timing batches of 160 calls with CLOCK_MONOTONIC, and reports the
 * median batch's time per call. A round's ratios (shared over own, own
 * over alone) pair runs a second apart, so a host that slows down for a
 * while moves both sides of most pairs; the quartiles over the rounds
 * are printed. Halfway through the first shared and churned runs the
 * buffer's chunk table is read: how many of its chunks each writer holds, and in how
 * many runs of neighbouring chunks (1 per writer: each holds one stretch
 * of the buffer; as many as its chunks: interleaved chunk by chunk).
 * "Halfway" is once both writers are halfway through their runs, and
 * neither closes its handle before the table is read: on a busy machine
 * one may finish before the other is halfway, and a closed writer's
 * chunks go to whoever writes on.
 *
 * A developer's tool: it reads the chunk table through the library's
 * internal header. Not installed. Needs two CPUs.
 *
 *   shmlog-share-cost [ROUNDS [BUFFER_BYTES]]   (default 30, 1 MiB)
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "internal.h"
#include "sample_messages.h"
#include "shmlog.h"

#define BATCH 160
#define WARM_CALLS 500000L
#define BATCHES 4000L /* 640,000 calls timed per writer and run */
#define ROUNDS_MAX 1000
#define WAIT_S 30.0 /* a writer waits at most this for the start */

enum mode { ALONE, SHARED, OWN, CHURNED, N_MODES };
static const char *const mode_name[N_MODES] = {"alone", "shared", "own",
					       "churned"};
#define CHURN_WRITERS 8
#define CHURN_CALLS 200000L /* per writer of the churn: 20 MB, each */

/* What the parent and its writers share: a start line and results. */
struct board {
	_Atomic int ready;
	_Atomic int go;
	_Atomic int halfway; /* writers halfway through their run */
	_Atomic int layout_read;
	double ns_per_call[2]; /* the median batch's, per writer */
	int failed[2];
	char layout[512]; /* the chunk table halfway through writer 0's run */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The @p quantile of @v[@n], sorted in place. */
static double quantile(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n ? v[(int)((double)(n - 1) * p + 0.5)] : 0;
}

static void write_one(shmlog_t *h, long i)
{
	const struct seed_message *m = &seed_messages[i % 16];
	shmlog_write_n(h, m->prio, m->tag, m->msg, strlen(m->msg));
}

/* How the chunks of @h's buffer lie, into @out: per lane holding any,
 * its chunks and its runs of neighbouring chunks. */
static void layout(shmlog_t *h, char *out, size_t len)
{
	const struct shmlog__seg *s = &((struct shmlog *)h)->seg;
	unsigned chunks[SHMLOG_LANES_MAX] = {0}, runs[SHMLOG_LANES_MAX] = {0};
	unsigned prev = UINT32_MAX, lanes = s->fixed.lane_count;
	for (unsigned i = 0; i < s->fixed.chunk_count; i++) {
		uint64_t w = atomic_load(seg_chunk(s, i));
		unsigned l = w ? chunk_lane(w) : UINT32_MAX;
		if (l < lanes) {
			chunks[l]++;
			runs[l] += l != prev;
		}
		prev = l;
	}
	size_t at = 0;
	out[0] = 0;
	for (unsigned l = 0; l < lanes && at < len; l++)
		if (chunks[l])
			at += (size_t)snprintf(out + at, len - at,
					       " lane %u %u chunks in %u runs;",
					       l, chunks[l], runs[l]);
}

/* Writer 0 of @n reads the layout once every writer is halfway (or,
 * having waited WAIT_S, as it stands); the others wait for that before
 * they close. Outside the timed batches. */
static void layout_when_halfway(shmlog_t *h, int slot, int n,
				struct board *b)
{
	uint64_t give_up = bench_now_ns() + (uint64_t)(WAIT_S * 1e9);
	if (slot == 0) {
		while (atomic_load(&b->halfway) < n && bench_now_ns() < give_up)
			sched_yield();
		layout(h, b->layout, sizeof(b->layout));
		atomic_store(&b->layout_read, 1);
	} else {
		while (!atomic_load(&b->layout_read) && bench_now_ns() < give_up)
			sched_yield();
	}
}

/* A writer process, one of @n: pinned to @cpu, it opens @name, warms up,
 * waits for the start, times its batches and posts the median in @b. */
static void __attribute__((noreturn))
writer(const char *name, int cpu, int slot, int n, struct board *b)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	shmlog_t *h = NULL;
	static double t[BATCHES];
	if (sched_setaffinity(0, sizeof(set), &set) < 0 ||
	    shmlog_open(name, 0, &h) < 0) {
		b->failed[slot] = 1;
		atomic_fetch_add(&b->ready, 1);
		_exit(1);
	}
	for (long i = 0; i < WARM_CALLS; i++)
		write_one(h, i);
	atomic_fetch_add(&b->ready, 1);
	uint64_t give_up = bench_now_ns() + (uint64_t)(WAIT_S * 1e9);
	while (!atomic_load(&b->go))
		if (bench_now_ns() > give_up)
			_exit(1); /* the parent is gone */
	long k = 0;
	bool read = false;
	for (long j = 0; j < BATCHES; j++) {
		uint64_t t0 = bench_now_ns();
		for (int i = 0; i < BATCH; i++)
			write_one(h, k++);
		t[j] = (double)(bench_now_ns() - t0) / BATCH;
		if (j == BATCHES / 2)
			atomic_fetch_add(&b->halfway, 1);
		/* writer 0 looks once a batch, past halfway, whether the
		 * other one is too: one load of a line written twice */
		if (slot == 0 && !read && j >= BATCHES / 2 &&
		    atomic_load(&b->halfway) == n) {
			layout(h, b->layout, sizeof(b->layout));
			atomic_store(&b->layout_read, 1);
			read = true;
		}
	}
	if (!read)
		layout_when_halfway(h, slot, n, b);
	b->ns_per_call[slot] = quantile(t, BATCHES, 0.5);
	shmlog_close(h);
	_exit(0);
}

/* Writers coming and going on @name before a churned run: eight at
 * once, then one alone. 0, or -1. */
static int churn(const char *name)
{
	for (int round = 0; round < 2; round++) {
		int n = round ? 1 : CHURN_WRITERS, bad = 0;
		pid_t pid[CHURN_WRITERS];
		for (int p = 0; p < n; p++) {
			pid[p] = fork();
			if (pid[p] == 0) {
				shmlog_t *h;
				if (shmlog_open(name, 0, &h) < 0)
					_exit(1);
				for (long i = 0; i < CHURN_CALLS; i++)
					write_one(h, i);
				shmlog_close(h);
				_exit(0);
			}
			if (pid[p] < 0)
				return -1;
		}
		for (int p = 0; p < n; p++) {
			int st;
			while (waitpid(pid[p], &st, 0) < 0 && errno == EINTR)
				;
			bad |= !WIFEXITED(st) || WEXITSTATUS(st);
		}
		if (bad)
			return -1;
	}
	return 0;
}

/* One run of @m; the writers' median ns per call in @ns. 0, or -1. */
static int run(enum mode m, const char names[2][64], uint64_t size,
	       struct board *b, double ns[2], int verbose)
{
	int n = m == ALONE ? 1 : 2;
	for (int i = 0; i < 2; i++) {
		struct shmlog_create_opts o;
		shmlog_create_opts_init(&o);
		o.size = size;
		shmlog_remove(names[i]);
		if (shmlog_create(names[i], &o) < 0)
			return -1;
	}
	if (m == CHURNED && churn(names[0]) < 0)
		return -1;
	memset(b, 0, sizeof(*b));
	pid_t pid[2];
	for (int p = 0; p < n; p++) {
		pid[p] = fork();
		if (pid[p] == 0)
			writer(names[m == OWN ? p : 0], p, p, n, b);
		if (pid[p] < 0)
			return -1;
	}
	uint64_t give_up = bench_now_ns() + (uint64_t)(WAIT_S * 1e9);
	while (atomic_load(&b->ready) < n && bench_now_ns() < give_up)
		sched_yield();
	atomic_store(&b->go, 1);
	int bad = 0;
	for (int p = 0; p < n; p++) {
		int st;
		while (waitpid(pid[p], &st, 0) < 0 && errno == EINTR)
			;
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) || b->failed[p];
	}
	if ((m == SHARED || m == CHURNED) && verbose)
		printf("  layout of the %s buffer, halfway:%s\n", mode_name[m],
		       b->layout);
	for (int i = 0; i < 2; i++)
		shmlog_remove(names[i]);
	ns[0] = b->ns_per_call[0];
	ns[1] = n == 2 ? b->ns_per_call[1] : ns[0];
	return bad ? -1 : 0;
}

static void print_quartiles(const char *what, double *v, int n)
{
	double q1 = quantile(v, n, 0.25), q2 = quantile(v, n, 0.5),
	       q3 = quantile(v, n, 0.75);
	printf("%-36s %8.3f %8.3f %8.3f\n", what, q1, q2, q3);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 30;
	unsigned long long size =
		argc > 2 ? strtoull(argv[2], NULL, 10) : 1u << 20;
	if (argc > 3 || rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: %s [ROUNDS (1..%d) [BUFFER_BYTES]]\n",
			argv[0], ROUNDS_MAX);
		return 2;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "%s: needs two CPUs, this machine has one\n",
			argv[0]);
		return 2;
	}
	char names[2][64];
	for (int i = 0; i < 2; i++)
		snprintf(names[i], sizeof(names[i]), "share-cost-%d-%d",
			 (int)getpid(), i);
	struct board *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double *per = calloc((size_t)rounds * N_MODES, sizeof(double));
	double *ratio_so = calloc((size_t)rounds * 2, sizeof(double));
	double *ratio_oa = calloc((size_t)rounds * 2, sizeof(double));
	double *ratio_co = calloc((size_t)rounds * 2, sizeof(double));
	if (b == MAP_FAILED || !per || !ratio_so || !ratio_oa || !ratio_co) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		return 1;
	}
	printf("# shmlog-share-cost: two writer processes on one buffer, and "
	       "each on a buffer of its own\n# %ld rounds of 4 runs, buffers "
	       "of %llu KiB, %ld calls timed per writer and run in batches "
	       "of %d (ns per call: the median batch)\n",
	       rounds, size >> 10, BATCHES * BATCH, BATCH);
	int n = 0;
	for (long r = 0; r < rounds; r++) {
		double ns[N_MODES][2];
		for (int k = 0; k < N_MODES; k++) {
			enum mode m = (enum mode)((k + r) % N_MODES);
			if (run(m, names, size, b, ns[m], r == 0) < 0) {
				fprintf(stderr, "%s: a run of '%s' failed "
						"(buffer of %llu bytes)\n",
					argv[0], mode_name[m], size);
				return 1;
			}
		}
		printf("round %3ld: alone %5.1f ns, shared %5.1f %5.1f, own "
		       "%5.1f %5.1f, churned %5.1f %5.1f\n",
		       r + 1, ns[ALONE][0], ns[SHARED][0], ns[SHARED][1],
		       ns[OWN][0], ns[OWN][1], ns[CHURNED][0], ns[CHURNED][1]);
		for (int m = 0; m < N_MODES; m++)
			per[m * rounds + n] = (ns[m][0] + ns[m][1]) / 2;
		for (int p = 0; p < 2; p++) {
			ratio_so[2 * n + p] = ns[SHARED][p] / ns[OWN][p];
			ratio_oa[2 * n + p] = ns[OWN][p] / ns[ALONE][0];
			ratio_co[2 * n + p] = ns[CHURNED][p] / ns[OWN][p];
		}
		n++;
	}
	printf("\n%-36s %8s %8s %8s\n", "quartiles over the rounds", "q1",
	       "median", "q3");
	for (int m = 0; m < N_MODES; m++) {
		char what[64];
		snprintf(what, sizeof(what), "ns per call, %s", mode_name[m]);
		print_quartiles(what, per + m * rounds, n);
	}
	print_quartiles("time per call, own / alone", ratio_oa, 2 * n);
	print_quartiles("time per call, shared / own", ratio_so, 2 * n);
	print_quartiles("time per call, churned / own", ratio_co, 2 * n);
	printf("(own / alone: what the machine takes from two busy CPUs; "
	       "shared / own: what\n sharing a fresh buffer adds; churned / "
	       "own: what sharing one that writers\n came and went on adds)\n");
	return 0;
}
