/* SPDX-License-Identifier: MIT */
/*
 * `shmlog top`, shared between its two rooms: top.c reads the buffer and
 * counts each record under its group, runs the intervals, the terminal and
 * the options; top_table.c, at each interval, takes the lanes' books and
 * writers, names the writers, sorts the groups and prints the table (text
 * or JSON).
 */
#ifndef SHMLOG_TOOLS_TOP_H
#define SHMLOG_TOOLS_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>
#include <time.h>

#include "shmlog.h"

enum by { BY_PID, BY_TAG, BY_PRIO, BY_LANE };
extern const char *const top_by_names[4];

enum sort {
	SORT_RECORDS, /* the last interval's records, then all */
	SORT_BYTES,
	SORT_TOTAL, /* records since the oldest */
	SORT_TOTAL_BYTES,
	SORT_LOST,
	SORT_KEY, /* tag, pid, priority or lane, ascending */
};
extern const char *const top_sort_names[6];

#define ROWS_MAX (1u << 16) /* distinct groups kept; the rest in "other" */

/* One group's figures. */
struct row {
	uint64_t id; /* pid, priority or lane; a tag's hash */
	char tag[SHMLOG_TAG_MAX + 1]; /* BY_TAG only (may hold NULs) */
	size_t tag_len;
	bool used;
	bool other; /* the overflow row */
	uint64_t recs, bytes; /* the last interval */
	uint64_t recs_all, bytes_all; /* since the oldest record */
	/* filled at each table, BY_PID and BY_LANE: */
	uint64_t written, overwritten, torn; /* the lanes' books */
	char name[17];
	const char *state; /* live, exited, dead, or "-" */
};

struct top {
	enum by by;
	enum sort sort;
	double interval; /* seconds */
	uint64_t iterations; /* 0: until stopped */
	bool once, json, live_tty;
	shmlog_reader_t *rd;
	unsigned lanes;
	struct row *rows; /* open addressing, cap a power of two */
	size_t cap, used;
	struct row other;
	int64_t oldest_ns; /* the first record read; 0: none yet */
	int64_t start_ns; /* when top started */
	/* the names of pids that no lane names, from /proc while they ran */
	struct {
		uint32_t pid;
		char name[17];
	} *names;
	size_t nnames, names_cap;
	/* lanes' writers at the last table */
	struct shmlog_lane_writer *lw;
	int *lw_ok;
	struct shmlog_lane_stats *ls;
	/* the buffer's last claims: writers that took turns in a lane */
	struct shmlog_lane_writer rw[SHMLOG_RECENT_WRITERS];
	bool rw_ok[SHMLOG_RECENT_WRITERS];
	bool tty_raw;
	struct termios saved;
};

static inline int64_t top_now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The row of a record's group, made if new (the overflow row beyond
 * ROWS_MAX groups, or if memory runs out). */
struct row *top_row_of(struct top *t, const struct shmlog_record *r);

/* Print the table of the groups counted so far, @interval seconds after
 * the last one (0: the first). 0, or 1 once it said why it cannot. */
int top_show(struct top *t, double interval);

#endif /* SHMLOG_TOOLS_TOP_H */
