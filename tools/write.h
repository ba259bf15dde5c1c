/* SPDX-License-Identifier: MIT */
/* What `shmlog write` and `shmlog run` share: priorities as logcat and
 * logger(1) name them, and opening a buffer to write without creating one
 * by mistake. */
#ifndef SHMLOG_TOOLS_WRITE_H
#define SHMLOG_TOOLS_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "shmlog.h"

/* A priority as the user typed it, for write, run and cat: V D I W E F and
 * their names (verbose debug info warn error fatal, silent), logger(1)'s
 * names (emerg alert crit err warning notice info debug, panic error
 * warn), facility.level ("user.err", "local0.info": the facility is
 * checked, then dropped) and syslog's numbers, 0 (emerg) to 7 (debug), as
 * logger(1) takes them and as a "<N>" prefix has them. Android's numbers
 * (2 verbose to 7 fatal, which shmlog_prio_parse() keeps) are not taken:
 * the CLI's one numbering is syslog's. The shmlog priority, or -EINVAL. */
int cli_parse_priority(const char *s);
/* What cli_parse_priority() takes, for messages. */
#define CLI_PRIO_HINT                                                          \
	"give V D I W E F (verbose debug info warn error fatal), logger(1)'s " \
	"emerg alert crit err warning notice info debug, facility.level "     \
	"such as user.err, or a syslog number from 0 (emerg) to 7 (debug); " \
	"numbers are syslog's, not Android's (2 verbose to 7 fatal)"

/* syslog level 0..7 (a "<N>" prefix, LOG_PRI()) as a shmlog priority. */
int cli_syslog_level_prio(int level);

/* How long lines are logged, by `shmlog write` and `shmlog run` alike: a
 * line longer than SHMLOG_MSG_MAX bytes becomes several records, each of
 * at most SHMLOG_MSG_MAX bytes and cut between characters when the line is
 * UTF-8, so nothing of it is lost (a record is cut, and flagged truncated,
 * only in lanes too small for SHMLOG_MSG_MAX bytes).
 *
 * cli_line_piece(): the bytes of a line of @len bytes that go into its
 * next record: all of them, or at most SHMLOG_MSG_MAX. */
size_t cli_line_piece(const char *line, size_t len);
/* Log a line of @len bytes as records of cli_line_piece() bytes each,
 * with shmlog_write_ex()'s arguments, through *@hp. At most every 100 ms
 * the buffer's name is looked at (shmlog_check()): the buffer removed,
 * and created again, *@hp is closed and the buffer opened again by name,
 * said once on stderr: the line goes into the new one. Until it is
 * created again the lines are dropped with -ESTALE, said once on stderr.
 * Returns 0 or the first error. */
int cli_write_line(shmlog_t **hp, unsigned flags, pid_t pid, int prio,
		   const char *tag, const char *line, size_t len);
/* Was the buffer found removed under cli_write_line()? Lines written
 * between its removal and the look (100 ms at most) went into the
 * removed file, and those after it until it was created again were
 * dropped. */
bool cli_writer_lost(void);

/* Open the buffer of -b (cli_buffer) to write, for command @cmd. A buffer
 * named with -b must exist unless @create (--create): a typo must not make
 * a new buffer; the default buffer ($SHMLOG_BUFFER, else main) is created
 * when missing. */
int cli_open_writer(const char *cmd, bool create, shmlog_t **out);

/* Report a failure of cli_open_writer() for command @cmd; returns 1. */
int cli_writer_fail(const char *cmd, int err);

/* `shmlog create --group G` failed to give the file to G (-EPERM). */
int cli_group_fail(gid_t gid);

int cmd_run(int argc, char **argv);

#endif
