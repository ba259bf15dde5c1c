/* SPDX-License-Identifier: MIT */
/*
 * shmlog: the command-line tool. Creates, inspects, writes, dumps and
 * follows buffers, and sets their filters. Every error says what was wrong
 * and what to do about it.
 */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "shmlog.h"

const char *cli_buffer; /* -b NAME, or NULL for the default */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

const char *cli_buffer_name(void)
{
	if (cli_buffer)
		return cli_buffer;
	const char *env = getenv("SHMLOG_BUFFER");
	return env && env[0] ? env : "main";
}

int cli_fail(const char *what, int err)
{
	const char *b = cli_buffer_name();
	char path[512];
	if (shmlog_path(cli_buffer, path, sizeof(path)) < 0)
		snprintf(path, sizeof(path), "%s", b);
	switch (err) {
	case -ENOENT:
		fprintf(stderr,
			"shmlog: %s: buffer '%s' does not exist: create it with "
			"`shmlog create -b %s`\n",
			what, b, b);
		break;
	case -EEXIST:
		fprintf(stderr,
			"shmlog: %s: buffer '%s' already exists: use it, or "
			"remove it first with `shmlog rm -b %s`\n",
			what, b, b);
		break;
	case -EACCES:
		fprintf(stderr,
			"shmlog: %s: permission denied on %s: run as its owner, "
			"or have it shared: for readers `shmlog create -b %s "
			"--group G --mode 0640`, for several writing users a "
			"buffer of root's (`sudo shmlog create -b %s --group G "
			"--mode 0660`)\n",
			what, path, b, b);
		break;
	case -EINVAL:
		fprintf(stderr,
			"shmlog: %s: invalid buffer name or option '%s': names "
			"use letters, digits, '.', '_' and '-', or are absolute "
			"paths\n",
			what, b);
		break;
	case -EPERM:
		fprintf(stderr,
			"shmlog: %s: refusing %s: %s. If it is not yours, remove "
			"it (`shmlog rm -b %s`) and create it again; a buffer "
			"that several users write must belong to root (`sudo "
			"shmlog create -b %s --group G --mode 0660`)\n",
			what, path, shmlog_strerror(err), b, b);
		break;
	case -EBADMSG:
	case -ENODATA:
	case -EPROTONOSUPPORT:
		fprintf(stderr,
			"shmlog: %s: %s: %s. Remove it with `shmlog rm -b %s` "
			"and create it again\n",
			what, path, shmlog_strerror(err), b);
		break;
	case -ENOSPC:
		fprintf(stderr,
			"shmlog: %s: no space left for %s: free space in "
			"/dev/shm (`shmlog ls`, `df /dev/shm`) or choose a "
			"smaller --size\n",
			what, path);
		break;
	default:
		fprintf(stderr, "shmlog: %s: %s: %s\n", what, path,
			shmlog_strerror(err));
	}
	return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "shmlog %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry `shmlog %s --help`.\n", cmd);
	return 2;
}

/* ---- sizes, modes, groups ---- */

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"size", required_argument, 0, 's'},
		{"mode", required_argument, 0, 'm'},
		{"group", required_argument, 0, 'g'},
		{"lanes", required_argument, 0, 'l'},
		{"clock", required_argument, 0, 'c'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	int c;
	while ((c = getopt_long(argc, argv, "b:s:m:g:l:c:h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'b': cli_buffer = optarg; break;
		case 's':
			if (parse_size(optarg, &o.size) ||
			    o.size < SHMLOG_SIZE_MIN || o.size > SHMLOG_SIZE_MAX)
				return cli_usage_error(
					"create",
					"bad --size '%s': give 64K to 16G, with "
					"an optional K, M or G suffix",
					optarg);
			break;
		case 'm':
			o.mode = (mode_t)strtoul(optarg, &end, 8);
			if (*end || end == optarg || o.mode > 0777)
				return cli_usage_error(
					"create",
					"bad --mode '%s': give octal permissions "
					"such as 0600 or 0640",
					optarg);
			if (o.mode & 0002)
				return cli_usage_error(
					"create",
					"--mode %s makes the buffer "
					"world-writable, so anyone could forge "
					"records: use a group (--group G "
					"--mode 0660) instead",
					optarg);
			break;
		case 'g': {
			struct group *gr = getgrnam(optarg);
			if (gr) {
				o.gid = gr->gr_gid;
			} else {
				unsigned long g = strtoul(optarg, &end, 10);
				if (*end || end == optarg)
					return cli_usage_error(
						"create",
						"unknown --group '%s': give a "
						"group name or number",
						optarg);
				o.gid = (gid_t)g;
			}
			break;
		}
		case 'l':
			o.lanes = (unsigned)strtoul(optarg, &end, 10);
			if (*end || !o.lanes || o.lanes > SHMLOG_LANES_MAX)
				return cli_usage_error(
					"create",
					"bad --lanes '%s': give 1 to 1024", optarg);
			break;
		case 'c':
			if (!strcmp(optarg, "tsc"))
				o.clock = SHMLOG_CLOCK_TSC;
			else if (!strcmp(optarg, "realtime"))
				o.clock = SHMLOG_CLOCK_REALTIME;
			else if (!strcmp(optarg, "coarse"))
				o.clock = SHMLOG_CLOCK_COARSE;
			else
				return cli_usage_error(
					"create",
					"bad --clock '%s': give tsc, realtime "
					"or coarse",
					optarg);
			break;
		case 'h':
			printf("usage: shmlog create [-b NAME] [--size N[K|M|G]] "
			       "[--mode 0600] [--group G] [--lanes N] "
			       "[--clock tsc|realtime|coarse]\n");
			return 0;
		default: return 2;
		}
	}
	if (optind < argc)
		return cli_usage_error("create", "unexpected argument '%s'",
				       argv[optind]);
	int err = shmlog_create(cli_buffer, &o);
	if (err == -EINVAL && o.size / (o.lanes ? o.lanes : 1) < 1024)
		return cli_usage_error("create",
				       "too many lanes for this size (%s): each "
				       "lane needs at least 1 KiB",
				       "--lanes");
	if (err)
		return cli_fail("create", err);
	return 0;
}

static int simple_cmd(int argc, char **argv, const char *name,
		      const char *help)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "b:h", opts, NULL)) != -1) {
		if (c == 'b') {
			cli_buffer = optarg;
		} else if (c == 'h') {
			printf("usage: shmlog %s [-b NAME]\n%s\n", name, help);
			return 0;
		} else {
			return 2;
		}
	}
	if (optind < argc)
		return cli_usage_error(name, "unexpected argument '%s'",
				       argv[optind]);
	return -1;
}

static int cmd_rm(int argc, char **argv)
{
	int r = simple_cmd(argc, argv, "rm", "Remove a buffer's file.");
	if (r >= 0)
		return r;
	int err = shmlog_remove(cli_buffer);
	return err ? cli_fail("rm", err) : 0;
}

static int cmd_clear(int argc, char **argv)
{
	int r = simple_cmd(argc, argv, "clear",
			   "Hide every record written so far from readers.");
	if (r >= 0)
		return r;
	int err = shmlog_clear(cli_buffer);
	return err ? cli_fail("clear", err) : 0;
}

static const char *clock_name(int c)
{
	switch (c) {
	case SHMLOG_CLOCK_TSC: return "tsc";
	case SHMLOG_CLOCK_REALTIME: return "realtime";
	case SHMLOG_CLOCK_COARSE: return "coarse";
	default: return "?";
	}
}

static void human_size(uint64_t v, char *buf, size_t n)
{
	if (v >= (1ull << 30) && v % (1ull << 30) == 0)
		snprintf(buf, n, "%lluG", (unsigned long long)(v >> 30));
	else if (v >= (1ull << 20))
		snprintf(buf, n, "%.1fM", (double)v / (1 << 20));
	else
		snprintf(buf, n, "%.1fK", (double)v / 1024);
}

static int cmd_ls(int argc, char **argv)
{
	int r = simple_cmd(argc, argv, "ls", "List the buffers in /dev/shm.");
	if (r >= 0)
		return r;
	glob_t g;
	if (glob("/dev/shm/shmlog.*", 0, NULL, &g) != 0) {
		printf("no buffers in /dev/shm (create one with `shmlog "
		       "create`)\n");
		return 0;
	}
	printf("%-20s %8s %5s %7s %6s %12s %8s %8s\n", "NAME", "SIZE", "LANES",
	       "WRITERS", "USED", "WRITTEN", "TORN", "DROPPED");
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *path = g.gl_pathv[i];
		const char *name = path + strlen("/dev/shm/shmlog.");
		if (strstr(name, ".tmp-"))
			continue;
		struct shmlog_info in;
		int err = shmlog_stat(name, &in);
		if (err) {
			printf("%-20s (%s)\n", name, shmlog_strerror(err));
			continue;
		}
		char sz[32];
		human_size(in.capacity, sz, sizeof(sz));
		printf("%-20s %8s %5u %7u %5.1f%% %12llu %8llu %8llu\n", name,
		       sz, in.lanes, in.writers,
		       in.capacity ? 100.0 * (double)in.used / (double)in.capacity
				   : 0.0,
		       (unsigned long long)in.written,
		       (unsigned long long)in.torn,
		       (unsigned long long)in.dropped);
	}
	globfree(&g);
	return 0;
}

static int cmd_info(int argc, char **argv)
{
	int r = simple_cmd(argc, argv, "info", "Describe one buffer in detail.");
	if (r >= 0)
		return r;
	struct shmlog_info in;
	int err = shmlog_stat(cli_buffer, &in);
	if (err)
		return cli_fail("info", err);
	char path[512], sz[32], spec[2100];
	shmlog_path(cli_buffer, path, sizeof(path));
	human_size(in.capacity, sz, sizeof(sz));
	time_t ct = (time_t)(in.created_ns / 1000000000);
	char when[64];
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", localtime(&ct));
	struct passwd *pw = getpwuid(in.uid);
	struct group *gr = getgrgid(in.gid);
	printf("buffer:    %s\n", cli_buffer_name());
	printf("file:      %s (%llu bytes)\n", path,
	       (unsigned long long)in.file_size);
	printf("format:    version %u.%u\n", in.version_major, in.version_minor);
	printf("capacity:  %s in %u lanes of %llu bytes\n", sz, in.lanes,
	       (unsigned long long)(in.capacity / in.lanes));
	printf("clock:     %s\n", clock_name(in.clock));
	printf("created:   %s\n", when);
	printf("owner:     %s:%s mode %04o\n", pw ? pw->pw_name : "?",
	       gr ? gr->gr_name : "?", (unsigned)in.mode);
	printf("used:      %.1f%% (%llu bytes)\n",
	       100.0 * (double)in.used / (double)in.capacity,
	       (unsigned long long)in.used);
	printf("writers:   %u live\n", in.writers);
	printf("written:   %llu records\n", (unsigned long long)in.written);
	printf("torn:      %llu (writers died mid-record)\n",
	       (unsigned long long)in.torn);
	printf("dropped:   %llu (no free lane, or nested in a signal handler)\n",
	       (unsigned long long)in.dropped);
	int n = shmlog_get_filter(cli_buffer, spec, sizeof(spec));
	printf("filter:    %s\n", n > 0 ? spec : "(none: everything is logged)");

	/* Per lane: read everything there is, so that what is held and what
	 * was overwritten are exact (a reader's books: written = held +
	 * overwritten + torn + hidden by a clear). */
	shmlog_reader_t *rd;
	if (shmlog_reader_open(cli_buffer, 0, &rd) == 0) {
		struct shmlog_record rec;
		while (shmlog_reader_next(rd, &rec, NULL) > 0)
			;
		/* OWNER: "live" while the writer's process holds the lane's
		 * lock, "dead" when it died holding the lane (the next writer
		 * takes it over); PID/TID as the writer saw them */
		printf("\n%5s %5s %8s %8s %12s %10s %12s %6s %8s\n", "LANE",
		       "OWNER", "PID", "TID", "WRITTEN", "HELD", "OVERWRITTEN",
		       "TORN", "CLEARED");
		for (unsigned i = 0; i < shmlog_reader_lanes(rd); i++) {
			struct shmlog_lane_stats st;
			if (shmlog_reader_lane_stats(rd, i, &st) ||
			    (!st.written && !st.owner_pid))
				continue;
			printf("%5u %5s %8u %8u %12llu %10llu %12llu %6llu "
			       "%8llu\n",
			       i,
			       st.owner_alive ? "live"
			       : st.owner_pid || st.owner_tid ? "dead"
					      : "-",
			       st.owner_pid, st.owner_tid,
			       (unsigned long long)st.written,
			       (unsigned long long)st.read,
			       (unsigned long long)st.overwritten,
			       (unsigned long long)st.torn,
			       (unsigned long long)st.skipped);
		}
		shmlog_reader_close(rd);
	}
	return 0;
}

static int cmd_write(int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"priority", required_argument, 0, 'p'},
		{"tag", required_argument, 0, 't'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int prio = SHMLOG_INFO, c;
	const char *tag = "shmlog";
	while ((c = getopt_long(argc, argv, "b:p:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': cli_buffer = optarg; break;
		case 'p':
			prio = shmlog_prio_parse(optarg);
			if (prio < SHMLOG_VERBOSE || prio > SHMLOG_FATAL)
				return cli_usage_error(
					"write",
					"bad priority '%s': give V, D, I, W, E "
					"or F",
					optarg);
			break;
		case 't':
			if (!optarg[0])
				return cli_usage_error(
					"write", "empty tag%s: give -t NAME", "");
			tag = optarg;
			break;
		case 'h':
			printf("usage: shmlog write [-b NAME] [-p PRIO] [-t TAG] "
			       "[MESSAGE...]\nWithout MESSAGE, logs one record "
			       "per line of standard input.\n");
			return 0;
		default: return 2;
		}
	}
	shmlog_t *h;
	int err = shmlog_open(cli_buffer, SHMLOG_OPEN_CREATE, &h);
	if (err)
		return cli_fail("write", err);
	int rc = 0;
	if (optind < argc) {
		size_t len = 0;
		for (int i = optind; i < argc; i++)
			len += strlen(argv[i]) + 1;
		char *msg = malloc(len + 1), *p = msg;
		if (!msg) {
			shmlog_close(h);
			return cli_fail("write", -ENOMEM);
		}
		for (int i = optind; i < argc; i++)
			p += sprintf(p, "%s%s", i > optind ? " " : "", argv[i]);
		err = shmlog_write(h, prio, tag, msg);
		free(msg);
	} else {
		char *line = NULL;
		size_t cap = 0;
		ssize_t n;
		while (!err && (n = getline(&line, &cap, stdin)) >= 0) {
			if (n && line[n - 1] == '\n')
				line[--n] = '\0';
			err = shmlog_write_n(h, prio, tag, line, (size_t)n);
		}
		free(line);
	}
	if (err)
		rc = cli_fail("write", err);
	shmlog_close(h);
	return rc;
}

static int cmd_level(int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "+b:h", opts, NULL)) != -1) {
		if (c == 'b') {
			cli_buffer = optarg;
		} else if (c == 'h') {
			printf("usage: shmlog level [-b NAME] ['TAG:P ... *:P']\n"
			       "Without a spec, prints the current one. P is one "
			       "of V D I W E F S; '' logs everything.\n");
			return 0;
		} else {
			return 2;
		}
	}
	if (optind == argc) {
		char spec[2100];
		int n = shmlog_get_filter(cli_buffer, spec, sizeof(spec));
		if (n < 0)
			return cli_fail("level", n);
		printf("%s\n", n ? spec : "*:V");
		return 0;
	}
	char spec[2100] = "";
	size_t used = 0;
	for (int i = optind; i < argc; i++) {
		int n = snprintf(spec + used, sizeof(spec) - used, "%s%s",
				 used ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(spec) - used)
			return cli_usage_error("level",
					       "filter spec too long%s (2 KiB "
					       "at most)",
					       "");
		used += (size_t)n;
	}
	size_t bad = 0;
	int err = shmlog_set_filter(cli_buffer, spec, &bad);
	if (err == -EINVAL && shmlog_parse_filter(spec, NULL) == -EINVAL) {
		char tok[128];
		snprintf(tok, sizeof(tok), "%.*s", (int)strcspn(spec + bad, " \t,"),
			 spec + bad);
		return cli_usage_error("level",
				       "bad filter token '%s': write TAG:P or "
				       "*:P with P one of V D I W E F S",
				       tok);
	}
	if (err == -E2BIG)
		return cli_usage_error("level",
				       "filter spec too long%s (2 KiB at most)",
				       "");
	return err ? cli_fail("level", err) : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: shmlog COMMAND [-b NAME] [options]\n\n"
		"Daemon-less logging into shared memory. NAME is a buffer "
		"(/dev/shm/shmlog.NAME)\nor an absolute path; the default is "
		"$SHMLOG_BUFFER, else 'main'.\n\n"
		"commands:\n"
		"  demo     several processes log while a reader follows; "
		"prints a summary\n"
		"  create   create a buffer (--size, --mode, --group, --lanes, "
		"--clock)\n"
		"  rm       remove a buffer\n"
		"  clear    hide the records written so far\n"
		"  ls       list buffers\n"
		"  info     describe a buffer\n"
		"  write    log a message, or each line of standard input\n"
		"  cat      dump the buffer (-f: then follow), like logcat -d\n"
		"  tail     the last records (-n N), -f to follow\n"
		"  level    show or set the filter ('net:D *:W') of every "
		"writer\n\n"
		"`shmlog COMMAND --help` shows a command's options.\n");
}

/* The library ignores a bad $SHMLOG_TAGS as a whole (it then logs
 * everything, never nothing) and never prints: say it here. */
static void check_env_tags(void)
{
	const char *env = getenv("SHMLOG_TAGS");
	size_t bad = 0;
	if (!env || shmlog_parse_filter(env, &bad) == 0)
		return;
	fprintf(stderr,
		"shmlog: warning: $SHMLOG_TAGS is ignored: bad token '%.*s': "
		"write TAG:P or *:P with P one of V D I W E F S\n",
		(int)strcspn(env + bad, " \t,"), env + bad);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	check_env_tags();
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	argv++;
	argc--;
	if (!strcmp(cmd, "create"))
		return cmd_create(argc, argv);
	if (!strcmp(cmd, "rm"))
		return cmd_rm(argc, argv);
	if (!strcmp(cmd, "clear"))
		return cmd_clear(argc, argv);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(argc, argv);
	if (!strcmp(cmd, "info"))
		return cmd_info(argc, argv);
	if (!strcmp(cmd, "write"))
		return cmd_write(argc, argv);
	if (!strcmp(cmd, "cat"))
		return cmd_cat(argc, argv, false, &stop);
	if (!strcmp(cmd, "tail"))
		return cmd_cat(argc, argv, true, &stop);
	if (!strcmp(cmd, "level"))
		return cmd_level(argc, argv);
	if (!strcmp(cmd, "demo"))
		return cmd_demo(argc, argv, &stop);
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "shmlog: unknown command '%s'\n\n", cmd);
	usage(stderr);
	return 2;
}
