/* SPDX-License-Identifier: MIT */
/*
 * Record formats, laid out as logcat's so that its users read them at a
 * glance, and JSON lines.
 *
 * Messages come from whoever could write the buffer. Nothing in them may
 * drive a terminal: C0 controls, DEL, C1 controls (0x80-0x9f as stray
 * bytes, and U+0080-U+009F such as U+009B, which some terminals take as
 * CSI) and bytes that are not UTF-8 are escaped. JSON output is always
 * valid JSON and valid UTF-8: strings are written by the library's one
 * encoder (src/json.h), where a byte that is not UTF-8 becomes U+FFFD,
 * and the record then also carries the exact bytes in base64
 * ("msg_base64", "tag_base64"); a deferred record's values come from
 * shmlog_reader_deferred(), a valid array whatever the record holds, with
 * "args_truncated" when the record did not hold them all.
 *
 * Speed: a reader that formats slower than writers write loses records. So
 * records are formatted into the reader's own buffer, written with
 * write(2) once about 64 KiB are in it (small enough to stay in the
 * cache): no stdio, no lock per character; runs of plain bytes found by
 * scanning 16 bytes at a time for the rare byte that needs escaping, and
 * copied with memcpy; integers formatted by hand, two digits at a time;
 * the date formatted once per second. The output buffer and its writers
 * are format_out.h and format_out.c.
 */
#include "format.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "json.h"
#include "utf8.h"
#include "format_out.h"

/* ---- -v words ---- */

int fmt_apply(struct fmt *f, const char *w)
{
	static const char *const kinds[] = {
		[FMT_THREADTIME] = "threadtime", [FMT_BRIEF] = "brief",
		[FMT_LONG] = "long",		 [FMT_RAW] = "raw",
		[FMT_JSON] = "json",
	};
	for (int i = 0; i < (int)(sizeof(kinds) / sizeof(kinds[0])); i++)
		if (!strcmp(w, kinds[i])) {
			f->kind = (enum fmt_kind)i;
			return 0;
		}
	if (!strcmp(w, "msec") || !strcmp(w, "default"))
		f->precision = FMT_MSEC;
	else if (!strcmp(w, "usec"))
		f->precision = FMT_USEC;
	else if (!strcmp(w, "nsec"))
		f->precision = FMT_NSEC;
	else if (!strcmp(w, "color") || !strcmp(w, "colour"))
		f->color = true;
	else if (!strcmp(w, "utc") || !strcmp(w, "UTC"))
		f->utc = true;
	else if (!strcmp(w, "year"))
		f->year = true;
	else if (!strcmp(w, "zone"))
		f->zone = true;
	else if (!strcmp(w, "epoch"))
		f->epoch = true;
	else if (!strcmp(w, "monotonic"))
		f->monotonic = true;
	else if (!strcmp(w, "uid"))
		f->uid = true;
	else if (!strcmp(w, "printable"))
		f->printable = true;
	else if (!strcmp(w, "buffer"))
		f->buffer = true;
	else
		return -1;
	return 0;
}

void fmt_prepare(struct fmt *f)
{
	struct timespec rt, mt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	f->mono_offset_ns = (int64_t)(rt.tv_sec - mt.tv_sec) * 1000000000 +
			    (rt.tv_nsec - mt.tv_nsec);
}

/* ---- escaping ---- */

static bool is_c1(uint32_t cp)
{
	return cp >= 0x80 && cp <= 0x9f;
}

/* "000" to "999": the milliseconds of every line, without a division. */
static char ms_digits[3000];

/* Bytes shown as they are in text: printable ASCII and tab. */
static bool text_plain[256];

__attribute__((constructor)) static void init_tables(void)
{
	for (int c = 0x20; c < 0x7f; c++)
		text_plain[c] = true;
	text_plain['\t'] = true;
	for (int i = 0; i < 1000; i++) {
		ms_digits[i * 3] = (char)('0' + i / 100);
		ms_digits[i * 3 + 1] = (char)('0' + i / 10 % 10);
		ms_digits[i * 3 + 2] = (char)('0' + i % 10);
	}
}

/* Word-at-a-time tests on 8 bytes (the classic bit tricks): does any
 * byte lie below @n (n <= 128), or above @m (m <= 127)? */
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
#define ANY_BELOW(x, n) (((x) - ONES * (n)) & ~(x) & HIGHS)
#define ANY_ABOVE(x, m) ((((x) + ONES * (127 - (m))) | (x)) & HIGHS)

static inline uint64_t load8(const unsigned char *p)
{
	uint64_t x;
	memcpy(&x, p, 8);
	return x;
}

/* Length of the run at @u of bytes shown as they are in text. */
static size_t text_run(const unsigned char *u, size_t n)
{
	size_t i = 0;
#ifdef __SSE2__
	/* 16 bytes at a time: printable ASCII is 0x20..0x7e, which as signed
	 * bytes is above 0x1f and below 0x7f (0x80..0xff are negative). */
	const __m128i lo = _mm_set1_epi8(0x1f), hi = _mm_set1_epi8(0x7f);
	for (; i + 16 <= n; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(u + i));
		unsigned ok = (unsigned)_mm_movemask_epi8(_mm_and_si128(
			_mm_cmpgt_epi8(x, lo), _mm_cmplt_epi8(x, hi)));
		if (ok != 0xffff)
			return i + (size_t)__builtin_ctz(~ok);
	}
	if (i < n && n >= 16) {
		/* the last 16 bytes, overlapping what is known plain: the
		 * first stop among them is the first one past i */
		__m128i x = _mm_loadu_si128((const __m128i *)(u + n - 16));
		unsigned ok = (unsigned)_mm_movemask_epi8(_mm_and_si128(
			_mm_cmpgt_epi8(x, lo), _mm_cmplt_epi8(x, hi)));
		return ok == 0xffff ? n : n - 16 + (size_t)__builtin_ctz(~ok);
	}
#endif
	for (; i + 8 <= n; i += 8) {
		uint64_t x = load8(u + i);
		if (ANY_BELOW(x, 0x20) | ANY_ABOVE(x, 0x7e))
			break;
	}
	if (i + 8 > n && n >= 8) {
		/* the last 8 bytes cover what is left: one more test */
		uint64_t x = load8(u + n - 8);
		if (!(ANY_BELOW(x, 0x20) | ANY_ABOVE(x, 0x7e)))
			return n;
	}
	while (i < n && text_plain[u[i]])
		i++;
	return i;
}

/* Copy the run at @u (@n bytes there) of bytes shown as they are in
 * text into the buffer and return its length: 16 bytes are tested and
 * copied at once, so that a plain message is read once. A block that
 * holds the run's end is copied whole: the bytes after the run land in
 * the room to spare (out_room()) and are overwritten next. Short strings
 * take the scan of text_run() and a memcpy. (JSON strings: src/json.c,
 * the same way.) */
#ifdef __SSE2__
static inline unsigned text_ok16(__m128i x)
{
	const __m128i lo = _mm_set1_epi8(0x1f), hi = _mm_set1_epi8(0x7f);
	return (unsigned)_mm_movemask_epi8(
		_mm_and_si128(_mm_cmpgt_epi8(x, lo), _mm_cmplt_epi8(x, hi)));
}

PUT_INLINE size_t text_copy_run(struct out *o, const unsigned char *u, size_t n)
{
	char *d = o->buf + o->len;
	size_t i = 0;
	if (n < 16) {
		i = text_run(u, n);
		memcpy(d, u, i);
		o->len += i;
		return i;
	}
	for (; i + 16 <= n; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(u + i));
		_mm_storeu_si128((__m128i *)(d + i), x);
		unsigned ok = text_ok16(x);
		if (ok != 0xffff) {
			i += (size_t)__builtin_ctz(~ok);
			o->len += i;
			return i;
		}
	}
	if (i < n) { /* the last 16, overlapping plain ones */
		__m128i x = _mm_loadu_si128((const __m128i *)(u + n - 16));
		_mm_storeu_si128((__m128i *)(d + n - 16), x);
		unsigned ok = text_ok16(x);
		i = ok == 0xffff ? n : n - 16 + (size_t)__builtin_ctz(~ok);
	}
	o->len += i;
	return i;
}
#else
static size_t text_copy_run(struct out *o, const unsigned char *u, size_t n)
{
	size_t run = text_run(u, n);
	put_n(o, (const char *)u, run);
	return run;
}
#endif

static void put_prefix(struct out *o, const struct fmt *f,
		       const struct shmlog_record *r);
static const char *prio_color(int prio);

/* End a line of @r and start the next, prefix and colour included. */
static void next_line(struct out *o, const struct fmt *f,
		      const struct shmlog_record *r)
{
	if (f->color)
		put_s(o, "\033[0m");
	put_c(o, '\n');
	out_room(o, r);
	if (f->color)
		put_s(o, prio_color(r->prio));
	put_prefix(o, f, r);
}

/* @n bytes of @s for a terminal: controls, C1 and bytes that are not UTF-8
 * escaped as \xNN (C1 code points as \u00NN); with "printable", every byte
 * outside printable ASCII. With @lines, a newline starts a new line with
 * @lines' prefix, as logcat shows a message of several lines. */
static void put_text(struct out *o, const struct fmt *f, const char *s,
		     size_t n, const struct shmlog_record *lines)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		i += text_copy_run(o, u + i, n - i);
		if (i == n)
			break;
		uint32_t cp = 0;
		size_t len = u[i] >= 0x80 ? shmlog__utf8_seq(u + i, n - i, &cp) : 0;
		if (text_plain[u[i]]) { /* a tab */
			put_c(o, s[i]);
			i++;
		} else if (lines && u[i] == '\n') {
			next_line(o, f, lines);
			i++;
		} else if (len && !f->printable && !is_c1(cp)) {
			put_n(o, s + i, len);
			i += len;
		} else if (len && !f->printable) {
			put_hex_byte(o, "\\u00", (unsigned char)cp);
			i += len;
		} else {
			put_hex_byte(o, "\\x", u[i]);
			i++;
		}
	}
}

/* @n bytes of @s as a JSON string, valid UTF-8 whatever they are, by the
 * library's encoder (src/json.h: its policy); sets *@invalid if some bytes
 * were not UTF-8 (each became U+FFFD). out_room() made room for it. */
static void put_json_str(struct out *o, const char *s, size_t n, bool *invalid)
{
	unsigned flags = 0;
	o->len += shmlog__json_str(o->buf + o->len, o->cap - o->len, s, n,
				   &flags);
	if (flags & SHMLOG__JSON_NOT_UTF8)
		*invalid = true;
}

static void put_base64(struct out *o, const char *s, size_t n)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *u = (const unsigned char *)s;
	put_c(o, '"');
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8 |
			     u[i + 2];
		put_c(o, b64[v >> 18]);
		put_c(o, b64[(v >> 12) & 63]);
		put_c(o, b64[(v >> 6) & 63]);
		put_c(o, b64[v & 63]);
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)u[i] << 16;
		put_c(o, b64[v >> 18]);
		put_c(o, b64[(v >> 12) & 63]);
		put_s(o, "==");
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8;
		put_c(o, b64[v >> 18]);
		put_c(o, b64[(v >> 12) & 63]);
		put_c(o, b64[(v >> 6) & 63]);
		put_c(o, '=');
	}
	put_c(o, '"');
}

/* ---- time ---- */

/* Split @ns into whole seconds (rounded down) and nanoseconds. */
static void split_ns(int64_t ns, int64_t *sec, uint32_t *frac)
{
	*sec = ns / 1000000000;
	int64_t r = ns % 1000000000;
	if (r < 0) {
		r += 1000000000;
		*sec -= 1;
	}
	*frac = (uint32_t)r;
}

static void put_frac(struct out *o, const struct fmt *f, uint32_t frac)
{
	put_c(o, '.');
	switch (f->precision) {
	case FMT_NSEC: put_zeros(o, frac, 9); break;
	case FMT_USEC: put_zeros(o, frac / 1000, 6); break;
	default:
		put_n(o, ms_digits + frac / 1000000 * 3, 3);
	}
}

/* The date of a second as text, computed once per second: localtime_r()
 * costs more than the rest of a line. A time in the second cached needs
 * no division either: its nanoseconds are its distance from the second's
 * start. */
struct date_cache {
	bool valid, utc;
	const char *layout;
	int64_t sec;
	uint64_t base_ns; /* sec * 10^9, modulo 2^64 */
	char date[48], zone[16], secs[24]; /* secs: the second in decimal */
	size_t date_len, zone_len, secs_len;
};

static const char layout_md[] = "%m-%d %H:%M:%S";
static const char layout_ymd[] = "%Y-%m-%d %H:%M:%S";
static const char layout_rfc3339[] = "%Y-%m-%dT%H:%M:%S";

static void date_compute(struct date_cache *c, bool utc, int64_t sec,
			 const char *layout)
{
	time_t t = (time_t)sec;
	struct tm tm;
	if (utc ? !gmtime_r(&t, &tm) : !localtime_r(&t, &tm))
		memset(&tm, 0, sizeof(tm));
	c->date_len = strftime(c->date, sizeof(c->date), layout, &tm);
	c->zone_len = strftime(c->zone, sizeof(c->zone), " %z", &tm);
	int n = snprintf(c->secs, sizeof(c->secs), "%lld", (long long)sec);
	c->secs_len = n > 0 ? (size_t)n : 0;
	c->sec = sec;
	c->base_ns = (uint64_t)sec * 1000000000u;
	c->utc = utc;
	c->layout = layout;
	c->valid = true;
}

/* The cache filled for the second holding @ns; the nanoseconds past that
 * second in *@frac. */
static inline void date_fill(struct date_cache *c, bool utc, int64_t ns,
			     const char *layout, uint32_t *frac)
{
	uint64_t off = (uint64_t)ns - c->base_ns;
	if (c->valid && off < 1000000000 && c->layout == layout &&
	    c->utc == utc) {
		*frac = (uint32_t)off;
		return;
	}
	int64_t sec;
	split_ns(ns, &sec, frac);
	date_compute(c, utc, sec, layout);
}

/* The cached date: all of its array copied (a few moves; the buffer has
 * room to spare, see out_room()), its length counted. */
static inline void put_date(struct out *o, const struct date_cache *c)
{
	memcpy(o->buf + o->len, c->date, sizeof(c->date));
	o->len += c->date_len;
}

/* logcat's time column: "MM-DD HH:MM:SS.mmm", with the modifiers. */
PUT_INLINE void put_time(struct out *o, const struct fmt *f, int64_t ns)
{
	static struct date_cache cache;
	int64_t sec;
	uint32_t frac;
	if (f->monotonic || f->epoch) {
		split_ns(f->monotonic ? ns - f->mono_offset_ns : ns, &sec,
			 &frac);
		put_i64(o, sec, 5);
		put_frac(o, f, frac);
		return;
	}
	date_fill(&cache, f->utc, ns, f->year ? layout_ymd : layout_md, &frac);
	put_date(o, &cache);
	put_frac(o, f, frac);
	if (f->zone)
		put_n(o, cache.zone, cache.zone_len);
}

/* JSON's times: "time" in RFC 3339, UTC, with nanoseconds, then
 * "time_ns". Both come from one date per second: the nanoseconds since
 * the Epoch are the second's digits and the fraction's. */
static void put_json_times(struct out *o, int64_t ns)
{
	static struct date_cache cache;
	uint32_t frac;
	date_fill(&cache, true, ns, layout_rfc3339, &frac);
	put_s(o, "{\"time\":\"");
	put_date(o, &cache);
	put_c(o, '.');
	size_t digits = o->len;
	put_zeros(o, frac, 9);
	put_s(o, "Z\",\"time_ns\":");
	if (cache.sec > 0) {
		put_n(o, cache.secs, cache.secs_len);
		memcpy(o->buf + o->len, o->buf + digits, 9);
		o->len += 9;
	} else {
		put_i64(o, ns, 0);
	}
}

/* ---- the writer's user ---- */

/* A process's user, from the owner of /proc/PID, remembered per pid: the
 * record does not carry it, so it is known only while the writer lives. */
struct uid_entry {
	uint32_t pid;
	bool known;
	uid_t uid;
	char name[33];
};

static const struct uid_entry *uid_of(uint32_t pid)
{
	static struct uid_entry cache[256];
	struct uid_entry *e = &cache[pid % 256];
	if (e->pid == pid && pid)
		return e;
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	char path[32];
	snprintf(path, sizeof(path), "/proc/%u", pid);
	struct stat st;
	if (!pid || stat(path, &st) < 0) {
		snprintf(e->name, sizeof(e->name), "-");
		return e;
	}
	e->known = true;
	e->uid = st.st_uid;
	struct passwd *pw = getpwuid(st.st_uid);
	if (pw && strlen(pw->pw_name) < sizeof(e->name))
		snprintf(e->name, sizeof(e->name), "%s", pw->pw_name);
	else
		snprintf(e->name, sizeof(e->name), "%u", (unsigned)st.st_uid);
	return e;
}

/* ---- formats ---- */

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

static void put_tag_padded(struct out *o, const struct fmt *f,
			   const struct shmlog_record *r)
{
	put_text(o, f, r->tag, r->tag_len, NULL);
	for (size_t i = r->tag_len; i < 8; i++)
		put_c(o, ' ');
}

/* What follows the time in threadtime, or starts a brief line, or follows
 * the time in JSON: the writer's ids, priority and tag. */
static void build_ids(struct out *o, const struct fmt *f,
		      const struct shmlog_record *r)
{
	char p = shmlog_prio_char(r->prio);
	if (f->kind == FMT_THREADTIME) {
		put_c(o, ' ');
		if (f->uid) {
			const char *name = uid_of(r->pid)->name;
			for (size_t n = strlen(name); n < 5; n++)
				put_c(o, ' ');
			put_s(o, name);
			put_c(o, ' ');
		}
		put_u64(o, r->pid, 5);
		put_c(o, ' ');
		put_u64(o, r->tid, 5);
		put_c(o, ' ');
		put_c(o, p);
		put_c(o, ' ');
		put_tag_padded(o, f, r);
		put_s(o, ": ");
	} else if (f->kind == FMT_BRIEF) {
		put_c(o, p);
		put_c(o, '/');
		put_tag_padded(o, f, r);
		put_c(o, '(');
		put_u64(o, r->pid, 5);
		put_s(o, "): ");
	} else { /* json */
		bool bad_tag = false;
		put_s(o, ",\"pid\":");
		put_u64(o, r->pid, 0);
		put_s(o, ",\"tid\":");
		put_u64(o, r->tid, 0);
		put_s(o, ",\"prio\":\"");
		put_c(o, p);
		put_s(o, "\",\"tag\":");
		put_json_str(o, r->tag, r->tag_len, &bad_tag);
		if (bad_tag) {
			put_s(o, ",\"tag_base64\":");
			put_base64(o, r->tag, r->tag_len);
		}
	}
}

/* The ids part is the same for every record of a thread with one tag and
 * priority: formatted once, then copied. A small cache, two ways per set,
 * keyed by what the part is made of (the format's words that shape it
 * included), so that a thread that logs under several tags hits too. */
#define IDS_SETS 128
#define IDS_TEXT 112

struct ids_entry {
	uint64_t who;  /* pid << 32 | tid */
	uint32_t what; /* prio | shape << 8 | tag_len << 16; 0: empty */
	uint32_t len;
	char tag[SHMLOG_TAG_MAX];
	char text[IDS_TEXT];
};

/* What of the format shapes the ids part: never 0. */
static uint32_t ids_shape(const struct fmt *f)
{
	return (uint32_t)(1 + f->kind + 8 * f->printable + 16 * f->uid);
}

PUT_INLINE void put_ids(struct out *o, const struct fmt *f,
		    const struct shmlog_record *r)
{
	static struct ids_entry cache[IDS_SETS][2];
	static uint8_t older[IDS_SETS]; /* the way to replace */
	if (r->tag_len > SHMLOG_TAG_MAX || r->prio < 0 || r->prio > 255) {
		build_ids(o, f, r); /* not from a sane writer: no cache */
		return;
	}
	uint64_t who = (uint64_t)r->pid << 32 | r->tid;
	uint32_t what = (uint32_t)r->prio | ids_shape(f) << 8 |
			(uint32_t)r->tag_len << 16;
	uint32_t key = r->tid * 0x9e3779b1u ^
		       (what ^ (r->tag_len ? (uint32_t)(unsigned char)r->tag[0]
						   << 24
					   : 0)) *
			       0x85ebca6bu;
	unsigned set = (key ^ key >> 15) % IDS_SETS;
	for (int way = 0; way < 2; way++) {
		struct ids_entry *e = &cache[set][way];
		if (e->who == who && e->what == what &&
		    !memcmp(e->tag, r->tag, r->tag_len)) {
			/* the buffer has room to spare (out_room()) */
			if (e->len <= 64)
				memcpy(o->buf + o->len, e->text, 64);
			else
				memcpy(o->buf + o->len, e->text, IDS_TEXT);
			o->len += e->len;
			older[set] = (uint8_t)!way;
			return;
		}
	}
	size_t start = o->len;
	build_ids(o, f, r);
	size_t len = o->len - start;
	if (!len || len > IDS_TEXT)
		return;
	struct ids_entry *e = &cache[set][older[set]];
	older[set] = (uint8_t)!older[set];
	memcpy(e->text, o->buf + start, len);
	e->len = (uint32_t)len;
	e->who = who;
	e->what = what;
	memcpy(e->tag, r->tag, r->tag_len);
}

/* The origin of the record being formatted (fmt_record_from()): the
 * prefix of every line shows it, and a line may start deep in put_text(). */
static const struct fmt_origin *origin;

/* With the "buffer" modifier, the record's buffer, padded as a tag is. */
static void put_buffer_column(struct out *o, const struct fmt *f)
{
	if (!f->buffer || !origin || !origin->buffer)
		return;
	size_t n = strnlen(origin->buffer, 64);
	put_text(o, f, origin->buffer, n, NULL);
	for (; n < 8; n++)
		put_c(o, ' ');
	put_c(o, ' ');
}

/* The per-line prefix of threadtime and brief. */
static void put_prefix(struct out *o, const struct fmt *f,
		       const struct shmlog_record *r)
{
	put_buffer_column(o, f);
	if (f->kind == FMT_THREADTIME)
		put_time(o, f, r->time_ns);
	put_ids(o, f, r);
}

/* A record the writer cut to fit says so at the end of its text. */
static void put_truncated(struct out *o, const struct shmlog_record *r)
{
	if (r->flags & SHMLOG_REC_TRUNCATED)
		put_s(o, FMT_TRUNCATED_MARK);
}

/* One output line per message line, each with the prefix, as logcat. */
static void put_lines(struct out *o, const struct fmt *f,
		      const struct shmlog_record *r)
{
	size_t n = r->msg_len;
	if (n && r->msg[n - 1] == '\n')
		n--;
	out_room(o, r);
	if (f->color)
		put_s(o, prio_color(r->prio));
	put_prefix(o, f, r);
	put_text(o, f, r->msg, n, r);
	put_truncated(o, r);
	if (f->color)
		put_s(o, "\033[0m");
	put_c(o, '\n');
}

static void put_long(struct out *o, const struct fmt *f,
		     const struct shmlog_record *r)
{
	out_room(o, r);
	if (f->color)
		put_s(o, prio_color(r->prio));
	put_s(o, "[ ");
	put_buffer_column(o, f);
	put_time(o, f, r->time_ns);
	put_c(o, ' ');
	if (f->uid) {
		put_s(o, uid_of(r->pid)->name);
		put_c(o, ':');
	}
	put_u64(o, r->pid, 5);
	put_c(o, ':');
	put_u64(o, r->tid, 5);
	put_c(o, ' ');
	put_c(o, shmlog_prio_char(r->prio));
	put_c(o, '/');
	put_text(o, f, r->tag, r->tag_len, NULL);
	put_s(o, " ]\n");
	const char *m = r->msg, *end = r->msg + r->msg_len;
	while (m < end) {
		const char *nl = memchr(m, '\n', (size_t)(end - m));
		const char *stop = nl ? nl : end;
		put_text(o, f, m, (size_t)(stop - m), NULL);
		if (nl)
			put_c(o, '\n');
		m = nl ? nl + 1 : end;
	}
	put_truncated(o, r);
	put_s(o, f->color ? "\033[0m\n\n" : "\n\n");
}

/* "buffer" and "host", those the origin names. */
static void put_json_origin(struct out *o)
{
	const char *v[2] = {origin ? origin->buffer : NULL,
			    origin ? origin->host : NULL};
	static const char *const key[2] = {",\"buffer\":", ",\"host\":"};
	for (int i = 0; i < 2; i++) {
		if (!v[i])
			continue;
		bool bad = false;
		size_t n = strnlen(v[i], 256);
		out_room(o, &(struct shmlog_record){.msg_len = n});
		put_s(o, key[i]);
		put_json_str(o, v[i], n, &bad);
	}
}

static void put_json(struct out *o, const struct fmt *f,
		     const struct shmlog_record *r, const char *fmt,
		     const char *args, bool args_cut)
{
	out_room(o, r);
	bool bad_msg = false;
	put_json_times(o, r->time_ns);
	put_ids(o, f, r);
	put_s(o, ",\"msg\":");
	put_json_str(o, r->msg, r->msg_len, &bad_msg);
	if (fmt) {
		/* formatted here from these: the call as it was made */
		bool bad_fmt = false;
		size_t n = strlen(fmt);
		out_room(o, &(struct shmlog_record){.msg_len = n});
		put_s(o, ",\"fmt\":");
		put_json_str(o, fmt, n, &bad_fmt);
	}
	if (args) {
		size_t n = strlen(args);
		out_room(o, &(struct shmlog_record){.msg_len = n});
		put_s(o, ",\"args\":");
		put_s(o, args);
		if (args_cut) /* the values before the damage */
			put_s(o, ",\"args_truncated\":true");
	}
	put_s(o, ",\"seq\":");
	put_u64(o, r->seq, 0);
	put_s(o, ",\"lane\":");
	put_u64(o, r->lane, 0);
	if (r->flags & SHMLOG_REC_TRUNCATED)
		put_s(o, ",\"truncated\":true");
	put_json_origin(o);
	if (f->uid && uid_of(r->pid)->known) {
		put_s(o, ",\"uid\":");
		put_u64(o, uid_of(r->pid)->uid, 0);
	}
	if (f->monotonic) {
		int64_t sec;
		uint32_t frac;
		split_ns(r->time_ns - f->mono_offset_ns, &sec, &frac);
		put_s(o, ",\"monotonic_ns\":");
		put_i64(o, r->time_ns - f->mono_offset_ns, 0);
	}
	if (bad_msg) {
		put_s(o, ",\"msg_base64\":");
		put_base64(o, r->msg, r->msg_len);
	}
	put_s(o, "}\n");
}

void fmt_record(struct out *o, const struct fmt *f,
		const struct shmlog_record *r)
{
	fmt_record_deferred(o, f, r, NULL, NULL, false);
}

void fmt_record_deferred(struct out *o, const struct fmt *f,
			 const struct shmlog_record *r, const char *fmt,
			 const char *args, bool args_cut)
{
	fmt_record_from(o, f, NULL, r, fmt, args, args_cut);
}

void fmt_record_from(struct out *o, const struct fmt *f,
		     const struct fmt_origin *from,
		     const struct shmlog_record *r, const char *fmt,
		     const char *args, bool args_cut)
{
	origin = from;
	switch (f->kind) {
	case FMT_RAW:
		out_room(o, r);
		put_buffer_column(o, f);
		put_text(o, f, r->msg, r->msg_len, NULL);
		put_truncated(o, r);
		put_c(o, '\n');
		break;
	case FMT_JSON: put_json(o, f, r, fmt, args, args_cut); break;
	case FMT_LONG: put_long(o, f, r); break;
	default: put_lines(o, f, r);
	}
}

void fmt_lost(struct out *o, const struct fmt *f, const struct shmlog_lost *l)
{
	fmt_lost_seq(o, f, l, NULL);
}

void fmt_lost_seq(struct out *o, const struct fmt *f,
		  const struct shmlog_lost *l, const uint64_t *seq)
{
	uint64_t n = l->overwritten + l->torn;
	if (f->kind == FMT_RAW)
		return;
	out_room(o, &(struct shmlog_record){0});
	if (f->kind == FMT_JSON) {
		put_s(o, "{\"lost\":");
		put_u64(o, n, 0);
		put_s(o, ",\"overwritten\":");
		put_u64(o, l->overwritten, 0);
		put_s(o, ",\"torn\":");
		put_u64(o, l->torn, 0);
		put_s(o, ",\"lane\":");
		put_u64(o, l->lane, 0);
		if (seq) {
			put_s(o, ",\"first_seq\":");
			put_u64(o, seq[0], 0);
			put_s(o, ",\"last_seq\":");
			put_u64(o, seq[1], 0);
		}
		put_s(o, "}\n");
		return;
	}
	if (f->color)
		put_s(o, "\033[1m");
	put_s(o, "--- ");
	put_u64(o, n, 0);
	put_s(o, n == 1 ? " record lost (lane " : " records lost (lane ");
	put_u64(o, l->lane, 0);
	put_c(o, ':');
	if (l->overwritten) {
		put_c(o, ' ');
		put_u64(o, l->overwritten, 0);
		put_s(o, " overwritten");
	}
	if (l->torn) {
		put_c(o, ' ');
		put_u64(o, l->torn, 0);
		put_s(o, " torn");
	}
	if (seq) {
		put_s(o, "; seq ");
		put_u64(o, seq[0], 0);
		if (seq[1] != seq[0]) {
			put_c(o, '-');
			put_u64(o, seq[1], 0);
		}
	}
	put_s(o, ") ---");
	if (f->color)
		put_s(o, "\033[0m");
	put_c(o, '\n');
}
