/* SPDX-License-Identifier: MIT */
/*
 * The reader API (shmlog.h): opening a buffer, the lanes merged into one
 * stream in time order by a binary heap of the lanes holding a record, and
 * what a reader says about lanes and their writers. Cursors are in
 * reader_cursor.c, waits in reader_wait.c, the archiver's batches in
 * reader_raw.c; reader.h says what they share and how the reader
 * survives a file truncated under it.
 *
 * What must hold: each lane gives its records in sequence order and the
 * merge hands out the earliest pending record (ties to the lower lane);
 * every access to the mapping runs under the SIGBUS guard; the caller's
 * out-parameters are written only when an event is returned.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "archive_read.h"
#include "reader.h"

static void reader_start(struct shmlog_reader *r, bool at_tail);

/* A dump ends where each lane ends at its first read: at its next_seq
 * (the newest record of a lane being written at that instant may be past
 * it). */
static void dump_ends(struct shmlog_reader *r)
{
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++)
		r->lanes[i].end_seq = atomic_load_explicit(
			&seg_lane(&r->seg, i)->next_seq, memory_order_acquire);
	r->dump_set = true;
}

int shmlog_reader_open(const char *name, int flags, shmlog_reader_t **out)
{
	if (flags & ~(SHMLOG_READ_TAIL | SHMLOG_READ_DUMP))
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
	r->quiet = malloc(f->lane_count * sizeof(*r->quiet));
	size_t body = f->max_record + 2;
	r->bodies = malloc((size_t)f->lane_count * body);
	if (!r->lanes || !r->bodies || !r->heap || !r->quiet) {
		shmlog_reader_close(r);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->lane_count; i++) {
		r->lanes[i].body = r->bodies + (size_t)i * body;
		r->quiet[i] = QUIET_NONE;
	}
	r->order_slack = shmlog__clock_raw_us(f);
	r->dump = flags & SHMLOG_READ_DUMP;
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

int shmlog__reader_wrap_archive(struct shmlog__arc *a, int flags,
				shmlog_reader_t **out)
{
	struct shmlog_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->arc = a;
	r->dump = flags & SHMLOG_READ_DUMP;
	*out = r;
	return 0;
}

void shmlog_reader_close(shmlog_reader_t *r)
{
	if (!r)
		return;
	if (r->arc) {
		shmlog__arc_close(r->arc);
		free(r);
		return;
	}
	shmlog__seg_detach(&r->seg);
	free(r->lanes);
	free(r->heap);
	free(r->quiet);
	free(r->bodies);
	free(r->span);
	free(r);
}

unsigned shmlog_reader_lanes(const shmlog_reader_t *r)
{
	if (r->arc)
		return shmlog__arc_lanes(r->arc);
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
	r->deferred = h->flags & REC_FLAG_DEFERRED;
	if (r->deferred && r->raw) {
		/* as stored: the archiver keeps the values, readers of the
		 * archive format them (reader_raw.h) */
		out->flags |= SHMLOG_REC_DEFERRED;
	} else if (r->deferred) {
		/* a format in the table and the values: the text is made
		 * here (fmtarg_table.c), never trusting either */
		const unsigned char *m = (const unsigned char *)out->msg;
		size_t n = shmlog__defer_format(&r->seg, m, h->msg_len, r->text,
						sizeof(r->text), r->fmt,
						sizeof(r->fmt), &r->fmt_len);
		r->args = m + 4;
		r->args_len = h->msg_len >= 4 ? h->msg_len - 4u : 0;
		out->msg = r->text;
		out->msg_len = n;
		out->flags |= SHMLOG_REC_DEFERRED;
		if (n == sizeof(r->text) - 1)
			out->flags |= SHMLOG_REC_TRUNCATED;
	}
}

/* ---- merging lanes: a binary heap of the lanes holding a record ---- */

/* Earlier in time; ties go to the lower lane. */
static inline bool before(const struct heap_slot *a, const struct heap_slot *b)
{
	return a->time != b->time ? a->time < b->time : a->lane < b->lane;
}

static void heap_push(struct shmlog_reader *r, unsigned lane)
{
	struct heap_slot x = {r->lanes[lane].rec.time, lane};
	unsigned i = r->heap_len++;
	while (i && before(&x, &r->heap[(i - 1) / 2])) {
		r->heap[i] = r->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	r->heap[i] = x;
}

/* Put @x at the top and sift it down to its place: the hole moves down,
 * the slot is written once. */
static void heap_sift_down(struct shmlog_reader *r, struct heap_slot x)
{
	unsigned n = r->heap_len, i = 0;
	for (;;) {
		unsigned l = 2 * i + 1;
		if (l >= n)
			break;
		if (l + 1 < n && before(&r->heap[l + 1], &r->heap[l]))
			l++;
		if (!before(&r->heap[l], &x))
			break;
		r->heap[i] = r->heap[l];
		i = l;
	}
	r->heap[i] = x;
}

/* The top's lane holds a later record now: sift it down. */
static void heap_sift_top(struct shmlog_reader *r)
{
	struct heap_slot x = r->heap[0];
	x.time = r->lanes[x.lane].rec.time;
	heap_sift_down(r, x);
}

static void heap_pop(struct shmlog_reader *r)
{
	struct heap_slot x = r->heap[--r->heap_len];
	if (r->heap_len)
		heap_sift_down(r, x);
}

/* Look for records in the lanes that had none. Done when the heap runs dry,
 * every REFRESH records (reader.h), and when the top is not known to be
 * the earliest (top_unsure()). */
static void refresh(struct shmlog_reader *r, uint64_t clear)
{
	r->scanned_raw = shmlog__clock_raw((int)r->seg.fixed.clock);
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		/* a lane with nothing new (most, in a buffer with more lanes
		 * than writers) costs a load: of its head alone if a
		 * follower's look found it quiet */
		if (shmlog__lane_still_quiet(r, i))
			continue;
		if (!c->have && shmlog__cursor_has_new(&r->seg, i, c) &&
		    shmlog__cursor_fetch(&r->seg, i, c, clear))
			heap_push(r, i);
	}
	r->since_refresh = 0;
}

/* Is the heap's top possibly not the earliest record published? A lane
 * found empty at the last scan may hold one since. Any writer's record
 * may arrive late that way: its time is taken before it is published. But
 * a thread that moved lanes (it borrowed a shared lane, then got one of
 * its own) published its last record in the old lane before it stamped
 * its first in the new one, and that order must hold. So a top stamped
 * after the last scan began (less the slack) calls for a new scan: every
 * record of the same thread published before the top was stamped is
 * found by it. A top stamped before the scan needs none: a reader behind
 * its writers (a dump, a follower catching up) scans every REFRESH
 * records, as before; one that keeps up scans once a record. A follower
 * looks at a lane being written at most once every few microseconds
 * (reader_cursor.c): a thread's record written that shortly before it
 * moved may come after its next one. */
static bool top_unsure(const struct shmlog_reader *r)
{
	return r->heap_len < r->seg.fixed.lane_count &&
	       shmlog__reader_after_scan(r, r->heap[0].time);
}

/* Has any lane but @lane anything new (or is one not read yet, or
 * damaged and changed since)? Each is looked at once, a load of its
 * head, nothing fetched. If none has, this look stands for a scan by
 * refresh(), which would have found nothing either: the scan's time
 * moves to before it. The caller counts REFRESH records from there.
 * Not shmlog__cursor_has_new(): that one says "new" for any lane a
 * follower saw moving and has not looked at again (its pacing), which
 * here would cut the archiver's spans behind every writer; this one
 * loads every head, as the order needs. */
bool shmlog__reader_others_new(struct shmlog_reader *r, unsigned lane)
{
	uint64_t began = shmlog__clock_raw((int)r->seg.fixed.clock);
	for (unsigned i = 0; i < r->seg.fixed.lane_count; i++) {
		const struct shmlog__rlane *c = &r->lanes[i];
		if (i == lane || shmlog__lane_still_quiet(r, i) || c->have ||
		    c->ended)
			continue;
		if (c->damaged) {
			if (shmlog__cursor_lane_changed(&r->seg, i, c))
				return true;
			continue;
		}
		if (!c->begun)
			return true;
		/* LMM(ring:F) */
		if (pos_before(c->pos,
			       atomic_load_explicit(&seg_lane(&r->seg, i)->head,
						    memory_order_acquire)))
			return true;
	}
	r->scanned_raw = began;
	return false;
}

/* Lane @lane's records lost before its next one, up to @last: into @lost
 * (true), or dropped if the caller does not want them. */
static bool loss_report(struct shmlog_reader *r, unsigned lane,
			uint64_t last, struct shmlog_lost *lost)
{
	struct shmlog__rlane *c = &r->lanes[lane];
	bool any = c->lost_overwritten || c->lost_torn;
	if (any && lost) {
		lost->lane = lane;
		lost->overwritten = c->lost_overwritten;
		lost->torn = c->lost_torn;
		r->lost_known = true;
		r->lost_first = c->lost_first;
		r->lost_last = last;
	}
	c->lost_overwritten = c->lost_torn = 0;
	return any && lost;
}

/* A dump (SHMLOG_READ_DUMP): is the top's record past its lane's end?
 * Then the lane is done, its record dropped; what it lost is cut at the
 * end (records lost past it were never the dump's). */
static bool dump_top_ended(struct shmlog_reader *r)
{
	struct shmlog__rlane *c = &r->lanes[r->heap[0].lane];
	if ((int64_t)(c->rec.seq - c->end_seq) < 0)
		return false;
	c->have = false;
	c->ended = true;
	uint64_t within = (int64_t)(c->end_seq - c->lost_first) > 0
				  ? c->end_seq - c->lost_first
				  : 0;
	if (c->lost_torn > within)
		c->lost_torn = within;
	if (c->lost_overwritten > within - c->lost_torn)
		c->lost_overwritten = within - c->lost_torn;
	return true;
}

/* The body of shmlog_reader_next(), run with the mapping guarded. */
int shmlog__reader_next_guarded(struct shmlog_reader *r,
				struct shmlog_record *rec,
				struct shmlog_lost *lost)
{
	/* LMM(config:B) pairs with LMM(config:A) */
	uint64_t clear = atomic_load_explicit(&r->seg.hdr->config.clear_raw,
					      memory_order_acquire);
	if (r->dump && !r->dump_set)
		dump_ends(r);
	/* The lane at the top gave its record last time, and its buffer is
	 * free again: refill it in place, or drop it from the heap. */
	if (r->top_used) {
		unsigned top = r->heap[0].lane;
		if (shmlog__cursor_fetch(&r->seg, top, &r->lanes[top], clear))
			heap_sift_top(r);
		else
			heap_pop(r);
		r->top_used = false;
	}
	if (!r->heap_len || r->since_refresh >= REFRESH)
		refresh(r, clear);
	if (r->heap_len && top_unsure(r))
		refresh(r, clear); /* once: the top now predates the scan */
	/* a dump's lane ends at its first record past the end (bounded: each
	 * turn takes a lane out for good) */
	while (r->dump && r->heap_len && dump_top_ended(r)) {
		unsigned lane = r->heap[0].lane;
		heap_pop(r);
		if (loss_report(r, lane, r->lanes[lane].end_seq - 1, lost))
			return SHMLOG_EV_LOST;
	}
	if (!r->heap_len)
		return SHMLOG_EV_NONE;
	unsigned lane = r->heap[0].lane;
	struct shmlog__rlane *c = &r->lanes[lane];
	/* they end before the record that follows them */
	if (loss_report(r, lane, c->rec.seq - 1, lost))
		return SHMLOG_EV_LOST;
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
	/* LMM(config:B) pairs with LMM(config:A) */
	uint64_t clear = atomic_load_explicit(&r->seg.hdr->config.clear_raw,
					      memory_order_acquire);
	const struct shmlog__fixed *f = &r->seg.fixed;
	for (unsigned i = 0; i < f->lane_count; i++) {
		struct shmlog__rlane *c = &r->lanes[i];
		if (at_tail) {
			shmlog__cursor_skip_to_head(&r->seg, i, c);
		} else if (shmlog__lane_empty(&r->seg, i)) {
			/* whatever the lane wrote is gone (its chunks went to
			 * other writers): counted, not reported */
			shmlog__cursor_skip_to_head(&r->seg, i, c);
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
	if (r->arc)
		return shmlog__arc_next(r->arc, rec, lost);
	if (r->failed)
		return reader_report(r);
	struct shmlog_record out;
	struct shmlog_lost l;
	int ev;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		ev = shmlog__reader_next_guarded(r, &out, lost ? &l : NULL);
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

int shmlog_reader_lane_stats(const shmlog_reader_t *r, unsigned lane,
			     struct shmlog_lane_stats *st)
{
	if (r->arc)
		return shmlog__arc_lane_stats(r->arc, lane, st);
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
	/* alive by a lock (lane.c), not by the pid in the word */
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

/* The writer an ident names, and whether it still holds lane @lane
 * (UINT32_MAX: the ident says no lane). */
static int ident_writer(const shmlog_reader_t *r, const struct shmlog__ident *id,
			unsigned lane_arg, struct shmlog_lane_writer *w)
{
	struct shmlog_lane_writer out;
	memset(&out, 0, sizeof(out));
	/* volatile: set between sigsetjmp() and a possible siglongjmp() */
	volatile uint64_t owner = 0;
	volatile unsigned lane = lane_arg;
	uint32_t id_lane = 0;
	int err;
	struct bus_guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		bus_arm(r, &g);
		err = shmlog__ident_load(id, &out.pid, &out.tid, &id_lane,
					 out.name);
		if (lane == UINT32_MAX && (id_lane & ~IDENT_DIED) - 1 <
						  r->seg.fixed.lane_count)
			lane = (id_lane & ~IDENT_DIED) - 1;
		if (!err && lane != UINT32_MAX)
			owner = atomic_load(&seg_lane(&r->seg, lane)->owner);
		bus_disarm();
	} else {
		bus_recovered();
		return -EIO;
	}
	if (err)
		return err;
	out.died = (id_lane & IDENT_DIED) != 0;
	/* alive: the lane is still the one it claimed (its owner word) and
	 * a live process holds the lane's lock (lane.c) */
	if (owner && owner == shmlog__owner_word(out.pid, out.tid) &&
	    !shmlog__is_borrow_word(owner)) {
		int alive = shmlog__owner_alive(&r->seg, lane, owner);
		out.alive = alive > 0 || alive < 0;
	}
	*w = out;
	return 0;
}

int shmlog_reader_lane_writer(const shmlog_reader_t *r, unsigned lane,
			      struct shmlog_lane_writer *w)
{
	if (r->arc)
		return -ENOENT; /* archives keep no lanes' writers */
	if (lane >= r->seg.fixed.lane_count)
		return -EINVAL;
	return ident_writer(r, &seg_lane(&r->seg, lane)->ident, lane, w);
}

int shmlog_reader_recent_writer(const shmlog_reader_t *r, unsigned i,
				struct shmlog_lane_writer *w)
{
	if (r->arc)
		return -ENOENT;
	if (i >= SHMLOG_RECENT_WRITERS)
		return -EINVAL;
	_Static_assert(SHMLOG_RECENT_WRITERS == SHMLOG__RECENT,
		       "the API's count is the segment's");
	return ident_writer(r, &hdr_recent(r->seg.hdr)->slot[i], UINT32_MAX,
			    w);
}

int shmlog_reader_deferred(const shmlog_reader_t *r, const char **fmt,
			   char *args, size_t cap)
{
	if (r->arc)
		return shmlog__arc_deferred(r->arc, fmt, args, cap);
	if (!r->deferred || r->raw)
		return -ENOENT;
	if (fmt)
		*fmt = r->fmt[0] ? r->fmt : NULL;
	/* the block is in the lane's body, copied out already: no mapping
	 * is read here */
	if (args && cap)
		return shmlog__defer_args_json(r->args, r->args_len, args, cap);
	return 0;
}

int shmlog__reader_args(const struct shmlog_reader *r,
			const unsigned char **args, size_t *len)
{
	if (r->arc || !r->deferred)
		return -ENOENT;
	*args = r->args;
	*len = r->args_len;
	return 0;
}

int shmlog_reader_lost_seq(const shmlog_reader_t *r, uint64_t *first,
			   uint64_t *last)
{
	if (r->arc)
		return shmlog__arc_lost_seq(r->arc, first, last);
	if (!r->lost_known)
		return -ENOENT;
	*first = r->lost_first;
	*last = r->lost_last;
	return 0;
}

int shmlog_reader_lane_next_seq(const shmlog_reader_t *r, unsigned lane,
				uint64_t *next)
{
	if (r->arc)
		return shmlog__arc_lane_next_seq(r->arc, lane, next);
	struct shmlog_lane_stats st;
	int err = shmlog_reader_lane_stats(r, lane, &st);
	if (err)
		return err;
	*next = r->seg.fixed.initial_seq + st.written;
	return 0;
}

int shmlog_reader_archive_source(const shmlog_reader_t *r, const char *buffer,
				 struct shmlog_archive_source *src)
{
	if (!r->arc)
		return -EINVAL;
	return shmlog__arc_source(r->arc, buffer, src);
}

int shmlog_reader_archive_next_seq(const shmlog_reader_t *r,
				   const char *buffer, unsigned lane,
				   uint64_t *next)
{
	if (!r->arc)
		return -EINVAL;
	return shmlog__arc_next_seq(r->arc, buffer, lane, next);
}
