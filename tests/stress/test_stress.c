/* SPDX-License-Identifier: MIT */
/*
 * Multi-process, multi-thread stress: P processes x T threads write
 * self-describing records into a small buffer (so it wraps many times)
 * while a reader follows. Every record read must be intact and each
 * writer's records must come in order; the accounting must be exact:
 * written = read + overwritten + torn, with no torn records.
 *
 * usage: test_stress [PROCS THREADS RECORDS SIZE_KIB]
 */
#include <pthread.h>
#include <sys/wait.h>

#include "selfcheck.h"
#include "stall.h"
#include "test.h"

static const char *buffer;
static long records;

struct wargs {
	shmlog_t *h;
	unsigned id;
	uint64_t worst_ns;
	int failures;
};

static void *writer_thread(void *arg)
{
	struct wargs *a = arg;
	char tag[16], msg[512];
	int prio;
	/* per window of WINDOW calls, not per call: system calls around
	 * every write would thin out the writers' interleaving */
	enum { WINDOW = 64 };
	struct stall_mark s0 = stall_mark();
	for (long i = 0; i < records; i++) {
		size_t len = sc_make(a->id, (uint64_t)i, tag, &prio, msg);
		if (shmlog_write_n(a->h, prio, tag, msg, len))
			a->failures++;
		if (i % WINDOW == WINDOW - 1 || i == records - 1) {
			struct stall_mark s1 = stall_mark();
			uint64_t st = stall_ns(&s0, &s1);
			if (st > a->worst_ns)
				a->worst_ns = st;
			s0 = s1;
		}
	}
	return NULL;
}

static void writer_process(unsigned p, unsigned threads)
{
	shmlog_t *h;
	if (shmlog_open(buffer, 0, &h))
		_exit(10);
	pthread_t t[64];
	struct wargs a[64];
	for (unsigned k = 0; k < threads; k++) {
		a[k] = (struct wargs){h, p * threads + k, 0, 0};
		pthread_create(&t[k], NULL, writer_thread, &a[k]);
	}
	int failures = 0;
	uint64_t worst = 0;
	for (unsigned k = 0; k < threads; k++) {
		pthread_join(t[k], NULL);
		failures += a[k].failures;
		if (a[k].worst_ns > worst)
			worst = a[k].worst_ns;
	}
	shmlog_close(h);
	/* a write that waited for somebody would show as a long stall
	 * (stall.h): half a second in one window (64 writes cost well under
	 * 100 us of CPU; a sanitizer's build a few times that) */
	if (worst > 500000000) {
		fprintf(stderr, "writer process %u: a window of writes stalled "
			"%.0f ms\n", p, (double)worst / 1e6);
		_exit(11);
	}
	_exit(failures ? 12 : 0);
}

int main(int argc, char **argv)
{
	unsigned procs = argc > 1 ? (unsigned)atoi(argv[1]) : 3;
	unsigned threads = argc > 2 ? (unsigned)atoi(argv[2]) : 3;
	records = argc > 3 ? atol(argv[3]) : 30000;
	long size_kib = argc > 4 ? atol(argv[4]) : 256;
	REQUIRE(procs * threads <= 64);
	buffer = test_buffer("stress");

	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = (uint64_t)size_kib * 1024;
	o.lanes = procs * threads + 2;
	REQUIRE(shmlog_create(buffer, &o) == 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(buffer, 0, &r) == 0);

	for (unsigned p = 0; p < procs; p++)
		if (fork() == 0)
			writer_process(p, threads);

	uint64_t read = 0, lost = 0, bad = 0, disorder = 0;
	int64_t last[64];
	for (int i = 0; i < 64; i++)
		last[i] = -1;
	unsigned running = procs;
	int exit_bad = 0;
	for (;;) {
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev = shmlog_reader_next(r, &rec, &l);
		if (ev == SHMLOG_EV_RECORD) {
			unsigned w;
			uint64_t i;
			if (!sc_check(&rec, &w, &i) || w >= 64) {
				if (bad++ < 5)
					fprintf(stderr, "bad record: %.80s\n",
						rec.msg);
				continue;
			}
			if ((int64_t)i <= last[w])
				disorder++;
			last[w] = (int64_t)i;
			read++;
			continue;
		}
		if (ev == SHMLOG_EV_LOST) {
			lost += l.overwritten + l.torn;
			continue;
		}
		int st;
		pid_t pid;
		while (running && (pid = waitpid(-1, &st, WNOHANG)) > 0) {
			running--;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "writer exited with %d\n",
					WIFEXITED(st) ? WEXITSTATUS(st) : -1);
				exit_bad++;
			}
		}
		if (!running && test_caught_up(r))
			break;
		if (!running)
			continue;
		shmlog_reader_wait(r, 50);
	}
	/* finish: drain what is left, then account */
	struct shmlog_lane_stats sum;
	test_sum_lanes(r, &sum);
	printf("stress: %u writers x %ld records: read %llu, lost %llu "
	       "(overwritten %llu), bad %llu, out of order %llu\n",
	       procs * threads, records, (unsigned long long)read,
	       (unsigned long long)lost, (unsigned long long)sum.overwritten,
	       (unsigned long long)bad, (unsigned long long)disorder);
	CHECK_EQ(exit_bad, 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(disorder, 0);
	CHECK_EQ(sum.written, (uint64_t)procs * threads * records);
	CHECK_EQ(sum.read, read);
	CHECK_EQ(sum.torn, 0);
	CHECK(read > 0);
	shmlog_reader_close(r);
	shmlog_remove(buffer);
	return test_done("test_stress");
}
