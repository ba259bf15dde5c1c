/* SPDX-License-Identifier: MIT */
/*
 * Reading an archive's files, blocks and entries (archive_format.h): the
 * one parser both readers of the format use, the library's reader
 * (archive_read.c) and the archiver when it takes its position from the
 * newest file (tools/archive_file.c), and the table of formats by id both
 * keep. Header-only, so that the CLI shares it without the shared library
 * exporting it.
 *
 * Hostile input: every length is checked against the block before it is
 * used, every loop is bounded by the bytes of a block or an entry, and a
 * decoded record points into the block (valid until the next block is
 * loaded), never past it.
 */
#ifndef SHMLOG_ARCHIVE_CODEC_H
#define SHMLOG_ARCHIVE_CODEC_H

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "archive_format.h"
#include "archive_zstd.h"
#include "shmlog.h"

/* ---- files ---- */

/* The next archive file of directory stream @d (opendir()): its number
 * into *@no (shmlog__arc_file_number()) and, unless @name is NULL, its
 * name at *@name (valid until the next readdir() of @d); false when no
 * entry is left. Other names are passed over. */
static inline bool shmlog__arc_dir_next(DIR *d, uint64_t *no, const char **name)
{
	struct dirent *e;
	/* each turn takes an entry: bounded by the directory */
	while ((e = readdir(d)))
		if (shmlog__arc_file_number(e->d_name, no)) {
			if (name)
				*name = e->d_name;
			return true;
		}
	return false;
}

/* Read the file header of @fd into *@h and check it: 0 if it is whole
 * and valid (magic, a version this code reads, size, CRC32C);
 * -EPROTONOSUPPORT if its magic is right and its version a later one
 * (nothing else checked: a later version may say more); -EBADMSG if it
 * is short, unreadable or damaged. */
static inline int shmlog__arc_file_header(int fd, struct shmlog_arc_file *h)
{
	if (pread(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h) ||
	    memcmp(h->magic, SHMLOG_ARC_MAGIC, 8))
		return -EBADMSG;
	if (h->version > SHMLOG_ARC_VERSION)
		return -EPROTONOSUPPORT;
	if (h->version < SHMLOG_ARC_VERSION_MIN ||
	    h->header_size != sizeof(*h) ||
	    h->crc != shmlog__crc32c(0, h, offsetof(struct shmlog_arc_file, crc)))
		return -EBADMSG;
	return 0;
}

/* ---- blocks ---- */

enum shmlog__arc_blk {
	SHMLOG__ARC_BLK_OK,
	SHMLOG__ARC_BLK_NOT_YET, /* the file ends inside it: being written, or torn */
	SHMLOG__ARC_BLK_BAD, /* damaged, or no memory for it */
	SHMLOG__ARC_BLK_NOZSTD, /* compressed, and this build has no zstd */
};

/* Grow *@buf (@*cap bytes) to @want bytes at least: false if no memory. */
static inline bool shmlog__arc_grow(unsigned char **buf, size_t *cap,
				    size_t want)
{
	if (want <= *cap)
		return true;
	if (want < 65536)
		want = 65536;
	unsigned char *p = (unsigned char *)realloc(*buf, want);
	if (!p)
		return false;
	*buf = p;
	*cap = want;
	return true;
}

/* A ZBLK's @clen bytes at @off of @fd (its header @b checked but for its
 * CRC) unpacked into *@buf: their length, or -1 (damaged, or no memory),
 * -2 (the file ends inside it), -3 (no zstd in this build). */
static inline long shmlog__arc_zblock_read(int fd, uint64_t off,
					   const struct shmlog_arc_block *b,
					   unsigned char **buf, size_t *cap)
{
	if (!shmlog__zstd_available())
		return -3;
	unsigned char *z = (unsigned char *)malloc(b->len ? b->len : 1);
	if (!z)
		return -1;
	ssize_t n = pread(fd, z, b->len, (off_t)off);
	long len = -1;
	if (n >= 0 && (size_t)n < b->len) {
		len = -2;
	} else if (n >= 0) {
		uint32_t crc = shmlog__crc32c(
			0, b, offsetof(struct shmlog_arc_block, crc));
		long want = shmlog__zstd_size(z, b->len, SHMLOG_ARC_BLOCK_MAX);
		if (shmlog__crc32c(crc, z, b->len) == b->crc && want >= 0 &&
		    shmlog__arc_grow(buf, cap, (size_t)want)) {
			len = shmlog__zstd_unpack(z, b->len, *buf, (size_t)want);
			if (len != want)
				len = -1;
		}
	}
	free(z);
	return len;
}

/* Load the block at *@at of @fd, its entries into *@buf (@*cap bytes,
 * grown with realloc() as needed; a ZBLK's unpacked), their length into
 * *@len, and check its CRC32C; *@at then past it. */
static inline enum shmlog__arc_blk
shmlog__arc_block_read(int fd, uint64_t *at, unsigned char **buf, size_t *cap,
		       uint32_t *len)
{
	struct shmlog_arc_block b;
	uint64_t off = *at;
	ssize_t n = pread(fd, &b, sizeof(b), (off_t)off);
	if (n < 0)
		return SHMLOG__ARC_BLK_BAD;
	if (n < (ssize_t)sizeof(b))
		return SHMLOG__ARC_BLK_NOT_YET;
	if (b.magic == SHMLOG_ARC_ZBLOCK_MAGIC &&
	    b.len <= SHMLOG_ARC_BLOCK_MAX) {
		long k = shmlog__arc_zblock_read(fd, off + sizeof(b), &b, buf,
						 cap);
		if (k == -2)
			return SHMLOG__ARC_BLK_NOT_YET;
		if (k == -3)
			return SHMLOG__ARC_BLK_NOZSTD;
		if (k < 0)
			return SHMLOG__ARC_BLK_BAD;
		*len = (uint32_t)k;
		*at = off + sizeof(b) + b.len;
		return SHMLOG__ARC_BLK_OK;
	}
	if (b.magic != SHMLOG_ARC_BLOCK_MAGIC || b.len > SHMLOG_ARC_BLOCK_MAX)
		return SHMLOG__ARC_BLK_BAD;
	if (!shmlog__arc_grow(buf, cap, b.len))
		return SHMLOG__ARC_BLK_BAD;
	n = pread(fd, *buf, b.len, (off_t)(off + sizeof(b)));
	if (n < 0)
		return SHMLOG__ARC_BLK_BAD;
	if ((size_t)n < b.len)
		return SHMLOG__ARC_BLK_NOT_YET;
	uint32_t crc = shmlog__crc32c(0, &b, offsetof(struct shmlog_arc_block, crc));
	if (shmlog__crc32c(crc, *buf, b.len) != b.crc)
		return SHMLOG__ARC_BLK_BAD;
	*len = b.len;
	*at = off + sizeof(b) + b.len;
	return SHMLOG__ARC_BLK_OK;
}

/* The header of the entry at @pos of a block's @len bytes of entries into
 * *@e: false at the block's end or if the entry's size does not fit. */
static inline bool shmlog__arc_entry_at(const unsigned char *blk, size_t len,
					size_t pos, struct shmlog_arc_entry *e)
{
	if (pos > len || len - pos < sizeof(*e))
		return false;
	memcpy(e, blk + pos, sizeof(*e));
	return e->size >= sizeof(*e) && e->size <= len - pos;
}

/* A BUFFER entry (@size bytes at @p) into *@h, its path at *@path and
 * its h->known lane positions (struct shmlog_arc_lanepos, unaligned) at
 * *@lanepos: false if damaged or naming more than @bufs buffers. */
static inline bool shmlog__arc_buffer_entry(const unsigned char *p, size_t size,
					    unsigned bufs,
					    struct shmlog_arc_buffer *h,
					    const char **path,
					    const unsigned char **lanepos)
{
	if (size < sizeof(*h))
		return false;
	memcpy(h, p, sizeof(*h));
	size_t room = ((size_t)h->path_len + 7) & ~(size_t)7;
	if (h->e.buf >= bufs || !h->lanes || h->lanes > SHMLOG_LANES_MAX ||
	    h->path_len > SHMLOG_ARC_PATH_MAX || h->known > h->lanes ||
	    size != sizeof(*h) + room + (size_t)h->known * 16)
		return false;
	*path = (const char *)p + sizeof(*h);
	*lanepos = p + sizeof(*h) + room;
	return true;
}

/* Lane position @i (below h->known) of the BUFFER entry @h whose
 * positions shmlog__arc_buffer_entry() found at @lanepos, into *@lp:
 * false if it names a lane the buffer does not have (to be ignored). */
static inline bool shmlog__arc_lanepos_at(const struct shmlog_arc_buffer *h,
					  const unsigned char *lanepos,
					  uint32_t i,
					  struct shmlog_arc_lanepos *lp)
{
	memcpy(lp, lanepos + (size_t)i * sizeof(*lp), sizeof(*lp));
	return lp->lane < h->lanes;
}

/* ---- tables of formats by id ---- */

/* A printf-style record names its format by id (nonzero; a multiple of 8
 * as buffers make them, hence the shift in the hash, though any nonzero
 * id works), and both the reader and the archiver keep a buffer's formats
 * by id in a table of this kind: open addressing, linear probing, never
 * more than half full (so a free slot ends every probe), doubled and
 * rehashed when it would be. An entry is the user's struct of @esize
 * bytes whose first member is its uint32_t id, 0 for a free slot; the
 * table never looks past that member. */
struct shmlog__arc_idtab {
	void *v; /* @cap entries of esize bytes, calloc()ed; NULL while empty */
	uint32_t cap; /* 0, or a power of two from 64 */
	uint32_t count; /* ids in it: at most cap / 2 */
};

/* The id of slot @i. */
static inline uint32_t shmlog__arc_idtab_id(const struct shmlog__arc_idtab *t,
					    size_t esize, uint32_t i)
{
	uint32_t id;
	memcpy(&id, (const unsigned char *)t->v + (size_t)i * esize, sizeof(id));
	return id;
}

/* Id @id's slot in @t (t->cap > 0): its own, or the free one it goes
 * to. */
static inline void *shmlog__arc_idtab_slot(const struct shmlog__arc_idtab *t,
					   size_t esize, uint32_t id)
{
	uint32_t mask = t->cap - 1;
	uint32_t i = (id >> 3) * 0x9e3779b1u & mask;
	uint32_t at;
	/* at most half full: a free slot ends the probe */
	while ((at = shmlog__arc_idtab_id(t, esize, i)) && at != id)
		i = (i + 1) & mask;
	return (unsigned char *)t->v + (size_t)i * esize;
}

/* The entry of id @id in @t, or NULL (none; id 0 is never one). */
static inline void *shmlog__arc_idtab_find(const struct shmlog__arc_idtab *t,
					   size_t esize, uint32_t id)
{
	if (!t->cap || !id)
		return NULL;
	void *e = shmlog__arc_idtab_slot(t, esize, id);
	uint32_t at;
	memcpy(&at, e, sizeof(at));
	return at ? e : NULL;
}

/* Room in @t for one more id, the table doubled if it is half full, to
 * hold at most @max: false if it is full to @max or without memory (the
 * table is as it was). */
static inline bool shmlog__arc_idtab_room(struct shmlog__arc_idtab *t,
					  size_t esize, uint32_t max)
{
	if (t->count < t->cap / 2)
		return true;
	if (t->count >= max || t->cap > UINT32_MAX / 2)
		return false;
	struct shmlog__arc_idtab n = {
		.cap = t->cap ? 2 * t->cap : 64,
		.count = t->count,
	};
	if (!(n.v = calloc(n.cap, esize)))
		return false;
	for (uint32_t i = 0; i < t->cap; i++) {
		uint32_t id = shmlog__arc_idtab_id(t, esize, i);
		if (id)
			memcpy(shmlog__arc_idtab_slot(&n, esize, id),
			       (const unsigned char *)t->v + (size_t)i * esize,
			       esize);
	}
	free(t->v);
	*t = n;
	return true;
}

/* Put id @id in its free slot of @t (it is not in @t, and
 * shmlog__arc_idtab_room() said yes): the entry, zeroed but for its id. */
static inline void *shmlog__arc_idtab_add(struct shmlog__arc_idtab *t,
					  size_t esize, uint32_t id)
{
	void *e = shmlog__arc_idtab_slot(t, esize, id);
	memset(e, 0, esize);
	memcpy(e, &id, sizeof(id));
	t->count++;
	return e;
}

/* ---- records ---- */

/* A record as the file holds it: tag and message point into the block,
 * not NUL-terminated. */
struct shmlog__arc_rec {
	uint16_t buf;
	uint16_t lane;
	uint8_t prio; /* as stored: 0..7 */
	uint8_t flags; /* SHMLOG_REC_TRUNCATED, SHMLOG_ARC_REC_DEFERRED */
	uint32_t pid, tid;
	uint64_t seq;
	int64_t time_ns;
	uint64_t raw_time;
	const unsigned char *tag, *msg;
	size_t tag_len, msg_len;
};

/* A RECORD entry (@size bytes at @p) into *@r: false if damaged. */
static inline bool shmlog__arc_record_entry(const unsigned char *p, size_t size,
					    struct shmlog__arc_rec *r)
{
	struct shmlog_arc_record h;
	if (size < sizeof(h))
		return false;
	memcpy(&h, p, sizeof(h));
	if (h.tag_len > SHMLOG_TAG_MAX || h.msg_len > SHMLOG_MSG_MAX ||
	    size != sizeof(h) + h.tag_len + h.msg_len ||
	    h.lane >= SHMLOG_LANES_MAX)
		return false;
	*r = (struct shmlog__arc_rec){
		.buf = h.e.buf,
		.lane = h.lane,
		.prio = h.prio,
		.flags = (uint8_t)(h.flags & (SHMLOG_REC_TRUNCATED |
					      SHMLOG_ARC_REC_DEFERRED)),
		.pid = h.pid,
		.tid = h.tid,
		.seq = h.seq,
		.time_ns = h.time_ns,
		.raw_time = h.raw_time,
		.tag = p + sizeof(h),
		.tag_len = h.tag_len,
		.msg = p + sizeof(h) + h.tag_len,
		.msg_len = h.msg_len,
	};
	return true;
}

/* ---- runs (version 3) ---- */

/* Where a RUN or SPAN entry is being decoded. The contexts point into the
 * block. */
struct shmlog__arc_run_dec {
	const unsigned char *p, *end;
	uint32_t left; /* records still to decode */
	bool span; /* a SPAN entry: @sh and @seq, no contexts */
	struct shmlog_arc_span sh;
	uint64_t seq; /* a span's next record's */
	int64_t time_ns;
	uint64_t raw_time;
	unsigned nctx, nlanes;
	int last; /* the context of the record before, -1: none */
	struct {
		uint32_t pid, tid;
		uint16_t buf, lane, slot; /* slot: its lane's in lane_next */
		uint8_t tag_len;
		const unsigned char *tag;
	} ctx[SHMLOG_ARC_RUN_CTX_MAX];
	uint32_t lane_of[SHMLOG_ARC_RUN_CTX_MAX]; /* buf << 16 | lane */
	uint64_t lane_next[SHMLOG_ARC_RUN_CTX_MAX]; /* 0: no record yet */
	bool lane_seen[SHMLOG_ARC_RUN_CTX_MAX];
};

/* The records of the RUN or SPAN entry of @size bytes at @p, after its
 * header of @hsize bytes: @count of them, each of @least bytes at least.
 * False if they cannot fit: a count no entry of this size holds is
 * damage, found before anything is decoded. */
static inline bool shmlog__arc_dec_records(struct shmlog__arc_run_dec *d,
					   const unsigned char *p, size_t size,
					   size_t hsize, uint32_t count,
					   size_t least)
{
	if (count > (size - hsize) / least)
		return false;
	d->p = p + hsize;
	d->end = p + size;
	d->left = count;
	return true;
}

/* Start decoding the RUN entry of @size bytes at @p: false if damaged. */
static inline bool shmlog__arc_run_begin(struct shmlog__arc_run_dec *d,
					 const unsigned char *p, size_t size)
{
	struct shmlog_arc_run h;
	if (size < sizeof(h))
		return false;
	memcpy(&h, p, sizeof(h));
	/* a record takes 5 bytes at least */
	if (!shmlog__arc_dec_records(d, p, size, sizeof(h), h.count, 5))
		return false;
	d->time_ns = h.base_time_ns;
	d->raw_time = h.base_raw_time;
	d->nctx = d->nlanes = 0;
	d->last = -1;
	d->span = false;
	return true;
}

/* Start decoding the SPAN entry of @size bytes at @p: false if damaged. */
static inline bool shmlog__arc_span_begin(struct shmlog__arc_run_dec *d,
					  const unsigned char *p, size_t size)
{
	struct shmlog_arc_span h;
	if (size < sizeof(h))
		return false;
	memcpy(&h, p, sizeof(h));
	/* a record takes 40 bytes at least */
	if (!h.count || h.lane >= SHMLOG_LANES_MAX || h.shift > 63 ||
	    !shmlog__arc_dec_records(d, p, size, sizeof(h), h.count, 40))
		return false;
	d->sh = h;
	d->span = true;
	d->seq = h.first_seq;
	return true;
}

/* The span's next record into *@r (shmlog__arc_run_next()'s answers). */
static inline int shmlog__arc_span_next(struct shmlog__arc_run_dec *d,
					struct shmlog__arc_rec *r)
{
	if (!d->left)
		return d->p == d->end ? 0 : -1;
	struct shmlog_arc_span_rec h;
	size_t room = (size_t)(d->end - d->p);
	if (room < sizeof(h))
		return -1;
	memcpy(&h, d->p, sizeof(h));
	if (h.len % 8 || h.len > room || h.tag_len > SHMLOG_TAG_MAX ||
	    h.msg_len > SHMLOG_MSG_MAX ||
	    (size_t)h.len < sizeof(h) + h.tag_len + h.msg_len || h.prio > 7 ||
	    h.seq != d->seq)
		return -1;
	*r = (struct shmlog__arc_rec){
		.buf = d->sh.e.buf,
		.lane = d->sh.lane,
		.prio = h.prio,
		.flags = (uint8_t)(h.flags & (SHMLOG_REC_TRUNCATED |
					      SHMLOG_ARC_REC_DEFERRED)),
		.pid = h.pid,
		.tid = h.tid,
		.seq = h.seq,
		.time_ns = shmlog__arc_span_time(&d->sh, h.raw_time),
		.raw_time = h.raw_time,
		.tag = d->p + sizeof(h),
		.tag_len = h.tag_len,
		.msg = d->p + sizeof(h) + h.tag_len,
		.msg_len = h.msg_len,
	};
	d->p += h.len;
	d->seq++;
	d->left--;
	return 1;
}

/* A varint at *@p (before @end) into *@v: false if it does not end in
 * time. */
static inline bool shmlog__arc_varint(const unsigned char **p,
				      const unsigned char *end, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
		unsigned char b = *(*p)++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

static inline int64_t shmlog__arc_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A new context of the run at d->p: false if damaged. */
static inline bool shmlog__arc_run_ctx(struct shmlog__arc_run_dec *d)
{
	uint64_t buf, lane, pid, tid;
	if (d->nctx >= SHMLOG_ARC_RUN_CTX_MAX ||
	    !shmlog__arc_varint(&d->p, d->end, &buf) ||
	    !shmlog__arc_varint(&d->p, d->end, &lane) ||
	    !shmlog__arc_varint(&d->p, d->end, &pid) ||
	    !shmlog__arc_varint(&d->p, d->end, &tid) || d->p >= d->end ||
	    buf > UINT16_MAX || lane >= SHMLOG_LANES_MAX || pid > UINT32_MAX ||
	    tid > UINT32_MAX)
		return false;
	unsigned tag_len = *d->p++;
	if (tag_len > SHMLOG_TAG_MAX || (size_t)(d->end - d->p) < tag_len)
		return false;
	uint32_t key = (uint32_t)buf << 16 | (uint32_t)lane;
	unsigned slot = 0;
	while (slot < d->nlanes && d->lane_of[slot] != key)
		slot++;
	if (slot == d->nlanes) {
		d->lane_of[slot] = key;
		d->lane_seen[slot] = false;
		d->nlanes++;
	}
	unsigned c = d->nctx++;
	d->ctx[c].pid = (uint32_t)pid;
	d->ctx[c].tid = (uint32_t)tid;
	d->ctx[c].buf = (uint16_t)buf;
	d->ctx[c].lane = (uint16_t)lane;
	d->ctx[c].slot = (uint16_t)slot;
	d->ctx[c].tag_len = (uint8_t)tag_len;
	d->ctx[c].tag = d->p;
	d->p += tag_len;
	d->last = (int)c;
	return true;
}

/* The run's (or span's) next record into *@r: 1, 0 at its end (all its
 * records decoded, no byte left), -1 if damaged (nothing more of it is
 * read). */
static inline int shmlog__arc_run_next(struct shmlog__arc_run_dec *d,
				       struct shmlog__arc_rec *r)
{
	if (d->span)
		return shmlog__arc_span_next(d, r);
	if (!d->left)
		return d->p == d->end ? 0 : -1;
	if (d->p >= d->end)
		return -1;
	unsigned head = *d->p++;
	if ((head & SHMLOG_ARC_RUN_NEWCTX) && (head & SHMLOG_ARC_RUN_SAMECTX))
		return -1;
	if (head & SHMLOG_ARC_RUN_NEWCTX) {
		if (!shmlog__arc_run_ctx(d))
			return -1;
	} else if (!(head & SHMLOG_ARC_RUN_SAMECTX)) {
		if (d->p >= d->end || *d->p >= d->nctx)
			return -1;
		d->last = *d->p++;
	} else if (d->last < 0) {
		return -1;
	}
	unsigned c = (unsigned)d->last, slot = d->ctx[c].slot;
	uint64_t seq, dt, dr, mlen;
	if (head & SHMLOG_ARC_RUN_SEQ) {
		if (!shmlog__arc_varint(&d->p, d->end, &seq))
			return -1;
	} else {
		if (!d->lane_seen[slot])
			return -1;
		seq = d->lane_next[slot];
	}
	if (!shmlog__arc_varint(&d->p, d->end, &dt) ||
	    !shmlog__arc_varint(&d->p, d->end, &dr) ||
	    !shmlog__arc_varint(&d->p, d->end, &mlen) ||
	    mlen > SHMLOG_MSG_MAX || (uint64_t)(d->end - d->p) < mlen)
		return -1;
	d->lane_seen[slot] = true;
	d->lane_next[slot] = seq + 1;
	/* unsigned sums: a hostile delta wraps, it never overflows */
	d->time_ns = (int64_t)((uint64_t)d->time_ns +
			       (uint64_t)shmlog__arc_unzigzag(dt));
	d->raw_time += (uint64_t)shmlog__arc_unzigzag(dr);
	*r = (struct shmlog__arc_rec){
		.buf = d->ctx[c].buf,
		.lane = d->ctx[c].lane,
		.prio = (uint8_t)(head & SHMLOG_ARC_RUN_PRIO),
		.flags = (uint8_t)(((head & SHMLOG_ARC_RUN_TRUNCATED)
					    ? SHMLOG_REC_TRUNCATED
					    : 0) |
				   ((head & SHMLOG_ARC_RUN_DEFERRED)
					    ? SHMLOG_ARC_REC_DEFERRED
					    : 0)),
		.pid = d->ctx[c].pid,
		.tid = d->ctx[c].tid,
		.seq = seq,
		.time_ns = d->time_ns,
		.raw_time = d->raw_time,
		.tag = d->ctx[c].tag,
		.tag_len = d->ctx[c].tag_len,
		.msg = d->p,
		.msg_len = (size_t)mlen,
	};
	d->p += mlen;
	d->left--;
	return 1;
}

#endif
