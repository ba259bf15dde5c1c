/* SPDX-License-Identifier: MIT */
/*
 * A pipe to a reader process: each record (common header, tag, message) is
 * one write(2) into the pipe; the reader drains it in 64 KiB reads and
 * counts the bytes. Records up to PIPE_BUF are written atomically, so
 * several writers never interleave inside one (the sweep's 4 KiB records
 * run with one writer only). Writers inherit the write end: the pipe is
 * created at setup and its descriptor number handed over in the argument.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

struct pipe_arg {
	int rfd, wfd;
	struct lb_sink *sink;
};

static void pipe_collect(void *p)
{
	struct pipe_arg *a = p;
	static char buf[65536];
	close(a->wfd); /* or EOF would never come */
	for (;;) {
		ssize_t n = read(a->rfd, buf, sizeof(buf));
		if (n == 0)
			_exit(0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		atomic_fetch_add_explicit(&a->sink->bytes, (uint64_t)n,
					  memory_order_relaxed);
	}
}

static int pipe_setup(struct lb_ctx *c)
{
	int fds[2];
	/* The write end stays inheritable: writer processes, and the one
	 * strace starts, use it by number. */
	if (pipe(fds) < 0) {
		snprintf(c->why, sizeof(c->why), "pipe: %s", strerror(errno));
		return -1;
	}
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	c->sink = lb_sink_new();
	struct pipe_arg a = {fds[0], fds[1], c->sink};
	c->collector = c->sink ? lb_spawn(c, pipe_collect, &a) : -1;
	close(fds[0]);
	if (c->collector < 0) {
		close(fds[1]);
		lb_sink_free(c->sink);
		c->sink = NULL;
		return -1;
	}
	int *wfd = malloc(sizeof(*wfd));
	*wfd = fds[1];
	c->priv = wfd;
	snprintf(c->arg, sizeof(c->arg), "%d", fds[1]);
	snprintf(c->note, sizeof(c->note), "reader pid %d, %d KiB pipe",
		 (int)c->collector, fcntl(fds[1], F_GETPIPE_SZ) / 1024);
	return 0;
}

static void pipe_teardown(struct lb_ctx *c)
{
	int *wfd = c->priv;
	close(*wfd); /* the reader sees EOF */
	free(wfd);
	c->priv = NULL;
	lb_stop(c->collector);
	c->collector = 0;
	lb_sink_free(c->sink);
	c->sink = NULL;
}

static void *pipe_open(const char *arg, char *err, size_t errlen)
{
	int fd = atoi(arg);
	if (fcntl(fd, F_GETFD) < 0) {
		snprintf(err, errlen, "pipe descriptor %d not inherited", fd);
		return NULL;
	}
	return (void *)(intptr_t)(fd + 1);
}

static long pipe_write(void *w, const struct lb_msg *m)
{
	char buf[sizeof(struct lb_hdr) + 256 + LB_MSG_MAX];
	size_t len = lb_rec_build(buf, m);
	ssize_t n = write((int)(intptr_t)w - 1, buf, len);
	return n < 0 ? -errno : n;
}

static void pipe_close(void *w)
{
	(void)w; /* the parent owns the write end */
}

const struct lb_contender lb_pipe = {
    .name = "pipe",
    .what = "write(2) of each record into a pipe to a reader process",
    .flags = LB_SINK_BYTES,
    .setup = pipe_setup,
    .teardown = pipe_teardown,
    .open = pipe_open,
    .write = pipe_write,
    .close = pipe_close,
};
