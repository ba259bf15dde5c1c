/* SPDX-License-Identifier: MIT */
/*
 * Readers: a cursor per lane (ring.c copies and checks the records), merged
 * into one stream in time order, and the wait for new records.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
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
};

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
	if (flags & SHMLOG_READ_TAIL)
		for (unsigned i = 0; i < f->lane_count; i++)
			shmlog__lane_skip_to_head(&r->seg, i, &r->lanes[i]);
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

int shmlog_reader_next(shmlog_reader_t *r, struct shmlog_record *rec,
		       struct shmlog_lost *lost)
{
	const struct shmlog__fixed *f = &r->seg.fixed;
	uint64_t clear = atomic_load_explicit(&r->seg.hdr->config.clear_raw,
					      memory_order_acquire);
	int best = -1;
	for (unsigned i = 0; i < f->lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		if (!shmlog__lane_fetch(&r->seg, i, c, clear))
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

int shmlog_reader_wait(shmlog_reader_t *r, int timeout_ms)
{
	struct shmlog__hdr *hdr = r->seg.hdr;
	int err = 0;
	if (reader_has_new(r))
		goto out;
	if (!r->seg.hdr_writable || !r->membarrier_ok) {
		int step = timeout_ms < 0 || timeout_ms > POLL_MS ? POLL_MS
								  : timeout_ms;
		struct timespec d = {0, (long)step * 1000000};
		if (nanosleep(&d, NULL) < 0)
			err = -EINTR;
		else if (!reader_has_new(r) && timeout_ms >= 0 &&
			 timeout_ms <= POLL_MS)
			err = -ETIMEDOUT;
		goto out;
	}
	uint32_t seen = atomic_load_explicit(&hdr->notify.futex,
					     memory_order_acquire);
	atomic_store_explicit(&hdr->notify.sleepers, 1, memory_order_relaxed);
	/* pairs with LMM(E) in every writer: see ring.c, "Waking readers" */
	shmlog__membarrier();
	if (reader_has_new(r))
		goto out;
	err = futex_wait(&hdr->notify.futex, seen, timeout_ms);
out:
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
	uint64_t owner = atomic_load(&l->owner);
	uint64_t head = atomic_load(&l->head);
	uint64_t reserve = atomic_load(&l->reserve);
	uint64_t next = atomic_load(&l->next_seq);
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
