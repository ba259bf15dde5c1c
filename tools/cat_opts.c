/* SPDX-License-Identifier: MIT */
/*
 * `shmlog cat` and `shmlog tail`: their options, parsed into struct
 * cat_opts (cat.h). Every error says what was wrong and what to do, and
 * sets nothing that cat.c would act on.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cat.h"
#include "cli.h"
#include "write.h"

/* ---- options ---- */

static bool ends_with_unit(const char *end)
{
	return !*end || (!end[1] && strchr("smhd", *end));
}

/* Seconds as nanoseconds, if they fit in an int64_t with room to spare. */
static int secs_to_ns(double v, int64_t *out)
{
	if (!isfinite(v) || v < -9.0e9 || v > 9.0e9)
		return -1;
	*out = (int64_t)(v * 1e9);
	return 0;
}

/* "SECONDS[.FRACTION]" since the Epoch, exactly: a double would lose the
 * nanoseconds of today's times (2^53 ns is 104 days). */
static int parse_epoch(const char *s, int64_t *out)
{
	size_t whole = strspn(s, "0123456789");
	const char *frac = s + whole;
	size_t digits = *frac == '.' ? strspn(frac + 1, "0123456789") : 0;
	if (!whole || whole > 10 || (*frac && (*frac != '.' || frac[1 + digits])))
		return -1;
	int64_t sec = 0, ns = 0;
	for (size_t i = 0; i < whole; i++)
		sec = sec * 10 + (s[i] - '0');
	for (size_t i = 0; i < 9; i++)
		ns = ns * 10 + (i < digits ? frac[1 + i] - '0' : 0);
	if (sec > 9000000000)
		return -1;
	*out = sec * 1000000000 + ns;
	return 0;
}

/* A point in time: "2026-11-22 10:00:00[.123]", "11-22 10:00:00.000"
 * (logcat -T), "10:00[:00]" (today), "-30s"/"-5m"/"-2h"/"-1d" (ago),
 * "@EPOCH". */
static int parse_time(const char *s, int64_t *out)
{
	time_t now = time(NULL);
	char *end;
	if (s[0] == '-' || s[0] == '@') {
		double v = strtod(s + 1, &end);
		if (end == s + 1 || !isfinite(v) || v < 0 ||
		    (!(s[1] >= '0' && s[1] <= '9') && s[1] != '.'))
			return -1;
		if (s[0] == '@')
			return *end ? -1 : parse_epoch(s + 1, out);
		if (!ends_with_unit(end))
			return -1;
		double mul = *end == 'm' ? 60 : *end == 'h' ? 3600
				 : *end == 'd'		? 86400
							: 1;
		return secs_to_ns((double)now - v * mul, out);
	}
	static const char *const layouts[] = {
		"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%m-%d %H:%M:%S",
		"%H:%M:%S", "%H:%M"};
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		struct tm tm;
		localtime_r(&now, &tm);
		tm.tm_sec = 0;
		end = strptime(s, layouts[i], &tm);
		if (!end)
			continue;
		double frac = 0;
		if (*end == '.') {
			size_t digits = strspn(end + 1, "0123456789");
			if (!digits)
				continue;
			frac = strtod(end, NULL);
			end += 1 + digits;
		}
		if (*end)
			continue;
		tm.tm_isdst = -1;
		time_t when = mktime(&tm);
		if (when == (time_t)-1)
			return -1;
		return secs_to_ns((double)when + frac, out);
	}
	return -1;
}

/* -p: "W" (W and above), "W..E", "..E" (up to E); each priority as
 * `write -p` takes it (cli_parse_priority(): "err", "4" for warning). */
static int parse_prio_range(const char *s, int *lo, int *hi)
{
	const char *dots = strstr(s, "..");
	char first[32];
	int a = SHMLOG_VERBOSE, b = SHMLOG_FATAL;
	size_t n = dots ? (size_t)(dots - s) : strlen(s);
	if (n >= sizeof(first))
		return -1;
	memcpy(first, s, n);
	first[n] = '\0';
	if (n && (a = cli_parse_priority(first)) < 0)
		return -1;
	if (dots && dots[2] && (b = cli_parse_priority(dots + 2)) < 0)
		return -1;
	if ((!n && !dots) || a > b || a > SHMLOG_FATAL)
		return -1;
	*lo = a;
	*hi = b;
	return 0;
}

/* ---- parsing ---- */

static int cat_usage(const struct cat_opts *o)
{
	printf("usage: shmlog %s [options] [FILTERSPEC...]\n", o->cmd);
	if (!strcmp(o->cmd, "tail"))
		printf("Show the last records of a buffer (10 by default), "
		       "then with -f follow it.\n");
	else
		printf("Dump a buffer oldest first, like `logcat -d`; with -f "
		       "then follow it.\n");
	printf(
		"\n"
		"  -b, --buffer NAME    the buffer (default $SHMLOG_BUFFER, "
		"else 'main'); give\n"
		"                       several -b to merge buffers in time "
		"order\n"
		"  -f, --follow         keep showing records as they are "
		"written; a removed\n"
		"                       buffer is followed again once "
		"recreated\n"
		"  -n, --lines N        only the last N records (tail: 10); "
		"numbers past what\n"
		"                       the buffers hold show everything\n"
		"  -m, --max-count N    stop after showing N records\n"
		"  -r, --reverse        newest first (not with -f)\n"
		"  -p, --priority P     only priority P and above; P..Q a "
		"range, ..Q up to Q\n"
		"                       (V D I W E F, or a PRIO as `shmlog "
		"write -p` takes it:\n"
		"                       logger(1)'s names, syslog's numbers "
		"0-7)\n"
		"  -e, --grep REGEX     only messages matching the POSIX "
		"extended REGEX\n"
		"                       (several -e: any of them)\n"
		"      --pid PID        only records of process PID\n"
		"      --since TIME     only records at or after TIME\n"
		"      --until TIME     only records at or before TIME\n"
		"  -v, --format WORD    a format: threadtime (default), brief, "
		"long, raw, json;\n"
		"                       or a modifier: usec, nsec, year, zone, "
		"epoch, monotonic,\n"
		"                       uid, color, printable, utc, buffer "
		"(several -v, or\n"
		"                       WORD,WORD; buffer: each record's "
		"buffer first)\n"
		"      --color[=WHEN]   colours by priority: auto (default, "
		"on a terminal),\n"
		"                       always, never; $NO_COLOR turns auto "
		"off\n"
		"      --utc            times in UTC\n"
		"      --no-pager       never page; a dump to a terminal goes "
		"through $PAGER\n"
		"                       (default `less -FRX`; none when $TERM "
		"is dumb)\n"
		"      --after-cursor FILE  only records after the cursor "
		"FILE (as saved by\n"
		"                       `shmlog forward` or --cursor-file)\n"
		"      --cursor-file FILE  the same, then save in FILE where "
		"this reading ended\n"
		"      --archive DIR    read the archive DIR (`shmlog "
		"archive -o DIR`); with -f\n"
		"                       then follow the buffers (-b) from "
		"where it ends\n"
		"logcat's flags:\n"
		"  -d                   dump (what cat does anyway)\n"
		"  -s                   silence every tag but those of "
		"FILTERSPEC\n"
		"                       (-s net: net alone; -s net:W: its W "
		"and above)\n"
		"  -t N|TIME            the last N records, or those since "
		"TIME, and exit\n"
		"  -T N|TIME            the same, then follow (as -f)\n"
		"  -c                   clear the buffer (as `shmlog clear`) "
		"and exit\n"
		"  -h, --help           this help\n"
		"\n"
		"TIME: 'YYYY-MM-DD HH:MM:SS[.frac]', 'MM-DD HH:MM:SS.mmm', "
		"'HH:MM[:SS]' (today),\n"
		"'-30s', '-5m', '-2h', '-1d' (ago) or '@EPOCH' (seconds since "
		"1970).\n"
		"FILTERSPEC: TAG:P ... *:P as logcat, P one of V D I W E F S "
		"(S: nothing).\n"
		"json: one object per line; time as an RFC 3339 string with "
		"nanoseconds and\nas time_ns; \"buffer\" names the record's buffer;\nbytes that are not UTF-8 appear "
		"as U+FFFD, and then the exact\nbytes as msg_base64 / "
		"tag_base64. Control characters are always escaped.\nA "
		"printf-style record whose values were damaged shows those "
		"before the\ndamage in args, and args_truncated: true.\n");
	return 0;
}

static int parse_lines(struct cat_opts *o, const char *arg)
{
	int err = cli_parse_u64(arg, UINT64_MAX, &o->lines);
	if (err == -ERANGE)
		o->lines = UINT64_MAX; /* more than any buffer holds */
	else if (err)
		return cli_usage_error(o->cmd,
				       "bad -n '%s': give a number of records",
				       arg);
	o->lines_set = true;
	return -1;
}

static int parse_format(struct cat_opts *o, const char *arg)
{
	char words[256];
	snprintf(words, sizeof(words), "%s", arg);
	char *save = NULL;
	for (char *w = strtok_r(words, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		if (fmt_apply(&o->view.fmt, w) < 0)
			return cli_usage_error(
				o->cmd,
				"unknown format or modifier '%s': use "
				"threadtime, brief, long, raw or json, and "
				"usec, nsec, year, zone, epoch, monotonic, uid, "
				"color, printable, utc or buffer",
				w);
		if (!strcmp(w, "color") || !strcmp(w, "colour"))
			o->color = 1;
	}
	return -1;
}

static int parse_grep(struct cat_opts *o, const char *arg)
{
	struct view *v = &o->view;
	if (v->greps == GREPS_MAX)
		return cli_usage_error(o->cmd, "too many -e%s: 16 at most",
				       "");
	int err = regcomp(&v->grep[v->greps], arg, REG_EXTENDED | REG_NOSUB);
	if (err) {
		char why[128], msg[256];
		regerror(err, &v->grep[v->greps], why, sizeof(why));
		snprintf(msg, sizeof(msg), "bad -e '%%s': %s", why);
		return cli_usage_error(o->cmd, msg, arg);
	}
	v->greps++;
	return -1;
}

/* "bad OPT 'ARG': HINT", said as every usage error is: its exit status. */
static int bad_option(const struct cat_opts *o, const char *opt,
		      const char *arg, const char *hint)
{
	char msg[256];
	snprintf(msg, sizeof(msg), "bad %s '%%s': %s", opt, hint);
	return cli_usage_error(o->cmd, msg, arg);
}

static int parse_time_opt(struct cat_opts *o, const char *opt,
			  const char *arg, int64_t *out)
{
	if (!parse_time(arg, out))
		return -1;
	return bad_option(o, opt, arg,
			  "use 'YYYY-MM-DD HH:MM:SS', 'MM-DD HH:MM:SS.mmm', "
			  "'HH:MM', '-10m' or '@EPOCH' (seconds, before the "
			  "year 2255)");
}

/* logcat's -t and -T: the last N records, or those since TIME. */
static int parse_recent(struct cat_opts *o, const char *opt, const char *arg)
{
	uint64_t n;
	int err = cli_parse_u64(arg, UINT64_MAX, &n);
	if (err != -EINVAL) {
		o->lines = err == -ERANGE ? UINT64_MAX : n;
		o->lines_set = true;
		return -1;
	}
	if (!parse_time(arg, &o->view.since_ns))
		return -1;
	return bad_option(o, opt, arg,
			  "give a number of records, or a time: 'MM-DD "
			  "HH:MM:SS.mmm' (as logcat), 'YYYY-MM-DD HH:MM:SS', "
			  "'HH:MM', '-10m' or '@EPOCH'");
}

enum { OPT_UNTIL = 256 }; /* long options with no letter */

static int parse_option(struct cat_opts *o, int c, const char *arg)
{
	struct view *v = &o->view;
	uint64_t n;
	switch (c) {
	case 'b':
		if (cli_set_buffer(o->cmd, arg))
			return 2;
		if (o->nsrc == SOURCES_MAX)
			return cli_usage_error(o->cmd,
					       "too many -b%s: 64 at most", "");
		o->src[o->nsrc++].name = arg;
		return -1;
	case 'f': o->follow = true; return -1;
	case 'd': return -1; /* logcat's "dump": what cat does */
	case 's': o->silent_others = true; return -1;
	case 'c': o->clear = true; return -1;
	case 't': o->dump_only = true; return parse_recent(o, "-t", arg);
	case 'T': o->follow = true; return parse_recent(o, "-T", arg);
	case 'r': o->reverse = true; return -1;
	case 'N': o->no_pager = true; return -1;
	case 'U': v->fmt.utc = true; return -1;
	case 'n': return parse_lines(o, arg);
	case 'v': return parse_format(o, arg);
	case 'e': return parse_grep(o, arg);
	case 'S': return parse_time_opt(o, "--since", arg, &v->since_ns);
	case OPT_UNTIL: return parse_time_opt(o, "--until", arg, &v->until_ns);
	case 'm':
		switch (cli_parse_u64(arg, UINT64_MAX, &n)) {
		case -ERANGE: n = UINT64_MAX; break;
		case 0: break;
		default: n = 0;
		}
		if (!n)
			return cli_usage_error(o->cmd,
					       "bad -m '%s': give a number of "
					       "records, 1 or more",
					       arg);
		o->max_count = n;
		return -1;
	case 'p':
		if (parse_prio_range(arg, &v->prio_min, &v->prio_max))
			return cli_usage_error(o->cmd,
					       "bad -p '%s': give P (P and "
					       "above) or a range P..Q from the "
					       "less to the more severe (W..E, "
					       "warning..err, 4..3); for P, "
					       CLI_PRIO_HINT,
					       arg);
		return -1;
	case 'P':
		if (cli_parse_u64(arg, UINT32_MAX, &n) || !n)
			return cli_usage_error(o->cmd,
					       "bad --pid '%s': give a process "
					       "id",
					       arg);
		v->pid = (long)n;
		return -1;
	case 'C':
		if (!arg || !strcmp(arg, "always"))
			o->color = 1;
		else if (!strcmp(arg, "never"))
			o->color = 0;
		else if (!strcmp(arg, "auto"))
			o->color = -1;
		else
			return cli_usage_error(o->cmd,
					       "bad --color '%s': use auto, "
					       "always or never",
					       arg);
		return -1;
	case 'K': o->cursor_save = true; /* fall through */
	case 'A': o->cursor_file = arg; return -1;
	case 'R': o->archive = arg; return -1;
	case 'h': return cat_usage(o);
	default: return cli_bad_option(o->cmd);
	}
}

static int parse_filterspec(struct cat_opts *o, int argc, char **argv)
{
	char *spec = cli_join_args(argc, argv, optind);
	if (!spec)
		return cli_fail(o->cmd, -ENOMEM);
	if (o->silent_others) { /* -s: "*:S" first, the tags named win */
		char *s = malloc(strlen(spec) + 5);
		if (!s) {
			free(spec);
			return cli_fail(o->cmd, -ENOMEM);
		}
		sprintf(s, "*:S %s", spec);
		free(spec);
		spec = s;
	}
	size_t bad = 0;
	int err = shmlog_filter_new(spec, &bad, &o->view.filter);
	int rc = err == -EINVAL ? cli_bad_filter(o->cmd, spec, bad)
		 : err		? cli_fail(o->cmd, err)
				: -1;
	free(spec);
	return rc;
}

/* Parse the options into @o. Returns -1 to go on, else the exit status. */
int cat_parse(int argc, char **argv, struct cat_opts *o)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"follow", no_argument, 0, 'f'},
		{"lines", required_argument, 0, 'n'},
		{"max-count", required_argument, 0, 'm'},
		{"reverse", no_argument, 0, 'r'},
		{"priority", required_argument, 0, 'p'},
		{"grep", required_argument, 0, 'e'},
		{"regex", required_argument, 0, 'e'},
		{"format", required_argument, 0, 'v'},
		{"pid", required_argument, 0, 'P'},
		{"since", required_argument, 0, 'S'},
		{"until", required_argument, 0, OPT_UNTIL},
		{"color", optional_argument, 0, 'C'},
		{"utc", no_argument, 0, 'U'},
		{"no-pager", no_argument, 0, 'N'},
		{"cursor-file", required_argument, 0, 'K'},
		{"after-cursor", required_argument, 0, 'A'},
		{"archive", required_argument, 0, 'R'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c, rc;
	while ((c = cli_getopt(argc, argv, "b:fn:m:rp:e:v:dst:T:ch", opts)) !=
	       -1)
		if ((rc = parse_option(o, c, optarg)) >= 0)
			return rc;
	if ((optind < argc || o->silent_others) &&
	    (rc = parse_filterspec(o, argc, argv)) >= 0)
		return rc;
	if (o->dump_only && o->follow)
		return cli_usage_error(o->cmd,
				       "-t%s shows the last records and exits, "
				       "as logcat -t: to follow after them, "
				       "use -T N (or -n N -f)",
				       "");
	if (o->reverse && o->follow)
		return cli_usage_error(o->cmd,
				       "-r%s shows a dump newest first: it "
				       "cannot follow (-f)",
				       "");
	if (o->color < 0) {
		const char *term = getenv("TERM");
		o->color = isatty(1) && !getenv("NO_COLOR") && term &&
			   strcmp(term, "dumb") != 0;
	}
	struct fmt *f = &o->view.fmt;
	f->color = o->color && f->kind != FMT_JSON && f->kind != FMT_RAW;
	return -1;
}

void cat_free(struct cat_opts *o)
{
	shmlog_filter_free(o->view.filter);
	for (int i = 0; i < o->view.greps; i++)
		regfree(&o->view.grep[i]);
}
