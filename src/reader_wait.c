/* SPDX-License-Identifier: MIT */
/*
 * Waiting for records: a follower's looks every few microseconds, its
 * naps beside a writer at full speed, then its sleep on the buffer's
 * futex (wake.c, "Waking readers"); shmlog_reader_wait() on one reader,
 * shmlog_reader_wait_any() on several.
 *
 * What must hold: every wait is bounded by its timeout and returns
 * -EINTR when a signal interrupts a sleep, so that callers obey SIGINT
 * and SIGTERM; a follower never sleeps without first storing
 * notify.sleepers, a membarrier, and one more look (LMM(ring:S), the
 * reader's side of the Dekker pair with LMM(ring:W) in every writer);
 * and a waiter that finds nothing never spins longer than SPIN_NS
 * before it naps or sleeps.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "archive_read.h"
#include "reader.h"

/* Readers that may not write page 0, or have no membarrier, and
 * readers of an archive, are looked at every POLL_MS instead of sleeping
 * on a futex. */
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

/* A follower that has read everything (wake.c, "Following writers")
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

/* Is lane @c quiet after a look: nobody wrote it between its last two
 * looks, the cursor is at its head, it holds no record, and nothing else
 * (a rest, damage) calls for it? A look finds such a lane as it was for
 * as long as its head stays where it is: nothing the reader does moves
 * its cursor there, and nothing of the look's is to be updated. */
static bool lane_quiet(const struct shmlog__rlane *c)
{
	return c->begun && !c->have && !c->damaged && !c->rest_until_ns &&
	       c->looked_ns && c->head_seen == c->head_prev &&
	       c->pos == c->head_seen;
}

/* Look at every lane once (@gated: a lane being written only if its last
 * look is FOLLOW_LOOK_NS old): is anything published past a cursor, or a
 * lane to be read now? A lane quiet at its last look whose head has not
 * moved costs the load of its head: with hundreds of lanes and a few
 * writers, a look at the rest would otherwise go through each cursor. */
static bool reader_look(struct shmlog_reader *r, uint64_t now, bool gated)
{
	bool any = false;
	/* every lane, each head loaded: what the reads that follow go to */
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++) {
		if (shmlog__lane_still_quiet(r, i))
			continue;
		struct shmlog__rlane *c = &r->lanes[i];
		if (shmlog__cursor_look(&r->seg, i, c, now, gated))
			any = true;
		else if (lane_quiet(c))
			r->quiet[i] = c->head_seen;
	}
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

/* ---- a wait over a set of readers ---- */

/* The readers a wait is over: one (shmlog_reader_wait()) or several
 * (shmlog_reader_wait_any(); NULL entries are left alone). Each reader's
 * mapping is guarded on its own, look by look: a fault in one marks that
 * reader failed, and a failed reader is ready (its next call reports the
 * failure). */
struct wait_set {
	struct shmlog_reader *const *r;
	size_t n;
	size_t ready; /* the first reader a look found ready */
	uint64_t t0; /* CLOCK_MONOTONIC at the start of the wait */
	int timeout_ms; /* -1: none */
};

/* Has @r something for shmlog_reader_next(): a record published past a
 * cursor, a lane to read now, or a failure to report? */
static bool reader_ready(struct shmlog_reader *r, uint64_t now, bool gated)
{
	if (r->arc)
		return shmlog__arc_wait(r->arc, 0) == 0;
	if (r->failed)
		return true;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		bool any = reader_look(r, now, gated);
		bus_disarm();
		return any;
	}
	reader_fail(r, true);
	return true;
}

/* Look at every reader once: true with w->ready the first one ready. */
static bool set_look(struct wait_set *w, uint64_t now, bool gated)
{
	for (size_t i = 0; i < w->n; i++) {
		if (w->r[i] && reader_ready(w->r[i], now, gated)) {
			w->ready = i;
			return true;
		}
	}
	return false;
}

/* Nanoseconds left of the wait's timeout at @now; UINT64_MAX: none. */
static uint64_t set_left(const struct wait_set *w, uint64_t now)
{
	if (w->timeout_ms < 0)
		return UINT64_MAX;
	uint64_t all = (uint64_t)w->timeout_ms * 1000000;
	return now - w->t0 >= all ? 0 : all - (now - w->t0);
}

/* Sleep @ns (at most), then true if a signal cut the sleep short. */
static bool nap_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000),
			      (long)(ns % 1000000000)};
	return nanosleep(&ts, NULL) < 0;
}

/* Wait, spinning, until a look finds something to read (true), or until
 * nothing came for SPIN_NS (false: go to sleep). Bounded: a look that
 * finds nothing moves nothing, and SPIN_NS ends the loop; a lane that
 * moved is looked at again within FOLLOW_LOOK_NS, and then either has
 * more (true) or stopped (its next looks are free). */
static bool follow_spin(struct wait_set *w)
{
	uint64_t t0 = shmlog__clock_ns(CLOCK_MONOTONIC), now = t0;
	for (;;) {
		if (set_look(w, now, true))
			return true;
		if (now - t0 >= SPIN_NS)
			return false;
		spin_ns(now + LOOK_STEP_NS);
		now = shmlog__clock_ns(CLOCK_MONOTONIC);
	}
}

/* Was a lane of a reader in the set written at full speed lately, or
 * does one of them rest on a lane (reader_was_fast())? */
static bool set_was_fast(const struct wait_set *w, uint64_t now)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->r[i] && !w->r[i]->arc && !w->r[i]->failed &&
		    reader_was_fast(w->r[i], now))
			return true;
	return false;
}

/* After follow_spin() found nothing: nap, looking after each nap, while
 * set_was_fast(). The writer is between two bursts, or off its CPU for
 * a moment, or the follower rests from it: a follower that went to sleep
 * each time would cost that writer a FUTEX_WAKE, a system call in its
 * write, and an interrupt (the membarrier) each time (a resting one at
 * the end of every rest); a nap costs it nothing, and a look after it at
 * most the one miss of any look. 1: a look found something (or a rest is
 * over); 0: the lanes are quiet, go to sleep; -ETIMEDOUT: the timeout ran
 * out; -EINTR: a signal. Bounded: a look that finds a lane fast returns
 * 1, and a rest lasts at most FOLLOW_REST_MAX_NS, so the loop ends
 * FOLLOW_NAP_NS after the last look that found one, or when the rest is
 * over. */
static int follow_nap(struct wait_set *w)
{
	uint64_t nap = NAP_MIN_NS;
	for (;;) {
		uint64_t now = shmlog__clock_ns(CLOCK_MONOTONIC);
		if (!set_was_fast(w, now))
			return 0;
		uint64_t left = set_left(w, now);
		if (!left)
			return -ETIMEDOUT;
		if (nap_ns(nap < left ? nap : left))
			return -EINTR;
		if (set_look(w, shmlog__clock_ns(CLOCK_MONOTONIC), true))
			return 1;
		nap = nap * 2 > NAP_MAX_NS ? NAP_MAX_NS : nap * 2;
	}
}

/* Readers that cannot sleep on their buffer's futex (an archive, a
 * header page it may not write, no membarrier): a look every POLL_MS
 * until one is ready (0), the timeout runs out or a signal comes. */
static int set_poll(struct wait_set *w)
{
	for (;;) {
		uint64_t left = set_left(w, shmlog__clock_ns(CLOCK_MONOTONIC));
		if (!left)
			return -ETIMEDOUT;
		uint64_t step = (uint64_t)POLL_MS * 1000000;
		bool intr = nap_ns(step < left ? step : left);
		TESTPOINT(17);
		if (set_look(w, shmlog__clock_ns(CLOCK_MONOTONIC), false))
			return 0;
		if (intr)
			return -EINTR;
	}
}

/* futex_waitv(2) refused once: every later wait over several buffers
 * polls without trying it (relaxed: a stale false costs one more try). */
static _Atomic bool waitv_refused;

/* May every reader of the set sleep on its buffer's futex (and, for
 * several, futex_waitv(2) was not refused)? */
static bool set_can_sleep(const struct wait_set *w)
{
	size_t live = 0;
	for (size_t i = 0; i < w->n; i++) {
		const struct shmlog_reader *r = w->r[i];
		if (r && (r->arc || !r->seg.hdr_writable || !r->membarrier_ok))
			return false;
		live += r != NULL;
	}
	return live == 1 ||
	       !atomic_load_explicit(&waitv_refused, memory_order_relaxed);
}

/* Say to @r's writers that a reader sleeps (wake.c, "Waking readers"):
 * the futex word's value before, in *@seen. false: the mapping faulted
 * (the reader failed, and is ready). */
static bool reader_sleeps(struct shmlog_reader *r, uint32_t *seen)
{
	struct shmlog__hdr *hdr = r->seg.hdr;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		/* LMM(ring:U) the futex word before the flag; pairs with
		 * LMM(ring:V) */
		*seen = atomic_load_explicit(&hdr->notify.futex,
					     memory_order_acquire);
		atomic_store_explicit(&hdr->notify.sleepers, 1,
				      memory_order_relaxed);
		bus_disarm();
		return true;
	}
	reader_fail(r, true);
	return false;
}

/* One futex of one reader (FUTEX_WAIT, any kernel), or the futexes of
 * several at once (futex_waitv(2), Linux 5.16): 0 woken or a word
 * changed, -ETIMEDOUT, -EINTR, -ENOSYS (refused: poll, never a call
 * that fails at once over and over). futex(2)
 * reports a truncated page as EFAULT, not SIGBUS: 0, and the look after
 * it faults under the guard. */
static int futex_sleep(struct futex_waitv *v, size_t n, uint64_t left)
{
	long rc;
	if (n == 1) {
		struct timespec ts = {(time_t)(left / 1000000000),
				      (long)(left % 1000000000)};
		rc = syscall(SYS_futex, (void *)(uintptr_t)v[0].uaddr,
			     FUTEX_WAIT, (uint32_t)v[0].val,
			     left == UINT64_MAX ? NULL : &ts, NULL, 0);
	} else {
		/* futex_waitv(2) takes an absolute CLOCK_MONOTONIC time */
		uint64_t end = shmlog__clock_ns(CLOCK_MONOTONIC) + left;
		struct timespec ts = {(time_t)(end / 1000000000),
				      (long)(end % 1000000000)};
		rc = syscall(SYS_futex_waitv, v, (unsigned)n, 0,
			     left == UINT64_MAX ? NULL : &ts, CLOCK_MONOTONIC);
	}
	if (rc >= 0 || errno == EAGAIN || errno == EFAULT)
		return 0;
	if (errno == ETIMEDOUT || errno == EINTR)
		return -errno;
	if (n > 1) /* refused (an old kernel, a seccomp filter): poll */
		atomic_store_explicit(&waitv_refused, true,
				      memory_order_relaxed);
	return -ENOSYS;
}

/* Sleep once on the futexes of the set's buffers until a writer wakes
 * one, the timeout runs out or a signal comes: 0 with w->ready a reader
 * ready, 1 woken with nothing to read (a lane the follower rests on, a
 * wake-up for another reader of the buffer: spin and nap again),
 * -ETIMEDOUT, -EINTR; -ENOSYS: poll instead. It stores the sleepers
 * flags, then one membarrier (LMM(ring:S), pairs with LMM(ring:W) in
 * every writer: see wake.c, "Waking readers"), then looks before it
 * sleeps, so a record committed before a writer could see a flag is
 * found by the look. */
static int set_sleep(struct wait_set *w)
{
	struct futex_waitv v[SHMLOG_WAIT_ANY_MAX];
	size_t k = 0;
	for (size_t i = 0; i < w->n; i++) {
		uint32_t seen;
		if (!w->r[i])
			continue;
		if (!reader_sleeps(w->r[i], &seen)) {
			w->ready = i;
			return 0;
		}
		v[k] = (struct futex_waitv){
			.val = seen,
			.uaddr = (uintptr_t)&w->r[i]->seg.hdr->notify.futex,
			.flags = FUTEX_32,
		};
		k++;
	}
	/* LMM(ring:S) the sleepers flags before the look at the heads */
	shmlog__membarrier();
	if (set_look(w, shmlog__clock_ns(CLOCK_MONOTONIC), false))
		return 0;
	uint64_t left = set_left(w, shmlog__clock_ns(CLOCK_MONOTONIC));
	if (!left)
		return -ETIMEDOUT;
	int err = futex_sleep(v, k, left);
	/* woken: the heads the next shmlog_reader_next() reads up to */
	if (set_look(w, shmlog__clock_ns(CLOCK_MONOTONIC), false))
		return 0;
	return err ? err : 1;
}

/* The wait itself: 0 with w->ready, -ETIMEDOUT or -EINTR. */
static int set_wait(struct wait_set *w)
{
	w->t0 = shmlog__clock_ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < w->n; i++) {
		struct shmlog_reader *r = w->r[i];
		if (r && !r->arc && !r->failed && reader_truncated(r))
			reader_fail(r, false);
	}
	if (w->timeout_ms == 0) { /* no waiting: what is there now */
		for (size_t i = 0; i < w->n; i++)
			if (w->r[i] && !w->r[i]->arc && !w->r[i]->failed)
				reader_rest_end(w->r[i]);
		return set_look(w, w->t0, false) ? 0 : -ETIMEDOUT;
	}
	/* Bounded: each turn ends in a sleep bounded by the time left, and
	 * a turn that finds the time run out returns -ETIMEDOUT */
	for (;;) {
		if (follow_spin(w))
			return 0;
		int napped = follow_nap(w);
		if (napped)
			return napped > 0 ? 0 : napped;
		if (!set_left(w, shmlog__clock_ns(CLOCK_MONOTONIC)))
			return -ETIMEDOUT;
		if (!set_can_sleep(w))
			return set_poll(w);
		int err = set_sleep(w);
		if (err == -ENOSYS)
			return set_poll(w);
		if (err <= 0)
			return err;
	}
}

int shmlog_reader_wait(shmlog_reader_t *r, int timeout_ms)
{
	if (r->dump)
		return -EINVAL; /* a dump ends; nothing to wait for */
	if (r->arc)
		return shmlog__arc_wait(r->arc, timeout_ms);
	struct wait_set w = {.r = &r, .n = 1, .timeout_ms = timeout_ms};
	int err = set_wait(&w);
	return r->failed ? r->failed : err;
}

int shmlog_reader_wait_any(shmlog_reader_t *const *r, size_t n,
			   int timeout_ms)
{
	if (!r || n > SHMLOG_WAIT_ANY_MAX)
		return -EINVAL;
	struct wait_set w = {.r = r, .n = n, .timeout_ms = timeout_ms};
	size_t live = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i] && r[i]->dump)
			return -EINVAL;
		live += r[i] != NULL;
	}
	if (!live) { /* nothing to wait on: poll(2) with no descriptor */
		if (timeout_ms < 0)
			return -EINVAL;
		return nap_ns((uint64_t)timeout_ms * 1000000) ? -EINTR
							      : -ETIMEDOUT;
	}
	int err = set_wait(&w);
	return err ? err : (int)w.ready;
}
