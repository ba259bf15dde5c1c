/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench ipc: the embedded IPC study's conversations (the embedded Linux IPC
 * benchmark of POSIX mq, shm + semaphores and ONC RPC) over
 * every local IPC mechanism a Linux product could pick, measured the same
 * way.
 *
 * Layout of the code:
 *  - ipc.h (this file): the transport interface, the wire frame, helpers.
 *  - t_*.c: one file per mechanism, each a `struct ipc_transport`. They only
 *    move opaque frames; they know nothing about conversations or timing.
 *  - ipc_run.c: one run = fork a server process and a client process, run a
 *    conversation over a transport, verify every frame, collect histograms
 *    and resource usage in a shared results page. Written once for all.
 *  - ipc_main.c: options, the run matrix, the table and the JSON.
 *
 * Delivery contract every transport honours: send() takes a frame from the
 * sender's private memory and recv() leaves it in the receiver's private
 * memory. A shared-memory transport therefore copies in and out exactly as
 * a kernel one does; nobody gets to "send" a pointer.
 */
#ifndef SHMLOG_BENCH_IPC_H
#define SHMLOG_BENCH_IPC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

/* ---- the wire frame ---- */

/* Every message, on every mechanism, starts with this header. The checksum
 * covers the header (with sum = 0) and the payload; the receiver recomputes
 * it and checks seq, op and len against what it expects next. */
struct ipc_frame {
	uint32_t seq; /* consecutive per direction, from 0 */
	uint32_t len; /* payload bytes after the header */
	uint32_t op; /* enum ipc_op */
	uint32_t sum; /* ipc_frame_sum() */
	uint64_t t_send; /* CLOCK_MONOTONIC ns at send (notify latency) */
};
#define IPC_HDR ((size_t)sizeof(struct ipc_frame)) /* 24 bytes */

enum ipc_op {
	IPC_OP_WARM = 1, /* warm-up: not measured */
	IPC_OP_DATA = 2, /* measured */
	IPC_OP_STOP = 3, /* last frame of a run */
	IPC_OP_REPLY = 4, /* server to client */
};

uint32_t ipc_frame_sum(const void *frame, size_t len);
/* Fill header and seal the frame (payload must already be in place). */
void ipc_frame_seal(void *frame, uint32_t seq, uint32_t len, uint32_t op,
		    uint64_t t_send);
/* 0, or -EBADMSG with a message in @err describing the mismatch. */
int ipc_frame_check(const void *frame, size_t got, uint32_t seq,
		    uint32_t len, char *err, size_t errlen);

/* ---- the transport interface ---- */

enum ipc_wait {
	IPC_WAIT_BLOCK = 0, /* sleep in the kernel until the peer wakes us */
	IPC_WAIT_SPIN = 1, /* poll for spin_ns, then block as above */
};

#define IPC_CAP_SYNC 0x1 /* request/reply conversations */
#define IPC_CAP_NOTIFY 0x2 /* one-way notifications */
#define IPC_CAP_SPIN 0x4 /* has a spin-then-block receive */
#define IPC_CAP_SHM 0x8 /* data moves through shared memory */
/* Its blocking wait polls by itself before sleeping (shmlog's reader):
 * the table marks those rows so nobody reads them as pure blocking. */
#define IPC_CAP_POLLS_FIRST 0x10

struct ipc_params {
	size_t max_frame; /* largest frame either way (header + payload) */
	unsigned depth; /* frames that may be in flight one way */
	enum ipc_wait wait;
	uint64_t spin_ns;
};

struct ipc_chan {
	const struct ipc_transport *t;
	struct ipc_params p;
	bool server; /* which end this process is, after attach */
	void *priv; /* transport state: made by setup(), inherited by fork */
	uint64_t lost; /* frames the transport says it lost (shmlog) */
	_Atomic int *peer_done; /* set once the client sent its last frame */
	char why[160]; /* setup() may say why it refused (-EMSGSIZE...) */
};

/* What the server does with a frame: the reply is written to @rep. */
enum ipc_action { IPC_REPLY, IPC_NOREPLY, IPC_END_REPLY, IPC_END, IPC_FAIL };
typedef enum ipc_action (*ipc_handler_fn)(void *arg, const void *req,
					   size_t len, void *rep,
					   size_t *replen);

struct ipc_transport {
	const char *name; /* short, for the table and the JSON */
	const char *desc;
	unsigned caps; /* IPC_CAP_* */
	const char *wait_note; /* with IPC_CAP_POLLS_FIRST: how it polls */
	/* Parent, before fork: create what both ends inherit. 0 or -errno;
	 * -EMSGSIZE if p.max_frame is beyond what this mechanism carries. */
	int (*setup)(struct ipc_chan *c);
	/* Child, after fork: become the server or the client end. */
	int (*attach)(struct ipc_chan *c, bool server);
	/* Move one frame. recv returns its length, 0 at end of stream, or
	 * -errno. */
	int (*send)(struct ipc_chan *c, const void *buf, size_t len);
	ssize_t (*recv)(struct ipc_chan *c, void *buf, size_t cap);
	/* Optional, for call-shaped mechanisms (ONC RPC): the client's round
	 * trip and the server's loop. Without them the run builds both from
	 * send() and recv(). */
	ssize_t (*call)(struct ipc_chan *c, const void *req, size_t len,
			void *rep, size_t cap);
	int (*post)(struct ipc_chan *c, const void *req, size_t len);
	int (*serve)(struct ipc_chan *c, ipc_handler_fn h, void *arg);
	/* Child, before exit. */
	void (*detach)(struct ipc_chan *c);
	/* Parent, after both children exited: close, unlink, free. */
	void (*cleanup)(struct ipc_chan *c);
};

extern const struct ipc_transport ipc_posix_mq, ipc_shm_sem, ipc_shm_futex,
	ipc_pipe, ipc_unix_stream, ipc_unix_dgram, ipc_shm_eventfd, ipc_tcp,
	ipc_onc_rpc, ipc_onc_rpc_unix, ipc_shmlog;

/* ---- one measured run (ipc_run.c) ---- */

enum ipc_conv {
	IPC_CONV_REQUEST = 0, /* client asks, server replies with size B */
	IPC_CONV_SEND = 1, /* client sends size B, server replies status */
	IPC_CONV_NOTIFY = 2, /* client posts size B events, no reply */
	IPC_CONV_PACED = 3, /* the same, one event per pace_ns: wake-ups */
	IPC_CONV_RATE = 4, /* the same, rate_per_s events, busy-waited */
	IPC_NCONV
};

static inline bool ipc_conv_oneway(enum ipc_conv c)
{
	return c == IPC_CONV_NOTIFY || c == IPC_CONV_PACED ||
	       c == IPC_CONV_RATE;
}

/* Stages of one round trip, as in the binder driver latency study. */
enum { IPC_C_SEND, IPC_S_RECV, IPC_S_REPLY, IPC_C_RECV, IPC_NSTAMP };

/* Where the stage stamps go. Out of band: each side stores into its own
 * preallocated array, sharing no cache line with the peer. In band: the
 * way the binder study did it, in a 272-byte stamp area carried in the
 * request and back in the reply, after the checksummed frame; each side
 * writes its stamps into the message it is handling. */
enum ipc_stamps { IPC_STAMPS_NONE, IPC_STAMPS_OOB, IPC_STAMPS_INBAND };
#define IPC_INBAND_BYTES 272

struct ipc_run_cfg {
	const struct ipc_transport *t;
	enum ipc_conv conv;
	size_t size; /* payload bytes of the sized message */
	enum ipc_wait wait;
	uint64_t spin_ns;
	int cpu_client, cpu_server; /* -1: not pinned */
	uint64_t warm_ns, run_ns; /* warm-up, then measured phase */
	uint64_t pace_ns; /* IPC_CONV_PACED: sleep between events */
	uint64_t rate_per_s; /* IPC_CONV_RATE: events per second */
	enum ipc_stamps stages; /* instrumented variants: stage stamps */
	long corrupt_at; /* self-test: flip a bit of this frame (-1: none) */
	uint64_t timeout_ns; /* whole run, then both children are killed */
};

struct ipc_result {
	int status; /* 0; -EMSGSIZE etc: not supported (see why); -EBADMSG */
	char why[320];
	uint64_t msgs; /* measured messages (notify: delivered) */
	uint64_t sent; /* measured messages the client sent */
	double secs, msgs_per_s, kib_per_s;
	struct bench_hist lat; /* round trip, or notify delivery latency */
	struct bench_usage cli, srv; /* over the measured phase */
	uint64_t lost; /* notify over shmlog: overwritten before read */
	double steal_ms; /* CPU time the hypervisor took from this VM */
	bool have_stages;
	/* C_SEND->S_RECV, S_RECV->S_REPLY, S_REPLY->C_RECV */
	struct bench_hist stage[3];
};

/* Run one (transport, conversation, size, wait) point. Returns res->status.
 * A verification failure in either child prints what went wrong and gives
 * -EBADMSG. */
int ipc_run(const struct ipc_run_cfg *cfg, struct ipc_result *res);
/* Steal time of all CPUs so far, in ms (/proc/stat); 0 if unknown. */
double ipc_steal_ms(void);
const char *ipc_conv_name(enum ipc_conv c);

/* ---- helpers shared by the transports (ipc_util.c) ---- */

static inline void ipc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Spin budget: true while @start + spin_ns is in the future. */
bool ipc_spin_more(const struct ipc_params *p, uint64_t *start);

/* A stream receiver that may read past the end of one frame: the extra
 * bytes are kept here for the next call. */
struct ipc_rx {
	char *buf;
	size_t cap, off, len;
};
int ipc_rx_init(struct ipc_rx *rx, size_t cap);
void ipc_rx_free(struct ipc_rx *rx);

int ipc_fd_nonblock(int fd);
/* Write all of @buf; blocks (poll) if the fd is non-blocking and full. */
int ipc_fd_send(int fd, const void *buf, size_t len);
/* Read once, honouring the wait strategy (fd non-blocking when spinning). */
ssize_t ipc_fd_read(int fd, void *buf, size_t cap, const struct ipc_params *p);
/* One whole frame from a byte stream. */
ssize_t ipc_stream_recv(struct ipc_rx *rx, int fd, void *buf, size_t cap,
			const struct ipc_params *p);

/* The two ends of an fd-based mechanism as one process sees them. A
 * transport whose priv starts with this struct can use the ipc_fdio_*
 * functions as its send/recv/detach. */
struct ipc_fdio {
	int rfd, wfd;
	bool dgram; /* one read is one frame (datagram, mq-like) */
	struct ipc_rx rx;
};
int ipc_fdio_attach(struct ipc_chan *c, int rfd, int wfd);
int ipc_fdio_send(struct ipc_chan *c, const void *buf, size_t len);
ssize_t ipc_fdio_recv(struct ipc_chan *c, void *buf, size_t cap);
void ipc_fdio_detach(struct ipc_chan *c);

/* Anonymous shared memory (inherited across fork), page-aligned, zeroed. */
void *ipc_shared_alloc(size_t len);
void ipc_shared_free(void *p, size_t len);

/* Close an fd if >= 0 and set it to -1. */
void ipc_close(int *fd);

#endif
