/* SPDX-License-Identifier: MIT */
/*
 * Writer handles: opening a buffer for writing, giving each thread a lane
 * of its own (thread-local, claimed on the first write, released when the
 * thread exits), and the write calls. The protocol inside a lane is in
 * ring.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "append.h"
#include "fmtarg_typed.h"
#include "internal.h"
#include "utf8.h"

/* w->key while a leaf (write_rec()'s inline case, shmlog_write_n()) is
 * inside the lane: the bit is set and cleared in memory, so no register
 * keeps the id meanwhile; a signal handler's write finds the key changed
 * and goes to a shared lane (write_general()). Ids stay far below it. */
#define KEY_BUSY (UINT64_C(1) << 63)

/* Lanes a thread can hold at once, one per handle it writes to. A thread
 * writing to more buffers than this trades lanes between them (slowly). */
#define TLS_SLOTS 4

/* initial-exec: a plain %fs-relative access, not a __tls_get_addr() call
 * on every write (640 bytes of static TLS). */
static __thread struct shmlog__wlane tls_lanes[TLS_SLOTS]
	__attribute__((tls_model("initial-exec")));

/* Open handles, for the thread-exit destructor and fork handler: a thread
 * may outlive the handle its lane belongs to. Slow paths only. */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shmlog *handles[256];
static uint64_t next_handle_id = 1;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static bool membarrier_ok;


static bool handle_live(uint64_t id)
{
	for (size_t i = 0; i < sizeof(handles) / sizeof(handles[0]); i++)
		if (handles[i] && handles[i]->id == id)
			return true;
	return false;
}

/* Give back every lane this thread holds (thread exit, fork child). */
static void tls_release_all(bool in_child)
{
	pthread_mutex_lock(&handles_lock);
	for (int i = 0; i < TLS_SLOTS; i++) {
		struct shmlog__wlane *w = &tls_lanes[i];
		if (w->handle_id && w->ctl && !in_child &&
		    handle_live(w->handle_id))
			shmlog__lane_release(w, true);
		shmlog__wlane_forget(w);
	}
	pthread_mutex_unlock(&handles_lock);
}

static void tls_destructor(void *arg)
{
	(void)arg;
	tls_release_all(false);
}

/* fork(): the handle table is held across it, so the child gets it
 * whole. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&handles_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&handles_lock);
}

/* In a child of fork() the lanes the parent's thread held are still the
 * parent's: forget them; the child claims lanes of its own, under a file
 * description of its own (the inherited one holds the parent's locks:
 * lane.c). */
static void atfork_child(void)
{
	for (int i = 0; i < TLS_SLOTS; i++)
		shmlog__wlane_forget(&tls_lanes[i]);
	for (size_t i = 0; i < sizeof(handles) / sizeof(handles[0]); i++)
		if (handles[i])
			shmlog__owner_reopen(handles[i]);
	/* locked by atfork_prepare in the thread that forked: this one */
	pthread_mutex_unlock(&handles_lock);
	if (membarrier_ok)
		shmlog__membarrier_register();
}

static void tls_init(void)
{
	pthread_key_create(&tls_key, tls_destructor);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	membarrier_ok = shmlog__membarrier_register();
}

/* Try the lanes [from, to) starting at a place that spreads threads out. */
static bool claim_in(struct shmlog *h, struct shmlog__wlane *w, uint64_t me,
		     unsigned from, unsigned to, unsigned hint)
{
	unsigned n = to - from;
	for (int steal = 0; steal < 2; steal++) {
		for (unsigned i = 0; i < n; i++) {
			unsigned lane = from + (hint + i) % n;
			if (shmlog__lane_claim(&h->seg, lane, me, steal, w))
				return true;
		}
	}
	return false;
}

/* Slow path: claim a lane for this thread to keep. Without one, the slot is
 * set to borrow shared lanes (ctl == NULL) until a lane is released. */
static void lane_acquire(struct shmlog *h, struct shmlog__wlane *w)
{
	if (w->handle_id) { /* slot held for another handle: trade it */
		pthread_mutex_lock(&handles_lock);
		if (w->ctl && handle_live(w->handle_id))
			shmlog__lane_release(w, true);
		w->handle_id = 0;
		pthread_mutex_unlock(&handles_lock);
	}
	pthread_setspecific(tls_key, (void *)1);
	w->pid = (uint32_t)getpid();
	w->tid = (uint32_t)gettid();
	w->h = h;
	w->sleepers = &h->seg.hdr->notify.sleepers;
	w->releases_seen = atomic_load_explicit(&h->seg.hdr->stats.releases,
						memory_order_relaxed);
	uint64_t me = shmlog__owner_word(w->pid, w->tid);
	unsigned excl = shmlog__lanes_exclusive(&h->seg.fixed);
	/* the lane given back last first (its writer's chunk has room
	 * left), else a place that spreads threads out */
	unsigned hint = atomic_load_explicit(&h->seg.hdr->stats.last_released,
					     memory_order_relaxed);
	hint = hint - 1 < excl ? hint - 1 : w->tid;
	if (claim_in(h, w, me, 0, excl, hint)) {
		/* who we are, kept for people after we are gone */
		shmlog__ident_store(&h->seg, w->lane, w->pid, w->tid);
		/* dead writers' chunks are nobody's share from now on */
		shmlog__reap_dead(h, me, w->tid);
	} else
		w->ctl = NULL;
	w->handle_id = h->id; /* last: slot now valid */
}

/* Why a record found no chunk: none was free (-EAGAIN), or the buffer
 * was removed (-ESTALE: chunk_switch() takes none in it). */
static int no_chunk(const struct shmlog *h)
{
	return shmlog__seg_removed(&h->seg) ? -ESTALE : -EAGAIN;
}

/* A thread without a lane of its own writes one record in a shared lane,
 * taken and given back around the record. Never waits: if every shared
 * lane is busy at this instant the record is dropped (and counted). */
static int write_borrowed(struct shmlog *h, struct shmlog__wlane *w,
			  const struct shmlog__recdesc *d, uint32_t as_pid)
{
	const struct shmlog__fixed *f = &h->seg.fixed;
	unsigned excl = shmlog__lanes_exclusive(f);
	if (excl == f->lane_count)
		return -EAGAIN;
	if (h->slot < 0)
		return -EAGAIN; /* no slot: nothing says we are alive */
	struct shmlog__wlane tmp = *w;
	uint64_t me = shmlog__borrow_word(h, w->tid);
	if (!claim_in(h, &tmp, me, excl, f->lane_count, w->tid))
		return -EAGAIN;
	if (as_pid)
		tmp.pid = tmp.tid = as_pid;
	bool ok = shmlog__ring_append(&h->seg, &tmp, d->time, d->meta, d->tag,
				      d->tword, d->msg);
	shmlog__lane_release(&tmp, false);
	return ok ? 0 : no_chunk(h);
}

static void count_drop(struct shmlog *h)
{
	atomic_fetch_add_explicit(&h->seg.hdr->stats.dropped, 1,
				  memory_order_relaxed);
}

static int writer_open(const char *name, int flags, shmlog_t **out)
{
	pthread_once(&tls_once, tls_init);
	if (flags & ~SHMLOG_OPEN_CREATE)
		return -EINVAL;
	struct shmlog *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	int seg_flags = SEG_WRITE | (flags & SHMLOG_OPEN_CREATE ? SEG_CREATE : 0);
	int err = shmlog__seg_attach(name, seg_flags, &h->seg);
	if (err) {
		free(h);
		return err;
	}
	h->lock_fd = -1;
	h->prefaulted = calloc(h->seg.fixed.chunk_count, 1);
	h->holder = calloc(h->seg.fixed.lane_count, sizeof(*h->holder));
	char path[512];
	err = !h->prefaulted || !h->holder ? -ENOMEM : 0;
	if (!err && shmlog_path(name, path, sizeof(path)) < 0)
		err = -EINVAL;
	if (!err)
		err = shmlog__owner_open(h, path);
	if (!err)
		shmlog__slot_take(h);
	if (err) {
		shmlog__owner_close(h);
		free(h->prefaulted);
		free(h->holder);
		shmlog__seg_detach(&h->seg);
		free(h);
		return err;
	}
	h->need_fence = !membarrier_ok;
	uint32_t fit = h->seg.fixed.max_record - REC_HDR - SHMLOG_TAG_MAX;
	h->msg_fit = fit < SHMLOG_MSG_MAX ? fit : SHMLOG_MSG_MAX;
	h->leaf_len_end = h->seg.fixed.clock != SHMLOG_CLOCK_TSC || h->need_fence
				  ? 0
			  : h->msg_fit < 128 ? h->msg_fit + 1
					     : 129;
	h->typed_fit = h->leaf_len_end ? h->msg_fit : 0;
	shmlog__filter_init(h);
	/* touch page 0 and the lane table: read on every write */
	madvise(h->seg.base, h->seg.fixed.data_off, MADV_WILLNEED);
	pthread_mutex_lock(&handles_lock);
	size_t i;
	for (i = 0; i < sizeof(handles) / sizeof(handles[0]); i++) {
		if (!handles[i]) {
			handles[i] = h;
			h->id = next_handle_id++;
			h->busy_key = h->id | KEY_BUSY;
			/* no site's key for a handle whose typed calls
			 * never take their fast path (typed_fit 0) */
			h->site_key =
				h->typed_fit &&
						h->id < UINT64_C(1) << (64 - SHMLOG__SITE_ID_BITS)
					? h->id << SHMLOG__SITE_ID_BITS
					: SHMLOG__SITE_NONE;
			h->tls_off = h->id % TLS_SLOTS * sizeof(tls_lanes[0]);
			break;
		}
	}
	pthread_mutex_unlock(&handles_lock);
	if (!h->id) {
		shmlog__owner_close(h);
		shmlog__seg_detach(&h->seg);
		free(h->prefaulted);
		free(h->holder);
		shmlog__filter_free_all(h);
		free(h);
		return -EMFILE;
	}
	*out = h;
	return 0;
}

/* shmlog_close(): free the owner word of every lane held through @h. */
static void close_lanes(struct shmlog *h)
{
	for (unsigned i = 0; i < h->seg.fixed.lane_count; i++) {
		if (!atomic_load(&h->holder[i]))
			continue;
		shmlog__lane_close_chunks(&h->seg, i);
		atomic_store(&seg_lane(&h->seg, i)->owner, 0);
		shmlog__lane_announce(h->seg.hdr, i);
	}
}

int shmlog_open(const char *name, int flags, shmlog_t **out)
{
	int err = writer_open(name, flags, out);
	if (err)
		shmlog__debug(SHMLOG__DBG_OPEN_NAMED, err,
			      name && name[0] ? name : "(default)");
	return err;
}

void shmlog_close(shmlog_t *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&handles_lock);
	for (size_t i = 0; i < sizeof(handles) / sizeof(handles[0]); i++)
		if (handles[i] == h)
			handles[i] = NULL;
	pthread_mutex_unlock(&handles_lock);
	/* Release every lane a thread of ours keeps through this handle: the
	 * threads will find their slot stale (the id is gone). Lanes kept
	 * through another handle on the same buffer are left alone. The
	 * locks go with the descriptor, closed below. */
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		shmlog__guard_arm(&g, &h->seg);
		close_lanes(h);
		shmlog__guard_disarm();
	} else {
		shmlog__guard_recovered(); /* truncated: nothing to give back */
	}
	for (int i = 0; i < TLS_SLOTS; i++)
		if (tls_lanes[i].handle_id == h->id)
			shmlog__wlane_forget(&tls_lanes[i]);
	shmlog__owner_close(h);
	shmlog__seg_detach(&h->seg);
	free(h->prefaulted);
	free(h->holder);
	shmlog__filter_free_all(h);
	shmlog__defer_free(h);
	free(h);
}

/* Cut @s (longer than @max bytes) to keep at most @max, never splitting a
 * UTF-8 character (utf8.h). Off the fast path. */
static inline uint32_t clamp_len(const char *s, size_t len, uint32_t max,
				 unsigned *flags)
{
	if (SHMLOG_UNLIKELY(len > max)) {
		*flags |= SHMLOG_REC_TRUNCATED;
		return (uint32_t)shmlog__utf8_cut(s, max);
	}
	return (uint32_t)len;
}

/* The writer's side of Dekker's pattern before it looks for sleeping
 * readers. */
static inline void wake_fence(const struct shmlog *h)
{
	/* LMM(W): see wake.c, "Waking readers" */
	if (SHMLOG_UNLIKELY(h->need_fence)) {
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
/* GCC 12 warns that TSan does not model fences (-Wtsan), which -Werror
 * turns into a build failure; the fence is still emitted. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
		atomic_thread_fence(memory_order_seq_cst);
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
	} else {
		atomic_signal_fence(memory_order_seq_cst);
	}
}

/* Wake sleeping readers, if any, after a record is published. */
static inline void wake_readers(struct shmlog *h)
{
	wake_fence(h);
	if (SHMLOG_UNLIKELY(atomic_load_explicit(&h->seg.hdr->notify.sleepers,
						 memory_order_relaxed)))
		shmlog__ring_wake(h->seg.hdr);
}

/* The end of an append in the thread's own lane: a record that found no
 * chunk is counted dropped; one written wakes the readers that sleep. */
static inline int appended(struct shmlog *h, bool ok)
{
	if (SHMLOG_UNLIKELY(!ok)) { /* no chunk to be had */
		int err = no_chunk(h);
		count_drop(h);
		shmlog__debug(SHMLOG__DBG_NO_LANE, err, NULL);
		return err;
	}
	wake_readers(h);
	return 0;
}

/* Is a clock anchor due (clock.c: every 10 minutes at most)? A compare
 * with a private value on the write path; the refresh itself is rare and
 * makes no syscall. */
static inline void anchor_check(struct shmlog *h, uint64_t now)
{
	if (SHMLOG_UNLIKELY(now >= atomic_load_explicit(&h->anchor_due,
							memory_order_relaxed)))
		shmlog__anchor_refresh(&h->seg.fixed, h->seg.hdr, now,
				       &h->anchor_due);
}

/* w->key again, at the end of a write through @w for @h (the write may
 * have taken a lane, or lost it to a fault). */
static inline void key_set(struct shmlog__wlane *w, const struct shmlog *h)
{
	atomic_signal_fence(memory_order_seq_cst);
	w->key = w->handle_id == h->id && w->ctl ? h->id : 0;
}

/* The general path's guard around a write in @w that calls out (a chunk
 * switch, the lane's first claim): busy and the key 0, so that a signal
 * handler's write meanwhile goes to a shared lane (write_nested()); then
 * at rest again. */
static inline void guard_enter(struct shmlog__wlane *w)
{
	w->busy = 1;
	w->key = 0;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void guard_leave(struct shmlog__wlane *w, const struct shmlog *h)
{
	atomic_signal_fence(memory_order_seq_cst);
	w->busy = 0;
	key_set(w, h);
}

/* A signal handler interrupted a write of this thread: the thread's lane
 * is mid-record, so the nested record goes to a shared lane. */
static int write_nested(struct shmlog *h, const struct shmlog__recdesc *d)
{
	struct shmlog__wlane tmp = {.h = h};
	tmp.pid = (uint32_t)getpid();
	tmp.tid = (uint32_t)gettid();
	int err = write_borrowed(h, &tmp, d, 0);
	if (err) {
		count_drop(h);
		shmlog__debug(SHMLOG__DBG_NESTED, -EBUSY, NULL);
		return -EBUSY;
	}
	wake_readers(h);
	return 0;
}

/* Append in the thread's own lane, the record saying it comes from process
 * @as_pid if not 0 (shmlog_write_ex(): `shmlog run` logs for its child). The
 * lane stays owned by this thread's own ids. */
static bool append_own(struct shmlog *h, struct shmlog__wlane *w,
		       const struct shmlog__recdesc *d, uint32_t as_pid)
{
	if (SHMLOG_LIKELY(!as_pid))
		return shmlog__ring_append(&h->seg, w, d->time, d->meta,
					   d->tag, d->tword, d->msg);
	uint32_t pid = w->pid, tid = w->tid;
	w->pid = w->tid = as_pid;
	bool ok = shmlog__ring_append(&h->seg, w, d->time, d->meta, d->tag,
				      d->tword, d->msg);
	w->pid = pid;
	w->tid = tid;
	return ok;
}

/* Does the filter of @h (`shmlog level`, $SHMLOG_TAGS) let this write
 * through? Two loads and a few compares while the filter is unchanged and
 * @prio is at or above every tag's level (with no filter: always), or
 * below every tag's level; the tag is looked up only in between. */
static inline bool write_wanted(struct shmlog *h, int prio, const char *tag)
{
	uint32_t gen = atomic_load_explicit(&h->seg.hdr->config.filter_gen,
					    memory_order_relaxed);
	uint64_t fast = atomic_load_explicit(&h->filter_fast,
					     memory_order_relaxed);
	int says = shmlog__filter_fast(fast, gen, prio);
	if (SHMLOG_LIKELY(says >= 0))
		return says;
	return shmlog__write_wanted_slow(h, prio, tag);
}

/* Slow path of a write: this thread has no lane of its own for @h (first
 * write, or all lanes were taken): get one, or borrow a shared lane. The
 * filter is asked here too, under the guard: a first write may find the
 * file truncated. Returns 1 if the filter dropped the record. */
static int write_slow_guarded(struct shmlog *h, struct shmlog__wlane *w,
			      const struct shmlog__recdesc *d, int prio,
			      unsigned wflags, uint32_t as_pid)
{
	if (!(wflags & SHMLOG_WRITE_UNFILTERED) &&
	    !write_wanted(h, prio, d->tag))
		return 1;
	anchor_check(h, d->time);
	if (w->handle_id != h->id) {
		lane_acquire(h, w);
	} else {
		/* look again once somebody gave a lane back */
		uint32_t rel = atomic_load_explicit(&h->seg.hdr->stats.releases,
						    memory_order_relaxed);
		if (rel != w->releases_seen)
			lane_acquire(h, w);
	}
	if (w->ctl)
		return append_own(h, w, d, as_pid) ? 0 : no_chunk(h);
	return write_borrowed(h, w, d, as_pid);
}

/* The slow path with the mapping guarded: a claim reads and repairs what
 * the lane holds, and whoever may write the file may have truncated it
 * (guard.c). A fault leaves this thread without a lane for @h; the lane
 * it was taking stays locked until the handle is closed. */
static int write_slow(struct shmlog *h, struct shmlog__wlane *w,
		      const struct shmlog__recdesc *d, int prio, unsigned wflags,
		      uint32_t as_pid)
{
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) != 0) {
		shmlog__guard_recovered();
		shmlog__wlane_forget(w);
		return -EIO;
	}
	shmlog__guard_arm(&g, &h->seg);
	int err = write_slow_guarded(h, w, d, prio, wflags, as_pid);
	if (err < 0)
		count_drop(h);
	else if (err == 0)
		wake_readers(h);
	shmlog__guard_disarm();
	if (err < 0)
		shmlog__debug(SHMLOG__DBG_NO_LANE, err, NULL);
	return err < 0 ? err : 0;
}

/* Everything but the common case of write_rec(): the first write of a
 * thread, a write nested in a signal handler, one for another process, a
 * clock anchor due, a record that takes a new chunk. @d is complete;
 * the filter was not asked, or let the record through. */
static __attribute__((noinline)) int
write_general(shmlog_t *h, uint64_t time, uint64_t meta, const char *tag,
	      uint64_t tword, const char *msg, int prio, unsigned wflags,
	      uint32_t as_pid)
{
	/* the record, built here: in write_rec() it would live in memory */
	const struct shmlog__recdesc rec = {
		.time = time, .meta = meta, .tag = tag, .tword = tword, .msg = msg};
	const struct shmlog__recdesc *d = &rec;
	struct shmlog__wlane *w = &tls_lanes[h->id % TLS_SLOTS];
	bool own = w->handle_id == h->id && w->ctl;
	/* busy, or a leaf is inside the slot's lane (its key has KEY_BUSY),
	 * whichever handle's it is: a signal handler writing through another
	 * handle whose id shares the slot must not trade the slot away from
	 * under the write it interrupted */
	if (SHMLOG_UNLIKELY(w->busy || (w->key & KEY_BUSY) ||
			    (own && w->key != h->id))) {
		if (!own && !(wflags & SHMLOG_WRITE_UNFILTERED) &&
		    !write_wanted(h, prio, d->tag))
			return 0;
		return write_nested(h, d);
	}
	guard_enter(w);
	if (SHMLOG_UNLIKELY(!own)) {
		/* counts its drop or wakes readers itself, guarded */
		int err = write_slow(h, w, d, prio, wflags, as_pid);
		guard_leave(w, h);
		return err;
	}
	anchor_check(h, d->time);
	bool ok = append_own(h, w, d, as_pid);
	guard_leave(w, h);
	return appended(h, ok);
}

/* The write path. @flags: SHMLOG_REC_TRUNCATED if the caller cut already;
 * @wflags: SHMLOG_WRITE_*; @as_pid: the record's pid and tid, 0: ours.
 * The common case (this thread's own lane, not inside a write of its
 * own, no anchor due, room in the OPEN chunk) appends inline and calls
 * nothing; the rest is write_general()'s. Inlined into each entry. */
static inline __attribute__((always_inline)) int write_rec(shmlog_t *h, int prio, const char *tag,
			    const char *msg, size_t len, unsigned flags,
			    unsigned wflags, uint32_t as_pid)
{
	if (SHMLOG_UNLIKELY(!h)) {
		shmlog__debug(SHMLOG__DBG_NULL_HANDLE, -EINVAL, NULL);
		return -EINVAL;
	}
	if (SHMLOG_UNLIKELY((unsigned)(prio - SHMLOG_VERBOSE) >
			    SHMLOG_FATAL - SHMLOG_VERBOSE))
		prio = SHMLOG_INFO;
	if (SHMLOG_UNLIKELY(!tag))
		tag = "";
	uint64_t tword;
	uint32_t tag_len = tag_measure(tag, SHMLOG_TAG_MAX + 1, &tword);
	if (SHMLOG_UNLIKELY(tag_len - 1 >= SHMLOG_TAG_MAX)) {
		if (tag_len) {
			tag_len = clamp_len(tag, tag_len, SHMLOG_TAG_MAX,
					    &flags);
		} else { /* none: the record says "?" */
			tag = "?";
			tag_len = 1;
			tword = '?';
		}
	}
	if (SHMLOG_UNLIKELY(!msg)) {
		msg = "(null)";
		len = 6;
	}
	uint32_t msg_len = (uint32_t)len;
	if (SHMLOG_UNLIKELY(len > h->msg_fit)) {
		uint32_t room = h->seg.fixed.max_record - REC_HDR - tag_len;
		msg_len = clamp_len(msg, len,
				    room < SHMLOG_MSG_MAX ? room
							  : SHMLOG_MSG_MAX,
				    &flags);
	}
	uint64_t meta = rec_meta(0, msg_len, prio, flags, tag_len);

	/* The filter: on the first write of a thread, under the slow path's
	 * guard (write_general); then two loads and two compares, before
	 * the clock is read: a record the filter drops costs no clock. */
	struct shmlog__wlane *w =
		(struct shmlog__wlane *)(void *)((char *)tls_lanes + h->tls_off);
	/* an address, not a thread-local access to redo after each fence */
	__asm__("" : "+r"(w));
	if (SHMLOG_LIKELY(w->key == h->id)) {
		if (!(wflags & SHMLOG_WRITE_UNFILTERED) &&
		    !write_wanted(h, prio, tag))
			return 0;
		uint64_t time = shmlog__clock_raw((int)h->seg.fixed.clock);
		if (SHMLOG_LIKELY(!as_pid &&
				  time < atomic_load_explicit(
						 &h->anchor_due,
						 memory_order_relaxed))) {
			/* w->key is h->id: stored, not changed in place
			 * (print_typed_body()) */
			w->key = h->busy_key;
			atomic_signal_fence(memory_order_seq_cst);
			bool ok = shmlog__append_fit(w, time, meta, tag,
						     tag_len, tword, msg,
						     msg_len);
			atomic_signal_fence(memory_order_seq_cst);
			w->key = w->handle_id;
			if (SHMLOG_LIKELY(ok)) {
				wake_readers(h);
				return 0;
			}
		}
		return write_general(h, time, meta, tag, tword, msg, prio,
				     wflags | SHMLOG_WRITE_UNFILTERED, as_pid);
	}
	uint64_t time = shmlog__clock_raw((int)h->seg.fixed.clock);
	return write_general(h, time, meta, tag, tword, msg, prio, wflags,
			     as_pid);
}

/* shmlog_write_n() whole, for every call its leaf does not take. */
static __attribute__((noinline)) int write_n_general(shmlog_t *h, int prio,
						     const char *tag,
						     const char *msg,
						     size_t len)
{
	return write_rec(h, prio, tag, msg, len, 0, 0, 0);
}

/* The leaf's record did not fit the OPEN chunk: take another (space.c)
 * and append there, with what the leaf found (a jump from it: six
 * arguments, no clock read again, no second try at the full chunk), by
 * the leaf's own append: the record is one the leaf takes (a short tag,
 * a message of at most 128 bytes). */
static __attribute__((noinline)) int leaf_switch(struct shmlog__wlane *w,
						 uint64_t time, uint64_t meta,
						 const char *tag,
						 uint64_t tword,
						 const char *msg)
{
	struct shmlog *h = w->h;
	uint32_t tag_len = META_TAG_LEN(meta), msg_len = META_MSG_LEN(meta);
	guard_enter(w);
	bool ok = shmlog__ring_make_room(&h->seg, w,
					 rec_len(tag_len, msg_len)) &&
		  shmlog__append_fit_as(w, time, meta, tag, tag_len, tword,
					msg, msg_len, true);
	guard_leave(w, h);
	return appended(h, ok);
}

/* Wake the readers, for the leaf: a tail call. */
static __attribute__((noinline)) int wake_then_0(const struct shmlog *h)
{
	shmlog__ring_wake(h->seg.hdr);
	return 0;
}

/* The common case of write_rec() again, for the calls that need nothing
 * else: the TSC clock, a tag of 1-15 bytes, a message of at most 128,
 * a valid priority, the thread's own lane at rest, the filter's fast
 * answer, no clock anchor due, room in the OPEN chunk. Then it calls
 * nothing; anything else goes to the whole path with the same arguments
 * (a jump). shmlog_write_n() asked the filter: this is the rest, a
 * function of its own so that a call the filter drops saves and
 * restores no register. */
static __attribute__((noinline)) int write_n_leaf(shmlog_t *h, int prio,
						  const char *tag,
						  const char *msg, size_t len,
						  struct shmlog__wlane *w)
{
	if (SHMLOG_UNLIKELY(!msg || len >= h->leaf_len_end)) /* a null tag: tag_short()'s 0 */
		goto general;
	uint64_t tword;
	uint32_t tag_len = tag_short(tag, &tword);
	if (SHMLOG_UNLIKELY(!tag_len))
		goto general;
	uint64_t time = shmlog__rdtsc();
	if (SHMLOG_UNLIKELY(time >= atomic_load_explicit(&h->anchor_due,
							 memory_order_relaxed)))
		goto general;
	uint64_t meta = rec_meta(0, (uint32_t)len, prio, 0, tag_len);
	/* w->key is h->id (shmlog_write_n() checked): stored, not changed
	 * in place, as in print_typed_body() */
	w->key = h->busy_key;
	atomic_signal_fence(memory_order_seq_cst);
	bool ok = shmlog__append_fit_as(w, time, meta, tag, tag_len, tword,
					msg, (uint32_t)len, true);
	atomic_signal_fence(memory_order_seq_cst);
	w->key = w->handle_id;
	if (SHMLOG_UNLIKELY(!ok))
		return leaf_switch(w, time, meta, tag, tword, msg);
	/* wake_readers(); no fence needed here (leaf_len_end), the wake-up a
	 * jump */
	if (SHMLOG_UNLIKELY(shmlog__append_wake_due(w)))
		return wake_then_0(w->h);
	return 0;
general:
	return write_n_general(h, prio, tag, msg, len);
}

/* The filter first: a call it drops reads no clock and writes nothing.
 * The thread's own lane at rest is one compare (w->key). */
int shmlog_write_n(shmlog_t *h, int prio, const char *tag, const char *msg,
		   size_t len)
{
	if (SHMLOG_UNLIKELY(!h || (unsigned)(prio - SHMLOG_VERBOSE) >
					 SHMLOG_FATAL - SHMLOG_VERBOSE))
		goto general;
	struct shmlog__wlane *w =
		(struct shmlog__wlane *)(void *)((char *)tls_lanes + h->tls_off);
	__asm__("" : "+r"(w));
	if (SHMLOG_UNLIKELY(w->key != h->id))
		goto general;
	uint64_t fast = atomic_load_explicit(&h->filter_fast,
					     memory_order_relaxed);
	if (SHMLOG_UNLIKELY((uint32_t)(fast >> 32) !=
			    atomic_load_explicit(&h->seg.hdr->config.filter_gen,
						 memory_order_relaxed)))
		goto general;
	if (SHMLOG_UNLIKELY(prio < (int)(uint16_t)fast)) {
		/* below every tag's level: dropped, whatever the tag */
		if (prio < (int)(uint16_t)(fast >> 16))
			return 0;
		goto general; /* the tag decides */
	}
	return write_n_leaf(h, prio, tag, msg, len, w);
general:
	return write_n_general(h, prio, tag, msg, len);
}

int shmlog_write_ex(shmlog_t *h, unsigned flags, pid_t pid, int prio,
		    const char *tag, const char *msg, size_t len)
{
	if (flags & ~SHMLOG_WRITE_UNFILTERED || pid < 0)
		return -EINVAL;
	return write_rec(h, prio, tag, msg, len, 0, flags, (uint32_t)pid);
}

int shmlog_write(shmlog_t *h, int prio, const char *tag, const char *msg)
{
	return shmlog_write_n(h, prio, tag, msg,
			      msg ? strnlen(msg, SHMLOG_MSG_MAX + 1) : 0);
}

/* A printf-style call stored as its format's id and its values, the text
 * made by whichever reader (deferred.c). Returns the write's result, or 1
 * if the call cannot be deferred: the caller formats it (with a va_list
 * of its own: @ap may have been read). */
static int print_deferred(shmlog_t *h, unsigned wflags, int prio,
			  const char *tag, const char *fmt, va_list ap)
{
	unsigned char blk[SHMLOG_MSG_MAX];
	size_t len;
	unsigned flags;
	if (shmlog__defer_encode(h, tag, fmt, ap, blk, sizeof(blk), &len,
				 &flags))
		return 1;
	return write_rec(h, prio, tag, (const char *)blk, len, flags,
			 wflags & ~SHMLOG_WRITE_DEFERRED, 0);
}

/* write_rec() out of line, for the calls that format their text first. */
static __attribute__((noinline)) int write_rec_call(shmlog_t *h, int prio,
						    const char *tag,
						    const char *msg, size_t len,
						    unsigned flags,
						    unsigned wflags)
{
	return write_rec(h, prio, tag, msg, len, flags, wflags, 0);
}

/* A printf-style call formatted here. */
static int print_text(shmlog_t *h, unsigned wflags, int prio, const char *tag,
		      const char *fmt, va_list ap)
{
	/* One byte past the maximum, so that the cut sees whether it splits
	 * a UTF-8 character. */
	char buf[SHMLOG_MSG_MAX + 2];
	wflags &= ~SHMLOG_WRITE_DEFERRED;
	if (!fmt)
		return write_rec_call(h, prio, tag, NULL, 0, 0, wflags);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n > SHMLOG_MSG_MAX)
		return write_rec_call(h, prio, tag, buf, SHMLOG_MSG_MAX + 1,
				      SHMLOG_REC_TRUNCATED, wflags);
	return write_rec_call(h, prio, tag, buf, (size_t)n, 0, wflags);
}

int shmlog_vprint(shmlog_t *h, int prio, const char *tag, const char *fmt,
		  va_list ap)
{
	return print_text(h, 0, prio, tag, fmt, ap);
}

int shmlog_vprint_ex(shmlog_t *h, unsigned flags, int prio, const char *tag,
		     const char *fmt, va_list ap)
{
	if (flags & ~(SHMLOG_WRITE_UNFILTERED | SHMLOG_WRITE_DEFERRED))
		return -EINVAL;
	if ((flags & SHMLOG_WRITE_DEFERRED) && fmt) {
		va_list aq;
		va_copy(aq, ap);
		int r = print_deferred(h, flags, prio, tag, fmt, aq);
		va_end(aq);
		if (r != 1)
			return r;
	}
	return print_text(h, flags, prio, tag, fmt, ap);
}

/* The macros' entry. With SHMLOG_WRITE_DEFERRED the arguments are walked
 * twice only when the call cannot be deferred: va_start again rather
 * than va_copy on every call (copying the va_list just written by
 * va_start costs a store-forwarding stall on the hot path). */
int shmlog_print_ex(shmlog_t *h, unsigned flags, int prio, const char *tag,
		    const char *fmt, ...)
{
	if (flags & ~(SHMLOG_WRITE_UNFILTERED | SHMLOG_WRITE_DEFERRED))
		return -EINVAL;
	va_list ap;
	int r = 1;
	if ((flags & SHMLOG_WRITE_DEFERRED) && fmt) {
		va_start(ap, fmt);
		r = print_deferred(h, flags, prio, tag, fmt, ap);
		va_end(ap);
	}
	if (r == 1) {
		va_start(ap, fmt);
		r = print_text(h, flags, prio, tag, fmt, ap);
		va_end(ap);
	}
	return r;
}

/* A deferred call through its site's cache (the SHMLOG_x macros): the
 * plan and the format's id without a lookup, the values encoded by the
 * plan. 1: the caller formats this call (with a va_list of its own). */
static inline __attribute__((always_inline)) int
print_site(shmlog_t *h, struct shmlog_fmt_site *site, uint64_t types,
	   unsigned wflags, int prio, const char *tag, const char *fmt,
	   va_list ap)
{
	uint32_t id;
	const struct shmlog__fmt_plan *p =
		shmlog__defer_site_ready(h, site, fmt, &id);
	if (SHMLOG_UNLIKELY(!p)) {
		p = shmlog__defer_site(h, site, fmt, types, &id);
		if (!p)
			return 1;
	}
	size_t room = shmlog__defer_room(h);
	if (SHMLOG_UNLIKELY(room <= 4))
		return 1; /* lanes too small for any block */
	unsigned char blk[SHMLOG_MSG_MAX];
	bool cut = false;
	memcpy(blk, &id, 4);
	ssize_t n = shmlog__fmt_encode_inline(&p->spec, ap, blk + 4, room - 4,
					      &cut);
	if (SHMLOG_UNLIKELY(n < 0))
		return 1;
	return write_rec(h, prio, tag, (const char *)blk, 4 + (size_t)n,
			 REC_FLAG_DEFERRED | (cut ? SHMLOG_REC_TRUNCATED : 0),
			 wflags, 0);
}

/* The va_list entries: shmlog__print_site() for sites of callers built
 * before sites had types (@site->types is not read: it may not be
 * there), shmlog__print_untyped() for the macros' sites whose values had
 * no types (counted once per site and buffer, deferred.c). */
#define PRINT_SITE_BODY(types)                                                 \
	unsigned flags = site ? site->flags : 0;                               \
	if (flags & ~SHMLOG_WRITE_UNFILTERED)                                  \
		return -EINVAL;                                                \
	va_list ap;                                                            \
	int r = 1;                                                             \
	if (SHMLOG_LIKELY(h && site && fmt)) {                                 \
		va_start(ap, fmt);                                             \
		r = print_site(h, site, (types), flags, prio, tag, fmt, ap);   \
		va_end(ap);                                                    \
	}                                                                      \
	if (r == 1) {                                                          \
		va_start(ap, fmt);                                             \
		r = print_text(h, flags, prio, tag, fmt, ap);                  \
		va_end(ap);                                                    \
	}                                                                      \
	return r

int shmlog__print_site(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		       const char *tag, const char *fmt, ...)
{
	PRINT_SITE_BODY(0);
}

int shmlog__print_untyped(shmlog_t *h, struct shmlog_fmt_site *site,
			  int prio, const char *tag, const char *fmt, ...)
{
	PRINT_SITE_BODY(SHMLOG__UNTYPED_SITE);
}

/* ---- typed calls: the values fetched by the macro ---- */

/* A typed call that its fast path does not take: the first call of a
 * site, a site switching buffers, * values, a string cut to fit, the
 * first write of a thread, a filter that changed, a long tag, a clock
 * anchor due, a new chunk to take. The block is encoded on the stack and
 * written as any record (write_rec); a call that cannot be deferred (a
 * format the codec refuses, a full table: counted in deferred.c) is
 * formatted here from the values, a conversion at a time. */
static __attribute__((noinline)) int
print_typed_general(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		    const char *tag, const char *fmt,
		    const union shmlog__arg *v)
{
	if (!site || (site->flags & ~SHMLOG_WRITE_UNFILTERED) ||
	    !(site->types & SHMLOG__TYPED_SITE))
		return -EINVAL;
	unsigned wflags = site->flags;
	if (SHMLOG_UNLIKELY(!h)) {
		shmlog__debug(SHMLOG__DBG_NULL_HANDLE, -EINVAL, NULL);
		return -EINVAL;
	}
	if (!fmt)
		return write_rec_call(h, prio, tag, NULL, 0, 0, wflags);
	uint32_t id;
	const struct shmlog__fmt_plan *p =
		shmlog__defer_site_ready(h, site, fmt, &id);
	if (!p)
		p = shmlog__defer_site(h, site, fmt, site->types, &id);
	size_t room = shmlog__defer_room(h);
	/* a record's block (room <= SHMLOG_MSG_MAX), or below the values
	 * of a text made here: more than the text, each value's encoding
	 * may be longer than its text (a 1-digit int takes 8 bytes), so
	 * that a text that fits the record is not cut for its values */
	unsigned char blk[SHMLOG_MSG_MAX + 1024];
	bool cut = false;
	struct shmlog__fmt_typed lay;
	if (p && room > 4) {
		const struct shmlog__fmt_typed *t = &p->typed;
		if (t->types != site->types) {
			/* the handle's plan of a format that is not this
			 * site's literal: laid out per call */
			shmlog__fmt_typed_layout(&p->spec, site->types, &lay);
			t = &lay;
		}
		memcpy(blk, &id, 4);
		ssize_t n = shmlog__fmt_encode_typed(t, v, blk + 4, room - 4,
						     &cut);
		if (n >= 0)
			return write_rec_call(
				h, prio, tag, (const char *)blk, 4 + (size_t)n,
				REC_FLAG_DEFERRED |
					(cut ? SHMLOG_REC_TRUNCATED : 0),
				wflags);
	}
	/* Not deferred (a full table, counted; another thread registering
	 * the format right now): the text made here, by the readers'
	 * formatter from the same block. A format the codec refuses never
	 * comes here from the macros (shmlog__site_prepare()). */
	struct shmlog__fmt_spec spec;
	if (shmlog__fmt_compile(fmt, &spec) != 0)
		return -EINVAL;
	shmlog__fmt_typed_layout(&spec, site->types, &lay);
	ssize_t n = shmlog__fmt_encode_typed(&lay, v, blk, sizeof(blk), &cut);
	if (n < 0)
		return -EINVAL;
	char text[SHMLOG_MSG_MAX + 2];
	size_t len = shmlog__fmt_format(fmt, strlen(fmt), blk, (size_t)n, text,
					sizeof(text));
	unsigned flags = cut || len > SHMLOG_MSG_MAX ? SHMLOG_REC_TRUNCATED : 0;
	return write_rec_call(h, prio, tag, text,
			      len > SHMLOG_MSG_MAX ? SHMLOG_MSG_MAX + 1 : len,
			      flags, wflags);
}

/* An exit of the typed fast path once it has checked the site and the
 * lane: print_typed_general()'s arguments recovered from what the path
 * keeps anyway, so that fewer of them stay live (in registers saved and
 * restored, or spilled) to its end: the handle is the lane's (its key is
 * the handle's id), the format the site's plan's (the path checked that
 * it is this call's). */
static __attribute__((noinline)) int
print_typed_exit(const struct shmlog__wlane *w, struct shmlog_fmt_site *site,
		 int prio, const char *tag, const union shmlog__arg *v)
{
	const struct shmlog__fmt_plan *p =
		(const struct shmlog__fmt_plan *)__atomic_load_n(
			&site->plan, __ATOMIC_RELAXED);
	return print_typed_general(w->h, site, prio, tag, p->fmt, v);
}

/* A late exit of the typed fast path (the clock's anchor due, a new
 * chunk to take): print_typed_exit() with the tag rebuilt from @tw, its
 * bytes if it is shorter than 8 (its NUL among them; what follows the
 * NUL is not the tag's), else its address, and the priority from
 * @meta. */
static __attribute__((noinline)) int
print_typed_late(const struct shmlog__wlane *w, struct shmlog_fmt_site *site,
		 const union shmlog__arg *v, uint64_t meta, uint64_t tw)
{
	char tb[8];
	const char *tag = (const char *)(uintptr_t)tw;
	if (META_TAG_LEN(meta) < 8) {
		memcpy(tb, &tw, 8);
		tag = tb;
	}
	return print_typed_exit(w, site, (int)(uint8_t)(meta >> 32), tag, v);
}

/* The typed fast path's record did not fit the OPEN chunk: take another
 * (ring.c), as the leaf of shmlog_write_n() does, then make the call
 * again from the start, into the new chunk, its values written straight
 * into the record, where the general path would lay out the block on
 * the stack and copy it. The switch under the general path's guard
 * (w->busy, the key 0): a signal handler's write meanwhile takes a
 * shared lane. Once: the call made again that misses too (only a
 * scribbled chunk word does) is the general path's. */
static __attribute__((noinline)) int
print_typed_switch(struct shmlog__wlane *w, struct shmlog_fmt_site *site,
		   const union shmlog__arg *v, uint64_t meta, uint64_t tw)
{
	if (w->typed_again)
		return print_typed_late(w, site, v, meta, tw);
	struct shmlog *h = w->h;
	uint32_t len = rec_len(META_TAG_LEN(meta), META_MSG_LEN(meta));
	guard_enter(w);
	bool ok = shmlog__ring_make_room(&h->seg, w, len);
	guard_leave(w, h);
	if (SHMLOG_UNLIKELY(!ok))
		return appended(h, false);
	char tb[8];
	const char *tag = (const char *)(uintptr_t)tw;
	if (META_TAG_LEN(meta) < 8) {
		memcpy(tb, &tw, 8);
		tag = tb;
	}
	const struct shmlog__fmt_plan *p =
		(const struct shmlog__fmt_plan *)__atomic_load_n(
			&site->plan, __ATOMIC_RELAXED);
	w->typed_again = true;
	int r = shmlog__print_typed(h, site, (int)(uint8_t)(meta >> 32), tag,
				    p->fmt, v);
	w->typed_again = false;
	return r;
}

/* A typed call's string @s measured (at most @room bytes) into *@len and
 * added to the block's length *@blen. false: the call cannot take it as
 * it is (a null pointer prints "(null)": measured as longer than @room;
 * a string past @room is cut), the general path's. */
static inline __attribute__((always_inline)) bool
typed_measure(const char *s, size_t room, size_t *blen, uint32_t *len)
{
	size_t n = shmlog__typed_strlen(s, room);
	*blen += n;
	if (SHMLOG_UNLIKELY(*blen > room))
		return false;
	*len = (uint32_t)n;
	return true;
}

static int print_typed_several(shmlog_t *h, struct shmlog_fmt_site *site,
			       int prio, const char *tag, const char *fmt,
			       const union shmlog__arg *v);
static int print_typed_long(shmlog_t *h, struct shmlog_fmt_site *site,
			    int prio, const char *tag, const char *fmt,
			    const union shmlog__arg *v);

/*
 * The macros' typed call (include/shmlog.h): the site's plan laid out
 * how each value is written when it was made, so a call measures its
 * strings (once), reserves the record, writes the format's id and the
 * values straight into it, and commits: no va_list, no parsing, no copy
 * through the stack, and no call. The conditions are the leaf's of
 * shmlog_write_n() (the TSC clock among them) but the message's length,
 * and the site's: ready for this handle, no * values, no string to cut.
 * Anything else is print_typed_general()'s, with the same values (a
 * jump). @several: the body for a site with two strings or more
 * (print_typed_several()); the other, shmlog__print_typed(), measures at
 * most one. @full: a string measured to any length; else one 16-byte
 * load measures it, and a string of 16 bytes or more (or one near the end
 * of its page) goes to print_typed_long(), the same body with @full: the
 * loop over 16-byte blocks, and the registers it takes, kept out of the
 * common case's function.
 */
static inline __attribute__((always_inline)) int
print_typed_body(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		 const char *tag, const char *fmt, const union shmlog__arg *v,
		 const bool several, const bool full)
{
	/* a null tag: tag_short()'s 0, an exit */
	if (SHMLOG_UNLIKELY(!h || !site ||
			    (unsigned)(prio - SHMLOG_VERBOSE) >
				    SHMLOG_FATAL - SHMLOG_VERBOSE))
		goto general;
	/* shmlog__defer_site_ready() with the plan's fast flag in the key
	 * (SHMLOG__SITE_SLOW), LMM(site:B) as there: this handle's, bit 0
	 * clear, bit 2 (SHMLOG__SITE_SEVERAL) as @several, in one compare */
	uint64_t key = __atomic_load_n(&site->key, __ATOMIC_ACQUIRE);
	if (SHMLOG_UNLIKELY(SHMLOG__SITE_HANDLE(key) !=
			    (h->site_key | (several ? SHMLOG__SITE_SEVERAL : 0)))) {
		if (!several && SHMLOG__SITE_HANDLE(key) ==
					(h->site_key | SHMLOG__SITE_SEVERAL))
			return print_typed_several(h, site, prio, tag, fmt, v);
		goto general;
	}
	const struct shmlog__fmt_plan *p =
		(const struct shmlog__fmt_plan *)__atomic_load_n(
			&site->plan, __ATOMIC_RELAXED);
	/* the site's own literal: laid out for its types (fast) */
	if (SHMLOG_UNLIKELY(p->fmt != fmt))
		goto general;
	const struct shmlog__fmt_typed *t = &p->typed;
	unsigned one = t->sone; /* at most SHMLOG__TYPED_MAX unless @several */
	struct shmlog__wlane *w =
		(struct shmlog__wlane *)(void *)((char *)tls_lanes + h->tls_off);
	__asm__("" : "+r"(w));
	/* the thread's own lane at rest, no leaf inside it (KEY_BUSY) */
	if (SHMLOG_UNLIKELY(w->key != h->id))
		goto general;
	if (!(site->flags & SHMLOG_WRITE_UNFILTERED)) {
		int pass = shmlog__filter_fast(
			atomic_load_explicit(&h->filter_fast,
					     memory_order_relaxed),
			atomic_load_explicit(&h->seg.hdr->config.filter_gen,
					     memory_order_relaxed),
			prio);
		if (SHMLOG_UNLIKELY(pass <= 0)) {
			if (pass == 0)
				return 0; /* below every tag's level */
			goto exit; /* the tag decides */
		}
	}
	/* the strings measured, once; the block's length (typed_fit: what
	 * fits a record beside the longest tag, as shmlog__defer_room()).
	 * The common function checks none: the site's key matched, so the
	 * handle's clock is the TSC and writers need no fence (else its
	 * site_key matches no site), and the block fits with any string
	 * under 16 bytes (else the key has SHMLOG__SITE_SLOW:
	 * shmlog__defer_site()) */
	size_t room = h->typed_fit;
	size_t blen = t->fixed_id; /* 4 + t->fixed */
	uint32_t slen[SHMLOG__TYPED_MAX]; /* the k-th string's (several) */
	size_t n1 = 0; /* the one string's length */
	if (SHMLOG_LIKELY(one < SHMLOG__TYPED_MAX)) {
		/* one string: no loop, nothing kept but its length */
		if (!full) {
			uint32_t n = shmlog__typed_strlen16(
				(const char *)v[one].p);
			if (SHMLOG_UNLIKELY(n >= 16))
				return print_typed_long(h, site, prio, tag,
							fmt, v);
			blen += n;
			n1 = n;
		} else {
			uint32_t n;
			if (SHMLOG_UNLIKELY(!typed_measure(
				    (const char *)v[one].p, room, &blen, &n)))
				goto exit;
			n1 = n;
		}
		if (several)
			slen[0] = (uint32_t)n1;
	} else if (several) {
		unsigned ns = 0;
		for (unsigned m = t->smask; m; m &= m - 1) {
			if (SHMLOG_UNLIKELY(!typed_measure(
				    (const char *)v[__builtin_ctz(m)].p, room,
				    &blen, &slen[ns++])))
				goto exit;
		}
	} else if (full) {
		if (SHMLOG_UNLIKELY(blen > room))
			goto exit; /* no string: the values alone */
	} else if (SHMLOG_UNLIKELY(blen == 4)) {
		/* no value: a block of 4 bytes might not cover the tag's
		 * word past its NUL (below) */
		return print_typed_long(h, site, prio, tag, fmt, v);
	}
	uint32_t id = SHMLOG__SITE_ID(key);

	/* the tag measured after the strings: fewer values kept
	 * across their loop. The common function keeps the 8 bytes read
	 * as they are (the record's 8-byte store of a tag under 8 bytes):
	 * the block, 7 bytes or more with a value, overwrites those past
	 * the tag's NUL, never bytes of the caller's left in the record */
	uint64_t tword;
	uint32_t tag_len = tag_short_as(tag, &tword, full);
	if (SHMLOG_UNLIKELY(!tag_len))
		goto exit;
	/* from here on, a late exit needs only the lane, the site, the tag,
	 * the values and this word (print_typed_exit()) */
	uint64_t meta = rec_meta(0, (uint32_t)blen, prio, REC_FLAG_DEFERRED,
				 tag_len);
	/* the tag's bytes if it is shorter than 8, else its address: one
	 * value kept to the end instead of two (a late exit rebuilds the
	 * tag from it, print_typed_late()) */
	uint64_t tw = tag_len < 8 ? tword : (uint64_t)(uintptr_t)tag;
	uint64_t time = shmlog__rdtsc();
	if (SHMLOG_UNLIKELY(time >= atomic_load_explicit(&h->anchor_due,
							 memory_order_relaxed)))
		goto late;
	/* w->key is h->id (checked above): stored, not changed in place,
	 * here and at the end, so that this call's key word does not wait
	 * on the previous call's (a read-modify-write of memory is slower
	 * than a store, by time, not by instructions) */
	w->key = h->busy_key; /* h->id | KEY_BUSY */
	atomic_signal_fence(memory_order_seq_cst);
	struct shmlog__append_at at;
	if (SHMLOG_UNLIKELY(!shmlog__append_begin(
		    w, time, meta, (const char *)(uintptr_t)tw, tag_len, tw,
		    (uint32_t)blen, &at))) {
		atomic_signal_fence(memory_order_seq_cst);
		w->key = w->handle_id;
		goto next; /* a new chunk to take */
	}
	/* the plan again from the site (not kept across the reservation);
	 * the classes in a register: the stores below may alias the plan */
	t = &((const struct shmlog__fmt_plan *)__atomic_load_n(
		      &site->plan, __ATOMIC_RELAXED))
		     ->typed;
	unsigned char *q = at.msg;
	memcpy(q, &id, 4);
	q += 4;
	const uint32_t *sl = slen;
	uint64_t cw = t->clsw; /* each class nonzero */
	/* the common shapes: straight-line stores, chosen by one jump (the
	 * common function only: a long string's copy outweighs the loop) */
	if (!several && !full) {
		switch (t->shape) {
#define TYPED_SHAPE_CASE(a, b, c)                                              \
	case SHMLOG__SHAPE(a, b, c):                                           \
		shmlog__typed_put_shape(q, SHMLOG__SHAPE(a, b, c), cw, v, n1); \
		goto commit;
			SHMLOG__TYPED_SHAPES(TYPED_SHAPE_CASE)
#undef TYPED_SHAPE_CASE
		default:
			break;
		}
	}
	/* the common function has a value at least (print_typed_long()
	 * takes a site with none) */
	if (full && !cw)
		goto commit;
	do {
		unsigned char c = (unsigned char)cw; /* compared as a byte */
		unsigned k = shmlog__typed_kind(c);
		q = shmlog__typed_put(q, k, c, v++,
				      k == SHMLOG__TK_S && several ? *sl++
								   : n1);
	} while (cw >>= 8);
commit:
	shmlog__append_commit(w, &at);
	atomic_signal_fence(memory_order_seq_cst);
	w->key = w->handle_id; /* h->id: the lane is the handle's */
	/* wake_readers(); no fence needed here (typed_fit), the wake-up a
	 * jump */
	if (SHMLOG_UNLIKELY(shmlog__append_wake_due(w)))
		return wake_then_0(w->h);
	return 0;
late:
	return print_typed_late(w, site, v, meta, tw);
next:
	return print_typed_switch(w, site, v, meta, tw);
exit:
	return print_typed_exit(w, site, prio, tag, v);
general:
	return print_typed_general(h, site, prio, tag, fmt, v);
}

/* A site with two strings or more: the loop over them, and the registers
 * it takes, kept out of the common case's function. */
static __attribute__((noinline)) int
print_typed_several(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		    const char *tag, const char *fmt,
		    const union shmlog__arg *v)
{
	return print_typed_body(h, site, prio, tag, fmt, v, true, true);
}

/* A site with one string, 16 bytes or longer (print_typed_body()). */
static __attribute__((noinline)) int
print_typed_long(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		 const char *tag, const char *fmt, const union shmlog__arg *v)
{
	return print_typed_body(h, site, prio, tag, fmt, v, false, true);
}

int shmlog__print_typed(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
			const char *tag, const char *fmt,
			const union shmlog__arg *v)
{
	return print_typed_body(h, site, prio, tag, fmt, v, false, false);
}

int shmlog_print(shmlog_t *h, int prio, const char *tag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = shmlog_vprint(h, prio, tag, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- the process-wide default handle ---- */

static shmlog_t *default_handle;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_open(void)
{
	shmlog_t *h;
	int err = writer_open(NULL, SHMLOG_OPEN_CREATE, &h);
	if (err) {
		const char *env = getenv("SHMLOG_BUFFER");
		shmlog__debug(SHMLOG__DBG_OPEN, err, env && env[0] ? env : "main");
		return;
	}
	{
		__atomic_store_n(&default_handle, h, __ATOMIC_RELEASE);
		__atomic_store_n(&shmlog__filter_gen,
				 (const uint32_t *)&h->seg.hdr->config.filter_gen,
				 __ATOMIC_RELEASE);
	}
}

shmlog_t *shmlog_default(void)
{
	shmlog_t *h = __atomic_load_n(&default_handle, __ATOMIC_ACQUIRE);
	if (SHMLOG_LIKELY(h))
		return h;
	pthread_once(&default_once, default_open);
	return __atomic_load_n(&default_handle, __ATOMIC_ACQUIRE);
}

/* ---- the SHMLOG_x macros' call sites (include/shmlog.h) ---- */

int shmlog__tag_enabled(int prio, const char *tag)
{
	shmlog_t *h = shmlog_default();
	return h ? shmlog__write_wanted_slow(h, prio, tag) : 0;
}

/* For binaries built with an older header, whose sites never pass it. */
int shmlog__site_refresh(struct shmlog_site *site, int prio)
{
	return shmlog__site_set(site, shmlog_default(), prio, NULL);
}

/* The tag of this call, not the one the site was initialised with: in C++ a
 * constant array may live on the stack of the call that first ran the
 * site, and be gone by the next. */
int shmlog__site_update(struct shmlog_site *site, int prio, const char *tag)
{
	return shmlog__site_set(site, shmlog_default(), prio, tag);
}
