/* SPDX-License-Identifier: MIT */
/*
 * `shmlog cat` and `shmlog tail`: dump, follow and filter buffers, like
 * `logcat -d`, `logcat`, `journalctl` and `tail -F`. Several buffers (-b
 * given more than once) are merged into one stream in time order.
 */
#include <errno.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cat.h"
#include "cli.h"
#include "write.h"

/* ---- which records ---- */

static bool grep_matches(const struct view *v, const struct shmlog_record *r)
{
	for (int i = 0; i < v->greps; i++) {
#ifdef REG_STARTEND
		regmatch_t m = {.rm_so = 0, .rm_eo = (regoff_t)r->msg_len};
		if (regexec(&v->grep[i], r->msg, 1, &m, REG_STARTEND) == 0)
			return true;
#else
		if (regexec(&v->grep[i], r->msg, 0, NULL, 0) == 0)
			return true;
#endif
	}
	return false;
}

static bool wanted(const struct view *v, const struct shmlog_record *r)
{
	if (v->cursor && cat_cursor_seen(v->cursor, r))
		return false;
	if (v->pid && r->pid != (uint32_t)v->pid)
		return false;
	if (r->prio < v->prio_min || r->prio > v->prio_max)
		return false;
	if (r->time_ns < v->since_ns || r->time_ns > v->until_ns)
		return false;
	if (v->filter && !shmlog_filter_wants(v->filter, r->prio, r->tag))
		return false;
	return !v->greps || grep_matches(v, r);
}

/* ---- records kept for -n and -r ---- */

/* A private copy of a record. */
struct kept {
	struct shmlog_record r;
	char *text; /* tag, NUL, message, NUL */
	char *fmt, *args; /* a deferred record's format and values, or NULL */
	bool args_cut; /* SHMLOG_DEFERRED_CUT: not every value was whole */
	const char *buffer; /* the buffer it came from, as named */
};

/* The format and values of the record @rd returned last, if it was
 * formatted by the reader (json shows them): into @args (@cap bytes);
 * false if it was not. *@cut: the record did not hold every value whole
 * (shmlog_reader_deferred()'s SHMLOG_DEFERRED_CUT). */
static bool deferred_of(shmlog_reader_t *rd, const struct shmlog_record *r,
			const char **fmt, char *args, size_t cap, bool *cut)
{
	*fmt = NULL;
	int rc = (r->flags & SHMLOG_REC_DEFERRED)
			 ? shmlog_reader_deferred(rd, fmt, args, cap)
			 : -ENOENT;
	*cut = rc == SHMLOG_DEFERRED_CUT;
	return rc >= 0;
}

/* A deferred record's values as JSON: room for any record a writer made */
#define ARGS_MAX SHMLOG_DEFERRED_ARGS_MAX

/* The last @limit records seen (all if @limit is UINT64_MAX), in a ring
 * that grows as records come: memory follows what the buffers hold, never
 * what -n asks. */
struct keeper {
	struct kept *k;
	size_t cap, len, head; /* head: the oldest once the ring is full */
	uint64_t limit;
};

static int keep(struct keeper *kp, const char *buffer,
		const struct shmlog_record *r, const char *fmt,
		const char *args, bool args_cut)
{
	if (!kp->limit)
		return 0;
	struct kept *slot;
	if (kp->len < kp->limit) {
		if (kp->len == kp->cap) {
			size_t cap = kp->cap ? kp->cap * 2 : 1024;
			if (cap > kp->limit)
				cap = (size_t)kp->limit;
			struct kept *k = realloc(kp->k, cap * sizeof(*k));
			if (!k)
				return -ENOMEM;
			kp->k = k;
			kp->cap = cap;
		}
		slot = &kp->k[kp->len++];
		slot->text = slot->fmt = slot->args = NULL;
	} else {
		slot = &kp->k[kp->head];
		kp->head = (kp->head + 1) % kp->len;
	}
	char *text = realloc(slot->text, r->tag_len + r->msg_len + 2);
	if (!text)
		return -ENOMEM;
	memcpy(text, r->tag, r->tag_len);
	text[r->tag_len] = '\0';
	memcpy(text + r->tag_len + 1, r->msg, r->msg_len);
	text[r->tag_len + 1 + r->msg_len] = '\0';
	slot->text = text;
	slot->r = *r;
	slot->r.tag = text;
	slot->r.msg = text + r->tag_len + 1;
	free(slot->fmt);
	free(slot->args);
	slot->fmt = fmt ? strdup(fmt) : NULL;
	slot->args = args ? strdup(args) : NULL;
	slot->args_cut = args_cut;
	slot->buffer = buffer;
	if ((fmt && !slot->fmt) || (args && !slot->args))
		return -ENOMEM;
	return 0;
}

/* The @i-th kept record, oldest first. */
static const struct kept *kept_at(const struct keeper *kp, size_t i)
{
	return &kp->k[(kp->head + i) % kp->len];
}

static void keeper_free(struct keeper *kp)
{
	for (size_t i = 0; i < kp->len; i++) {
		free(kp->k[i].text);
		free(kp->k[i].fmt);
		free(kp->k[i].args);
	}
	free(kp->k);
}

/* ---- sources ---- */

static int source_open(struct source *s)
{
	cli_buffer = s->name;
	if (s->archive) {
		/* the archive (--archive DIR): a source as any other, read
		 * up to where it ended now, however fast an archiver adds
		 * to it (with -f the buffers go on from there) */
		snprintf(s->path, sizeof(s->path), "%s", s->name);
		s->ev = SHMLOG_EV_NONE;
		return shmlog_reader_open_archive(s->name, SHMLOG_READ_DUMP,
						  &s->rd);
	}
	if (shmlog_path(s->name, s->path, sizeof(s->path)) < 0)
		snprintf(s->path, sizeof(s->path), "%s", cli_buffer_name());
	int err = shmlog_reader_open(s->name, 0, &s->rd);
	if (err)
		return err;
	struct stat st;
	if (stat(s->path, &st) == 0) {
		s->dev = st.st_dev;
		s->ino = st.st_ino;
	}
	s->ev = SHMLOG_EV_NONE;
	return 0;
}

static void sources_close(struct cat_opts *o)
{
	for (int i = 0; i < o->nsrc; i++) {
		if (o->src[i].rd)
			shmlog_reader_close(o->src[i].rd);
		o->src[i].rd = NULL;
		archive_seam_free(o->src[i].seam);
		o->src[i].seam = NULL;
		free(o->src[i].end);
		o->src[i].end = NULL;
	}
}

/* Where a dump ends (and what -n looks back over): cli_dump_end() of
 * each buffer; an archive ends where its files end. */
static void sources_snap(struct cat_opts *o)
{
	for (int i = 0; i < o->nsrc; i++) {
		struct source *s = &o->src[i];
		free(s->end);
		s->end = NULL;
		s->lanes = 0;
		if (s->rd && !s->archive)
			s->end = cli_dump_end(s->rd, &s->lanes);
	}
}

/* Is @s's record (its pending event) past where the dump ends? */
static bool past_end(const struct source *s)
{
	return cli_past_end(s->end, s->lanes, s->rec.lane, s->rec.seq);
}

/* The next event of @s, without what the archive showed before it. */
static int source_next(struct source *s)
{
	int ev;
	do /* bounded: the reader never returns a record twice */
		ev = shmlog_reader_next(s->rd, &s->rec, &s->lost);
	while (ev > 0 && archive_seam_seen(s->seam, s->rd, ev, &s->rec,
					   &s->lost));
	return ev;
}

/* A reader failed (its file was truncated under it): say so, read no
 * more from it. */
static void source_failed(struct cat_opts *o, struct source *s, int err)
{
	if (s->archive && err == -ENOTSUP) {
		/* the reader goes on past the files it cannot read */
		cli_say_no_zstd(o->cmd, o->archive,
				"the files that hold them are skipped");
		s->ev = SHMLOG_EV_NONE;
		return;
	}
	cli_buffer = s->name;
	cli_fail(o->cmd, err);
	s->broken = true;
	s->ev = SHMLOG_EV_NONE;
}

/* The next event of the merged stream: a loss report as soon as a reader
 * has one, else the oldest pending record of all readers. Each reader's
 * record stays valid until that reader is called again, which happens only
 * after its record was taken. Returns SHMLOG_EV_NONE when no reader has
 * anything now. */
static int merged_next(struct cat_opts *o, struct source **from)
{
	struct source *best = NULL;
	if (o->nsrc == 1 && !o->src[0].broken && o->src[0].ev == SHMLOG_EV_NONE) {
		/* one buffer: nothing to merge */
		struct source *s = &o->src[0];
		int ev = source_next(s);
		if (ev > 0)
			*from = s;
		else if (ev < 0)
			source_failed(o, s, ev);
		return ev > 0 ? ev : SHMLOG_EV_NONE;
	}
	for (int i = 0; i < o->nsrc; i++) {
		struct source *s = &o->src[i];
		if (s->broken)
			continue;
		if (s->ev == SHMLOG_EV_NONE) {
			s->ev = source_next(s);
			if (s->ev < 0) {
				source_failed(o, s, s->ev);
				continue;
			}
		}
		if (s->ev == SHMLOG_EV_LOST) {
			best = s;
			break;
		}
		if (s->ev == SHMLOG_EV_RECORD &&
		    (!best || s->rec.time_ns < best->rec.time_ns))
			best = s;
	}
	if (!best)
		return SHMLOG_EV_NONE;
	*from = best;
	int ev = best->ev;
	best->ev = SHMLOG_EV_NONE;
	return ev;
}

static bool all_broken(const struct cat_opts *o)
{
	for (int i = 0; i < o->nsrc; i++)
		if (!o->src[i].broken)
			return false;
	return true;
}

static void say(const struct cat_opts *o, const struct source *s,
		const char *what)
{
	fprintf(stderr, "shmlog %s: buffer '%s' (%s) %s\n", o->cmd,
		s->name ? s->name : cli_buffer_name(), s->path, what);
}

/* `tail -F`: a buffer removed under a follower is said once; its writers
 * may still log into the orphaned copy, which stays followed until a
 * buffer is created under the name again, then that one is followed. */
static void source_check_replaced(struct cat_opts *o, struct source *s)
{
	struct stat st;
	int found = stat(s->path, &st);
	if (found == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
		return;
	if (found < 0 || !S_ISREG(st.st_mode)) {
		if (!s->removed)
			say(o, s,
			    "was removed: waiting for a buffer to be created "
			    "under that name (Ctrl-C to stop)");
		s->removed = true;
		return;
	}
	/* A new file under the name: what is left of the old one was read
	 * (this runs when every reader is idle). */
	shmlog_reader_t *old = s->rd;
	if (source_open(s) != 0) {
		s->rd = old; /* not ready yet (or refused): try again later */
		return;
	}
	shmlog_reader_close(old);
	s->removed = false;
	s->broken = false;
	say(o, s, "was created again: following the new buffer");
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Nothing new anywhere: sleep until a writer commits to any buffer
 * (bounded, so that SIGINT and removed buffers are seen). A reader that
 * failed is ready: merged_next() reports it and marks its source
 * broken, and a broken source is left out. With every source broken
 * the wait is a plain sleep, until a buffer is created again. */
static void sources_wait(struct cat_opts *o)
{
	static uint64_t last_check;
	uint64_t now = mono_ms();
	if (now - last_check >= 500) {
		last_check = now;
		for (int i = 0; i < o->nsrc; i++)
			source_check_replaced(o, &o->src[i]);
	}
	shmlog_reader_t *set[SOURCES_MAX];
	for (int i = 0; i < o->nsrc; i++)
		set[i] = o->src[i].broken ? NULL : o->src[i].rd;
	shmlog_reader_wait_any(set, (size_t)o->nsrc, 500);
}

/* ---- the pager ---- */

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	char buf[4096];
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
		if (access(buf, X_OK) == 0)
			return true;
		path += n;
		if (*path)
			path++;
	}
	return false;
}

/* Send standard output through $PAGER (default `less -FRX`), as git and
 * journalctl do for a dump on a terminal (not a dumb one). Returns the
 * pager's pid, or 0. */
static pid_t pager_start(void)
{
	const char *pager = getenv("PAGER");
	const char *term = getenv("TERM");
	if (pager && (!pager[0] || !strcmp(pager, "cat")))
		return 0;
	if (!term || !strcmp(term, "dumb"))
		return 0; /* as systemd: a dumb terminal cannot page */
	if (!pager) {
		if (!in_path("less"))
			return 0;
		pager = "less";
		setenv("LESS", "FRX", 0);
	}
	int pfd[2];
	if (pipe(pfd) < 0)
		return 0;
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return 0;
	}
	if (pid == 0) {
		dup2(pfd[0], 0);
		close(pfd[0]);
		close(pfd[1]);
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/sh", "sh", "-c", pager, (char *)NULL);
		_exit(127);
	}
	dup2(pfd[1], 1);
	close(pfd[0]);
	close(pfd[1]);
	return pid;
}

static void pager_wait(pid_t pid)
{
	if (!pid)
		return;
	close(1);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		; /* Ctrl-C reaches the pager too: it decides when to end */
}

/* ---- running ---- */

struct emitter {
	struct out out;
	const struct cat_opts *o;
	uint64_t shown;
};

/* The name a source's records show as their "buffer". */
static const char *source_name(const struct source *s)
{
	return s->name ? s->name : cli_buffer_name();
}

/* Show one record of @buffer; false once -m is reached or output failed. */
static bool emit(struct emitter *e, const char *buffer,
		 const struct shmlog_record *r, const char *fmt,
		 const char *args, bool args_cut)
{
	struct fmt_origin from = {.buffer = buffer};
	fmt_record_from(&e->out, &e->o->view.fmt, &from, r, fmt, args,
			args_cut);
	e->shown++;
	if (e->out.failed)
		return false;
	return !e->o->max_count || e->shown < e->o->max_count;
}

/* Read what the buffers hold now, keeping the last -n wanted records (or
 * all of them for -r), and show them. */
static int show_kept(struct cat_opts *o, struct emitter *e, bool *more)
{
	struct keeper kp = {.limit = o->lines};
	struct source *from;
	int ev;
	bool json = o->view.fmt.kind == FMT_JSON;
	char *args = json ? malloc(ARGS_MAX) : NULL;
	while (!cli_stop && (ev = merged_next(o, &from)) != SHMLOG_EV_NONE) {
		if (ev == SHMLOG_EV_RECORD && past_end(from)) {
			/* written since: -f shows it next (merged_next()
			 * takes a source's pending event first) */
			from->ev = SHMLOG_EV_RECORD;
			break;
		}
		if (ev != SHMLOG_EV_RECORD || !wanted(&o->view, &from->rec))
			continue;
		const char *fmt = NULL;
		bool cut = false;
		bool d = args && deferred_of(from->rd, &from->rec, &fmt, args,
					     ARGS_MAX, &cut);
		if (keep(&kp, source_name(from), &from->rec, fmt,
			 d ? args : NULL, cut)) {
			free(args);
			keeper_free(&kp);
			fprintf(stderr,
				"shmlog %s: out of memory keeping the last "
				"records: give a smaller -n\n",
				o->cmd);
			return 1;
		}
	}
	free(args);
	*more = true;
	for (size_t i = 0; i < kp.len && *more && !cli_stop; i++) {
		const struct kept *k =
			kept_at(&kp, o->reverse ? kp.len - 1 - i : i);
		*more = emit(e, k->buffer, &k->r, k->fmt, k->args,
			     k->args_cut);
	}
	keeper_free(&kp);
	return 0;
}

/* A follower that read everything has its output written out, unless
 * records keep coming: while writers log fast, the library hands a
 * follower what they wrote every few microseconds, and a write(2) of the
 * few lines each time would cost more than formatting them (a follower
 * of a writer at full speed would fall behind for it). So, with output
 * pending for less than HOLD_MS, it first waits up to HOLD_MS for more
 * (one buffer: the library's wait returns as soon as a record is there);
 * only if none came, or the output is HOLD_MS old, is it written. A line
 * reaches the terminal at most about 2 * HOLD_MS after it was read. */
#define HOLD_MS 1

static bool hold_output(struct cat_opts *o, const struct out *out,
			uint64_t flushed_ms)
{
	if (!out->len || o->nsrc != 1 || o->src[0].broken ||
	    mono_ms() - flushed_ms >= HOLD_MS)
		return false;
	return shmlog_reader_wait(o->src[0].rd, HOLD_MS) == 0;
}

/* Show records as they come; with @follow, wait for more. */
static void stream(struct cat_opts *o, struct emitter *e, bool follow)
{
	struct source *from;
	static char args[ARGS_MAX];
	bool json = o->view.fmt.kind == FMT_JSON;
	uint64_t flushed_ms = mono_ms();
	while (!cli_stop) {
		int ev = merged_next(o, &from);
		if (ev == SHMLOG_EV_RECORD && !follow && past_end(from))
			return; /* written since the dump began */
		if (ev == SHMLOG_EV_RECORD) {
			const char *fmt = NULL;
			bool cut = false;
			bool d = json && deferred_of(from->rd, &from->rec, &fmt,
						     args, sizeof(args), &cut);
			if (wanted(&o->view, &from->rec) &&
			    !emit(e, source_name(from), &from->rec, fmt,
				  d ? args : NULL, cut))
				return;
		} else if (ev == SHMLOG_EV_LOST) {
			/* from's reader is not called between its loss and
			 * this: the range is that loss's */
			uint64_t seq[2];
			bool known = !shmlog_reader_lost_seq(from->rd, &seq[0],
							     &seq[1]);
			fmt_lost_seq(&e->out, &o->view.fmt, &from->lost,
				     known ? seq : NULL);
		} else {
			if (follow && hold_output(o, &e->out, flushed_ms))
				continue;
			if (out_flush(&e->out) || !follow)
				return;
			flushed_ms = mono_ms();
			sources_wait(o);
		}
	}
}

static int cat_sources(struct cat_opts *o, struct emitter *e, bool *more);

/* --archive DIR: the archive's records, then with -f the buffers' from
 * where the archive ends (archive_seam.h). */
static int cat_archive(struct cat_opts *o, struct emitter *e)
{
	struct cat_opts live = *o;
	o->nsrc = 1;
	o->src[0] = (struct source){.name = o->archive, .archive = true};
	int err = source_open(&o->src[0]);
	if (err) {
		fprintf(stderr, "shmlog %s: cannot read the archive %s: %s\n",
			o->cmd, o->archive, strerror(-err));
		return 1;
	}
	bool more = true;
	int rc = cat_sources(o, e, &more);
	if (rc || !more || !o->follow || cli_stop || e->out.failed ||
	    (o->max_count && e->shown >= o->max_count)) {
		sources_close(o);
		return rc;
	}
	shmlog_reader_t *arc = o->src[0].rd;
	o->src[0].rd = NULL;
	o->nsrc = live.nsrc;
	memcpy(o->src, live.src, sizeof(o->src));
	for (int i = 0; i < o->nsrc && !err; i++)
		if (!(err = source_open(&o->src[i])))
			err = archive_seam_open(arc, o->src[i].name,
						&o->src[i].seam);
	shmlog_reader_close(arc);
	if (err) {
		sources_close(o);
		return cli_fail(o->cmd, err);
	}
	o->lines_set = false; /* -n applied to the archive */
	o->reverse = false;
	return cat_sources(o, e, &more);
}

/* -c, as logcat -c: hide what the buffers hold from readers, and exit. */
static int cat_clear(struct cat_opts *o)
{
	if (!o->nsrc)
		o->src[o->nsrc++].name = cli_buffer;
	for (int i = 0; i < o->nsrc; i++) {
		cli_buffer = o->src[i].name;
		int err = shmlog_clear(cli_buffer);
		if (err)
			return cli_fail(o->cmd, err);
	}
	return 0;
}

static int cat_run(struct cat_opts *o)
{
	if (!o->nsrc)
		o->src[o->nsrc++].name = cli_buffer;
	if (o->archive && o->cursor_file)
		return cli_usage_error(o->cmd,
				       "--archive%s cannot take a cursor file",
				       "");
	if (o->cursor_file && o->nsrc > 1)
		return cli_usage_error(o->cmd,
				       "a cursor file names one buffer%s: give "
				       "one -b with --cursor-file or "
				       "--after-cursor",
				       "");
	for (int i = 0; i < o->nsrc && !o->archive; i++) {
		int err = source_open(&o->src[i]);
		if (err) {
			sources_close(o);
			return cli_fail(o->cmd, err);
		}
	}
	if (o->cursor_file &&
	    cat_cursor_open(o->cursor_file, o->cursor_save, o->src[0].name,
			    o->src[0].rd, &o->view.cursor)) {
		sources_close(o);
		return 1;
	}
	fmt_prepare(&o->view.fmt);
	struct emitter e = {.o = o};
	if (out_open(&e.out, 1)) {
		sources_close(o);
		return cli_fail(o->cmd, -ENOMEM);
	}
	pid_t pager = 0;
	if (!o->follow && !o->no_pager && isatty(1))
		pager = pager_start();
	bool more = true;
	int rc = o->archive ? cat_archive(o, &e) : cat_sources(o, &e, &more);
	out_close(&e.out);
	pager_wait(pager);
	sources_close(o);
	if (!rc && all_broken(o))
		rc = 1;
	if (cat_cursor_close(o->view.cursor) && !rc)
		rc = 1;
	o->view.cursor = NULL;
	return rc;
}

/* Show what the sources hold, and with -f follow them. */
static int cat_sources(struct cat_opts *o, struct emitter *e, bool *more)
{
	int rc = 0;
	/* an archive is streamed to its end; the buffers after it follow */
	bool follow = o->follow && !o->src[0].archive;
	if (o->lines_set || o->reverse || !follow)
		sources_snap(o);
	if (o->lines_set || o->reverse)
		rc = show_kept(o, e, more);
	if (!rc && *more && (!o->lines_set || follow) && !o->reverse)
		stream(o, e, follow);
	return rc;
}

static int cat_or_tail(int argc, char **argv, bool tail)
{
	static struct cat_opts o; /* large: keep it off the stack */
	o = (struct cat_opts){
		.cmd = tail ? "tail" : "cat",
		.view = {.fmt = {.kind = FMT_THREADTIME},
			 .prio_min = SHMLOG_VERBOSE,
			 .prio_max = SHMLOG_FATAL,
			 .since_ns = INT64_MIN,
			 .until_ns = INT64_MAX},
		.lines = tail ? 10 : UINT64_MAX,
		.lines_set = tail,
		.color = -1,
	};
	int rc = cat_parse(argc, argv, &o);
	if (rc < 0)
		rc = o.clear ? cat_clear(&o) : cat_run(&o);
	cat_free(&o);
	return rc;
}

int cmd_cat(int argc, char **argv)
{
	return cat_or_tail(argc, argv, false);
}

int cmd_tail(int argc, char **argv)
{
	return cat_or_tail(argc, argv, true);
}
