/* SPDX-License-Identifier: MIT */
/*
 * Readers: a cursor per lane (ring.c copies and checks the records), merged
 * into one stream in time order, and the wait for new records.
 *
 * A reader trusts nothing it maps (docs/SECURITY.md). Besides the checks of
 * every offset and length (ring.c), two things protect it from the file
 * itself:
 *  - guard pages around the mapping (segment.c), so that a bug that reads
 *    past either end faults at once instead of reading other memory;
 *  - a SIGBUS handler: whoever may write the file may also ftruncate(2) it,
 *    and touching a page past the new end of a shared mapping raises
 *    SIGBUS. Every access a reader makes to the mapping runs with a
 *    thread-local jump buffer armed (bus_arm() .. bus_disarm()); the
 *    handler jumps back only for a fault inside the armed reader's
 *    mapping, and gives every other SIGBUS to the disposition it
 *    replaced. The reader then reports -EIO once and nothing more (see
 *    shmlog_reader_next()). An fstat(2) per batch of records catches a
 *    truncation the reader has not touched yet.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct shmlog_reader {
	struct shmlog__seg seg;
	struct shmlog__rlane *lanes;
	unsigned char *bodies;
	bool membarrier_ok;
	unsigned *heap; /* lanes holding a record, earliest first */
	unsigned heap_len;
	unsigned since_refresh; /* records since the last scan of all lanes */
	bool top_used; /* the heap top's record was returned */
	struct shmlog__clockmap clock; /* the segment's anchors, validated */
	int failed; /* 0, or -EIO once the file was truncated under us */
	bool failure_reported;
	uint64_t faults; /* SIGBUS caught while copying */
};

/* ---- surviving a file truncated under the reader (SIGBUS) ---- */

/* The guard (guard.c), under the names this file has always used. */
#define bus_guard shmlog__guard

static void bus_arm(const struct shmlog_reader *r, struct bus_guard *g)
{
	shmlog__guard_arm(g, &r->seg);
}

static void bus_disarm(void)
{
	shmlog__guard_disarm();
}

static void bus_recovered(void)
{
	shmlog__guard_recovered();
}

/* The mapping faulted, or the file is seen shorter than the mapping:
 * the reader is done. */
static void reader_fail(struct shmlog_reader *r, bool fault)
{
	r->failed = -EIO;
	if (fault) {
		bus_recovered();
		r->faults++;
	}
}

/* Has the file been truncated below what we mapped? One fstat, made once
 * per batch of records (when a reader runs out of records, and before it
 * sleeps), so that a reader that never touches the lost pages learns it
 * too. */
static bool reader_truncated(struct shmlog_reader *r)
{
	struct stat st;
	return fstat(r->seg.fd, &st) == 0 && (uint64_t)st.st_size < r->seg.size;
}

/* First report of a failure: -EIO, once; then nothing (SHMLOG_EV_NONE),
 * so that loops "until SHMLOG_EV_NONE" end. */
static int reader_report(struct shmlog_reader *r)
{
	if (r->failure_reported)
		return SHMLOG_EV_NONE;
	r->failure_reported = true;
	return r->failed;
}

/* A copy of the segment's clock anchors (clock.c); mapping guarded. */
static void reader_anchor(struct shmlog_reader *r)
{
	shmlog__clockmap_read(&r->seg.fixed, r->seg.hdr, &r->clock);
}

static void reader_start(struct shmlog_reader *r, bool at_tail);

int shmlog_reader_open(const char *name, int flags, shmlog_reader_t **out)
{
	if (flags & ~SHMLOG_READ_TAIL)
		return -EINVAL;
	struct shmlog_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	int err = shmlog__seg_attach(name, 0, &r->seg);
	if (err) {
		free(r);
		return err;
	}
	const struct shmlog__fixed *f = &r->seg.fixed;
	r->lanes = calloc(f->lane_count, sizeof(*r->lanes));
	r->heap = calloc(f->lane_count, sizeof(*r->heap));
	size_t body = f->max_record + 2;
	r->bodies = malloc((size_t)f->lane_count * body);
	if (!r->lanes || !r->bodies || !r->heap) {
		shmlog_reader_close(r);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->lane_count; i++)
		r->lanes[i].body = r->bodies + (size_t)i * body;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		reader_start(r, flags & SHMLOG_READ_TAIL);
		reader_anchor(r);
		bus_disarm();
	} else {
		bus_recovered();
		shmlog_reader_close(r);
		return -EIO;
	}
	/* the reader's side of Dekker's pattern needs a real barrier; a
	 * registration makes GLOBAL_EXPEDITED usable for this process too */
	shmlog__membarrier_register();
	r->membarrier_ok = shmlog__membarrier() == 0;
	*out = r;
	return 0;
}

void shmlog_reader_close(shmlog_reader_t *r)
{
	if (!r)
		return;
	shmlog__seg_detach(&r->seg);
	free(r->lanes);
	free(r->heap);
	free(r->bodies);
	free(r);
}

unsigned shmlog_reader_lanes(const shmlog_reader_t *r)
{
	return r->seg.fixed.lane_count;
}

static void fill_record(struct shmlog_reader *r, unsigned lane,
			struct shmlog_record *out)
{
	struct shmlog__rlane *c = &r->lanes[lane];
	const struct shmlog__rec *h = &c->rec;
	out->seq = h->seq;
	out->raw_time = h->time;
	/* the same record, the same time, in every reader (clock.c) */
	if (shmlog__clockmap_stale(&r->clock, r->seg.hdr, h->time))
		reader_anchor(r);
	out->time_ns = shmlog__clock_convert(&r->seg.fixed, &r->clock, h->time);
	out->pid = h->pid;
	out->tid = h->tid;
	out->prio = h->prio >= SHMLOG_VERBOSE && h->prio <= SHMLOG_FATAL
			    ? h->prio
			    : SHMLOG_INFO;
	out->flags = h->flags & SHMLOG_REC_TRUNCATED;
	out->lane = lane;
	out->tag = (const char *)c->body;
	out->tag_len = h->tag_len;
	out->msg = (const char *)c->body + h->tag_len + 1;
	out->msg_len = h->msg_len;
}

/* ---- merging lanes: a binary heap of the lanes holding a record ---- */

/* Earlier in time; ties go to the lower lane. */
static bool before(const struct shmlog_reader *r, unsigned a, unsigned b)
{
	uint64_t ta = r->lanes[a].rec.time, tb = r->lanes[b].rec.time;
	return ta != tb ? ta < tb : a < b;
}

static void heap_swap(struct shmlog_reader *r, unsigned i, unsigned j)
{
	unsigned t = r->heap[i];
	r->heap[i] = r->heap[j];
	r->heap[j] = t;
}

static void heap_push(struct shmlog_reader *r, unsigned lane)
{
	unsigned i = r->heap_len++;
	r->heap[i] = lane;
	while (i && before(r, r->heap[i], r->heap[(i - 1) / 2])) {
		heap_swap(r, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

/* The top's key changed (its lane holds a later record now): sift down. */
static void heap_sift_top(struct shmlog_reader *r)
{
	for (unsigned i = 0;;) {
		unsigned l = 2 * i + 1, m = i;
		if (l < r->heap_len && before(r, r->heap[l], r->heap[m]))
			m = l;
		if (l + 1 < r->heap_len && before(r, r->heap[l + 1], r->heap[m]))
			m = l + 1;
		if (m == i)
			break;
		heap_swap(r, i, m);
		i = m;
	}
}

static void heap_pop(struct shmlog_reader *r)
{
	r->heap[0] = r->heap[--r->heap_len];
	heap_sift_top(r);
}

/* Look for records in the lanes that had none. Done when the heap runs dry
 * and every REFRESH records, so a lane that was empty rejoins the merge
 * soon without every call paying for a scan of every lane. */
#define REFRESH 64

static void refresh(struct shmlog_reader *r, uint64_t clear)
{
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		if (!c->have && shmlog__lane_fetch(&r->seg, i, c, clear))
			heap_push(r, i);
	}
	r->since_refresh = 0;
}

/* The body of shmlog_reader_next(), run with the mapping guarded. */
static int reader_next_guarded(struct shmlog_reader *r,
			       struct shmlog_record *rec,
			       struct shmlog_lost *lost)
{
	uint64_t clear = atomic_load_explicit(&r->seg.hdr->config.clear_raw,
					      memory_order_acquire);
	/* The lane at the top gave its record last time, and its buffer is
	 * free again: refill it in place, or drop it from the heap. */
	if (r->top_used) {
		unsigned top = r->heap[0];
		if (shmlog__lane_fetch(&r->seg, top, &r->lanes[top], clear))
			heap_sift_top(r);
		else
			heap_pop(r);
		r->top_used = false;
	}
	if (!r->heap_len || r->since_refresh >= REFRESH)
		refresh(r, clear);
	if (!r->heap_len)
		return SHMLOG_EV_NONE;
	unsigned lane = r->heap[0];
	struct shmlog__rlane *c = &r->lanes[lane];
	if ((c->lost_overwritten || c->lost_torn) && lost) {
		lost->lane = lane;
		lost->overwritten = c->lost_overwritten;
		lost->torn = c->lost_torn;
		c->lost_overwritten = c->lost_torn = 0;
		return SHMLOG_EV_LOST;
	}
	c->lost_overwritten = c->lost_torn = 0;
	fill_record(r, lane, rec);
	c->have = false;
	c->read++;
	r->top_used = true;
	r->since_refresh++;
	return SHMLOG_EV_RECORD;
}

/* Where a new reader starts, fixed now, at open: after the newest record
 * of every lane (at_tail), or at the oldest one. Either way, what is lost
 * from now on is reported (SHMLOG_EV_LOST); what was gone before the
 * reader came is only counted. An empty lane starts at its head; a lane
 * with records has its oldest one fetched now. */
static void reader_start(struct shmlog_reader *r, bool at_tail)
{
	uint64_t clear = atomic_load_explicit(&r->seg.hdr->config.clear_raw,
					      memory_order_acquire);
	const struct shmlog__fixed *f = &r->seg.fixed;
	for (unsigned i = 0; i < f->lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		if (at_tail) {
			shmlog__lane_skip_to_head(&r->seg, i, c);
		} else if (shmlog__lane_empty(&r->seg, i)) {
			/* whatever the lane wrote is gone (its chunks went to
			 * other writers): counted, not reported */
			shmlog__lane_skip_to_head(&r->seg, i, c);
			if (c->next_seq - f->initial_seq < (UINT64_C(1) << 62))
				c->overwritten += c->next_seq - f->initial_seq;
		}
	}
	if (!at_tail)
		refresh(r, clear);
}

int shmlog_reader_next(shmlog_reader_t *r, struct shmlog_record *rec,
		       struct shmlog_lost *lost)
{
	if (r->failed)
		return reader_report(r);
	struct shmlog_record out;
	struct shmlog_lost l;
	int ev;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		ev = reader_next_guarded(r, &out, lost ? &l : NULL);
		bus_disarm();
	} else {
		reader_fail(r, true);
		return reader_report(r);
	}
	if (ev == SHMLOG_EV_NONE && reader_truncated(r)) {
		reader_fail(r, false);
		return reader_report(r);
	}
	if (ev == SHMLOG_EV_RECORD)
		*rec = out;
	else if (ev == SHMLOG_EV_LOST && lost)
		*lost = l;
	return ev;
}

/* Is anything new published in any lane? */
static bool reader_has_new(struct shmlog_reader *r)
{
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++)
		if (shmlog__lane_has_new(&r->seg, i, &r->lanes[i]))
			return true;
	return false;
}

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
#endif
}

/* Before going to sleep, watch the lanes for a moment. A writer that logs
 * steadily commits again within microseconds; catching that here spares
 * the membarrier (an interrupt on every CPU running a writer) and the
 * writer's FUTEX_WAKE, which otherwise come with every sleep of a reader
 * that keeps up. Bounded: SPIN_NS, then sleep. */
#define SPIN_NS 20000

static bool spin_for_new(struct shmlog_reader *r)
{
	uint64_t deadline = shmlog__clock_ns(CLOCK_MONOTONIC) + SPIN_NS;
	do {
		for (int i = 0; i < 64; i++)
			cpu_relax();
		if (reader_has_new(r))
			return true;
	} while (shmlog__clock_ns(CLOCK_MONOTONIC) < deadline);
	return false;
}

/* shmlog_reader_wait() with the mapping guarded. */
static int reader_wait_guarded(struct shmlog_reader *r, int timeout_ms)
{
	struct shmlog__hdr *hdr = r->seg.hdr;
	if (reader_has_new(r) || (timeout_ms != 0 && spin_for_new(r)))
		return 0;
	if (!r->seg.hdr_writable || !r->membarrier_ok) {
		int step = timeout_ms < 0 || timeout_ms > POLL_MS ? POLL_MS
								  : timeout_ms;
		struct timespec d = {0, (long)step * 1000000};
		if (nanosleep(&d, NULL) < 0)
			return -EINTR;
		if (!reader_has_new(r) && timeout_ms >= 0 &&
		    timeout_ms <= POLL_MS)
			return -ETIMEDOUT;
		return 0;
	}
	uint32_t seen = atomic_load_explicit(&hdr->notify.futex,
					     memory_order_acquire);
	atomic_store_explicit(&hdr->notify.sleepers, 1, memory_order_relaxed);
	/* pairs with LMM(W) in every writer: see ring.c, "Waking readers" */
	shmlog__membarrier();
	if (reader_has_new(r))
		return 0;
	/* futex(2) reports a truncated page as EFAULT, not SIGBUS */
	return futex_wait(&hdr->notify.futex, seen, timeout_ms);
}

int shmlog_reader_wait(shmlog_reader_t *r, int timeout_ms)
{
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

int shmlog_reader_lane_stats(const shmlog_reader_t *r, unsigned lane,
			     struct shmlog_lane_stats *st)
{
	const struct shmlog__fixed *f = &r->seg.fixed;
	if (lane >= f->lane_count)
		return -EINVAL;
	const struct shmlog__lane *l = seg_lane(&r->seg, lane);
	const struct shmlog__rlane *c = &r->lanes[lane];
	struct shmlog_lane_stats s;
	memset(&s, 0, sizeof(s));
	uint64_t owner, head, reserve, next;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		owner = atomic_load(&l->owner);
		head = atomic_load(&l->head);
		reserve = atomic_load(&l->reserve);
		next = atomic_load(&l->next_seq);
		bus_disarm();
	} else {
		bus_recovered();
		/* the counters are the reader's; the writers' are gone */
		owner = head = reserve = 0;
		next = c->seq_known ? c->next_seq : f->initial_seq;
	}
	/* alive by a lock (owner.c), not by the pid in the word */
	int alive = owner ? shmlog__owner_alive(&r->seg, lane, owner) : 0;
	/* next_seq lags by one if its writer died right after publishing */
	if (c->seq_known && (int64_t)(c->next_seq - next) > 0)
		next = c->next_seq;
	s.written = next - f->initial_seq;
	s.read = c->read;
	s.overwritten = c->overwritten;
	s.torn = c->torn;
	s.skipped = c->skipped;
	s.corrupt = c->corrupt;
	/* a writer that died inside a write: its record is torn, though no
	 * claimer has marked it yet */
	if (reserve != head && alive == 0) {
		s.written++;
		s.torn++;
	}
	if (shmlog__is_borrow_word(owner)) { /* a borrower: tid only */
		s.owner_pid = 0;
		s.owner_tid = (uint32_t)owner & ((1u << 22) - 1);
	} else {
		s.owner_pid = (uint32_t)(owner >> 32);
		s.owner_tid = (uint32_t)owner;
	}
	s.owner_alive = alive > 0 || (alive < 0 && owner);
	*st = s;
	return 0;
}
