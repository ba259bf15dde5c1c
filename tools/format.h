/* SPDX-License-Identifier: MIT */
/*
 * How the CLI shows records: logcat's formats and modifiers, and JSON
 * lines. Records are formatted into a buffer written with write(2) in
 * blocks of about 64 KiB: no stdio on the way (see format.c for why).
 * Built as a static library of its own (shmlog_format), which the CLI and
 * shmlog-bench both link: the benchmark measures what `shmlog cat` does.
 * Not thread-safe: the caches behind it are the process's.
 */
#ifndef SHMLOG_FORMAT_H
#define SHMLOG_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shmlog.h"

enum fmt_kind { FMT_THREADTIME, FMT_BRIEF, FMT_LONG, FMT_RAW, FMT_JSON };

/* Digits after the second: logcat's default, "usec" and "nsec". */
enum fmt_precision { FMT_MSEC, FMT_USEC, FMT_NSEC };

struct fmt {
	enum fmt_kind kind;
	enum fmt_precision precision;
	bool color; /* priority colours (ANSI) */
	bool utc; /* UTC instead of local time */
	bool year; /* the year in the date */
	bool zone; /* the time zone after the time */
	bool epoch; /* seconds since the Epoch instead of a date */
	bool monotonic; /* seconds since boot instead of a date */
	bool uid; /* the writer's user, when the process still exists */
	bool printable; /* escape every byte outside printable ASCII */
	bool buffer; /* the record's buffer first on each line (text formats) */
	int64_t mono_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC */
};

/* Apply one -v word (a format or a modifier) to @f; -1 if unknown. */
int fmt_apply(struct fmt *f, const char *word);
/* Fill the fields that depend on the moment (the monotonic offset). */
void fmt_prepare(struct fmt *f);

/* An output buffer written to a file descriptor in large blocks. */
struct out {
	int fd;
	bool failed; /* a write failed (EPIPE: the reader went away) */
	size_t len, cap;
	char *buf;
};

/* 0, or -ENOMEM. */
int out_open(struct out *o, int fd);
/* Write what is buffered; returns 0, or -errno once it failed. */
int out_flush(struct out *o);
void out_close(struct out *o);

/* What every text format (all but json, which says "truncated":true) puts
 * after the message of a record flagged SHMLOG_REC_TRUNCATED: its writer
 * cut it to fit (a message over SHMLOG_MSG_MAX bytes, a tag over
 * SHMLOG_TAG_MAX). */
#define FMT_TRUNCATED_MARK " [truncated]"

void fmt_record(struct out *o, const struct fmt *f,
		const struct shmlog_record *r);
/* As fmt_record(), and for a record formatted by the reader (flag
 * SHMLOG_REC_DEFERRED) its format and its values (the JSON array of
 * shmlog_reader_deferred()), which the json format shows; either may be
 * NULL. @args_cut: shmlog_reader_deferred() said SHMLOG_DEFERRED_CUT (the
 * record did not hold every value whole), shown as "args_truncated". */
void fmt_record_deferred(struct out *o, const struct fmt *f,
			 const struct shmlog_record *r, const char *fmt,
			 const char *args, bool args_cut);
/* Where a record came from: json adds "buffer" and "host" for the fields
 * set (NULL: left out); the text formats show the buffer first on each
 * line with the "buffer" modifier. */
struct fmt_origin {
	const char *buffer;
	const char *host;
};

/* As fmt_record_deferred(), from @from (NULL: not said). */
void fmt_record_from(struct out *o, const struct fmt *f,
		     const struct fmt_origin *from,
		     const struct shmlog_record *r, const char *fmt,
		     const char *args, bool args_cut);
/* A loss report: "--- 12 records lost (lane 0: 12 overwritten) ---", or
 * {"lost":12,...} in json. fmt_lost_seq() adds the range of sequence
 * numbers the lost records lie among, @seq[0]..@seq[1] (NULL: unknown),
 * so that reports of the same loss can be told apart and merged. */
void fmt_lost(struct out *o, const struct fmt *f, const struct shmlog_lost *l);
void fmt_lost_seq(struct out *o, const struct fmt *f,
		  const struct shmlog_lost *l, const uint64_t *seq);

#endif
