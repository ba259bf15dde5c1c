/* SPDX-License-Identifier: MIT */
/*
 * One measured run: the parent sets the transport up, forks a server and a
 * client process, and waits for both. The children write what they measured
 * into a shared results area and exit; the parent never takes part, so its
 * own wake-ups cannot disturb the figures (it sleeps in sigtimedwait).
 *
 * What is measured, and where:
 *  - Round trip (request, send): the client reads the clock right before
 *    send and right after the reply arrived: two clock reads per message,
 *    nothing else is inside the interval. Sealing and verifying the frames
 *    (checksums) happen outside it, but inside the Msgs/s wall time.
 *  - Notification: the client stamps each event; the server takes
 *    now - stamp when it has the event: one-way delivery latency, which
 *    includes queueing when the sender outruns the receiver.
 *  - Stages (instrumented variants only): C_SEND/C_RECV are the client's two
 *    clock reads, the server adds two clock reads (S_RECV, S_REPLY). Out of
 *    band, each side writes into its own preallocated, pre-faulted array so
 *    the instrumentation shares no cache line with the peer; in band, the
 *    stamps travel in a 272-byte area after each frame, as in the binder
 *    study, and the client files all four after the round trip.
 *  - CPU, context switches and page faults: getrusage() deltas of each
 *    process over its measured phase.
 */
#include "ipc.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define STAMP_CAP 100000 /* instrumented round trips kept */
#define WARM_MIN 16 /* warm-up exchanges, at least */

struct side {
	struct bench_usage u;
	uint64_t msgs, t_first, t_last, lost;
	int failed;
	char err[256];
};

/* Shared between parent and both children (MAP_SHARED | MAP_ANONYMOUS). */
struct shared {
	struct side cli, srv;
	struct bench_hist lat;
	_Atomic int client_done;
	_Atomic int server_ready; /* attached: the client may start */
	_Atomic int server_got_first; /* one-way: the first frame arrived */
	uint64_t nstamps;
	/* followed by the client's stamps, then the server's, page-aligned */
};

struct shared_area {
	struct shared *sh;
	uint64_t *cstamp, *sstamp; /* [STAMP_CAP][2] each */
	size_t len;
};

static size_t page_up(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

static int area_alloc(struct shared_area *a, bool stages)
{
	size_t head = page_up(sizeof(struct shared));
	size_t arr = stages ? page_up(STAMP_CAP * 2 * sizeof(uint64_t)) : 0;
	a->len = head + 2 * arr;
	char *p = ipc_shared_alloc(a->len);
	if (!p)
		return -ENOMEM;
	a->sh = (struct shared *)p;
	a->cstamp = stages ? (uint64_t *)(p + head) : NULL;
	a->sstamp = stages ? (uint64_t *)(p + head + arr) : NULL;
	return 0;
}

const char *ipc_conv_name(enum ipc_conv c)
{
	switch (c) {
	case IPC_CONV_REQUEST:
		return "request";
	case IPC_CONV_SEND:
		return "send";
	case IPC_CONV_NOTIFY:
		return "notify";
	case IPC_CONV_PACED:
		return "notify-paced";
	case IPC_CONV_RATE:
		return "notify-rate";
	case IPC_NCONV:
		break;
	}
	return "?";
}

static size_t req_len(const struct ipc_run_cfg *cfg)
{
	return cfg->conv == IPC_CONV_REQUEST ? 0 : cfg->size;
}

static size_t rep_len(const struct ipc_run_cfg *cfg)
{
	return cfg->conv == IPC_CONV_REQUEST ? cfg->size : 0;
}

/*
 * In-band stamps: the last IPC_INBAND_BYTES of a frame's payload carry
 * them, from the 9th byte of that area on (the first bytes of a payload
 * echo the sequence number). They are written after the frame is sealed,
 * so the checksum is taken with the stamp slots zeroed: the sender zeroes
 * them before sealing, the receiver takes them out and zeroes them before
 * checking.
 */
static size_t inband_at(size_t payload)
{
	return IPC_HDR + payload - IPC_INBAND_BYTES + 8;
}

static void inband_clear(void *frame, size_t payload)
{
	memset((char *)frame + inband_at(payload), 0,
	       IPC_NSTAMP * sizeof(uint64_t));
}

static void inband_put(void *frame, size_t payload, const uint64_t *stamps)
{
	memcpy((char *)frame + inband_at(payload), stamps,
	       IPC_NSTAMP * sizeof(uint64_t));
}

/* Copy the stamps of a received frame of @got bytes out and zero them;
 * -1 if the frame is too short to have them. */
static int inband_take(void *frame, size_t got, uint64_t *stamps)
{
	struct ipc_frame h;
	if (got < IPC_HDR)
		return -1;
	memcpy(&h, frame, IPC_HDR);
	if (h.len < IPC_INBAND_BYTES || got != IPC_HDR + h.len)
		return -1;
	memcpy(stamps, (char *)frame + inband_at(h.len),
	       IPC_NSTAMP * sizeof(uint64_t));
	inband_clear(frame, h.len);
	return 0;
}

static void *frame_buf(size_t len)
{
	unsigned char *p = malloc(len);
	if (p) /* a fixed pattern: pages faulted in before measuring */
		for (size_t i = 0; i < len; i++)
			p[i] = (unsigned char)(i * 131u + 7u);
	return p;
}

static void fail(struct side *s, const struct ipc_run_cfg *cfg,
		 const char *who, const char *msg)
{
	s->failed = 1;
	snprintf(s->err, sizeof(s->err), "%s", msg);
	fprintf(stderr,
		"shmlog-bench ipc: FAIL: %s %s %zu B (%s): %s: %s\n",
		cfg->t->name, ipc_conv_name(cfg->conv), cfg->size,
		cfg->wait == IPC_WAIT_SPIN ? "spin" : "block", who, msg);
}

/* ---------------------------------------------------------------- server */

struct server {
	const struct ipc_run_cfg *cfg;
	struct shared_area *a;
	struct bench_hist *lat;
	struct bench_usage u0;
	uint32_t seq;
	uint32_t first_data; /* seq of the first measured frame */
	struct ipc_chan *c;
	uint64_t lost_seen; /* of c->lost, gaps already accepted */
	bool measuring;
};

static void server_begin_measure(struct server *s, uint32_t seq)
{
	bench_usage_now(&s->u0, RUSAGE_SELF);
	s->first_data = seq;
	s->measuring = true;
}

static void server_end(struct server *s)
{
	struct bench_usage u1;
	bench_usage_now(&u1, RUSAGE_SELF);
	if (s->measuring)
		s->a->sh->srv.u = bench_usage_diff(&s->u0, &u1);
}

static enum ipc_action server_handle(void *arg, const void *req, size_t len,
				     void *rep, size_t *replen)
{
	struct server *s = arg;
	const struct ipc_run_cfg *cfg = s->cfg;
	struct side *me = &s->a->sh->srv;
	char err[200];
	struct ipc_frame h;
	/* The server reads the clock only where a figure needs it: one-way
	 * latency, or S_RECV in the instrumented variant. A plain round trip
	 * has no server-side clock read inside it. */
	bool oneway = ipc_conv_oneway(cfg->conv);
	uint64_t now = oneway || s->a->sstamp ? bench_now_ns() : 0;
	bool inband = cfg->stages == IPC_STAMPS_INBAND;
	size_t extra = inband ? IPC_INBAND_BYTES : 0;
	uint64_t stamps[IPC_NSTAMP] = {0};
	if (inband && inband_take((void *)req, len, stamps)) {
		fail(me, cfg, "server", "frame without its stamp area");
		return IPC_FAIL;
	}
	stamps[IPC_S_RECV] = now;

	if (len < IPC_HDR) {
		fail(me, cfg, "server", "short frame");
		return IPC_FAIL;
	}
	memcpy(&h, req, IPC_HDR);
	/* A lossy transport (shmlog overwrites what a slow reader missed)
	 * reports its losses: a gap of exactly that many is accepted. */
	if (h.seq != s->seq && s->c->lost > s->lost_seen &&
	    h.seq - s->seq <= s->c->lost - s->lost_seen) {
		s->lost_seen += h.seq - s->seq;
		s->seq = h.seq;
	}
	/* The STOP frame carries no payload; every other one has req_len. */
	uint32_t want =
	    (uint32_t)((h.op == IPC_OP_STOP ? 0 : req_len(cfg)) + extra);
	if (ipc_frame_check((void *)req, len, s->seq, want, err,
			    sizeof(err))) {
		if (s->c->lost) {
			size_t l = strlen(err);
			snprintf(err + l, sizeof(err) - l,
				 " (the transport reported %" PRIu64
				 " lost, %" PRIu64 " of them already seen)",
				 s->c->lost, s->lost_seen);
		}
		fail(me, cfg, "server", err);
		return IPC_FAIL;
	}
	s->seq++;
	if (s->seq == 1)
		atomic_store(&s->a->sh->server_got_first, 1);
	if (h.op == IPC_OP_DATA) {
		if (!s->measuring)
			server_begin_measure(s, h.seq);
		me->msgs++;
		me->t_last = now;
	}
	if (h.op == IPC_OP_STOP)
		server_end(s);
	if (oneway) {
		if (h.op == IPC_OP_DATA)
			bench_hist_add(s->lat, now - h.t_send);
		return h.op == IPC_OP_STOP ? IPC_END : IPC_NOREPLY;
	}
	uint64_t *st = NULL;
	if (s->a->sstamp && !inband && h.op == IPC_OP_DATA &&
	    h.seq - s->first_data < STAMP_CAP) {
		st = s->a->sstamp + 2 * (size_t)(h.seq - s->first_data);
		st[0] = now;
	}
	size_t n = (h.op == IPC_OP_STOP ? 0 : rep_len(cfg)) + extra;
	if (inband)
		inband_clear(rep, n);
	ipc_frame_seal(rep, h.seq, (uint32_t)n, IPC_OP_REPLY, 0);
	*replen = IPC_HDR + n;
	if (st)
		st[1] = bench_now_ns();
	if (inband) { /* the stamps go back with the reply */
		stamps[IPC_S_REPLY] = bench_now_ns();
		inband_put(rep, n, stamps);
	}
	return h.op == IPC_OP_STOP ? IPC_END_REPLY : IPC_REPLY;
}

/* The server loop for mechanisms that only send and receive. */
static int server_loop(struct ipc_chan *c, struct server *s, void *rx,
		       void *tx)
{
	for (;;) {
		ssize_t n = c->t->recv(c, rx, c->p.max_frame);
		if (n == 0 || n == -EPIPE)
			return 0; /* end of stream (shmlog: writer done) */
		if (n < 0) {
			char err[128];
			snprintf(err, sizeof(err), "recv: %s",
				 strerror((int)-n));
			fail(&s->a->sh->srv, s->cfg, "server", err);
			return -1;
		}
		size_t replen = 0;
		enum ipc_action act =
		    server_handle(s, rx, (size_t)n, tx, &replen);
		if (act == IPC_FAIL)
			return -1;
		if (act == IPC_REPLY || act == IPC_END_REPLY) {
			int r = c->t->send(c, tx, replen);
			if (r) {
				char err[128];
				snprintf(err, sizeof(err), "send: %s",
					 strerror(-r));
				fail(&s->a->sh->srv, s->cfg, "server", err);
				return -1;
			}
		}
		if (act == IPC_END || act == IPC_END_REPLY)
			return 0;
	}
}

static int server_main(const struct ipc_run_cfg *cfg, struct ipc_chan *c,
		       struct shared_area *a)
{
	struct side *me = &a->sh->srv;
	static struct bench_hist lat; /* private: no sharing while measuring */
	struct server s = {.cfg = cfg, .a = a, .lat = &lat, .c = c};
	char err[128];

	bench_hist_init(&lat);
	bench_pin_cpu(cfg->cpu_server);
	if (a->sstamp)
		memset(a->sstamp, 0, STAMP_CAP * 2 * sizeof(uint64_t));
	int r = c->t->attach(c, true);
	if (r) {
		snprintf(err, sizeof(err), "attach: %s", strerror(-r));
		fail(me, cfg, "server", err);
		return 1;
	}
	void *rx = frame_buf(c->p.max_frame), *tx = frame_buf(c->p.max_frame);
	if (!rx || !tx)
		return 1;
	atomic_store(&a->sh->server_ready, 1);
	if (c->t->serve)
		r = c->t->serve(c, server_handle, &s);
	else
		r = server_loop(c, &s, rx, tx);
	if (r && !me->failed) {
		snprintf(err, sizeof(err), "serve: %s",
			 strerror(r < 0 ? -r : r));
		fail(me, cfg, "server", err);
	}
	if (!s.measuring && !me->failed)
		fail(me, cfg, "server", "no measured frame arrived");
	if (me->msgs && !a->sh->srv.u.wall_ns)
		server_end(&s); /* stream ended without STOP (shmlog) */
	me->lost = c->lost;
	if (ipc_conv_oneway(cfg->conv))
		a->sh->lat = lat;
	if (c->t->detach)
		c->t->detach(c);
	return me->failed ? 1 : 0;
}

/* ---------------------------------------------------------------- client */

struct client {
	const struct ipc_run_cfg *cfg;
	struct ipc_chan *c;
	struct shared_area *a;
	void *tx, *rx;
	uint32_t seq;
	struct bench_hist *lat;
	uint64_t due; /* IPC_CONV_RATE: when the next event is due */
};

/* Self-test of the checker (--corrupt-at): damage one frame after it was
 * sealed, as a broken transport would. The run must then fail. */
static void maybe_corrupt(struct client *k, size_t len)
{
	if (k->cfg->corrupt_at >= 0 && k->seq == (uint32_t)k->cfg->corrupt_at)
		((unsigned char *)k->tx)[len - 1] ^= 0x10;
}

static int client_fail(struct client *k, const char *what, int err)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "%s: %s", what,
		 strerror(err < 0 ? -err : err));
	fail(&k->a->sh->cli, k->cfg, "client", msg);
	return -1;
}

/* One request and its reply. @idx: stage slot, or -1. */
static int client_exchange(struct client *k, uint32_t op, long idx)
{
	const struct ipc_run_cfg *cfg = k->cfg;
	struct ipc_chan *c = k->c;
	size_t n = op == IPC_OP_STOP ? 0 : req_len(cfg);
	size_t want = op == IPC_OP_STOP ? 0 : rep_len(cfg);
	ssize_t got;
	char err[200];

	bool inband = cfg->stages == IPC_STAMPS_INBAND;
	size_t extra = inband ? IPC_INBAND_BYTES : 0;
	uint64_t stamps[IPC_NSTAMP] = {0};
	n += extra;
	want += extra;
	if (inband)
		inband_clear(k->tx, n);
	ipc_frame_seal(k->tx, k->seq, (uint32_t)n, op, 0);
	maybe_corrupt(k, IPC_HDR + n);
	uint64_t t0 = bench_now_ns();
	if (inband) {
		stamps[IPC_C_SEND] = t0;
		inband_put(k->tx, n, stamps);
	}
	if (c->t->call) {
		got = c->t->call(c, k->tx, IPC_HDR + n, k->rx, c->p.max_frame);
	} else {
		int r = c->t->send(c, k->tx, IPC_HDR + n);
		if (r)
			return client_fail(k, "send", r);
		got = c->t->recv(c, k->rx, c->p.max_frame);
	}
	uint64_t t1 = bench_now_ns();
	if (got <= 0)
		return client_fail(k, "receive reply", got ? (int)got : EPIPE);
	if (inband) {
		if (inband_take(k->rx, (size_t)got, stamps))
			return client_fail(k, "reply without its stamps",
					   EBADMSG);
		stamps[IPC_C_RECV] = t1;
		if (op == IPC_OP_DATA && idx >= 0) {
			k->a->sstamp[2 * idx] = stamps[IPC_S_RECV];
			k->a->sstamp[2 * idx + 1] = stamps[IPC_S_REPLY];
		}
	}
	if (ipc_frame_check(k->rx, (size_t)got, k->seq, (uint32_t)want, err,
			    sizeof(err))) {
		fail(&k->a->sh->cli, cfg, "client (reply)", err);
		return -1;
	}
	k->seq++;
	if (op == IPC_OP_DATA) {
		bench_hist_add(k->lat, t1 - t0);
		if (idx >= 0) {
			k->a->cstamp[2 * idx] = t0;
			k->a->cstamp[2 * idx + 1] = t1;
		}
	}
	return 0;
}

static int client_post(struct client *k, uint32_t op)
{
	struct ipc_chan *c = k->c;
	size_t n = op == IPC_OP_STOP ? 0 : k->cfg->size;

	ipc_frame_seal(k->tx, k->seq, (uint32_t)n, op, bench_now_ns());
	maybe_corrupt(k, IPC_HDR + n);
	int r = c->t->post ? c->t->post(c, k->tx, IPC_HDR + n)
			   : c->t->send(c, k->tx, IPC_HDR + n);
	if (r)
		return client_fail(k, "send", r);
	k->seq++;
	return 0;
}

/* Paced events: sleep between them, so that the receiver goes to sleep
 * too and each event measures a wake-up, not a queue. */
static void client_pace(struct client *k)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)k->cfg->pace_ns};
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/* Events at a fixed rate: each one is due a period after the one before,
 * and the sender busy-waits for it (a sleep is tens of microseconds, the
 * period a fraction of one). The sender stamps an event when it sends it,
 * so a late one measures delivery, not the sender's delay. A sender held
 * up (preempted, or blocked by a receiver that pushes back) resumes from
 * now, up to one period ahead: no burst to catch up. */
static void client_rate(struct client *k)
{
	uint64_t period = 1000000000u / k->cfg->rate_per_s;
	uint64_t now = bench_now_ns();
	if (!k->due || now > k->due + period)
		k->due = now; /* first event, or late: no catching up */
	while (now < k->due) {
		ipc_cpu_relax();
		now = bench_now_ns();
	}
	k->due += period;
}

static int client_step(struct client *k, uint32_t op, long idx)
{
	if (!ipc_conv_oneway(k->cfg->conv))
		return client_exchange(k, op, idx);
	if (k->cfg->conv == IPC_CONV_RATE && op != IPC_OP_STOP)
		client_rate(k);
	int r = client_post(k, op);
	if (!r && k->cfg->conv == IPC_CONV_PACED && op != IPC_OP_STOP)
		client_pace(k);
	return r;
}

/*
 * One-way conversations: after the first event, wait until the server has
 * it. A shmlog follower only reports losses after its first record (what
 * was overwritten before it read anything counts as "before it came"), so
 * without this a follower that was slow to start could miss the first
 * frames silently, and the sequence check would rightly fail.
 */
static void wait_first_delivery(struct client *k)
{
	while (!atomic_load(&k->a->sh->server_got_first)) {
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
}

static int client_run(struct client *k)
{
	const struct ipc_run_cfg *cfg = k->cfg;
	struct side *me = &k->a->sh->cli;
	struct bench_usage u0, u1;

	uint64_t t = bench_now_ns(), end = t + cfg->warm_ns;
	for (int i = 0; i < WARM_MIN || bench_now_ns() < end; i++) {
		if (client_step(k, IPC_OP_WARM, -1))
			return -1;
		if (i == 0 && ipc_conv_oneway(cfg->conv))
			wait_first_delivery(k);
	}

	bench_usage_now(&u0, RUSAGE_SELF);
	me->t_first = bench_now_ns();
	end = me->t_first + cfg->run_ns;
	long idx = 0;
	do {
		long slot = k->a->cstamp && idx < STAMP_CAP ? idx : -1;
		if (client_step(k, IPC_OP_DATA, slot))
			return -1;
		idx++;
	} while (bench_now_ns() < end);
	me->t_last = bench_now_ns();
	bench_usage_now(&u1, RUSAGE_SELF);
	me->u = bench_usage_diff(&u0, &u1);
	me->msgs = (uint64_t)idx;

	if (client_step(k, IPC_OP_STOP, -1))
		return -1;
	atomic_store(&k->a->sh->client_done, 1);
	return 0;
}

static int client_main(const struct ipc_run_cfg *cfg, struct ipc_chan *c,
		       struct shared_area *a)
{
	static struct bench_hist lat;
	struct client k = {.cfg = cfg, .c = c, .a = a, .lat = &lat};

	bench_hist_init(&lat);
	bench_pin_cpu(cfg->cpu_client);
	if (a->cstamp)
		memset(a->cstamp, 0, STAMP_CAP * 2 * sizeof(uint64_t));
	int r = c->t->attach(c, false);
	if (r) {
		client_fail(&k, "attach", r);
		return 1;
	}
	k.tx = frame_buf(c->p.max_frame);
	k.rx = frame_buf(c->p.max_frame);
	if (!k.tx || !k.rx)
		return 1;
	/* A follower (shmlog) sees only what is written after it attached:
	 * start once the server is there. (A connecting client attaches
	 * first, or an accepting server would wait for it forever.) */
	while (!atomic_load(&a->sh->server_ready)) {
		struct timespec ts = {0, 50000};
		nanosleep(&ts, NULL);
	}
	r = client_run(&k);
	atomic_store(&a->sh->client_done, 1);
	if (!ipc_conv_oneway(cfg->conv))
		a->sh->lat = lat;
	if (c->t->detach)
		c->t->detach(c);
	return r ? 1 : 0;
}

/* ---------------------------------------------------------------- parent */

static pid_t spawn(int (*fn)(const struct ipc_run_cfg *, struct ipc_chan *,
			     struct shared_area *),
		   const struct ipc_run_cfg *cfg, struct ipc_chan *c,
		   struct shared_area *a, bool server)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		/* Die with the parent: an orphaned peer would wait forever. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		c->server = server;
		int rc = fn(cfg, c, a);
		fflush(stderr);
		_exit(rc);
	}
	return pid;
}

static void describe_exit(char *why, size_t len, int client, int st)
{
	const char *who = client ? "client" : "server";
	if (WIFSIGNALED(st))
		snprintf(why, len, "%s killed by signal %d", who, WTERMSIG(st));
	else
		snprintf(why, len, "%s failed (exit %d)", who, WEXITSTATUS(st));
}

/* Wait for both children; kill both (by pid) if one fails or time is up,
 * since the survivor would otherwise wait forever for its dead peer. */
static int reap(pid_t pids[2], uint64_t timeout_ns, char *why, size_t whylen)
{
	int left = 2, bad = 0, killed = 0;
	uint64_t deadline = bench_now_ns() + timeout_ns;
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);

	while (left) {
		for (int i = 0; i < 2; i++) {
			int st;
			if (pids[i] <= 0 || waitpid(pids[i], &st, WNOHANG) <= 0)
				continue;
			pids[i] = 0;
			left--;
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				if (!bad)
					describe_exit(why, whylen, i, st);
				bad = 1;
			}
		}
		if (!left)
			break;
		uint64_t now = bench_now_ns();
		if (!killed && (bad || now >= deadline)) {
			if (!bad)
				snprintf(why, whylen, "timed out");
			for (int i = 0; i < 2; i++)
				if (pids[i] > 0)
					kill(pids[i], SIGKILL);
			bad = killed = 1;
			deadline = now + 5000000000ull;
		}
		uint64_t left_ns = deadline > now ? deadline - now : 1000000;
		struct timespec ts = {.tv_sec = (time_t)(left_ns / 1000000000u),
				      .tv_nsec = (long)(left_ns % 1000000000u)};
		if (ts.tv_sec > 0 || ts.tv_nsec > 100000000)
			ts = (struct timespec){.tv_sec = 0,
					       .tv_nsec = 100000000};
		sigtimedwait(&chld, NULL, &ts);
	}
	return bad ? -EBADMSG : 0;
}

static void collect_stages(const struct shared_area *a, struct ipc_result *res,
			   uint64_t n)
{
	if (n > STAMP_CAP)
		n = STAMP_CAP;
	for (int k = 0; k < 3; k++)
		bench_hist_init(&res->stage[k]);
	for (uint64_t i = 0; i < n; i++) {
		const uint64_t *c = a->cstamp + 2 * i, *s = a->sstamp + 2 * i;
		/* Different processes, one CLOCK_MONOTONIC: the differences
		 * are meaningful; clamp the odd negative from clock skew. */
		uint64_t d0 = s[0] > c[0] ? s[0] - c[0] : 0;
		uint64_t d1 = s[1] > s[0] ? s[1] - s[0] : 0;
		uint64_t d2 = c[1] > s[1] ? c[1] - s[1] : 0;
		bench_hist_add(&res->stage[0], d0);
		bench_hist_add(&res->stage[1], d1);
		bench_hist_add(&res->stage[2], d2);
	}
	res->have_stages = n > 0;
}

static void fill_result(const struct ipc_run_cfg *cfg,
			const struct shared_area *a, struct ipc_result *res)
{
	const struct shared *sh = a->sh;

	res->cli = sh->cli.u;
	res->srv = sh->srv.u;
	res->lat = sh->lat;
	res->lost = sh->srv.lost;
	res->sent = sh->cli.msgs;
	if (ipc_conv_oneway(cfg->conv)) {
		/* Sustained rate: what arrived, over first send to last
		 * arrival. */
		res->msgs = sh->srv.msgs;
		uint64_t span = sh->srv.t_last > sh->cli.t_first
					? sh->srv.t_last - sh->cli.t_first
					: 1;
		res->secs = (double)span / 1e9;
	} else {
		res->msgs = sh->cli.msgs;
		res->secs = (double)(sh->cli.t_last - sh->cli.t_first) / 1e9;
	}
	res->msgs_per_s = res->secs > 0 ? (double)res->msgs / res->secs : 0;
	res->kib_per_s = res->msgs_per_s * (double)cfg->size / 1024.0;
	if (a->cstamp)
		collect_stages(a, res, sh->cli.msgs);
}

/* On a virtual machine the host may run something else on our vCPU: a
 * round trip then "takes" as long as the host kept us off. /proc/stat's
 * steal column says how much of that happened. */
double ipc_steal_ms(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		       &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	long hz = sysconf(_SC_CLK_TCK);
	return n == 8 && hz > 0 ? (double)v[7] * 1000.0 / (double)hz : 0;
}

int ipc_run(const struct ipc_run_cfg *cfg, struct ipc_result *res)
{
	struct shared_area a;
	struct ipc_chan c = {.t = cfg->t};
	size_t big = req_len(cfg) > rep_len(cfg) ? req_len(cfg) : rep_len(cfg);

	memset(res, 0, sizeof(*res));
	c.p.max_frame = IPC_HDR + big +
			(cfg->stages == IPC_STAMPS_INBAND ? IPC_INBAND_BYTES : 0);
	c.p.depth = ipc_conv_oneway(cfg->conv) ? 64 : 2;
	c.p.wait = cfg->wait;
	c.p.spin_ns = cfg->spin_ns;
	if (area_alloc(&a, cfg->stages != IPC_STAMPS_NONE &&
			       !ipc_conv_oneway(cfg->conv))) {
		res->status = -ENOMEM;
		snprintf(res->why, sizeof(res->why), "out of memory");
		return res->status;
	}
	bench_hist_init(&a.sh->lat);
	c.peer_done = &a.sh->client_done;
	int r = cfg->t->setup(&c);
	if (r) {
		res->status = r;
		snprintf(res->why, sizeof(res->why), "%s",
			 c.why[0] ? c.why
			 : r == -EMSGSIZE
			     ? "message too large for this mechanism"
			     : strerror(-r));
		cfg->t->cleanup(&c);
		ipc_shared_free(a.sh, a.len);
		return r;
	}

	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	pid_t pids[2];
	double steal0 = ipc_steal_ms();
	pids[0] = spawn(server_main, cfg, &c, &a, true);
	pids[1] = pids[0] > 0 ? spawn(client_main, cfg, &c, &a, false) : -1;
	if (pids[1] < 0 && pids[0] > 0)
		kill(pids[0], SIGKILL);
	if (pids[0] < 0 || pids[1] < 0) {
		res->status = -errno;
		snprintf(res->why, sizeof(res->why), "fork: %s",
			 strerror(errno));
		if (pids[0] > 0)
			waitpid(pids[0], NULL, 0);
	} else {
		res->status = reap(pids, cfg->timeout_ns, res->why,
				   sizeof(res->why));
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	double steal = ipc_steal_ms() - steal0;
	cfg->t->cleanup(&c);

	if (!res->status) {
		fill_result(cfg, &a, res);
		res->steal_ms = steal;
	}
	else if (a.sh->cli.failed || a.sh->srv.failed)
		snprintf(res->why, sizeof(res->why), "%s",
			 a.sh->cli.failed ? a.sh->cli.err : a.sh->srv.err);
	ipc_shared_free(a.sh, a.len);
	return res->status;
}
