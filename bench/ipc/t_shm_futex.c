/* SPDX-License-Identifier: MIT */
/*
 * Shared memory + futex: the ring's head and tail counters are the futex
 * words. A side only makes a syscall to sleep, and the peer only makes one
 * to wake it when the side's "waiting" flag is up: with both sides busy, a
 * message costs no syscall at all.
 */
#include "shm_ring.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Shared (not FUTEX_PRIVATE) futexes: the words live in a mapping shared
 * by two processes. */
static void futex_bell_wait(struct shm_ring *r, _Atomic uint32_t *word,
			    uint32_t v, int bell)
{
	(void)r;
	(void)bell;
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, v, NULL, NULL, 0);
}

static void futex_bell_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static int fx_wait_space(struct shm_ring *r, struct shm_ring_dir *d)
{
	/* Full means tail == head - nslots; wait for tail to move. */
	uint32_t full_tail = r->head - r->h->nslots;
	shm_ring_wait_change(r, &d->tail, full_tail, &d->prod_waiting, 0,
			     futex_bell_wait);
	return 0;
}

static void fx_published(struct shm_ring *r, struct shm_ring_dir *d)
{
	atomic_store(&d->head, r->head);
	if (atomic_load(&d->cons_waiting))
		futex_bell_wake(&d->head);
}

static int fx_wait_data(struct shm_ring *r, struct shm_ring_dir *d)
{
	shm_ring_wait_change(r, &d->head, r->tail, &d->cons_waiting, 0,
			     futex_bell_wait);
	return 0;
}

static void fx_consumed(struct shm_ring *r, struct shm_ring_dir *d)
{
	atomic_store(&d->tail, r->tail);
	if (atomic_load(&d->prod_waiting))
		futex_bell_wake(&d->tail);
}

static const struct shm_ring_ops fx_ops = {
	.wait_space = fx_wait_space,
	.published = fx_published,
	.wait_data = fx_wait_data,
	.consumed = fx_consumed,
};

static int fx_setup(struct ipc_chan *c)
{
	return shm_ring_setup(c, &fx_ops);
}

const struct ipc_transport ipc_shm_futex = {
	.name = "shm-futex",
	.desc = "POSIX shm ring, futex on head/tail, wake only a sleeper",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY | IPC_CAP_SPIN | IPC_CAP_SHM,
	.setup = fx_setup,
	.attach = shm_ring_attach,
	.send = shm_ring_send,
	.recv = shm_ring_recv,
	.cleanup = shm_ring_cleanup,
};
