/* SPDX-License-Identifier: MIT */
/*
 * `shmlog top`: who logs most, like top(1) and `logcat -S`.
 *
 * A reader reads the whole buffer first (the records it still holds),
 * then follows it from there as `cat -f` does, and counts each record
 * under its group: its tag, its writer's pid, its priority or its lane.
 * Two figures per group: the last interval (-d) and everything seen, which
 * is everything since the oldest record the buffer held when top started
 * (the buffer keeps no per-tag counts since its creation: what was
 * overwritten before is gone). The per-lane books the segment does keep
 * since creation come from shmlog_reader_lane_stats(): records written,
 * overwritten before any reader got them, torn; and the writers, named
 * after they have exited: each lane's last (shmlog_reader_lane_writer())
 * and the buffer's last claims (shmlog_reader_recent_writer()).
 *
 * This file reads and counts, and runs the intervals, the terminal and the
 * options; the table each interval prints is top_table.c's.
 *
 * Every loop is bounded by the interval's deadline and checks cli_stop
 * (SIGINT, SIGTERM); on a terminal `q` quits.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kept.h"
#include "shmlog.h"
#include "top.h"

const char *const top_by_names[4] = {"pid", "tag", "prio", "lane"};
const char *const top_sort_names[6] = {"records", "bytes", "total",
				       "total-bytes", "lost", "key"};

#define SLICE_MS 100 /* longest wait between looks at the stop flag and q */

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static uint64_t mix(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	return v ^ (v >> 33);
}

static int rows_grow(struct top *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 256;
	struct row *n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->rows[i].used)
			continue;
		size_t j = mix(t->rows[i].id) & (ncap - 1);
		while (n[j].used)
			j = (j + 1) & (ncap - 1);
		n[j] = t->rows[i];
	}
	free(t->rows);
	t->rows = n;
	t->cap = ncap;
	return 0;
}

/* The row of a record's group, made if new (the overflow row beyond
 * ROWS_MAX groups, or if memory runs out). */
struct row *top_row_of(struct top *t, const struct shmlog_record *r)
{
	uint64_t id;
	size_t tag_len = 0;
	switch (t->by) {
	case BY_PID: id = r->pid; break;
	case BY_PRIO: id = (uint64_t)r->prio; break;
	case BY_LANE: id = r->lane; break;
	default:
		tag_len = r->tag_len < SHMLOG_TAG_MAX ? r->tag_len
						      : SHMLOG_TAG_MAX;
		id = hash_bytes(r->tag, tag_len);
		break;
	}
	if ((t->used + 1) * 2 > t->cap) {
		if (t->used >= ROWS_MAX || rows_grow(t))
			goto other;
	}
	size_t j = mix(id) & (t->cap - 1);
	for (size_t probes = 0; probes < t->cap; probes++) {
		struct row *w = &t->rows[j];
		if (!w->used) {
			if (t->used >= ROWS_MAX)
				goto other;
			w->used = true;
			w->id = id;
			if (t->by == BY_TAG) {
				memcpy(w->tag, r->tag, tag_len);
				w->tag[tag_len] = '\0';
				w->tag_len = tag_len;
			}
			t->used++;
			return w;
		}
		if (w->id == id &&
		    (t->by != BY_TAG || (w->tag_len == tag_len &&
					 !memcmp(w->tag, r->tag, tag_len))))
			return w;
		j = (j + 1) & (t->cap - 1);
	}
other:
	t->other.used = t->other.other = true;
	return &t->other;
}

static void count(struct top *t, const struct shmlog_record *r, bool interval)
{
	struct row *w = top_row_of(t, r);
	uint64_t b = kept_record_bytes(r->tag_len, r->msg_len);
	if (interval) {
		w->recs++;
		w->bytes += b;
	}
	w->recs_all++;
	w->bytes_all += b;
	if (!t->oldest_ns || r->time_ns < t->oldest_ns)
		t->oldest_ns = r->time_ns;
}


/* Read what there is now (up to where the buffer ended when it began,
 * cli_dump_end(), that record counted too: a writer faster than this
 * reader would keep it here, drawing nothing). @interval: count it in
 * the interval too. */
static int drain(struct top *t, bool interval)
{
	struct shmlog_record rec;
	struct shmlog_lost lost;
	unsigned lanes;
	uint64_t *end = cli_dump_end(t->rd, &lanes);
	int ev;
	while (!cli_stop && (ev = shmlog_reader_next(t->rd, &rec, &lost)) > 0) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		count(t, &rec, interval);
		if (cli_past_end(end, lanes, rec.lane, rec.seq))
			break;
	}
	free(end);
	return ev < 0 ? ev : 0;
}


static void zero_interval(struct top *t)
{
	for (size_t i = 0; i < t->cap; i++)
		t->rows[i].recs = t->rows[i].bytes = 0;
	t->other.recs = t->other.bytes = 0;
}

/* ---- the terminal: q quits ---- */

static void tty_raw(struct top *t)
{
	if (!t->live_tty || !isatty(STDIN_FILENO) ||
	    tcgetattr(STDIN_FILENO, &t->saved))
		return;
	struct termios raw = t->saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
		t->tty_raw = true;
}

static void tty_restore(struct top *t)
{
	if (t->tty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	t->tty_raw = false;
}

static bool quit_pressed(struct top *t)
{
	if (!t->tty_raw)
		return false;
	struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
	char c;
	while (poll(&p, 1, 0) == 1 && read(STDIN_FILENO, &c, 1) == 1)
		if (c == 'q' || c == 'Q')
			return true;
	return false;
}

/* Follow the buffer for @secs: count what comes in the interval. false
 * if stopped (a signal, q). */
static int follow_for(struct top *t, double secs, bool *stop)
{
	int64_t end = top_now_ns(CLOCK_MONOTONIC) + (int64_t)(secs * 1e9);
	for (;;) {
		int err = drain(t, true);
		if (err)
			return err;
		if (cli_stop || quit_pressed(t)) {
			*stop = true;
			return 0;
		}
		int64_t left = end - top_now_ns(CLOCK_MONOTONIC);
		if (left <= 0)
			break;
		int ms = left / 1000000 < SLICE_MS ? (int)(left / 1000000) + 1
						   : SLICE_MS;
		err = shmlog_reader_wait(t->rd, ms);
		if (err && err != -ETIMEDOUT && err != -EINTR)
			return err;
	}
	/* what was published up to the deadline: one look at every lane */
	shmlog_reader_wait(t->rd, 0);
	return drain(t, true);
}

/* ---- options ---- */

static int pick(const char *cmd, const char *what, const char *arg,
		const char *const *names, size_t n, int *out)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(arg, names[i])) {
			*out = (int)i;
			return 0;
		}
	char list[128] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s%s", i ? ", " : "", names[i]);
	/* a word begun ("rec") is more likely meant than one near it */
	const char *meant = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(names[i], arg, strlen(arg)))
			meant = meant ? "" : names[i];
	if (!meant || !*meant)
		meant = cli_nearest(arg, strlen(arg), names, n);
	char msg[256];
	snprintf(msg, sizeof(msg), "bad %s '%%s': give one of %s%s%s%s", what,
		 list, meant ? " (did you mean '" : "", meant ? meant : "",
		 meant ? "'?)" : "");
	return cli_usage_error(cmd, msg, arg);
}

static void help(void)
{
	printf("usage: shmlog top [-b NAME] [--once] [-d SECS] [-n N] "
	       "[--by pid|tag|prio|lane]\n"
	       "                  [-s records|bytes|total|total-bytes|lost|key]"
	       " [-v text|json]\n"
	       "Who logs most: records and bytes per writer (pid, with its "
	       "process name), tag,\npriority or lane, over the last interval "
	       "(RECS, BYTES) and since the oldest\nrecord the buffer held "
	       "when top started (ALL_RECS, ALL_BYTES). --by lane adds each\n"
	       "writer slot's books since the buffer's creation (WRITTEN, "
	       "OVERWRITTEN before a\nreader got them, TORN). A writer that "
	       "exited is still named by the lane it\nused last. Refreshes "
	       "like top(1) until interrupted (q on a terminal, Ctrl-C).\n\n"
	       CLI_HELP_BUFFER
	       "      --once          print one table and exit (after -d "
	       "SECS if given, else at once)\n"
	       "  -d, --delay SECS    the interval (default 2; 0.1 to 3600)\n"
	       "  -n, --iterations N  exit after N intervals\n"
	       "      --by WHAT       group by pid (default), tag, prio or "
	       "lane\n"
	       "  -s, --sort KEY      records (the interval's, then all; "
	       "default), bytes, total,\n"
	       "                      total-bytes, lost (overwritten + torn) "
	       "or key\n"
	       "  -v, --format FMT    text (default) or json (one object per "
	       "table, a line each)\n" CLI_HELP_HELP);
}

static int parse_opts(struct top *t, int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"once", no_argument, 0, 'o'},
		{"delay", required_argument, 0, 'd'},
		{"iterations", required_argument, 0, 'n'},
		{"by", required_argument, 0, 'B'},
		{"sort", required_argument, 0, 's'},
		{"format", required_argument, 0, 'v'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	static const char *const formats[] = {"text", "json"};
	bool delay_set = false;
	const char *n_arg = NULL;
	int c, v = 0;
	while ((c = cli_getopt(argc, argv, "b:d:n:s:v:h", opts)) != -1) {
		switch (c) {
		case 'b':
			if (cli_set_buffer("top", optarg))
				return 2;
			break;
		case 'o': t->once = true; break;
		case 'd': {
			char *end;
			errno = 0;
			double d = strtod(optarg, &end);
			if (end == optarg || *end || errno || !isfinite(d) ||
			    d < 0.1 || d > 3600)
				return cli_usage_error(
					"top",
					"bad -d '%s': give the interval in "
					"seconds, from 0.1 to 3600 (e.g. -d "
					"0.5)",
					optarg);
			t->interval = d;
			delay_set = true;
			break;
		}
		case 'n': {
			uint64_t n;
			if (cli_parse_u64(optarg, UINT32_MAX, &n) || !n)
				return cli_usage_error(
					"top",
					"bad -n '%s': give how many intervals "
					"to show, a whole number from 1",
					optarg);
			t->iterations = n;
			n_arg = optarg;
			break;
		}
		case 'B':
			if (pick("top", "--by", optarg, top_by_names, 4, &v))
				return 2;
			t->by = (enum by)v;
			break;
		case 's':
			if (pick("top", "-s", optarg, top_sort_names, 6, &v))
				return 2;
			t->sort = (enum sort)v;
			break;
		case 'v':
			if (pick("top", "-v", optarg, formats, 2, &v))
				return 2;
			t->json = v == 1;
			break;
		case 'h': help(); return 0;
		default: return cli_bad_option("top");
		}
	}
	if (optind < argc)
		return cli_usage_error("top", "unexpected argument '%s'",
				       argv[optind]);
	if (t->once && t->iterations > 1)
		return cli_usage_error("top",
				       "--once prints one table: leave out "
				       "-n %s, or --once",
				       n_arg);
	if (t->sort == SORT_LOST && t->by != BY_LANE)
		return cli_usage_error("top",
				       "-s lost sorts the writers' lanes: the "
				       "buffer counts losses per lane, not per "
				       "%s; add --by lane",
				       top_by_names[t->by]);
	if (t->once) {
		t->iterations = 1;
		if (!delay_set)
			t->interval = 0;
	}
	return -1;
}

static void top_free(struct top *t)
{
	tty_restore(t);
	if (t->rd)
		shmlog_reader_close(t->rd);
	free(t->rows);
	free(t->names);
	free(t->lw);
	free(t->lw_ok);
	free(t->ls);
}

int cmd_top(int argc, char **argv)
{
	struct top t;
	memset(&t, 0, sizeof(t));
	t.interval = 2;
	int r = parse_opts(&t, argc, argv);
	if (r >= 0)
		return r;
	t.live_tty = !t.once && !t.json && isatty(STDOUT_FILENO);
	int err = shmlog_reader_open(cli_buffer, 0, &t.rd);
	if (err)
		return cli_fail("top", err);
	t.lanes = shmlog_reader_lanes(t.rd);
	t.lw = calloc(t.lanes, sizeof(*t.lw));
	t.lw_ok = calloc(t.lanes, sizeof(*t.lw_ok));
	t.ls = calloc(t.lanes, sizeof(*t.ls));
	if (!t.lw || !t.lw_ok || !t.ls || rows_grow(&t)) {
		top_free(&t);
		fprintf(stderr, "shmlog top: out of memory\n");
		return 1;
	}
	t.start_ns = top_now_ns(CLOCK_REALTIME);
	/* what the buffer holds: ALL only */
	err = drain(&t, false);
	tty_raw(&t);
	int rc = 0;
	bool stop = false;
	if (!err && t.live_tty)
		rc = top_show(&t, 0); /* a first screen at once, as top(1) */
	for (uint64_t i = 0; !err && !rc && !stop && !cli_stop &&
			     (!t.iterations || i < t.iterations);
	     i++) {
		zero_interval(&t);
		int64_t t0 = top_now_ns(CLOCK_MONOTONIC);
		if (t.interval > 0)
			err = follow_for(&t, t.interval, &stop);
		if (err || stop)
			break;
		rc = top_show(&t, (double)(top_now_ns(CLOCK_MONOTONIC) - t0) /
					  1e9);
	}
	top_free(&t);
	/* a signal that stops top may interrupt a syscall on its way */
	if (err && !(err == -EINTR && cli_stop))
		return cli_fail("top", err);
	return rc;
}
