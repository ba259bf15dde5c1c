/* SPDX-License-Identifier: MIT */
/*
 * Where `shmlog forward` sends records: a URL names a sink, which formats
 * records into a batch and delivers batches.
 *
 *   syslog+tcp://HOST:PORT   RFC 5424, RFC 6587 octet counting (rsyslog
 *   syslog+unix:///PATH      imptcp/imtcp, syslog-ng network(), ...)
 *   relp://HOST:PORT         RELP, every record acknowledged (rsyslog imrelp)
 *   journal-export:[FILE]    systemd's Journal Export Format, stdout or FILE
 *                            (systemd-journal-remote reads it)
 *   jsonl:[FILE]             one JSON object per line, stdout or FILE
 *   jsonl+unix:///PATH       the same into a Unix stream socket
 *   otlp://HOST:PORT[/PATH][?compression=gzip]
 *                            OpenTelemetry logs, OTLP/HTTP with protobuf
 *                            (POST PATH, default /v1/logs; otlp_proto.c)
 *   otlp+json://HOST:PORT[/PATH][?compression=gzip]
 *                            the same with JSON (sink_otlp.c)
 */
#ifndef SHMLOG_SINK_H
#define SHMLOG_SINK_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../format.h"
#include "shmlog.h"

enum sink_kind { SINK_SYSLOG, SINK_RELP, SINK_JOURNAL, SINK_JSONL, SINK_OTLP };
enum sink_dest { DEST_STDOUT, DEST_FILE, DEST_TCP, DEST_UNIX };

/* A batch of formatted records, delivered (and acknowledged) as a whole.
 * Its records are all of one host: @host (sink_hostname()'s form), or
 * the sink's own when it is empty (batch_host()). */
struct batch {
	char *buf;
	size_t len, cap;
	size_t *ends; /* end offset of each message in buf */
	size_t n, ncap;
	char host[256]; /* "": this machine's */
};

/* A stream socket without acknowledgement (syslog+tcp, syslog+unix,
 * jsonl+unix): what was written on the connection and may not have been
 * read by the receiver when it broke. After each batch the kernel's
 * figures are sampled: the bytes not yet acknowledged by the receiver's
 * kernel (SIOCOUTQ; for a Unix socket, the bytes its receiver has not
 * read) and, for TCP, plus the most the receiver's kernel may hold
 * unread (a Linux receive buffer at its largest, tcp_rmem). The records
 * in those last bytes, and at least the last batch (the receiver may
 * have closed before it arrived), may be lost when the connection
 * breaks. Counted by whole batches: an upper bound. A polite close
 * (shutdown, then the receiver's end of file) proves all of it read. */
#define UNACKED_MARKS 1024
struct unacked {
	uint64_t bytes, records; /* written on this connection */
	uint64_t mark_end[UNACKED_MARKS]; /* byte end of each recent batch */
	uint64_t mark_rec[UNACKED_MARKS]; /* records up to that end */
	unsigned nmarks, head; /* head: the next slot */
	uint64_t last_batch; /* records of the last batch */
	uint64_t unread; /* bytes possibly unread, at the last sample */
};

struct sink {
	enum sink_kind kind;
	enum sink_dest dest;
	char host[256], port[32];
	char path[PATH_MAX];
	int fd; /* -1: not connected */
	int timeout_ms; /* for connect, each write and each acknowledgement */
	int facility; /* syslog facility, 0..23 */
	char hostname[256]; /* RFC 5424 HOSTNAME: this machine's */
	/* RELP */
	uint64_t txnr;
	char *rbuf;
	size_t rlen, rcap;
	/* per-record scratch */
	char *scratch;
	size_t scap;
	struct out json; /* JSON lines: tools/format.c formats into it */
	int64_t sec_cached; /* timestamp cache: second last formatted */
	char sec_text[32];
	struct unacked unacked; /* syslog+tcp, syslog+unix, jsonl+unix */
	uint64_t at_risk; /* records ended connections may have lost */
	/* OTLP/HTTP */
	char http_path[256];
	char service[128]; /* resource attribute service.name */
	bool otlp_protobuf; /* otlp://, else otlp+json:// */
	bool gzip; /* ?compression=gzip: Content-Encoding gzip */
	int retry_after_ms; /* the receiver's Retry-After, after a failure */
	uint64_t rejected; /* partialSuccess.rejectedLogRecords, summed */
};

/* A loss to report downstream: @overwritten + @torn records of @lane went
 * missing among sequence numbers @first..@last (the gap before the next
 * record delivered, which may also hold records a clear hid). Receivers
 * can tell a loss message sent twice (at-least-once delivery) by the
 * range. */
struct sink_loss {
	const char *buffer; /* its file */
	const char *name; /* as named (-b) */
	unsigned lane;
	uint64_t overwritten, torn;
	uint64_t first, last;
};

/* Host name @name as the sinks send it, into @out (@n bytes): RFC 5424's
 * HOSTNAME, printable US-ASCII with no space (others become '_'), "-" if
 * empty. */
void sink_hostname(char *out, size_t n, const char *name);
/* The host @b's records are of: b->host, else @s's machine's. */
static inline const char *batch_host(const struct batch *b,
				     const struct sink *s)
{
	return b->host[0] ? b->host : s->hostname;
}

/* Parse @url into @s. 0, or -EINVAL with a sentence in @why. */
int sink_parse(const char *url, struct sink *s, char *why, size_t whylen);
/* Does the sink reconnect after a failure (network sinks), or is a
 * failure final (stdout, files)? */
bool sink_reconnects(const struct sink *s);
/* Connect (or open). 0, or a negative errno with a sentence in @why.
 * Bounded by s->timeout_ms and by *@stop. */
int sink_connect(struct sink *s, volatile sig_atomic_t *stop, char *why,
		 size_t whylen);
/* Deliver @b: 0 once it is written (and, for RELP, every record
 * acknowledged with 200), else a negative errno with @why; the sink is
 * then closed. Bounded by s->timeout_ms and by *@stop. */
int sink_send(struct sink *s, const struct batch *b,
	      volatile sig_atomic_t *stop, char *why, size_t whylen);
/* Over a stream socket without acknowledgement: does delivery go
 * unconfirmed (true), and how many records may have been lost when the
 * last connection broke (sink_send() failed, or sink_close())? The count
 * is taken when the connection ends, then reset. */
bool sink_unacknowledged(const struct sink *s);
uint64_t sink_take_at_risk(struct sink *s);
/* After sink_send() failed with @err: may sending it again succeed (an
 * OTLP receiver's 4xx other than 429 says never)? */
bool sink_retryable(const struct sink *s, int err);
/* Close politely (RELP: close command, bounded wait). */
void sink_close(struct sink *s, bool polite);
void sink_free(struct sink *s);

/* A record as the sinks take it: the buffer it came from, and for a
 * printf-style record formatted by the reader (SHMLOG_REC_DEFERRED) its
 * format and values (shmlog_reader_deferred()), else NULL. */
struct sink_rec {
	const char *buffer; /* the buffer as named (-b) */
	const char *path; /* its file */
	const struct shmlog_record *r;
	const char *fmt, *args;
	bool args_cut; /* SHMLOG_DEFERRED_CUT: not every value is in args */
};

/* Does @s show a printf-style record's format and values (then the
 * forwarder asks the reader for them)? */
bool sink_wants_deferred(const struct sink *s);

/* Mark the end of a message in @b (its records' ends, for delivery
 * counts): 0, or -ENOMEM. */
int batch_end_message(struct batch *b);
/* Room for @n more bytes in @b (its buffer doubles as it grows): 0 or
 * -ENOMEM. */
int batch_reserve(struct batch *b, size_t n);
/* Append a record / a loss message to @b formatted for @s. 0 or -ENOMEM. */
int batch_add_record(struct batch *b, struct sink *s,
		     const struct sink_rec *rec);
int batch_add_loss(struct batch *b, struct sink *s,
		   const struct sink_loss *l);
void batch_reset(struct batch *b);
void batch_free(struct batch *b);

/* OTLP (sink_otlp.c): a record or a loss as a LogRecord into @b, in the
 * sink's encoding, and the JSON envelope around a batch (@head before it,
 * @tail after). */
int otlp_add_record(struct batch *b, const struct sink *s,
		    const struct sink_rec *rec);
int otlp_add_loss(struct batch *b, const struct sink *s,
		  const struct sink_loss *l, const char *text);
int otlp_envelope(const struct sink *s, const char *host,
		  struct batch *head, struct batch *tail);
/* OTLP's severity number (1 TRACE ... 21 FATAL) and text of @prio. */
const char *otlp_severity(int prio, int *number);
/* CLOCK_REALTIME in ns: a LogRecord's observed time. */
uint64_t otlp_now_ns(void);
/* The attributes of a record's and of a loss's LogRecord, walked in one
 * order for both encodings, each written by the encoder's callback for
 * its type (@w: the encoder's writer). */
struct otlp_attr_writer {
	void (*int_value)(void *w, const char *key, uint64_t v);
	void (*str_value)(void *w, const char *key, const char *s, size_t n);
	void (*true_value)(void *w, const char *key);
	void (*bytes_value)(void *w, const char *key, const char *s, size_t n);
	/* shmlog_reader_deferred()'s array, as an array value */
	void (*args_value)(void *w, const char *key, const char *args);
};
/* @msg_not_utf8: the message is not UTF-8, so its bytes go too. */
void otlp_record_attrs(const struct otlp_attr_writer *aw, void *w,
		       const struct sink_rec *rec, bool msg_not_utf8);
void otlp_loss_attrs(const struct otlp_attr_writer *aw, void *w,
		     const struct sink_loss *l);
/* The values of shmlog_reader_deferred()'s array @args, one call of
 * @value each, in order. */
enum otlp_arg { OTLP_ARG_STRING, OTLP_ARG_INT, OTLP_ARG_DOUBLE,
		OTLP_ARG_OTHER };
void otlp_args_walk(const char *args,
		    void (*value)(void *ctx, enum otlp_arg kind,
				  const char *text, size_t n),
		    void *ctx);

/* OTLP in protobuf (otlp_proto.c): the same LogRecords; the envelope
 * before a batch of @body_len bytes (nothing comes after it); from the
 * receiver's answers, partial_success.rejected_log_records, and the
 * message of an error's google.rpc.Status (its length; 0 if none). */
int otlp_pb_add_record(struct batch *b, const struct sink_rec *rec);
int otlp_pb_add_loss(struct batch *b, const struct sink_loss *l,
		     const char *text);
int otlp_pb_envelope(const struct sink *s, const char *host,
		     size_t body_len, struct batch *head);
uint64_t otlp_pb_rejected(const char *body, size_t n);
size_t otlp_pb_status_message(const char *body, size_t n, const char **msg);

/* OTLP/HTTP (sink_http.c): POST @b and read the answer, as sink_send()
 * does for the other sinks (-EAGAIN: the receiver asks to retry; then
 * s->retry_after_ms; -EREMOTEIO: it refuses the batch for good); free
 * what it keeps between batches. */
int otlp_send(struct sink *s, const struct batch *b,
	      volatile sig_atomic_t *stop, char *why, size_t whylen);
void otlp_http_free(void);

/* Internal to sink*.c: CLOCK_MONOTONIC in ms; write all of @n bytes, and
 * read more of the answer into s->rbuf, bounded by s->timeout_ms (each
 * write's progress renews it) or @deadline and by *@stop. 0 or a
 * negative errno. */
int64_t sink_now_ms(void);
int sink_send_all(struct sink *s, const char *p, size_t n,
		  volatile sig_atomic_t *stop);
int sink_recv_some(struct sink *s, int64_t deadline,
		   volatile sig_atomic_t *stop);

/* syslog severity of a shmlog priority (V,D: debug ... F: crit). */
int sink_severity(int prio);

#endif
