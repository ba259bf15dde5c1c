/* SPDX-License-Identifier: MIT */
/* Frame sealing and checking, fd helpers and the spin budget. */
#include "ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Four independent Fletcher-style lanes over 64-bit words: position
 * dependent (a swapped or shifted block changes the sum), and fast enough
 * (well under a cycle per byte) that verifying every 1 MiB frame does not
 * drown the mechanism being measured. Its cost is printed with the table.
 */
uint32_t ipc_frame_sum(const void *frame, size_t len)
{
	const unsigned char *p = frame;
	uint64_t a[4] = {1, 2, 3, 4}, b[4] = {0, 0, 0, 0};
	size_t i = 0;

	for (; i + 32 <= len; i += 32) {
		for (int k = 0; k < 4; k++) {
			uint64_t w;
			memcpy(&w, p + i + 8 * k, 8);
			a[k] += w;
			b[k] += a[k];
		}
	}
	uint64_t tail = 0;
	for (unsigned s = 0; i < len; i++, s += 8)
		tail ^= (uint64_t)p[i] << (s & 63);
	uint64_t h = tail ^ (uint64_t)len * 0x9e3779b97f4a7c15ull;
	for (int k = 0; k < 4; k++)
		h = (h ^ a[k] ^ (b[k] << 1)) * 0xff51afd7ed558ccdull;
	return (uint32_t)(h ^ (h >> 32));
}

void ipc_frame_seal(void *frame, uint32_t seq, uint32_t len, uint32_t op,
		    uint64_t t_send)
{
	struct ipc_frame h = {
		.seq = seq, .len = len, .op = op, .sum = 0, .t_send = t_send};
	unsigned char *p = frame;

	/* The payload's first bytes echo the sequence number, so a stale
	 * payload behind a fresh header is caught too. */
	memcpy(p + IPC_HDR, &seq, len < 4 ? len : 4);
	memcpy(p, &h, IPC_HDR);
	h.sum = ipc_frame_sum(p, IPC_HDR + len);
	memcpy(p, &h, IPC_HDR);
}

int ipc_frame_check(const void *frame, size_t got, uint32_t seq,
		    uint32_t len, char *err, size_t errlen)
{
	struct ipc_frame h;
	unsigned char *p = (unsigned char *)frame;

	if (got < IPC_HDR) {
		snprintf(err, errlen, "short frame: %zu bytes", got);
		return -EBADMSG;
	}
	memcpy(&h, p, IPC_HDR);
	if (h.seq != seq) {
		snprintf(err, errlen, "sequence mismatch: expected %u, got %u",
			 seq, h.seq);
		return -EBADMSG;
	}
	if (h.len != len || got != IPC_HDR + len) {
		snprintf(err, errlen,
			 "length mismatch (seq %u): expected %u, header says "
			 "%u, received %zu bytes",
			 seq, len, h.len, got - IPC_HDR);
		return -EBADMSG;
	}
	uint32_t want = h.sum;
	struct ipc_frame z = h;
	z.sum = 0;
	memcpy(p, &z, IPC_HDR); /* our private copy: fine to scribble */
	uint32_t sum = ipc_frame_sum(p, got);
	memcpy(p, &h, IPC_HDR);
	if (sum != want) {
		snprintf(err, errlen,
			 "checksum mismatch (seq %u, %u bytes): frame says "
			 "%08x, computed %08x",
			 seq, len, want, sum);
		return -EBADMSG;
	}
	uint32_t echo = 0;
	memcpy(&echo, p + IPC_HDR, len < 4 ? len : 4);
	uint32_t mask = len >= 4 ? 0xffffffffu : (1u << (8 * len)) - 1;
	if (echo != (seq & mask)) {
		snprintf(err, errlen, "payload does not echo seq %u", seq);
		return -EBADMSG;
	}
	return 0;
}

bool ipc_spin_more(const struct ipc_params *p, uint64_t *start)
{
	if (p->wait != IPC_WAIT_SPIN)
		return false;
	uint64_t now = bench_now_ns();
	if (!*start)
		*start = now;
	return now - *start < p->spin_ns;
}

int ipc_rx_init(struct ipc_rx *rx, size_t cap)
{
	rx->buf = malloc(cap);
	rx->cap = cap;
	rx->off = rx->len = 0;
	if (!rx->buf)
		return -ENOMEM;
	memset(rx->buf, 0, cap); /* fault it in now, not while measuring */
	return 0;
}

void ipc_rx_free(struct ipc_rx *rx)
{
	free(rx->buf);
	rx->buf = NULL;
}

int ipc_fd_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int wait_fd(int fd, short ev)
{
	struct pollfd pfd = {.fd = fd, .events = ev};
	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int ipc_fd_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int r = wait_fd(fd, POLLOUT);
			if (r)
				return r;
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/*
 * Blocking: one read(2) that sleeps. Spin-then-block: the fd is
 * non-blocking and we retry the read (a syscall each time: there is no
 * other way to look into a kernel queue) for spin_ns, then poll(2).
 */
ssize_t ipc_fd_read(int fd, void *buf, size_t cap, const struct ipc_params *p)
{
	uint64_t spin_start = 0;
	for (;;) {
		ssize_t n = read(fd, buf, cap);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		if (ipc_spin_more(p, &spin_start)) {
			ipc_cpu_relax();
			continue;
		}
		int r = wait_fd(fd, POLLIN);
		if (r)
			return r;
	}
}

/*
 * A frame from a byte stream. One read usually brings the whole frame (and
 * for notifications often several): what lies past this frame is kept in
 * @rx for the next call, so a stream costs one syscall per batch, which is
 * its real advantage for small one-way messages.
 */
ssize_t ipc_stream_recv(struct ipc_rx *rx, int fd, void *buf, size_t cap,
			const struct ipc_params *p)
{
	char *out = buf;
	size_t have = 0;

	if (rx->len) {
		size_t take = rx->len;
		if (take >= IPC_HDR) {
			struct ipc_frame h;
			memcpy(&h, rx->buf + rx->off, IPC_HDR);
			size_t whole = IPC_HDR + (size_t)h.len;
			if (whole > cap)
				return -EMSGSIZE;
			if (take > whole)
				take = whole;
		}
		memcpy(out, rx->buf + rx->off, take);
		rx->off += take;
		rx->len -= take;
		have = take;
	}
	for (;;) {
		size_t want = IPC_HDR;
		if (have >= IPC_HDR) {
			struct ipc_frame h;
			memcpy(&h, out, IPC_HDR);
			want = IPC_HDR + (size_t)h.len;
			if (want > cap)
				return -EMSGSIZE;
		}
		if (have >= want) {
			if (have > want) { /* keep the next frames */
				memcpy(rx->buf, out + want, have - want);
				rx->off = 0;
				rx->len = have - want;
			}
			return (ssize_t)want;
		}
		/* Read into the caller's buffer, but never past rx->cap of
		 * surplus, which is what we can keep. */
		size_t room = cap - have;
		if (room > want - have + rx->cap)
			room = want - have + rx->cap;
		ssize_t n = ipc_fd_read(fd, out + have, room, p);
		if (n <= 0)
			return n == 0 && have ? -EPIPE : n;
		have += (size_t)n;
	}
}

int ipc_fdio_attach(struct ipc_chan *c, int rfd, int wfd)
{
	struct ipc_fdio *io = c->priv;

	io->rfd = rfd;
	io->wfd = wfd;
	if (c->p.wait == IPC_WAIT_SPIN) {
		int r = ipc_fd_nonblock(rfd);
		if (r)
			return r;
	}
	return io->dgram ? 0 : ipc_rx_init(&io->rx, c->p.max_frame);
}

int ipc_fdio_send(struct ipc_chan *c, const void *buf, size_t len)
{
	struct ipc_fdio *io = c->priv;

	if (!io->dgram)
		return ipc_fd_send(io->wfd, buf, len);
	/* A datagram goes whole or not at all: retry, never split. */
	for (;;) {
		ssize_t n = write(io->wfd, buf, len);
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			return -EIO;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		int r = wait_fd(io->wfd, POLLOUT);
		if (r)
			return r;
	}
}

ssize_t ipc_fdio_recv(struct ipc_chan *c, void *buf, size_t cap)
{
	struct ipc_fdio *io = c->priv;

	if (io->dgram)
		return ipc_fd_read(io->rfd, buf, cap, &c->p);
	return ipc_stream_recv(&io->rx, io->rfd, buf, cap, &c->p);
}

void ipc_fdio_detach(struct ipc_chan *c)
{
	struct ipc_fdio *io = c->priv;

	ipc_rx_free(&io->rx);
}

void *ipc_shared_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void ipc_shared_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

void ipc_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}
