/* SPDX-License-Identifier: MIT */
/*
 * The write path's pieces that writer.c (the write calls) and
 * fmtarg_call.c (the printf-style calls) share: the thread's lane views,
 * the inline common case of a write (write_rec()), and the helpers around
 * an append. Inline: each is part of a call's whole path, and a call
 * into another file costs the saving and restoring of every register the
 * caller keeps live. The out-of-line rest is shmlog__write_general()
 * (writer.c).
 */
#ifndef SHMLOG_WRITE_PATH_H
#define SHMLOG_WRITE_PATH_H

#include <errno.h>
#include <stdatomic.h>

#include "append.h"
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
extern __thread struct shmlog__wlane shmlog__tls_lanes[TLS_SLOTS]
	__attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Why a record found no chunk: none was free (-EAGAIN), or the buffer
 * was removed (-ESTALE: chunk_switch() takes none in it). */
static inline int no_chunk(const struct shmlog *h)
{
	return shmlog__seg_removed(&h->seg) ? -ESTALE : -EAGAIN;
}

/* Count a refused write in the buffer's stats. */
static inline void count_drop(struct shmlog *h)
{
	atomic_fetch_add_explicit(&h->seg.hdr->stats.dropped, 1,
				  memory_order_relaxed);
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
	/* LMM(ring:W) the head before the look at the sleepers word: a
	 * compiler barrier where the reader's membarrier is the other half
	 * (wake.c, "Waking readers"), a full fence where it cannot be */
	if (SHMLOG_UNLIKELY(h->need_fence)) {
		shmlog__fence_full();
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

/* Does the filter of @h (`shmlog level`, $SHMLOG_TAGS) let this write
 * through? Relaxed loads: the filter word holds its generation and both
 * bounds in one atomic, and nothing is read through it (ring.c, the
 * barrier list: filter:F). Two loads and a few compares while the filter is unchanged and
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

/* Everything but the common case of write_rec() (writer.c). */
__attribute__((noinline, visibility("hidden"))) int
shmlog__write_general(shmlog_t *h, uint64_t time, uint64_t meta,
		      const char *tag, uint64_t tword, const char *msg,
		      int prio, unsigned wflags, uint32_t as_pid);

/* The write path. @flags: SHMLOG_REC_TRUNCATED if the caller cut already;
 * @wflags: SHMLOG_WRITE_*; @as_pid: the record's pid and tid, 0: ours.
 * The common case (this thread's own lane, not inside a write of its
 * own, no anchor due, room in the OPEN chunk) appends inline and calls
 * nothing; the rest is shmlog__write_general()'s. Inlined into each entry. */
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
		(struct shmlog__wlane *)(void *)((char *)shmlog__tls_lanes + h->tls_off);
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
		return shmlog__write_general(h, time, meta, tag, tword, msg, prio,
				     wflags | SHMLOG_WRITE_UNFILTERED, as_pid);
	}
	uint64_t time = shmlog__clock_raw((int)h->seg.fixed.clock);
	return shmlog__write_general(h, time, meta, tag, tword, msg, prio, wflags,
			     as_pid);
}

/* Wake the readers, for the leaf: a tail call. */
static __attribute__((noinline)) int wake_then_0(const struct shmlog *h)
{
	shmlog__ring_wake(h->seg.hdr);
	return 0;
}

#endif
