/* SPDX-License-Identifier: MIT */
/*
 * POSIX message queues: two queues, one per direction, as in the study.
 * The queue's message size is the run's largest frame. Linux caps it
 * (/proc/sys/fs/mqueue/msgsize_max, 8 KiB by default, unless the process
 * has CAP_SYS_RESOURCE) and caps the bytes of all a user's queues
 * (RLIMIT_MSGQUEUE, which we try to raise): a size the system refuses is
 * reported as unsupported, which is a finding in itself.
 *
 * Spin-then-block: a second, O_NONBLOCK descriptor of the same queue is
 * polled with mq_receive for spin_ns, then the blocking one is used.
 */
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct mq_priv {
	char name[2][64]; /* [0] client to server, [1] server to client */
	mqd_t q[2], qnb[2]; /* blocking and non-blocking descriptors */
	mqd_t rq, rqnb, wq; /* this process's ends */
};

static void mq_raise_limit(size_t bytes)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_MSGQUEUE, &rl) || rl.rlim_cur >= bytes)
		return;
	rl.rlim_cur = bytes;
	if (rl.rlim_max < bytes)
		rl.rlim_max = bytes; /* works with CAP_SYS_RESOURCE only */
	setrlimit(RLIMIT_MSGQUEUE, &rl);
}

static int mq_setup(struct ipc_chan *c)
{
	struct mq_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->priv = p;
	for (int i = 0; i < 2; i++)
		p->q[i] = p->qnb[i] = (mqd_t)-1;

	/* Depth: 10 is the default msg_max; the queue bytes grow with it. */
	struct mq_attr at = {.mq_maxmsg = 10,
			     .mq_msgsize = (long)c->p.max_frame};
	mq_raise_limit(2 * 10 * (c->p.max_frame + 64) + 65536);
	for (int i = 0; i < 2; i++) {
		snprintf(p->name[i], sizeof(p->name[i]),
			 "/shmlog-bench-ipc-%d-%d", (int)getpid(), i);
		mq_unlink(p->name[i]);
		p->q[i] = mq_open(p->name[i], O_RDWR | O_CREAT | O_EXCL, 0600,
				  &at);
		if (p->q[i] == (mqd_t)-1) {
			int e = errno;
			/* EINVAL: msgsize above msgsize_max; EMFILE/ENOMEM:
			 * RLIMIT_MSGQUEUE. The mechanism cannot carry it. */
			if (e != EINVAL && e != EMFILE && e != ENOMEM)
				return -e;
			snprintf(c->why, sizeof(c->why),
				 "mq_open: %s for %zu B messages (limits: "
				 "/proc/sys/fs/mqueue/msgsize_max, "
				 "RLIMIT_MSGQUEUE)", strerror(e),
				 c->p.max_frame);
			return -EMSGSIZE;
		}
		p->qnb[i] = mq_open(p->name[i], O_RDWR | O_NONBLOCK);
		if (p->qnb[i] == (mqd_t)-1)
			return -errno;
	}
	return 0;
}

static int mq_attach(struct ipc_chan *c, bool server)
{
	struct mq_priv *p = c->priv;
	int in = server ? 0 : 1;

	p->rq = p->q[in];
	p->rqnb = p->qnb[in];
	p->wq = p->q[!in];
	return 0;
}

static int mq_send_frame(struct ipc_chan *c, const void *buf, size_t len)
{
	struct mq_priv *p = c->priv;

	while (mq_send(p->wq, buf, len, 0))
		if (errno != EINTR)
			return -errno;
	return 0;
}

static ssize_t mq_recv_frame(struct ipc_chan *c, void *buf, size_t cap)
{
	struct mq_priv *p = c->priv;
	uint64_t spin_start = 0;

	if (c->p.wait == IPC_WAIT_SPIN) {
		do {
			ssize_t n = mq_receive(p->rqnb, buf, cap, NULL);
			if (n >= 0)
				return n;
			if (errno != EAGAIN && errno != EINTR)
				return -errno;
			ipc_cpu_relax();
		} while (ipc_spin_more(&c->p, &spin_start));
	}
	for (;;) {
		ssize_t n = mq_receive(p->rq, buf, cap, NULL);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

static void mq_cleanup(struct ipc_chan *c)
{
	struct mq_priv *p = c->priv;

	if (!p)
		return;
	for (int i = 0; i < 2; i++) {
		if (p->q[i] != (mqd_t)-1)
			mq_close(p->q[i]);
		if (p->qnb[i] != (mqd_t)-1)
			mq_close(p->qnb[i]);
		if (p->name[i][0])
			mq_unlink(p->name[i]);
	}
	free(p);
	c->priv = NULL;
}

const struct ipc_transport ipc_posix_mq = {
	.name = "posix-mq",
	.desc = "POSIX message queues, one per direction (the study's)",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY | IPC_CAP_SPIN,
	.setup = mq_setup,
	.attach = mq_attach,
	.send = mq_send_frame,
	.recv = mq_recv_frame,
	.cleanup = mq_cleanup,
};
