/* SPDX-License-Identifier: MIT */
/*
 * Not a logger: the floor of one (floor.h), run as a writer process. Each
 * writer thread reads the clock shmlog's default buffer uses and copies
 * the record into a ring of its own, of that buffer's capacity, in its
 * own memory. Nothing is shared between writers, so what N of them keep
 * of one writer's records per CPU-second is what the machine allows N
 * processes (its caches, its host's neighbours, the bench's own wake-ups),
 * the yardstick for shmlog's figure in the scaling part. Not in the
 * contenders' list: plan.c runs it in the scaling part only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "floor.h"
#include "log.h"

#include "shmlog.h"

/* A writer thread's ring, made on its first record (the warm-up). */
struct floor_ring {
	unsigned char *ring;
	size_t cap, pos;
	unsigned char hdr[LB_FLOOR_HDR];
};
static _Thread_local struct floor_ring mine;

struct floor_cfg {
	int clock;
	size_t cap;
};

/* The default buffer's clock and capacity: a buffer made to ask, and
 * removed. */
static int fl_setup(struct lb_ctx *c)
{
	char name[64];
	snprintf(name, sizeof(name), "bench-%d-floor", (int)getpid());
	shmlog_remove(name);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	struct shmlog_info info;
	int err = shmlog_create(name, &o);
	if (err == 0)
		err = shmlog_stat(name, &info);
	shmlog_remove(name);
	if (err < 0) {
		snprintf(c->why, sizeof(c->why), "a default buffer: %s",
			 shmlog_strerror(err));
		return -1;
	}
	snprintf(c->arg, sizeof(c->arg), "%d %llu", info.clock,
		 (unsigned long long)info.capacity);
	snprintf(c->note, sizeof(c->note), "ring %llu KiB per writer, clock %d",
		 (unsigned long long)(info.capacity >> 10), info.clock);
	return 0;
}

static void fl_teardown(struct lb_ctx *c)
{
	(void)c;
}

static void *fl_open(const char *arg, char *err, size_t errlen)
{
	struct floor_cfg *f = calloc(1, sizeof(*f));
	unsigned long long cap = 0;
	if (!f || sscanf(arg, "%d %llu", &f->clock, &cap) != 2 ||
	    cap < 2 * (LB_FLOOR_HDR + 255 + LB_MSG_MAX)) {
		snprintf(err, errlen, "floor: bad argument '%s'", arg);
		free(f);
		return NULL;
	}
	f->cap = (size_t)cap;
	return f;
}

static long fl_write(void *w, const struct lb_msg *m)
{
	const struct floor_cfg *f = w;
	struct floor_ring *r = &mine;
	if (LB_UNLIKELY(!r->ring)) {
		r->ring = calloc(1, f->cap);
		if (!r->ring)
			return -ENOMEM;
		r->cap = f->cap;
	}
	lb_floor_append(f->clock, r->hdr, m, r->ring, r->cap, &r->pos);
	return 0;
}

/* The thread that wrote frees its ring: a process's threads end before
 * close(), and the process exits right after it. */
static void fl_close(void *w)
{
	free(mine.ring);
	mine = (struct floor_ring){0};
	free(w);
}

const struct lb_contender lb_floor = {
    .name = "floor",
    .what = "not a logger: a clock read and a copy of the record into "
	    "each writer's own memory",
    .flags = LB_NO_SWEEP,
    .setup = fl_setup,
    .teardown = fl_teardown,
    .open = fl_open,
    .write = fl_write,
    .close = fl_close,
};
