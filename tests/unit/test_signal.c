/* SPDX-License-Identifier: MIT */
/*
 * A signal handler that logs while the same thread is in the middle of a
 * write (interrupted at a test point): the nested record goes to a shared
 * lane and both records come out whole; with no shared lane the nested
 * write is refused with -EBUSY and counted, and nothing is damaged.
 * The same for a printf-style call whose values the macro stored (the
 * typed path, which marks the lane busy as shmlog_write_n()'s leaf does)
 * interrupted inside its append by a handler whose write takes the leaf,
 * and one interrupted inside the switch its record needed.
 * And both again with the handler writing through another handle, of
 * another buffer, that shares the thread's lane slot with the first.
 */
#include <signal.h>

#include "internal.h"
#include "test.h"

static shmlog_t *h;
static int nested_err = 1;

static void on_usr1(int sig)
{
	(void)sig;
	nested_err = shmlog_write(h, SHMLOG_ERROR, "sig", "from the handler");
}

static void raise_at_1(int point)
{
	if (point == 1) {
		shmlog__testpoint_hook = NULL; /* once */
		raise(SIGUSR1);
	}
}

static void raise_at_3(int point)
{
	if (point == 3) {
		shmlog__testpoint_hook = NULL; /* once */
		raise(SIGUSR1);
	}
}

static void raise_at_11(int point)
{
	if (point == 11) {
		shmlog__testpoint_hook = NULL; /* once */
		raise(SIGUSR1);
	}
}

/* Read buffer @b back: @mains records tagged "main" (with @main_fmt,
 * the n-th says main_fmt with n, in order) and @sigs from the handler,
 * whole; nothing else. */
static void read_back(const char *b, const char *main_fmt, int mains,
		      int sigs)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	int m = 0, s = 0;
	while (shmlog_reader_next(r, &rec, NULL) == SHMLOG_EV_RECORD) {
		char want[64] = "";
		if (main_fmt)
			snprintf(want, sizeof(want), main_fmt, m);
		if (!strcmp(rec.tag, "main") &&
		    (!main_fmt || !strcmp(rec.msg, want)))
			m++;
		else if (!strcmp(rec.tag, "sig") &&
			 !strcmp(rec.msg, "from the handler"))
			s++;
		else
			CHECK(!"unexpected record");
	}
	CHECK_EQ(m, mains);
	CHECK_EQ(s, sigs);
	shmlog_reader_close(r);
}

/* A buffer of 1 MiB and @lanes lanes, called @name, opened into h. */
static const char *buffer_for_h(const char *name, unsigned lanes)
{
	const char *b = test_buffer(name);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 1024 * 1024;
	o.lanes = lanes;
	REQUIRE(shmlog_create(b, &o) == 0);
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	return b;
}

/* @ex: the interrupted write goes through shmlog_write_ex(), whose own
 * inline append (not shmlog_write_n()'s leaf) must mark the lane busy
 * too. */
static void run(unsigned lanes, int want_err, bool ex)
{
	const char *b = buffer_for_h("signal", lanes);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "main", "first"), 0);
	shmlog__testpoint_hook = raise_at_3;
	CHECK_EQ(ex ? shmlog_write_ex(h, 0, 0, SHMLOG_INFO, "main",
				      "interrupted", 11)
		    : shmlog_write(h, SHMLOG_INFO, "main", "interrupted"),
		 0);
	CHECK_EQ(nested_err, want_err);
	CHECK_EQ(shmlog_write(h, SHMLOG_INFO, "main", "after"), 0);

	read_back(b, NULL, 3, want_err ? 0 : 1);
	struct shmlog_info in;
	CHECK_EQ(shmlog_stat(b, &in), 0);
	CHECK_EQ(in.dropped, want_err ? 1 : 0);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A typed printf-style call interrupted after its reservation (test
 * point 1): the handler's shmlog_write() must not enter the lane. */
static void run_typed(void)
{
	const char *b = buffer_for_h("signal-typed", 16);
	nested_err = 1;
	for (int i = 0; i < 3; i++) {
		/* the first call prepares the site; later ones store values */
		if (i == 2)
			shmlog__testpoint_hook = raise_at_1;
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "main", "call %d of %s", i,
			      "three");
	}
	shmlog__testpoint_hook = NULL;
	CHECK_EQ(nested_err, 0);

	read_back(b, "call %d of three", 3, 1);
	shmlog_close(h);
	shmlog_remove(b);
}

/* A typed call whose record takes a new chunk, interrupted inside the
 * switch (test point 11: the full chunk closed, the next not taken yet):
 * the handler's shmlog_write() takes a shared lane, the typed call is
 * made again in the new chunk, and every record comes out whole, in
 * order. */
static void run_typed_switch(void)
{
	const char *b = buffer_for_h("signal-typed-switch", 16);
	nested_err = 1;
	int i = 0;
	/* a chunk holds a few hundred of these: the first switch comes long
	 * before the buffer would wrap */
	for (; i < 5000 && nested_err; i++) {
		if (i == 2) /* the site ready, the lane's first chunk taken */
			shmlog__testpoint_hook = raise_at_11;
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "main", "call %d of %s", i,
			      "many");
	}
	shmlog__testpoint_hook = NULL;
	CHECK_EQ(nested_err, 0);
	CHECK(i > 3 && i < 5000);
	read_back(b, "call %d of many", i, 1);
	shmlog_close(h);
	shmlog_remove(b);
}

/* The handler writes through @hs, another handle whose id shares the
 * thread's slot with @h's (writer.c keeps TLS_SLOTS = 4 slots, by id):
 * it must not trade the slot, and so @h's lane, away from the call it
 * interrupted (a leaf at test point 3, or a typed call at point 1). Its
 * record goes to a shared lane of its own buffer; @h keeps its lane. */
static shmlog_t *hs;

static void on_usr2(int sig)
{
	(void)sig;
	nested_err = shmlog_write(hs, SHMLOG_ERROR, "sig", "from the handler");
}

/* Lanes of buffer @b owned by this thread. */
static unsigned lanes_mine(const char *b)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	unsigned n = 0;
	for (unsigned k = 0; k < shmlog_reader_lanes(r); k++) {
		struct shmlog_lane_stats st;
		REQUIRE(shmlog_reader_lane_stats(r, k, &st) == 0);
		n += st.owner_tid == (uint32_t)gettid() && st.owner_alive;
	}
	shmlog_reader_close(r);
	return n;
}

static void run_colliding(bool typed)
{
	const char *b = test_buffer("signal-own"), *bs = test_buffer("signal-other");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 1024 * 1024;
	o.lanes = 16;
	REQUIRE(shmlog_create(b, &o) == 0);
	REQUIRE(shmlog_create(bs, &o) == 0);
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	shmlog_t *pad[3];
	for (int i = 0; i < 3; i++) /* ids in between */
		REQUIRE(shmlog_open(bs, 0, &pad[i]) == 0);
	REQUIRE(shmlog_open(bs, 0, &hs) == 0); /* h's id + 4: h's slot */
	signal(SIGUSR1, on_usr2);
	nested_err = 1;
	for (int i = 0; i < 3; i++) {
		if (i == 2)
			shmlog__testpoint_hook = typed ? raise_at_1 : raise_at_3;
		if (typed)
			SHMLOG_LOG_TO(h, SHMLOG_INFO, "main", "call %d of %s",
				      i, "three");
		else
			CHECK_EQ(shmlog_print(h, SHMLOG_INFO, "main",
					      "call %d of three", i),
				 0);
	}
	shmlog__testpoint_hook = NULL;
	signal(SIGUSR1, on_usr1);
	CHECK_EQ(nested_err, 0);
	/* before any other write: the interrupted call's lane is still h's */
	CHECK_EQ(lanes_mine(b), 1);
	CHECK_EQ(lanes_mine(bs), 0); /* the handler's record: a shared lane */
	read_back(b, "call %d of three", 3, 0);
	read_back(bs, NULL, 0, 1);
	shmlog_close(hs);
	for (int i = 0; i < 3; i++)
		shmlog_close(pad[i]);
	shmlog_close(h);
	shmlog_remove(b);
	shmlog_remove(bs);
}

int main(void)
{
	signal(SIGUSR1, on_usr1);
	for (int ex = 0; ex < 2; ex++) {
		run(16, 0, ex); /* 2 shared lanes */
		run(4, -EBUSY, ex); /* none */
	}
	run_typed();
	run_typed_switch();
	run_colliding(false);
	run_colliding(true);
	return test_done("test_signal");
}
