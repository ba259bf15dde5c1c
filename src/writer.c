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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "append.h"
#include "internal.h"
#include "utf8.h"
#include "write_path.h"

__thread struct shmlog__wlane shmlog__tls_lanes[TLS_SLOTS]
	__attribute__((tls_model("initial-exec"), visibility("hidden")));

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
		struct shmlog__wlane *w = &shmlog__tls_lanes[i];
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
		shmlog__wlane_forget(&shmlog__tls_lanes[i]);
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
	struct stat st;
	if (!err && fstat(h->seg.fd, &st) < 0)
		err = -errno;
	if (!err) {
		h->file_dev = st.st_dev;
		h->file_ino = st.st_ino;
	}
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
			h->tls_off = h->id % TLS_SLOTS * sizeof(shmlog__tls_lanes[0]);
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
		if (shmlog__tls_lanes[i].handle_id == h->id)
			shmlog__wlane_forget(&shmlog__tls_lanes[i]);
	shmlog__owner_close(h);
	shmlog__seg_detach(&h->seg);
	free(h->prefaulted);
	free(h->holder);
	shmlog__filter_free_all(h);
	shmlog__defer_free(h);
	free(h);
}

int shmlog_check(shmlog_t *h)
{
	if (!h || !h->lock_path)
		return -EINVAL;
	/* The name, not the mapping: shmlog_remove() unlinks before it
	 * marks, a plain unlink(2) or rm(1) never marks, and a buffer
	 * created again has a new file. No byte of the segment is read,
	 * so a truncated file cannot fault here. */
	struct stat st;
	if (lstat(h->lock_path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? -ESTALE : -errno;
	if (st.st_dev != h->file_dev || st.st_ino != h->file_ino)
		return -ESTALE;
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
__attribute__((noinline)) int
shmlog__write_general(shmlog_t *h, uint64_t time, uint64_t meta, const char *tag,
	      uint64_t tword, const char *msg, int prio, unsigned wflags,
	      uint32_t as_pid)
{
	/* the record, built here: in write_rec() it would live in memory */
	const struct shmlog__recdesc rec = {
		.time = time, .meta = meta, .tag = tag, .tword = tword, .msg = msg};
	const struct shmlog__recdesc *d = &rec;
	struct shmlog__wlane *w = &shmlog__tls_lanes[h->id % TLS_SLOTS];
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
		(struct shmlog__wlane *)(void *)((char *)shmlog__tls_lanes + h->tls_off);
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
