/* SPDX-License-Identifier: MIT */
/*
 * A reader over an archive directory (archive_read.c), behind the same
 * shmlog_reader_t as a reader of a buffer: reader.c hands every public
 * reader call on such a handle to the functions below.
 */
#ifndef SHMLOG_ARCHIVE_READ_H
#define SHMLOG_ARCHIVE_READ_H

#include "shmlog.h"

struct shmlog__arc;

int shmlog__arc_open(const char *dir, int flags, struct shmlog__arc **out);
void shmlog__arc_close(struct shmlog__arc *a);
int shmlog__arc_next(struct shmlog__arc *a, struct shmlog_record *rec,
		     struct shmlog_lost *lost);
int shmlog__arc_wait(struct shmlog__arc *a, int timeout_ms);
unsigned shmlog__arc_lanes(const struct shmlog__arc *a);
int shmlog__arc_lost_seq(const struct shmlog__arc *a, uint64_t *first,
			 uint64_t *last);
int shmlog__arc_lane_next_seq(const struct shmlog__arc *a, unsigned lane,
			      uint64_t *next);
int shmlog__arc_lane_stats(const struct shmlog__arc *a, unsigned lane,
			   struct shmlog_lane_stats *st);
int shmlog__arc_deferred(const struct shmlog__arc *a, const char **fmt,
			 char *args, size_t cap);
int shmlog__arc_source(const struct shmlog__arc *a, const char *path,
		       struct shmlog_archive_source *src);
int shmlog__arc_next_seq(const struct shmlog__arc *a, const char *path,
			 unsigned lane, uint64_t *next);

/* reader.c: a shmlog_reader_t that hands its calls to @a. */
int shmlog__reader_wrap_archive(struct shmlog__arc *a, int flags,
				shmlog_reader_t **out);

#endif
