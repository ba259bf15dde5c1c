/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the hardening tests: time, child processes, writers of
 * self-describing records, reading everything with checks.
 */
#ifndef SHMLOG_HOSTILE_H
#define SHMLOG_HOSTILE_H

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "internal.h"
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

/* Chunk @i's descriptor word in the file mapped at @base (i < chunk_count). */
static inline _Atomic uint64_t *hw_desc(unsigned char *base,
					const struct shmlog__fixed *f,
					unsigned i)
{
	return (_Atomic uint64_t *)(void *)(base + f->chunks_off +
					    sizeof(struct shmlog__space) +
					    (uint64_t)i * 8);
}

/* The record headers of lane @lane in the file mapped at @base, whose
 * trusted header is @f: file offsets into @offs (at most @max), oldest
 * first, and the position each one's word named into @pos (if not NULL);
 * returns how many. The lane's chunks (descriptor words that name
 * it) in order of base, each walked along its chain from its base, up to
 * the lane's head, a PAD (listed) or the chunk's end, and no further than
 * anything that does not check out: a word that does not name its place,
 * a state no writer stores, a length that leaves the chunk. COMMITTED,
 * TORN and PAD headers alike; the state is in each word (its low 3 bits).
 * Safe on a damaged file, and while writers write (then racy: what it
 * finds is a place that held a record a moment ago). */
static inline size_t hw_lane_records(const unsigned char *base,
				     const struct shmlog__fixed *f,
				     unsigned lane, long *offs, uint64_t *pos,
				     size_t max)
{
	const struct shmlog__lane *l =
		(const void *)(base + f->lanes_off +
			       (uint64_t)lane * sizeof(struct shmlog__lane));
	uint64_t head = atomic_load(&l->head);
	unsigned *idx = malloc(f->chunk_count * sizeof(*idx));
	uint64_t *cw = malloc(f->chunk_count * sizeof(*cw));
	REQUIRE(idx && cw);
	size_t nc = 0;
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load(hw_desc((unsigned char *)base, f, i));
		if (!chunk_valid(f, w) || chunk_lane(w) != lane)
			continue;
		/* in order of base, by signed difference (positions wrap) */
		size_t k = nc++;
		while (k > 0 && (int64_t)(chunk_base(f, cw[k - 1]) -
					  chunk_base(f, w)) > 0) {
			idx[k] = idx[k - 1];
			cw[k] = cw[k - 1];
			k--;
		}
		idx[k] = i;
		cw[k] = w;
	}
	size_t n = 0;
	for (size_t c = 0; c < nc && n < max; c++) {
		uint64_t cbase = chunk_base(f, cw[c]);
		uint64_t at = f->data_off + (uint64_t)idx[c] * f->chunk_size;
		uint64_t off = 0;
		for (uint32_t step = 0; step < f->chunk_size / 8 && n < max;
		     step++) {
			uint64_t p = cbase + off;
			if (p == head || off + REC_HDR > f->chunk_size)
				break;
			const struct shmlog__rec *r = (const void *)(base + at + off);
			uint64_t w = atomic_load(&r->word);
			unsigned st = (unsigned)(w & REC_STATE_MASK);
			if ((w & ~(uint64_t)REC_STATE_MASK) != p ||
			    (st != REC_COMMITTED && st != REC_PAD &&
			     st != REC_TORN))
				break;
			if (pos)
				pos[n] = p;
			offs[n++] = (long)(at + off);
			if (st == REC_PAD)
				break;
			uint16_t len = r->len;
			if (len < REC_HDR || len % REC_ALIGN ||
			    off + len > f->chunk_size)
				break;
			/* in the chunk that holds head, nothing past it */
			if ((int64_t)(head - p) > 0 &&
			    (int64_t)(head - (p + len)) < 0) {
				n--;
				break;
			}
			off += len;
		}
	}
	free(idx);
	free(cw);
	return n;
}

/* Framing: in buffer @b at rest, every PAD and TORN header on a lane's
 * chain holds nothing of a chunk's earlier incarnation. A PAD keeps its
 * word and seq, zeroes to the chunk's end; a TORN record its word, seq
 * and len, zeroes to its end. Else a word given another state, or moved,
 * would frame an old record again. Returns how many headers break it
 * (and prints the first); *@checked: how many PAD and TORN it checked. */
static inline unsigned hw_check_framing(const char *b, unsigned *checked)
{
	char path[512];
	size_t size;
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	unsigned char *base = hw_map_rw(path, &size);
	REQUIRE(base);
	struct shmlog__fixed f;
	memcpy(&f, base, sizeof(f));
	size_t max = (size_t)f.chunk_count * (f.chunk_size / REC_ALIGN);
	long *offs = malloc(max * sizeof(*offs));
	REQUIRE(offs);
	unsigned bad = 0;
	*checked = 0;
	for (unsigned lane = 0; lane < f.lane_count; lane++) {
		size_t n = hw_lane_records(base, &f, lane, offs, NULL, max);
		for (size_t k = 0; k < n; k++) {
			const unsigned char *r = base + offs[k];
			const struct shmlog__rec *h = (const void *)r;
			unsigned st = (unsigned)(atomic_load(&h->word) &
						 REC_STATE_MASK);
			size_t end;
			if (st == REC_PAD)
				end = f.chunk_size -
				      (size_t)(offs[k] - (long)f.data_off) %
					      f.chunk_size;
			else if (st == REC_TORN)
				end = h->len;
			else
				continue;
			++*checked;
			for (size_t o = 16; o < end; o++) {
				bool kept = st == REC_TORN &&
					    o >= offsetof(struct shmlog__rec,
							  len) &&
					    o < offsetof(struct shmlog__rec,
							 len) + 2;
				if (r[o] && !kept) {
					if (!bad++)
						fprintf(stderr,
							"lane %u: %s at file "
							"offset %ld has byte "
							"%zu set (%#x)\n",
							lane,
							st == REC_PAD ? "PAD"
								      : "TORN",
							offs[k], o, r[o]);
					break;
				}
			}
		}
	}
	free(offs);
	munmap(base, size);
	return bad;
}

/* Damage the chunk table of the file mapped at @base as @v says: the space
 * line's epoch (random, moved back or forth), or one descriptor word
 * (random; valid-looking but naming another lane or a lane out of range;
 * its incarnation changed; its state flipped OPEN <-> LIVE or to junk).
 * Returns which (0: the epoch, 1..6: a descriptor). */
static inline unsigned hw_tamper_chunks(unsigned char *base,
					const struct shmlog__fixed *f,
					uint64_t v)
{
	unsigned kind = (unsigned)((v >> 32) % 7);
	uint64_t r = sc_mix(v);
	int64_t d = (int64_t)(r % 9) - 4; /* -4 .. 4 */
	if (kind == 0) {
		_Atomic uint64_t *e = (void *)(base + f->chunks_off);
		uint64_t x = atomic_load(e);
		atomic_store(e, r & 1 ? r : x + (uint64_t)d);
		return kind;
	}
	_Atomic uint64_t *p = hw_desc(base, f, (unsigned)(v % f->chunk_count));
	uint64_t w = atomic_load(p), inc = w >> CHUNK_INC_SHIFT;
	unsigned lane = chunk_lane(w), st = chunk_state(w);
	if (st != CHUNK_LIVE && st != CHUNK_OPEN)
		st = CHUNK_LIVE;
	if (!inc)
		inc = 1 + (r >> 8) % 64;
	switch (kind) {
	case 1: /* anything */
		w = r;
		break;
	case 2: /* another lane's, if there is another */
		w = chunk_word(inc, (lane + 1 + (unsigned)(r >> 8) %
						     f->lane_count) %
					    f->lane_count,
			       st);
		break;
	case 3: /* a lane that does not exist */
		w = chunk_word(inc, f->lane_count + (unsigned)(r >> 8) %
						     (0x10000 - f->lane_count),
			       st);
		break;
	case 4: /* another incarnation: near, or anywhere */
		inc = r & 0x100 ? (inc + (uint64_t)d) & CHUNK_INC_MASK
				: (r >> 12) & CHUNK_INC_MASK;
		w = chunk_word(inc, lane, st);
		break;
	case 5: /* OPEN <-> LIVE */
		w = chunk_word(inc, lane,
			       st == CHUNK_OPEN ? CHUNK_LIVE : CHUNK_OPEN);
		break;
	default: /* a state no writer stores */
		w = chunk_word(inc, lane, 3 + (unsigned)(r >> 8) % 13);
		break;
	}
	atomic_store(p, w);
	return kind;
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
		sum.corrupt += st.corrupt;
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
