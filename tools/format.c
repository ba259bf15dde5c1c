/* SPDX-License-Identifier: MIT */
/*
 * Record formats, laid out as logcat's so that its users read them at a
 * glance. Messages come from whoever could write the buffer: control
 * characters are escaped so a record can never drive the terminal.
 */
#include "format.h"

#include <string.h>
#include <time.h>

int fmt_parse(const char *name)
{
	static const char *const names[] = {
		[FMT_THREADTIME] = "threadtime", [FMT_BRIEF] = "brief",
		[FMT_LONG] = "long",		 [FMT_RAW] = "raw",
		[FMT_JSON] = "json",
	};
	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(name, names[i]))
			return i;
	return -1;
}

static const char *prio_color(int prio)
{
	switch (prio) {
	case SHMLOG_VERBOSE: return "\033[2m";
	case SHMLOG_DEBUG: return "\033[36m";
	case SHMLOG_INFO: return "\033[32m";
	case SHMLOG_WARN: return "\033[33m";
	case SHMLOG_ERROR: return "\033[31m";
	case SHMLOG_FATAL: return "\033[1;31m";
	default: return "";
	}
}

/* Write @n bytes of @s with control characters escaped (keeps \t). */
static void put_safe(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\t' || (c >= 0x20 && c != 0x7f))
			putc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
}

static void put_json_str(FILE *out, const char *s, size_t n)
{
	putc('"', out);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			if (c < 0x20 || c == 0x7f)
				fprintf(out, "\\u%04x", c);
			else
				putc(c, out); /* UTF-8 passes through */
		}
	}
	putc('"', out);
}

/* "MM-DD HH:MM:SS.mmm" in local time (or UTC). The broken-down time is
 * cached per second: localtime_r() costs more than the rest of a line. */
static void put_time(FILE *out, const struct fmt *f, int64_t ns)
{
	static time_t cached_t = (time_t)-1;
	static bool cached_utc;
	static char cached[32];
	time_t t = (time_t)(ns / 1000000000);
	long ms = (long)((ns % 1000000000) / 1000000);
	if (ns < 0 && ms) {
		t -= 1;
		ms += 1000;
	}
	if (t != cached_t || f->utc != cached_utc) {
		struct tm tm;
		if (f->utc)
			gmtime_r(&t, &tm);
		else
			localtime_r(&t, &tm);
		strftime(cached, sizeof(cached), "%m-%d %H:%M:%S", &tm);
		cached_t = t;
		cached_utc = f->utc;
	}
	fprintf(out, "%s.%03ld", cached, ms);
}

/* The per-line prefix of threadtime and brief. */
static void put_prefix(FILE *out, const struct fmt *f,
		       const struct shmlog_record *r)
{
	char p = shmlog_prio_char(r->prio);
	if (f->kind == FMT_THREADTIME) {
		put_time(out, f, r->time_ns);
		fprintf(out, " %5u %5u %c ", r->pid, r->tid, p);
		put_safe(out, r->tag, r->tag_len);
		for (size_t i = r->tag_len; i < 8; i++)
			putc(' ', out);
		fputs(": ", out);
	} else {
		fprintf(out, "%c/", p);
		put_safe(out, r->tag, r->tag_len);
		for (size_t i = r->tag_len; i < 8; i++)
			putc(' ', out);
		fprintf(out, "(%5u): ", r->pid);
	}
}

/* One output line per message line, each with the prefix, as logcat. */
static void put_lines(FILE *out, const struct fmt *f,
		      const struct shmlog_record *r)
{
	const char *m = r->msg, *end = r->msg + r->msg_len;
	if (r->msg_len && end[-1] == '\n')
		end--;
	do {
		const char *nl = memchr(m, '\n', (size_t)(end - m));
		const char *stop = nl ? nl : end;
		if (f->color)
			fputs(prio_color(r->prio), out);
		put_prefix(out, f, r);
		put_safe(out, m, (size_t)(stop - m));
		if (f->color)
			fputs("\033[0m", out);
		putc('\n', out);
		m = nl ? nl + 1 : end;
	} while (m < end);
}

static void put_json(FILE *out, const struct shmlog_record *r)
{
	time_t t = (time_t)(r->time_ns / 1000000000);
	long ns = (long)(r->time_ns % 1000000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	char buf[40];
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(out,
		"{\"time\":\"%s.%09ldZ\",\"time_ns\":%lld,\"pid\":%u,"
		"\"tid\":%u,\"prio\":\"%c\",\"tag\":",
		buf, ns, (long long)r->time_ns, r->pid, r->tid,
		shmlog_prio_char(r->prio));
	put_json_str(out, r->tag, r->tag_len);
	fputs(",\"msg\":", out);
	put_json_str(out, r->msg, r->msg_len);
	fprintf(out, ",\"seq\":%llu,\"lane\":%u%s}\n",
		(unsigned long long)r->seq, r->lane,
		r->flags & SHMLOG_REC_TRUNCATED ? ",\"truncated\":true" : "");
}

void fmt_record(FILE *out, const struct fmt *f, const struct shmlog_record *r)
{
	switch (f->kind) {
	case FMT_RAW:
		put_safe(out, r->msg, r->msg_len);
		putc('\n', out);
		break;
	case FMT_JSON:
		put_json(out, r);
		break;
	case FMT_LONG:
		if (f->color)
			fputs(prio_color(r->prio), out);
		fputs("[ ", out);
		put_time(out, f, r->time_ns);
		fprintf(out, " %5u:%5u %c/", r->pid, r->tid,
			shmlog_prio_char(r->prio));
		put_safe(out, r->tag, r->tag_len);
		fputs(" ]\n", out);
		for (size_t i = 0; i < r->msg_len; i++) {
			if (r->msg[i] == '\n')
				putc('\n', out);
			else
				put_safe(out, r->msg + i, 1);
		}
		fputs(f->color ? "\033[0m\n\n" : "\n\n", out);
		break;
	default:
		put_lines(out, f, r);
	}
}

void fmt_lost(FILE *out, const struct fmt *f, const struct shmlog_lost *l)
{
	unsigned long long n = l->overwritten + l->torn;
	if (f->kind == FMT_JSON) {
		fprintf(out,
			"{\"lost\":%llu,\"overwritten\":%llu,\"torn\":%llu,"
			"\"lane\":%u}\n",
			n, (unsigned long long)l->overwritten,
			(unsigned long long)l->torn, l->lane);
		return;
	}
	if (f->kind == FMT_RAW)
		return;
	fprintf(out, "%s--- %llu record%s lost (lane %u:", f->color ? "\033[1m" : "",
		n, n == 1 ? "" : "s", l->lane);
	if (l->overwritten)
		fprintf(out, " %llu overwritten", (unsigned long long)l->overwritten);
	if (l->torn)
		fprintf(out, " %llu torn", (unsigned long long)l->torn);
	fprintf(out, ") ---%s\n", f->color ? "\033[0m" : "");
}
