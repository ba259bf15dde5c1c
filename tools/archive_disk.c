/* SPDX-License-Identifier: MIT */
/*
 * `shmlog archive`: the way to the disk (archive.h).
 *
 * Sealed blocks gather in a stage: an aligned buffer holding the current
 * file's bytes from a DIO_ALIGN boundary on, the block being filled after
 * them. Once a stage holds STAGE_STEP bytes, the syncer thread writes its
 * whole DIO_ALIGN units with one O_DIRECT pwrite(), straight from the
 * stage to the disk, while the drain fills the next stage; the bytes past
 * the last whole unit begin that next stage. No copy into the page cache,
 * no dirty pages for the kernel to write back and reclaim: on a virtual
 * machine whose host takes freed memory back, fresh page-cache pages
 * were the archiver's largest cost (docs/archive.md, "Page cache").
 *
 * What gathers slower than that goes through the page cache: a plain
 * pwrite() of the drain's once the oldest of it is BLOCK_MS old (or when
 * the archiver ends), or when no record came for IDLE_MS (the
 * writers paused: archive.c), so that records still reach the file soon.
 * (Not at once when a turn finds nothing new: behind a fast writer that
 * is every few turns, and the page cache's pages would then be written
 * again under each O_DIRECT write, and dropped: measured, it lost records
 * behind a writer paced at 10 M records/s.) The stage's O_DIRECT write
 * covers those bytes again later; the kernel keeps the two views one.
 * Writes never overlap while in flight: a stage is written only up to its
 * last whole unit, and the page-cache writes only touch the current stage,
 * past every unit handed over.
 *
 * When every stage waits for the disk (it lags, or writes back other
 * programs' data), the current stage goes through the page cache instead
 * and is filled again: the drain never waits for a disk that takes data,
 * as it never did with plain writes (stage_overflow()). The page cache
 * writes those pages out in the background; they are dropped at the
 * file's end.
 *
 * A file's end waits for nothing either (stage_next_file()): its last
 * bytes, its end (cut to its size, synced) and the next file's first
 * bytes and name are the syncer's chores, in that order. The next file is
 * made under a hidden name and named only once the one before is whole
 * and its own header written, so that its positions hold when a reader
 * or a restarted archiver sees it.
 *
 * Where the filesystem refuses O_DIRECT, the syncer's writes go through
 * the page cache, each written out and its pages dropped after.
 *
 * The syncer's chores are done in the order handed over, so an fdatasync()
 * covers every write before it. A write refused for want of room (ENOSPC,
 * EDQUOT) is tried again every RETRY_MS, its stage held: the drain, then
 * finding no stage free, stops reading and says the disk is full
 * (archive_file.c). At the end (SIGTERM), a write still refused is given
 * up, and the ones after it too: the file ends with whole blocks and
 * perhaps a torn one, as after a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "cli.h"

/* ---- the syncer ---- */

/* A write's pages, where it went through the page cache, written out and
 * given back: the archive holds no more of it than a stage's worth. */
static void drop_written(int fd, uint64_t off, uint64_t len)
{
	if (sync_file_range(fd, (off_t)off, (off_t)len,
			    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
				    SYNC_FILE_RANGE_WAIT_AFTER) == 0)
		posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

/* Wait @ms on the syncer's condition (its mutex held). */
static void timed_wait(struct syncer *y, int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&y->cv, &y->mu, &ts);
}

/* The disk has no room for a write of the syncer's (@err, an errno):
 * said (y->werr), then RETRY_MS waited for. False once the end came
 * (cli_stop, y->stop): the write is given up. */
static bool room_wait(struct syncer *y, int err)
{
	pthread_mutex_lock(&y->mu);
	y->werr = err;
	pthread_cond_broadcast(&y->cv);
	bool stop = y->stop || cli_stop;
	if (!stop)
		timed_wait(y, RETRY_MS);
	pthread_mutex_unlock(&y->mu);
	return !stop;
}

/* Write @len bytes at @p to @fd at @off: 0, or the error it gave up on
 * (one room does not cure, or the end came while the disk was full). Each
 * turn writes some of them, or waits RETRY_MS for room: bounded by the end
 * (cli_stop, y->stop) and the bytes. */
static int write_bytes(struct syncer *y, int fd, const unsigned char *p,
		       uint64_t off, uint64_t len)
{
	uint64_t start = off, end = off + len;
	int fl = fcntl(fd, F_GETFL);
	while (off < end) {
		ssize_t w = pwrite(fd, p, (size_t)(end - off), (off_t)off);
		if (w > 0) {
			/* a short write is out of room; the rest from the
			 * last whole unit, as O_DIRECT takes it */
			uint64_t done = (uint64_t)w;
			if (off + done < end && fl >= 0 && (fl & O_DIRECT))
				done &= ~(uint64_t)(DIO_ALIGN - 1);
			off += done;
			p += done;
			if (off >= end)
				break;
			if (done)
				continue;
		}
		int err = w < 0 ? errno : ENOSPC;
		if (err == EINTR)
			continue;
		if (err == EINVAL && fl >= 0 && (fl & O_DIRECT) &&
		    fcntl(fd, F_SETFL, fl & ~O_DIRECT) == 0) {
			fl &= ~O_DIRECT; /* not on this file after all */
			continue;
		}
		if (!disk_full_err(-err) || !room_wait(y, err))
			return -err;
	}
	if (fl < 0 || !(fl & O_DIRECT))
		drop_written(fd, start, len);
	return 0;
}

/* A new file's first bytes (@j->data), then its own name: until then it
 * is hidden from readers, which would take a file without its header for
 * a damaged one, and from recovery, which removes it (archive_file.c).
 * 0, or the error given up on. */
static int name_file(struct syncer *y, const struct sync_job *j)
{
	int err = write_bytes(y, j->fd, j->data, 0, j->len);
	const char *hidden = j->names, *path = hidden + strlen(hidden) + 1;
	/* each turn names it, fails, or waits RETRY_MS for room: bounded
	 * by the end */
	while (!err && renameat(y->dir_fd, hidden, y->dir_fd, path)) {
		if (errno == EINTR)
			continue;
		err = -errno;
		if (disk_full_err(err) && room_wait(y, -err))
			err = 0;
	}
	return err;
}

/* Do @j (a write is skipped once one was given up), and close its
 * descriptor. Errors of syncs only end the chore: a page the disk refused
 * stays dirty, and in the cache. */
static void sync_do(struct syncer *y, const struct sync_job *j)
{
	switch (j->op) {
	case SYNC_WRITE:
	case SYNC_NAME:
		if (!y->gave_up) {
			int err = j->op == SYNC_NAME
					  ? name_file(y, j)
					  : write_bytes(y, j->fd,
							j->st->buf +
								(j->off - j->st->off),
							j->off, j->len);
			pthread_mutex_lock(&y->mu);
			y->werr = err ? -err : 0;
			y->gave_up = err != 0;
			pthread_mutex_unlock(&y->mu);
		}
		free(j->data);
		free(j->names);
		break;
	case SYNC_DROP:
		/* started, not waited for: the stages' writes behind it wait
		 * for none of it (the pages go at the file's end) */
		sync_file_range(j->fd, (off_t)j->off, (off_t)j->len,
				SYNC_FILE_RANGE_WRITE);
		break;
	case SYNC_FILE:
		file_cut(j->fd, j->len);
		if (fdatasync(j->fd) == 0)
			posix_fadvise(j->fd, 0, 0, POSIX_FADV_DONTNEED);
		break;
	case SYNC_DATA:
		fdatasync(j->fd);
		break;
	}
	close(j->fd);
}

/* A chore done: its place in the queue, and its stage, free again. */
static void sync_done(struct syncer *y, const struct sync_job *j)
{
	if (j->op == SYNC_DATA)
		y->data_queued = false;
	if (j->op == SYNC_WRITE)
		j->st->busy--;
	if (j->op == SYNC_NAME)
		y->naming--;
	y->head = (y->head + 1) % SYNC_QUEUE;
	y->len--;
	pthread_cond_broadcast(&y->cv);
}

static void *syncer_main(void *arg)
{
	struct syncer *y = arg;
	pthread_mutex_lock(&y->mu);
	for (;;) { /* each turn does a chore, or ends when told to */
		while (!y->len && !y->stop)
			pthread_cond_wait(&y->cv, &y->mu);
		if (!y->len)
			break;
		struct sync_job j = y->q[y->head];
		pthread_mutex_unlock(&y->mu);
		sync_do(y, &j);
		pthread_mutex_lock(&y->mu);
		sync_done(y, &j);
	}
	pthread_mutex_unlock(&y->mu);
	return NULL;
}

/* The syncer's lock and condition (on CLOCK_MONOTONIC), then its thread:
 * without one, chores are done where they are handed over. */
int sync_start(struct archiver *a)
{
	struct syncer *y = &a->sync;
	pthread_condattr_t ca;
	if (pthread_condattr_init(&ca))
		return -ENOMEM;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int err = pthread_cond_init(&y->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (err)
		return -err;
	if ((err = pthread_mutex_init(&y->mu, NULL))) {
		pthread_cond_destroy(&y->cv);
		return -err;
	}
	y->ready = true;
	/* signals are the drain's: the syncer is made with all blocked */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	y->started = pthread_create(&y->thread, NULL, syncer_main, y) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

/* Hand @j to the syncer, which does it and closes its descriptor (after
 * those handed to it before). @wait: even if its queue is full; else false
 * then, and @j is not taken. Without a syncer, here and now. */
static bool sync_hand(struct archiver *a, const struct sync_job *j, bool wait)
{
	struct syncer *y = &a->sync;
	if (!y->started) {
		sync_do(y, j);
		return true;
	}
	pthread_mutex_lock(&y->mu);
	/* bounded by the syncer's progress: each chore it ends frees a place */
	while (y->len == SYNC_QUEUE && wait)
		pthread_cond_wait(&y->cv, &y->mu);
	bool taken = y->len < SYNC_QUEUE;
	if (taken) {
		y->q[(y->head + y->len) % SYNC_QUEUE] = *j;
		y->len++;
		if (j->op == SYNC_DATA)
			y->data_queued = true;
		if (j->op == SYNC_NAME)
			y->naming++;
		if (j->op == SYNC_WRITE)
			j->st->busy++;
		pthread_cond_broadcast(&y->cv);
	}
	pthread_mutex_unlock(&y->mu);
	return taken;
}

/* What was written reaches the disk, soon: an fdatasync() of the current
 * file, unless one is waiting still. */
void sync_now(struct archiver *a)
{
	if (a->fd < 0 || !a->unsynced)
		return;
	struct syncer *y = &a->sync;
	if (y->started) {
		pthread_mutex_lock(&y->mu);
		bool busy = y->data_queued;
		pthread_mutex_unlock(&y->mu);
		if (busy)
			return;
	}
	struct sync_job j = {.fd = dup(a->fd), .op = SYNC_DATA};
	if (j.fd < 0)
		return;
	if (!sync_hand(a, &j, false)) {
		close(j.fd); /* the disk is slower than the archive: later */
		return;
	}
	a->unsynced = 0;
}

/* The end: every chore handed over done (the syncer's queue), the current
 * file synced here, and its pages dropped as the others'. */
void sync_end(struct archiver *a)
{
	struct syncer *y = &a->sync;
	if (y->started) {
		pthread_mutex_lock(&y->mu);
		y->stop = true;
		pthread_cond_broadcast(&y->cv);
		pthread_mutex_unlock(&y->mu);
		pthread_join(y->thread, NULL); /* it does its queue first */
		y->started = false;
	}
	if (y->ready) {
		pthread_cond_destroy(&y->cv);
		pthread_mutex_destroy(&y->mu);
		y->ready = false;
	}
	if (a->fd < 0)
		return;
	if (a->unsynced && fdatasync(a->fd))
		return;
	a->unsynced = 0;
	posix_fadvise(a->fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* ---- stages ---- */

/* Make one more stage: false without memory (or at STAGES). It is asked
 * to be one huge page (transparent huge pages, where the system gives
 * them on request) and faulted now: one page fault instead of 512, and
 * one page for each O_DIRECT write to pin (behind a writer paced at 10 M
 * records/s, 29 against 37 ns of CPU a record with 4 KiB pages, AMD EPYC
 * guest). Unless
 * huge pages were found slow (a->huge_slow): a fresh one cost 5-8 ms on
 * a virtual machine whose host takes freed memory back (virtio-balloon's
 * free page reporting), where 4 KiB pages took 1.3 ms for the same 2 MiB,
 * and a stall that long on the drain's thread lost more records behind a
 * full-speed writer than the stage holds. Each huge page's fault is timed:
 * one slower than HUGE_SLOW_NS (one the system had just freed took 0.1
 * ms there: 2 MiB cleared at memory speed) makes every
 * later stage 4 KiB pages, faulted one at a time as the drain fills it.
 * The first stages are made before the drain starts, so that their faults
 * tell before any record waits. */
static bool stage_make(struct archiver *a)
{
	if (a->nstages == STAGES)
		return false;
	size_t span = 2 * (size_t)STAGE_CAP;
	unsigned char *m = mmap(NULL, span, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return false;
	uintptr_t at = ((uintptr_t)m + STAGE_CAP - 1) & ~(uintptr_t)(STAGE_CAP - 1);
	unsigned char *p = (unsigned char *)at;
	if (p > m)
		munmap(m, (size_t)(p - m));
	munmap(p + STAGE_CAP, (size_t)(m + span - (p + STAGE_CAP)));
	/* hints: where refused, the system's default pages, faulted as
	 * the drain fills them */
	if (a->huge_slow) {
		madvise(p, STAGE_CAP, MADV_NOHUGEPAGE);
	} else if (madvise(p, STAGE_CAP, MADV_HUGEPAGE) == 0) {
		uint64_t t0 = mono_ns();
		*(volatile unsigned char *)p = 0;
		a->huge_slow = mono_ns() - t0 > HUGE_SLOW_NS;
	}
	a->stage[a->nstages++] = (struct stage){.buf = p};
	return true;
}

int stage_init(struct archiver *a)
{
	for (unsigned i = 0; i < STAGES_FIRST; i++)
		if (!stage_make(a))
			return -ENOMEM;
	a->cur = 0;
	a->out = a->stage[0].buf;
	a->dfd = -1;
	return 0;
}

void stage_release(struct archiver *a)
{
	for (unsigned i = 0; i < a->nstages; i++) {
		munmap(a->stage[i].buf, STAGE_CAP);
		a->stage[i].buf = NULL;
	}
	a->nstages = 0;
	if (a->dfd >= 0)
		close(a->dfd);
	a->dfd = -1;
	a->out = NULL;
}

/* The error of the syncer's writes: one failing now (tried again), or
 * one given up; else 0. */
static int write_error(struct archiver *a)
{
	struct syncer *y = &a->sync;
	pthread_mutex_lock(&y->mu);
	int err = -y->werr;
	pthread_mutex_unlock(&y->mu);
	return err;
}

/* Is a new file still to be named (SYNC_NAME)? Its name comes after the
 * files before it are whole on disk, and after its own first bytes: its
 * positions then hold. (What the drain writes to it before, through the
 * page cache, a crash leaves in a hidden file, which recovery removes:
 * the positions are the file's before, and its records are read again
 * from the buffers, or counted lost.) */
bool sync_naming(struct archiver *a)
{
	struct syncer *y = &a->sync;
	pthread_mutex_lock(&y->mu);
	bool n = y->naming != 0;
	pthread_mutex_unlock(&y->mu);
	return n;
}

/* A stage other than the current one that no write holds: a new one
 * while there may be more, else (if @wait) waited for while the syncer
 * writes; NULL if none, or if its writes fail (their error into *@err:
 * the disk is full, say; else 0). Whether another stage still waited for
 * the disk into *@lags, if not NULL. Bounded by the syncer: each write
 * ends, done or given up. */
static struct stage *stage_free(struct archiver *a, int *err, bool wait,
				bool *lags)
{
	struct syncer *y = &a->sync;
	struct stage *free_st = NULL;
	bool busy = false;
	pthread_mutex_lock(&y->mu);
	for (;;) { /* each turn finds one, fails, or waits for a write */
		for (unsigned i = 1; i < a->nstages; i++) {
			struct stage *st = &a->stage[(a->cur + i) % a->nstages];
			busy |= st->busy != 0;
			if (!st->busy && !free_st)
				free_st = st;
		}
		if (free_st || y->werr)
			break;
		if (stage_make(a)) {
			/* the syncer holds the others: only the drain makes
			 * stages or picks them */
			free_st = &a->stage[a->nstages - 1];
			break;
		}
		if (!wait)
			break;
		timed_wait(y, RETRY_MS);
	}
	*err = free_st ? 0 : -y->werr;
	pthread_mutex_unlock(&y->mu);
	if (lags)
		*lags = busy;
	return free_st;
}

/* The current stage's bytes: from its start to the file's end. */
static size_t staged(const struct archiver *a)
{
	return (size_t)(a->file_size - a->stage[a->cur].off);
}

static void stage_move(struct archiver *a, struct stage *to, uint64_t off,
		       const unsigned char *from, size_t n);

/* Every stage waits for the disk (it lags, or is busy with others'
 * writes): the current one goes through the page cache, like a slow
 * writer's bytes, and is filled again from its last unit on; the syncer
 * writes those pages out and drops them when it can. The drain never waits
 * for the disk. 0, or the error of the write. */
static int stage_overflow(struct archiver *a)
{
	uint64_t from = a->queued;
	int err = stage_write_out(a);
	if (err)
		return err;
	struct sync_job j = {.fd = dup(a->fd),
			     .op = SYNC_DROP,
			     .off = from,
			     .len = a->file_size - from};
	if (j.fd >= 0 && !sync_hand(a, &j, false))
		close(j.fd); /* its pages go with the file's, at its end */
	/* the block being filled follows the staged bytes: it moves too */
	struct stage *st = &a->stage[a->cur];
	uint64_t off = a->file_size & ~(uint64_t)(DIO_ALIGN - 1);
	size_t tail = (size_t)(a->file_size - off);
	stage_move(a, st, off, st->buf + (off - st->off), tail + a->out_len);
	a->out = st->buf + tail;
	a->overflows++;
	return 0;
}

/* Before a block of @len bytes is sealed into the current stage: 0 if it
 * can go to the disk after it, else the error of the syncer's writes,
 * one failing now too (nothing sealed then: the block stays as it is,
 * and the drain reads no more until the disk takes what it holds). */
int stage_room(struct archiver *a, size_t len)
{
	int err = write_error(a);
	if (err || staged(a) + len < STAGE_STEP)
		return err;
	if (stage_free(a, &err, false, NULL))
		return 0;
	return err ? err : stage_overflow(a);
}

/* @from (@n bytes, a stage's) to the start of @to, for file offset @off:
 * the current stage from there on. */
static void stage_move(struct archiver *a, struct stage *to, uint64_t off,
		       const unsigned char *from, size_t n)
{
	memmove(to->buf, from, n);
	to->off = off;
	a->cur = (unsigned)(to - a->stage);
}

/* The block sealed at a->out (@len bytes, its oldest record read at
 * @since_ms) is the file's. Once the stage holds STAGE_STEP bytes, its
 * whole units go to the syncer, and the rest begins the next stage (which
 * stage_room() found). */
void stage_add(struct archiver *a, size_t len, uint64_t since_ms)
{
	if (a->queued == a->file_size)
		a->queued_ms = since_ms;
	a->file_size += len;
	struct stage *st = &a->stage[a->cur];
	size_t n = staged(a);
	size_t whole = n & ~(size_t)(DIO_ALIGN - 1);
	int err;
	struct stage *next;
	if (n < STAGE_STEP ||
	    !(next = stage_free(a, &err, true, &a->disk_lags))) {
		a->out = st->buf + n;
		return;
	}
	/* from the first unit not handed over yet: a page-cache write may
	 * have taken some */
	uint64_t from = a->queued > st->off ? a->queued & ~(uint64_t)(DIO_ALIGN - 1)
					    : st->off;
	struct sync_job j = {.fd = dup(a->dfd),
			     .op = SYNC_WRITE,
			     .st = st,
			     .off = from,
			     .len = st->off + whole - from};
	if (j.fd >= 0 && j.len)
		sync_hand(a, &j, true); /* the stage is the syncer's till written */
	else if (j.fd >= 0)
		close(j.fd);
	if (j.fd < 0) {
		/* no descriptor: the stage goes through the page cache */
		stage_write_out(a);
	}
	if (a->queued < st->off + whole) {
		a->queued = st->off + whole;
		a->queued_ms = since_ms;
	}
	stage_move(a, next, st->off + whole, st->buf + whole, n - whole);
	a->out = next->buf + (n - whole);
}

/* The current stage's bytes not handed over yet, through the page cache
 * now: 0, or the error of the write (the file then as it was). */
int stage_write_out(struct archiver *a)
{
	if (a->fd < 0 || a->queued >= a->file_size)
		return 0;
	const struct stage *st = &a->stage[a->cur];
	const unsigned char *p = st->buf + (a->queued - st->off);
	size_t n = (size_t)(a->file_size - a->queued);
	uint64_t off = a->queued;
	while (n) { /* each turn writes something or fails */
		ssize_t w = pwrite(a->fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
		a->queued = off; /* the file holds it: blocks past are whole */
	}
	return 0;
}

/* How long the loop may wait before stage_write_out() is due (at most
 * @most ms); @most if nothing waits for it. */
int stage_wait_ms(const struct archiver *a, int most)
{
	if (a->queued >= a->file_size)
		return most;
	int64_t left = (int64_t)(a->queued_ms + BLOCK_MS) - (int64_t)mono_ms();
	return left <= 0 ? 0 : most < 0 || left < most ? (int)left : most;
}

/* Every byte of the current file on its way to the disk: the syncer's
 * writes waited for, the rest written through the page cache. 0, or the
 * error of a write: the bytes after a failed one are not written (a file
 * has no hole). */
int stage_finish(struct archiver *a)
{
	struct syncer *y = &a->sync;
	pthread_mutex_lock(&y->mu);
	/* bounded by the syncer: each write ends, done or given up (at the
	 * end, if the disk is still full) */
	for (;;) {
		bool busy = y->naming != 0;
		for (unsigned i = 0; i < a->nstages; i++)
			busy |= a->stage[i].busy != 0;
		if (!busy)
			break;
		if (y->werr && !y->gave_up && !cli_stop) {
			/* the disk is full: the drain keeps what it holds */
			int err = -y->werr;
			pthread_mutex_unlock(&y->mu);
			return err;
		}
		timed_wait(y, RETRY_MS);
	}
	int err = -y->werr;
	pthread_mutex_unlock(&y->mu);
	return err ? err : stage_write_out(a);
}

/* The current file is now a->fd, @path, a->file_size bytes long: the
 * stage from its last whole unit on, the bytes of that unit read back, the
 * block being filled moved after them; its O_DIRECT descriptor opened
 * (plain where the filesystem takes no O_DIRECT). Every stage is free
 * (stage_finish()). */
int stage_begin(struct archiver *a, const char *path)
{
	uint64_t off = a->file_size & ~(uint64_t)(DIO_ALIGN - 1);
	size_t tail = (size_t)(a->file_size - off);
	struct stage *st = &a->stage[(a->cur + 1) % a->nstages];
	memcpy(st->buf + tail, a->out, a->out_len);
	if (tail && pread(a->fd, st->buf, tail, (off_t)off) != (ssize_t)tail)
		return errno ? -errno : -EIO;
	int dfd = openat(a->dir_fd, path,
			 O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT);
	if (dfd < 0 && errno == EINVAL)
		dfd = openat(a->dir_fd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return -errno;
	if (a->dfd >= 0)
		close(a->dfd);
	a->dfd = dfd;
	st->off = off;
	a->cur = (unsigned)(st - a->stage);
	a->out = st->buf + tail;
	a->queued = a->file_size;
	return 0;
}

/* The syncer writes @len bytes of stage @st at file offset @off, through
 * @fd (a descriptor of ours, dup'ed for it). Without a descriptor to spare,
 * they are written here, once the syncer is done with what it holds. */
static void stage_hand(struct archiver *a, int fd, struct stage *st,
		       uint64_t off, uint64_t len)
{
	struct sync_job j = {.fd = dup(fd), .op = SYNC_WRITE, .st = st,
			     .off = off, .len = len};
	if (j.fd >= 0) {
		sync_hand(a, &j, true);
		return;
	}
	struct syncer *y = &a->sync;
	pthread_mutex_lock(&y->mu);
	while (y->len) /* bounded by the syncer: each chore ends */
		timed_wait(y, RETRY_MS);
	pthread_mutex_unlock(&y->mu);
	int err = write_bytes(y, a->fd, st->buf + (off - st->off), off, len);
	if (err) {
		pthread_mutex_lock(&y->mu);
		y->werr = -err;
		y->gave_up = true;
		pthread_mutex_unlock(&y->mu);
	}
}

/* A new file, @fd (made as @hidden, to be named @path), begins with @len
 * bytes at @head (malloc'ed: the syncer's now). The current file's bytes
 * still in its stage go to the syncer (whole units with O_DIRECT, the
 * last one's bytes through the page cache), then its end (SYNC_FILE),
 * then the new file's first bytes and its name (SYNC_NAME): the drain
 * waits for none of it. A file's end used to wait for every stage to be
 * written, which took 17-35 ms behind a writer at 10 M records/s, and
 * records were overwritten meanwhile. The block being filled follows the
 * first bytes in a stage of the new file's. 0, or an error (nothing
 * changed then; @head is the caller's still). */
int stage_next_file(struct archiver *a, int fd, const char *hidden,
		    const char *path, unsigned char *head, size_t len)
{
	size_t hidden_len = strlen(hidden) + 1, path_len = strlen(path) + 1;
	char *names = malloc(hidden_len + path_len);
	if (!names)
		return -ENOMEM;
	memcpy(names, hidden, hidden_len);
	memcpy(names + hidden_len, path, path_len);
	int err;
	struct stage *next = stage_free(a, &err, true, NULL);
	if (!next) {
		free(names);
		return err ? err : -ENOMEM;
	}
	struct sync_job h = {.fd = dup(fd), .op = SYNC_NAME, .data = head,
			     .len = len, .names = names};
	int dfd = -1;
	if (h.fd >= 0) {
		dfd = openat(a->dir_fd, hidden,
			     O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT);
		if (dfd < 0 && errno == EINVAL)
			dfd = openat(a->dir_fd, hidden,
				     O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (dfd < 0) {
		err = -errno;
		if (h.fd >= 0)
			close(h.fd);
		free(names);
		return err;
	}
	if (a->fd >= 0) {
		struct stage *st = &a->stage[a->cur];
		uint64_t units = a->file_size & ~(uint64_t)(DIO_ALIGN - 1);
		uint64_t from = a->queued > st->off
					? a->queued & ~(uint64_t)(DIO_ALIGN - 1)
					: st->off;
		if (from < units)
			stage_hand(a, a->dfd, st, from, units - from);
		from = a->queued > units ? a->queued : units;
		if (from < a->file_size)
			stage_hand(a, a->fd, st, from, a->file_size - from);
		struct sync_job e = {.fd = a->fd, .op = SYNC_FILE,
				     .len = a->file_size};
		sync_hand(a, &e, true); /* a->fd is the syncer's to close */
		a->fd = -1;
	}
	memcpy(next->buf, head, len);
	memcpy(next->buf + len, a->out, a->out_len);
	next->off = 0;
	sync_hand(a, &h, true);
	if (a->dfd >= 0)
		close(a->dfd);
	a->dfd = dfd;
	a->cur = (unsigned)(next - a->stage);
	a->out = next->buf + len;
	a->queued = len;
	a->queued_ms = mono_ms();
	return 0;
}
