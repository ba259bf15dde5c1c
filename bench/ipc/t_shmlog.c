/* SPDX-License-Identifier: MIT */
/*
 * shmlog itself as a notification channel: the client is a writer doing
 * shmlog_write_n() of the frame into a private buffer, the server a
 * follower (shmlog_reader_next, then shmlog_reader_wait when idle).
 *
 * What differs from every other row, and the table says so: a writer
 * never waits. There is no back-pressure, so a follower that falls behind
 * loses the oldest records (counted, reported as "lost", never silent)
 * instead of slowing the writer down. Notifications only: shmlog has no
 * reply path.
 */
#include "ipc.h"

#include <errno.h>
#include <shmlog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SL_BUFFER_SIZE (16u << 20)

struct sl_priv {
	char name[64];
	shmlog_t *w;
	shmlog_reader_t *r;
};

static int sl_setup(struct ipc_chan *c)
{
	struct sl_priv *p = calloc(1, sizeof(*p));
	struct shmlog_create_opts o;

	if (!p)
		return -ENOMEM;
	c->priv = p;
	snprintf(p->name, sizeof(p->name), "bench-ipc-%d", (int)getpid());
	shmlog_remove(p->name); /* a leftover of a killed run */
	shmlog_create_opts_init(&o);
	o.size = SL_BUFFER_SIZE;
	int r = shmlog_create(p->name, &o);
	if (r)
		p->name[0] = '\0';
	return r;
}

static int sl_attach(struct ipc_chan *c, bool server)
{
	struct sl_priv *p = c->priv;

	/* The reader starts at the oldest record, so it misses nothing the
	 * writer wrote before the reader attached. */
	if (server)
		return shmlog_reader_open(p->name, 0, &p->r);
	return shmlog_open(p->name, 0, &p->w);
}

static int sl_send(struct ipc_chan *c, const void *buf, size_t len)
{
	struct sl_priv *p = c->priv;

	return shmlog_write_n(p->w, SHMLOG_INFO, "ipc", buf, len);
}

static ssize_t sl_recv(struct ipc_chan *c, void *buf, size_t cap)
{
	struct sl_priv *p = c->priv;
	struct shmlog_record rec;
	struct shmlog_lost lost;
	uint64_t spin = 0;

	for (;;) {
		/* Read the flag before looking: if it was set, whatever the
		 * writer wrote is visible to the next shmlog_reader_next(). */
		int done = atomic_load(c->peer_done);
		int ev = shmlog_reader_next(p->r, &rec, &lost);
		if (ev == SHMLOG_EV_RECORD) {
			if (rec.msg_len > cap)
				return -EMSGSIZE;
			memcpy(buf, rec.msg, rec.msg_len);
			return (ssize_t)rec.msg_len;
		}
		if (ev == SHMLOG_EV_LOST) {
			c->lost += lost.overwritten + lost.torn;
			continue;
		}
		if (ev < 0)
			return ev;
		/* the writer is gone: we have it all once a wait that only
		 * looks finds nothing (next() may say NONE with records to
		 * come: shmlog.h) */
		if (done) {
			int r = shmlog_reader_wait(p->r, 0);
			if (r == -ETIMEDOUT)
				return 0;
			if (r)
				return r;
			continue;
		}
		if (ipc_spin_more(&c->p, &spin)) {
			ipc_cpu_relax();
			continue;
		}
		int r = shmlog_reader_wait(p->r, 100);
		if (r && r != -ETIMEDOUT && r != -EINTR)
			return r;
	}
}

static void sl_detach(struct ipc_chan *c)
{
	struct sl_priv *p = c->priv;

	if (p->r)
		shmlog_reader_close(p->r);
	if (p->w)
		shmlog_close(p->w);
	p->r = NULL;
	p->w = NULL;
}

static void sl_cleanup(struct ipc_chan *c)
{
	struct sl_priv *p = c->priv;

	if (!p)
		return;
	if (p->name[0])
		shmlog_remove(p->name);
	free(p);
	c->priv = NULL;
}

const struct ipc_transport ipc_shmlog = {
	.name = "shmlog",
	.desc = "shmlog writer to follower (no back-pressure: losses counted)",
	.caps = IPC_CAP_NOTIFY | IPC_CAP_SPIN | IPC_CAP_SHM |
		IPC_CAP_POLLS_FIRST,
	.wait_note = "shmlog_reader_wait() watches the lanes for up to 20 us "
		     "before it sleeps",
	.setup = sl_setup,
	.attach = sl_attach,
	.send = sl_send,
	.recv = sl_recv,
	.detach = sl_detach,
	.cleanup = sl_cleanup,
};
