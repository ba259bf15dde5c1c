/* SPDX-License-Identifier: MIT */
/*
 * OTLP/HTTP for `shmlog forward`: a batch of LogRecords (sink_otlp.c,
 * otlp_proto.c) wrapped in its envelope, gzipped if the URL asks, POSTed
 * on the sink's connection (sink.c), and the receiver's answer read:
 * 2xx delivers the batch, 429/502/503/504 are retried (after the
 * Retry-After given), anything else refuses it for good, as the OTLP
 * specification says. Keep-alive: the connection stays open unless the
 * answer says "Connection: close" or has no Content-Length.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef SHMLOG_HAVE_ZLIB
#include <zlib.h>
#endif

#include "sink.h"

static struct batch http_head, http_tail, http_gz;

/* The value of header @name in the response head @h (@n bytes), as a
 * number; -1 if absent or not a number. */
static long http_header_num(const char *h, size_t n, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = h; p && p < h + n;) {
		const char *eol = memchr(p, '\n', (size_t)(h + n - p));
		if (!eol)
			break;
		if ((size_t)(eol - p) > nl + 1 && !strncasecmp(p, name, nl) &&
		    p[nl] == ':') {
			char *end;
			long v = strtol(p + nl + 1, &end, 10);
			return end == p + nl + 1 ? -1 : v;
		}
		p = eol + 1;
	}
	return -1;
}

static bool http_header_has(const char *h, size_t n, const char *name,
			    const char *value)
{
	size_t nl = strlen(name);
	for (const char *p = h; p < h + n;) {
		const char *eol = memchr(p, '\n', (size_t)(h + n - p));
		if (!eol)
			break;
		if (!strncasecmp(p, name, nl) && p[nl] == ':') {
			for (const char *q = p + nl + 1; q + strlen(value) <= eol;
			     q++)
				if (!strncasecmp(q, value, strlen(value)))
					return true;
		}
		p = eol + 1;
	}
	return false;
}

#ifdef SHMLOG_HAVE_ZLIB
/* zlib's level for Content-Encoding gzip: its fastest. On OTLP batches
 * of log records it compresses nearly as well as the default level 6 at
 * a fraction of its CPU (docs/forwarding.md has the figures), and the
 * forwarder's CPU is what a busy host pays. */
#define OTLP_GZIP_LEVEL 1

static z_stream http_z;
static bool http_z_ready;

/* @n pieces, one gzip member, into @out. 0, -ENOMEM or -EIO. */
static int gzip_pieces(const struct batch *const *piece, int n,
		       struct batch *out)
{
	if (!http_z_ready) {
		if (deflateInit2(&http_z, OTLP_GZIP_LEVEL, Z_DEFLATED, 15 + 16,
				 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return -ENOMEM;
		http_z_ready = true;
	} else if (deflateReset(&http_z) != Z_OK) {
		return -EIO;
	}
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += piece[i]->len;
	size_t need = deflateBound(&http_z, (uLong)total) + 64;
	if (need > out->cap) {
		char *nb = realloc(out->buf, need);
		if (!nb)
			return -ENOMEM;
		out->buf = nb;
		out->cap = need;
	}
	http_z.next_out = (Bytef *)out->buf;
	http_z.avail_out = (uInt)out->cap;
	for (int i = 0; i < n; i++) {
		http_z.next_in = (Bytef *)piece[i]->buf;
		http_z.avail_in = (uInt)piece[i]->len;
		int flush = i + 1 == n ? Z_FINISH : Z_NO_FLUSH;
		if (!piece[i]->len && flush != Z_FINISH)
			continue; /* deflate() would say Z_BUF_ERROR */
		int zr = deflate(&http_z, flush);
		if (zr != (flush == Z_FINISH ? Z_STREAM_END : Z_OK) ||
		    http_z.avail_in)
			return -EIO; /* the bound was not enough: cannot be */
	}
	out->len = out->cap - http_z.avail_out;
	return 0;
}
#endif

/* The receiver's answer to a failed POST, for the user: an OTLP/HTTP
 * receiver answers an error with a google.rpc.Status in the request's
 * encoding; its message, or the body as it is if it is not protobuf. */
static void http_error_text(char *why, size_t whylen, int status,
			    const char *body, size_t blen, bool protobuf)
{
	const char *msg = body;
	size_t mlen = blen;
	if (protobuf)
		mlen = otlp_pb_status_message(body, blen, &msg);
	char text[201];
	if (mlen > 200)
		mlen = 200;
	for (size_t i = 0; i < mlen; i++) /* one line, whatever it holds */
		text[i] = (unsigned char)msg[i] < 32 || msg[i] == 127 ? ' '
								       : msg[i];
	text[mlen] = '\0';
	snprintf(why, whylen, "the receiver answered HTTP %d%s%s", status,
		 mlen ? ": " : "", text);
}

/* POST the batch, wrapped in its envelope (gzipped if the sink says so),
 * and read the answer: 0 for a 2xx; -EAGAIN for what OTLP says to retry
 * (429, 502, 503, 504; then s->retry_after_ms holds the receiver's
 * Retry-After, or 0); -EREMOTEIO for any other answer (the data would
 * never be taken). */
int otlp_send(struct sink *s, const struct batch *b,
	      volatile sig_atomic_t *stop, char *why, size_t whylen)
{
	s->retry_after_ms = 0;
	batch_reset(&http_head);
	batch_reset(&http_tail);
	const char *host = batch_host(b, s);
	int err = s->otlp_protobuf
			  ? otlp_pb_envelope(s, host, b->len, &http_head)
			  : otlp_envelope(s, host, &http_head, &http_tail);
	if (err)
		return err;
	const struct batch *body[3] = {&http_head, b, &http_tail};
	int nbody = 3;
#ifdef SHMLOG_HAVE_ZLIB
	if (s->gzip) {
		err = gzip_pieces(body, 3, &http_gz);
		if (err) {
			snprintf(why, whylen, "cannot gzip: %s",
				 strerror(-err));
			return err;
		}
		body[0] = &http_gz;
		nbody = 1;
	}
#endif
	size_t clen = 0;
	for (int i = 0; i < nbody; i++)
		clen += body[i]->len;
	char req[1024];
	int n = snprintf(req, sizeof(req),
			 "POST %s HTTP/1.1\r\nHost: %s:%s\r\n"
			 "Content-Type: %s\r\n%s"
			 "Content-Length: %zu\r\nUser-Agent: shmlog-forward"
			 "\r\n\r\n",
			 s->http_path, s->host, s->port,
			 s->otlp_protobuf ? "application/x-protobuf"
					  : "application/json",
			 s->gzip ? "Content-Encoding: gzip\r\n" : "", clen);
	err = sink_send_all(s, req, (size_t)n, stop);
	for (int i = 0; i < nbody && !err; i++)
		err = sink_send_all(s, body[i]->buf, body[i]->len, stop);
	if (err) {
		snprintf(why, whylen, "cannot send: %s", strerror(-err));
		return err;
	}
	/* the answer: a head, and a body of Content-Length bytes */
	int64_t deadline = sink_now_ms() + s->timeout_ms;
	s->rlen = 0;
	char *end = NULL;
	while (!(end = s->rlen ? memmem(s->rbuf, s->rlen, "\r\n\r\n", 4)
			       : NULL)) {
		if (s->rlen > 65536) {
			snprintf(why, whylen, "an HTTP answer head of more "
					      "than 64 KiB");
			return -EPROTO;
		}
		err = sink_recv_some(s, deadline, stop);
		if (err) {
			snprintf(why, whylen, "no HTTP answer: %s",
				 strerror(-err));
			return err;
		}
	}
	size_t head = (size_t)(end - s->rbuf) + 4;
	int status = 0;
	if (sscanf(s->rbuf, "HTTP/1.%*d %d", &status) != 1) {
		snprintf(why, whylen, "not an HTTP answer");
		return -EPROTO;
	}
	long alen = http_header_num(s->rbuf, head, "Content-Length");
	long retry = http_header_num(s->rbuf, head, "Retry-After");
	bool close_after = http_header_has(s->rbuf, head, "Connection",
					   "close") ||
			   alen < 0;
	bool pb_answer = http_header_has(s->rbuf, head, "Content-Type",
					 "application/x-protobuf");
	while (alen > 0 && s->rlen < head + (size_t)alen && alen < (1 << 20)) {
		err = sink_recv_some(s, deadline, stop);
		if (err) {
			snprintf(why, whylen, "HTTP answer cut short: %s",
				 strerror(-err));
			return err;
		}
	}
	size_t blen = alen > 0 && s->rlen >= head + (size_t)alen ? (size_t)alen
								    : 0;
	const char *body_in = s->rbuf + head;
	if (status >= 200 && status < 300) {
		/* partial success: the receiver says it dropped some */
		if (pb_answer)
			s->rejected += otlp_pb_rejected(body_in, blen);
		char *rj = !pb_answer && blen ? memmem(body_in, blen,
						       "rejectedLogRecords", 18)
					      : NULL;
		if (rj) {
			rj += 18;
			while (rj < body_in + blen && *rj != '}' &&
			       (*rj < '1' || *rj > '9'))
				rj++;
			if (rj < body_in + blen && *rj != '}')
				s->rejected += strtoull(rj, NULL, 10);
		}
		if (close_after)
			sink_close(s, false);
		return 0;
	}
	http_error_text(why, whylen, status, body_in, blen, pb_answer);
	if (status == 429 || status == 502 || status == 503 || status == 504) {
		if (retry > 0)
			s->retry_after_ms = retry > 3600 ? 3600000
							 : (int)retry * 1000;
		return -EAGAIN;
	}
	return -EREMOTEIO;
}

void otlp_http_free(void)
{
	batch_free(&http_head);
	batch_free(&http_tail);
	batch_free(&http_gz);
#ifdef SHMLOG_HAVE_ZLIB
	if (http_z_ready)
		deflateEnd(&http_z);
	http_z_ready = false;
#endif
}
