/* SPDX-License-Identifier: MIT */
/*
 * `shmlog top`'s table, printed at each interval: the lanes' books
 * (shmlog_reader_lane_stats()) and writers (shmlog_reader_lane_writer(),
 * shmlog_reader_recent_writer()) read at that moment, each group named and
 * given its state, the groups sorted (-s) and printed as a text table that
 * fits the terminal, or as one JSON object per table (--json).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "top.h"

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
			top_row_of(t, &fake);
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
	int64_t wall = top_now_ns(CLOCK_REALTIME);
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
	       (long long)top_now_ns(CLOCK_REALTIME), interval, top_by_names[t->by],
	       top_sort_names[t->sort], (long long)t->oldest_ns,
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
			printf("\"%s\":%llu", top_by_names[t->by],
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

int top_show(struct top *t, double interval)
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
