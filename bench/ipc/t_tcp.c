/* SPDX-License-Identifier: MIT */
/*
 * TCP over loopback (127.0.0.1, an ephemeral port), TCP_NODELAY on both
 * ends so small frames are not held back by Nagle. The parent listens;
 * the server child accepts and the client child connects.
 */
#include "ipc.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct tcp_priv {
	struct ipc_fdio io;
	int lfd, fd;
	struct sockaddr_in addr;
};

static int tcp_setup(struct ipc_chan *c)
{
	struct tcp_priv *p = calloc(1, sizeof(*p));
	socklen_t len = sizeof(p->addr);

	if (!p)
		return -ENOMEM;
	p->fd = -1;
	c->priv = p;
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (p->lfd < 0)
		return -errno;
	p->addr.sin_family = AF_INET;
	p->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->addr.sin_port = 0;
	if (bind(p->lfd, (struct sockaddr *)&p->addr, sizeof(p->addr)) ||
	    listen(p->lfd, 4) ||
	    getsockname(p->lfd, (struct sockaddr *)&p->addr, &len))
		return -errno;
	return 0;
}

static int tcp_attach(struct ipc_chan *c, bool server)
{
	struct tcp_priv *p = c->priv;
	int one = 1;

	if (server) {
		p->fd = accept(p->lfd, NULL, NULL);
	} else {
		p->fd = socket(AF_INET, SOCK_STREAM, 0);
		if (p->fd >= 0 && connect(p->fd, (struct sockaddr *)&p->addr,
					  sizeof(p->addr)))
			ipc_close(&p->fd);
	}
	ipc_close(&p->lfd);
	if (p->fd < 0)
		return -errno;
	setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return ipc_fdio_attach(c, p->fd, p->fd);
}

static void tcp_detach(struct ipc_chan *c)
{
	struct tcp_priv *p = c->priv;

	ipc_fdio_detach(c);
	ipc_close(&p->fd);
}

static void tcp_cleanup(struct ipc_chan *c)
{
	struct tcp_priv *p = c->priv;

	if (!p)
		return;
	ipc_close(&p->lfd);
	free(p);
	c->priv = NULL;
}

const struct ipc_transport ipc_tcp = {
	.name = "tcp-loopback",
	.desc = "TCP over 127.0.0.1, TCP_NODELAY",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY | IPC_CAP_SPIN,
	.setup = tcp_setup,
	.attach = tcp_attach,
	.send = ipc_fdio_send,
	.recv = ipc_fdio_recv,
	.detach = tcp_detach,
	.cleanup = tcp_cleanup,
};
