/* SPDX-License-Identifier: MIT */
/*
 * A POSIX message queue to a reader process: one mq_send(3) per record
 * (common header, tag, message, copied into one buffer since mq_send has
 * no gather form). The queue holds 256 messages where the system allows
 * (root may exceed fs.mqueue.msg_max), else msg_max.
 */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define MQ_MSGSIZE (sizeof(struct lb_hdr) + 256 + LB_MSG_MAX)

struct mq_arg {
	mqd_t q;
	struct lb_sink *sink;
};

static void mq_collect(void *p)
{
	struct mq_arg *a = p;
	static char buf[MQ_MSGSIZE];
	for (;;) {
		ssize_t n = mq_receive(a->q, buf, sizeof(buf), NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		atomic_fetch_add_explicit(&a->sink->recs, 1,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&a->sink->bytes, (uint64_t)n,
					  memory_order_relaxed);
	}
}

static int mq_setup(struct lb_ctx *c)
{
	struct mq_attr attr = {.mq_maxmsg = 256, .mq_msgsize = MQ_MSGSIZE};
	snprintf(c->arg, sizeof(c->arg), "/shmlog-bench-mq-%d", (int)getpid());
	mq_unlink(c->arg);
	mqd_t q = mq_open(c->arg, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600,
			  &attr);
	if (q == (mqd_t)-1 && (errno == EINVAL || errno == EPERM)) {
		FILE *f = fopen("/proc/sys/fs/mqueue/msg_max", "r");
		long max = 10;
		if (f) {
			if (fscanf(f, "%ld", &max) != 1)
				max = 10;
			fclose(f);
		}
		attr.mq_maxmsg = max;
		q = mq_open(c->arg, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			    0600, &attr);
	}
	if (q == (mqd_t)-1) {
		snprintf(c->why, sizeof(c->why), "mq_open(%s): %s", c->arg,
			 strerror(errno));
		return -1;
	}
	c->sink = lb_sink_new();
	struct mq_arg a = {q, c->sink};
	c->collector = c->sink ? lb_spawn(c, mq_collect, &a) : -1;
	mq_close(q);
	if (c->collector < 0) {
		mq_unlink(c->arg);
		lb_sink_free(c->sink);
		c->sink = NULL;
		return -1;
	}
	snprintf(c->note, sizeof(c->note), "reader pid %d, %ld messages deep",
		 (int)c->collector, (long)attr.mq_maxmsg);
	return 0;
}

static void mq_teardown(struct lb_ctx *c)
{
	lb_stop(c->collector);
	c->collector = 0;
	mq_unlink(c->arg);
	lb_sink_free(c->sink);
	c->sink = NULL;
}

static void *mqw_open(const char *arg, char *err, size_t errlen)
{
	mqd_t q = mq_open(arg, O_WRONLY | O_CLOEXEC);
	if (q == (mqd_t)-1) {
		snprintf(err, errlen, "mq_open(%s): %s", arg, strerror(errno));
		return NULL;
	}
	return (void *)(intptr_t)(q + 1);
}

static long mqw_write(void *w, const struct lb_msg *m)
{
	char buf[MQ_MSGSIZE];
	size_t len = lb_rec_build(buf, m);
	if (mq_send((mqd_t)((intptr_t)w - 1), buf, len, 0) < 0)
		return -errno;
	return (long)len;
}

static void mqw_close(void *w)
{
	mq_close((mqd_t)((intptr_t)w - 1));
}

const struct lb_contender lb_mqueue = {
    .name = "mqueue",
    .what = "mq_send(3) of each record to a reader process",
    .setup = mq_setup,
    .teardown = mq_teardown,
    .open = mqw_open,
    .write = mqw_write,
    .close = mqw_close,
};
