/* SPDX-License-Identifier: MIT */
/*
 * A logd-style collector, the way Android logs since it left the kernel:
 * each writer sends a datagram (header, tag, message: one writev(2) on a
 * connected AF_UNIX SOCK_DGRAM socket, as liblog does) to a separate
 * process, which keeps the records in its own 1 MiB ring, overwriting the
 * oldest. The collector's CPU is part of the price.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

#define LOGD_RING (1u << 20)

static int sock_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -1;
	strcpy(a->sun_path, path);
	return 0;
}

struct logd_arg {
	int fd;
	struct lb_sink *sink;
};

/* The collector: receive, copy into the ring, count. */
static void logd_collect(void *p)
{
	struct logd_arg *a = p;
	char *ring = malloc(LOGD_RING);
	char buf[sizeof(struct lb_hdr) + 256 + LB_MSG_MAX];
	size_t pos = 0;
	if (!ring)
		_exit(1);
	memset(ring, 0, LOGD_RING);
	for (;;) {
		ssize_t n = recv(a->fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if ((size_t)n > LOGD_RING - pos)
			pos = 0; /* wrap: records stay contiguous */
		memcpy(ring + pos, buf, (size_t)n);
		pos += (size_t)n;
		atomic_fetch_add_explicit(&a->sink->recs, 1,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&a->sink->bytes, (uint64_t)n,
					  memory_order_relaxed);
	}
}

static int logd_setup(struct lb_ctx *c)
{
	struct sockaddr_un sa;
	if (lb_make_dir(c) < 0)
		return -1;
	snprintf(c->arg, sizeof(c->arg), "%s/logdw", c->dir);
	if (sock_addr(&sa, c->arg) < 0) {
		snprintf(c->why, sizeof(c->why), "socket path too long: %s",
			 c->arg);
		lb_remove_dir(c);
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(c->why, sizeof(c->why), "socket/bind %s: %s", c->arg,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		lb_remove_dir(c);
		return -1;
	}
	c->sink = lb_sink_new();
	struct logd_arg a = {fd, c->sink};
	c->collector = c->sink ? lb_spawn(c, logd_collect, &a) : -1;
	close(fd); /* the collector has its copy */
	if (c->collector < 0) {
		lb_sink_free(c->sink);
		c->sink = NULL;
		lb_remove_dir(c);
		return -1;
	}
	snprintf(c->note, sizeof(c->note), "collector pid %d, 1 MiB ring",
		 (int)c->collector);
	return 0;
}

static void logd_teardown(struct lb_ctx *c)
{
	lb_stop(c->collector);
	c->collector = 0;
	lb_sink_free(c->sink);
	c->sink = NULL;
	lb_remove_dir(c);
}

static void *logd_open(const char *arg, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sock_addr(&sa, arg) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "connect %s: %s", arg, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return (void *)(intptr_t)(fd + 1);
}

static long logd_write(void *w, const struct lb_msg *m)
{
	int fd = (int)(intptr_t)w - 1;
	struct lb_hdr h;
	lb_hdr_fill(&h, m);
	struct iovec v[3] = {
	    {&h, sizeof(h)},
	    {(void *)m->tag, h.tag_len},
	    {(void *)m->msg, m->len},
	};
	ssize_t n = writev(fd, v, 3);
	return n < 0 ? -errno : n;
}

static void logd_close(void *w)
{
	close((int)(intptr_t)w - 1);
}

const struct lb_contender lb_logd = {
    .name = "logd-dgram",
    .what = "logd-style: AF_UNIX datagram to a collector process's ring",
    .setup = logd_setup,
    .teardown = logd_teardown,
    .open = logd_open,
    .write = logd_write,
    .close = logd_close,
};
