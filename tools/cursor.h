/* SPDX-License-Identifier: MIT */
/*
 * Cursors: where a reader of a buffer stopped, so that it (or any other
 * tool) resumes there. A cursor names, per writer lane, the next sequence
 * number still to deliver, together with the identity of the buffer it was
 * taken from. Used by `shmlog forward` and `shmlog cat --cursor-file`.
 *
 * File format (text, one cursor file may hold several buffers):
 *
 *   shmlog-cursor 1
 *   buffer created_ns=N ino=N lanes=N PATH
 *   LANE NEXT_SEQ            (one line per lane a record was delivered from)
 *   ...
 *   checksum HEX             (FNV-1a 64 of every byte before this line)
 *
 * It is written to FILE.tmp, fsync'ed, renamed over FILE, and the
 * directory fsync'ed: a reader of FILE sees the old cursor or the new one,
 * never a mix, even across a power cut.
 */
#ifndef SHMLOG_CURSOR_H
#define SHMLOG_CURSOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shmlog.h"

/* Which buffer a cursor belongs to. The segment's creation time and the
 * file's inode change when a buffer is removed and created again, so a
 * cursor never applies to a different buffer of the same name. */
struct cursor_id {
	char path[PATH_MAX];
	int64_t created_ns;
	uint64_t ino;
	unsigned lanes;
};

/* One buffer's position: next[l] is the next sequence number to deliver
 * from lane l, valid if known[l]. */
struct cursor_buf {
	struct cursor_id id;
	uint64_t *next;
	bool *known;
};

struct cursor {
	struct cursor_buf *bufs;
	size_t n;
};

/* Fill @id for buffer @name (shmlog_path naming). 0 or a negative errno. */
int cursor_identify(const char *name, struct cursor_id *id);

/* Read @file into @c (which must be empty). Returns 0; -ENOENT if the file
 * does not exist; -EBADMSG if it is not a valid cursor file (bad header,
 * syntax or checksum); -EINVAL if it is not a regular file (a FIFO, a
 * device: never waited on nor read); -ELOOP if it is a symbolic link;
 * other negative errnos from reading; each but -ENOENT with a description
 * in @why. @c is left empty on failure. */
int cursor_load(const char *file, struct cursor *c, char *why, size_t whylen);

/* Write @c to @file atomically (temporary file, fsync, rename, fsync of
 * the directory). 0 or a negative errno. */
int cursor_save(const char *file, const struct cursor *c);

/* The section of @c for the buffer at @path, or NULL. */
struct cursor_buf *cursor_find(struct cursor *c, const char *path);

/* Add an empty section for @id (every lane unknown); NULL if out of
 * memory. */
struct cursor_buf *cursor_add(struct cursor *c, const struct cursor_id *id);

/* Make @b an empty section (every lane unknown) for @id, as when the
 * saved one belonged to another buffer. 0 or -ENOMEM (@b then unchanged). */
int cursor_reset(struct cursor_buf *b, const struct cursor_id *id);

/* Does @saved describe the buffer @now? If not, a sentence saying why. */
bool cursor_same_buffer(const struct cursor_id *saved,
			const struct cursor_id *now, char *why, size_t whylen);

void cursor_free(struct cursor *c);

/* A cursor ahead of its buffer: it resumes a lane at a sequence number the
 * lane has not reached. The buffer's identity matched, so the cursor was
 * not taken from it (copied from elsewhere, or the buffer was recreated
 * with the same identity): the lane is made unknown, to be read from its
 * oldest record, rather than skipping records until it gets there. Returns
 * how many lanes were; the first is described in @why, as a warning
 * would say it. */
unsigned cursor_drop_ahead(struct cursor_buf *b, const shmlog_reader_t *rd,
			   char *why, size_t whylen);

/* Is @seq (of a record read from @lane) already delivered by @b's
 * cursor? Sequence numbers compare by signed difference: they may wrap. */
static inline bool cursor_done(const struct cursor_buf *b, unsigned lane,
			       uint64_t seq)
{
	return lane < b->id.lanes && b->known[lane] &&
	       (int64_t)(seq - b->next[lane]) < 0;
}

#endif
