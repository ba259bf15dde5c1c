/* SPDX-License-Identifier: MIT */
/*
 * `shmlog cat --archive DIR -f`: where the archive ends and the live
 * buffer takes over. The archive reader's position in the buffer (per
 * lane, the sequence number after the last record or loss it returned)
 * decides which of the live buffer's records were shown already.
 */
#ifndef SHMLOG_ARCHIVE_SEAM_H
#define SHMLOG_ARCHIVE_SEAM_H

#include <stdbool.h>
#include <stdint.h>

#include "shmlog.h"

struct archive_seam;

/* The seam between archive reader @arc (read to its end) and buffer
 * @name (shmlog_path naming). *@out is NULL when the archive holds no
 * record of that buffer, or of an earlier buffer of that name (then every
 * live record is new). 0 or a negative errno. */
int archive_seam_open(const shmlog_reader_t *arc, const char *name,
		      struct archive_seam **out);

/* Did the archive hold event @ev (a record in @rec, or a loss in @lost
 * just read from @rd) already? Records below the seam are; a loss is if
 * it ends below it. NULL @s: nothing was. */
bool archive_seam_seen(struct archive_seam *s, const shmlog_reader_t *rd,
		       int ev, const struct shmlog_record *rec,
		       const struct shmlog_lost *lost);

/* The archive's position in lane @lane (the sequence number after the
 * last record or loss of it the archive holds) into *@next: true, or
 * false if the archive knows none (NULL @s, or @lane out of range). */
bool archive_seam_next(const struct archive_seam *s, unsigned lane,
		       uint64_t *next);

void archive_seam_free(struct archive_seam *s);

#endif
