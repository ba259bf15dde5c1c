/* SPDX-License-Identifier: MIT */
/* Shared between the CLI's files. */
#ifndef SHMLOG_CLI_H
#define SHMLOG_CLI_H

#include <signal.h>
#include <stdbool.h>

extern const char *cli_buffer; /* -b NAME, or NULL for the default */

/* The buffer's name as the user knows it. */
const char *cli_buffer_name(void);
/* Print what went wrong with the buffer and what to do; returns 1. */
int cli_fail(const char *what, int err);
/* Print a usage error ("shmlog CMD: " fmt with @arg); returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);

int cmd_cat(int argc, char **argv, bool tail, volatile sig_atomic_t *stop);
int cmd_demo(int argc, char **argv, volatile sig_atomic_t *stop);

#endif
