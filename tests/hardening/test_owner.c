/* SPDX-License-Identifier: MIT */
/*
 * Lane ownership across pid namespaces, pid reuse, crashes and fork.
 *
 * A lane belongs to the writer whose open file description holds the
 * lane's lock (src/lane.c); the pid and tid in the owner word are only
 * what the writer says. These tests put writers where pids lie:
 *  - writers in their own pid namespace (`unshare --pid --fork`, as two
 *    containers sharing /dev/shm) and on the host, all alive: nobody takes
 *    anybody's lane, and every record comes back whole;
 *  - a namespaced writer that is pid 1 dies: a host writer takes its lane
 *    over; a host writer dies: a namespaced one takes its lane over;
 *  - pid reuse: a dead writer's pid and tid now belong to a live process
 *    (a second namespace's pid 1, and a forged owner word naming a live
 *    process): the lane is taken over all the same;
 *  - SIGKILLed writers holding every lane: new writers take all of them;
 *  - fork: a child does not inherit its parent's lanes, and does not keep
 *    them alive once the parent is dead;
 *  - liveness as readers see it, through a read-only descriptor.
 * The namespace cases need unshare(1) and the right to create a pid
 * namespace (root); without them they are skipped with a message.
 *
 * usage: test_owner                      (the tests)
 *        test_owner --role ROLE BUF ...  (a writer, run inside unshare)
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "hostile.h"
#include "internal.h"

static const char *self_exe;

/* ---- writers that hold their lanes until told ------------------------ */

struct holder {
	const char *buf;
	unsigned w; /* self-describing writer id */
	uint64_t from, n; /* records written before the barrier */
	uint64_t more; /* and after it */
	pthread_barrier_t *ready; /* all holders wrote their first records */
	pthread_barrier_t *go; /* write the rest */
	pthread_barrier_t *done; /* hold the lane until this opens */
	shmlog_t *h;
	long failed;
};

static void *holder_main(void *arg)
{
	struct holder *t = arg;
	t->failed += sc_write(t->h, t->w, t->from, (long)t->n);
	if (t->ready)
		pthread_barrier_wait(t->ready);
	if (t->go)
		pthread_barrier_wait(t->go);
	t->failed += sc_write(t->h, t->w, t->from + t->n, (long)t->more);
	if (t->done)
		pthread_barrier_wait(t->done); /* a thread's exit frees its lane */
	return NULL;
}

/* Read every byte of a pipe until a byte arrives or it closes. */
static void wait_byte(int fd)
{
	char c;
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
}

static void send_byte(int fd)
{
	char c = 1;
	while (write(fd, &c, 1) < 0 && errno == EINTR)
		;
}

/* Role "hold" (inside a namespace, or on the host): @nhold threads with
 * writer ids @w0.. take lanes and write @k records each; then "ready" is
 * sent on @out; on "go" from @in they write @k more, and @nextra more
 * threads (ids after them) write @k each, looking for lanes while every
 * exclusive lane is held; then "written" on @out; on "finish" from @in,
 * all close. Exit status: 0, or the number of failed writes of holders
 * (borrowers may be refused: the shared lane is busy). */
static int role_hold(const char *buf, unsigned w0, unsigned nhold,
		     unsigned nextra, uint64_t k, int in, int out)
{
	enum { MAXT = 16 };
	if (nhold + nextra > MAXT)
		return 100;
	shmlog_t *h;
	if (shmlog_open(buf, 0, &h))
		return 101;
	pthread_barrier_t ready, go, done;
	pthread_barrier_init(&ready, NULL, nhold + 1);
	pthread_barrier_init(&go, NULL, nhold + 1);
	pthread_barrier_init(&done, NULL, nhold + 1);
	struct holder t[MAXT];
	pthread_t th[MAXT];
	for (unsigned i = 0; i < nhold; i++) {
		t[i] = (struct holder){.buf = buf, .w = w0 + i, .n = k,
				       .more = k, .ready = &ready, .go = &go,
				       .done = &done, .h = h};
		pthread_create(&th[i], NULL, holder_main, &t[i]);
	}
	pthread_barrier_wait(&ready);
	send_byte(out);
	wait_byte(in);
	for (unsigned i = nhold; i < nhold + nextra; i++) {
		t[i] = (struct holder){.buf = buf, .w = w0 + i, .n = k,
				       .h = h};
		pthread_create(&th[i], NULL, holder_main, &t[i]);
	}
	pthread_barrier_wait(&go);
	for (unsigned i = nhold; i < nhold + nextra; i++)
		pthread_join(th[i], NULL);
	send_byte(out); /* written; the holders still hold their lanes */
	wait_byte(in);
	pthread_barrier_wait(&done);
	long failed = 0;
	for (unsigned i = 0; i < nhold; i++) {
		pthread_join(th[i], NULL);
		failed += t[i].failed;
	}
	shmlog_close(h);
	return failed > 99 ? 99 : (int)failed;
}

/* Role "die": write @k records as writer @w, then exit without closing:
 * the lane's owner word keeps naming us. Inside a namespace we are pid 1
 * with tid 1. */
static int role_die(const char *buf, unsigned w, uint64_t k)
{
	shmlog_t *h;
	if (shmlog_open(buf, 0, &h))
		return 101;
	if (sc_write(h, w, 0, (long)k))
		return 102;
	_exit(0);
}

/* Role "claim": write @k records as writer @w; 0 if every write went
 * into a lane (with one lane and no shared one, a refused claim is a
 * failed write). */
static int role_claim(const char *buf, unsigned w, uint64_t k)
{
	shmlog_t *h;
	if (shmlog_open(buf, 0, &h))
		return 101;
	long failed = sc_write(h, w, 0, (long)k);
	shmlog_close(h);
	return failed ? 102 : 0;
}

static int run_role(int argc, char **argv)
{
	if (argc < 4)
		return 120;
	const char *role = argv[2], *buf = argv[3];
	if (!strcmp(role, "hold") && argc == 10)
		return role_hold(buf, (unsigned)atoi(argv[4]),
				 (unsigned)atoi(argv[5]), (unsigned)atoi(argv[6]),
				 (uint64_t)atoll(argv[7]), atoi(argv[8]),
				 atoi(argv[9]));
	if (!strcmp(role, "die") && argc == 6)
		return role_die(buf, (unsigned)atoi(argv[4]),
				(uint64_t)atoll(argv[5]));
	if (!strcmp(role, "claim") && argc == 6)
		return role_claim(buf, (unsigned)atoi(argv[4]),
				  (uint64_t)atoll(argv[5]));
	return 121;
}

/* ---- running roles in a new pid namespace ----------------------------- */

/* Start this program as @args in a pid namespace of its own (or on the
 * host if !@ns); returns the pid of unshare (or of the child). */
static pid_t spawn_role(bool ns, char *const args[])
{
	char *argv[24];
	int n = 0;
	if (ns) {
		argv[n++] = "unshare";
		argv[n++] = "--pid";
		argv[n++] = "--fork";
		argv[n++] = "--kill-child";
	}
	argv[n++] = (char *)self_exe;
	argv[n++] = "--role";
	for (int i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int run_role_wait(bool ns, char *const args[])
{
	return hw_reap(spawn_role(ns, args));
}

static bool ns_works(void)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int dn = open("/dev/null", O_WRONLY);
		dup2(dn, 2);
		execlp("unshare", "unshare", "--pid", "--fork", "true",
		       (char *)NULL);
		_exit(127);
	}
	return hw_reap(pid) == 0;
}

/* ---- inspecting the lanes --------------------------------------------- */

static shmlog_reader_t *open_reader(const char *b)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	return r;
}

static struct shmlog_lane_stats lane_stats(const char *b, unsigned lane)
{
	shmlog_reader_t *r = open_reader(b);
	struct shmlog_lane_stats st;
	REQUIRE(shmlog_reader_lane_stats(r, lane, &st) == 0);
	shmlog_reader_close(r);
	return st;
}

/* The owner words of every lane, raw (pid << 32 | tid, or 0). */
static void owner_words(const char *b, uint64_t *out, unsigned n)
{
	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(b, 0, &s) == 0);
	REQUIRE(s.fixed.lane_count == n);
	for (unsigned i = 0; i < n; i++)
		out[i] = atomic_load(&seg_lane(&s, i)->owner);
	shmlog__seg_detach(&s);
}

/* Read everything: every record must check out; per writer id, the
 * sequence numbers seen go 0, 1, 2... when @complete says so (a writer
 * with a lane of its own whose records all fit). Returns records read. */
static long read_all_checked(const char *b, unsigned nw, const bool *complete,
			     const uint64_t *expect)
{
	shmlog_reader_t *r = open_reader(b);
	uint64_t next[32] = {0};
	bool order_ok[32];
	for (unsigned i = 0; i < 32; i++)
		order_ok[i] = true;
	long n = 0, bad = 0;
	struct shmlog_record rec;
	int ev;
	for (long guard = 0; guard < 1000000 &&
			     (ev = shmlog_reader_next(r, &rec, NULL)) > 0;
	     guard++) {
		if (ev != SHMLOG_EV_RECORD)
			continue;
		unsigned w;
		uint64_t i;
		if (!sc_check(&rec, &w, &i) || w >= nw) {
			bad++;
			continue;
		}
		if (complete[w] && i != next[w])
			order_ok[w] = false;
		next[w] = i + 1;
		n++;
	}
	CHECK_EQ(bad, 0);
	for (unsigned w = 0; w < nw; w++) {
		if (!complete[w])
			continue;
		if (!order_ok[w] || next[w] != expect[w])
			fprintf(stderr, "writer %u: order %d, %llu records of "
				"%llu\n", w, order_ok[w],
				(unsigned long long)next[w],
				(unsigned long long)expect[w]);
		CHECK(order_ok[w]);
		CHECK_EQ(next[w], expect[w]);
	}
	for (unsigned k = 0; k < shmlog_reader_lanes(r); k++) {
		struct shmlog_lane_stats st;
		CHECK_EQ(shmlog_reader_lane_stats(r, k, &st), 0);
		CHECK(st.read <= st.written);
		CHECK_EQ(st.torn, 0);
	}
	shmlog_reader_close(r);
	return n;
}

/* ---- the tests -------------------------------------------------------- */

/* Writers inside a pid namespace and on the host, all alive: each side's
 * extra threads find every exclusive lane held and must borrow the shared
 * lane, never take a live writer's lane (they used to: a namespaced
 * thread's tid means nothing, or something else, on the host). */
static void test_live_across_namespaces(void)
{
	enum { LANES = 8, NS_HOLD = 3, HOST_HOLD = 4, EXTRA = 2, K = 20 };
	const char *b = test_create("own-live", LANES * 16 * 1024, LANES);
	int to_ns[2], from_ns[2], to_host[2], from_host[2];
	REQUIRE(pipe(to_ns) == 0 && pipe(from_ns) == 0);
	REQUIRE(pipe(to_host) == 0 && pipe(from_host) == 0);
	char w0[16], in[16], out[16], kk[16], nh[16], ne[16];
	snprintf(kk, sizeof(kk), "%d", K);
	snprintf(ne, sizeof(ne), "%d", EXTRA);

	/* writers 0..2 (+ extras 3, 4) in the namespace */
	snprintf(w0, sizeof(w0), "0");
	snprintf(nh, sizeof(nh), "%d", NS_HOLD);
	snprintf(in, sizeof(in), "%d", to_ns[0]);
	snprintf(out, sizeof(out), "%d", from_ns[1]);
	char *ns_args[] = {"hold", (char *)b, w0, nh, ne, kk, in, out, NULL};
	pid_t ns = spawn_role(true, ns_args);
	wait_byte(from_ns[0]);

	/* writers 5..8 (+ extras 9, 10) on the host, in a process of their
	 * own (so their tids are not their pid either) */
	char hw0[16], hnh[16], hin[16], hout[16];
	snprintf(hw0, sizeof(hw0), "%d", NS_HOLD + EXTRA);
	snprintf(hnh, sizeof(hnh), "%d", HOST_HOLD);
	snprintf(hin, sizeof(hin), "%d", to_host[0]);
	snprintf(hout, sizeof(hout), "%d", from_host[1]);
	char *host_args[] = {"hold", (char *)b, hw0, hnh, ne, kk, hin, hout,
			     NULL};
	pid_t host = spawn_role(false, host_args);
	wait_byte(from_host[0]);

	uint64_t before[LANES], after[LANES];
	owner_words(b, before, LANES);
	unsigned held = 0;
	for (unsigned i = 0; i < LANES - 1; i++)
		held += before[i] != 0;
	CHECK_EQ(held, NS_HOLD + HOST_HOLD); /* every exclusive lane */

	/* both sides' extra threads now look for lanes, both sides' holders
	 * write on */
	send_byte(to_host[1]);
	wait_byte(from_host[0]);
	send_byte(to_ns[1]);
	wait_byte(from_ns[0]);
	owner_words(b, after, LANES);
	for (unsigned i = 0; i < LANES - 1; i++)
		CHECK_EQ(after[i], before[i]); /* no live lane taken */
	for (unsigned i = 0; i < LANES - 1; i++)
		CHECK_EQ(lane_stats(b, i).owner_alive, 1);
	send_byte(to_host[1]);
	send_byte(to_ns[1]);
	CHECK_EQ(hw_reap(host), 0);
	CHECK_EQ(hw_reap(ns), 0);

	/* holders: every record, in order; extras: whatever they got in,
	 * whole */
	bool complete[16] = {0};
	uint64_t expect[16] = {0};
	for (unsigned w = 0; w < NS_HOLD; w++) {
		complete[w] = true;
		expect[w] = 2 * K;
	}
	for (unsigned w = NS_HOLD + EXTRA; w < NS_HOLD + EXTRA + HOST_HOLD;
	     w++) {
		complete[w] = true;
		expect[w] = 2 * K;
	}
	long n = read_all_checked(b, 16, complete, expect);
	CHECK(n >= 2 * K * (NS_HOLD + HOST_HOLD));
	printf("live writers across namespaces: %ld records whole, no lane "
	       "taken\n",
	       n);
	for (int i = 0; i < 2; i++) {
		close(to_ns[i]);
		close(from_ns[i]);
		close(to_host[i]);
		close(from_host[i]);
	}
	shmlog_remove(b);
}

/* A namespaced writer that is pid 1 (tid 1) dies holding the only lane:
 * the host's pid 1 is alive, but that is another process. The host
 * writer takes the lane over. And the reverse. */
static void test_dead_across_namespaces(void)
{
	const char *b = test_create("own-dead", 64 * 1024, 1);
	char *die[] = {"die", (char *)b, "0", "10", NULL};
	CHECK_EQ(run_role_wait(true, die), 0);
	struct shmlog_lane_stats st = lane_stats(b, 0);
	CHECK_EQ(st.owner_pid, 1); /* as it saw itself */
	CHECK_EQ(st.owner_alive, 0);
	char *claim_host[] = {"claim", (char *)b, "1", "10", NULL};
	CHECK_EQ(run_role_wait(false, claim_host), 0);

	/* the reverse: a host writer dies, a namespaced one takes over */
	char *die_host[] = {"die", (char *)b, "2", "10", NULL};
	CHECK_EQ(run_role_wait(false, die_host), 0);
	CHECK_EQ(lane_stats(b, 0).owner_alive, 0);
	char *claim_ns[] = {"claim", (char *)b, "3", "10", NULL};
	CHECK_EQ(run_role_wait(true, claim_ns), 0);

	bool complete[4] = {true, true, true, true};
	uint64_t expect[4] = {10, 10, 10, 10};
	read_all_checked(b, 4, complete, expect);
	printf("dead writers across namespaces: lanes taken over both "
	       "ways\n");
	shmlog_remove(b);
}

/* pid reuse, for real: two namespaces in turn, each's first process is
 * pid 1 with tid 1. The second finds the first's owner word naming
 * itself, alive; it must still take the lane. */
static void test_pid_reuse_ns(void)
{
	const char *b = test_create("own-reuse", 64 * 1024, 1);
	char *die[] = {"die", (char *)b, "0", "10", NULL};
	CHECK_EQ(run_role_wait(true, die), 0);
	char *claim[] = {"claim", (char *)b, "1", "10", NULL};
	CHECK_EQ(run_role_wait(true, claim), 0);
	bool complete[2] = {true, true};
	uint64_t expect[2] = {10, 10};
	read_all_checked(b, 2, complete, expect);
	printf("pid reuse (pid 1 of two namespaces): lane taken over\n");
	shmlog_remove(b);
}

/* pid reuse, forged: the only lane's owner word names a live process
 * (as if a dead writer's pid had been given to it), but nobody holds the
 * lane's lock. A writer takes it over. Needs no namespace. */
static void test_pid_reuse_forged(void)
{
	const char *b = test_create("own-forge", 64 * 1024, 1);
	int p[2];
	REQUIRE(pipe(p) == 0);
	pid_t sleeper = fork();
	REQUIRE(sleeper >= 0);
	if (sleeper == 0) {
		close(p[1]);
		wait_byte(p[0]); /* alive until told */
		_exit(0);
	}
	close(p[0]);
	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(b, SEG_WRITE, &s) == 0);
	uint64_t forged = shmlog__owner_word((uint32_t)sleeper,
					     (uint32_t)sleeper);
	atomic_store(&seg_lane(&s, 0)->owner, forged);
	shmlog__seg_detach(&s);
	CHECK_EQ(lane_stats(b, 0).owner_alive, 0);

	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	CHECK_EQ(sc_write(h, 0, 0, 10), 0); /* took the lane */
	struct shmlog_lane_stats st = lane_stats(b, 0);
	CHECK_EQ(st.owner_pid, getpid());
	CHECK_EQ(st.owner_alive, 1);
	/* and while we hold it, nobody else gets it */
	char *claim[] = {"claim", (char *)b, "1", "1", NULL};
	CHECK_EQ(run_role_wait(false, claim), 102);
	shmlog_close(h);
	CHECK_EQ(lane_stats(b, 0).owner_alive, 0);
	close(p[1]);
	CHECK_EQ(hw_reap(sleeper), 0);
	printf("pid reuse (forged owner word of a live process): lane "
	       "taken over\n");
	shmlog_remove(b);
}

/* Writer processes holding every exclusive lane are SIGKILLed; new
 * writers (threads of one process) take every one of them over. */
static void test_crash_reclaim(void)
{
	enum { LANES = 8, EXCL = 7, K = 15 };
	const char *b = test_create("own-crash", LANES * 16 * 1024, LANES);
	int ready[2], never[2];
	REQUIRE(pipe(ready) == 0 && pipe(never) == 0);
	/* 3 processes of 2, 2 and 3 threads */
	const unsigned nth[3] = {2, 2, 3};
	pid_t pids[3];
	unsigned w0 = 0;
	for (int p = 0; p < 3; p++) {
		char sw[16], sn[16], sk[16], si[16], so[16];
		snprintf(sw, sizeof(sw), "%u", w0);
		snprintf(sn, sizeof(sn), "%u", nth[p]);
		snprintf(sk, sizeof(sk), "%d", K);
		snprintf(si, sizeof(si), "%d", never[0]);
		snprintf(so, sizeof(so), "%d", ready[1]);
		char *args[] = {"hold", (char *)b, sw, sn, "0", sk, si, so, NULL};
		pids[p] = spawn_role(false, args);
		wait_byte(ready[0]);
		w0 += nth[p];
	}
	uint64_t owners[LANES];
	owner_words(b, owners, LANES);
	for (unsigned i = 0; i < EXCL; i++)
		CHECK(owners[i] != 0);
	for (int p = 0; p < 3; p++)
		hw_kill(pids[p]);
	for (unsigned i = 0; i < EXCL; i++)
		CHECK_EQ(lane_stats(b, i).owner_alive, 0);

	/* one new process, 7 threads: every lane taken over, none shared */
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h))
			_exit(10);
		pthread_barrier_t bar, done;
		pthread_barrier_init(&bar, NULL, EXCL + 1);
		pthread_barrier_init(&done, NULL, EXCL + 1);
		struct holder t[EXCL];
		pthread_t th[EXCL];
		for (unsigned i = 0; i < EXCL; i++) {
			t[i] = (struct holder){.buf = b, .w = 7 + i, .n = K,
					       .ready = &bar, .done = &done,
					       .h = h};
			pthread_create(&th[i], NULL, holder_main, &t[i]);
		}
		pthread_barrier_wait(&bar);
		/* all hold a lane now: check before they exit */
		int bad = 0;
		shmlog_reader_t *r;
		if (shmlog_reader_open(b, 0, &r))
			_exit(11);
		for (unsigned i = 0; i < EXCL; i++) {
			struct shmlog_lane_stats st;
			shmlog_reader_lane_stats(r, i, &st);
			if (st.owner_pid != (uint32_t)getpid() ||
			    !st.owner_alive) {
				fprintf(stderr, "lane %u: owner %u alive %u\n",
					i, st.owner_pid, st.owner_alive);
				bad++;
			}
		}
		shmlog_reader_close(r);
		pthread_barrier_wait(&done);
		for (unsigned i = 0; i < EXCL; i++) {
			pthread_join(th[i], NULL);
			if (t[i].failed)
				fprintf(stderr, "writer %u: %ld failed\n",
					t[i].w, t[i].failed);
			bad += t[i].failed != 0;
		}
		shmlog_close(h);
		_exit(bad ? 20 + (bad > 50 ? 50 : bad) : 0);
	}
	CHECK_EQ(hw_reap(pid), 0);
	bool complete[14];
	uint64_t expect[14];
	for (unsigned w = 0; w < 14; w++) {
		complete[w] = true;
		expect[w] = K;
	}
	read_all_checked(b, 14, complete, expect);
	printf("SIGKILLed holders of all %d lanes: every lane taken over\n",
	       EXCL);
	close(never[0]);
	close(never[1]);
	close(ready[0]);
	close(ready[1]);
	shmlog_remove(b);
}

/* fork(): a child writes through its parent's handle: it gets a lane of
 * its own (it must not take its parent's: they shared the description
 * the lock is on). Once the parent is dead, the child does not keep the
 * parent's lane alive. */
static void test_fork(void)
{
	const char *b = test_create("own-fork", 8 * 16 * 1024, 8);
	int p[2], q[2];
	REQUIRE(pipe(p) == 0 && pipe(q) == 0);
	pid_t parent = fork();
	REQUIRE(parent >= 0);
	if (parent == 0) {
		shmlog_t *h;
		if (shmlog_open(b, 0, &h) || sc_write(h, 0, 0, 5))
			_exit(10);
		pid_t child = fork();
		if (child < 0)
			_exit(11);
		if (child == 0) {
			if (sc_write(h, 1, 0, 5))
				_exit(12);
			send_byte(q[1]); /* wrote: lane claimed */
			wait_byte(p[0]); /* the parent is dead now */
			if (sc_write(h, 1, 5, 5))
				_exit(13);
			shmlog_close(h);
			_exit(0);
		}
		_exit(0); /* without closing: its lane stays claimed */
	}
	CHECK_EQ(hw_reap(parent), 0);
	wait_byte(q[0]);
	/* the live child's lane claimed, and the dead parent's unless the
	 * child reaped it */
	shmlog_reader_t *r = open_reader(b);
	unsigned claimed = 0, alive = 0;
	for (unsigned i = 0; i < shmlog_reader_lanes(r); i++) {
		struct shmlog_lane_stats st;
		REQUIRE(shmlog_reader_lane_stats(r, i, &st) == 0);
		claimed += st.owner_pid != 0;
		alive += st.owner_alive;
		if (st.owner_pid == (uint32_t)parent)
			CHECK_EQ(st.owner_alive, 0);
	}
	shmlog_reader_close(r);
	/* the child's first write may have reaped the dead parent's lane
	 * already (a claim gives dead writers' lanes back) */
	CHECK(claimed == 2 || claimed == 1);
	CHECK_EQ(alive, 1);
	send_byte(p[1]);
	bool complete[2] = {true, true};
	uint64_t expect[2] = {5, 10};
	/* the child's exit is not awaited (not our child): wait for its
	 * records by reading until they are there, bounded */
	for (int tries = 0; tries < 2000; tries++) {
		shmlog_reader_t *r2 = open_reader(b);
		long n = 0;
		struct shmlog_record rec;
		while (shmlog_reader_next(r2, &rec, NULL) > 0)
			n++;
		shmlog_reader_close(r2);
		if (n >= 15)
			break;
		sleep_ns(5 * 1000 * 1000);
	}
	read_all_checked(b, 2, complete, expect);
	printf("fork: the child claims a lane of its own; the dead parent's "
	       "is free to take\n");
	for (int i = 0; i < 2; i++) {
		close(p[i]);
		close(q[i]);
	}
	shmlog_remove(b);
}

/* Shared lanes, lent one record at a time, name the borrower's slot (a
 * lock its handle holds for life): a word naming a slot nobody holds is a
 * dead borrower's, taken over; one naming a live handle's slot is not. */
static void test_borrowers(void)
{
	enum { LANES = 8, K = 5 };
	const char *b = test_create("own-borrow", LANES * 16 * 1024, LANES);
	int ready[2], never[2];
	REQUIRE(pipe(ready) == 0 && pipe(never) == 0);
	char si[16], so[16];
	snprintf(si, sizeof(si), "%d", never[0]);
	snprintf(so, sizeof(so), "%d", ready[1]);
	char *hold[] = {"hold", (char *)b, "0", "7", "0", "5", si, so, NULL};
	pid_t holders = spawn_role(false, hold); /* every exclusive lane */
	wait_byte(ready[0]);

	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(b, SEG_WRITE, &s) == 0);
	_Atomic uint64_t *shared = &seg_lane(&s, LANES - 1)->owner;
	/* a dead borrower: a slot nobody holds */
	struct shmlog fake;
	memset(&fake, 0, sizeof(fake));
	fake.slot = 12345;
	fake.slot_nonce = 777;
	atomic_store(shared, shmlog__borrow_word(&fake, 4242));
	CHECK_EQ(shmlog__owner_alive(&s, LANES - 1, atomic_load(shared)), 0);
	char *claim1[] = {"claim", (char *)b, "7", "5", NULL};
	CHECK_EQ(run_role_wait(false, claim1), 0); /* taken over */

	/* a live borrower: our handle's slot, held while it is open */
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	REQUIRE(h->slot >= 0);
	uint64_t live = shmlog__borrow_word(h, 4242);
	atomic_store(shared, live);
	CHECK_EQ(shmlog__owner_alive(&s, LANES - 1, live), 1);
	char *claim2[] = {"claim", (char *)b, "8", "1", NULL};
	CHECK_EQ(run_role_wait(false, claim2), 102); /* refused */
	CHECK_EQ(atomic_load(shared), live);
	shmlog_close(h);
	CHECK_EQ(shmlog__owner_alive(&s, LANES - 1, live), 0);
	char *claim3[] = {"claim", (char *)b, "9", "5", NULL};
	CHECK_EQ(run_role_wait(false, claim3), 0); /* now taken over */
	shmlog__seg_detach(&s);

	hw_kill(holders);
	bool complete[10] = {0};
	uint64_t expect[10] = {0};
	complete[7] = complete[9] = true;
	expect[7] = expect[9] = K;
	read_all_checked(b, 10, complete, expect);
	printf("borrowers: a dead one's shared lane taken over, a live one's "
	       "kept\n");
	for (int i = 0; i < 2; i++) {
		close(ready[i]);
		close(never[i]);
	}
	shmlog_remove(b);
}

/* Readers judge liveness by the same lock, through whatever descriptor
 * they have: a read-only one works. */
static void test_readonly_liveness(void)
{
	const char *b = test_create("own-ro", 4 * 16 * 1024, 4);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	REQUIRE(sc_write(h, 0, 0, 1) == 0);
	char path[512];
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	struct shmlog__seg s;
	memset(&s, 0, sizeof(s));
	s.fd = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(s.fd >= 0);
	uint64_t ow[4];
	owner_words(b, ow, 4);
	int alive = 0;
	for (unsigned i = 0; i < 4; i++)
		alive += ow[i] && shmlog__owner_alive(&s, i, ow[i]) == 1;
	CHECK_EQ(alive, 1);
	struct shmlog_info in;
	CHECK_EQ(shmlog_stat(b, &in), 0);
	CHECK_EQ(in.writers, 1);
	shmlog_close(h);
	alive = 0;
	for (unsigned i = 0; i < 4; i++) /* the words of before: no lock */
		alive += ow[i] && shmlog__owner_alive(&s, i, ow[i]) == 1;
	CHECK_EQ(alive, 0);
	CHECK_EQ(shmlog_stat(b, &in), 0);
	CHECK_EQ(in.writers, 0);
	close(s.fd);
	shmlog_remove(b);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--role"))
		return run_role(argc, argv);
	self_exe = argv[0];
	if (!strchr(self_exe, '/'))
		return 2;
	static char abs[4096];
	if (self_exe[0] != '/' && realpath(self_exe, abs))
		self_exe = abs;
	signal(SIGPIPE, SIG_IGN);
	alarm(100); /* a hang (a role that never answers) is a failure */
	test_readonly_liveness();
	test_pid_reuse_forged();
	test_crash_reclaim();
	test_fork();
	test_borrowers();
	if (ns_works()) {
		test_live_across_namespaces();
		test_dead_across_namespaces();
		test_pid_reuse_ns();
	} else {
		printf("SKIP: the pid-namespace cases need unshare(1) from "
		       "util-linux and the right to create a pid namespace "
		       "(root)\n");
		int rc = test_done("test_owner");
		return rc ? rc : 77;
	}
	return test_done("test_owner");
}
