/* SPDX-License-Identifier: MIT */
/*
 * The design of the 2012 LKML RFC "Android Logger vs. Shared Memory
 * FIGHT!", a shared-memory logger, rebuilt from its description: a 64 KiB POSIX shared
 * memory object holding a control block and a byte ring, one semaphore
 * shared by every writer process, gettimeofday() on each write (stored
 * nowhere, as in the RFC: it stands for the logger's timestamp) and the
 * message bytes only, no header. When the ring wraps, the oldest bytes are
 * overwritten and the start moves past the end.
 *
 * The RFC used a System V semaphore in its text and sem_t in its code; we
 * use a process-shared POSIX sem_t in the segment, as its code did.
 */
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "log.h"

#define SEED_SIZE (64 * 1024)

struct seed_area {
	sem_t lock;
	size_t start, end; /* oldest byte, next byte to write */
	size_t cap;	   /* bytes of data[] */
	int wrapped;
	char data[];
};

static struct seed_area *seed_map(const char *name, int oflag, char *err,
				  size_t errlen)
{
	int fd = shm_open(name, oflag, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "shm_open(%s): %s", name,
			 strerror(errno));
		return NULL;
	}
	if ((oflag & O_CREAT) && ftruncate(fd, SEED_SIZE) < 0) {
		snprintf(err, errlen, "ftruncate: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	/* MAP_POPULATE where the RFC had MAP_LOCKED: same effect on the
	 * measurement (no faults in the loop), no RLIMIT_MEMLOCK needed. */
	void *p = mmap(NULL, SEED_SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "mmap: %s", strerror(errno));
		return NULL;
	}
	return p;
}

static int seed_setup(struct lb_ctx *c)
{
	snprintf(c->arg, sizeof(c->arg), "/shmlog-bench-rfc-%d",
		 (int)getpid());
	shm_unlink(c->arg);
	struct seed_area *a =
	    seed_map(c->arg, O_CREAT | O_EXCL | O_RDWR, c->why, sizeof(c->why));
	if (!a)
		return -1;
	if (sem_init(&a->lock, 1, 1) < 0) {
		snprintf(c->why, sizeof(c->why), "sem_init: %s",
			 strerror(errno));
		munmap(a, SEED_SIZE);
		shm_unlink(c->arg);
		return -1;
	}
	a->cap = SEED_SIZE - sizeof(*a);
	munmap(a, SEED_SIZE);
	snprintf(c->note, sizeof(c->note), "64 KiB ring, message bytes only");
	return 0;
}

static void seed_teardown(struct lb_ctx *c)
{
	shm_unlink(c->arg);
}

static void *seed_open(const char *arg, char *err, size_t errlen)
{
	return seed_map(arg, O_RDWR, err, errlen);
}

/* Copy @len bytes at the ring's end, in two pieces when it wraps. */
static void seed_put(struct seed_area *a, const char *p, size_t len)
{
	size_t room = a->cap - a->end;
	if (len >= room) {
		memcpy(a->data + a->end, p, room);
		memcpy(a->data, p + room, len - room);
		a->end = len - room;
		a->wrapped = 1;
	} else {
		memcpy(a->data + a->end, p, len);
		a->end += len;
	}
	if (a->wrapped)
		a->start = a->end + 1 == a->cap ? 0 : a->end + 1;
}

static long seed_write(void *w, const struct lb_msg *m)
{
	struct seed_area *a = w;
	struct timeval tv;
	if (m->len >= a->cap)
		return -EMSGSIZE;
	while (sem_wait(&a->lock) < 0)
		if (errno != EINTR)
			return -errno;
	gettimeofday(&tv, NULL);
	seed_put(a, m->msg, m->len);
	sem_post(&a->lock);
	return 0;
}

static void seed_close(void *w)
{
	munmap(w, SEED_SIZE);
}

const struct lb_contender lb_seed = {
    .name = "rfc-shm-sem",
    .what = "the 2012 RFC's logger: 64 KiB shm ring, shared semaphore, "
	    "gettimeofday(), message only",
    .setup = seed_setup,
    .teardown = seed_teardown,
    .open = seed_open,
    .write = seed_write,
    .close = seed_close,
};
