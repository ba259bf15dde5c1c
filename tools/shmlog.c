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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "kept.h"
#include "shmlog.h"
#include "write.h"
#include "forward/forward.h"

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

/* The data area is cut into chunks of at least a page, and every lane (a
 * writer slot) needs one: say what --size / --lanes misses, and what would
 * fit. */
static int check_lane_size(uint64_t size, unsigned lanes)
{
	uint64_t most = size / 4096;
	if (lanes <= most)
		return 0;
	char what[160];
	snprintf(what, sizeof(what),
		 "%u lanes in %llu bytes: every lane needs a chunk of at least "
		 "4096 bytes: give at most %llu lanes, or a larger --size",
		 lanes, (unsigned long long)size, (unsigned long long)most);
	return cli_usage_error("create", "--size and --lanes do not fit: %s",
			       what);
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
	while ((c = cli_getopt(argc, argv, "b:s:m:g:l:c:h", opts)) != -1) {
		char *end;
		switch (c) {
		case 'b':
			if (cli_set_buffer("create", optarg))
				return 2;
			break;
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
				o.flags |= SHMLOG_CREATE_GID; /* even root's */
			} else {
				unsigned long g = strtoul(optarg, &end, 10);
				if (*end || end == optarg)
					return cli_usage_error(
						"create",
						"unknown --group '%s': give a "
						"group name or number",
						optarg);
				o.gid = (gid_t)g;
				o.flags |= SHMLOG_CREATE_GID;
			}
			break;
		}
		case 'l': {
			uint64_t n;
			if (cli_parse_u64(optarg, SHMLOG_LANES_MAX, &n) || !n)
				return cli_usage_error(
					"create",
					"bad --lanes '%s': give 1 to 1024", optarg);
			o.lanes = (unsigned)n;
			break;
		}
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
			       "[--clock tsc|realtime|coarse]\n"
			       "Create a buffer. It appears fully initialised or "
			       "not at all.\n\n" CLI_HELP_BUFFER
			       "  -s, --size N[K|M|G] record space, 64K to 16G "
			       "(default 1M)\n"
			       "  -m, --mode MODE     octal file mode (default "
			       "0600; 0640 lets --group read,\n"
			       "                      0660 write; never "
			       "world-writable)\n"
			       "  -g, --group G       group owner, a name or a "
			       "number (default: yours)\n"
			       "  -l, --lanes N       lanes, 1 to 1024 (default: "
			       "one per 64 KiB, 4 to 64);\n"
			       "                      each lane holds 1 KiB to "
			       "less than 2 GiB\n"
			       "  -c, --clock CLOCK   tsc (default when "
			       "invariant), realtime, or coarse\n"
			       "                      (cheap, ~4 ms steps)\n"
			       CLI_HELP_HELP);
			return 0;
		default: return cli_bad_option("create");
		}
	}
	if (optind < argc)
		return cli_usage_error("create", "unexpected argument '%s'",
				       argv[optind]);
	if (o.lanes) {
		int rc = check_lane_size(o.size, o.lanes);
		if (rc)
			return rc;
	}
	int err = shmlog_create(cli_buffer, &o);
	if (err == -EPERM && o.flags & SHMLOG_CREATE_GID)
		return cli_group_fail(o.gid);
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
	while ((c = cli_getopt(argc, argv, "b:h", opts)) != -1) {
		if (c == 'b') {
			if (cli_set_buffer(name, optarg))
				return 2;
		} else if (c == 'h') {
			printf("usage: shmlog %s [-b NAME]\n%s\n\n" CLI_HELP_BUFFER
			       CLI_HELP_HELP,
			       name, help);
			return 0;
		} else {
			return cli_bad_option(name);
		}
	}
	if (optind < argc)
		return cli_usage_error(name, "unexpected argument '%s'",
				       argv[optind]);
	return -1;
}

/* The pids of the live writers of the buffer, as its lanes name them
 * (the writers' own pid namespace), into @buf; their number. */
static unsigned live_writer_pids(char *buf, size_t n)
{
	shmlog_reader_t *rd;
	unsigned count = 0;
	size_t len = 0;
	buf[0] = '\0';
	if (shmlog_reader_open(cli_buffer, 0, &rd))
		return 0;
	uint32_t seen[8];
	unsigned nseen = 0;
	for (unsigned i = 0; i < shmlog_reader_lanes(rd); i++) {
		struct shmlog_lane_stats st;
		if (shmlog_reader_lane_stats(rd, i, &st) || !st.owner_alive)
			continue;
		bool dup = false;
		for (unsigned k = 0; k < nseen; k++)
			dup |= seen[k] == st.owner_pid;
		if (dup)
			continue;
		count++;
		if (nseen < 8) {
			seen[nseen++] = st.owner_pid;
			int w = snprintf(buf + len, n - len, "%s%u",
					 len ? ", " : "", st.owner_pid);
			if (w > 0 && (size_t)w < n - len)
				len += (size_t)w;
		} else if (nseen == 8) {
			snprintf(buf + len, n - len, ", ...");
			nseen++;
		}
	}
	shmlog_reader_close(rd);
	return count;
}

/* A writer keeps its mapping of a removed buffer: it fills its current
 * chunk there, where no reader finds the records, then its writes fail
 * (-ESTALE). `run` and `write` look at the name every 100 ms at most
 * and open the buffer again once it is created again; a program using
 * the library must do so itself (shmlog_check()). Say so, and remove
 * only with --force. */
static int cmd_rm(int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"force", no_argument, 0, 'f'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	bool force = false;
	int c;
	while ((c = cli_getopt(argc, argv, "b:fh", opts)) != -1) {
		switch (c) {
		case 'b':
			if (cli_set_buffer("rm", optarg))
				return 2;
			break;
		case 'f': force = true; break;
		case 'h':
			printf("usage: shmlog rm [-b NAME] [--force]\n"
			       "Remove a buffer's file. Refused while writers are "
			       "attached: their records\nwould be lost until it "
			       "is created again. Then `shmlog run` and `shmlog "
			       "write`\nnotice it within 100 ms (at their next "
			       "line) and log into the new buffer;\nprograms "
			       "using the library must open it again (shmlog_check(),"
			       "\nor -ESTALE from their writes once their chunk "
			       "is used up).\n\n"
			       CLI_HELP_BUFFER
			       "  -f, --force         remove it even so\n"
			       CLI_HELP_HELP);
			return 0;
		default: return cli_bad_option("rm");
		}
	}
	if (optind < argc)
		return cli_usage_error("rm", "unexpected argument '%s'",
				       argv[optind]);
	struct shmlog_info in;
	char pids[128];
	unsigned live = 0;
	if (shmlog_stat(cli_buffer, &in) == 0 && in.writers)
		live = live_writer_pids(pids, sizeof(pids));
	if (live && !force) {
		fprintf(stderr,
			"shmlog rm: buffer '%s' has %u live writer%s (pid %s): "
			"their records would be lost until the buffer is "
			"created again (and for good for writers that do not "
			"open it again). Stop them first, or remove it anyway "
			"with `shmlog rm -b %s --force`\n",
			cli_buffer_name(), live, live == 1 ? "" : "s", pids,
			cli_buffer_name());
		return 1;
	}
	int err = shmlog_remove(cli_buffer);
	if (err)
		return cli_fail("rm", err);
	if (live)
		fprintf(stderr,
			"shmlog rm: warning: removed buffer '%s' with %u live "
			"writer%s (pid %s): what they log is lost from now "
			"until the buffer is created again; `shmlog run` and "
			"`shmlog write` then log into it within 100 ms (at "
			"their next line), other programs must open it again "
			"(or be restarted)\n",
			cli_buffer_name(), live, live == 1 ? "" : "s", pids);
	return 0;
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
	int r = simple_cmd(argc, argv, "ls",
			   "List the buffers in /dev/shm (-b is accepted and "
			   "ignored).");
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
	int r = simple_cmd(argc, argv, "info",
			   "Describe one buffer in detail, with each lane's "
			   "books.");
	if (r >= 0)
		return r;
	struct shmlog_info in;
	int err = shmlog_stat(cli_buffer, &in);
	if (err)
		return cli_fail("info", err);
	char path[512], sz[32], spec[SHMLOG_FILTER_SPEC_MAX];
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
	printf("capacity:  %s in %u lanes (writer slots), for whoever "
	       "writes\n",
	       sz, in.lanes);
	printf("clock:     %s\n", clock_name(in.clock));
	printf("created:   %s\n", when);
	printf("owner:     %s:%s mode %04o\n", pw ? pw->pw_name : "?",
	       gr ? gr->gr_name : "?", (unsigned)in.mode);
	printf("used:      %.1f%% (%llu bytes in chunks holding records)\n",
	       100.0 * (double)in.used / (double)in.capacity,
	       (unsigned long long)in.used);
	printf("writers:   %u live\n", in.writers);
	printf("written:   %llu records\n", (unsigned long long)in.written);
	printf("torn:      %llu (writers died mid-record)\n",
	       (unsigned long long)in.torn);
	printf("dropped:   %llu (no free lane, or nested in a signal handler)\n",
	       (unsigned long long)in.dropped);
	struct shmlog_space_stats sp;
	if (shmlog_stat_space(cli_buffer, &sp) == 0 && sp.departed) {
		char bound[32];
		human_size(sp.departed * sp.chunk_size, sz, sizeof(sz));
		human_size(sp.departed_bound * sp.chunk_size, bound,
			   sizeof(bound));
		printf("departed:  %s in %llu chunk%s kept for writers that "
		       "exited or died (their newest records; up to %s, the "
		       "oldest going first beyond it)\n",
		       sz, (unsigned long long)sp.departed,
		       sp.departed == 1 ? "" : "s", bound);
	}
	int n = shmlog_get_filter(cli_buffer, spec, sizeof(spec));
	printf("filter:    %s\n", n > 0 ? spec : "(none: everything is logged)");
	struct shmlog_format_stats fs;
	if (shmlog_stat_formats(cli_buffer, &fs) == 0)
		printf("formats:   %llu call sites formatted by readers (%llu of "
		       "%llu bytes of the table); formatted by the caller: "
		       "%llu calls (the table was full), %llu (%%n, %%m, "
		       "positional or wide conversions)\n",
		       (unsigned long long)fs.formats,
		       (unsigned long long)fs.used,
		       (unsigned long long)fs.size,
		       (unsigned long long)fs.full,
		       (unsigned long long)fs.refused);

	/* Per lane: read everything there is, so that what is held and what
	 * was overwritten are exact (a reader's books: written = held +
	 * overwritten + torn + hidden by a clear), and the bytes of records
	 * each lane keeps. */
	shmlog_reader_t *rd;
	if (shmlog_reader_open(cli_buffer, 0, &rd) == 0) {
		unsigned lanes = shmlog_reader_lanes(rd);
		uint64_t *bytes = calloc(lanes, sizeof(*bytes));
		/* up to where the buffer ended now (cli_dump_end()) */
		unsigned end_lanes;
		uint64_t *end = cli_dump_end(rd, &end_lanes);
		struct shmlog_record rec;
		int ev;
		while (!cli_stop && (ev = shmlog_reader_next(rd, &rec, NULL)) > 0) {
			if (ev != SHMLOG_EV_RECORD || rec.lane >= lanes)
				continue;
			if (cli_past_end(end, end_lanes, rec.lane, rec.seq))
				break;
			if (bytes)
				bytes[rec.lane] +=
					kept_record_bytes(rec.tag_len, rec.msg_len);
		}
		free(end);
		/* a writer's fair share: the capacity over the lanes that
		 * have a writer and hold records */
		unsigned sharers = 0;
		struct shmlog_lane_stats st;
		for (unsigned i = 0; i < lanes; i++)
			if (!shmlog_reader_lane_stats(rd, i, &st) &&
			    (st.owner_pid || st.owner_tid) && st.read)
				sharers++;
		double share = sharers ? (double)in.capacity / sharers : 0;
		if (sharers) {
			human_size((uint64_t)share, sz, sizeof(sz));
			printf("share:     %s each for %u writer%s holding "
			       "records (capacity / writers)\n",
			       sz, sharers, sharers == 1 ? "" : "s");
		}
		/* OWNER: "live" while the writer's process holds the lane's
		 * lock, "dead" when it died holding the lane (the next writer
		 * takes it over; still "dead", its name kept, once a later
		 * writer repaired the lane), "exited" when it gave the lane
		 * back;
		 * PID/TID as the writer saw them, NAME its process name; HELD: the
		 * records the buffer keeps, BYTES their size, SHARE that as
		 * a share of the fair share ("-": no writer, its records are
		 * the departed's, above); DAMAGED: places where the
		 * lane did not check out (each once) */
		printf("\n%5s %6s %8s %8s %12s %10s %10s %6s %12s %6s %8s "
		       "%8s  %s\n",
		       "LANE", "OWNER", "PID", "TID", "WRITTEN", "HELD", "BYTES",
		       "SHARE", "OVERWRITTEN", "TORN", "CLEARED", "DAMAGED",
		       "NAME");
		uint64_t damaged = 0;
		for (unsigned i = 0; i < lanes; i++) {
			if (shmlog_reader_lane_stats(rd, i, &st) ||
			    (!st.written && !st.owner_pid))
				continue;
			/* the writer that used the lane last, named after it
			 * gave the lane back (format 2.2) */
			struct shmlog_lane_writer lw;
			bool known = shmlog_reader_lane_writer(rd, i, &lw) == 0;
			bool held = st.owner_pid || st.owner_tid;
			const char *owner = st.owner_alive ? "live"
					    : held	   ? "dead"
					    : known && lw.died ? "dead"
					    : known	   ? "exited"
							   : "-";
			uint32_t pid = held || !known ? st.owner_pid : lw.pid;
			uint32_t tid = held || !known ? st.owner_tid : lw.tid;
			const char *name =
				known && lw.pid == pid && lw.tid == tid &&
						lw.name[0]
					? cli_printable(lw.name)
					: "?";
			damaged += st.corrupt;
			uint64_t b = bytes ? bytes[i] : 0;
			char pct[16] = "-";
			if ((st.owner_pid || st.owner_tid) && share > 0)
				snprintf(pct, sizeof(pct), "%.0f%%",
					 100.0 * (double)b / share);
			printf("%5u %6s %8u %8u %12llu %10llu %10llu %6s %12llu "
			       "%6llu %8llu %8llu  %s\n",
			       i, owner, pid, tid,
			       (unsigned long long)st.written,
			       (unsigned long long)st.read,
			       (unsigned long long)b, pct,
			       (unsigned long long)st.overwritten,
			       (unsigned long long)st.torn,
			       (unsigned long long)st.skipped,
			       (unsigned long long)st.corrupt, name);
		}
		free(bytes);
		shmlog_reader_close(rd);
		if (damaged)
			printf("\ndamaged:   %llu (places where a lane did not "
			       "check out: something wrote over the buffer's "
			       "records; the records around them are shown, "
			       "the lost ones counted as torn)\n",
			       (unsigned long long)damaged);
	}
	return 0;
}

static int cmd_write(int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"priority", required_argument, 0, 'p'},
		{"tag", required_argument, 0, 't'},
		{"create", no_argument, 0, 'C'},
		{"no-filter", no_argument, 0, 'N'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int prio = SHMLOG_INFO, c;
	bool create = false;
	unsigned wflags = 0;
	const char *tag = "shmlog";
	while ((c = cli_getopt(argc, argv, "b:p:t:h", opts)) != -1) {
		switch (c) {
		case 'b':
			if (cli_set_buffer("write", optarg))
				return 2;
			break;
		case 'C': create = true; break;
		case 'N': wflags |= SHMLOG_WRITE_UNFILTERED; break;
		case 'p':
			prio = cli_parse_priority(optarg);
			if (prio < SHMLOG_VERBOSE || prio > SHMLOG_FATAL)
				return cli_usage_error(
					"write",
					"bad priority '%s': " CLI_PRIO_HINT,
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
			       "[--create] [--no-filter] [MESSAGE...]\n"
			       "Without MESSAGE, logs one record per line of "
			       "standard input. A line longer\nthan a record "
			       "(4000 bytes) is logged as several records, "
			       "as `shmlog run` does.\n\n" CLI_HELP_BUFFER
			       "                      -b NAME must exist (see "
			       "--create); the default buffer\n"
			       "                      is created when missing\n"
			       "  -p, --priority PRIO V D I W E F (default I), "
			       "verbose debug info warn error\n"
			       "                      fatal, or logger(1)'s "
			       "names: emerg alert crit err\n"
			       "                      warning notice info debug, "
			       "facility.level (user.err),\n"
			       "                      or syslog's numbers 0 "
			       "(emerg) to 7 (debug), as logger:\n"
			       "                      0-2 are F, 3 E, 4 W, 5-6 I, "
			       "7 D (not Android's 2-7)\n"
			       "  -t, --tag TAG       the tag (default "
			       "'shmlog')\n"
			       "      --create        create the buffer named with "
			       "-b if it does not exist\n"
			       "      --no-filter     log even what the buffer's "
			       "filter (`shmlog level`) drops\n" CLI_HELP_HELP);
			return 0;
		default: return cli_bad_option("write");
		}
	}
	shmlog_t *h;
	int err = cli_open_writer("write", create, &h);
	if (err)
		return cli_writer_fail("write", err);
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
		err = cli_write_line(&h, wflags, 0, prio, tag, msg, strlen(msg));
		free(msg);
	} else {
		char *line = NULL;
		size_t cap = 0;
		ssize_t n;
		bool dropped = false;
		/* a removed buffer (-ESTALE, said once by cli_write_line())
		 * drops lines until it is created again: read on. SIGINT or
		 * SIGTERM ends it after the line being logged, also while
		 * input flows without a pause (getline() never sees EINTR) */
		while ((!err || err == -ESTALE) && !cli_stop &&
		       (n = getline(&line, &cap, stdin)) >= 0) {
			if (n && line[n - 1] == '\n')
				line[--n] = '\0';
			err = cli_write_line(&h, wflags, 0, prio, tag, line,
					     (size_t)n);
			dropped |= err == -ESTALE;
		}
		free(line);
		/* removed under us: some lines may have gone where no
		 * reader finds them, even if none was dropped */
		if (!err && (dropped || cli_writer_lost()))
			err = -ESTALE;
		if (!err && cli_stop && !feof(stdin)) {
			fprintf(stderr, "shmlog write: interrupted: the lines "
					"read are logged, the rest of the "
					"input is not\n");
			rc = 130; /* as a shell reports it */
		}
	}
	if (err == -ESTALE)
		rc = 1; /* cli_write_line() said why */
	else if (err)
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
	while ((c = cli_getopt(argc, argv, "+b:h", opts)) != -1) {
		if (c == 'b') {
			if (cli_set_buffer("level", optarg))
				return 2;
		} else if (c == 'h') {
			printf("usage: shmlog level [-b NAME] ['TAG:P ... *:P']\n"
			       "Set the filter every writer of the buffer "
			       "follows; without a spec, print it.\nP is one of "
			       "V D I W E F S (S: nothing); '' logs everything. "
			       "A spec holds\nat most 2047 bytes.\n\n"
			       CLI_HELP_BUFFER CLI_HELP_HELP);
			return 0;
		} else {
			return cli_bad_option("level");
		}
	}
	if (optind == argc) {
		char spec[SHMLOG_FILTER_SPEC_MAX];
		int n = shmlog_get_filter(cli_buffer, spec, sizeof(spec));
		if (n == -EAGAIN) {
			fprintf(stderr,
				"shmlog level: the filter of buffer '%s' is "
				"being changed right now, or a process died "
				"while changing it: try again; if this "
				"persists, set it again (`shmlog level -b %s "
				"'*:V'` or your spec): a setter that died is "
				"taken over\n",
				cli_buffer_name(), cli_buffer_name());
			return 1;
		}
		if (n < 0)
			return cli_fail("level", n);
		printf("%s\n", n ? spec : "*:V");
		return 0;
	}
	char *spec = cli_join_args(argc, argv, optind);
	if (!spec)
		return cli_fail("level", -ENOMEM);
	size_t bad = 0;
	int err = shmlog_parse_filter(spec, &bad);
	if (err == -EINVAL) {
		int rc = cli_bad_filter("level", spec, bad);
		free(spec);
		return rc;
	}
	size_t len = strlen(spec);
	if (len >= SHMLOG_FILTER_SPEC_MAX) {
		char what[96];
		snprintf(what, sizeof(what), "%zu bytes, a buffer holds %d at most",
			 len, SHMLOG_FILTER_SPEC_MAX - 1);
		free(spec);
		return cli_usage_error("level",
				       "filter spec too long (%s): name fewer "
				       "tags and give the rest with '*:P'",
				       what);
	}
	err = shmlog_set_filter(cli_buffer, spec, &bad);
	free(spec);
	return err ? cli_fail("level", err) : 0;
}

static int cmd_forward_main(int argc, char **argv)
{
	return cmd_forward(argc, argv, &cli_stop);
}

/* The commands, in the order `shmlog --help` lists them. A new command is
 * one line here (and its cmd_ function, declared in cli.h). */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"demo", cmd_demo,
	 "several processes log while a reader follows; prints a summary"},
	{"create", cmd_create,
	 "create a buffer (--size, --mode, --group, --lanes, --clock)"},
	{"rm", cmd_rm,
	 "remove a buffer (refused while writers are live: --force)"},
	{"clear", cmd_clear, "hide the records written so far"},
	{"ls", cmd_ls, "list buffers"},
	{"info", cmd_info, "describe a buffer"},
	{"top", cmd_top, "who logs most: records and bytes per pid, tag, priority"},
	{"write", cmd_write, "log a message, or each line of standard input"},
	{"run", cmd_run, "run a program, logging its output (-- CMD ARGS)"},
	{"cat", cmd_cat, "dump the buffer (-f: then follow), like logcat -d"},
	{"tail", cmd_tail, "the last records (-n N), -f to follow"},
	{"forward", cmd_forward_main,
	 "ship records to rsyslog, RELP, journal-remote or JSON lines"},
	{"archive", cmd_archive,
	 "keep every record: append buffers to files in a directory"},
	{"level", cmd_level,
	 "show or set the filter ('net:D *:W') of every writer"},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: shmlog [-b NAME] COMMAND [-b NAME] [options]\n\n"
		   "Daemon-less logging into shared memory. NAME is a buffer "
		   "(/dev/shm/shmlog.NAME)\nor an absolute path; the default "
		   "is $SHMLOG_BUFFER, else 'main'. -b may come\nbefore the "
		   "command too (shmlog -b app cat), as logcat takes it.\n\n"
		   "commands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n`shmlog COMMAND --help` shows a command's options, "
		   "`shmlog --version` the version.\n");
}

/* The library ignores a bad $SHMLOG_TAGS as a whole (it then follows the
 * buffer's filter alone) and prints only with SHMLOG_DEBUG=1: say it here,
 * once, whatever the command. */
static void check_env_tags(const char *cmd)
{
	const char *env = getenv("SHMLOG_TAGS");
	size_t bad = 0;
	if (!env || shmlog_parse_filter(env, &bad) == 0)
		return;
	char tok[80];
	fprintf(stderr,
		"shmlog %s: warning: $SHMLOG_TAGS is ignored: bad token '%s': "
		CLI_FILTER_HINT "\n",
		cmd, cli_filter_token(env, bad, tok, sizeof(tok)));
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

static int unknown_command(const char *name)
{
	const char *names[N_COMMANDS];
	for (size_t i = 0; i < N_COMMANDS; i++)
		names[i] = commands[i].name;
	const char *meant = cli_nearest(name, strlen(name), names, N_COMMANDS);
	if (meant)
		fprintf(stderr,
			"shmlog: unknown command '%s': did you mean '%s'?\n"
			"Try 'shmlog --help'.\n",
			name, meant);
	else {
		fprintf(stderr, "shmlog: unknown command '%s'\n\n", name);
		usage(stderr);
	}
	return 2;
}

/* Options before the command, as logcat takes them ("shmlog -b app cat"):
 * -b NAME, -bNAME, --buffer NAME and --buffer=NAME. Each is handed to the
 * command as "-b NAME" right after its name (so `cat` merges several).
 * Returns the index of the command in @argv, or -1 after saying what is
 * wrong. */
static int global_options(int argc, char **argv, const char **bufs, int *nbufs)
{
	int i = 1;
	while (i < argc && argv[i][0] == '-' && strcmp(argv[i], "-h") &&
	       strcmp(argv[i], "--help") && strcmp(argv[i], "--version")) {
		const char *a = argv[i], *name = NULL;
		if (!strcmp(a, "-b") || !strcmp(a, "--buffer")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "shmlog: %s needs a buffer "
						"name: shmlog -b NAME COMMAND\n",
					a);
				return -1;
			}
			name = argv[++i];
		} else if (!strncmp(a, "--buffer=", 9)) {
			name = a + 9;
		} else if (!strncmp(a, "-b", 2)) {
			name = a + 2;
		} else {
			fprintf(stderr,
				"shmlog: unknown option '%s' before the "
				"command: only -b NAME may come before it; "
				"give the others after it (shmlog COMMAND %s)\n"
				"Try 'shmlog --help'.\n",
				a, a);
			return -1;
		}
		if (*nbufs == 64) {
			fprintf(stderr, "shmlog: too many -b: 64 at most\n");
			return -1;
		}
		bufs[(*nbufs)++] = name;
		i++;
	}
	if (i >= argc) {
		fprintf(stderr, "shmlog: no command given\n\n");
		usage(stderr);
		return -1;
	}
	return i;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *bufs[64];
	int nbufs = 0;
	int at = global_options(argc, argv, bufs, &nbufs);
	if (at < 0)
		return 2;
	const char *cmd = argv[at];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("shmlog %s\n", SHMLOG_VERSION);
		return 0;
	}
	const struct command *c = find_command(cmd);
	if (!c)
		return unknown_command(cmd);
	check_env_tags(c->name);
	cli_catch_signals();
	/* The command's argv: its name as getopt's messages should say it,
	 * the -b given before it, then its own arguments. */
	char prog[32];
	snprintf(prog, sizeof(prog), "shmlog %s", c->name);
	int n = 1 + 2 * nbufs + (argc - at - 1);
	char **av = calloc((size_t)n + 1, sizeof(*av));
	if (!av) {
		fprintf(stderr, "shmlog %s: out of memory\n", c->name);
		return 1;
	}
	int k = 0;
	av[k++] = prog;
	for (int i = 0; i < nbufs; i++) {
		av[k++] = "-b";
		av[k++] = (char *)bufs[i];
	}
	for (int i = at + 1; i < argc; i++)
		av[k++] = argv[i];
	av[k] = NULL;
	int rc = c->run(n, av);
	free(av);
	return rc;
}
