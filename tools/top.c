/* SPDX-License-Identifier: MIT */
/*
 * `shmlog top`: who logs most, like top(1) and `logcat -S`.
 *
 * A reader reads the whole buffer first (the records it still holds),
 * then follows it from there as `cat -f` does, and counts each record
 * under its group: its tag, its writer's pid, its priority or its lane.
 * Two figures per group: the last interval (-d) and everything seen, which
 * is everything since the oldest record the buffer held when top started
 * (the buffer keeps no per-tag counts since its creation: what was
 * overwritten before is gone). The per-lane books the segment does keep
 * since creation come from shmlog_reader_lane_stats(): records written,
 * overwritten before any reader got them, torn; and the writers, named
 * after they have exited: each lane's last (shmlog_reader_lane_writer())
 * and the buffer's last claims (shmlog_reader_recent_writer()).
 *
 * Every loop is bounded by the interval's deadline and checks cli_stop
 * (SIGINT, SIGTERM); on a terminal `q` quits.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "kept.h"
#include "shmlog.h"

enum by { BY_PID, BY_TAG, BY_PRIO, BY_LANE };
static const char *const by_names[] = {"pid", "tag", "prio", "lane"};

enum sort {
	SORT_RECORDS, /* the last interval's records, then all */
	SORT_BYTES,
	SORT_TOTAL, /* records since the oldest */
	SORT_TOTAL_BYTES,
	SORT_LOST,
	SORT_KEY, /* tag, pid, priority or lane, ascending */
};
static const char *const sort_names[] = {"records", "bytes",
					 "total",   "total-bytes",
					 "lost",    "key"};

#define ROWS_MAX (1u << 16) /* distinct groups kept; the rest in "other" */
#define SLICE_MS 100 /* longest wait between looks at the stop flag and q */

/* One group's figures. */
struct row {
	uint64_t id; /* pid, priority or lane; a tag's hash */
	char tag[SHMLOG_TAG_MAX + 1]; /* BY_TAG only (may hold NULs) */
	size_t tag_len;
	bool used;
	bool other; /* the overflow row */
	uint64_t recs, bytes; /* the last interval */
	uint64_t recs_all, bytes_all; /* since the oldest record */
	/* filled at each table, BY_PID and BY_LANE: */
	uint64_t written, overwritten, torn; /* the lanes' books */
	char name[17];
	const char *state; /* live, exited, dead, or "-" */
};

struct top {
	enum by by;
	enum sort sort;
	double interval; /* seconds */
	uint64_t iterations; /* 0: until stopped */
	bool once, json, live_tty;
	shmlog_reader_t *rd;
	unsigned lanes;
	struct row *rows; /* open addressing, cap a power of two */
	size_t cap, used;
	struct row other;
	int64_t oldest_ns; /* the first record read; 0: none yet */
	int64_t start_ns; /* when top started */
	/* the names of pids that no lane names, from /proc while they ran */
	struct {
		uint32_t pid;
		char name[17];
	} *names;
	size_t nnames, names_cap;
	/* lanes' writers at the last table */
	struct shmlog_lane_writer *lw;
	int *lw_ok;
	struct shmlog_lane_stats *ls;
	/* the buffer's last claims: writers that took turns in a lane */
	struct shmlog_lane_writer rw[SHMLOG_RECENT_WRITERS];
	bool rw_ok[SHMLOG_RECENT_WRITERS];
	bool tty_raw;
	struct termios saved;
};

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static uint64_t mix(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	return v ^ (v >> 33);
}

static int rows_grow(struct top *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 256;
	struct row *n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->rows[i].used)
			continue;
		size_t j = mix(t->rows[i].id) & (ncap - 1);
		while (n[j].used)
			j = (j + 1) & (ncap - 1);
		n[j] = t->rows[i];
	}
	free(t->rows);
	t->rows = n;
	t->cap = ncap;
	return 0;
}

/* The row of a record's group, made if new (the overflow row beyond
 * ROWS_MAX groups, or if memory runs out). */
static struct row *row_of(struct top *t, const struct shmlog_record *r)
{
	uint64_t id;
	size_t tag_len = 0;
	switch (t->by) {
	case BY_PID: id = r->pid; break;
	case BY_PRIO: id = (uint64_t)r->prio; break;
	case BY_LANE: id = r->lane; break;
	default:
		tag_len = r->tag_len < SHMLOG_TAG_MAX ? r->tag_len
						      : SHMLOG_TAG_MAX;
		id = hash_bytes(r->tag, tag_len);
		break;
	}
	if ((t->used + 1) * 2 > t->cap) {
		if (t->used >= ROWS_MAX || rows_grow(t))
			goto other;
	}
	size_t j = mix(id) & (t->cap - 1);
	for (size_t probes = 0; probes < t->cap; probes++) {
		struct row *w = &t->rows[j];
		if (!w->used) {
			if (t->used >= ROWS_MAX)
				goto other;
			w->used = true;
			w->id = id;
			if (t->by == BY_TAG) {
				memcpy(w->tag, r->tag, tag_len);
				w->tag[tag_len] = '\0';
				w->tag_len = tag_len;
			}
			t->used++;
			return w;
		}
		if (w->id == id &&
		    (t->by != BY_TAG || (w->tag_len == tag_len &&
					 !memcmp(w->tag, r->tag, tag_len))))
			return w;
		j = (j + 1) & (t->cap - 1);
	}
other:
	t->other.used = t->other.other = true;
	return &t->other;
}

static void count(struct top *t, const struct shmlog_record *r, bool interval)
{
	struct row *w = row_of(t, r);
	uint64_t b = kept_record_bytes(r->tag_len, r->msg_len);
	if (interval) {
		w->recs++;
		w->bytes += b;
	}
	w->recs_all++;
	w->bytes_all += b;
	if (!t->oldest_ns || r->time_ns < t->oldest_ns)
		t->oldest_ns = r->time_ns;
}

/* A pid's name from /proc while it runs (the pid as the writer saw it:
 * right in our own pid namespace), kept once found. */
static const char *proc_name(struct top *t, uint32_t pid)
{
	for (size_t i = 0; i < t->nnames; i++)
		if (t->names[i].pid == pid)
			return t->names[i].name;
	char path[40], name[17] = {0};
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	/* bounded: a buffer may name any number of pids */
	FILE *f = pid && t->nnames < 1024 ? fopen(path, "re") : NULL;
	if (!f)
		return NULL;
	size_t n = fread(name, 1, 16, f);
	fclose(f);
	name[n] = '\0';
	name[strcspn(name, "\n")] = '\0';
	if (t->nnames == t->names_cap) {
		size_t nc = t->names_cap ? t->names_cap * 2 : 16;
		void *p = realloc(t->names, nc * sizeof(*t->names));
		if (!p)
			return NULL;
		t->names = p;
		t->names_cap = nc;
	}
	t->names[t->nnames].pid = pid;
	memcpy(t->names[t->nnames].name, name, sizeof(name));
	return t->names[t->nnames++].name;
}

/* Read what there is now. @interval: count it in the interval too. */
static int drain(struct top *t, bool interval)
{
	struct shmlog_record rec;
	struct shmlog_lost lost;
	int ev;
	while (!cli_stop && (ev = shmlog_reader_next(t->rd, &rec, &lost)) > 0) {
		if (ev == SHMLOG_EV_RECORD)
			count(t, &rec, interval);
	}
	return ev < 0 ? ev : 0;
}

/* ---- the lanes' books and writers, at each table ---- */

static void lanes_refresh(struct top *t)
{
	for (unsigned i = 0; i < t->lanes; i++) {
		t->lw_ok[i] = shmlog_reader_lane_writer(t->rd, i, &t->lw[i]) == 0;
		if (shmlog_reader_lane_stats(t->rd, i, &t->ls[i]))
			memset(&t->ls[i], 0, sizeof(t->ls[i]));
	}
	for (unsigned i = 0; i < SHMLOG_RECENT_WRITERS; i++)
		t->rw_ok[i] = shmlog_reader_recent_writer(t->rd, i,
							  &t->rw[i]) == 0;
}

/* A lane's state: its writer holds it, gave it back, or died holding
 * it (the next writer to claim it takes it over). */
static const char *lane_state(const struct top *t, unsigned i)
{
	const struct shmlog_lane_stats *s = &t->ls[i];
	if (s->owner_alive)
		return "live";
	if (s->owner_pid || s->owner_tid)
		return "dead";
	if (!t->lw_ok[i])
		return "-";
	/* found dead by a later writer, which repaired the lane */
	return t->lw[i].died ? "dead" : "exited";
}

static void fill_lane(struct top *t, struct row *w)
{
	unsigned i = (unsigned)w->id;
	w->state = "-";
	w->name[0] = '\0';
	if (i >= t->lanes)
		return;
	const struct shmlog_lane_stats *s = &t->ls[i];
	w->written = s->written;
	w->overwritten = s->overwritten;
	w->torn = s->torn;
	w->state = lane_state(t, i);
	if (t->lw_ok[i])
		memcpy(w->name, t->lw[i].name, sizeof(w->name));
}

/* A pid's name and state: from the lanes that name it (the one it
 * holds, or the last it claimed), or the buffer's last claims, else its
 * name from /proc while it runs.
 * The lanes' books are not a pid's: several writers may take turns in a
 * lane, so they are shown per lane only (--by lane). */
static void fill_pid(struct top *t, struct row *w)
{
	uint32_t pid = (uint32_t)w->id;
	w->state = "-";
	w->name[0] = '\0';
	bool named = false, live = false, dead = false;
	for (unsigned i = 0; i < t->lanes && pid; i++) {
		const struct shmlog_lane_stats *s = &t->ls[i];
		bool holds = s->owner_pid == pid;
		bool last = t->lw_ok[i] && t->lw[i].pid == pid;
		if (last && !named) {
			memcpy(w->name, t->lw[i].name, sizeof(w->name));
			named = true;
		}
		live |= holds && s->owner_alive;
		dead |= (holds && !s->owner_alive) || (last && t->lw[i].died);
	}
	/* a writer that took its turn in a lane another claimed since */
	for (unsigned i = 0; i < SHMLOG_RECENT_WRITERS && pid; i++) {
		if (!t->rw_ok[i] || t->rw[i].pid != pid)
			continue;
		if (!named)
			memcpy(w->name, t->rw[i].name, sizeof(w->name));
		named = true;
		live |= t->rw[i].alive;
	}
	if (!named) {
		const char *n = proc_name(t, pid);
		if (n)
			snprintf(w->name, sizeof(w->name), "%s", n);
	}
	if (live)
		w->state = "live";
	else if (dead)
		w->state = "dead";
	else if (named)
		w->state = "exited";
}

/* ---- the table ---- */

static enum sort g_sort; /* qsort has no context argument */
static enum by g_by;

static uint64_t lost_of(const struct row *r)
{
	return r->overwritten + r->torn;
}

static int cmp_rows(const void *pa, const void *pb)
{
	const struct row *a = *(const struct row *const *)pa;
	const struct row *b = *(const struct row *const *)pb;
	uint64_t x[2] = {0, 0}, y[2] = {0, 0};
	switch (g_sort) {
	case SORT_RECORDS:
		x[0] = a->recs, y[0] = b->recs;
		x[1] = a->recs_all, y[1] = b->recs_all;
		break;
	case SORT_BYTES:
		x[0] = a->bytes, y[0] = b->bytes;
		x[1] = a->bytes_all, y[1] = b->bytes_all;
		break;
	case SORT_TOTAL: x[0] = a->recs_all, y[0] = b->recs_all; break;
	case SORT_TOTAL_BYTES: x[0] = a->bytes_all, y[0] = b->bytes_all; break;
	case SORT_LOST:
		x[0] = lost_of(a), y[0] = lost_of(b);
		x[1] = a->recs_all, y[1] = b->recs_all;
		break;
	case SORT_KEY: break;
	}
	for (int k = 0; k < 2; k++)
		if (x[k] != y[k])
			return x[k] > y[k] ? -1 : 1; /* most first */
	if (a->other != b->other)
		return a->other ? 1 : -1;
	if (g_by == BY_TAG) {
		size_t n = a->tag_len < b->tag_len ? a->tag_len : b->tag_len;
		int c = memcmp(a->tag, b->tag, n);
		if (c || a->tag_len == b->tag_len)
			return c;
		return a->tag_len < b->tag_len ? -1 : 1;
	}
	return a->id < b->id ? -1 : a->id > b->id;
}

/* The rows to show, sorted: every group, and the overflow row if used.
 * Fills the pid and lane views' books. NULL if out of memory. */
static struct row **table_rows(struct top *t, size_t *n)
{
	/* a lane view shows every lane with books, records or not */
	if (t->by == BY_LANE)
		for (unsigned i = 0; i < t->lanes; i++) {
			if (!t->ls[i].written && !t->lw_ok[i])
				continue;
			struct shmlog_record fake = {.lane = i};
			row_of(t, &fake);
		}
	struct row **v = malloc((t->used + 1) * sizeof(*v));
	if (!v)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->rows[i].used)
			v[k++] = &t->rows[i];
	if (t->other.used)
		v[k++] = &t->other;
	for (size_t i = 0; i < k; i++) {
		if (v[i]->other)
			v[i]->state = "-";
		else if (t->by == BY_PID)
			fill_pid(t, v[i]);
		else if (t->by == BY_LANE)
			fill_lane(t, v[i]);
	}
	g_sort = t->sort;
	g_by = t->by;
	qsort(v, k, sizeof(*v), cmp_rows);
	*n = k;
	return v;
}

static void fmt_time(int64_t ns, char *buf, size_t n)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;
	localtime_r(&s, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
}

static void key_text(const struct top *t, const struct row *r, char *buf,
		     size_t n)
{
	if (r->other)
		snprintf(buf, n, "(other)");
	else if (t->by == BY_TAG) {
		/* a tag is the writer's bytes: no control character reaches
		 * the terminal */
		size_t k = 0;
		for (; k < r->tag_len && k + 1 < n; k++) {
			unsigned char c = (unsigned char)r->tag[k];
			buf[k] = c < 0x20 || c == 0x7f ? '?' : (char)c;
		}
		buf[k] = '\0';
	}
	else if (t->by == BY_PRIO)
		snprintf(buf, n, "%c", shmlog_prio_char((int)r->id));
	else
		snprintf(buf, n, "%llu", (unsigned long long)r->id);
}

static unsigned screen_rows(void)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 8)
		return ws.ws_row;
	return 24;
}

static void print_text(struct top *t, struct row **v, size_t n,
		       double interval, const struct shmlog_info *in)
{
	char since[32], now[32];
	int64_t wall = now_ns(CLOCK_REALTIME);
	fmt_time(wall, now, sizeof(now));
	if (t->oldest_ns)
		fmt_time(t->oldest_ns, since, sizeof(since));
	else
		snprintf(since, sizeof(since), "(no records)");
	if (t->live_tty)
		fputs("\033[H\033[2J", stdout);
	printf("shmlog top - %s - buffer %s - interval %.1f s\n", now,
	       cli_buffer_name(), interval);
	printf("RECS, BYTES: the last interval. ALL_RECS, ALL_BYTES: since "
	       "%s,\nthe oldest record the buffer held when top started. "
	       "Since its creation:\n%llu written, %u live writer%s, %llu "
	       "dropped (no free lane), %llu torn.\n\n",
	       since, (unsigned long long)in->written, in->writers,
	       in->writers == 1 ? "" : "s", (unsigned long long)in->dropped,
	       (unsigned long long)in->torn);
	bool named = t->by == BY_PID || t->by == BY_LANE;
	bool books = t->by == BY_LANE;
	const char *keyname = t->by == BY_TAG    ? "TAG"
			      : t->by == BY_PRIO ? "PRIO"
			      : t->by == BY_LANE ? "LANE"
						 : "PID";
	if (t->by == BY_TAG)
		printf("%-24s", keyname);
	else
		printf("%8s", keyname);
	if (t->by == BY_LANE)
		printf(" %8s", "PID");
	if (named)
		printf(" %-16s %-6s", "NAME", "STATE");
	printf(" %9s %10s %10s %12s", "RECS", "BYTES", "ALL_RECS",
	       "ALL_BYTES");
	if (books)
		printf(" %10s %11s %6s", "WRITTEN", "OVERWRITTEN", "TORN");
	putchar('\n');
	size_t limit = n;
	if (t->live_tty) {
		unsigned rows = screen_rows();
		limit = rows > 8 ? rows - 8 : 1;
		if (limit > n)
			limit = n;
	}
	for (size_t i = 0; i < limit; i++) {
		const struct row *r = v[i];
		char key[SHMLOG_TAG_MAX + 8];
		key_text(t, r, key, sizeof(key));
		if (t->by == BY_TAG)
			printf("%-24s", key);
		else
			printf("%8s", key);
		if (t->by == BY_LANE)
			printf(" %8u", r->other || (unsigned)r->id >= t->lanes ||
						   !t->lw_ok[r->id]
					       ? 0
					       : t->lw[r->id].pid);
		if (named) {
			char nm[sizeof(r->name)];
			memcpy(nm, r->name, sizeof(nm));
			printf(" %-16s %-6s", nm[0] ? cli_printable(nm) : "?",
			       r->state);
		}
		printf(" %9llu %10llu %10llu %12llu",
		       (unsigned long long)r->recs,
		       (unsigned long long)r->bytes,
		       (unsigned long long)r->recs_all,
		       (unsigned long long)r->bytes_all);
		if (books)
			printf(" %10llu %11llu %6llu",
			       (unsigned long long)r->written,
			       (unsigned long long)r->overwritten,
			       (unsigned long long)r->torn);
		putchar('\n');
	}
	if (limit < n)
		printf("(%zu more; sort with -s, or use --once)\n", n - limit);
}

static void json_strn(const char *s, size_t n)
{
	char buf[SHMLOG__JSON_STR_MAX(SHMLOG_TAG_MAX)];
	size_t len = shmlog__json_str(buf, sizeof(buf), s, n, NULL);
	fwrite(buf, 1, len < sizeof(buf) ? len : 0, stdout);
	if (len >= sizeof(buf))
		fputs("\"\"", stdout);
}

static void json_str(const char *s)
{
	json_strn(s, strlen(s));
}

static void print_json(struct top *t, struct row **v, size_t n,
		       double interval, const struct shmlog_info *in)
{
	printf("{\"buffer\":");
	json_str(cli_buffer_name());
	printf(",\"time_ns\":%lld,\"interval_s\":%.3f,\"by\":\"%s\","
	       "\"sort\":\"%s\",\"oldest_ns\":%lld,\"created_ns\":%lld,"
	       "\"written\":%llu,\"writers\":%u,\"dropped\":%llu,\"torn\":%llu,"
	       "\"rows\":[",
	       (long long)now_ns(CLOCK_REALTIME), interval, by_names[t->by],
	       sort_names[t->sort], (long long)t->oldest_ns,
	       (long long)in->created_ns, (unsigned long long)in->written,
	       in->writers, (unsigned long long)in->dropped,
	       (unsigned long long)in->torn);
	for (size_t i = 0; i < n; i++) {
		const struct row *r = v[i];
		printf("%s{", i ? "," : "");
		if (r->other)
			printf("\"other\":true");
		else if (t->by == BY_TAG) {
			printf("\"tag\":");
			json_strn(r->tag, r->tag_len);
		} else if (t->by == BY_PRIO)
			printf("\"prio\":\"%c\"", shmlog_prio_char((int)r->id));
		else
			printf("\"%s\":%llu", by_names[t->by],
			       (unsigned long long)r->id);
		if (t->by == BY_LANE && !r->other && r->id < t->lanes &&
		    t->lw_ok[r->id])
			printf(",\"pid\":%u", t->lw[r->id].pid);
		if ((t->by == BY_PID || t->by == BY_LANE) && !r->other) {
			printf(",\"name\":");
			if (r->name[0])
				json_str(r->name);
			else
				fputs("null", stdout);
			printf(",\"state\":\"%s\"", r->state);
		}
		if (t->by == BY_LANE && !r->other)
			printf(",\"written\":%llu,\"overwritten\":%llu,"
			       "\"torn\":%llu",
			       (unsigned long long)r->written,
			       (unsigned long long)r->overwritten,
			       (unsigned long long)r->torn);
		printf(",\"records\":%llu,\"bytes\":%llu,\"all_records\":%llu,"
		       "\"all_bytes\":%llu}",
		       (unsigned long long)r->recs,
		       (unsigned long long)r->bytes,
		       (unsigned long long)r->recs_all,
		       (unsigned long long)r->bytes_all);
	}
	printf("]}\n");
}

static int show(struct top *t, double interval)
{
	struct shmlog_info in;
	int err = shmlog_stat(cli_buffer, &in);
	if (err == -EINTR && cli_stop)
		return 0; /* stopped by a signal in a syscall: quit quietly */
	if (err)
		return cli_fail("top", err);
	lanes_refresh(t);
	size_t n;
	struct row **v = table_rows(t, &n);
	if (!v) {
		fprintf(stderr, "shmlog top: out of memory\n");
		return 1;
	}
	if (t->json)
		print_json(t, v, n, interval, &in);
	else
		print_text(t, v, n, interval, &in);
	free(v);
	if (!t->json && !t->live_tty && !t->once)
		putchar('\n'); /* tables one after another, as top -b */
	fflush(stdout);
	return 0;
}

static void zero_interval(struct top *t)
{
	for (size_t i = 0; i < t->cap; i++)
		t->rows[i].recs = t->rows[i].bytes = 0;
	t->other.recs = t->other.bytes = 0;
}

/* ---- the terminal: q quits ---- */

static void tty_raw(struct top *t)
{
	if (!t->live_tty || !isatty(STDIN_FILENO) ||
	    tcgetattr(STDIN_FILENO, &t->saved))
		return;
	struct termios raw = t->saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
		t->tty_raw = true;
}

static void tty_restore(struct top *t)
{
	if (t->tty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	t->tty_raw = false;
}

static bool quit_pressed(struct top *t)
{
	if (!t->tty_raw)
		return false;
	struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
	char c;
	while (poll(&p, 1, 0) == 1 && read(STDIN_FILENO, &c, 1) == 1)
		if (c == 'q' || c == 'Q')
			return true;
	return false;
}

/* Follow the buffer for @secs: count what comes in the interval. false
 * if stopped (a signal, q). */
static int follow_for(struct top *t, double secs, bool *stop)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + (int64_t)(secs * 1e9);
	for (;;) {
		int err = drain(t, true);
		if (err)
			return err;
		if (cli_stop || quit_pressed(t)) {
			*stop = true;
			return 0;
		}
		int64_t left = end - now_ns(CLOCK_MONOTONIC);
		if (left <= 0)
			break;
		int ms = left / 1000000 < SLICE_MS ? (int)(left / 1000000) + 1
						   : SLICE_MS;
		err = shmlog_reader_wait(t->rd, ms);
		if (err && err != -ETIMEDOUT && err != -EINTR)
			return err;
	}
	/* what was published up to the deadline: one look at every lane */
	shmlog_reader_wait(t->rd, 0);
	return drain(t, true);
}

/* ---- options ---- */

static int pick(const char *cmd, const char *what, const char *arg,
		const char *const *names, size_t n, int *out)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(arg, names[i])) {
			*out = (int)i;
			return 0;
		}
	char list[128] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s%s", i ? ", " : "", names[i]);
	/* a word begun ("rec") is more likely meant than one near it */
	const char *meant = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(names[i], arg, strlen(arg)))
			meant = meant ? "" : names[i];
	if (!meant || !*meant)
		meant = cli_nearest(arg, strlen(arg), names, n);
	char msg[256];
	snprintf(msg, sizeof(msg), "bad %s '%%s': give one of %s%s%s%s", what,
		 list, meant ? " (did you mean '" : "", meant ? meant : "",
		 meant ? "'?)" : "");
	return cli_usage_error(cmd, msg, arg);
}

static void help(void)
{
	printf("usage: shmlog top [-b NAME] [--once] [-d SECS] [-n N] "
	       "[--by pid|tag|prio|lane]\n"
	       "                  [-s records|bytes|total|total-bytes|lost|key]"
	       " [-v text|json]\n"
	       "Who logs most: records and bytes per writer (pid, with its "
	       "process name), tag,\npriority or lane, over the last interval "
	       "(RECS, BYTES) and since the oldest\nrecord the buffer held "
	       "when top started (ALL_RECS, ALL_BYTES). --by lane adds each\n"
	       "writer slot's books since the buffer's creation (WRITTEN, "
	       "OVERWRITTEN before a\nreader got them, TORN). A writer that "
	       "exited is still named by the lane it\nused last. Refreshes "
	       "like top(1) until interrupted (q on a terminal, Ctrl-C).\n\n"
	       CLI_HELP_BUFFER
	       "      --once          print one table and exit (after -d "
	       "SECS if given, else at once)\n"
	       "  -d, --delay SECS    the interval (default 2; 0.1 to 3600)\n"
	       "  -n, --iterations N  exit after N intervals\n"
	       "      --by WHAT       group by pid (default), tag, prio or "
	       "lane\n"
	       "  -s, --sort KEY      records (the interval's, then all; "
	       "default), bytes, total,\n"
	       "                      total-bytes, lost (overwritten + torn) "
	       "or key\n"
	       "  -v, --format FMT    text (default) or json (one object per "
	       "table, a line each)\n" CLI_HELP_HELP);
}

static int parse_opts(struct top *t, int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"once", no_argument, 0, 'o'},
		{"delay", required_argument, 0, 'd'},
		{"iterations", required_argument, 0, 'n'},
		{"by", required_argument, 0, 'B'},
		{"sort", required_argument, 0, 's'},
		{"format", required_argument, 0, 'v'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	static const char *const formats[] = {"text", "json"};
	bool delay_set = false;
	const char *n_arg = NULL;
	int c, v = 0;
	while ((c = cli_getopt(argc, argv, "b:d:n:s:v:h", opts)) != -1) {
		switch (c) {
		case 'b':
			if (cli_set_buffer("top", optarg))
				return 2;
			break;
		case 'o': t->once = true; break;
		case 'd': {
			char *end;
			errno = 0;
			double d = strtod(optarg, &end);
			if (end == optarg || *end || errno || !isfinite(d) ||
			    d < 0.1 || d > 3600)
				return cli_usage_error(
					"top",
					"bad -d '%s': give the interval in "
					"seconds, from 0.1 to 3600 (e.g. -d "
					"0.5)",
					optarg);
			t->interval = d;
			delay_set = true;
			break;
		}
		case 'n': {
			uint64_t n;
			if (cli_parse_u64(optarg, UINT32_MAX, &n) || !n)
				return cli_usage_error(
					"top",
					"bad -n '%s': give how many intervals "
					"to show, a whole number from 1",
					optarg);
			t->iterations = n;
			n_arg = optarg;
			break;
		}
		case 'B':
			if (pick("top", "--by", optarg, by_names, 4, &v))
				return 2;
			t->by = (enum by)v;
			break;
		case 's':
			if (pick("top", "-s", optarg, sort_names, 6, &v))
				return 2;
			t->sort = (enum sort)v;
			break;
		case 'v':
			if (pick("top", "-v", optarg, formats, 2, &v))
				return 2;
			t->json = v == 1;
			break;
		case 'h': help(); return 0;
		default: return cli_bad_option("top");
		}
	}
	if (optind < argc)
		return cli_usage_error("top", "unexpected argument '%s'",
				       argv[optind]);
	if (t->once && t->iterations > 1)
		return cli_usage_error("top",
				       "--once prints one table: leave out "
				       "-n %s, or --once",
				       n_arg);
	if (t->sort == SORT_LOST && t->by != BY_LANE)
		return cli_usage_error("top",
				       "-s lost sorts the writers' lanes: the "
				       "buffer counts losses per lane, not per "
				       "%s; add --by lane",
				       by_names[t->by]);
	if (t->once) {
		t->iterations = 1;
		if (!delay_set)
			t->interval = 0;
	}
	return -1;
}

static void top_free(struct top *t)
{
	tty_restore(t);
	if (t->rd)
		shmlog_reader_close(t->rd);
	free(t->rows);
	free(t->names);
	free(t->lw);
	free(t->lw_ok);
	free(t->ls);
}

int cmd_top(int argc, char **argv)
{
	struct top t;
	memset(&t, 0, sizeof(t));
	t.interval = 2;
	int r = parse_opts(&t, argc, argv);
	if (r >= 0)
		return r;
	t.live_tty = !t.once && !t.json && isatty(STDOUT_FILENO);
	int err = shmlog_reader_open(cli_buffer, 0, &t.rd);
	if (err)
		return cli_fail("top", err);
	t.lanes = shmlog_reader_lanes(t.rd);
	t.lw = calloc(t.lanes, sizeof(*t.lw));
	t.lw_ok = calloc(t.lanes, sizeof(*t.lw_ok));
	t.ls = calloc(t.lanes, sizeof(*t.ls));
	if (!t.lw || !t.lw_ok || !t.ls || rows_grow(&t)) {
		top_free(&t);
		fprintf(stderr, "shmlog top: out of memory\n");
		return 1;
	}
	t.start_ns = now_ns(CLOCK_REALTIME);
	/* what the buffer holds: ALL only */
	err = drain(&t, false);
	tty_raw(&t);
	int rc = 0;
	bool stop = false;
	if (!err && t.live_tty)
		rc = show(&t, 0); /* a first screen at once, as top(1) */
	for (uint64_t i = 0; !err && !rc && !stop && !cli_stop &&
			     (!t.iterations || i < t.iterations);
	     i++) {
		zero_interval(&t);
		int64_t t0 = now_ns(CLOCK_MONOTONIC);
		if (t.interval > 0)
			err = follow_for(&t, t.interval, &stop);
		if (err || stop)
			break;
		rc = show(&t, (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	}
	top_free(&t);
	/* a signal that stops top may interrupt a syscall on its way */
	if (err && !(err == -EINTR && cli_stop))
		return cli_fail("top", err);
	return rc;
}
