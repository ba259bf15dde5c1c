/* SPDX-License-Identifier: MIT */
/*
 * POSIX shared memory + POSIX semaphores, the study's design: per
 * direction a "free" semaphore counting empty slots and a "full" one
 * counting frames. glibc's sem_post only enters the kernel when someone
 * sleeps in sem_wait, so this is closer to shm-futex than the study's 2011
 * figures suggest; measure, don't assume.
 *
 * Spin-then-block: sem_trywait for spin_ns, then sem_wait.
 */
#include "shm_ring.h"

#include <errno.h>

static int sem_take(struct shm_ring *r, sem_t *s)
{
	uint64_t spin = 0;

	if (r->p->wait == IPC_WAIT_SPIN) {
		do {
			if (!sem_trywait(s))
				return 0;
			ipc_cpu_relax();
		} while (ipc_spin_more(r->p, &spin));
	}
	while (sem_wait(s))
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int ss_wait_space(struct shm_ring *r, struct shm_ring_dir *d)
{
	return sem_take(r, &d->free);
}

static void ss_published(struct shm_ring *r, struct shm_ring_dir *d)
{
	(void)r;
	sem_post(&d->full);
}

static int ss_wait_data(struct shm_ring *r, struct shm_ring_dir *d)
{
	return sem_take(r, &d->full);
}

static void ss_consumed(struct shm_ring *r, struct shm_ring_dir *d)
{
	(void)r;
	sem_post(&d->free);
}

static const struct shm_ring_ops ss_ops = {
	.wait_space = ss_wait_space,
	.published = ss_published,
	.wait_data = ss_wait_data,
	.consumed = ss_consumed,
};

static int ss_setup(struct ipc_chan *c)
{
	return shm_ring_setup(c, &ss_ops);
}

const struct ipc_transport ipc_shm_sem = {
	.name = "shm-sem",
	.desc = "POSIX shm + POSIX semaphores free/full (the study's)",
	.caps = IPC_CAP_SYNC | IPC_CAP_NOTIFY | IPC_CAP_SPIN | IPC_CAP_SHM,
	.setup = ss_setup,
	.attach = shm_ring_attach,
	.send = shm_ring_send,
	.recv = shm_ring_recv,
	.cleanup = shm_ring_cleanup,
};
