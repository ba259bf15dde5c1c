/* SPDX-License-Identifier: MIT */
/* AF_UNIX SOCK_STREAM: a connected pair, one byte stream each way. */
#include "ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct us_priv {
	struct ipc_fdio io;
	int sv[2]; /* [0] client end, [1] server end */
};

static int us_setup(struct ipc_chan *c)
{
	struct us_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->sv[0] = p->sv[1] = -1;
	c->priv = p;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, p->sv))
		return -errno;
	return 0;
}

static int us_attach(struct ipc_chan *c, bool server)
{
	struct us_priv *p = c->priv;
	int fd = p->sv[server ? 1 : 0];

	ipc_close(&p->sv[server ? 0 : 1]);
	return ipc_fdio_attach(c, fd, fd);
}

static void us_cleanup(struct ipc_chan *c)
{
	struct us_priv *p = c->priv;

	if (!p)
		return;
	ipc_close(&p->sv[0]);
	ipc_close(&p->sv[1]);
	free(p);
	c->priv = NULL;
}

const struct ipc_transport ipc_unix_stream = {
	.name = "unix-stream",
	.desc = "AF_UNIX SOCK_STREAM socket pair",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY | IPC_CAP_SPIN,
	.setup = us_setup,
	.attach = us_attach,
	.send = ipc_fdio_send,
	.recv = ipc_fdio_recv,
	.detach = ipc_fdio_detach,
	.cleanup = us_cleanup,
};
