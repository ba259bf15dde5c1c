/* SPDX-License-Identifier: MIT */
#include "shm_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t round_up(uint64_t n, uint64_t a)
{
	return (n + a - 1) / a * a;
}

int shm_ring_setup(struct ipc_chan *c, const struct shm_ring_ops *ops)
{
	struct shm_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	c->priv = r;
	for (int i = 0; i < 4; i++)
		r->efd[i] = -1;
	r->ops = ops;

	uint32_t nslots = c->p.depth < 2 ? 2 : c->p.depth;
	uint64_t slot = round_up(8 + c->p.max_frame, 64);
	uint64_t hdr = round_up(sizeof(struct shm_ring_hdr), 4096);
	r->maplen = hdr + 2 * (size_t)slot * nslots;

	char name[64];
	snprintf(name, sizeof(name), "/shmlog-bench-ipc-%d", (int)getpid());
	shm_unlink(name); /* a leftover of a killed run */
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	shm_unlink(name);
	/* fallocate, not just ftruncate: a full /dev/shm is an error here,
	 * not a SIGBUS in a child later. */
	int e = ftruncate(fd, (off_t)r->maplen) ? errno
		: posix_fallocate(fd, 0, (off_t)r->maplen);
	void *m = e ? MAP_FAILED
		    : mmap(NULL, r->maplen, PROT_READ | PROT_WRITE, MAP_SHARED,
			   fd, 0);
	if (!e && m == MAP_FAILED)
		e = errno;
	close(fd);
	if (e)
		return -e;
	r->h = m;
	r->h->nslots = nslots;
	r->h->slot_size = slot;
	r->slots[0] = (unsigned char *)m + hdr;
	r->slots[1] = r->slots[0] + (size_t)slot * nslots;
	for (int d = 0; d < 2; d++) {
		if (sem_init(&r->h->dir[d].full, 1, 0) ||
		    sem_init(&r->h->dir[d].free, 1, nslots))
			return -errno;
	}
	return 0;
}

int shm_ring_attach(struct ipc_chan *c, bool server)
{
	struct shm_ring *r = c->priv;

	r->p = &c->p;
	r->out = server ? 1 : 0;
	r->in = server ? 0 : 1;
	/* Touch our slots now so the measured phase takes no page fault. */
	memset(r->slots[r->out], 0, (size_t)r->h->slot_size * r->h->nslots);
	volatile unsigned char sink = 0;
	for (size_t i = 0; i < (size_t)r->h->slot_size * r->h->nslots;
	     i += 4096)
		sink ^= r->slots[r->in][i];
	(void)sink;
	return 0;
}

int shm_ring_send(struct ipc_chan *c, const void *buf, size_t len)
{
	struct shm_ring *r = c->priv;
	struct shm_ring_dir *d = &r->h->dir[r->out];

	if (len + 8 > r->h->slot_size)
		return -EMSGSIZE;
	int e = r->ops->wait_space(r, d);
	if (e)
		return e;
	unsigned char *s = r->slots[r->out] +
			   (size_t)(r->head % r->h->nslots) * r->h->slot_size;
	uint64_t l = len;
	memcpy(s, &l, 8);
	memcpy(s + 8, buf, len);
	r->head++;
	r->ops->published(r, d);
	return 0;
}

ssize_t shm_ring_recv(struct ipc_chan *c, void *buf, size_t cap)
{
	struct shm_ring *r = c->priv;
	struct shm_ring_dir *d = &r->h->dir[r->in];

	int e = r->ops->wait_data(r, d);
	if (e)
		return e;
	const unsigned char *s = r->slots[r->in] +
		(size_t)(r->tail % r->h->nslots) * r->h->slot_size;
	uint64_t l;
	memcpy(&l, s, 8);
	/* The peer's memory: never trust a length read from it. */
	if (l > cap || l + 8 > r->h->slot_size)
		return -EMSGSIZE;
	memcpy(buf, s + 8, (size_t)l);
	r->tail++;
	r->ops->consumed(r, d);
	return (ssize_t)l;
}

void shm_ring_cleanup(struct ipc_chan *c)
{
	struct shm_ring *r = c->priv;

	if (!r)
		return;
	if (r->h) {
		for (int d = 0; d < 2; d++) {
			sem_destroy(&r->h->dir[d].full);
			sem_destroy(&r->h->dir[d].free);
		}
		munmap(r->h, r->maplen);
	}
	for (int i = 0; i < 4; i++)
		ipc_close(&r->efd[i]);
	free(r);
	c->priv = NULL;
}

int shm_ring_dir_index(struct shm_ring *r, struct shm_ring_dir *d)
{
	return d == &r->h->dir[0] ? 0 : 1;
}

/*
 * Wait until *word moves away from v. Spin first if asked (a load per
 * pause, the clock every 64), then announce ourselves in *waiting and
 * sleep. The store to *waiting and the producer's store to *word are both
 * seq_cst, as are the loads that follow each: whichever side comes second
 * sees the other (Dekker), so the peer either finds the flag and wakes us,
 * or we find the new value and do not sleep.
 */
void shm_ring_wait_change(struct shm_ring *r, _Atomic uint32_t *word,
			  uint32_t v, _Atomic uint32_t *waiting, int bell,
			  shm_bell_wait_fn wait)
{
	if (atomic_load_explicit(word, memory_order_acquire) != v)
		return;
	uint64_t spin = 0;
	while (ipc_spin_more(r->p, &spin)) {
		for (int i = 0; i < 64; i++) {
			ipc_cpu_relax();
			if (atomic_load_explicit(word, memory_order_acquire) !=
			    v)
				return;
		}
	}
	for (;;) {
		atomic_store(waiting, 1);
		if (atomic_load(word) != v)
			break;
		wait(r, word, v, bell);
	}
	atomic_store_explicit(waiting, 0, memory_order_relaxed);
}
