/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory channel behind the shm-* mechanisms: a POSIX shm
 * object holding, per direction, a ring of fixed-size slots. One producer
 * and one consumer per direction. How a side waits for a free slot or for
 * a frame is what tells the mechanisms apart:
 *  - shm-sem: POSIX semaphores (free, full), as the study did;
 *  - shm-futex: head/tail counters and a futex on them, woken only when a
 *    "waiting" flag says the peer sleeps;
 *  - shm-eventfd: the same counters, with an eventfd as the doorbell.
 */
#ifndef SHMLOG_BENCH_SHM_RING_H
#define SHMLOG_BENCH_SHM_RING_H

#include <semaphore.h>

#include "ipc.h"

struct shm_ring_dir {
	/* Producer's line: frames published so far. */
	_Alignas(64) _Atomic uint32_t head;
	_Atomic uint32_t cons_waiting; /* consumer sleeps on head */
	/* Consumer's line: frames consumed so far. */
	_Alignas(64) _Atomic uint32_t tail;
	_Atomic uint32_t prod_waiting; /* producer sleeps on tail */
	/* shm-sem only; own lines too. */
	_Alignas(64) sem_t full;
	_Alignas(64) sem_t free;
};

struct shm_ring_hdr {
	struct shm_ring_dir dir[2]; /* [0] client to server, [1] back */
	uint32_t nslots;
	uint64_t slot_size; /* 8-byte length + frame, cache-line rounded */
};

struct shm_ring;

/* How one mechanism waits and wakes. */
struct shm_ring_ops {
	int (*wait_space)(struct shm_ring *r, struct shm_ring_dir *d);
	void (*published)(struct shm_ring *r, struct shm_ring_dir *d);
	int (*wait_data)(struct shm_ring *r, struct shm_ring_dir *d);
	void (*consumed)(struct shm_ring *r, struct shm_ring_dir *d);
};

struct shm_ring {
	const struct shm_ring_ops *ops;
	const struct ipc_params *p;
	struct shm_ring_hdr *h;
	size_t maplen;
	unsigned char *slots[2];
	int out, in; /* direction indexes for this process */
	uint32_t head, tail; /* our private copies of what we own */
	int efd[4]; /* shm-eventfd: [dir * 2 + 0] data, [dir * 2 + 1] space */
};

/* Map a fresh POSIX shm object sized for c->p (parent, before fork). The
 * name is unlinked at once: both children inherit the mapping. */
int shm_ring_setup(struct ipc_chan *c, const struct shm_ring_ops *ops);
int shm_ring_attach(struct ipc_chan *c, bool server);
int shm_ring_send(struct ipc_chan *c, const void *buf, size_t len);
ssize_t shm_ring_recv(struct ipc_chan *c, void *buf, size_t cap);
void shm_ring_cleanup(struct ipc_chan *c);

/* Counter-based waiting (futex, eventfd): block until *word != v. */
typedef void (*shm_bell_wait_fn)(struct shm_ring *r, _Atomic uint32_t *word,
				 uint32_t v, int bell);
typedef void (*shm_bell_wake_fn)(struct shm_ring *r, _Atomic uint32_t *word,
				 int bell);
void shm_ring_wait_change(struct shm_ring *r, _Atomic uint32_t *word,
			  uint32_t v, _Atomic uint32_t *waiting, int bell,
			  shm_bell_wait_fn wait);
int shm_ring_dir_index(struct shm_ring *r, struct shm_ring_dir *d);

#endif
