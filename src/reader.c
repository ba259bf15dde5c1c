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
	int pending_lost; /* lane whose loss was just reported, or -1 */
	uint64_t now_raw; /* clock anchor for wall-time conversion */
	int64_t now_ns;
	char tagbuf[SHMLOG_TAG_MAX + 1];
	char *msgbuf;
	int failed; /* 0, or -EIO once the file was truncated under us */
	bool failure_reported;
	uint64_t faults; /* SIGBUS caught while copying */
};

/* ---- surviving a file truncated under the reader (SIGBUS) ---- */

struct bus_guard {
	sigjmp_buf env;
	const unsigned char *lo, *hi; /* the armed reader's mapping */
	const unsigned char *hdr; /* its separate page 0, or NULL */
};

/* The guard armed on this thread, if any. Set before and cleared after
 * every access to a mapping; the signal fences keep the compiler from
 * moving those accesses out of the armed window. */
static __thread struct bus_guard *volatile bus_armed;
static struct sigaction bus_prev; /* the disposition we replaced */
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void bus_handler(int sig, siginfo_t *si, void *ctx)
{
	struct bus_guard *g = bus_armed;
	const unsigned char *a = si ? (const unsigned char *)si->si_addr : NULL;
	if (g && si && si->si_code > 0 &&
	    ((a >= g->lo && a < g->hi) ||
	     (g->hdr && a >= g->hdr && a < g->hdr + SHMLOG__PAGE))) {
		bus_armed = NULL;
		siglongjmp(g->env, 1);
	}
	/* Not a reader's copy: behave as if we had never been installed. */
	if (bus_prev.sa_flags & SA_SIGINFO) {
		bus_prev.sa_sigaction(sig, si, ctx);
		return;
	}
	if (bus_prev.sa_handler != SIG_DFL && bus_prev.sa_handler != SIG_IGN) {
		bus_prev.sa_handler(sig);
		return;
	}
	/* Default action: die of this very signal. A fault would recur on
	 * return anyway; raise() covers a SIGBUS sent with kill(2). */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGBUS, &dfl, NULL);
	raise(SIGBUS);
}

static void bus_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bus_handler;
	sigemptyset(&sa.sa_mask);
	/* SA_NODEFER: we leave the handler with siglongjmp without restoring
	 * the signal mask (sigsetjmp(.., 0) costs no syscall), so SIGBUS must
	 * not be blocked while it runs. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigaction(SIGBUS, &sa, &bus_prev);
}

/* Every access to a mapping is bracketed so:
 *
 *	struct bus_guard g;
 *	if (sigsetjmp(g.env, 0) == 0) {
 *		bus_arm(r, &g);
 *		...touch the mapping...
 *		bus_disarm();
 *	} else {
 *		...it faulted: the file was truncated...
 *	}
 *
 * sigsetjmp() must run in the frame that stays live while the mapping is
 * touched, hence no wrapper function. */
static void bus_arm(const struct shmlog_reader *r, struct bus_guard *g)
{
	g->lo = r->seg.base;
	g->hi = r->seg.base + r->seg.size;
	g->hdr = r->seg.hdr_map;
	bus_armed = g;
	atomic_signal_fence(memory_order_seq_cst);
}

static void bus_disarm(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	bus_armed = NULL;
}

/* Back from the handler by siglongjmp: SA_NODEFER kept SIGBUS unblocked,
 * unless something between the kernel and us (a sanitizer's wrapper
 * handler) blocked it anyway. Unblock it, or the next fault would kill. */
static void bus_recovered(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGBUS);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
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

static void reader_anchor(struct shmlog_reader *r)
{
	r->now_raw = shmlog__clock_raw((int)r->seg.fixed.clock);
	r->now_ns = shmlog__realtime_ns();
}

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
	r->bodies = malloc((size_t)f->lane_count * f->max_record);
	r->msgbuf = malloc(f->max_record + 1);
	if (!r->lanes || !r->bodies || !r->msgbuf) {
		shmlog_reader_close(r);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->lane_count; i++)
		r->lanes[i].body = r->bodies + (size_t)i * f->max_record;
	pthread_once(&bus_once, bus_install);
	if (flags & SHMLOG_READ_TAIL) {
		struct bus_guard g;
		if (sigsetjmp(g.env, 0) == 0) {
			bus_arm(r, &g);
			for (unsigned i = 0; i < f->lane_count; i++)
				shmlog__lane_skip_to_head(&r->seg, i,
							  &r->lanes[i]);
			bus_disarm();
		} else {
			bus_recovered();
			shmlog_reader_close(r);
			return -EIO;
		}
	}
	r->pending_lost = -1;
	/* the reader's side of Dekker's pattern needs a real barrier; a
	 * registration makes GLOBAL_EXPEDITED usable for this process too */
	shmlog__membarrier_register();
	r->membarrier_ok = shmlog__membarrier() == 0;
	reader_anchor(r);
	*out = r;
	return 0;
}

void shmlog_reader_close(shmlog_reader_t *r)
{
	if (!r)
		return;
	shmlog__seg_detach(&r->seg);
	free(r->lanes);
	free(r->bodies);
	free(r->msgbuf);
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
	memcpy(r->tagbuf, c->body, h->tag_len);
	r->tagbuf[h->tag_len] = '\0';
	memcpy(r->msgbuf, c->body + h->tag_len, h->msg_len);
	r->msgbuf[h->msg_len] = '\0';
	out->seq = h->seq;
	out->raw_time = h->time;
	out->time_ns = shmlog__clock_to_ns(&r->seg.fixed, h->time, r->now_raw,
					   r->now_ns);
	out->pid = h->pid;
	out->tid = h->tid;
	out->prio = h->prio >= SHMLOG_VERBOSE && h->prio <= SHMLOG_FATAL
			    ? h->prio
			    : SHMLOG_INFO;
	out->flags = h->flags & SHMLOG_REC_TRUNCATED;
	out->lane = lane;
	out->tag = r->tagbuf;
	out->tag_len = h->tag_len;
	out->msg = r->msgbuf;
	out->msg_len = h->msg_len;
}

/* Earlier in time? Ties go to the lower lane (the scan order). */
static bool before(const struct shmlog__rlane *a, const struct shmlog__rlane *b)
{
	if (a->rec.time != b->rec.time)
		return a->rec.time < b->rec.time;
	return false;
}

/* Would a legitimate writer have produced this record? ring.c checked that
 * it fits its lane; what it cannot know is the reader's own limits. */
static bool rec_plausible(const struct shmlog__rec *h)
{
	return h->tag_len <= SHMLOG_TAG_MAX;
}

/* The body of shmlog_reader_next(), run with the mapping guarded. */
static int reader_next_guarded(struct shmlog_reader *r,
			       struct shmlog_record *rec,
			       struct shmlog_lost *lost)
{
	const struct shmlog__fixed *f = &r->seg.fixed;
	uint64_t clear = atomic_load_explicit(&r->seg.hdr->config.clear_raw,
					      memory_order_acquire);
	int best = -1;
	for (unsigned i = 0; i < f->lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		/* A few implausible records per lane and call at most: each
		 * fetch may walk the whole lane, and a hostile lane must not
		 * multiply that. The rest waits for the next call. */
		for (unsigned k = 0; k < 8; k++) {
			if (!shmlog__lane_fetch(&r->seg, i, c, clear))
				break;
			if (rec_plausible(&c->rec))
				break;
			c->have = false; /* garbage that fits: count, drop */
			c->torn++;
			c->lost_torn++;
		}
		if (!c->have)
			continue;
		if (best < 0 || before(c, &r->lanes[best]))
			best = (int)i;
	}
	if (best < 0)
		return SHMLOG_EV_NONE;
	struct shmlog__rlane *c = &r->lanes[best];
	if ((c->lost_overwritten || c->lost_torn) && lost) {
		lost->lane = (unsigned)best;
		lost->overwritten = c->lost_overwritten;
		lost->torn = c->lost_torn;
		c->lost_overwritten = c->lost_torn = 0;
		return SHMLOG_EV_LOST;
	}
	c->lost_overwritten = c->lost_torn = 0;
	fill_record(r, (unsigned)best, rec);
	c->have = false;
	c->read++;
	return SHMLOG_EV_RECORD;
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
	const struct shmlog__fixed *f = &r->seg.fixed;
	for (unsigned i = 0; i < f->lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		if (c->have)
			return true;
		uint64_t head = atomic_load_explicit(&seg_lane(&r->seg, i)->head,
						     memory_order_acquire);
		if (c->pos != head)
			return true;
	}
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

/* shmlog_reader_wait() with the mapping guarded. */
static int reader_wait_guarded(struct shmlog_reader *r, int timeout_ms)
{
	struct shmlog__hdr *hdr = r->seg.hdr;
	if (reader_has_new(r))
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
	/* pairs with LMM(E) in every writer: see ring.c, "Waking readers" */
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
	reader_anchor(r);
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
	/* next_seq lags by one if its writer died right after publishing */
	if (c->seq_known && (int64_t)(c->next_seq - next) > 0)
		next = c->next_seq;
	s.written = next - f->initial_seq;
	s.read = c->read;
	s.overwritten = c->overwritten;
	s.torn = c->torn;
	s.skipped = c->skipped;
	/* a writer that died inside a write: its record is torn, though no
	 * claimer has marked it yet */
	if (reserve != head && (!owner || !shmlog__owner_alive(owner))) {
		s.written++;
		s.torn++;
	}
	s.owner_pid = (uint32_t)(owner >> 32);
	s.owner_tid = (uint32_t)owner;
	*st = s;
	return 0;
}
