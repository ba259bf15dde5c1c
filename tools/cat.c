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
#include "shmlog.h"

struct view {
	struct fmt fmt;
	shmlog_filter_t *filter; /* NULL: everything */
	long pid; /* 0: any */
	int64_t since_ns; /* INT64_MIN: any */
};

static bool wanted(const struct view *v, const struct shmlog_record *r)
{
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
	while (!cli_stop &&
	       (ev = shmlog_reader_next(rd, &r, &lost)) != SHMLOG_EV_NONE) {
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

static int run(shmlog_reader_t *rd, const struct view *v, bool follow)
{
	struct shmlog_record r;
	struct shmlog_lost lost;
	while (!cli_stop) {
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

/* Everything `cat` and `tail` were asked to do. */
struct cat_opts {
	const char *cmd; /* "cat" or "tail", for messages */
	struct view view;
	bool follow;
	long lines; /* -n: the last N records; -1: all */
	int color; /* 1 always, 0 never, -1 auto */
};

static int cat_usage(const struct cat_opts *o)
{
	bool tail = !strcmp(o->cmd, "tail");
	printf("usage: shmlog %s [-b NAME] [-f] %s[-v FORMAT] [--pid PID] "
	       "[--since TIME] [--color[=WHEN]] [--utc] [FILTERSPEC...]\n"
	       "FORMAT: threadtime (default), brief, long, raw, json. "
	       "FILTERSPEC: TAG:P ... *:P as logcat, P one of V D I W E F "
	       "S.\n",
	       o->cmd, tail ? "[-n N] " : "");
	return 0;
}

/* Parse the options into @o. Returns -1 to go on, else the exit status. */
static int cat_parse(int argc, char **argv, struct cat_opts *o)
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
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	const char *cmd = o->cmd;
	struct view *v = &o->view;
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "b:fn:v:dh", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (cli_set_buffer(cmd, optarg))
				return 2;
			break;
		case 'f': o->follow = true; break;
		case 'd': break; /* logcat's "dump": what cat does */
		case 'n':
			o->lines = strtol(optarg, &end, 10);
			if (*end || end == optarg || o->lines < 0)
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
			v->fmt.kind = (enum fmt_kind)k;
			break;
		}
		case 'P':
			v->pid = strtol(optarg, &end, 10);
			if (*end || end == optarg || v->pid <= 0)
				return cli_usage_error(cmd,
						       "bad --pid '%s': give a "
						       "process id",
						       optarg);
			break;
		case 'S':
			if (parse_since(optarg, &v->since_ns))
				return cli_usage_error(
					cmd,
					"bad --since '%s': use 'YYYY-MM-DD "
					"HH:MM:SS', 'MM-DD HH:MM:SS.mmm', "
					"'HH:MM', '-10m' or '@EPOCH'",
					optarg);
			break;
		case 'C':
			if (!optarg || !strcmp(optarg, "always"))
				o->color = 1;
			else if (!strcmp(optarg, "never"))
				o->color = 0;
			else if (!strcmp(optarg, "auto"))
				o->color = -1;
			else
				return cli_usage_error(
					cmd,
					"bad --color '%s': use auto, always or "
					"never",
					optarg);
			break;
		case 'U': v->fmt.utc = true; break;
		case 'h': return cat_usage(o);
		default: return cli_bad_option(cmd);
		}
	}
	if (optind < argc) {
		char *spec = cli_join_args(argc, argv, optind);
		if (!spec)
			return cli_fail(cmd, -ENOMEM);
		size_t bad = 0;
		int err = shmlog_filter_new(spec, &bad, &v->filter);
		int rc = err == -EINVAL ? cli_bad_filter(cmd, spec, bad)
			 : err	       ? cli_fail(cmd, err)
				       : -1;
		free(spec);
		if (rc >= 0)
			return rc;
	}
	if (o->color < 0) {
		const char *term = getenv("TERM");
		o->color = isatty(1) && !getenv("NO_COLOR") && term &&
			   strcmp(term, "dumb") != 0;
	}
	v->fmt.color = o->color && v->fmt.kind != FMT_JSON &&
		       v->fmt.kind != FMT_RAW;
	return -1;
}

/* Dump, show the last lines, follow: what @o asks for. */
static int cat_run(const struct cat_opts *o)
{
	shmlog_reader_t *rd;
	int err = shmlog_reader_open(cli_buffer, 0, &rd);
	if (err)
		return cli_fail(o->cmd, err);
	int rc = 0;
	if (o->lines >= 0) {
		if (o->lines > 0)
			show_last(rd, &o->view, o->lines);
		else
			while (!cli_stop &&
			       shmlog_reader_next(rd, &(struct shmlog_record){0},
						  NULL) != SHMLOG_EV_NONE)
				;
		if (o->follow)
			rc = run(rd, &o->view, true);
		fflush(stdout);
	} else {
		rc = run(rd, &o->view, o->follow);
	}
	shmlog_reader_close(rd);
	return rc;
}

static int cat_or_tail(int argc, char **argv, bool tail)
{
	struct cat_opts o = {
		.cmd = tail ? "tail" : "cat",
		.view = {.fmt = {FMT_THREADTIME, false, false},
			 .since_ns = INT64_MIN},
		.lines = tail ? 10 : -1,
		.color = -1,
	};
	int rc = cat_parse(argc, argv, &o);
	if (rc < 0)
		rc = cat_run(&o);
	shmlog_filter_free(o.view.filter);
	return rc;
}

int cmd_cat(int argc, char **argv)
{
	return cat_or_tail(argc, argv, false);
}

int cmd_tail(int argc, char **argv)
{
	return cat_or_tail(argc, argv, true);
}
