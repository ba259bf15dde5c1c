/* SPDX-License-Identifier: MIT */
/*
 * How `shmlog forward` writes a record for each sink: RFC 5424 syslog
 * messages (framed by octet counting, RFC 6587, for TCP and Unix
 * sockets; unframed for RELP, which frames itself), systemd's Journal
 * Export Format, and JSON lines in the shape `shmlog cat -v json` prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../format.h"
#include "json.h"
#include "sink.h"

/* RFC 5424 SD-ID for shmlog's own parameters. 32473 is the private
 * enterprise number IANA reserves for documentation (RFC 5612). */
#define SD_ID "shmlog@32473"
#define APP_NAME_MAX 48 /* RFC 5424, APP-NAME = 1*48PRINTUSASCII */

int sink_severity(int prio)
{
	switch (prio) {
	case SHMLOG_VERBOSE:
	case SHMLOG_DEBUG: return 7; /* debug */
	case SHMLOG_INFO: return 6; /* info */
	case SHMLOG_WARN: return 4; /* warning */
	case SHMLOG_ERROR: return 3; /* err */
	case SHMLOG_FATAL: return 2; /* crit */
	default: return 6;
	}
}

/* ---- growable buffers ---- */

static int reserve(char **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 4096;
	while (ncap < need)
		ncap *= 2;
	char *nb = realloc(*buf, ncap);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = ncap;
	return 0;
}

int batch_end_message(struct batch *b)
{
	if (b->n == b->ncap) {
		size_t ncap = b->ncap ? b->ncap * 2 : 256;
		size_t *ne = realloc(b->ends, ncap * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		b->ends = ne;
		b->ncap = ncap;
	}
	b->ends[b->n++] = b->len;
	return 0;
}

int batch_reserve(struct batch *b, size_t n)
{
	return reserve(&b->buf, &b->cap, b->len + n);
}

static int batch_put(struct batch *b, const void *p, size_t n)
{
	int err = batch_reserve(b, n);
	if (err)
		return err;
	memcpy(b->buf + b->len, p, n);
	b->len += n;
	return 0;
}

/* @n bytes of @s as a JSON string (src/json.h: valid whatever they are). */
static int batch_json_str(struct batch *b, const char *s, size_t n)
{
	int err = batch_reserve(b, SHMLOG__JSON_STR_MAX(n));
	if (err)
		return err;
	b->len += shmlog__json_str(b->buf + b->len, b->cap - b->len, s, n,
				   NULL);
	return 0;
}

void batch_reset(struct batch *b)
{
	b->len = 0;
	b->n = 0;
	b->host[0] = '\0';
}

void batch_free(struct batch *b)
{
	free(b->buf);
	free(b->ends);
	*b = (struct batch){0};
}

/* A scratch string builder over the sink's scratch buffer. */
struct sb {
	char **buf;
	size_t *cap;
	size_t len;
	int err;
};

static void sb_put(struct sb *s, const void *p, size_t n)
{
	if (s->err || (s->err = reserve(s->buf, s->cap, s->len + n + 1)))
		return;
	memcpy(*s->buf + s->len, p, n);
	s->len += n;
}

static void sb_str(struct sb *s, const char *p)
{
	sb_put(s, p, strlen(p));
}

static void sb_u64(struct sb *s, uint64_t v)
{
	char t[24];
	int n = snprintf(t, sizeof(t), "%" PRIu64, v);
	sb_put(s, t, (size_t)n);
}

/* ---- time ---- */

/* "2026-11-23T18:45:52.123456Z": RFC 3339 with microseconds, UTC. The
 * seconds part is cached: consecutive records mostly share it. */
static void sb_time(struct sb *s, struct sink *k, int64_t ns)
{
	int64_t sec = ns / 1000000000, sub = ns % 1000000000;
	if (sub < 0) {
		sec--;
		sub += 1000000000;
	}
	if (sec != k->sec_cached || !k->sec_text[0]) {
		struct tm tm;
		time_t t = (time_t)sec;
		if (!gmtime_r(&t, &tm))
			memset(&tm, 0, sizeof(tm));
		strftime(k->sec_text, sizeof(k->sec_text), "%Y-%m-%dT%H:%M:%S",
			 &tm);
		k->sec_cached = sec;
	}
	char frac[16];
	snprintf(frac, sizeof(frac), ".%06dZ", (int)(sub / 1000));
	sb_str(s, k->sec_text);
	sb_str(s, frac);
}

/* ---- RFC 5424 ---- */

/* APP-NAME: the tag's printable US-ASCII, at most 48 characters; anything
 * else becomes '_'. Returns whether the tag had to be changed (it is then
 * sent whole as an SD-PARAM as well). */
static bool sb_app_name(struct sb *s, const char *tag, size_t len)
{
	bool changed = len == 0 || len > APP_NAME_MAX;
	size_t n = len > APP_NAME_MAX ? APP_NAME_MAX : len;
	if (!n) {
		sb_str(s, "-");
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)tag[i];
		bool ok = c >= 33 && c <= 126;
		changed |= !ok;
		sb_put(s, ok ? (const char *)&c : "_", 1);
	}
	return changed;
}

/* An SD-PARAM value: '"', '\' and ']' are escaped with '\' (RFC 5424
 * section 6.3.3); the value is UTF-8 there, so other bytes outside
 * printable ASCII are written as \xHH, which rsyslog keeps as it is. */
static void sb_param(struct sb *s, const char *name, const char *v,
		     size_t len)
{
	sb_str(s, " ");
	sb_str(s, name);
	sb_str(s, "=\"");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c == '"' || c == '\\' || c == ']') {
			char e[2] = {'\\', (char)c};
			sb_put(s, e, 2);
		} else if (c < 32 || c > 126) {
			char e[5];
			snprintf(e, sizeof(e), "\\x%02x", c);
			sb_put(s, e, 4);
		} else {
			sb_put(s, &v[i], 1);
		}
	}
	sb_str(s, "\"");
}

static void sb_header(struct sb *s, struct sink *k, const char *host,
		      int severity, int64_t time_ns)
{
	char pri[16];
	snprintf(pri, sizeof(pri), "<%d>1 ", k->facility * 8 + severity);
	sb_str(s, pri);
	sb_time(s, k, time_ns);
	sb_str(s, " ");
	sb_str(s, host);
	sb_str(s, " ");
}

/* Frame one message for the sink: "LEN " before it for octet counting,
 * nothing for RELP (its own frame is built at send time). */
static int batch_add_message(struct batch *b, const struct sink *k,
			     const char *msg, size_t len)
{
	int err = 0;
	if (k->kind == SINK_SYSLOG) {
		char pre[24];
		int n = snprintf(pre, sizeof(pre), "%zu ", len);
		err = batch_put(b, pre, (size_t)n);
	}
	if (!err)
		err = batch_put(b, msg, len);
	return err ? err : batch_end_message(b);
}

static int add_syslog(struct batch *b, struct sink *k,
		      const struct shmlog_record *r)
{
	struct sb s = {&k->scratch, &k->scap, 0, 0};
	sb_header(&s, k, batch_host(b, k), sink_severity(r->prio), r->time_ns);
	bool tag_changed = sb_app_name(&s, r->tag, r->tag_len);
	sb_str(&s, " ");
	sb_u64(&s, r->pid);
	sb_str(&s, " - [" SD_ID " tid=\"");
	sb_u64(&s, r->tid);
	sb_str(&s, "\" lane=\"");
	sb_u64(&s, r->lane);
	sb_str(&s, "\" seq=\"");
	sb_u64(&s, r->seq);
	sb_str(&s, "\"");
	if (tag_changed)
		sb_param(&s, "tag", r->tag, r->tag_len);
	if (r->flags & SHMLOG_REC_TRUNCATED)
		sb_str(&s, " truncated=\"1\"");
	sb_str(&s, "] ");
	/* MSG is octets (RFC 5424 section 6.4): sent as written, any bytes;
	 * the octet count frames it, newlines included. */
	sb_put(&s, r->msg, r->msg_len);
	if (s.err)
		return s.err;
	return batch_add_message(b, k, k->scratch, s.len);
}

static void loss_text(char *t, size_t n, const struct sink_loss *l)
{
	snprintf(t, n,
		 "%" PRIu64 " records lost in buffer %s, lane %u, among "
		 "seq %" PRIu64 "-%" PRIu64 ": %" PRIu64
		 " overwritten before they were read, %" PRIu64
		 " torn by writers that died",
		 l->overwritten + l->torn, l->buffer, l->lane, l->first,
		 l->last, l->overwritten, l->torn);
}

static int add_syslog_loss(struct batch *b, struct sink *k,
			   const struct sink_loss *l)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct sb s = {&k->scratch, &k->scap, 0, 0};
	sb_header(&s, k, batch_host(b, k), 4,
		  (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
	sb_str(&s, "shmlog-forward ");
	sb_u64(&s, (uint64_t)getpid());
	sb_str(&s, " LOST [shmlog-lost@32473");
	sb_param(&s, "buffer", l->buffer, strlen(l->buffer));
	sb_str(&s, " lane=\"");
	sb_u64(&s, l->lane);
	sb_str(&s, "\" overwritten=\"");
	sb_u64(&s, l->overwritten);
	sb_str(&s, "\" torn=\"");
	sb_u64(&s, l->torn);
	sb_str(&s, "\" first=\"");
	sb_u64(&s, l->first);
	sb_str(&s, "\" last=\"");
	sb_u64(&s, l->last);
	sb_str(&s, "\"] ");
	char t[512];
	loss_text(t, sizeof(t), l);
	sb_str(&s, t);
	if (s.err)
		return s.err;
	return batch_add_message(b, k, k->scratch, s.len);
}

/* ---- Journal Export Format ---- */

/* A field is written as NAME=VALUE\n when VALUE is printable text, else in
 * the binary form: NAME\n, 64-bit little-endian length, bytes, \n. */
static int journal_field(struct batch *b, const char *name, const char *v,
			 size_t len)
{
	bool text = true;
	for (size_t i = 0; i < len && text; i++) {
		unsigned char c = (unsigned char)v[i];
		text = c >= 32 && c != 127 && c < 128;
	}
	size_t nl = strlen(name);
	int err = batch_put(b, name, nl);
	if (err)
		return err;
	if (text) {
		err = batch_put(b, "=", 1);
	} else {
		unsigned char le[9] = {'\n'};
		for (int i = 0; i < 8; i++)
			le[1 + i] = (unsigned char)((uint64_t)len >> (8 * i));
		err = batch_put(b, le, sizeof(le));
	}
	if (!err)
		err = batch_put(b, v, len);
	return err ? err : batch_put(b, "\n", 1);
}

static int journal_num(struct batch *b, const char *name, uint64_t v)
{
	char t[24];
	int n = snprintf(t, sizeof(t), "%" PRIu64, v);
	return journal_field(b, name, t, (size_t)n);
}

static int add_journal(struct batch *b, struct sink *k, const char *buffer,
		       const struct shmlog_record *r)
{
	struct sb s = {&k->scratch, &k->scap, 0, 0};
	sb_time(&s, k, r->time_ns);
	if (s.err)
		return s.err;
	char prio[2] = {shmlog_prio_char(r->prio), 0};
	int err = journal_num(b, "__REALTIME_TIMESTAMP",
			      (uint64_t)(r->time_ns / 1000));
	err = err ? err : journal_field(b, "MESSAGE", r->msg, r->msg_len);
	err = err ? err
		  : journal_num(b, "PRIORITY", (uint64_t)sink_severity(r->prio));
	err = err ? err
		  : journal_field(b, "SYSLOG_IDENTIFIER", r->tag, r->tag_len);
	err = err ? err : journal_num(b, "SYSLOG_PID", r->pid);
	err = err ? err : journal_num(b, "_PID", r->pid);
	err = err ? err : journal_num(b, "_TID", r->tid);
	err = err ? err
		  : journal_field(b, "SYSLOG_TIMESTAMP", k->scratch, s.len);
	err = err ? err
		  : journal_num(b, "SYSLOG_FACILITY", (uint64_t)k->facility);
	err = err ? err
		  : journal_field(b, "_HOSTNAME", batch_host(b, k),
				  strlen(batch_host(b, k)));
	err = err ? err : journal_field(b, "SHMLOG_PRIORITY", prio, 1);
	err = err ? err : journal_num(b, "SHMLOG_SEQ", r->seq);
	err = err ? err : journal_num(b, "SHMLOG_LANE", r->lane);
	err = err ? err
		  : journal_field(b, "SHMLOG_BUFFER", buffer, strlen(buffer));
	if (!err && (r->flags & SHMLOG_REC_TRUNCATED))
		err = journal_field(b, "SHMLOG_TRUNCATED", "1", 1);
	err = err ? err : batch_put(b, "\n", 1);
	return err ? err : batch_end_message(b);
}

static int add_journal_loss(struct batch *b, const struct sink *k,
			    const struct sink_loss *l)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char t[512];
	loss_text(t, sizeof(t), l);
	int err = journal_num(b, "__REALTIME_TIMESTAMP",
			      (uint64_t)ts.tv_sec * 1000000 +
				      (uint64_t)ts.tv_nsec / 1000);
	err = err ? err : journal_field(b, "MESSAGE", t, strlen(t));
	err = err ? err : journal_num(b, "PRIORITY", 4);
	err = err ? err
		  : journal_field(b, "SYSLOG_IDENTIFIER", "shmlog-forward", 14);
	err = err ? err : journal_num(b, "SYSLOG_PID", (uint64_t)getpid());
	err = err ? err
		  : journal_field(b, "_HOSTNAME", batch_host(b, k),
				  strlen(batch_host(b, k)));
	err = err ? err
		  : journal_field(b, "SHMLOG_BUFFER", l->buffer,
				  strlen(l->buffer));
	err = err ? err : journal_num(b, "SHMLOG_LANE", l->lane);
	err = err ? err : journal_num(b, "SHMLOG_LOST", l->overwritten + l->torn);
	err = err ? err : journal_num(b, "SHMLOG_OVERWRITTEN", l->overwritten);
	err = err ? err : journal_num(b, "SHMLOG_TORN", l->torn);
	err = err ? err : journal_num(b, "SHMLOG_LOST_FIRST_SEQ", l->first);
	err = err ? err : journal_num(b, "SHMLOG_LOST_LAST_SEQ", l->last);
	err = err ? err : batch_put(b, "\n", 1);
	return err ? err : batch_end_message(b);
}

/* ---- JSON lines: tools/format.c's formatter, into a memory stream ---- */

/* One record's line, formatted into k->json (a buffer never written to a
 * file: each line is taken out before the next), moves into the batch. */
static int jsonl_take(struct batch *b, struct sink *k)
{
	int err = batch_put(b, k->json.buf, k->json.len);
	k->json.len = 0;
	return err ? err : batch_end_message(b);
}

static int jsonl_open(struct sink *k)
{
	if (k->json.buf)
		return 0;
	return out_open(&k->json, -1);
}

/* What `shmlog cat -v json` prints, the buffer and the host included. */
static int add_jsonl(struct batch *b, struct sink *k,
		     const struct sink_rec *rec)
{
	int err = jsonl_open(k);
	if (err)
		return err;
	static const struct fmt json = {.kind = FMT_JSON, .utc = true};
	struct fmt_origin from = {rec->buffer, batch_host(b, k)};
	fmt_record_from(&k->json, &json, &from, rec->r, rec->fmt, rec->args,
			rec->args_cut);
	return jsonl_take(b, k);
}

static int add_jsonl_loss(struct batch *b, struct sink *k,
			  const struct sink_loss *l)
{
	int err = jsonl_open(k);
	if (err)
		return err;
	static const struct fmt json = {.kind = FMT_JSON, .utc = true};
	struct shmlog_lost lost = {l->lane, l->overwritten, l->torn};
	uint64_t seq[2] = {l->first, l->last};
	fmt_lost_seq(&k->json, &json, &lost, seq);
	/* as a record's line: which buffer and host it is about */
	err = batch_put(b, k->json.buf, k->json.len - 2); /* without "}\n" */
	k->json.len = 0;
	err = err ? err : batch_put(b, ",\"buffer\":", 10);
	err = err ? err : batch_json_str(b, l->name, strlen(l->name));
	err = err ? err : batch_put(b, ",\"host\":", 8);
	err = err ? err : batch_json_str(b, batch_host(b, k),
					 strlen(batch_host(b, k)));
	err = err ? err : batch_put(b, "}\n", 2);
	return err ? err : batch_end_message(b);
}

bool sink_wants_deferred(const struct sink *s)
{
	return s->kind == SINK_JSONL || s->kind == SINK_OTLP;
}

int batch_add_record(struct batch *b, struct sink *s,
		     const struct sink_rec *rec)
{
	switch (s->kind) {
	case SINK_SYSLOG:
	case SINK_RELP: return add_syslog(b, s, rec->r);
	case SINK_JOURNAL: return add_journal(b, s, rec->path, rec->r);
	case SINK_JSONL: return add_jsonl(b, s, rec);
	case SINK_OTLP: return otlp_add_record(b, s, rec);
	}
	return -EINVAL;
}

int batch_add_loss(struct batch *b, struct sink *s, const struct sink_loss *l)
{
	switch (s->kind) {
	case SINK_SYSLOG:
	case SINK_RELP: return add_syslog_loss(b, s, l);
	case SINK_JOURNAL: return add_journal_loss(b, s, l);
	case SINK_JSONL: return add_jsonl_loss(b, s, l);
	case SINK_OTLP: {
		char t[512];
		loss_text(t, sizeof(t), l);
		return otlp_add_loss(b, s, l, t);
	}
	}
	return -EINVAL;
}
