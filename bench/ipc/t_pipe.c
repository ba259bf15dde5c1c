/* SPDX-License-Identifier: MIT */
/* pipe(2): two anonymous pipes, one per direction. */
#include "ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct pipe_priv {
	struct ipc_fdio io; /* first: used by ipc_fdio_* */
	int c2s[2], s2c[2];
};

static int pipe_setup(struct ipc_chan *c)
{
	struct pipe_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->c2s[0] = p->c2s[1] = p->s2c[0] = p->s2c[1] = -1;
	c->priv = p;
	if (pipe(p->c2s) || pipe(p->s2c))
		return -errno;
	return 0;
}

static int pipe_attach(struct ipc_chan *c, bool server)
{
	struct pipe_priv *p = c->priv;

	if (server) {
		ipc_close(&p->c2s[1]);
		ipc_close(&p->s2c[0]);
		return ipc_fdio_attach(c, p->c2s[0], p->s2c[1]);
	}
	ipc_close(&p->c2s[0]);
	ipc_close(&p->s2c[1]);
	return ipc_fdio_attach(c, p->s2c[0], p->c2s[1]);
}

static void pipe_cleanup(struct ipc_chan *c)
{
	struct pipe_priv *p = c->priv;

	if (!p)
		return;
	for (int i = 0; i < 2; i++) {
		ipc_close(&p->c2s[i]);
		ipc_close(&p->s2c[i]);
	}
	free(p);
	c->priv = NULL;
}

const struct ipc_transport ipc_pipe = {
	.name = "pipe",
	.desc = "two pipes, one per direction",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY | IPC_CAP_SPIN,
	.setup = pipe_setup,
	.attach = pipe_attach,
	.send = ipc_fdio_send,
	.recv = ipc_fdio_recv,
	.detach = ipc_fdio_detach,
	.cleanup = pipe_cleanup,
};
