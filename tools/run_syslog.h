/* SPDX-License-Identifier: MIT */
/*
 * `shmlog run --syslog`: a /dev/log of the program's own. Programs that
 * send datagrams to /dev/log themselves (logger(1), Python's
 * logging.handlers.SysLogHandler, Go's log/syslog, static binaries) do not
 * go through syslog(3), so the preloaded shim never sees them. run binds a
 * datagram socket of its own, and the program runs in a private mount
 * namespace (with a user namespace when run is not privileged) where
 * /dev/log is that socket. run reads it beside the program's output: each
 * datagram, RFC 3164 or RFC 5424, becomes a record with the sender's pid
 * as the kernel gives it (SO_PASSCRED), the priority it names, and its tag.
 *
 * Where it cannot: no mount namespace for us (user namespaces disabled,
 * a seccomp filter, a container without CAP_SYS_ADMIN), and /dev/log
 * unchanged: the program runs as without it, syslog(3) still goes through
 * the shim, and run says so on stderr and in the log. In a user namespace
 * (run not started as root), set-user-ID and file-capability programs run
 * without their privileges, as the kernel does not grant them there.
 */
#ifndef SHMLOG_TOOLS_RUN_SYSLOG_H
#define SHMLOG_TOOLS_RUN_SYSLOG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "shmlog.h"

/* The socket run reads, and the directory it lives in (removed by
 * run_syslog_close()). */
struct run_syslog {
	int fd; /* -1: none */
	char dir[PATH_MAX]; /* "": none */
	char path[PATH_MAX]; /* dir/log, the program's /dev/log */
};

/* Make the socket, in a new directory of $XDG_RUNTIME_DIR, $TMPDIR or
 * /tmp. Returns 0, or a negative errno with nothing left behind. */
int run_syslog_open(struct run_syslog *rs);

/* In the forked child, before exec: unshare the mount namespace (and the
 * user namespace when that is needed) and make /dev/log the socket of
 * @rs. Returns 0, or a negative errno with *@what naming the step that
 * failed; /dev/log is then the system's. For the child of a
 * single-threaded process (it lists /dev with opendir()). */
int run_syslog_child(const struct run_syslog *rs, const char **what);

/* Log every datagram waiting on the socket: its tag (@force_tag if not
 * NULL, else the datagram's, else @tag), its priority, the sender's pid.
 * Returns how many were read. */
int run_syslog_pump(shmlog_t **h, struct run_syslog *rs, const char *tag,
		    const char *force_tag);

/* Close the socket; @remove: remove it and its directory too. */
void run_syslog_close(struct run_syslog *rs, bool remove);

/* One datagram taken apart; pointers into it. */
struct syslog_dgram {
	int level; /* 0 emerg .. 7 debug */
	const char *tag; /* NULL: none given */
	size_t tag_len;
	const char *msg;
	size_t len;
};

/* Take apart an RFC 5424 ("<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD
 * MSG"), RFC 3164 ("<PRI>Mmm dd hh:mm:ss [HOST] TAG[PID]: MSG") or bare
 * ("<PRI>MSG", as Python sends it) message of @len bytes. A missing PRI
 * is user.notice (RFC 3164); trailing NULs and newlines are dropped. */
void run_syslog_parse(const char *buf, size_t len, struct syslog_dgram *d);

#endif
