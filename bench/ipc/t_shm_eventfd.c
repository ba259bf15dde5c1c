/* SPDX-License-Identifier: MIT */
/*
 * Shared memory + eventfd: the shm ring of shm-futex, with an eventfd per
 * (direction, event) as the doorbell instead of a futex, the pattern of
 * vhost and io_uring. Same rule: ring the bell only when the peer says it
 * sleeps. A stale ring left in the eventfd only costs one spurious wake-up:
 * the waiter re-checks the counter.
 */
#include "shm_ring.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void efd_bell_wait(struct shm_ring *r, _Atomic uint32_t *word,
			  uint32_t v, int bell)
{
	uint64_t n;
	(void)word;
	(void)v;
	while (read(r->efd[bell], &n, sizeof(n)) < 0 && errno == EINTR)
		;
}

static void efd_bell_wake(struct shm_ring *r, int bell)
{
	uint64_t one = 1;
	while (write(r->efd[bell], &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

static int bell_of(struct shm_ring *r, struct shm_ring_dir *d, int space)
{
	return shm_ring_dir_index(r, d) * 2 + space;
}

static int ef_wait_space(struct shm_ring *r, struct shm_ring_dir *d)
{
	uint32_t full_tail = r->head - r->h->nslots;
	shm_ring_wait_change(r, &d->tail, full_tail, &d->prod_waiting,
			     bell_of(r, d, 1), efd_bell_wait);
	return 0;
}

static void ef_published(struct shm_ring *r, struct shm_ring_dir *d)
{
	atomic_store(&d->head, r->head);
	if (atomic_load(&d->cons_waiting))
		efd_bell_wake(r, bell_of(r, d, 0));
}

static int ef_wait_data(struct shm_ring *r, struct shm_ring_dir *d)
{
	shm_ring_wait_change(r, &d->head, r->tail, &d->cons_waiting,
			     bell_of(r, d, 0), efd_bell_wait);
	return 0;
}

static void ef_consumed(struct shm_ring *r, struct shm_ring_dir *d)
{
	atomic_store(&d->tail, r->tail);
	if (atomic_load(&d->prod_waiting))
		efd_bell_wake(r, bell_of(r, d, 1));
}

static const struct shm_ring_ops ef_ops = {
	.wait_space = ef_wait_space,
	.published = ef_published,
	.wait_data = ef_wait_data,
	.consumed = ef_consumed,
};

static int ef_setup(struct ipc_chan *c)
{
	int r = shm_ring_setup(c, &ef_ops);
	struct shm_ring *ring = c->priv;

	if (r)
		return r;
	for (int i = 0; i < 4; i++) {
		ring->efd[i] = eventfd(0, EFD_CLOEXEC);
		if (ring->efd[i] < 0)
			return -errno;
	}
	return 0;
}

const struct ipc_transport ipc_shm_eventfd = {
	.name = "shm-eventfd",
	.desc = "POSIX shm ring, eventfd doorbell, rung only for a sleeper",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY | IPC_CAP_SPIN | IPC_CAP_SHM,
	.setup = ef_setup,
	.attach = shm_ring_attach,
	.send = shm_ring_send,
	.recv = shm_ring_recv,
	.cleanup = shm_ring_cleanup,
};
