/* SPDX-License-Identifier: MIT */
/*
 * What `shmlog archive` (tools/archive.c) takes from a reader of a buffer
 * beyond the public API: records as stored, in batches. Exported by the
 * shared library for the CLI (libshmlog.map), not part of the API: no
 * promise to other callers, no entry in shmlog.h.
 */
#ifndef SHMLOG_READER_RAW_H
#define SHMLOG_READER_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shmlog.h"

/* From now on, a record written with SHMLOG_WRITE_DEFERRED is returned as
 * stored: flag SHMLOG_REC_DEFERRED, and its message is the format's id
 * (u32, little-endian) then the argument block, unformatted
 * (shmlog_reader_deferred() then says -ENOENT). 0, or -EINVAL for a
 * reader of an archive. Not thread-safe (the reader's own rule). */
int shmlog__reader_keep_raw(shmlog_reader_t *r);

/* From now on, the reader never rests from a writer at full speed that
 * overtakes it (docs/DESIGN.md, "rests when it cannot keep up"): it reads
 * on at once, at the lane's newest half. For a reader whose job is to keep
 * records (the archiver); it costs such a writer more misses. 0, or
 * -EINVAL for a reader of an archive. Not thread-safe. */
int shmlog__reader_no_rest(shmlog_reader_t *r);

/* The sequence number every lane of the buffer began at, its copy taken
 * when the reader opened it: what a lane that wrote nothing numbers its
 * next record. Deriving it from a lane's next number and count instead
 * reads two things a writer moves. 0, or -EINVAL for a reader of an
 * archive. */
int shmlog__reader_initial_seq(const shmlog_reader_t *r, uint64_t *seq);

/* The format whose id is @id in the buffer's format table, copied into
 * @buf (@cap bytes, NUL-terminated): its length; -ENOENT if @id names no
 * format, -EIO if the file was truncated under the reader, -EINVAL for a
 * reader of an archive. Hostile input: the copy is checked. */
int shmlog__reader_format_of(const shmlog_reader_t *r, uint32_t id,
			     char *buf, size_t cap);

/* Called by shmlog__reader_drain() for each event, as
 * shmlog_reader_next() would return it: false to end the batch there. */
typedef bool (*shmlog__drain_fn)(void *ctx, int ev,
				 const struct shmlog_record *rec,
				 const struct shmlog_lost *lost);

/* Records of one lane as the buffer stores them, checked as
 * shmlog_reader_next() checks each: @count records back to back at
 * @bytes (@len bytes; each the buffer's 40-byte record header, tag,
 * message, zeros to its length), sequence numbers from @first_seq, all on
 * one piece of the clock conversion (the archive's SPAN entry holds the
 * same fields, archive_format.h). */
struct shmlog__span {
	unsigned lane;
	unsigned count;
	uint64_t first_seq;
	const unsigned char *bytes;
	size_t len;
	uint64_t base_raw;
	int64_t base_ns;
	uint64_t mult;
	unsigned shift;
	bool deferred; /* printf-style records among them */
};

/* Called by shmlog__reader_drain() with a span: how many of its records,
 * from the first, it took into *@took; false (or fewer taken than all)
 * ends the batch there. */
typedef bool (*shmlog__span_fn)(void *ctx, const struct shmlog__span *s,
				unsigned *took);

/* Called by shmlog__reader_drain() before it copies a span of @n bytes
 * that goes to @span whole: where to copy it (@n bytes of room), or NULL
 * for the reader's own copy. The span handed to @span is then there. */
typedef unsigned char *(*shmlog__room_fn)(void *ctx, size_t n);

/* shmlog_reader_next() up to @max times, each event handed to @take, the
 * mapping guarded once for the batch instead of once per record: the
 * records and losses taken (0: nothing new), or shmlog_reader_next()'s
 * -EIO (once), -ENOMEM, -EINVAL (no @span). @take and @span must not
 * call the reader. @bytes: about how many bytes of records the caller has
 * room for (a span is copied no longer). After shmlog__reader_keep_raw(),
 * while one lane alone holds records, they come from one copy of its
 * chunk, checked as shmlog_reader_next() checks each (reader_raw.c,
 * "Spans"), handed to @span whole (copied where @room says, if not
 * NULL). */
int shmlog__reader_drain(shmlog_reader_t *r, unsigned max, size_t bytes,
			 shmlog__drain_fn take, shmlog__span_fn span,
			 shmlog__room_fn room, void *ctx);

#endif
