/* SPDX-License-Identifier: MIT */
/*
 * AF_UNIX socket pairs, both kinds:
 *  - SOCK_STREAM: one byte stream each way;
 *  - SOCK_DGRAM: one datagram is one frame. The largest datagram is
 *    bounded by the send buffer, which we raise (with SO_SNDBUFFORCE when
 *    allowed); frames beyond it are reported, not split.
 */
#include "ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct sp_priv {
	struct ipc_fdio io;
	int sv[2]; /* [0] client end, [1] server end */
};

/* Room for a few frames in flight; the kernel doubles what we ask. */
static int ud_size_buffers(struct ipc_chan *c, int fd, size_t frame)
{
	int want = (int)(frame * 2 + 65536);
	int got = 0;
	socklen_t len = sizeof(got);

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof(want)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len))
		return -errno;
	/* af_unix refuses a datagram larger than sndbuf - 32 (and skb
	 * overhead): keep a margin. */
	if ((size_t)got >= frame + 4096)
		return 0;
	snprintf(c->why, sizeof(c->why),
		 "a %zu B datagram exceeds the %d B send buffer (raise "
		 "net.core.wmem_max or run with CAP_NET_ADMIN)", frame, got);
	return -EMSGSIZE;
}

static int sp_setup(struct ipc_chan *c, int type)
{
	struct sp_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->sv[0] = p->sv[1] = -1;
	p->io.dgram = type == SOCK_DGRAM;
	c->priv = p;
	if (socketpair(AF_UNIX, type, 0, p->sv))
		return -errno;
	for (int i = 0; type == SOCK_DGRAM && i < 2; i++) {
		int r = ud_size_buffers(c, p->sv[i], c->p.max_frame);
		if (r)
			return r;
	}
	return 0;
}

static int us_setup(struct ipc_chan *c)
{
	return sp_setup(c, SOCK_STREAM);
}

static int ud_setup(struct ipc_chan *c)
{
	return sp_setup(c, SOCK_DGRAM);
}

static int sp_attach(struct ipc_chan *c, bool server)
{
	struct sp_priv *p = c->priv;
	int fd = p->sv[server ? 1 : 0];

	ipc_close(&p->sv[server ? 0 : 1]);
	return ipc_fdio_attach(c, fd, fd);
}

static void sp_cleanup(struct ipc_chan *c)
{
	struct sp_priv *p = c->priv;

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
	.attach = sp_attach,
	.send = ipc_fdio_send,
	.recv = ipc_fdio_recv,
	.detach = ipc_fdio_detach,
	.cleanup = sp_cleanup,
};

const struct ipc_transport ipc_unix_dgram = {
	.name = "unix-dgram",
	.desc = "AF_UNIX SOCK_DGRAM socket pair, one datagram per frame",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY | IPC_CAP_SPIN,
	.setup = ud_setup,
	.attach = sp_attach,
	.send = ipc_fdio_send,
	.recv = ipc_fdio_recv,
	.detach = ipc_fdio_detach,
	.cleanup = sp_cleanup,
};
