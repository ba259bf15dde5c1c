/* SPDX-License-Identifier: MIT */
/*
 * ONC RPC through libtirpc, as the study used it: a real svc_run() server
 * and a clnt_call() client, over TCP on loopback (onc-rpc) or over a Unix
 * stream socket (onc-rpc-unix: svcunix_create/clntunix_create, the
 * "provision for UNIX sockets" the study's author meant to try). The XDR is
 * written by hand (one opaque argument, one opaque result: our frame), so
 * no rpcgen step is needed and the frame's checksum still covers exactly
 * what was sent.
 *
 * No rpcbind: the parent binds a listening socket to 127.0.0.1 and an
 * ephemeral port; the server wraps it with svctcp_create() and registers
 * the program with protocol 0 (nothing told to the portmapper), and the
 * client calls clnttcp_create() with that port set, which skips the
 * portmapper lookup. Over Unix sockets svcunix_create() insists on binding
 * the path itself, so the server child does that and the client retries
 * its connection until the path exists.
 *
 * Notifications are one-way calls: clnt_call() with a zero timeout ships
 * the call at once and returns RPC_TIMEDOUT without waiting, and the
 * server's POST procedure sends no reply, the classic RPC message-passing
 * idiom. The final STOP is an ordinary call, so its reply also tells the
 * client that every earlier notification has been handled.
 */
#include "ipc.h"

#include <errno.h>
#include <netinet/in.h>
#include <rpc/rpc.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define RPC_PROG 0x20005e11u /* the "defined by user" range */
#define RPC_VERS 1u
#define PROC_CALL 1u
#define PROC_POST 2u

struct rpc_priv {
	bool unix_socket;
	int lfd;
	struct sockaddr_in addr;
	struct sockaddr_un sun;
	CLIENT *cl;
	SVCXPRT *xprt;
};

/* An opaque frame decoded into (or encoded from) a buffer of ours. */
struct rpc_frame {
	char *p;
	u_int len, cap;
};

static bool_t xdr_rpc_frame(XDR *x, struct rpc_frame *f)
{
	char *p = f->p; /* non-NULL: xdr_bytes decodes in place */
	return xdr_bytes(x, &p, &f->len, f->cap);
}

/* xdrproc_t is declared variadic; the cast through void (*)(void) is the
 * documented way to say we mean it. */
#define XDRPROC(fn) ((xdrproc_t)(void (*)(void))(fn))

static int orpc_setup_common(struct ipc_chan *c, bool unix_socket)
{
	struct rpc_priv *p = calloc(1, sizeof(*p));
	socklen_t len = sizeof(p->addr);

	if (!p)
		return -ENOMEM;
	c->priv = p;
	p->unix_socket = unix_socket;
	if (unix_socket) {
		p->lfd = -1;
		p->sun.sun_family = AF_UNIX;
		snprintf(p->sun.sun_path, sizeof(p->sun.sun_path),
			 "/tmp/shmlog-bench-rpc-%d.sock", (int)getpid());
		unlink(p->sun.sun_path);
		return 0;
	}
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (p->lfd < 0)
		return -errno;
	p->addr.sin_family = AF_INET;
	p->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(p->lfd, (struct sockaddr *)&p->addr, sizeof(p->addr)) ||
	    listen(p->lfd, 4) ||
	    getsockname(p->lfd, (struct sockaddr *)&p->addr, &len))
		return -errno;
	return 0;
}

static int orpc_setup(struct ipc_chan *c)
{
	return orpc_setup_common(c, false);
}

static int orpc_setup_unix(struct ipc_chan *c)
{
	return orpc_setup_common(c, true);
}

static int orpc_attach_unix(struct rpc_priv *p, bool server)
{
	if (server) {
		p->xprt = svcunix_create(RPC_ANYSOCK, 0, 0, p->sun.sun_path);
		return p->xprt ? 0 : -ECONNREFUSED;
	}
	/* Until the server child has bound the path: up to 5 s. */
	for (int i = 0; i < 5000 && !p->cl; i++) {
		int sock = RPC_ANYSOCK;
		p->cl = clntunix_create(&p->sun, RPC_PROG, RPC_VERS, &sock, 0,
					0);
		if (!p->cl) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
	}
	return p->cl ? 0 : -ECONNREFUSED;
}

static int orpc_attach(struct ipc_chan *c, bool server)
{
	struct rpc_priv *p = c->priv;

	if (p->unix_socket)
		return orpc_attach_unix(p, server);
	if (server) {
		p->xprt = svctcp_create(p->lfd, 0, 0);
		return p->xprt ? 0 : -ECONNREFUSED;
	}
	ipc_close(&p->lfd);
	int sock = RPC_ANYSOCK;
	p->cl = clnttcp_create(&p->addr, RPC_PROG, RPC_VERS, &sock, 0, 0);
	return p->cl ? 0 : -ECONNREFUSED;
}

static ssize_t orpc_call(struct ipc_chan *c, const void *req, size_t len,
			void *rep, size_t cap)
{
	struct rpc_priv *p = c->priv;
	struct rpc_frame in = {(char *)req, (u_int)len, (u_int)len};
	struct rpc_frame out = {rep, 0, (u_int)cap};
	struct timeval tmo = {25, 0};

	enum clnt_stat st = clnt_call(p->cl, PROC_CALL, XDRPROC(xdr_rpc_frame),
				      (caddr_t)&in, XDRPROC(xdr_rpc_frame),
				      (caddr_t)&out, tmo);
	return st == RPC_SUCCESS ? (ssize_t)out.len : -EPROTO;
}

static int orpc_post(struct ipc_chan *c, const void *req, size_t len)
{
	struct rpc_priv *p = c->priv;
	struct rpc_frame in = {(char *)req, (u_int)len, (u_int)len};
	struct timeval now = {0, 0};

	enum clnt_stat st = clnt_call(p->cl, PROC_POST, XDRPROC(xdr_rpc_frame),
				      (caddr_t)&in, XDRPROC(xdr_void), NULL,
				      now);
	return st == RPC_TIMEDOUT || st == RPC_SUCCESS ? 0 : -EPROTO;
}

/* The dispatcher runs inside svc_run(): these are its context. */
static struct {
	ipc_handler_fn handle;
	void *arg;
	struct rpc_frame rx, tx;
	int err;
} srv;

static void orpc_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	if (rq->rq_proc == NULLPROC) {
		svc_sendreply(xprt, XDRPROC(xdr_void), NULL);
		return;
	}
	if (rq->rq_proc != PROC_CALL && rq->rq_proc != PROC_POST) {
		svcerr_noproc(xprt);
		return;
	}
	srv.rx.len = 0;
	if (!svc_getargs(xprt, XDRPROC(xdr_rpc_frame), (caddr_t)&srv.rx)) {
		svcerr_decode(xprt);
		srv.err = -EPROTO;
		svc_exit();
		return;
	}
	size_t replen = 0;
	enum ipc_action act = srv.handle(srv.arg, srv.rx.p, srv.rx.len,
					 srv.tx.p, &replen);
	if (act == IPC_REPLY || act == IPC_END_REPLY) {
		srv.tx.len = (u_int)replen;
		if (!svc_sendreply(xprt, XDRPROC(xdr_rpc_frame),
				   (caddr_t)&srv.tx))
			srv.err = -EPIPE;
	}
	if (act == IPC_FAIL)
		srv.err = -EBADMSG;
	if (act == IPC_END || act == IPC_END_REPLY || act == IPC_FAIL)
		svc_exit(); /* svc_run() returns once this call is done */
}

static int orpc_serve(struct ipc_chan *c, ipc_handler_fn h, void *arg)
{
	struct rpc_priv *p = c->priv;

	srv.handle = h;
	srv.arg = arg;
	srv.rx.cap = srv.tx.cap = (u_int)c->p.max_frame;
	srv.rx.p = calloc(1, c->p.max_frame);
	srv.tx.p = calloc(1, c->p.max_frame);
	if (!srv.rx.p || !srv.tx.p)
		return -ENOMEM;
	/* Protocol 0: do not register with the portmapper. */
	if (!svc_register(p->xprt, RPC_PROG, RPC_VERS, orpc_dispatch, 0))
		return -EPROTO;
	svc_run();
	return srv.err;
}

static void orpc_detach(struct ipc_chan *c)
{
	struct rpc_priv *p = c->priv;

	if (p->cl)
		clnt_destroy(p->cl);
	p->cl = NULL;
}

static void orpc_cleanup(struct ipc_chan *c)
{
	struct rpc_priv *p = c->priv;

	if (!p)
		return;
	ipc_close(&p->lfd);
	if (p->unix_socket)
		unlink(p->sun.sun_path);
	free(p);
	c->priv = NULL;
}

const struct ipc_transport ipc_onc_rpc = {
	.name = "onc-rpc",
	.desc = "ONC RPC (libtirpc) over TCP loopback, svc_run server",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY,
	.setup = orpc_setup,
	.attach = orpc_attach,
	.call = orpc_call,
	.post = orpc_post,
	.serve = orpc_serve,
	.detach = orpc_detach,
	.cleanup = orpc_cleanup,
};

const struct ipc_transport ipc_onc_rpc_unix = {
	.name = "onc-rpc-unix",
	.desc = "ONC RPC (libtirpc) over a Unix stream socket, svc_run server",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY,
	.setup = orpc_setup_unix,
	.attach = orpc_attach,
	.call = orpc_call,
	.post = orpc_post,
	.serve = orpc_serve,
	.detach = orpc_detach,
	.cleanup = orpc_cleanup,
};
