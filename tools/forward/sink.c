/* SPDX-License-Identifier: MIT */
/*
 * `shmlog forward`'s connections: URLs, sockets and files, writes bounded
 * in time, and RELP (OTLP/HTTP's requests and answers: sink_http.c).
 *
 * RELP (rsyslog's Reliable Event Logging Protocol) is spoken here directly
 * rather than through librelp: librelp's client acknowledges nothing to its
 * caller (relpCltSendSyslog returns once a frame is queued and replays
 * unacknowledged frames from its own memory after a reconnect), so a
 * forwarder built on it could not tie its cursor to what the receiver
 * acknowledged, and would lose that memory when killed. The protocol is
 * small: frames "TXNR SP COMMAND SP DATALEN [SP DATA] LF"; the client opens
 * with "open", sends "syslog" frames, and the server answers each with
 * "TXNR rsp LEN 200 OK". A batch counts as delivered when every one of its
 * frames has its 200.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../cli.h"
#include "sink.h"

#define RELP_OFFER                                                             \
	"relp_version=0\nrelp_software=shmlog," SHMLOG_VERSION_TEXT            \
	"\ncommands=syslog"
#ifndef SHMLOG_VERSION_TEXT
#define SHMLOG_VERSION_TEXT "1"
#endif

/* ---- URLs ---- */

static int url_host_port(const char *hp, struct sink *s, char *why,
			 size_t whylen)
{
	const char *colon;
	size_t hl;
	if (hp[0] == '[') { /* [IPv6]:port */
		const char *close = strchr(hp, ']');
		if (!close || close[1] != ':')
			goto bad;
		hp++;
		hl = (size_t)(close - hp);
		colon = close + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon)
			goto bad;
		hl = (size_t)(colon - hp);
	}
	const char *port = colon + 1;
	char *end;
	long p = strtol(port, &end, 10);
	if (hl == 0 || hl >= sizeof(s->host) || *end || end == port || p < 1 ||
	    p > 65535)
		goto bad;
	memcpy(s->host, hp, hl);
	s->host[hl] = '\0';
	snprintf(s->port, sizeof(s->port), "%ld", p);
	return 0;
bad:
	snprintf(why, whylen,
		 "'%s' is not HOST:PORT (a port 1-65535; IPv6 as [ADDR]:PORT)",
		 hp);
	return -EINVAL;
}

/* The query of an OTLP URL: compression=gzip or compression=none (the
 * names of the OpenTelemetry exporters' setting). */
static int url_query(const char *url, const char *q, struct sink *s,
		     char *why, size_t whylen)
{
	if (!strcmp(q, "compression=none"))
		return 0;
	if (strcmp(q, "compression=gzip")) {
		snprintf(why, whylen,
			 "'%s': '%s' is not a parameter of an OTLP URL: use "
			 "?compression=gzip or ?compression=none",
			 url, q);
		return -EINVAL;
	}
#ifdef SHMLOG_HAVE_ZLIB
	s->gzip = true;
	return 0;
#else
	(void)s;
	snprintf(why, whylen,
		 "'%s': this shmlog was built without zlib, so it cannot "
		 "gzip: leave out compression=gzip, or rebuild shmlog with "
		 "zlib (Debian: zlib1g-dev)",
		 url);
	return -ENOTSUP;
#endif
}

/* HOST:PORT[/PATH][?QUERY] of an HTTP URL; PATH defaults to OTLP's
 * /v1/logs. */
static int url_http(const char *url, const char *u, struct sink *s,
		    char *why, size_t whylen)
{
	char hp[300], whole[600];
	const char *query = strchr(u, '?');
	size_t ul = query ? (size_t)(query - u) : strlen(u);
	if (ul >= sizeof(whole)) {
		snprintf(why, whylen, "'%s' is too long", url);
		return -EINVAL;
	}
	memcpy(whole, u, ul);
	whole[ul] = '\0';
	u = whole;
	const char *from = u[0] == '[' && strchr(u, ']') ? strchr(u, ']') : u;
	const char *slash = strchr(from, '/');
	size_t n = slash ? (size_t)(slash - u) : strlen(u);
	if (n >= sizeof(hp) || (slash && strlen(slash) >= sizeof(s->http_path))) {
		snprintf(why, whylen, "'%s' is too long", url);
		return -EINVAL;
	}
	memcpy(hp, u, n);
	hp[n] = '\0';
	int err = url_host_port(hp, s, why, whylen);
	if (err)
		return err;
	for (const char *c = slash; c && *c; c++)
		if (*c <= 32 || *c >= 127) {
			snprintf(why, whylen, "the path in '%s' must be "
					      "printable ASCII without spaces",
				 url);
			return -EINVAL;
		}
	snprintf(s->http_path, sizeof(s->http_path), "%s",
		 slash && slash[1] ? slash : "/v1/logs");
	snprintf(s->service, sizeof(s->service), "shmlog");
	return query ? url_query(url, query + 1, s, why, whylen) : 0;
}

static int url_path(const char *p, struct sink *s, char *why, size_t whylen)
{
	if (p[0] != '/' || strlen(p) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(why, whylen,
			 "'%s' is not an absolute socket path of at most %zu "
			 "bytes",
			 p, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return -EINVAL;
	}
	snprintf(s->path, sizeof(s->path), "%s", p);
	return 0;
}

static int url_file(const char *p, struct sink *s, char *why, size_t whylen)
{
	if (!p[0] || !strcmp(p, "-")) {
		s->dest = DEST_STDOUT;
		return 0;
	}
	if (strlen(p) >= sizeof(s->path)) {
		snprintf(why, whylen, "file name too long");
		return -EINVAL;
	}
	s->dest = DEST_FILE;
	snprintf(s->path, sizeof(s->path), "%s", p);
	return 0;
}

/* Why @url names no sink, with the scheme it is a likely typo of. */
static void unknown_sink(const char *url, char *why, size_t whylen)
{
	static const char *const schemes[] = {
		"syslog+tcp", "syslog+unix", "relp", "journal-export",
		"jsonl", "jsonl+unix", "otlp", "otlp+json",
	};
	const char *meant = cli_nearest(url, strcspn(url, ":"), schemes,
					sizeof(schemes) / sizeof(schemes[0]));
	char hint[64] = "";
	if (meant)
		snprintf(hint, sizeof(hint), " (did you mean '%s:'?)", meant);
	snprintf(why, whylen,
		 "unknown sink '%s'%s: use syslog+tcp://HOST:PORT, "
		 "syslog+unix:///PATH, relp://HOST:PORT, "
		 "journal-export:[FILE], jsonl:[FILE], "
		 "jsonl+unix:///PATH, otlp://HOST:PORT[/PATH] or "
		 "otlp+json://HOST:PORT[/PATH]",
		 url, hint);
}

int sink_parse(const char *url, struct sink *s, char *why, size_t whylen)
{
	struct sink out = {.fd = -1, .timeout_ms = 10000, .facility = 1};
	int err;
	if (!strncmp(url, "syslog+tcp://", 13)) {
		out.kind = SINK_SYSLOG;
		out.dest = DEST_TCP;
		err = url_host_port(url + 13, &out, why, whylen);
	} else if (!strncmp(url, "syslog+unix://", 14)) {
		out.kind = SINK_SYSLOG;
		out.dest = DEST_UNIX;
		err = url_path(url + 14, &out, why, whylen);
	} else if (!strncmp(url, "relp://", 7)) {
		out.kind = SINK_RELP;
		out.dest = DEST_TCP;
		err = url_host_port(url + 7, &out, why, whylen);
	} else if (!strncmp(url, "journal-export:", 15)) {
		out.kind = SINK_JOURNAL;
		err = url_file(url + 15, &out, why, whylen);
	} else if (!strncmp(url, "jsonl+unix://", 13)) {
		out.kind = SINK_JSONL;
		out.dest = DEST_UNIX;
		err = url_path(url + 13, &out, why, whylen);
	} else if (!strncmp(url, "jsonl:", 6)) {
		out.kind = SINK_JSONL;
		err = url_file(url + 6, &out, why, whylen);
	} else if (!strncmp(url, "otlp+json://", 12)) {
		out.kind = SINK_OTLP;
		out.dest = DEST_TCP;
		err = url_http(url, url + 12, &out, why, whylen);
	} else if (!strncmp(url, "otlp://", 7)) {
		out.kind = SINK_OTLP;
		out.dest = DEST_TCP;
		out.otlp_protobuf = true;
		err = url_http(url, url + 7, &out, why, whylen);
	} else {
		unknown_sink(url, why, whylen);
		return -EINVAL;
	}
	if (err)
		return err;
	char host[256] = "";
	gethostname(host, sizeof(host) - 1); /* "-" if it fails */
	sink_hostname(out.hostname, sizeof(out.hostname), host);
	*s = out;
	return 0;
}

void sink_hostname(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s", *name ? name : "-");
	for (char *c = out; *c; c++) /* PRINTUSASCII, no spaces */
		if (*c <= 32 || *c >= 127)
			*c = '_';
}

bool sink_reconnects(const struct sink *s)
{
	return s->dest == DEST_TCP || s->dest == DEST_UNIX;
}

/* ---- bounded waits ---- */

int64_t sink_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for @events on @fd until @deadline (ms, CLOCK_MONOTONIC), waking at
 * least every 100 ms to look at *@stop. 0, -ETIMEDOUT or -EINTR (stop). */
static int wait_fd(int fd, short events, int64_t deadline,
		   volatile sig_atomic_t *stop)
{
	for (;;) {
		if (*stop)
			return -EINTR;
		int64_t left = deadline - sink_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {fd, events, 0};
		int n = poll(&p, 1, left > 100 ? 100 : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* ---- connecting ---- */

static int connect_wait(int fd, const struct sockaddr *a, socklen_t alen,
			int timeout_ms, volatile sig_atomic_t *stop)
{
	if (connect(fd, a, alen) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EINTR)
		return -errno;
	int err = wait_fd(fd, POLLOUT, sink_now_ms() + timeout_ms, stop);
	if (err)
		return err;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
		return -errno;
	return -soerr;
}

static int connect_tcp(struct sink *s, volatile sig_atomic_t *stop,
		       char *why, size_t whylen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res;
	int gai = getaddrinfo(s->host, s->port, &hints, &res);
	if (gai) {
		snprintf(why, whylen, "cannot resolve '%s': %s", s->host,
			 gai_strerror(gai));
		return -EHOSTUNREACH;
	}
	int err = -ECONNREFUSED;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family,
				SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		err = connect_wait(fd, a->ai_addr, a->ai_addrlen,
				   s->timeout_ms, stop);
		if (!err) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
			s->fd = fd;
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (err)
		snprintf(why, whylen, "cannot connect to %s port %s: %s",
			 s->host, s->port, strerror(-err));
	return err;
}

static int connect_unix(struct sink *s, volatile sig_atomic_t *stop,
			char *why, size_t whylen)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t pl = strnlen(s->path, sizeof(a.sun_path) - 1); /* checked */
	memcpy(a.sun_path, s->path, pl);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int err = connect_wait(fd, (struct sockaddr *)&a, sizeof(a),
			       s->timeout_ms, stop);
	if (err) {
		close(fd);
		snprintf(why, whylen, "cannot connect to %s: %s", s->path,
			 strerror(-err));
		return err;
	}
	s->fd = fd;
	return 0;
}

static int open_file(struct sink *s, char *why, size_t whylen)
{
	if (s->dest == DEST_STDOUT) {
		s->fd = STDOUT_FILENO;
		return 0;
	}
	int fd = open(s->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		int err = -errno;
		snprintf(why, whylen, "cannot open %s: %s", s->path,
			 strerror(errno));
		return err;
	}
	/* A forwarder killed in the middle of a write leaves a torn last
	 * line; its records go again (the cursor was not saved past them).
	 * End the torn line, so that the next one starts a line of its own
	 * instead of running on from the fragment. */
	struct stat st;
	char last = '\n';
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		int rd = open(s->path, O_RDONLY | O_CLOEXEC);
		if (rd >= 0) {
			if (pread(rd, &last, 1, st.st_size - 1) != 1)
				last = '\n';
			close(rd);
		}
	}
	if (last != '\n' && write(fd, "\n", 1) != 1) {
		int err = -errno;
		snprintf(why, whylen, "cannot write to %s: %s", s->path,
			 strerror(errno));
		close(fd);
		return err;
	}
	s->fd = fd;
	return 0;
}

/* ---- writing and reading, bounded ---- */

int sink_send_all(struct sink *s, const char *p, size_t n,
		  volatile sig_atomic_t *stop)
{
	int64_t deadline = sink_now_ms() + s->timeout_ms;
	bool sock = sink_reconnects(s);
	while (n) {
		ssize_t w;
		if (sock) {
			w = send(s->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		} else {
			/* stdout or a file: its blocking mode is not ours to
			 * change, so wait until a pipe has room for PIPE_BUF
			 * bytes and write no more than that: the write cannot
			 * block, and a reader that stopped reading ends in a
			 * timeout, not a hang */
			int err = wait_fd(s->fd, POLLOUT, deadline, stop);
			if (err)
				return err;
			w = write(s->fd, p, n < PIPE_BUF ? n : PIPE_BUF);
		}
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			deadline = sink_now_ms() + s->timeout_ms; /* progress */
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int err = wait_fd(s->fd, POLLOUT, deadline, stop);
			if (err)
				return err;
			continue;
		}
		return w < 0 ? -errno : -EIO;
	}
	return 0;
}

/* Acknowledge the server's segments at once. A RELP server answers each
 * frame in a small write of its own; with Nagle's algorithm on its side
 * (librelp leaves it on) the last answers of a batch wait for our TCP
 * acknowledgement, which Linux delays by up to 40 ms: one stall per batch.
 * TCP_QUICKACK is not sticky, so it is set again before each wait. */
static void quick_ack(const struct sink *s)
{
	if (s->dest == DEST_TCP) {
		int one = 1;
		setsockopt(s->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
	}
}

/* Read more of the server's answers into rbuf. */
int sink_recv_some(struct sink *s, int64_t deadline,
		   volatile sig_atomic_t *stop)
{
	if (s->rcap - s->rlen < 4096) {
		size_t ncap = s->rcap ? s->rcap * 2 : 16384;
		char *nb = realloc(s->rbuf, ncap);
		if (!nb)
			return -ENOMEM;
		s->rbuf = nb;
		s->rcap = ncap;
	}
	for (;;) {
		ssize_t r = recv(s->fd, s->rbuf + s->rlen, s->rcap - s->rlen,
				 MSG_DONTWAIT);
		if (r > 0) {
			s->rlen += (size_t)r;
			return 0;
		}
		if (r == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		quick_ack(s); /* about to wait: let nothing hold the answers */
		int err = wait_fd(s->fd, POLLIN, deadline, stop);
		if (err)
			return err;
	}
}

/* ---- what a stream socket without acknowledgement may lose ---- */

bool sink_unacknowledged(const struct sink *s)
{
	return s->kind != SINK_RELP && s->kind != SINK_OTLP &&
	       sink_reconnects(s);
}

/* The most a Linux receiver's kernel holds unread on a TCP connection:
 * its receive buffer, at most net.ipv4.tcp_rmem's maximum (ours is taken
 * for the receiver's; 6 MiB is the default). Its advertised window does
 * not tell: it grows as segments arrive, read or not. */
static uint64_t tcp_rmem_max(void)
{
	static uint64_t max;
	if (max)
		return max;
	max = 6u << 20;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_rmem", "r");
	unsigned long lo, def, hi;
	if (f && fscanf(f, "%lu %lu %lu", &lo, &def, &hi) == 3 && hi > max)
		max = hi;
	if (f)
		fclose(f);
	return max;
}

/* Sample the kernel's figures: the bytes not acknowledged (SIOCOUTQ; on
 * a Unix socket, the bytes its receiver has not read), and for TCP what
 * the receiver's kernel may hold unread beyond them. Also right after
 * connecting. */
static void unacked_sample(struct sink *s)
{
	struct unacked *u = &s->unacked;
	int outq = 0;
	if (ioctl(s->fd, SIOCOUTQ, &outq) < 0 || outq < 0)
		outq = 0;
	u->unread = (uint64_t)outq;
	if (s->dest == DEST_TCP)
		u->unread += tcp_rmem_max();
}

/* After a batch of @n records and @len bytes went into the socket: note
 * where it ends, and sample what the receiver has not read yet. */
static void unacked_sent(struct sink *s, size_t n, size_t len)
{
	struct unacked *u = &s->unacked;
	u->bytes += len;
	u->records += n;
	u->last_batch = n;
	u->mark_end[u->head] = u->bytes;
	u->mark_rec[u->head] = u->records;
	u->head = (u->head + 1) % UNACKED_MARKS;
	if (u->nmarks < UNACKED_MARKS)
		u->nmarks++;
	unacked_sample(s);
}

/* The records that may be lost if the connection ends now: those whose
 * bytes end in the last u->unread bytes, counted by whole batches, and
 * never fewer than the last batch. */
static uint64_t unacked_at_risk(const struct unacked *u)
{
	uint64_t safe_end = u->unread < u->bytes ? u->bytes - u->unread : 0;
	uint64_t safe_rec = 0; /* records known to be in bytes up to safe_end */
	bool found = false;
	for (unsigned k = 1; k <= u->nmarks; k++) {
		unsigned i = (u->head + UNACKED_MARKS - k) % UNACKED_MARKS;
		if (u->mark_end[i] <= safe_end) {
			safe_rec = u->mark_rec[i];
			found = true;
			break;
		}
	}
	if (!found && u->nmarks == UNACKED_MARKS)
		safe_rec = 0; /* past the marks kept: count them all */
	uint64_t risk = u->records - safe_rec;
	return risk > u->last_batch ? risk : u->last_batch;
}

/* The connection ends: what it may have lost becomes the sink's count. */
static void unacked_end(struct sink *s)
{
	if (sink_unacknowledged(s) && s->unacked.records)
		s->at_risk += unacked_at_risk(&s->unacked);
	s->unacked = (struct unacked){0};
}

uint64_t sink_take_at_risk(struct sink *s)
{
	uint64_t n = s->at_risk;
	s->at_risk = 0;
	return n;
}

/* Ending the connection: say so (shutdown) and wait, bounded, for the
 * receiver to close its side. A receiver that closes after our end of
 * file has read every byte before it: nothing sent is at risk any more
 * on the way (what it does with the records is its own affair). */
static bool drained(struct sink *s)
{
	if (shutdown(s->fd, SHUT_WR) < 0)
		return false;
	int64_t deadline = sink_now_ms() + (s->timeout_ms < 2000 ? s->timeout_ms
							    : 2000);
	static volatile sig_atomic_t never;
	for (;;) {
		char c[256];
		ssize_t r = recv(s->fd, c, sizeof(c), MSG_DONTWAIT);
		if (r == 0)
			return true;
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR)
			return false;
		if (r < 0 && wait_fd(s->fd, POLLIN, deadline, &never))
			return false;
	}
}

/* Has the receiver closed the connection (or reset it)? It never sends
 * on these protocols, so anything to read is an end of file or an error:
 * found before a batch is written into a dead connection. */
static bool peer_gone(const struct sink *s)
{
	struct pollfd p = {s->fd, POLLIN | POLLRDHUP, 0};
	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLERR | POLLHUP | POLLRDHUP))
		return true;
	char c;
	ssize_t r = recv(s->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			  errno != EINTR);
}

/* ---- RELP ---- */

struct relp_frame {
	uint64_t txnr;
	char cmd[32];
	const char *data;
	size_t len;
};

/* Take one whole frame off the front of rbuf: 1 if one was there, 0 if
 * more bytes are needed, -EPROTO if the bytes are not RELP. The frame's
 * data stay valid until relp_consume(). */
static int relp_parse(const struct sink *s, struct relp_frame *f,
		      size_t *used)
{
	if (!s->rlen)
		return 0;
	const char *p = s->rbuf, *end = s->rbuf + s->rlen;
	char *e;
	const char *sp1 = memchr(p, ' ', (size_t)(end - p));
	if (!sp1)
		return s->rlen > 64 ? -EPROTO : 0;
	f->txnr = strtoull(p, &e, 10);
	if (e != sp1)
		return -EPROTO;
	const char *cmd = sp1 + 1;
	const char *sp2 = memchr(cmd, ' ', (size_t)(end - cmd));
	if (!sp2)
		return end - cmd > 40 ? -EPROTO : 0;
	size_t cl = (size_t)(sp2 - cmd);
	if (cl == 0 || cl >= sizeof(f->cmd))
		return -EPROTO;
	memcpy(f->cmd, cmd, cl);
	f->cmd[cl] = '\0';
	const char *num = sp2 + 1;
	size_t k = 0;
	uint64_t len = 0;
	while (num + k < end && num[k] >= '0' && num[k] <= '9' && k < 10)
		len = len * 10 + (uint64_t)(num[k++] - '0');
	if (num + k == end)
		return 0;
	if (k == 0 || len > (1u << 20))
		return -EPROTO;
	const char *data = num + k;
	if (len) {
		if (*data != ' ')
			return -EPROTO;
		data++;
	}
	if ((size_t)(end - data) < len + 1)
		return 0;
	if (data[len] != '\n')
		return -EPROTO;
	f->data = data;
	f->len = (size_t)len;
	*used = (size_t)(data + len + 1 - s->rbuf);
	return 1;
}

static void relp_consume(struct sink *s, size_t used)
{
	memmove(s->rbuf, s->rbuf + used, s->rlen - used);
	s->rlen -= used;
}

/* RELP transaction numbers run from 1 to 999999999, then start at 1
 * again (the RELP specification). */
#define RELP_TXNR_MAX 999999999u

/* While at least RELP_COALESCE_MIN answers are awaited, wait
 * RELP_COALESCE_NS before each read: at rsyslogd's 10-20 us per record, a
 * read then takes a dozen answers instead of two or three. */
#define RELP_COALESCE_MIN 64
#define RELP_COALESCE_NS 200000

static uint64_t relp_next(uint64_t txnr)
{
	return txnr >= RELP_TXNR_MAX ? 1 : txnr + 1;
}

/* Wait for the answers to @count frames from @first on: 0 when all said
 * 200. */
static int relp_wait_acks(struct sink *s, uint64_t first, size_t count,
			  volatile sig_atomic_t *stop, char *why,
			  size_t whylen)
{
	int64_t deadline = sink_now_ms() + s->timeout_ms;
	uint64_t expect = first;
	while (count) {
		struct relp_frame f;
		size_t used = 0;
		int got = relp_parse(s, &f, &used);
		if (got < 0) {
			snprintf(why, whylen, "the RELP server sent bytes that "
					      "are not RELP");
			return got;
		}
		if (got == 0) {
			/* Many answers still to come: let a few arrive before
			 * reading, rather than pay a recv for every two or three
			 * (the server writes each answer on its own). */
			if (count >= RELP_COALESCE_MIN)
				nanosleep(&(struct timespec){0, RELP_COALESCE_NS},
					  NULL);
			int err = sink_recv_some(s, deadline, stop);
			if (err) {
				snprintf(why, whylen,
					 "no RELP acknowledgement: %s",
					 strerror(-err));
				return err;
			}
			continue;
		}
		if (!strcmp(f.cmd, "serverclose")) {
			snprintf(why, whylen, "the RELP server closed the "
					      "session");
			return -ECONNRESET;
		}
		if (strcmp(f.cmd, "rsp") || f.txnr != expect) {
			snprintf(why, whylen,
				 "unexpected RELP frame %" PRIu64 " %s "
				 "(waiting for the answer to %" PRIu64 ")",
				 f.txnr, f.cmd, expect);
			return -EPROTO;
		}
		if (f.len < 3 || memcmp(f.data, "200", 3)) {
			snprintf(why, whylen, "the RELP server refused: %.*s",
				 (int)(f.len > 100 ? 100 : f.len), f.data);
			return -EREMOTEIO;
		}
		relp_consume(s, used);
		expect = relp_next(expect);
		count--;
		deadline = sink_now_ms() + s->timeout_ms; /* progress */
	}
	return 0;
}

static int relp_frame_into(struct batch *out, uint64_t txnr, const char *cmd,
			   const char *data, size_t len)
{
	char head[64];
	int n = len ? snprintf(head, sizeof(head), "%" PRIu64 " %s %zu ", txnr,
			       cmd, len)
		    : snprintf(head, sizeof(head), "%" PRIu64 " %s 0", txnr,
			       cmd);
	int err = batch_reserve(out, (size_t)n + len + 1);
	if (err)
		return err;
	memcpy(out->buf + out->len, head, (size_t)n);
	out->len += (size_t)n;
	memcpy(out->buf + out->len, data, len);
	out->len += len;
	out->buf[out->len++] = '\n';
	return 0;
}

static int relp_open(struct sink *s, volatile sig_atomic_t *stop, char *why,
		     size_t whylen)
{
	struct batch f = {0};
	s->txnr = 1;
	s->rlen = 0;
	int err = relp_frame_into(&f, s->txnr, "open", RELP_OFFER,
				  strlen(RELP_OFFER));
	if (!err)
		err = sink_send_all(s, f.buf, f.len, stop);
	batch_free(&f);
	if (err) {
		snprintf(why, whylen, "cannot send the RELP offer: %s",
			 strerror(-err));
		return err;
	}
	err = relp_wait_acks(s, 1, 1, stop, why, whylen);
	s->txnr = relp_next(1);
	return err;
}

static struct batch relp_out; /* frames of the batch being sent */

static int relp_send(struct sink *s, const struct batch *b,
		     volatile sig_atomic_t *stop, char *why, size_t whylen)
{
	batch_reset(&relp_out);
	uint64_t first = s->txnr;
	size_t start = 0;
	for (size_t i = 0; i < b->n; i++) {
		int err = relp_frame_into(&relp_out, s->txnr, "syslog",
					  b->buf + start, b->ends[i] - start);
		s->txnr = relp_next(s->txnr);
		if (err)
			return err;
		start = b->ends[i];
	}
	int err = sink_send_all(s, relp_out.buf, relp_out.len, stop);
	if (err) {
		snprintf(why, whylen, "cannot send: %s", strerror(-err));
		return err;
	}
	return b->n ? relp_wait_acks(s, first, b->n, stop, why, whylen) : 0;
}

bool sink_retryable(const struct sink *s, int err)
{
	return s->kind != SINK_OTLP || err != -EREMOTEIO;
}

/* ---- the sink's interface ---- */

int sink_connect(struct sink *s, volatile sig_atomic_t *stop, char *why,
		 size_t whylen)
{
	int err;
	switch (s->dest) {
	case DEST_TCP: err = connect_tcp(s, stop, why, whylen); break;
	case DEST_UNIX: err = connect_unix(s, stop, why, whylen); break;
	default: err = open_file(s, why, whylen); break;
	}
	if (!err && sink_unacknowledged(s))
		unacked_sample(s);
	if (!err && s->kind == SINK_RELP) {
		err = relp_open(s, stop, why, whylen);
		if (err)
			sink_close(s, false);
	}
	return err;
}

int sink_send(struct sink *s, const struct batch *b,
	      volatile sig_atomic_t *stop, char *why, size_t whylen)
{
	int err;
	if (s->kind == SINK_RELP) {
		err = relp_send(s, b, stop, why, whylen);
	} else if (s->kind == SINK_OTLP) {
		err = otlp_send(s, b, stop, why, whylen);
	} else if (sink_unacknowledged(s) && peer_gone(s)) {
		err = -ECONNRESET;
		snprintf(why, whylen, "the receiver closed the connection");
	} else {
		err = sink_send_all(s, b->buf, b->len, stop);
		if (err)
			snprintf(why, whylen, "cannot write: %s",
				 strerror(-err));
		else if (sink_unacknowledged(s))
			unacked_sent(s, b->n, b->len);
	}
	if (err)
		sink_close(s, false);
	return err;
}

void sink_close(struct sink *s, bool polite)
{
	if (s->fd < 0)
		return;
	if (polite && s->kind == SINK_RELP) {
		/* close, and a short bounded wait for its answer */
		static volatile sig_atomic_t never;
		char why[128];
		int saved = s->timeout_ms;
		s->timeout_ms = 2000;
		char frame[48];
		int n = snprintf(frame, sizeof(frame), "%" PRIu64 " close 0\n",
				 s->txnr);
		if (!sink_send_all(s, frame, (size_t)n, &never))
			relp_wait_acks(s, s->txnr, 1, &never, why,
				       sizeof(why));
		s->timeout_ms = saved;
	}
	if (polite && sink_unacknowledged(s) && drained(s))
		s->unacked = (struct unacked){0}; /* it read everything */
	unacked_end(s);
	if (s->dest != DEST_STDOUT)
		close(s->fd);
	s->fd = -1;
}

void sink_free(struct sink *s)
{
	sink_close(s, false);
	free(s->rbuf);
	free(s->scratch);
	free(s->json.buf); /* never flushed: its fd is -1 */
	s->json.buf = NULL;
	batch_free(&relp_out);
	otlp_http_free();
}
