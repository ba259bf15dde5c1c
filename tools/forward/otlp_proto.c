/* SPDX-License-Identifier: MIT */
/*
 * OpenTelemetry logs for `shmlog forward --to otlp://`: the same
 * LogRecords as sink_otlp.c writes in JSON, in the protobuf encoding that
 * OTLP/HTTP uses by default (Content-Type application/x-protobuf).
 *
 * Why by hand, not with protobuf-c: the forwarder only ever writes one
 * request message and reads two small answers, so what it needs of
 * protobuf is the wire format's varints, fixed64s and length-prefixed
 * fields, a few hundred lines; a generated codec would bring a runtime
 * library to every installed CLI, the .proto files and protoc-c to the
 * build, and a copy of each record into generated structs before encoding.
 * The encoding is checked independently: test_forward_otlp_collector
 * sends it to a real OpenTelemetry Collector, whose decoder is generated
 * from the official .proto files, and checks every field of what comes
 * out the other side.
 *
 * The messages, from opentelemetry-proto (collector/logs/v1,
 * logs/v1, common/v1, resource/v1); field number, wire type:
 *
 *   ExportLogsServiceRequest  1 resource_logs        LEN, repeated
 *   ResourceLogs              1 resource             LEN (Resource)
 *                             2 scope_logs           LEN, repeated
 *   Resource                  1 attributes           LEN KeyValue, rep.
 *   ScopeLogs                 1 scope                LEN (Instr.Scope)
 *                             2 log_records          LEN, repeated
 *   InstrumentationScope      1 name                 LEN string
 *   LogRecord                 1 time_unix_nano       I64 (fixed64)
 *                             11 observed_time_unix_nano  I64
 *                             2 severity_number      VARINT
 *                             3 severity_text        LEN string
 *                             5 body                 LEN AnyValue
 *                             6 attributes           LEN KeyValue, rep.
 *                             12 event_name          LEN string
 *   KeyValue                  1 key LEN string, 2 value LEN AnyValue
 *   AnyValue (one of)         1 string_value LEN, 2 bool_value VARINT,
 *                             3 int_value VARINT (int64), 4 double_value
 *                             I64, 5 array_value LEN, 7 bytes_value LEN
 *   ArrayValue                1 values               LEN AnyValue, rep.
 *   ExportLogsServiceResponse 1 partial_success      LEN
 *   ExportLogsPartialSuccess  1 rejected_log_records VARINT (int64)
 *                             2 error_message        LEN string
 *   google.rpc.Status         1 code VARINT, 2 message LEN string
 *
 * A string field must hold UTF-8 (proto3): bytes that are not become
 * U+FFFD, one per byte, as the JSON encoding does, and a body that had
 * some keeps its exact bytes in shmlog.msg_bytes (bytes_value).
 *
 * The batch holds each LogRecord as a ScopeLogs field 2 (tag, length,
 * message), so that the records of a batch, concatenated, are the tail of
 * one ScopeLogs; otlp_pb_envelope() writes what comes before them, whose
 * lengths depend on the batch's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sink.h"
#include "utf8.h"

/* Wire types */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* The most bytes of a varint of a length: lengths stay below 4 GiB. */
#define LEN_MAX_BYTES 5

struct pw {
	struct batch *b;
	int err;
};

/* Room for @n more bytes: false (w->err set) if there is none. The
 * common case, room already there, stays inline. */
static void pw_grow(struct pw *w, size_t n)
{
	w->err = batch_reserve(w->b, n);
}

static inline bool pw_room(struct pw *w, size_t n)
{
	if (w->b->len + n > w->b->cap && !w->err)
		pw_grow(w, n);
	return !w->err;
}

static inline void pw_put(struct pw *w, const void *p, size_t n)
{
	if (!pw_room(w, n))
		return;
	memcpy(w->b->buf + w->b->len, p, n);
	w->b->len += n;
}

static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline size_t varint_into(unsigned char *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (unsigned char)v;
	return n;
}

static inline void pw_varint(struct pw *w, uint64_t v)
{
	if (pw_room(w, 10))
		w->b->len += varint_into((unsigned char *)w->b->buf + w->b->len,
					 v);
}

static inline void pw_tag(struct pw *w, unsigned field, unsigned wt)
{
	pw_varint(w, (uint64_t)field << 3 | wt);
}

static void pw_fixed64(struct pw *w, unsigned field, uint64_t v)
{
	unsigned char t[8];
	for (int i = 0; i < 8; i++)
		t[i] = (unsigned char)(v >> (8 * i)); /* little-endian */
	pw_tag(w, field, WT_I64);
	pw_put(w, t, 8);
}

static void pw_uint(struct pw *w, unsigned field, uint64_t v)
{
	pw_tag(w, field, WT_VARINT);
	pw_varint(w, v);
}

static void pw_bytes(struct pw *w, unsigned field, const void *p, size_t n)
{
	pw_tag(w, field, WT_LEN);
	pw_varint(w, n);
	pw_put(w, p, n);
}

/* The bytes of @s that are not UTF-8 (each becomes U+FFFD, 3 bytes). */
static size_t utf8_bad(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t bad = 0, i = 0;
	uint32_t cp;
	while (i < n) {
		if (u[i] < 0x80) { /* ASCII, most of a log */
			i++;
			continue;
		}
		size_t k = shmlog__utf8_seq(u + i, n - i, &cp);
		bad += !k;
		i += k ? k : 1;
	}
	return bad;
}

/* The length of @s (@n bytes, @bad of them not UTF-8) once it is. */
static inline size_t utf8_len(size_t n, size_t bad)
{
	return n + 2 * bad;
}

/* A string field of @s, @bad bytes of which are not UTF-8 (utf8_bad()):
 * each of those as U+FFFD. */
static void pw_str_fixed(struct pw *w, unsigned field, const char *s,
			 size_t n, size_t bad)
{
	if (!bad) {
		pw_bytes(w, field, s, n);
		return;
	}
	pw_tag(w, field, WT_LEN);
	pw_varint(w, utf8_len(n, bad));
	if (!pw_room(w, utf8_len(n, bad)))
		return;
	const unsigned char *u = (const unsigned char *)s;
	char *o = w->b->buf + w->b->len;
	uint32_t cp;
	for (size_t i = 0, k; i < n; i += k) {
		k = u[i] < 0x80 ? 1 : shmlog__utf8_seq(u + i, n - i, &cp);
		if (k) {
			memcpy(o, s + i, k);
			o += k;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			k = 1;
		}
	}
	w->b->len = (size_t)(o - w->b->buf);
}

/* A string field of any bytes, as UTF-8. Returns whether all of them
 * were UTF-8. */
static bool pw_str(struct pw *w, unsigned field, const char *s, size_t n)
{
	size_t bad = utf8_bad(s, n);
	pw_str_fixed(w, field, s, n, bad);
	return !bad;
}

static void pw_cstr(struct pw *w, unsigned field, const char *s)
{
	pw_str(w, field, s, strlen(s));
}

/* An embedded message whose length is not known before it is written:
 * open() writes its tag and keeps room for its length; close() writes
 * the length and moves the message up to it. (Attributes, small and of
 * known size, are written with their lengths at once instead.) */
static size_t pw_open(struct pw *w, unsigned field)
{
	pw_tag(w, field, WT_LEN);
	pw_room(w, LEN_MAX_BYTES);
	size_t at = w->b->len;
	if (!w->err)
		w->b->len += LEN_MAX_BYTES;
	return at;
}

static void pw_close(struct pw *w, size_t at)
{
	if (w->err)
		return;
	char *p = w->b->buf + at;
	size_t n = w->b->len - at - LEN_MAX_BYTES;
	size_t k = varint_into((unsigned char *)p, n);
	memmove(p + k, p + LEN_MAX_BYTES, n);
	w->b->len -= LEN_MAX_BYTES - k;
}

/* ---- attributes: KeyValue { key, value AnyValue } ---- */

static size_t kv_open(struct pw *w, unsigned field, const char *key)
{
	size_t kv = pw_open(w, field);
	pw_cstr(w, 1, key);
	return kv;
}

/* The head of a KeyValue (field @field) whose key is @key (ASCII) and
 * whose AnyValue's one field takes @value_len bytes, tag included. */
static void kv_head(struct pw *w, unsigned field, const char *key,
		    size_t value_len)
{
	size_t kl = strlen(key);
	size_t kv = 1 + varint_len(kl) + kl + 1 + varint_len(value_len) +
		    value_len;
	pw_tag(w, field, WT_LEN);
	pw_varint(w, kv);
	pw_bytes(w, 1, key, kl); /* KeyValue.key */
	pw_tag(w, 2, WT_LEN);	 /* KeyValue.value */
	pw_varint(w, value_len);
}

static void attr_int(struct pw *w, unsigned field, const char *key,
		     uint64_t v)
{
	kv_head(w, field, key, 1 + varint_len(v));
	pw_uint(w, 3, v); /* int_value; an int64 as its 64 bits */
}

static void attr_str(struct pw *w, unsigned field, const char *key,
		     const char *s, size_t n)
{
	size_t bad = utf8_bad(s, n), len = utf8_len(n, bad);
	kv_head(w, field, key, 1 + varint_len(len) + len);
	pw_str_fixed(w, 1, s, n, bad); /* string_value */
}

/* A LogRecord's attributes (field 6), as otlp_record_attrs() and
 * otlp_loss_attrs() walk them. */
static void rec_attr_int(void *w, const char *key, uint64_t v)
{
	attr_int(w, 6, key, v);
}

static void rec_attr_str(void *w, const char *key, const char *s, size_t n)
{
	attr_str(w, 6, key, s, n);
}

static void rec_attr_true(void *w, const char *key)
{
	kv_head(w, 6, key, 2);
	pw_uint(w, 2, 1); /* bool_value */
}

static void rec_attr_bytes(void *w, const char *key, const char *s,
			   size_t n)
{
	kv_head(w, 6, key, 1 + varint_len(n) + n);
	pw_bytes(w, 7, s, n); /* bytes_value */
}

static int hex_digit(char h)
{
	return h >= '0' && h <= '9'   ? h - '0'
	       : h >= 'a' && h <= 'f' ? h - 'a' + 10
	       : h >= 'A' && h <= 'F' ? h - 'A' + 10
				      : -1;
}

/* The \uXXXX escape whose hex digits start at @s (@n bytes there) as
 * UTF-8 into @out (at most 3 bytes: src/json.c escapes nothing past the
 * BMP, and no surrogate; anything else becomes U+FFFD). Returns the
 * bytes written; *@used: the hex digits read. */
static size_t json_u_escape(const char *s, size_t n, char *out, size_t *used)
{
	unsigned cp = 0;
	size_t k = 0;
	for (int d; k < 4 && k < n && (d = hex_digit(s[k])) >= 0; k++)
		cp = cp << 4 | (unsigned)d;
	*used = k;
	if (k < 4 || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	out[0] = (char)(0xe0 | cp >> 12);
	out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[2] = (char)(0x80 | (cp & 0x3f));
	return 3;
}

/* A JSON string's contents (between its quotes, as src/json.c writes
 * them) back to its bytes, as the string_value of an AnyValue. */
static void any_json_str(struct pw *w, const char *s, size_t n)
{
	/* the bytes are never more than the escaped text: an escape of 2
	 * characters is 1 byte, one of 6 at most 3 */
	char stack[512] = "", *out = n <= sizeof(stack) ? stack : malloc(n);
	if (!out) {
		w->err = -ENOMEM;
		return;
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 == n) {
			out[o++] = s[i];
			continue;
		}
		char c = s[++i];
		size_t used;
		switch (c) {
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'b': out[o++] = '\b'; break;
		case 'f': out[o++] = '\f'; break;
		case 'u':
			o += json_u_escape(s + i + 1, n - i - 1, out + o, &used);
			i += used;
			break;
		default: out[o++] = c; break; /* \" \\ \/ */
		}
	}
	pw_str(w, 1, out, o);
	if (out != stack)
		free(out);
}

static void arg_value(void *ctx, enum otlp_arg kind, const char *text,
		      size_t n)
{
	struct pw *w = ctx;
	size_t av = pw_open(w, 1); /* ArrayValue.values */
	switch (kind) {
	case OTLP_ARG_STRING: any_json_str(w, text, n); break;
	case OTLP_ARG_INT:
		pw_uint(w, 3, (uint64_t)strtoll(text, NULL, 10));
		break;
	case OTLP_ARG_DOUBLE: {
		double d = strtod(text, NULL);
		uint64_t bits;
		memcpy(&bits, &d, 8);
		pw_fixed64(w, 4, bits);
		break;
	}
	case OTLP_ARG_OTHER: pw_str(w, 1, text, n); break;
	}
	pw_close(w, av);
}

static void rec_attr_args(void *ctx, const char *key, const char *args)
{
	struct pw *w = ctx;
	size_t kv = kv_open(w, 6, key);
	size_t av = pw_open(w, 2);
	size_t arr = pw_open(w, 5); /* array_value */
	otlp_args_walk(args, arg_value, w);
	pw_close(w, arr);
	pw_close(w, av);
	pw_close(w, kv);
}

static const struct otlp_attr_writer pb_attrs = {
	rec_attr_int,	rec_attr_str,  rec_attr_true,
	rec_attr_bytes, rec_attr_args,
};

/* ---- records ---- */

static int end_record(struct batch *b, struct pw *w)
{
	return w->err ? w->err : batch_end_message(b);
}

static void severity(struct pw *w, int prio)
{
	int number;
	const char *text = otlp_severity(prio, &number);
	pw_uint(w, 2, (uint64_t)number);
	pw_cstr(w, 3, text);
}

int otlp_pb_add_record(struct batch *b, const struct sink_rec *rec)
{
	const struct shmlog_record *r = rec->r;
	struct pw w = {b, 0};
	size_t lr = pw_open(&w, 2); /* ScopeLogs.log_records */
	pw_fixed64(&w, 1, r->time_ns > 0 ? (uint64_t)r->time_ns : 0);
	pw_fixed64(&w, 11, otlp_now_ns());
	severity(&w, r->prio);
	size_t bad = utf8_bad(r->msg, r->msg_len);
	size_t len = utf8_len(r->msg_len, bad);
	pw_tag(&w, 5, WT_LEN); /* body, an AnyValue of one string_value */
	pw_varint(&w, 1 + varint_len(len) + len);
	pw_str_fixed(&w, 1, r->msg, r->msg_len, bad);
	otlp_record_attrs(&pb_attrs, &w, rec, bad != 0);
	pw_close(&w, lr);
	return end_record(b, &w);
}

int otlp_pb_add_loss(struct batch *b, const struct sink_loss *l,
		     const char *text)
{
	struct pw w = {b, 0};
	uint64_t now = otlp_now_ns();
	size_t lr = pw_open(&w, 2);
	pw_fixed64(&w, 1, now);
	pw_fixed64(&w, 11, now);
	severity(&w, SHMLOG_WARN);
	size_t body = pw_open(&w, 5);
	pw_cstr(&w, 1, text);
	pw_close(&w, body);
	otlp_loss_attrs(&pb_attrs, &w, l);
	pw_cstr(&w, 12, "shmlog.lost");
	pw_close(&w, lr);
	return end_record(b, &w);
}

/* What comes before a batch of @body_len bytes of LogRecords: the
 * request, its one ResourceLogs (@host, the host they are of, and the
 * service) and its one ScopeLogs, each with a length that counts the
 * records. */
int otlp_pb_envelope(const struct sink *s, const char *host,
		     size_t body_len, struct batch *head)
{
	struct batch res = {0};
	struct pw r = {&res, 0};
	size_t rs = pw_open(&r, 1); /* ResourceLogs.resource */
	attr_str(&r, 1, "host.name", host, strlen(host));
	attr_str(&r, 1, "service.name", s->service, strlen(s->service));
	pw_close(&r, rs);
	size_t sc = pw_open(&r, 1); /* ScopeLogs.scope */
	pw_cstr(&r, 1, "shmlog");
	pw_close(&r, sc);
	int err = r.err; /* res: the resource's field, then the scope's */
	if (err) {
		batch_free(&res);
		return err;
	}
	/* the scope field's bytes: from its tag (one byte, field 1) on */
	size_t scope_at = sc - 1;
	size_t scope_bytes = res.len - scope_at;
	uint64_t sl_len = scope_bytes + body_len;
	uint64_t rl_len = scope_at + 1 + varint_len(sl_len) + sl_len;
	struct pw h = {head, 0};
	pw_tag(&h, 1, WT_LEN); /* ExportLogsServiceRequest.resource_logs */
	pw_varint(&h, rl_len);
	pw_put(&h, res.buf, scope_at); /* ResourceLogs.resource */
	pw_tag(&h, 2, WT_LEN); /* ResourceLogs.scope_logs */
	pw_varint(&h, sl_len);
	pw_put(&h, res.buf + scope_at, scope_bytes); /* ScopeLogs.scope */
	batch_free(&res);
	return h.err;
}

/* ---- reading the receiver's answers ---- */

/* The next field of the message in [*p, end): its number, wire type,
 * and value (VARINT) or bytes (LEN). false at the end or on bytes that
 * are not protobuf. */
static bool pb_next(const unsigned char **p, const unsigned char *end,
		    unsigned *field, unsigned *wt, uint64_t *v,
		    const unsigned char **data)
{
	uint64_t tag = 0;
	const unsigned char *q = *p;
	for (int shift = 0;; shift += 7) {
		if (q == end || shift > 63)
			return false;
		tag |= (uint64_t)(*q & 0x7f) << shift;
		if (!(*q++ & 0x80))
			break;
	}
	*field = (unsigned)(tag >> 3);
	*wt = tag & 7;
	*v = 0;
	switch (*wt) {
	case WT_VARINT:
	case WT_LEN:
		for (int shift = 0;; shift += 7) {
			if (q == end || shift > 63)
				return false;
			*v |= (uint64_t)(*q & 0x7f) << shift;
			if (!(*q++ & 0x80))
				break;
		}
		if (*wt == WT_LEN) {
			if (*v > (uint64_t)(end - q))
				return false;
			*data = q;
			q += *v;
		}
		break;
	case WT_I64:
		if (end - q < 8)
			return false;
		q += 8;
		break;
	case WT_I32:
		if (end - q < 4)
			return false;
		q += 4;
		break;
	default: return false;
	}
	*p = q;
	return true;
}

uint64_t otlp_pb_rejected(const char *body, size_t n)
{
	const unsigned char *p = (const unsigned char *)body, *end = p + n;
	unsigned f, wt;
	uint64_t v;
	const unsigned char *d;
	while (pb_next(&p, end, &f, &wt, &v, &d)) {
		if (f != 1 || wt != WT_LEN) /* partial_success */
			continue;
		const unsigned char *q = d, *qend = d + v;
		uint64_t r;
		while (pb_next(&q, qend, &f, &wt, &r, &d))
			if (f == 1 && wt == WT_VARINT)
				return (int64_t)r > 0 ? r : 0;
	}
	return 0;
}

size_t otlp_pb_status_message(const char *body, size_t n, const char **msg)
{
	const unsigned char *p = (const unsigned char *)body, *end = p + n;
	unsigned f, wt;
	uint64_t v;
	const unsigned char *d;
	while (pb_next(&p, end, &f, &wt, &v, &d))
		if (f == 2 && wt == WT_LEN) {
			*msg = (const char *)d;
			return (size_t)v;
		}
	return 0;
}
