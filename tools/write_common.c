/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "utf8.h"
#include "write.h"

size_t cli_line_piece(const char *line, size_t len)
{
	if (len <= SHMLOG_MSG_MAX)
		return len;
	return shmlog__utf8_cut(line, SHMLOG_MSG_MAX); /* line[max] exists */
}

/* The command cli_open_writer() opened the handle for, for messages. */
static const char *writer_cmd = "write";
/* The buffer was found removed and not yet created again: said on
 * stderr, lines dropped. */
static bool removed_said;
/* It was found removed at least once: lines may have been lost. */
static bool removed_seen;
/* When to look at the buffer's name again (CLOCK_MONOTONIC_COARSE). */
static struct timespec look_due;

/* Is it time to look at the name (a stat(2) or an open(2))? At most every
 * 100 ms: not a syscall per line of a program that prints without pause,
 * yet a writer that logs now and then looks before each line. */
static bool look_now(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec < look_due.tv_sec ||
	    (now.tv_sec == look_due.tv_sec && now.tv_nsec < look_due.tv_nsec))
		return false;
	look_due = now;
	look_due.tv_nsec += 100000000;
	if (look_due.tv_nsec >= 1000000000) {
		look_due.tv_sec++;
		look_due.tv_nsec -= 1000000000;
	}
	return true;
}

/* The handle's buffer was removed: open it again by name if it was
 * created again. It is never created here: a buffer removed on purpose
 * stays removed until someone creates it. Returns 0 with *@hp the new
 * handle, or -ESTALE. */
static int reopen_removed(shmlog_t **hp)
{
	removed_seen = true;
	shmlog_t *fresh;
	int err = shmlog_open(cli_buffer, 0, &fresh);
	if (err) {
		if (!removed_said)
			fprintf(stderr,
				"shmlog %s: buffer '%s' was removed (`shmlog "
				"rm`): lines are dropped until it is created "
				"again (`shmlog create -b %s`), then logged "
				"into the new one\n",
				writer_cmd, cli_buffer_name(), cli_buffer_name());
		removed_said = true;
		return -ESTALE;
	}
	fprintf(stderr,
		removed_said ? "shmlog %s: buffer '%s' was created again: "
			       "logging into it\n"
			     : "shmlog %s: buffer '%s' was removed and created "
			       "again: logging into the new one\n",
		writer_cmd, cli_buffer_name());
	removed_said = false;
	shmlog_close(*hp);
	*hp = fresh;
	return 0;
}

/* Is *@hp still the buffer its name leads to? A writer keeps a removed
 * file's chunk until it is used up, and only then do its writes say
 * -ESTALE: a line every few seconds would go where no reader looks for
 * hours. So the name is looked at (shmlog_check()), and the buffer
 * opened again as soon as it differs. 0: write through *@hp (maybe a new
 * handle); -ESTALE: the buffer is gone, drop the line. */
static int writer_current(shmlog_t **hp)
{
	if (!look_now())
		return removed_said ? -ESTALE : 0;
	if (!removed_said && shmlog_check(*hp) != -ESTALE)
		return 0; /* the same file, or nothing known: go on */
	return reopen_removed(hp);
}

bool cli_writer_lost(void)
{
	return removed_seen;
}

int cli_write_line(shmlog_t **hp, unsigned flags, pid_t pid, int prio,
		   const char *tag, const char *line, size_t len)
{
	int err = writer_current(hp);
	if (err)
		return err;
	do {
		size_t n = cli_line_piece(line, len);
		err = shmlog_write_ex(*hp, flags, pid, prio, tag, line, n);
		/* used up its chunk in the removed file before we looked */
		if (err == -ESTALE && reopen_removed(hp) == 0)
			err = shmlog_write_ex(*hp, flags, pid, prio, tag, line,
					      n);
		if (err)
			return err;
		line += n;
		len -= n;
	} while (len);
	return 0;
}

int cli_syslog_level_prio(int level)
{
	static const int map[8] = {
		SHMLOG_FATAL, SHMLOG_FATAL, SHMLOG_FATAL, /* emerg alert crit */
		SHMLOG_ERROR, SHMLOG_WARN,		  /* err warning */
		SHMLOG_INFO,  SHMLOG_INFO,  SHMLOG_DEBUG, /* notice info debug */
	};
	return level >= 0 && level < 8 ? map[level] : SHMLOG_INFO;
}

/* logger(1)'s level names, with its deprecated synonyms. */
static int syslog_level_named(const char *s)
{
	static const struct {
		const char *name;
		int level;
	} names[] = {
		{"emerg", 0}, {"panic", 0},   {"alert", 1},  {"crit", 2},
		{"err", 3},   {"error", 3},   {"warning", 4}, {"warn", 4},
		{"notice", 5}, {"info", 6},   {"debug", 7},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i].name))
			return names[i].level;
	return -1;
}

static bool is_facility(const char *s, size_t n)
{
	static const char *const facilities[] = {
		"kern", "user", "mail", "daemon", "auth", "security", "syslog",
		"lpr", "news", "uucp", "cron", "authpriv", "ftp", "local0",
		"local1", "local2", "local3", "local4", "local5", "local6",
		"local7",
	};
	for (size_t i = 0; i < sizeof(facilities) / sizeof(facilities[0]); i++)
		if (strlen(facilities[i]) == n && !strncasecmp(s, facilities[i], n))
			return true;
	return false;
}

int cli_parse_priority(const char *s)
{
	if (!s || !s[0])
		return -EINVAL;
	if (s[0] >= '0' && s[0] <= '9') /* syslog's numbers, not Android's */
		return !s[1] && s[0] <= '7' ? cli_syslog_level_prio(s[0] - '0')
					    : -EINVAL;
	const char *dot = strchr(s, '.');
	if (dot) { /* facility.level: the facility is checked, then dropped */
		if (!is_facility(s, (size_t)(dot - s)))
			return -EINVAL;
		int level = syslog_level_named(dot + 1);
		return level < 0 ? -EINVAL : cli_syslog_level_prio(level);
	}
	/* logcat's letters and shmlog's names: "info" and "debug" mean the
	 * same in both schemes, "warn" and "error" too */
	int p = shmlog_prio_parse(s);
	if (p >= 0)
		return p;
	int level = syslog_level_named(s);
	return level < 0 ? -EINVAL : cli_syslog_level_prio(level);
}

int cli_open_writer(const char *cmd, bool create, shmlog_t **out)
{
	writer_cmd = cmd;
	bool named = cli_buffer != NULL;
	int err = shmlog_open(cli_buffer,
			      create || !named ? SHMLOG_OPEN_CREATE : 0, out);
	if (!err)
		look_now(); /* just opened: the name leads to it */
	return err;
}

int cli_writer_fail(const char *cmd, int err)
{
	if (err != -ENOENT)
		return cli_fail(cmd, err);
	const char *b = cli_buffer_name();
	fprintf(stderr,
		"shmlog %s: buffer '%s' does not exist: create it with "
		"`shmlog create -b %s` (or pass --create); a name given with -b "
		"is never created by mistake\n",
		cmd, b, b);
	return 1;
}

int cli_group_fail(gid_t gid)
{
	struct group *gr = getgrgid(gid);
	char name[64];
	if (gr)
		snprintf(name, sizeof(name), "%s", gr->gr_name);
	else
		snprintf(name, sizeof(name), "%u", (unsigned)gid);
	fprintf(stderr,
		"shmlog create: cannot give buffer '%s' to group %s: you are "
		"not a member of group %s (your groups: `id -Gn`); create it "
		"as root (`sudo shmlog create -b %s --group %s ...`) or choose "
		"one of your groups\n",
		cli_buffer_name(), name, name, cli_buffer_name(), name);
	return 1;
}

