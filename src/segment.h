/* SPDX-License-Identifier: MIT */
/*
 * A mapped segment (segment.c): the handle's view of a buffer's file, the
 * accessors of its lane table, descriptor table and chunks, and attaching,
 * validating and detaching it. The bytes are seg_format.h's.
 */
#ifndef SHMLOG_SEGMENT_H
#define SHMLOG_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "seg_format.h"

struct shmlog__seg {
	unsigned char *base; /* whole file */
	uint64_t size;
	struct shmlog__hdr *hdr; /* base, or a separate writable page 0 */
	struct shmlog__fixed fixed; /* validated private copy */
	int fd;
	bool writable;
	bool hdr_writable; /* may set notify.sleepers */
	unsigned char *hdr_map; /* separate RW mapping of page 0, or NULL */
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* Was the file removed (shmlog_remove())? Read at chunk switches only. */
static inline bool shmlog__seg_removed(const struct shmlog__seg *s)
{
	return atomic_load_explicit(&s->hdr->config.removed,
				    memory_order_relaxed) != 0;
}

static inline struct shmlog__lane *seg_lane(const struct shmlog__seg *s,
					    unsigned i)
{
	return (struct shmlog__lane *)(s->base + s->fixed.lanes_off +
				       (uint64_t)i * sizeof(struct shmlog__lane));
}

static inline struct shmlog__space *seg_space(const struct shmlog__seg *s)
{
	return (struct shmlog__space *)(void *)(s->base + s->fixed.chunks_off);
}

/* Chunk @i's descriptor word (i < chunk_count). */
static inline _Atomic uint64_t *seg_chunk(const struct shmlog__seg *s,
					  unsigned i)
{
	return (_Atomic uint64_t *)(void *)(s->base + s->fixed.chunks_off +
					    sizeof(struct shmlog__space) +
					    (uint64_t)i * 8);
}

/* Chunk @i's bytes. */
static inline unsigned char *seg_chunk_data(const struct shmlog__seg *s,
					    unsigned i)
{
	return s->base + s->fixed.data_off + (uint64_t)i * s->fixed.chunk_size;
}

/* Position of byte 0 of the chunk incarnation a descriptor word names. */
static inline uint64_t chunk_base(const struct shmlog__fixed *f, uint64_t w)
{
	return f->initial_pos + (w >> CHUNK_INC_SHIFT) * f->chunk_size;
}

/* A word a writer may have stored that takes up room of its lane: a LIVE
 * or OPEN chunk (chunk_valid()), or a reserved one. */
static inline bool chunk_held(const struct shmlog__fixed *f, uint64_t w)
{
	unsigned st = chunk_state(w);
	return st - CHUNK_LIVE <= CHUNK_RESV - CHUNK_LIVE &&
	       chunk_lane(w) < f->lane_count && (w >> CHUNK_INC_SHIFT) != 0;
}

/* Is @w a descriptor word a writer could have stored for a lane, one
 * that holds records? */
static inline bool chunk_valid(const struct shmlog__fixed *f, uint64_t w)
{
	unsigned st = chunk_state(w);
	return (st == CHUNK_LIVE || st == CHUNK_OPEN) &&
	       chunk_lane(w) < f->lane_count && (w >> CHUNK_INC_SHIFT) != 0;
}

/* Access flags for shmlog__seg_attach(). */
#define SEG_WRITE 0x1
#define SEG_CREATE 0x2

int shmlog__seg_attach(const char *name, int flags, struct shmlog__seg *s);
void shmlog__seg_detach(struct shmlog__seg *s);
/* Validate a header copy against a file size. 0 or -EBADMSG, etc. */
int shmlog__fixed_validate(const struct shmlog__fixed *f, uint64_t file_size);
uint64_t shmlog__fnv1a(const void *p, size_t n);

#endif
