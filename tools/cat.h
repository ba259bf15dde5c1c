/* SPDX-License-Identifier: MIT */
/*
 * `shmlog cat` and `shmlog tail`, shared by their two files: what they
 * were asked to do (cat_opts.c parses it) and the buffers they read
 * (cat.c runs it).
 */
#ifndef SHMLOG_CAT_H
#define SHMLOG_CAT_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "archive_seam.h"
#include "cat_cursor.h"
#include "format.h"
#include "shmlog.h"

#define SOURCES_MAX 64
#define GREPS_MAX 16

/* Which records to show. */
struct view {
	struct fmt fmt;
	shmlog_filter_t *filter; /* NULL: everything */
	long pid; /* 0: any */
	int prio_min, prio_max;
	int64_t since_ns; /* INT64_MIN: any */
	int64_t until_ns; /* INT64_MAX: any */
	regex_t grep[GREPS_MAX]; /* a record matches if any matches */
	int greps;
	struct cat_cursor *cursor; /* --cursor-file/--after-cursor, or NULL */
};

/* One buffer being read. */
struct source {
	const char *name; /* as given to -b; NULL: the default */
	char path[512];
	shmlog_reader_t *rd;
	dev_t dev; /* the file the reader opened, to see it replaced */
	ino_t ino;
	bool removed; /* said so; waiting for it to come back */
	bool broken; /* the reader failed: read no more */
	int ev; /* pending event of rd (SHMLOG_EV_NONE: none) */
	struct shmlog_record rec;
	struct shmlog_lost lost;
	struct archive_seam *seam; /* --archive -f: what the archive showed */
	bool archive; /* the archive (--archive DIR) */
	/* Where a dump (and -n's look back) ends: each lane's next sequence
	 * number when it began (sources_snap()); NULL: no end. */
	uint64_t *end;
	unsigned lanes; /* of end */
};

/* Everything `cat` and `tail` were asked to do. */
struct cat_opts {
	const char *cmd; /* "cat" or "tail", for messages */
	struct view view;
	struct source src[SOURCES_MAX];
	int nsrc;
	bool follow;
	bool reverse;
	bool no_pager;
	uint64_t lines; /* -n: the last N records; UINT64_MAX: all */
	bool lines_set;
	uint64_t max_count; /* -m: stop after N records; 0: no limit */
	int color; /* 1 always, 0 never, -1 auto */
	const char *cursor_file; /* --cursor-file or --after-cursor */
	bool cursor_save; /* --cursor-file: save where the reading ended */
	const char *archive; /* --archive DIR: read it before the buffers */
	/* logcat's habits: -s (all tags silent but those named), -t (the
	 * last N or since TIME, then exit), -c (clear and exit) */
	bool silent_others;
	bool dump_only;
	bool clear;
};

/* Parse the command line into @o (set to its defaults by the caller):
 * -1 to run, else the exit status (after --help, or an error said). */
int cat_parse(int argc, char **argv, struct cat_opts *o);
/* Free what cat_parse() made. */
void cat_free(struct cat_opts *o);

#endif
