/* SPDX-License-Identifier: MIT */
/*
 * Bytes of history kept: how much of a writer's own recent output a buffer
 * still holds. Measured from the public API only (what a reader returns),
 * so that the figure means the same thing whatever the ring does inside.
 * Shared by the capacity test (tests/hardening/test_capacity.c) and the
 * "history kept" part of `shmlog-bench log` (bench/log/history.c); it sits
 * in common/ so that neither folder reaches into the other.
 */
#ifndef SHMLOG_KEPT_H
#define SHMLOG_KEPT_H

#include <stddef.h>
#include <stdint.h>

#define KEPT_REC_HDR 40u  /* bytes of a record's header */
#define KEPT_REC_ALIGN 8u /* records are padded to a multiple of this */

/* Bytes a record takes in the ring: the 40-byte header, the tag, the
 * message, padded to a multiple of 8 (docs/DESIGN.md, "Records"), for the
 * @tag_len and @msg_len a reader returns (after any truncation).
 *
 * A writer's history kept is the sum of this over its records that a reader
 * can still read; its history written, the sum over the records it wrote.
 * The formula is fixed here as a definition, not taken from the ring: if the
 * ring's own header changes, figures measured before and after still
 * compare. Thread-safe, async-signal-safe. */
static inline uint64_t kept_record_bytes(size_t tag_len, size_t msg_len)
{
	return ((uint64_t)KEPT_REC_HDR + tag_len + msg_len +
		KEPT_REC_ALIGN - 1) &
	       ~(uint64_t)(KEPT_REC_ALIGN - 1);
}

#endif
