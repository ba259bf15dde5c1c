/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the hardening tests: time, child processes, writers of
 * self-describing records, reading everything with checks.
 */
#ifndef SHMLOG_HOSTILE_H
#define SHMLOG_HOSTILE_H

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "selfcheck.h"
#include "test.h"

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void sleep_ns(uint64_t ns)
{
	struct timespec d = {(time_t)(ns / 1000000000u),
			     (long)(ns % 1000000000u)};
	while (nanosleep(&d, &d) != 0)
		;
}

/* Reap the children that have exited, without waiting; each must have
 * exited with 0. Returns how many are still running of @running. */
static inline unsigned hw_reap_exited(unsigned running)
{
	int st;
	while (running && waitpid(-1, &st, WNOHANG) > 0) {
		running--;
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return running;
}

/* Write record @i of writer @w, keeping the longest write seen in
 * *@worst_ns; returns what the write returned. */
static inline int hw_write_timed(shmlog_t *h, unsigned w, uint64_t i,
				 volatile uint64_t *worst_ns)
{
	char tag[16], msg[512];
	int prio;
	size_t len = sc_make(w, i, tag, &prio, msg);
	uint64_t t0 = now_ns();
	int err = shmlog_write_n(h, prio, tag, msg, len);
	uint64_t dt = now_ns() - t0;
	if (dt > *worst_ns)
		*worst_ns = dt;
	return err;
}

/* Write records @from..@to-1 of writer @w, one every @gap_ns (0: flat
 * out); @to == 0: forever. Runs in a child; exits 0, or 10+ on failure. */
static inline void hw_writer(const char *b, unsigned w, uint64_t from,
			     uint64_t to, uint64_t gap_ns)
{
	shmlog_t *h;
	if (shmlog_open(b, 0, &h))
		_exit(10);
	char tag[16], msg[512];
	int prio;
	for (uint64_t i = from; to == 0 || i < to; i++) {
		size_t len = sc_make(w, i, tag, &prio, msg);
		if (shmlog_write_n(h, prio, tag, msg, len))
			_exit(11);
		if (gap_ns)
			sleep_ns(gap_ns);
	}
	shmlog_close(h);
	_exit(0);
}

static inline pid_t hw_spawn(const char *b, unsigned w, uint64_t from,
			     uint64_t to, uint64_t gap_ns)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		hw_writer(b, w, from, to, gap_ns);
	return pid;
}

/* Map a buffer's file read-write, as a hostile process would: its base,
 * or NULL (errno says why); its size in *@size. */
static inline unsigned char *hw_map_rw(const char *path, size_t *size)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	if (fd < 0)
		return NULL;
	void *base = MAP_FAILED;
	if (fstat(fd, &st) == 0)
		base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return NULL;
	*size = (size_t)st.st_size;
	return base;
}

static inline int hw_reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline void hw_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Sum of every lane's counters. */
static inline struct shmlog_lane_stats hw_sum(shmlog_reader_t *r)
{
	struct shmlog_lane_stats sum;
	memset(&sum, 0, sizeof(sum));
	for (unsigned k = 0; k < shmlog_reader_lanes(r); k++) {
		struct shmlog_lane_stats st;
		if (shmlog_reader_lane_stats(r, k, &st))
			continue;
		sum.written += st.written;
		sum.read += st.read;
		sum.overwritten += st.overwritten;
		sum.torn += st.torn;
		sum.skipped += st.skipped;
	}
	return sum;
}

/* Percentile of a sorted array. */
static inline uint64_t hw_pct(const uint64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t k = (size_t)(p * (double)(n - 1));
	return v[k];
}

static inline int hw_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#endif
