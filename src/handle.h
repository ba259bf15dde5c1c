/* SPDX-License-Identifier: MIT */
/*
 * The handle, struct shmlog (shmlog_t): a mapped segment and what a
 * process keeps beside it, the write path's line first.
 */
#ifndef SHMLOG_HANDLE_H
#define SHMLOG_HANDLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "segment.h"

struct shmlog__filter;

struct shmlog__defer_cache;
struct shmlog {
	struct shmlog__seg seg;
	/* From id to anchor_due: what the leaves and the typed call read
	 * on every write, in one cache line with the segment's end. */
	uint64_t id; /* unique per process lifetime; never reused */
	size_t tls_off; /* where a thread's lane view for it is (writer.c) */
	/* what a site's key holds for this handle but the format's id:
	 * id << SHMLOG__SITE_ID_BITS, or SHMLOG__SITE_NONE (no key has it)
	 * if the id does not fit or typed_fit is 0 (the typed fast path:
	 * one compare) */
	uint64_t site_key;
	/* id with its top bit set: a thread's key while a typed call is
	 * inside its lane (writer.c, KEY_BUSY) */
	uint64_t busy_key;
	/* a message this long or shorter fits a record whatever its tag */
	uint32_t msg_fit;
	/* ... and shorter than this, shmlog_write_n()'s leaf writes it (0:
	 * never: the clock is not the TSC, or writers must fence) */
	uint32_t leaf_len_end;
	_Atomic uint64_t anchor_due; /* raw time to look at the anchors again */
	/* ... and a typed printf-style call's block this long or shorter
	 * takes its fast path (0: never, for the same two reasons) */
	uint32_t typed_fit;
	bool need_fence; /* membarrier unavailable: writers fence */
	_Atomic unsigned char *prefaulted; /* per chunk: pages made resident */
	/* Per lane: the thread of ours holding it through this handle (its
	 * tid), 0 if none. The description's lock (lane.c) cannot tell our
	 * threads apart; this does. */
	_Atomic uint32_t *holder;
	int lock_fd; /* the lanes' locks: a description never mapped */
	int slot; /* our borrowers' slot (lane.c), -1: cannot borrow */
	uint32_t slot_nonce;
	char *lock_path; /* the file's path: opened again after fork(), looked
			 * at by shmlog_check() */
	bool no_ofd; /* the kernel has no OFD locks (Linux < 3.15) */
	bool claims_refused; /* a fork child without a description of its own */
	/* filter cache */
	uint32_t filter_gen_seen;
	struct shmlog__filter *filter; /* read lock-free by writers (atomic) */
	struct shmlog__filter *retired; /* replaced ones, freed at close */
	/* call sites whose formats are in the buffer's table (fmtarg_table.c) */
	_Atomic(struct shmlog__defer_cache *) defer;
	/* The writers' lock-free answer, shmlog__filter_word(): the
	 * generation it is good for, the lowest and the highest level any
	 * tag needs. A write at or above the highest passes whatever its
	 * tag; one below the lowest is dropped whatever its tag; only one in
	 * between looks its tag up. */
	_Atomic uint64_t filter_fast;
	/* the file mapped, as fstat(2) saw it at open: shmlog_check()
	 * compares its name's file with it (last: off the write path) */
	dev_t file_dev;
	ino_t file_ino;
};

#endif
