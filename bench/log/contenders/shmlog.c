/* SPDX-License-Identifier: MIT */
/*
 * shmlog itself, with each of the clocks that the 2012 LKML shared-memory
 * logger RFC showed to matter: the default (TSC where invariant),
 * CLOCK_REALTIME (the vDSO call the RFC's gettimeofday() made) and CLOCK_MONOTONIC_COARSE. Each variant gets its own
 * private buffer, created with the library's default size and lanes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#include "shmlog.h"

static int setup_clock(struct lb_ctx *c, int clock, const char *suffix)
{
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.clock = clock;
	snprintf(c->arg, sizeof(c->arg), "bench-%d-%s", (int)getpid(), suffix);
	shmlog_remove(c->arg); /* a leftover of a killed run */
	int err = shmlog_create(c->arg, &o);
	if (err < 0) {
		snprintf(c->why, sizeof(c->why), "shmlog_create(%.64s): %s",
			 c->arg, shmlog_strerror(err));
		return -1;
	}
	struct shmlog_info info;
	if (shmlog_stat(c->arg, &info) == 0)
		snprintf(c->note, sizeof(c->note),
			 "buffer %llu KiB, %u lanes, clock %d",
			 (unsigned long long)(info.capacity >> 10), info.lanes,
			 info.clock);
	return 0;
}

static int setup_default(struct lb_ctx *c)
{
	return setup_clock(c, SHMLOG_CLOCK_DEFAULT, "default");
}

static int setup_realtime(struct lb_ctx *c)
{
	return setup_clock(c, SHMLOG_CLOCK_REALTIME, "realtime");
}

static int setup_coarse(struct lb_ctx *c)
{
	return setup_clock(c, SHMLOG_CLOCK_COARSE, "coarse");
}

static void teardown(struct lb_ctx *c)
{
	shmlog_remove(c->arg);
}

static void *sl_open(const char *arg, char *err, size_t errlen)
{
	shmlog_t *h;
	int e = shmlog_open(arg, 0, &h);
	if (e < 0) {
		snprintf(err, errlen, "shmlog_open(%s): %s", arg,
			 shmlog_strerror(e));
		return NULL;
	}
	return h;
}

static long sl_write(void *w, const struct lb_msg *m)
{
	int e = shmlog_write_n(w, m->prio, m->tag, m->msg, m->len);
	return e < 0 ? e : 0;
}

static void sl_close(void *w)
{
	shmlog_close(w);
}

/* printf-style calls with three arguments, the same call for every record
 * (the source message's tag and priority; its text is not used): stored
 * as the format's id and the values, formatted by whoever reads
 * (SHMLOG_LOG_TO: the SHMLOG_x macros' deferred call, through a handle of
 * one's own), or formatted by the caller with vsnprintf (shmlog_print()). */
static long sl_printf_deferred(void *w, const struct lb_msg *m)
{
	/* what SHMLOG_LOG_TO() expands to, its result kept for the count */
	int e;
	SHMLOG__PRINT_AS(e, w, 0, m->prio, m->tag,
			 "request %d from %s took %.3f ms", (int)m->len,
			 "10.1.2.3", (double)m->len * 0.125)
	return e < 0 ? e : 0;
}

static long sl_printf_caller(void *w, const struct lb_msg *m)
{
	int e = shmlog_print(w, m->prio, m->tag,
			     "request %d from %s took %.3f ms", (int)m->len,
			     "10.1.2.3", (double)m->len * 0.125);
	return e < 0 ? e : 0;
}

#define SHMLOG_CONTENDER(var, nm, wh, setupfn, writefn, fl)                    \
	const struct lb_contender var = {                                      \
	    .name = nm,                                                        \
	    .what = wh,                                                        \
	    .flags = LB_SHMLOG | (fl),                                         \
	    .setup = setupfn,                                                  \
	    .teardown = teardown,                                              \
	    .open = sl_open,                                                   \
	    .write = writefn,                                                  \
	    .close = sl_close,                                                 \
	}

/* Each writer process on a buffer of its own, made when it opens: the
 * same calls as lb_shmlog_default's, nothing shared between processes.
 * Not in the contenders' list: plan.c runs it beside shmlog's process
 * runs in the scaling part, as the yardstick of what sharing a buffer
 * costs (the machine takes the rest). One handle per process. */
static char own_name[96];

static int setup_own(struct lb_ctx *c)
{
	snprintf(c->arg, sizeof(c->arg), "bench-%d-own", (int)getpid());
	snprintf(c->note, sizeof(c->note),
		 "a default buffer per writer process");
	return 0;
}

static void teardown_own(struct lb_ctx *c)
{
	(void)c;
}

static void *sl_open_own(const char *arg, char *err, size_t errlen)
{
	snprintf(own_name, sizeof(own_name), "%s-%d", arg, (int)getpid());
	shmlog_remove(own_name); /* a leftover of a killed run */
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	int e = shmlog_create(own_name, &o);
	if (e < 0) {
		snprintf(err, errlen, "shmlog_create(%s): %s", own_name,
			 shmlog_strerror(e));
		return NULL;
	}
	void *h = sl_open(own_name, err, errlen);
	if (!h)
		shmlog_remove(own_name);
	return h;
}

static void sl_close_own(void *w)
{
	shmlog_close(w);
	shmlog_remove(own_name);
}

const struct lb_contender lb_shmlog_own = {
    .name = "shmlog-own",
    .what = "shmlog_write_n(), default clock, each writer process on a "
	    "buffer of its own",
    .flags = LB_SHMLOG | LB_NO_SWEEP,
    .setup = setup_own,
    .teardown = teardown_own,
    .open = sl_open_own,
    .write = sl_write,
    .close = sl_close_own,
};

SHMLOG_CONTENDER(lb_shmlog_default, "shmlog",
		 "shmlog_write_n(), default clock (TSC if invariant)",
		 setup_default, sl_write, 0);
SHMLOG_CONTENDER(lb_shmlog_realtime, "shmlog-realtime",
		 "shmlog_write_n(), CLOCK_REALTIME", setup_realtime, sl_write,
		 LB_NO_SCALING);
SHMLOG_CONTENDER(lb_shmlog_coarse, "shmlog-coarse",
		 "shmlog_write_n(), CLOCK_MONOTONIC_COARSE", setup_coarse,
		 sl_write, LB_NO_SCALING);
SHMLOG_CONTENDER(lb_shmlog_printf, "shmlog-printf",
		 "printf-style, 3 values, formatted by the reader "
		 "(SHMLOG_LOG_TO, as the SHMLOG_x macros)",
		 setup_default, sl_printf_deferred,
		 LB_NO_SCALING | LB_NO_SWEEP);
SHMLOG_CONTENDER(lb_shmlog_vsnprintf, "shmlog-vsnprintf",
		 "printf-style, 3 values, formatted by the caller "
		 "(shmlog_print(): vsnprintf)",
		 setup_default, sl_printf_caller, LB_NO_SCALING | LB_NO_SWEEP);
