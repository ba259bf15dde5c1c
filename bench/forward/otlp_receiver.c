/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench forward's OTLP/HTTP receiver (otlp_receiver.h). One
 * connection at a time (the forwarder keeps one), HTTP/1.1 with
 * Content-Length; a protobuf request's LogRecords are counted by walking
 * ExportLogsServiceRequest > ResourceLogs > ScopeLogs, a JSON request's
 * by their "timeUnixNano" keys. It stops with SIGTERM.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef SHMLOG_HAVE_ZLIB
#include <zlib.h>
#endif

#include "otlp_receiver.h"

bool otlp_rx_gzip(void)
{
#ifdef SHMLOG_HAVE_ZLIB
	return true;
#else
	return false;
#endif
}

/* ---- counting LogRecords ---- */

static bool varint(const unsigned char **p, const unsigned char *end,
		   uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*p == end)
			return false;
		unsigned char b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Call @fn on each LEN field @want of the message [p, end); -1 if the
 * bytes are not protobuf, else the sum of what @fn returned (or the
 * count of fields, @fn NULL). */
static long each_len(const unsigned char *p, const unsigned char *end,
		     unsigned want,
		     long (*fn)(const unsigned char *, const unsigned char *))
{
	long sum = 0;
	while (p < end) {
		uint64_t tag, v;
		if (!varint(&p, end, &tag))
			return -1;
		switch (tag & 7) {
		case 0:
			if (!varint(&p, end, &v))
				return -1;
			break;
		case 1:
			if (end - p < 8)
				return -1;
			p += 8;
			break;
		case 2:
			if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
				return -1;
			if ((tag >> 3) == want) {
				long k = fn ? fn(p, p + v) : 1;
				if (k < 0)
					return -1;
				sum += k;
			}
			p += v;
			break;
		case 5:
			if (end - p < 4)
				return -1;
			p += 4;
			break;
		default: return -1;
		}
	}
	return sum;
}

static long scope_logs(const unsigned char *p, const unsigned char *end)
{
	return each_len(p, end, 2, NULL); /* log_records */
}

static long resource_logs(const unsigned char *p, const unsigned char *end)
{
	return each_len(p, end, 2, scope_logs);
}

static long count_protobuf(const char *b, size_t n)
{
	const unsigned char *p = (const unsigned char *)b;
	return each_len(p, p + n, 1, resource_logs);
}

static long count_json(const char *b, size_t n)
{
	long k = 0;
	const char *p = b, *end = b + n;
	while ((p = memmem(p, (size_t)(end - p), "\"timeUnixNano\"", 14))) {
		k++;
		p += 14;
	}
	return k;
}

/* ---- HTTP ---- */

struct buf {
	char *p;
	size_t len, cap;
};

static bool buf_room(struct buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 1 << 16;
	while (cap < b->len + n)
		cap *= 2;
	char *np = realloc(b->p, cap);
	if (!np)
		return false;
	b->p = np;
	b->cap = cap;
	return true;
}

#ifdef SHMLOG_HAVE_ZLIB
static bool gunzip(const char *in, size_t n, struct buf *out)
{
	z_stream z = {0};
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return false;
	out->len = 0;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	int r = Z_OK;
	while (r == Z_OK) {
		if (!buf_room(out, n * 4 + 4096))
			break;
		z.next_out = (Bytef *)out->p + out->len;
		z.avail_out = (uInt)(out->cap - out->len);
		r = inflate(&z, Z_NO_FLUSH);
		out->len = out->cap - z.avail_out;
	}
	inflateEnd(&z);
	return r == Z_STREAM_END;
}
#endif

static const char *header(const char *h, size_t n, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = h; p && p < h + n;) {
		if (!strncasecmp(p, name, nl) && p[nl] == ':')
			return p + nl + 1;
		p = memchr(p, '\n', (size_t)(h + n - p));
		if (p)
			p++;
	}
	return NULL;
}

/* Serve one connection until the forwarder closes it. */
static void serve(int fd, struct otlp_rx_counts *c)
{
	struct buf in = {0}, plain = {0};
	for (;;) {
		char *end;
		while (!(end = in.len ? memmem(in.p, in.len, "\r\n\r\n", 4)
				      : NULL)) {
			if (!buf_room(&in, 65536))
				goto out;
			ssize_t r = read(fd, in.p + in.len, in.cap - in.len);
			if (r <= 0)
				goto out;
			in.len += (size_t)r;
		}
		size_t head = (size_t)(end - in.p) + 4;
		const char *cl = header(in.p, head, "Content-Length");
		const char *ce = header(in.p, head, "Content-Encoding");
		const char *ct = header(in.p, head, "Content-Type");
		size_t blen = cl ? strtoul(cl, NULL, 10) : 0;
		bool gz = ce && !strncmp(ce + strspn(ce, " "), "gzip", 4);
		bool pb = ct && !strncmp(ct + strspn(ct, " "),
					 "application/x-protobuf", 22);
		while (in.len < head + blen) {
			if (!buf_room(&in, head + blen - in.len))
				goto out;
			ssize_t r = read(fd, in.p + in.len, in.cap - in.len);
			if (r <= 0)
				goto out;
			in.len += (size_t)r;
		}
		const char *body = in.p + head;
		size_t n = blen;
		bool ok = true;
		if (gz) {
#ifdef SHMLOG_HAVE_ZLIB
			ok = gunzip(body, blen, &plain);
			body = plain.p;
			n = plain.len;
#else
			ok = false;
#endif
		}
		long k = !ok ? -1
			 : pb ? count_protobuf(body, n)
			      : count_json(body, n);
		__atomic_fetch_add(&c->requests, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&c->bytes_in, (int64_t)blen,
				   __ATOMIC_RELAXED);
		if (k >= 0) {
			__atomic_fetch_add(&c->bytes_plain, (int64_t)n,
					   __ATOMIC_RELAXED);
			__atomic_fetch_add(&c->records, k, __ATOMIC_RELEASE);
		} else {
			__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
		}
		const char *answer =
			k >= 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
			       : "HTTP/1.1 400 Bad Request\r\nContent-Length: "
				 "0\r\n\r\n";
		if (write(fd, answer, strlen(answer)) < 0)
			goto out;
		memmove(in.p, in.p + head + blen, in.len - head - blen);
		in.len -= head + blen;
	}
out:
	free(in.p);
	free(plain.p);
}

bool otlp_rx_start(struct otlp_rx *rx)
{
	rx->c = mmap(NULL, sizeof(*rx->c), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rx->c == MAP_FAILED) {
		rx->c = NULL;
		return false;
	}
	memset(rx->c, 0, sizeof(*rx->c));
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(ls, (struct sockaddr *)&a, &l) || listen(ls, 8)) {
		if (ls >= 0)
			close(ls);
		return false;
	}
	rx->port = ntohs(a.sin_port);
	rx->pid = fork();
	if (rx->pid == 0) {
		signal(SIGTERM, SIG_DFL);
		for (;;) {
			int fd = accept(ls, NULL, NULL);
			if (fd < 0 && errno == EINTR)
				continue;
			if (fd < 0)
				_exit(1);
			serve(fd, rx->c);
			close(fd);
		}
	}
	close(ls);
	return rx->pid > 0;
}

void otlp_rx_stop(struct otlp_rx *rx)
{
	if (rx->pid > 0) {
		kill(rx->pid, SIGTERM);
		waitpid(rx->pid, NULL, 0);
	}
	rx->pid = 0;
	if (rx->c)
		munmap(rx->c, sizeof(*rx->c));
	rx->c = NULL;
}
