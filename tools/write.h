/* SPDX-License-Identifier: MIT */
/* What `shmlog write` and `shmlog run` share: priorities as logcat and
 * logger(1) name them, and opening a buffer to write without creating one
 * by mistake. */
#ifndef SHMLOG_TOOLS_WRITE_H
#define SHMLOG_TOOLS_WRITE_H

#include <stdbool.h>
#include <sys/types.h>

#include "shmlog.h"

/* A priority as the user typed it: V D I W E F or their names, Android's
 * numbers (2..7: "3" is DEBUG, as logcat has it), logger(1)'s names (emerg
 * alert crit err warning notice info debug, panic error warn) and
 * facility.level ("user.err", "local0.info"). The shmlog priority, or
 * -EINVAL. */
int cli_parse_priority(const char *s);

/* syslog level 0..7 (a "<N>" prefix, LOG_PRI()) as a shmlog priority. */
int cli_syslog_level_prio(int level);

/* Open the buffer of -b (cli_buffer) to write. A buffer named with -b must
 * exist unless @create (--create): a typo must not make a new buffer; the
 * default buffer ($SHMLOG_BUFFER, else main) is created when missing. */
int cli_open_writer(bool create, shmlog_t **out);

/* Report a failure of cli_open_writer() for command @cmd; returns 1. */
int cli_writer_fail(const char *cmd, int err);

/* `shmlog create --group G` failed to give the file to G (-EPERM). */
int cli_group_fail(gid_t gid);

int cmd_run(int argc, char **argv);

#endif
