/* SPDX-License-Identifier: MIT */
/*
 * `shmlog forward`: follow one or several buffers and ship every record to
 * a sink (rsyslog over TCP, a Unix socket or RELP; systemd's Journal
 * Export Format; JSON lines), resuming where it stopped.
 *
 * The loop: read records into a batch (formatted for the sink), deliver
 * the batch, and only then move the cursor and save it. A batch that
 * could not be delivered is kept and sent again after a reconnect, so
 * nothing read is skipped; the ring goes on taking records meanwhile
 * (writers never wait for the forwarder) and what it overwrites before
 * the forwarder comes back is counted by sequence number and reported
 * downstream as a loss message. See docs/forwarding.md.
 *
 * With --archive DIR the records come from an archive (`shmlog archive`)
 * instead, through the library's archive reader: each archived buffer is
 * a source of its own, with its own cursor section, so the cursor names
 * buffers and sequence numbers whether the records were read live or
 * from the archive. Its loss entries become loss messages. With -f the
 * live buffers follow, from where the archive ends (archive_seam.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cli.h"
#include "forward.h"
#include "forwarder.h"

static volatile sig_atomic_t want_status;

static void on_usr1(int sig)
{
	(void)sig;
	want_status = 1;
}

/* ---- cursors ---- */

static int load_cursor(struct forwarder *f)
{
	if (!f->cursor_file)
		return 0;
	char why[512];
	int err = cursor_load(f->cursor_file, &f->cursor, why, sizeof(why));
	if (err == -ENOENT)
		return 0;
	if (err == -EBADMSG) {
		char kept[4200];
		snprintf(kept, sizeof(kept), "%s.corrupt", f->cursor_file);
		rename(f->cursor_file, kept);
		fprintf(stderr,
			"shmlog forward: warning: cursor file %s is damaged "
			"(%s); it is kept as %s and forwarding starts at the "
			"oldest record each buffer holds\n",
			f->cursor_file, why, kept);
		return 0;
	}
	if (err == -EINVAL || err == -ELOOP) { /* @why says what to do */
		fprintf(stderr, "shmlog forward: cannot use cursor file %s: %s\n",
			f->cursor_file, why);
		return -1;
	}
	if (err) {
		fprintf(stderr,
			"shmlog forward: cannot read cursor file %s: %s: fix "
			"its permissions or choose another --cursor-file\n",
			f->cursor_file, why);
		return -1;
	}
	return 0;
}

static int save_cursor(struct forwarder *f)
{
	if (!f->cursor_file)
		return 0;
	int err = cursor_save(f->cursor_file, &f->cursor);
	if (err)
		fprintf(stderr,
			"shmlog forward: cannot save cursor file %s: %s: "
			"records are delivered but would be sent again after "
			"a restart\n",
			f->cursor_file, strerror(-err));
	return err;
}

/* The cursor section for @s's buffer: the saved one if it describes this
 * very buffer, else a fresh one (start at the oldest record). */
static int attach_cursor(struct forwarder *f, struct source *s)
{
	struct cursor_id id;
	int err = cursor_identify(s->name, &id);
	if (err)
		return err;
	struct cursor_buf *b = cursor_find(&f->cursor, id.path);
	for (struct source *o = f->src; o < s; o++)
		if (b && o->cur == (size_t)(b - f->cursor.bufs))
			return -EALREADY; /* the same buffer twice */
	char why[512];
	if (b && !cursor_same_buffer(&b->id, &id, why, sizeof(why))) {
		fprintf(stderr,
			"shmlog forward: warning: cursor file %s does not "
			"apply to %s: %s; forwarding starts at the oldest "
			"record it holds\n",
			f->cursor_file, id.path, why);
		if (cursor_reset(b, &id))
			return -ENOMEM;
	}
	if (!b)
		b = cursor_add(&f->cursor, &id);
	if (!b)
		return -ENOMEM;
	unsigned ahead = cursor_drop_ahead(b, s->rd, why, sizeof(why));
	if (ahead)
		fprintf(stderr,
			"shmlog forward: warning: cursor file %s is ahead of "
			"%s (%s; %u lane%s in all): the buffer was cleared or "
			"recreated since, or the cursor is another buffer's; "
			"forwarding %s starts at the oldest record it holds\n",
			f->cursor_file, id.path, why, ahead, ahead == 1 ? "" : "s",
			ahead == 1 ? "that lane" : "those lanes");
	s->lanes = id.lanes;
	s->next = calloc(id.lanes, sizeof(*s->next));
	s->known = calloc(id.lanes, sizeof(*s->known));
	s->skipped_seen = calloc(id.lanes, sizeof(*s->skipped_seen));
	s->torn_pending = calloc(id.lanes, sizeof(*s->torn_pending));
	if (!s->next || !s->known || !s->skipped_seen || !s->torn_pending)
		return -ENOMEM;
	memcpy(s->next, b->next, id.lanes * sizeof(*s->next));
	memcpy(s->known, b->known, id.lanes * sizeof(*s->known));
	if (f->dump && !(s->end = cli_dump_end(s->rd, &s->end_lanes)))
		return -ENOMEM;
	/* a later cursor_add may move the sections: keep the index */
	s->cur = (size_t)(b - f->cursor.bufs);
	return 0;
}

static struct cursor_buf *src_cursor(struct forwarder *f,
				     const struct source *s)
{
	return &f->cursor.bufs[s->cur];
}

static void commit_source(struct forwarder *f, const struct source *s)
{
	if (!s->next)
		return; /* with -f, a buffer not opened yet */
	struct cursor_buf *b = src_cursor(f, s);
	memcpy(b->next, s->next, s->lanes * sizeof(*s->next));
	memcpy(b->known, s->known, s->lanes * sizeof(*s->known));
}

/* The batch was delivered: its records become the cursor. */
static void commit_batch(struct forwarder *f)
{
	for (size_t i = 0; i < f->nsrc; i++)
		commit_source(f, &f->src[i]);
	for (size_t i = 0; i < f->arc_n; i++)
		commit_source(f, &f->arc_src[i]);
	f->st.delivered += f->st_batch.delivered;
	f->st.lost_overwritten += f->st_batch.lost_overwritten;
	f->st.lost_torn += f->st_batch.lost_torn;
	f->st.filtered += f->st_batch.filtered;
	f->st.batches += f->batch.n > 0;
	f->st_batch = (struct stats){0};
	batch_reset(&f->batch);
	save_cursor(f);
}

/* ---- reading ---- */

/* A record of @s arrived with a sequence number past the one expected on
 * its lane: the records between are lost (overwritten, or torn), or were
 * hidden by `shmlog clear`. */
static int account_gap(struct forwarder *f, struct source *s, unsigned lane,
		       uint64_t gap)
{
	struct shmlog_lane_stats ls;
	uint64_t hidden = 0;
	if (shmlog_reader_lane_stats(s->rd, lane, &ls) == 0) {
		hidden = ls.skipped - s->skipped_seen[lane];
		s->skipped_seen[lane] = ls.skipped;
	}
	if (hidden > gap)
		hidden = gap; /* some hidden ones were delivered before */
	uint64_t lost = gap - hidden;
	uint64_t torn = s->torn_pending[lane] < lost ? s->torn_pending[lane]
						     : lost;
	s->torn_pending[lane] = 0;
	if (!lost)
		return 0;
	struct sink_loss l = {src_cursor(f, s)->id.path, s->name, lane,
			      lost - torn, torn, s->next[lane],
			      s->next[lane] + gap - 1};
	f->st_batch.lost_overwritten += lost - torn;
	f->st_batch.lost_torn += torn;
	return batch_add_loss(&f->batch, &f->sink, &l);
}

/* The first record of a lane the cursor knows nothing of (no record of it
 * was delivered before, or there is no cursor): every record the lane
 * held before it since the buffer was created and that the ring no longer
 * holds is lost to the forwarder, and reported like any other loss. The
 * reader counted them (its lane statistics start at the buffer's first
 * sequence number). A forwarder started late on an old buffer therefore
 * starts with a loss message saying how much the ring had overwritten
 * already: no loss is silent, not even one from before it came. */
static int account_new_lane(struct forwarder *f, struct source *s,
			    unsigned lane, uint64_t seq)
{
	struct shmlog_lane_stats ls;
	if (shmlog_reader_lane_stats(s->rd, lane, &ls))
		return 0;
	s->skipped_seen[lane] = ls.skipped;
	uint64_t torn = s->torn_pending[lane];
	s->torn_pending[lane] = 0;
	if (!ls.overwritten && !torn)
		return 0;
	uint64_t gap = ls.overwritten + torn + ls.skipped;
	struct sink_loss l = {src_cursor(f, s)->id.path, s->name, lane,
			      ls.overwritten, torn, seq - gap, seq - 1};
	f->st_batch.lost_overwritten += ls.overwritten;
	f->st_batch.lost_torn += torn;
	return batch_add_loss(&f->batch, &f->sink, &l);
}

/* Records an archived buffer's lane skips without a loss entry for them:
 * the archive does not hold them (a damaged file's rest, or files
 * removed by rotation while the replay stood before them). */
static int archive_gap(struct forwarder *f, struct source *s, unsigned lane,
		       uint64_t gap)
{
	struct sink_loss l = {src_cursor(f, s)->id.path, s->name, lane,
			      gap, 0, s->next[lane], s->next[lane] + gap - 1};
	f->st_batch.lost_overwritten += gap;
	return batch_add_loss(&f->batch, &f->sink, &l);
}

static int take_record(struct forwarder *f, struct source *s,
		       const struct shmlog_record *r)
{
	unsigned lane = r->lane;
	if (lane >= s->lanes)
		return 0;
	if (s->known[lane] && (int64_t)(r->seq - s->next[lane]) < 0)
		return 0; /* delivered before (the cursor is past it) */
	int err = 0;
	uint64_t gap = r->seq - s->next[lane];
	if (s->known[lane] && gap)
		err = s->archived ? archive_gap(f, s, lane, gap)
				  : account_gap(f, s, lane, gap);
	else if (!s->known[lane] && !s->archived) /* an archive says its
						     * losses itself */
		err = account_new_lane(f, s, lane, r->seq);
	if (err)
		return err;
	s->known[lane] = true;
	s->next[lane] = r->seq + 1;
	if (f->filter && !shmlog_filter_wants(f->filter, r->prio, r->tag)) {
		f->st_batch.filtered++;
		return 0;
	}
	f->st_batch.delivered++;
	struct sink_rec rec = {s->name, src_cursor(f, s)->id.path, r, NULL,
			       NULL, false};
	if ((r->flags & SHMLOG_REC_DEFERRED) && sink_wants_deferred(&f->sink)) {
		static char args[SHMLOG_DEFERRED_ARGS_MAX];
		int d = shmlog_reader_deferred(s->rd, &rec.fmt, args,
					       sizeof(args));
		rec.args = d >= 0 ? args : NULL;
		rec.args_cut = d == SHMLOG_DEFERRED_CUT;
	}
	return batch_add_record(&f->batch, &f->sink, &rec);
}

static bool batch_full(const struct forwarder *f)
{
	return f->batch.n >= f->batch_max || f->batch.len >= BATCH_BYTES_MAX;
}

/* Read from @s into the batch until it is full or @s has nothing new.
 * Returns 1 if @s ran dry, 0 if the batch filled, or a negative errno. */
static int read_source(struct forwarder *f, struct source *s)
{
	struct shmlog_record r;
	struct shmlog_lost lost;
	while (!batch_full(f)) {
		int ev = shmlog_reader_next(s->rd, &r, &lost);
		if (ev == SHMLOG_EV_NONE)
			return 1;
		if (ev < 0)
			return ev;
		if (archive_seam_seen(s->seam, s->rd, ev, &r, &lost))
			continue; /* forwarded from the archive */
		if (ev == SHMLOG_EV_LOST) {
			if (lost.lane < s->lanes)
				s->torn_pending[lost.lane] += lost.torn;
			continue;
		}
		if (cli_past_end(s->end, s->end_lanes, r.lane, r.seq))
			return 1; /* --dump: written since it began */
		int err = take_record(f, s, &r);
		if (err)
			return err;
	}
	return 0;
}

static int read_archive(struct forwarder *f);
static int follow_buffers(struct forwarder *f);

/* Fill the batch from every source in turn. 0 or a negative errno. */
static int fill_batch(struct forwarder *f)
{
	if (f->arc) {
		int ret = read_archive(f);
		if (ret == -ENOTSUP) {
			/* a forwarder never skips records silently */
			cli_say_no_zstd("forward", f->archive,
					"forwarding stops at the first of them");
			return ret;
		}
		if (ret < 0) {
			fprintf(stderr, "shmlog forward: reading the archive "
				"%s: %s\n", f->archive, shmlog_strerror(ret));
			return ret;
		}
		/* -f: at the archive's end, once what it gave is committed,
		 * the buffers take over */
		if (!ret || !f->follow || f->batch.n)
			return 0;
		if ((ret = follow_buffers(f)) != 0)
			return ret;
	}
	for (size_t k = 0; k < f->nsrc && !batch_full(f); k++) {
		struct source *s = &f->src[(f->turn + k) % f->nsrc];
		int ret = read_source(f, s);
		if (ret < 0) {
			fprintf(stderr, "shmlog forward: reading %s: %s\n",
				s->name, shmlog_strerror(ret));
			return ret;
		}
	}
	f->turn++;
	return 0;
}

static void sleep_ms(int ms, volatile sig_atomic_t *stop)
{
	while (ms > 0 && !*stop && !want_status) {
		int step = ms > 100 ? 100 : ms;
		poll(NULL, 0, step);
		ms -= step;
	}
}

/* Nothing new: wait for records. Right after a delivery the forwarder
 * naps (a plain sleep, --linger) and looks again; only a ring still quiet
 * after that is waited on with shmlog_reader_wait(). A reader asleep there
 * costs the next writer a wake-up syscall: a forwarder that slept after
 * every record would put one on many writes, while a nap between batches
 * puts none on any of them, for at most --linger of latency. */

static void wait_records(struct forwarder *f, volatile sig_atomic_t *stop)
{
	if (!f->napped && f->linger_ms > 0) {
		f->napped = true;
		sleep_ms(f->linger_ms, stop);
		return;
	}
	if (f->arc) { /* the archive's reader looks every 10 ms */
		shmlog_reader_wait(f->arc, 200);
		return;
	}
	/* every buffer at once: bounded, and a signal ends it */
	shmlog_reader_t *set[BUFFERS_MAX];
	for (size_t i = 0; i < f->nsrc; i++)
		set[i] = f->src[i].rd;
	shmlog_reader_wait_any(set, f->nsrc, 200);
}

/* ---- replaying an archive ---- */

/* The name an archived buffer's records are forwarded under: as `-b`
 * would name it (the part after the buffer directory's prefix), else its
 * path. */
static char *archived_name(const char *path)
{
	char x[PATH_MAX];
	int n = shmlog_path("x", x, sizeof(x));
	size_t pre = n > 0 ? (size_t)n - 1 : 0;
	if (pre && !strncmp(path, x, pre) && path[pre])
		path += pre;
	return strdup(path);
}

/* Make @s the source of buffer @id, starting from @b's delivered
 * position. 0 or -ENOMEM. */
static int archived_attach(struct forwarder *f, struct source *s,
			   struct cursor_buf *b)
{
	free(s->next);
	free(s->known);
	s->lanes = b->id.lanes;
	s->next = calloc(s->lanes, sizeof(*s->next));
	s->known = calloc(s->lanes, sizeof(*s->known));
	if (!s->next || !s->known)
		return -ENOMEM;
	memcpy(s->next, b->next, s->lanes * sizeof(*s->next));
	memcpy(s->known, b->known, s->lanes * sizeof(*s->known));
	s->cur = (size_t)(b - f->cursor.bufs);
	return 0;
}

/* The source of archived buffer @as, whose record or loss was read last:
 * one per buffer path, as the cursor has one section per path. A buffer
 * removed and created again under its path takes the path's source over
 * with a fresh position (every record of the archive is read once all
 * the same; a cursor resumes the newer one, docs/forwarding.md). */
static int archived_source(struct forwarder *f,
			   const struct shmlog_archive_source *as,
			   struct source **out)
{
	struct cursor_id id = {.created_ns = as->created_ns, .ino = as->ino,
			       .lanes = as->lanes};
	if (strlen(as->buffer) >= sizeof(id.path) || !as->lanes ||
	    as->lanes > SHMLOG_LANES_MAX)
		return -EBADMSG; /* the reader checked; never trusted */
	strcpy(id.path, as->buffer);
	struct source *s = NULL;
	for (size_t i = 0; i < f->arc_n && !s; i++)
		if (!strcmp(src_cursor(f, &f->arc_src[i])->id.path, id.path))
			s = &f->arc_src[i];
	char why[512];
	if (s && cursor_same_buffer(&src_cursor(f, s)->id, &id, why,
				    sizeof(why))) {
		*out = s;
		return 0;
	}
	struct cursor_buf *b = cursor_find(&f->cursor, id.path);
	if (b && !cursor_same_buffer(&b->id, &id, why, sizeof(why)) &&
	    cursor_reset(b, &id))
		return -ENOMEM;
	if (!b && !(b = cursor_add(&f->cursor, &id)))
		return -ENOMEM;
	if (!s) {
		struct source *more = realloc(f->arc_src,
					      (f->arc_n + 1) * sizeof(*more));
		if (!more)
			return -ENOMEM;
		f->arc_src = more;
		s = &f->arc_src[f->arc_n];
		*s = (struct source){.rd = f->arc, .archived = true};
		if (!(s->name = archived_name(id.path)))
			return -ENOMEM;
		f->arc_n++;
	}
	*out = s;
	return archived_attach(f, s, b);
}

/* A loss entry of the archive: forwarded as the live forwarder reports
 * a loss, unless the cursor is past it. */
static int take_archived_loss(struct forwarder *f, struct source *s,
			      const struct shmlog_lost *lost)
{
	uint64_t first, last;
	unsigned lane = lost->lane;
	if (lane >= s->lanes || shmlog_reader_lost_seq(f->arc, &first, &last))
		return 0;
	if (s->known[lane] && (int64_t)(last - s->next[lane]) < 0)
		return 0; /* delivered before */
	int err = 0;
	if (s->known[lane] && (int64_t)(first - s->next[lane]) > 0)
		err = archive_gap(f, s, lane, first - s->next[lane]);
	if (err)
		return err;
	s->known[lane] = true;
	s->next[lane] = last + 1;
	struct sink_loss l = {src_cursor(f, s)->id.path, s->name, lane,
			      lost->overwritten, lost->torn, first, last};
	f->st_batch.lost_overwritten += lost->overwritten;
	f->st_batch.lost_torn += lost->torn;
	return batch_add_loss(&f->batch, &f->sink, &l);
}

/* Read the archive into the batch until it is full or at the archive's
 * end. Returns 1 at the end, 0 if the batch filled (or the next event is
 * of another host: held for the next batch), or a negative errno. Each
 * record or loss goes out as of the host that wrote its archive file, as
 * that file's header names it. */
static int read_archive(struct forwarder *f)
{
	struct shmlog_record r;
	struct shmlog_lost lost;
	while (!batch_full(f)) {
		int ev = f->held_ev;
		if (ev) {
			r = f->held_rec;
			lost = f->held_lost;
			f->held_ev = 0;
		} else {
			ev = shmlog_reader_next(f->arc, &r, &lost);
		}
		if (ev == SHMLOG_EV_NONE)
			return 1;
		if (ev < 0)
			return ev;
		struct shmlog_archive_source as;
		int err = shmlog_reader_archive_source(f->arc, NULL, &as);
		if (err)
			return err;
		char host[sizeof(f->batch.host)];
		sink_hostname(host, sizeof(host), as.host ? as.host : "");
		if (f->batch.n && strcmp(host, f->batch.host)) {
			f->held_ev = ev;
			f->held_rec = r;
			f->held_lost = lost;
			return 0;
		}
		memcpy(f->batch.host, host, sizeof(host));
		struct source *s;
		err = archived_source(f, &as, &s);
		if (!err && ev == SHMLOG_EV_LOST)
			err = take_archived_loss(f, s, &lost);
		else if (!err)
			err = take_record(f, s, &r);
		if (err)
			return err;
	}
	return 0;
}

static void free_source(struct source *s);
static int open_sources(struct forwarder *f);

/* -f: the archive was read to its end and all it gave is delivered (the
 * batch is empty): the live buffers take over where it ends. Their
 * cursor sections are the ones the replay moved; a lane the replay met
 * nothing of starts at the archive's position (archive_seam_next()).
 * 0, or -1 after saying why. */
static int follow_buffers(struct forwarder *f)
{
	commit_batch(f); /* the positions of records filtered out */
	for (size_t i = 0; i < f->arc_n; i++)
		free_source(&f->arc_src[i]);
	free(f->arc_src);
	f->arc_src = NULL;
	f->arc_n = 0;
	int err = open_sources(f);
	shmlog_reader_close(f->arc);
	f->arc = NULL;
	return err ? -1 : 0;
}

/* ---- delivering ---- */

struct backoff {
	int delay_ms, max_ms;
};

static int64_t mono_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --dump: has the sink failed for --give-up without a delivery? Then say
 * so; the caller exits 1 (the cursor keeps what was not delivered). */
static bool give_up(struct forwarder *f)
{
	if (!f->dump || f->sink.fd >= 0 || !f->failing_since)
		return false;
	int64_t failing = mono_now_ms() - f->failing_since;
	if (failing < f->give_up_ms)
		return false;
	fprintf(stderr,
		"shmlog forward: %s: no delivery for %.1f s: giving up "
		"(--give-up); %zu records read were not delivered and are "
		"sent again next time%s\n",
		f->url, failing / 1000.0, f->batch.n,
		f->cursor_file ? " (the cursor is where they start)"
			       : ": give --cursor-file to resume");
	return true;
}

static void note_failure(struct forwarder *f)
{
	if (!f->failing_since)
		f->failing_since = mono_now_ms();
}

static void backoff_fail(struct backoff *b, struct forwarder *f,
			 const char *why, volatile sig_atomic_t *stop)
{
	b->delay_ms = b->delay_ms ? b->delay_ms * 2 : 100;
	if (b->delay_ms > b->max_ms)
		b->delay_ms = b->max_ms;
	int wait_ms = b->delay_ms;
	if (f->sink.retry_after_ms > wait_ms) /* the receiver's wish */
		wait_ms = f->sink.retry_after_ms < b->max_ms
				  ? f->sink.retry_after_ms
				  : b->max_ms;
	if (f->dump && f->failing_since) { /* wake up to give up on time */
		int64_t left = f->failing_since + f->give_up_ms - mono_now_ms();
		if (left < wait_ms)
			wait_ms = left > 1 ? (int)left : 1;
	}
	fprintf(stderr,
		"shmlog forward: %s: %s; retrying in %.1f s%s (writers are not "
		"held up; records the ring overwrites meanwhile are counted "
		"and reported)\n",
		f->url, why, wait_ms / 1000.0,
		f->sink.retry_after_ms ? ", as its Retry-After asks" : "");
	sleep_ms(wait_ms, stop);
}

/* Connect if needed. 0 when connected; 1 to try again later; -1 fatal. */
static int ensure_connected(struct forwarder *f, struct backoff *bo,
			    volatile sig_atomic_t *stop)
{
	if (f->sink.fd >= 0)
		return 0;
	char why[512] = "";
	int err = sink_connect(&f->sink, stop, why, sizeof(why));
	if (!err) {
		if (f->st.failures)
			f->st.reconnects++;
		return 0;
	}
	if (*stop)
		return 1;
	if (!sink_reconnects(&f->sink)) {
		fprintf(stderr, "shmlog forward: %s: %s\n", f->url, why);
		return -1;
	}
	f->st.failures++;
	note_failure(f);
	if (give_up(f))
		return -1;
	backoff_fail(bo, f, why, stop);
	return 1;
}

/* Deliver the batch. 0 delivered; 1 failed (kept, try again); -1 fatal. */
static int deliver(struct forwarder *f, struct backoff *bo,
		   volatile sig_atomic_t *stop)
{
	char why[512] = "";
	int err = sink_send(&f->sink, &f->batch, stop, why, sizeof(why));
	if (!err) {
		commit_batch(f);
		bo->delay_ms = 0;
		f->failing_since = 0;
		return 0;
	}
	forward_note_at_risk(f);
	if (*stop)
		return 1;
	f->st.failures++;
	if (!sink_retryable(&f->sink, err)) {
		fprintf(stderr,
			"shmlog forward: %s: %s: the receiver refuses this "
			"batch for good; stopping with it undelivered (the "
			"cursor is before it): fix the receiver or the URL\n",
			f->url, why);
		return -1;
	}
	if (!sink_reconnects(&f->sink)) {
		fprintf(stderr, "shmlog forward: %s: %s\n", f->url, why);
		return -1;
	}
	note_failure(f);
	if (give_up(f))
		return -1;
	backoff_fail(bo, f, why, stop);
	return 1;
}

static int run(struct forwarder *f, volatile sig_atomic_t *stop)
{
	struct backoff bo = {0, f->max_backoff_ms};
	int rc = 0;
	while (!*stop) {
		if (want_status) {
			want_status = 0;
			forward_print_status(f, "status");
		}
		int c = ensure_connected(f, &bo, stop);
		if (c < 0) {
			rc = 1;
			break;
		}
		if (c > 0)
			continue;
		if (!batch_full(f)) {
			if (fill_batch(f) < 0) {
				rc = 1;
				break;
			}
		}
		if (!f->batch.n) {
			if (f->st_batch.filtered)
				commit_batch(f); /* all filtered out: move on */
			if (f->dump)
				break;
			wait_records(f, stop);
			continue;
		}
		f->napped = false;
		int d = deliver(f, &bo, stop);
		if (d < 0) {
			rc = 1;
			break;
		}
	}
	/* stopping: one last bounded try for what was read */
	if (f->batch.n && f->sink.fd >= 0 && rc == 0) {
		static volatile sig_atomic_t no_stop;
		char why[512];
		if (!sink_send(&f->sink, &f->batch, &no_stop, why, sizeof(why)))
			commit_batch(f);
		else
			fprintf(stderr,
				"shmlog forward: %s: the last %zu records were "
				"not delivered (%s); they are sent after a "
				"restart\n",
				f->url, f->batch.n, why);
	}
	save_cursor(f);
	sink_close(&f->sink, true);
	forward_note_at_risk(f);
	return rc;
}

/* ---- the command ---- */

static int seam_from_archive(struct forwarder *f, struct source *s)
{
	int err = archive_seam_open(f->arc, s->name, &s->seam);
	for (unsigned l = 0; !err && l < s->lanes; l++) {
		uint64_t next;
		if (!archive_seam_next(s->seam, l, &next) ||
		    (s->known[l] && (int64_t)(next - s->next[l]) <= 0))
			continue;
		s->known[l] = true;
		s->next[l] = next;
	}
	return err;
}

/* Open the live buffers (with -f, once the archive is read). */
static int open_sources(struct forwarder *f)
{
	for (size_t i = 0; i < f->nsrc; i++) {
		struct source *s = &f->src[i];
		cli_buffer = s->name;
		int err = shmlog_reader_open(s->name, 0, &s->rd);
		if (!err)
			err = attach_cursor(f, s);
		if (!err && f->arc)
			err = seam_from_archive(f, s);
		if (err == -EALREADY)
			return cli_usage_error("forward",
					       "buffer '%s' is given twice: "
					       "name each buffer once",
					       s->name);
		if (err)
			return cli_fail("forward", err);
	}
	return 0;
}

/* The archive (--archive DIR): opened at the start, read before the
 * buffers; with --dump or -f up to where it ended now, however fast an
 * archiver adds to it (else followed). 0, or the exit status of the
 * error it printed. */
static int open_archive(struct forwarder *f)
{
	int flags = f->dump || f->follow ? SHMLOG_READ_DUMP : 0;
	int err = shmlog_reader_open_archive(f->archive, flags, &f->arc);
	if (err)
		fprintf(stderr,
			"shmlog forward: cannot read the archive %s: %s: give "
			"the directory `shmlog archive -o DIR` writes\n",
			f->archive, strerror(-err));
	return err ? 1 : 0;
}

static void free_source(struct source *s)
{
	if (s->rd && !s->archived)
		shmlog_reader_close(s->rd);
	if (s->archived)
		free((char *)s->name);
	archive_seam_free(s->seam);
	free(s->next);
	free(s->known);
	free(s->skipped_seen);
	free(s->torn_pending);
	free(s->end);
}

static void free_forwarder(struct forwarder *f)
{
	for (size_t i = 0; i < f->nsrc; i++)
		free_source(&f->src[i]);
	for (size_t i = 0; i < f->arc_n; i++)
		free_source(&f->arc_src[i]);
	free(f->arc_src);
	if (f->arc)
		shmlog_reader_close(f->arc);
	cursor_free(&f->cursor);
	batch_free(&f->batch);
	sink_free(&f->sink);
	shmlog_filter_free(f->filter);
}

int cmd_forward(int argc, char **argv, volatile sig_atomic_t *stop)
{
	static struct forwarder f;
	f.batch_max = 512;
	f.max_backoff_ms = 30000;
	f.linger_ms = 5;
	f.give_up_ms = 60000;
	f.sink.fd = -1;
	struct sigaction sa = {.sa_handler = on_usr1};
	sigaction(SIGUSR1, &sa, NULL); /* first: a status request never kills */
	int rc = forward_parse_args(&f, argc, argv);
	if (rc) {
		free_forwarder(&f);
		return rc < 0 ? 0 : rc;
	}
	if (load_cursor(&f))
		rc = 1;
	else
		rc = f.archive ? open_archive(&f) : open_sources(&f);
	if (!rc) {
		rc = run(&f, stop);
		forward_print_status(&f, *stop ? "stopped" : "done");
	}
	free_forwarder(&f);
	return rc;
}
