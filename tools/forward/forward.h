/* SPDX-License-Identifier: MIT */
/* `shmlog forward`: see forward.c and docs/forwarding.md. */
#ifndef SHMLOG_FORWARD_H
#define SHMLOG_FORWARD_H

#include <signal.h>

int cmd_forward(int argc, char **argv, volatile sig_atomic_t *stop);

#endif
