/* SPDX-License-Identifier: MIT */
/*
 * Waiting for records: a follower's looks every few microseconds, its
 * naps beside a writer at full speed, then its sleep on the buffer's
 * futex (ring.c, "Waking readers"); shmlog_reader_wait() on one reader,
 * shmlog_reader_wait_any() on several.
 *
 * What must hold: every wait is bounded by its timeout and returns
 * -EINTR when a signal interrupts a sleep, so that callers obey SIGINT
 * and SIGTERM; a follower never sleeps without first storing
 * notify.sleepers, a membarrier, and one more look (the reader's side of
 * the Dekker pair with LMM(W) in every writer); and a waiter that finds
 * nothing never spins longer than SPIN_NS before it naps or sleeps.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "archive_read.h"
#include "reader.h"

static int futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms)
{
	struct timespec ts, *tp = NULL;
	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
		tp = &ts;
	}
	if (syscall(SYS_futex, word, FUTEX_WAIT, val, tp, NULL, 0) == 0)
		return 0;
	if (errno == EAGAIN)
		return 0;
	return errno == ETIMEDOUT ? -ETIMEDOUT : errno == EINTR ? -EINTR : 0;
}

/* Readers that may not write page 0, or have no membarrier, poll. */
#define POLL_MS 10

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ---- following: a look every few microseconds, never sooner ---- */

/* A follower that has read everything (ring.c, "Following writers")
 * looks at the lanes every LOOK_STEP_NS, and goes back to read as soon as
 * a look finds a record: the head of a lane being written is loaded at
 * most every FOLLOW_LOOK_NS (cursor_look()), a lane nobody writes at every
 * step, for free. If nothing comes for SPIN_NS, it sleeps: no membarrier
 * and no FUTEX_WAKE for a follower that keeps up with a steady writer. */
#define LOOK_STEP_NS 1000
#define SPIN_NS 20000
/* ... unless a lane was written at full speed in the last FOLLOW_NAP_NS:
 * then it naps (nanosleep) from NAP_MIN_NS, twice as long each time up to
 * NAP_MAX_NS, looking after each nap, before it sleeps (follow_nap()). */
#define FOLLOW_NAP_NS 10000000
#define NAP_MIN_NS 20000
#define NAP_MAX_NS 1000000

/* Look at every lane once (@gated: a lane being written only if its last
 * look is FOLLOW_LOOK_NS old): is anything published past a cursor, or a
 * lane to be read now? */
static bool reader_look(struct shmlog_reader *r, uint64_t now, bool gated)
{
	bool any = false;
	/* every lane, each head loaded: what the reads that follow go to */
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++)
		any |= shmlog__cursor_look(&r->seg, i, &r->lanes[i], now,
					   gated) != 0;
	return any;
}

/* Pause until @until (CLOCK_MONOTONIC) without touching shared memory. */
static void spin_ns(uint64_t until)
{
	do {
		for (int i = 0; i < 16; i++)
			cpu_relax();
	} while (shmlog__clock_ns(CLOCK_MONOTONIC) < until);
}

/* Wait, spinning, until a look finds something to read (true), or until
 * nothing came for SPIN_NS (false: go to sleep). Bounded: a look that
 * finds nothing moves nothing, and SPIN_NS ends the loop; a lane that
 * moved is looked at again within FOLLOW_LOOK_NS, and then either has
 * more (true) or stopped (its next looks are free). */
static bool follow_spin(struct shmlog_reader *r)
{
	uint64_t t0 = shmlog__clock_ns(CLOCK_MONOTONIC), now = t0;
	for (;;) {
		if (reader_look(r, now, true))
			return true;
		if (now - t0 >= SPIN_NS)
			return false;
		spin_ns(now + LOOK_STEP_NS);
		now = shmlog__clock_ns(CLOCK_MONOTONIC);
	}
}

/* Was a lane written at full speed (cursor_look_pace()) less than
 * FOLLOW_NAP_NS before @now, or is the follower resting on one
 * (cursor_rest())? */
static bool reader_was_fast(const struct shmlog_reader *r, uint64_t now)
{
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++) {
		uint64_t t = r->lanes[i].fast_ns;
		if ((t && now - t < FOLLOW_NAP_NS) || r->lanes[i].rest_until_ns)
			return true;
	}
	return false;
}

/* Every rest (cursor_rest()) over now: the caller of a wait that only
 * looks asks for what there is, and a follower's one way to know that it
 * has read everything published (shmlog.h) is such a wait that finds
 * nothing. The cursor goes on where cursor_resting() puts it. */
static void reader_rest_end(struct shmlog_reader *r)
{
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++)
		if (r->lanes[i].rest_until_ns)
			r->lanes[i].rest_until_ns = 1; /* long past */
}

/* After follow_spin() found nothing: nap, looking after each nap, while
 * reader_was_fast(). The writer is between two bursts, or off its CPU for
 * a moment, or the follower rests from it: a follower that went to sleep
 * each time would cost that writer a FUTEX_WAKE, a system call in its
 * write, and an interrupt (the membarrier) each time (a resting one about
 * 2000 times a second); a nap costs it nothing, and a look after it at
 * most the one miss of any look. 1: a look found something (or a rest is
 * over); 0: the lanes are quiet, go to sleep; -ETIMEDOUT: @timeout_ms
 * (counted from @t0) ran out; -EINTR: a signal. Bounded: a look that
 * finds a lane fast returns 1, and a rest lasts at most
 * FOLLOW_REST_MAX_NS, so the loop ends FOLLOW_NAP_NS after the last look
 * that found one, or when the rest is over. */
static int follow_nap(struct shmlog_reader *r, uint64_t t0, int timeout_ms)
{
	uint64_t nap = NAP_MIN_NS;
	for (;;) {
		uint64_t now = shmlog__clock_ns(CLOCK_MONOTONIC);
		if (!reader_was_fast(r, now))
			return 0;
		uint64_t d = nap;
		if (timeout_ms >= 0) {
			uint64_t left = (uint64_t)timeout_ms * 1000000;
			if (now - t0 >= left)
				return -ETIMEDOUT;
			if (d > left - (now - t0))
				d = left - (now - t0);
		}
		struct timespec ts = {0, (long)d};
		if (nanosleep(&ts, NULL) < 0)
			return -EINTR;
		if (reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), true))
			return 1;
		nap = nap * 2 > NAP_MAX_NS ? NAP_MAX_NS : nap * 2;
	}
}

/* shmlog_reader_wait() with the mapping guarded. */
static int reader_wait_guarded(struct shmlog_reader *r, int timeout_ms)
{
	struct shmlog__hdr *hdr = r->seg.hdr;
	if (timeout_ms == 0) { /* no waiting: what is there now */
		reader_rest_end(r);
		return reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), false)
			       ? 0
			       : -ETIMEDOUT;
	}
	uint64_t t0 = shmlog__clock_ns(CLOCK_MONOTONIC);
	if (follow_spin(r))
		return 0;
	int napped = follow_nap(r, t0, timeout_ms);
	if (napped)
		return napped > 0 ? 0 : napped;
	if (!r->seg.hdr_writable || !r->membarrier_ok) {
		int step = timeout_ms < 0 || timeout_ms > POLL_MS ? POLL_MS
								  : timeout_ms;
		struct timespec d = {0, (long)step * 1000000};
		int err = nanosleep(&d, NULL) < 0 ? -EINTR : 0;
		if (reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), false))
			return 0;
		if (!err && timeout_ms >= 0 && timeout_ms <= POLL_MS)
			return -ETIMEDOUT;
		return err;
	}
	uint32_t seen = atomic_load_explicit(&hdr->notify.futex,
					     memory_order_acquire);
	atomic_store_explicit(&hdr->notify.sleepers, 1, memory_order_relaxed);
	/* pairs with LMM(W) in every writer: see ring.c, "Waking readers" */
	shmlog__membarrier();
	if (reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), false))
		return 0;
	/* futex(2) reports a truncated page as EFAULT, not SIGBUS */
	int err = futex_wait(&hdr->notify.futex, seen, timeout_ms);
	/* woken: the heads the next shmlog_reader_next() reads up to */
	reader_look(r, shmlog__clock_ns(CLOCK_MONOTONIC), false);
	return err;
}

int shmlog_reader_wait(shmlog_reader_t *r, int timeout_ms)
{
	if (r->arc)
		return shmlog__arc_wait(r->arc, timeout_ms);
	if (r->failed || reader_truncated(r)) {
		reader_fail(r, false);
		return r->failed;
	}
	int err;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		err = reader_wait_guarded(r, timeout_ms);
		bus_disarm();
	} else {
		reader_fail(r, true);
		return r->failed;
	}
	return err;
}
