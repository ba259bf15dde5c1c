/* SPDX-License-Identifier: MIT */
/*
 * `shmlog cat` and `shmlog tail`: dump, follow and filter a buffer, like
 * `logcat -d`, `logcat` and `tail -f`.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "forward/cat_cursor.h"
#include "shmlog.h"

struct view {
	struct fmt fmt;
	shmlog_filter_t *filter; /* NULL: everything */
	long pid; /* 0: any */
	int64_t since_ns; /* INT64_MIN: any */
	struct cat_cursor *cursor; /* --cursor-file/--after-cursor, or NULL */
};

static bool wanted(const struct view *v, const struct shmlog_record *r)
{
	if (v->cursor && cat_cursor_seen(v->cursor, r))
		return false;
	if (v->pid && r->pid != (uint32_t)v->pid)
		return false;
	if (r->time_ns < v->since_ns)
		return false;
	return !v->filter || shmlog_filter_wants(v->filter, r->prio, r->tag);
}

/* --since: "2026-11-22 10:00:00[.123]", "11-22 10:00:00.000" (logcat -T),
 * "10:00[:00]" (today), "-30s"/"-5m"/"-2h"/"-1d" (ago), "@EPOCH". */
static int parse_since(const char *s, int64_t *out)
{
	int64_t now = (int64_t)time(NULL);
	char *end;
	if (s[0] == '-' || s[0] == '@') {
		double v = strtod(s + 1, &end);
		if (end == s + 1 || v < 0)
			return -1;
		double mul = 1;
		if (s[0] == '-') {
			switch (*end) {
			case 's': case '\0': break;
			case 'm': mul = 60; break;
			case 'h': mul = 3600; break;
			case 'd': mul = 86400; break;
			default: return -1;
			}
			if (*end && end[1])
				return -1;
			*out = (int64_t)((double)now * 1e9 - v * mul * 1e9);
			return 0;
		}
		if (*end)
			return -1;
		*out = (int64_t)(v * 1e9);
		return 0;
	}
	static const char *const fmts[] = {"%Y-%m-%d %H:%M:%S",
					   "%Y-%m-%dT%H:%M:%S", "%m-%d %H:%M:%S",
					   "%H:%M:%S", "%H:%M"};
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		struct tm tm;
		time_t t = (time_t)now;
		localtime_r(&t, &tm);
		tm.tm_sec = 0;
		end = strptime(s, fmts[i], &tm);
		if (!end)
			continue;
		double frac = 0;
		if (*end == '.') {
			char *e2;
			frac = strtod(end, &e2);
			end = e2;
		}
		if (*end)
			continue;
		tm.tm_isdst = -1;
		time_t when = mktime(&tm);
		if (when == (time_t)-1)
			return -1;
		*out = (int64_t)when * 1000000000 + (int64_t)(frac * 1e9);
		return 0;
	}
	return -1;
}

/* A private copy of a record, for tail -n. */
struct kept {
	struct shmlog_record r;
	char *tag, *msg;
};

static void keep(struct kept *k, const struct shmlog_record *r)
{
	free(k->tag);
	free(k->msg);
	k->r = *r;
	k->tag = malloc(r->tag_len + 1);
	k->msg = malloc(r->msg_len + 1);
	if (!k->tag || !k->msg) {
		k->r.tag_len = k->r.msg_len = 0;
		return;
	}
	memcpy(k->tag, r->tag, r->tag_len + 1);
	memcpy(k->msg, r->msg, r->msg_len + 1);
	k->r.tag = k->tag;
	k->r.msg = k->msg;
}

/* Print the last @n wanted records of what is there now. */
static void show_last(shmlog_reader_t *rd, const struct view *v, long n)
{
	struct kept *ring = calloc((size_t)n, sizeof(*ring));
	if (!ring)
		return;
	long count = 0;
	struct shmlog_record r;
	struct shmlog_lost lost;
	int ev;
	while ((ev = shmlog_reader_next(rd, &r, &lost)) != SHMLOG_EV_NONE) {
		if (ev == SHMLOG_EV_RECORD && wanted(v, &r))
			keep(&ring[count++ % n], &r);
	}
	long first = count > n ? count - n : 0;
	for (long i = first; i < count; i++)
		fmt_record(stdout, &v->fmt, &ring[i % n].r);
	for (long i = 0; i < n; i++) {
		free(ring[i].tag);
		free(ring[i].msg);
	}
	free(ring);
}

static int run(shmlog_reader_t *rd, const struct view *v, bool follow,
	       volatile sig_atomic_t *stop)
{
	struct shmlog_record r;
	struct shmlog_lost lost;
	while (!*stop) {
		int ev = shmlog_reader_next(rd, &r, &lost);
		if (ev == SHMLOG_EV_RECORD) {
			if (wanted(v, &r))
				fmt_record(stdout, &v->fmt, &r);
		} else if (ev == SHMLOG_EV_LOST) {
			fmt_lost(stdout, &v->fmt, &lost);
		} else {
			if (fflush(stdout) == EOF && errno == EPIPE)
				return 0;
			if (!follow)
				break;
			int err = shmlog_reader_wait(rd, 1000);
			if (err && err != -ETIMEDOUT && err != -EINTR)
				return cli_fail("follow", err);
		}
		if (ferror(stdout))
			return 0; /* reader of our output went away */
	}
	fflush(stdout);
	return 0;
}

int cmd_cat(int argc, char **argv, bool tail, volatile sig_atomic_t *stop)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"follow", no_argument, 0, 'f'},
		{"lines", required_argument, 0, 'n'},
		{"format", required_argument, 0, 'v'},
		{"pid", required_argument, 0, 'P'},
		{"since", required_argument, 0, 'S'},
		{"color", optional_argument, 0, 'C'},
		{"utc", no_argument, 0, 'U'},
		{"cursor-file", required_argument, 0, 'K'},
		{"after-cursor", required_argument, 0, 'A'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *cmd = tail ? "tail" : "cat";
	struct view v = {.fmt = {FMT_THREADTIME, false, false},
			 .since_ns = INT64_MIN};
	bool follow = false;
	long lines = tail ? 10 : -1;
	int color = -1; /* auto */
	const char *cursor_file = NULL;
	bool cursor_save = false;
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "b:fn:v:dh", opts, NULL)) != -1) {
		switch (c) {
		case 'b': cli_buffer = optarg; break;
		case 'f': follow = true; break;
		case 'd': break; /* logcat's "dump": what cat does */
		case 'n':
			lines = strtol(optarg, &end, 10);
			if (*end || end == optarg || lines < 0)
				return cli_usage_error(cmd,
						       "bad -n '%s': give a "
						       "number of records",
						       optarg);
			break;
		case 'v': {
			int k = fmt_parse(optarg);
			if (k < 0)
				return cli_usage_error(
					cmd,
					"unknown format '%s': use threadtime, "
					"brief, long, raw or json",
					optarg);
			v.fmt.kind = (enum fmt_kind)k;
			break;
		}
		case 'P':
			v.pid = strtol(optarg, &end, 10);
			if (*end || end == optarg || v.pid <= 0)
				return cli_usage_error(cmd,
						       "bad --pid '%s': give a "
						       "process id",
						       optarg);
			break;
		case 'S':
			if (parse_since(optarg, &v.since_ns))
				return cli_usage_error(
					cmd,
					"bad --since '%s': use 'YYYY-MM-DD "
					"HH:MM:SS', 'MM-DD HH:MM:SS.mmm', "
					"'HH:MM', '-10m' or '@EPOCH'",
					optarg);
			break;
		case 'C':
			if (!optarg || !strcmp(optarg, "always"))
				color = 1;
			else if (!strcmp(optarg, "never"))
				color = 0;
			else if (!strcmp(optarg, "auto"))
				color = -1;
			else
				return cli_usage_error(
					cmd,
					"bad --color '%s': use auto, always or "
					"never",
					optarg);
			break;
		case 'U': v.fmt.utc = true; break;
		case 'K': cursor_save = true; /* fall through */
		case 'A': cursor_file = optarg; break;
		case 'h':
			printf("usage: shmlog %s [-b NAME] [-f] %s[-v FORMAT] "
			       "[--pid PID] [--since TIME] [--color[=WHEN]] "
			       "[--utc] [--cursor-file FILE | --after-cursor FILE] "
			       "[FILTERSPEC...]\n"
			       "FORMAT: threadtime (default), brief, long, raw, "
			       "json. FILTERSPEC: TAG:P ... *:P as logcat, P "
			       "one of V D I W E F S.\n",
			       cmd, tail ? "[-n N] " : "");
			return 0;
		default: return 2;
		}
	}
	int rc = 0;
	if (optind < argc) {
		char spec[4096] = "";
		size_t used = 0;
		for (int i = optind; i < argc && used < sizeof(spec); i++)
			used += (size_t)snprintf(spec + used, sizeof(spec) - used,
						 "%s ", argv[i]);
		size_t bad = 0;
		int err = shmlog_filter_new(spec, &bad, &v.filter);
		if (err) {
			char tok[128];
			snprintf(tok, sizeof(tok), "%.*s",
				 (int)strcspn(spec + bad, " "), spec + bad);
			return cli_usage_error(cmd,
					       "bad filter '%s': write TAG:P or "
					       "*:P with P one of V D I W E F S",
					       tok);
		}
	}
	if (color < 0) {
		const char *term = getenv("TERM");
		color = isatty(1) && !getenv("NO_COLOR") && term &&
			strcmp(term, "dumb") != 0;
	}
	v.fmt.color = color && v.fmt.kind != FMT_JSON && v.fmt.kind != FMT_RAW;

	shmlog_reader_t *rd;
	int err = shmlog_reader_open(cli_buffer, 0, &rd);
	if (err) {
		shmlog_filter_free(v.filter);
		return cli_fail(cmd, err);
	}
	if (cursor_file &&
	    cat_cursor_open(cursor_file, cursor_save, cli_buffer, &v.cursor)) {
		shmlog_reader_close(rd);
		shmlog_filter_free(v.filter);
		return 1;
	}
	if (lines >= 0) {
		if (lines > 0)
			show_last(rd, &v, lines);
		else
			while (shmlog_reader_next(rd, &(struct shmlog_record){0},
						  NULL) != SHMLOG_EV_NONE)
				;
		if (follow)
			rc = run(rd, &v, true, stop);
		fflush(stdout);
	} else {
		rc = run(rd, &v, follow, stop);
	}
	shmlog_reader_close(rd);
	shmlog_filter_free(v.filter);
	if (cat_cursor_close(v.cursor) && !rc)
		rc = 1;
	return rc;
}
