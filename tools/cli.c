/* SPDX-License-Identifier: MIT */
/* What the CLI's commands share; see cli.h. */
#include "cli.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shmlog.h"

const char *cli_buffer;
volatile sig_atomic_t cli_stop;

static void on_signal(int sig)
{
	(void)sig;
	cli_stop = 1;
}

void cli_catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

const char *cli_buffer_name(void)
{
	if (cli_buffer)
		return cli_buffer;
	const char *env = getenv("SHMLOG_BUFFER");
	return env && env[0] ? env : "main";
}

int cli_set_buffer(const char *cmd, const char *name)
{
	if (!name[0])
		return cli_usage_error(cmd,
				       "empty buffer name%s: give -b NAME, or "
				       "leave -b out for the default "
				       "($SHMLOG_BUFFER, else 'main')",
				       "");
	char path[512];
	int err = shmlog_path(name, path, sizeof(path));
	if (err == -ENAMETOOLONG)
		return cli_usage_error(cmd,
				       "buffer name too long: '%s'", name);
	if (err < 0)
		return cli_usage_error(cmd,
				       "invalid buffer name '%s': names use "
				       "letters, digits, '.', '_' and '-' (not "
				       "first), or are absolute paths",
				       name);
	cli_buffer = name;
	return 0;
}

static const char *file_kind(mode_t m)
{
	return S_ISLNK(m)    ? "a symbolic link"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m) || S_ISBLK(m) ? "a device"
					   : "not a regular file";
}

static const char *user_name(uid_t uid, char *buf, size_t n)
{
	struct passwd *pw = getpwuid(uid);
	if (pw)
		snprintf(buf, n, "%s", pw->pw_name);
	else
		snprintf(buf, n, "%u", (unsigned)uid);
	return buf;
}

/* A name taken by something that is not a buffer: `shmlog rm` removes
 * only regular files, so say how to remove it by hand. */
static void explain_not_regular(const char *what, const char *path, mode_t m)
{
	fprintf(stderr,
		"shmlog %s: %s is %s, not a buffer: someone may have put it "
		"there to trap loggers. Check what it is (`ls -l %s`), then "
		"remove it with `%s %s` and create the buffer again\n",
		what, path, file_kind(m), path, S_ISDIR(m) ? "rmdir" : "rm",
		path);
}

/* -EPERM: the library refused a file it may not trust, or the kernel
 * refused to remove it. Look at the file to say which, and what to do:
 * `shmlog rm` itself removes only regular files. */
static void explain_eperm(const char *what, const char *path, const char *b)
{
	struct stat st;
	char who[64];
	if (lstat(path, &st) < 0) {
		fprintf(stderr, "shmlog %s: refusing %s: %s\n", what, path,
			shmlog_strerror(-EPERM));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		explain_not_regular(what, path, st.st_mode);
		return;
	}
	if (!strcmp(what, "rm")) {
		fprintf(stderr,
			"shmlog rm: cannot remove %s: %s; it belongs to user "
			"%s and /dev/shm lets only its owner or root remove it: "
			"ask them, or `sudo shmlog rm -b %s`\n",
			path, strerror(EPERM),
			user_name(st.st_uid, who, sizeof(who)), b);
		return;
	}
	if (st.st_nlink != 1) {
		fprintf(stderr,
			"shmlog %s: refusing %s: it has %lu hard links, and a "
			"link elsewhere could let others rewrite it: remove it "
			"(`shmlog rm -b %s`) and create it again\n",
			what, path, (unsigned long)st.st_nlink, b);
	} else if (st.st_mode & 0002) {
		fprintf(stderr,
			"shmlog %s: refusing %s: it is world-writable, so "
			"anyone could forge records: remove it (`shmlog rm -b "
			"%s`) and create it again (`shmlog create -b %s --group "
			"G --mode 0660` to share it)\n",
			what, path, b, b);
	} else if (st.st_uid != geteuid() && st.st_uid != 0) {
		fprintf(stderr,
			"shmlog %s: refusing to write into %s: it belongs to "
			"user %s, who could rewrite it under you. Writers log "
			"only into buffers of their own user or of root: use a "
			"buffer of your own, or have root create a shared one "
			"(`sudo shmlog create -b %s --group G --mode 0660`)\n",
			what, path, user_name(st.st_uid, who, sizeof(who)), b);
	} else {
		fprintf(stderr, "shmlog %s: refusing %s: %s\n", what, path,
			shmlog_strerror(-EPERM));
	}
}

void cli_say_no_zstd(const char *cmd, const char *dir, const char *then)
{
	fprintf(stderr,
		"shmlog %s: the archive in %s holds zstd-compressed blocks "
		"(`shmlog archive --zstd`), and this shmlog was built without "
		"zstd: %s. Build shmlog with cmake -DSHMLOG_ZSTD=ON (Debian: "
		"libzstd-dev) to read them\n",
		cmd, dir, then);
}

int cli_fail(const char *what, int err)
{
	const char *b = cli_buffer_name();
	char path[512];
	if (shmlog_path(cli_buffer, path, sizeof(path)) < 0)
		snprintf(path, sizeof(path), "%s", b);
	struct stat st;
	if (err != -ENOENT && err != -EINVAL && lstat(path, &st) == 0 &&
	    !S_ISREG(st.st_mode)) {
		explain_not_regular(what, path, st.st_mode);
		return 1;
	}
	switch (err) {
	case -ENOENT:
		fprintf(stderr,
			"shmlog %s: buffer '%s' does not exist: create it with "
			"`shmlog create -b %s`\n",
			what, b, b);
		break;
	case -EEXIST:
		fprintf(stderr,
			"shmlog %s: buffer '%s' already exists: use it, or "
			"remove it first with `shmlog rm -b %s`\n",
			what, b, b);
		break;
	case -EACCES:
		fprintf(stderr,
			"shmlog %s: permission denied on %s: run as its owner, "
			"or have it shared: for readers `shmlog create -b %s "
			"--group G --mode 0640`, for several writing users a "
			"buffer of root's (`sudo shmlog create -b %s --group G "
			"--mode 0660`)\n",
			what, path, b, b);
		break;
	case -EINVAL:
		fprintf(stderr,
			"shmlog %s: invalid buffer name or option '%s': names "
			"use letters, digits, '.', '_' and '-', or are absolute "
			"paths\n",
			what, b);
		break;
	case -EPERM:
		explain_eperm(what, path, b);
		break;
	case -EBADMSG:
	case -ENODATA:
	case -EPROTONOSUPPORT:
		fprintf(stderr,
			"shmlog %s: %s: %s. Remove it with `shmlog rm -b %s` "
			"and create it again\n",
			what, path, shmlog_strerror(err), b);
		break;
	case -ENOSPC:
		fprintf(stderr,
			"shmlog %s: no space left for %s: free space in "
			"/dev/shm (`shmlog ls`, `df /dev/shm`) or choose a "
			"smaller --size\n",
			what, path);
		break;
	default:
		fprintf(stderr, "shmlog %s: %s: %s\n", what, path,
			shmlog_strerror(err));
	}
	return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "shmlog %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'shmlog %s --help'.\n", cmd);
	return 2;
}

/* Edits from @a (@la bytes) to @b: insertions, deletions, substitutions
 * and swaps of neighbours (optimal string alignment). Short words only. */
static size_t edit_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	if (la > 31 || lb > 31)
		return SIZE_MAX;
	size_t d[32][32];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = d[i - 1][j - 1] + cost;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *cli_nearest(const char *word, size_t len, const char *const *names,
			size_t n)
{
	const char *best = NULL;
	size_t best_d = 3; /* more edits than 2 is another word */
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, len, names[i]);
		if (d < best_d && d < strlen(names[i])) {
			best = names[i];
			best_d = d;
		}
	}
	return best;
}

static const struct option *getopt_longopts;
static char **getopt_argv;

int cli_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *longopts)
{
	getopt_longopts = longopts;
	getopt_argv = argv;
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

/* The long option the last one getopt refused was a typo of, or NULL. */
static const char *option_meant(void)
{
	if (!getopt_longopts || optind < 1 || optopt)
		return NULL;
	const char *arg = getopt_argv[optind - 1];
	if (strncmp(arg, "--", 2) != 0)
		return NULL;
	arg += 2;
	const char *names[64];
	size_t n = 0;
	for (const struct option *o = getopt_longopts; o->name && n < 64; o++)
		names[n++] = o->name;
	return cli_nearest(arg, strcspn(arg, "="), names, n);
}

int cli_bad_option(const char *cmd)
{
	const char *meant = option_meant();
	if (meant)
		fprintf(stderr, "shmlog %s: did you mean '--%s'?\n", cmd, meant);
	fprintf(stderr, "Try 'shmlog %s --help'.\n", cmd);
	return 2;
}

int cli_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	if (!s[0])
		return -EINVAL;
	uint64_t v = 0;
	bool over = false;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			over = true;
		else
			v = v * 10 + d;
	}
	if (over || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* The library's token separators (src/filter.c). */
#define FILTER_SEPARATORS " \t\n,"

const char *cli_filter_token(const char *spec, size_t bad, char *buf, size_t n)
{
	size_t len = strlen(spec);
	if (bad > len)
		bad = len;
	size_t tok = strcspn(spec + bad, FILTER_SEPARATORS);
	if (tok + 1 <= n)
		snprintf(buf, n, "%.*s", (int)tok, spec + bad);
	else
		snprintf(buf, n, "%.*s...", (int)(n > 4 ? n - 4 : 0),
			 spec + bad);
	return buf;
}

int cli_bad_filter(const char *cmd, const char *spec, size_t bad)
{
	char tok[80];
	return cli_usage_error(cmd, "bad filter token '%s': " CLI_FILTER_HINT,
			       cli_filter_token(spec, bad, tok, sizeof(tok)));
}

char *cli_join_args(int argc, char **argv, int first)
{
	size_t len = 1;
	for (int i = first; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	*p = '\0';
	for (int i = first; i < argc; i++) {
		size_t n = strlen(argv[i]);
		if (i > first)
			*p++ = ' ';
		memcpy(p, argv[i], n + 1);
		p += n;
	}
	return s;
}

char *cli_printable(char *s)
{
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return s;
}

uint64_t *cli_dump_end(const struct shmlog_reader *rd, unsigned *lanes)
{
	unsigned n = shmlog_reader_lanes(rd);
	uint64_t *end = n ? malloc(n * sizeof(*end)) : NULL;
	*lanes = end ? n : 0;
	for (unsigned l = 0; end && l < n; l++)
		if (shmlog_reader_lane_next_seq(rd, l, &end[l]))
			end[l] = UINT64_MAX;
	return end;
}
