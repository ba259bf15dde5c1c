/* SPDX-License-Identifier: MIT */
/*
 * What the CLI's commands share: the buffer chosen with -b, the stop flag
 * set by SIGINT/SIGTERM, argument parsing, and the error messages that say
 * what was wrong and what to do. Each command lives in its own file and is
 * listed in the command table of shmlog.c.
 */
#ifndef SHMLOG_CLI_H
#define SHMLOG_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern const char *cli_buffer; /* -b NAME, or NULL for the default */

/* Set by SIGINT and SIGTERM: every loop of the CLI checks it. */
extern volatile sig_atomic_t cli_stop;

/* Install the handlers that set cli_stop (no SA_RESTART: a blocked read
 * returns EINTR), and ignore SIGPIPE (a closed pipe is seen as EPIPE). */
void cli_catch_signals(void);

/* The buffer's name as the user knows it. */
const char *cli_buffer_name(void);
/* Take a -b argument for @cmd; returns 0, or prints why it is refused and
 * returns 2 (the exit status of a usage error). */
int cli_set_buffer(const char *cmd, const char *name);

/* Print what went wrong with the buffer and what to do; returns 1. */
int cli_fail(const char *what, int err);
/* Say that the archive in @dir holds zstd-compressed blocks this build
 * cannot read, and how to build one that can; @then: what @cmd does
 * about it. */
void cli_say_no_zstd(const char *cmd, const char *dir, const char *then);
/* Print a usage error ("shmlog CMD: " fmt with @arg) and where the help
 * is; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);
/* getopt_long() for a command, remembering @longopts so that
 * cli_bad_option() can suggest the option meant. getopt's own messages
 * carry the "shmlog CMD" that main() puts in argv[0]. */
int cli_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *longopts);
/* Report an unknown option or a missing argument (getopt already said
 * which) with, for a mistyped long option, the one meant; returns 2. */
int cli_bad_option(const char *cmd);
/* Of @n @names, the one @word is a likely typo of (at most 2 edits, a
 * swap of neighbours counting 1), or NULL. */
const char *cli_nearest(const char *word, size_t len, const char *const *names,
			size_t n);

/* Parse a decimal count: digits only, no sign. Returns 0 with *@out set,
 * -ERANGE if it exceeds @max, -EINVAL if it is not a number. */
int cli_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* The token of a filter spec that starts at @bad (as the library reports
 * it), copied into @buf for a message; long tokens are shortened. */
const char *cli_filter_token(const char *spec, size_t bad, char *buf,
			     size_t n);
/* The usage error for a bad token of a filter spec; returns 2. */
int cli_bad_filter(const char *cmd, const char *spec, size_t bad);
/* What a filter token must look like, for messages. */
#define CLI_FILTER_HINT                                                        \
	"write TAG:P or *:P with P one of V D I W E F S (a tag is matched "   \
	"exactly: no '=' or '*' in it)"

/* The lines of every command's --help about -b and -h. */
#define CLI_HELP_BUFFER                                                        \
	"  -b, --buffer NAME   the buffer: /dev/shm/shmlog.NAME, or an "      \
	"absolute path\n"                                                      \
	"                      (default $SHMLOG_BUFFER, else 'main')\n"
#define CLI_HELP_HELP "  -h, --help          this help\n"

/* Replace every control character of @s (C0 and DEL) with '?', in
 * place: text from the buffer (tags, process names) is anyone's bytes,
 * and must not drive the terminal. Returns @s. */
char *cli_printable(char *s);

/* Join argv[first..argc-1] with spaces into a new string (NULL if out of
 * memory). */
char *cli_join_args(int argc, char **argv, int first);

/* Commands that live outside shmlog.c (listed in its command table):
 * each returns the process's exit status. */
/* Where a dump of reader @rd's buffer ends: each lane's next sequence
 * number now (UINT64_MAX where unknown), a new array of *@lanes; NULL
 * without memory (no end then). What the buffer holds now is what a dump
 * shows, as dmesg, logcat -d and journalctl end where the log ended when
 * they began: a writer that never pauses, faster than the reader (which
 * it overtakes, and which then skips ahead), would otherwise keep the
 * reader reading for ever. */
struct shmlog_reader;
uint64_t *cli_dump_end(const struct shmlog_reader *rd, unsigned *lanes);
/* Is record @seq of lane @lane past @end (cli_dump_end(), NULL: never)? */
static inline bool cli_past_end(const uint64_t *end, unsigned lanes,
				unsigned lane, uint64_t seq)
{
	return end && lane < lanes && (int64_t)(seq - end[lane]) >= 0;
}

int cmd_cat(int argc, char **argv);
int cmd_tail(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_top(int argc, char **argv);

#endif
