/* SPDX-License-Identifier: MIT */
/*
 * OpenTelemetry logs for `shmlog forward --to otlp://` and `otlp+json://`:
 * records as OTLP LogRecords (opentelemetry-proto, logs/v1), following
 * the logs data model. Here the JSON encoding; otlp_proto.c writes the
 * same fields in protobuf (the default, `otlp://`). In JSON:
 *
 *   timeUnixNano          the record's time; observedTimeUnixNano: when
 *                         the forwarder read it (both decimal strings, as
 *                         the OTLP JSON mapping writes 64-bit integers)
 *   severityNumber/Text   V 1 TRACE, D 5 DEBUG, I 9 INFO, W 13 WARN,
 *                         E 17 ERROR, F 21 FATAL (text: VERBOSE ...)
 *   body                  the message (stringValue; bytes that are not
 *                         UTF-8 as U+FFFD, and the exact bytes then in
 *                         the attribute shmlog.msg_bytes, bytesValue)
 *   attributes            process.pid, thread.id (semantic conventions);
 *                         shmlog.tag, shmlog.buffer, shmlog.lane,
 *                         shmlog.seq, shmlog.truncated; for a printf-style
 *                         record shmlog.format and shmlog.args (an
 *                         arrayValue of its values, typed)
 *   resource              host.name, service.name (sink.c wraps the batch)
 *
 * A loss becomes a WARN record with eventName "shmlog.lost" and the
 * attributes shmlog.buffer, shmlog.lane, shmlog.lost, shmlog.overwritten,
 * shmlog.torn, shmlog.lost.first_seq and shmlog.lost.last_seq.
 *
 * The batch holds the LogRecords separated by commas; sink_send() puts
 * the envelope around them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "sink.h"

/* ---- a small JSON writer into the batch ---- */

struct jw {
	struct batch *b;
	int err;
};

static void jw_reserve(struct jw *w, size_t n)
{
	if (!w->err)
		w->err = batch_reserve(w->b, n);
}

static void jw_put(struct jw *w, const char *p, size_t n)
{
	jw_reserve(w, n);
	if (w->err)
		return;
	memcpy(w->b->buf + w->b->len, p, n);
	w->b->len += n;
}

static void jw_s(struct jw *w, const char *s)
{
	jw_put(w, s, strlen(s));
}

/* A JSON string of any bytes (src/json.h). Returns whether all of them
 * were UTF-8. */
static bool jw_str(struct jw *w, const char *s, size_t n)
{
	unsigned flags = 0;
	jw_reserve(w, SHMLOG__JSON_STR_MAX(n));
	if (w->err)
		return true;
	struct batch *b = w->b;
	b->len += shmlog__json_str(b->buf + b->len, b->cap - b->len, s, n,
				   &flags);
	return !(flags & SHMLOG__JSON_NOT_UTF8);
}

/* A 64-bit integer as the OTLP JSON mapping writes it: a string. */
static void jw_u64_str(struct jw *w, uint64_t v)
{
	char t[32];
	int n = snprintf(t, sizeof(t), "\"%" PRIu64 "\"", v);
	jw_put(w, t, (size_t)n);
}

static void jw_base64(struct jw *w, const char *s, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				  "0123456789+/";
	const unsigned char *u = (const unsigned char *)s;
	jw_s(w, "\"");
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)u[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)u[i + 1] << 8;
		if (i + 2 < n)
			v |= u[i + 2];
		char q[4] = {tab[v >> 18 & 63], tab[v >> 12 & 63],
			     i + 1 < n ? tab[v >> 6 & 63] : '=',
			     i + 2 < n ? tab[v & 63] : '='};
		jw_put(w, q, 4);
	}
	jw_s(w, "\"");
}

/* ---- attributes ---- */

/* A JSON array of KeyValues being written: a comma before all but the
 * first. */
struct jattrs {
	struct jw *w;
	bool first;
};

/* Start a KeyValue of key @key whose value begins with @value_head;
 * returns the writer for the rest of the value. */
static struct jw *attr_open(void *ctx, const char *key,
			    const char *value_head)
{
	struct jattrs *a = ctx;
	jw_s(a->w, a->first ? "{\"key\":\"" : ",{\"key\":\"");
	a->first = false;
	jw_s(a->w, key);
	jw_s(a->w, "\",\"value\":");
	jw_s(a->w, value_head);
	return a->w;
}

static void attr_int(void *ctx, const char *key, uint64_t v)
{
	struct jw *w = attr_open(ctx, key, "{\"intValue\":");
	jw_u64_str(w, v);
	jw_s(w, "}}");
}

static void attr_str(void *ctx, const char *key, const char *s, size_t n)
{
	struct jw *w = attr_open(ctx, key, "{\"stringValue\":");
	jw_str(w, s, n);
	jw_s(w, "}}");
}

static void attr_true(void *ctx, const char *key)
{
	jw_s(attr_open(ctx, key, "{\"boolValue\":"), "true}}");
}

static void attr_bytes(void *ctx, const char *key, const char *s, size_t n)
{
	struct jw *w = attr_open(ctx, key, "{\"bytesValue\":");
	jw_base64(w, s, n);
	jw_s(w, "}}");
}

/* shmlog_reader_deferred()'s array (numbers, and strings already JSON),
 * value by value: integers that fit int64 as OTLP_ARG_INT, other numbers
 * as OTLP_ARG_DOUBLE, strings as OTLP_ARG_STRING (the text between the
 * quotes, still escaped), anything else as OTLP_ARG_OTHER. The array
 * comes from the library, valid JSON; a token it does not expect ends
 * the walk. */
void otlp_args_walk(const char *args,
		    void (*value)(void *ctx, enum otlp_arg kind,
				  const char *text, size_t n),
		    void *ctx)
{
	const char *p = args;
	while (*p == '[' || *p == ' ')
		p++;
	while (*p && *p != ']') {
		const char *start = p;
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
			if (*p != '"')
				break;
			p++;
			value(ctx, OTLP_ARG_STRING, start + 1,
			      (size_t)(p - start) - 2);
		} else {
			p += strcspn(p, ",]");
			size_t n = (size_t)(p - start);
			if (!n || n > 40)
				break;
			char num[48];
			memcpy(num, start, n);
			num[n] = '\0';
			char *end;
			errno = 0;
			(void)strtoll(num, &end, 10);
			enum otlp_arg kind = OTLP_ARG_INT;
			if (*end || errno) {
				(void)strtod(num, &end);
				kind = *end ? OTLP_ARG_OTHER : OTLP_ARG_DOUBLE;
			}
			value(ctx, kind, num, n);
		}
		if (*p == ',')
			p++;
	}
}

struct args_json {
	struct jw *w;
	bool first;
};

static void arg_json(void *ctx, enum otlp_arg kind, const char *text,
		     size_t n)
{
	struct args_json *a = ctx;
	struct jw *w = a->w;
	jw_s(w, a->first ? "{" : ",{");
	a->first = false;
	switch (kind) {
	case OTLP_ARG_STRING:
		jw_s(w, "\"stringValue\":\"");
		jw_put(w, text, n);
		jw_s(w, "\"");
		break;
	case OTLP_ARG_INT:
		jw_s(w, "\"intValue\":\"");
		jw_put(w, text, n);
		jw_s(w, "\"");
		break;
	case OTLP_ARG_DOUBLE:
		jw_s(w, "\"doubleValue\":");
		jw_put(w, text, n);
		break;
	case OTLP_ARG_OTHER:
		jw_s(w, "\"stringValue\":");
		jw_str(w, text, n);
		break;
	}
	jw_s(w, "}");
}

static void attr_args(void *ctx, const char *key, const char *args)
{
	struct jw *w = attr_open(ctx, key, "{\"arrayValue\":{\"values\":[");
	struct args_json aj = {w, true};
	otlp_args_walk(args, arg_json, &aj);
	jw_s(w, "]}}}");
}

static const struct otlp_attr_writer json_attrs = {
	attr_int, attr_str, attr_true, attr_bytes, attr_args,
};

void otlp_record_attrs(const struct otlp_attr_writer *aw, void *w,
		       const struct sink_rec *rec, bool msg_not_utf8)
{
	const struct shmlog_record *r = rec->r;
	aw->int_value(w, "process.pid", r->pid);
	aw->int_value(w, "thread.id", r->tid);
	aw->str_value(w, "shmlog.tag", r->tag, r->tag_len);
	aw->str_value(w, "shmlog.buffer", rec->buffer, strlen(rec->buffer));
	aw->int_value(w, "shmlog.lane", r->lane);
	aw->int_value(w, "shmlog.seq", r->seq);
	if (r->flags & SHMLOG_REC_TRUNCATED)
		aw->true_value(w, "shmlog.truncated");
	if (msg_not_utf8)
		aw->bytes_value(w, "shmlog.msg_bytes", r->msg, r->msg_len);
	if (rec->fmt)
		aw->str_value(w, "shmlog.format", rec->fmt, strlen(rec->fmt));
	if (rec->args)
		aw->args_value(w, "shmlog.args", rec->args);
	if (rec->args && rec->args_cut)
		aw->true_value(w, "shmlog.args_truncated");
}

void otlp_loss_attrs(const struct otlp_attr_writer *aw, void *w,
		     const struct sink_loss *l)
{
	aw->str_value(w, "shmlog.buffer", l->name, strlen(l->name));
	aw->int_value(w, "shmlog.lane", l->lane);
	aw->int_value(w, "shmlog.lost", l->overwritten + l->torn);
	aw->int_value(w, "shmlog.overwritten", l->overwritten);
	aw->int_value(w, "shmlog.torn", l->torn);
	aw->int_value(w, "shmlog.lost.first_seq", l->first);
	aw->int_value(w, "shmlog.lost.last_seq", l->last);
}

/* ---- records ---- */

const char *otlp_severity(int prio, int *number)
{
	static const struct {
		int number;
		const char *text;
	} map[] = {
		[SHMLOG_VERBOSE] = {1, "VERBOSE"}, [SHMLOG_DEBUG] = {5, "DEBUG"},
		[SHMLOG_INFO] = {9, "INFO"},	   [SHMLOG_WARN] = {13, "WARN"},
		[SHMLOG_ERROR] = {17, "ERROR"},	   [SHMLOG_FATAL] = {21, "FATAL"},
	};
	int i = prio >= SHMLOG_VERBOSE && prio <= SHMLOG_FATAL ? prio
							       : SHMLOG_INFO;
	*number = map[i].number;
	return map[i].text;
}

static void severity(struct jw *w, int prio)
{
	int number;
	const char *text = otlp_severity(prio, &number);
	char t[80];
	snprintf(t, sizeof(t), "\"severityNumber\":%d,\"severityText\":\"%s\"",
		 number, text);
	jw_s(w, t);
}

uint64_t otlp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int end_record(struct batch *b, struct jw *w)
{
	return w->err ? w->err : batch_end_message(b);
}

int otlp_add_record(struct batch *b, const struct sink *s,
		    const struct sink_rec *rec)
{
	if (s->otlp_protobuf)
		return otlp_pb_add_record(b, rec);
	const struct shmlog_record *r = rec->r;
	struct jw w = {b, 0};
	if (b->n)
		jw_s(&w, ",");
	jw_s(&w, "{\"timeUnixNano\":");
	jw_u64_str(&w, r->time_ns > 0 ? (uint64_t)r->time_ns : 0);
	jw_s(&w, ",\"observedTimeUnixNano\":");
	jw_u64_str(&w, otlp_now_ns());
	jw_s(&w, ",");
	severity(&w, r->prio);
	jw_s(&w, ",\"body\":{\"stringValue\":");
	bool utf8 = jw_str(&w, r->msg, r->msg_len);
	jw_s(&w, "},\"attributes\":[");
	struct jattrs a = {&w, true};
	otlp_record_attrs(&json_attrs, &a, rec, !utf8);
	jw_s(&w, "]}");
	return end_record(b, &w);
}

int otlp_add_loss(struct batch *b, const struct sink *s,
		  const struct sink_loss *l, const char *text)
{
	if (s->otlp_protobuf)
		return otlp_pb_add_loss(b, l, text);
	struct jw w = {b, 0};
	uint64_t now = otlp_now_ns();
	if (b->n)
		jw_s(&w, ",");
	jw_s(&w, "{\"timeUnixNano\":");
	jw_u64_str(&w, now);
	jw_s(&w, ",\"observedTimeUnixNano\":");
	jw_u64_str(&w, now);
	jw_s(&w, ",");
	severity(&w, SHMLOG_WARN);
	jw_s(&w, ",\"eventName\":\"shmlog.lost\",\"body\":{\"stringValue\":");
	jw_str(&w, text, strlen(text));
	jw_s(&w, "},\"attributes\":[");
	struct jattrs a = {&w, true};
	otlp_loss_attrs(&json_attrs, &a, l);
	jw_s(&w, "]}");
	return end_record(b, &w);
}

/* The envelope around the batch's LogRecords: one resource (the host
 * they are of, the service), one scope. */
int otlp_envelope(const struct sink *s, const char *host,
		  struct batch *head, struct batch *tail)
{
	struct jw w = {head, 0};
	struct jattrs a = {&w, true};
	jw_s(&w, "{\"resourceLogs\":[{\"resource\":{\"attributes\":[");
	attr_str(&a, "host.name", host, strlen(host));
	attr_str(&a, "service.name", s->service, strlen(s->service));
	jw_s(&w, "]},\"scopeLogs\":[{\"scope\":{\"name\":\"shmlog\"},"
		 "\"logRecords\":[");
	struct jw t = {tail, 0};
	jw_s(&t, "]}]}]}");
	return w.err ? w.err : t.err;
}
