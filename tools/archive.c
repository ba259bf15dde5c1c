/* SPDX-License-Identifier: MIT */
/*
 * `shmlog archive -b B [-b B2 ...] -o DIR`: follow buffers and append
 * every record to files in DIR (src/archive_format.h, docs/archive.md),
 * so that nothing is lost to the ring's wrap while the archiver keeps up.
 *
 * How it stays exact across crashes:
 *  - Records go to the file in blocks of up to BLOCK_TARGET bytes, each
 *    with a CRC32C, written in order (archive_disk.c). Whatever a SIGKILL
 *    leaves is a prefix of whole blocks and perhaps a torn one; on start the newest
 *    file is scanned, the torn tail cut (ftruncate) and the position per
 *    buffer and lane taken from what the file holds: its first block's
 *    BUFFER entries advanced by its records and LOSS entries. There is no
 *    other state, so the position and the records never disagree.
 *  - A record whose sequence number is below its lane's position is in
 *    the archive already and skipped; a record above it means the ones
 *    between were lost (overwritten before they were read, or torn): a
 *    LOSS entry says so, with the range, before the record. The first
 *    position of a lane is the buffer's first sequence number, so the
 *    archive accounts for every record a writer ever started: archived +
 *    lost = written.
 *  - A full disk (ENOSPC, EDQUOT), found by fallocate() before a block
 *    is sealed (or by the syncer's writes, without fallocate()): the
 *    archiver says so once and stops reading (the records it holds stay
 *    in memory), tries again every RETRY_MS, and when the disk takes
 *    them reads on; what the ring overwrote meanwhile becomes LOSS
 *    entries. Writers never wait for it.
 *  - One archiver per DIR: it holds an flock(2) on DIR/.lock.
 *
 * The drain path formats nothing. A run of one lane's records, checked
 * in one copy of its chunk, goes into the block as a SPAN entry, the copy
 * itself (archive_block.c); other records (several lanes merged, all
 * with --compact, and all while the disk lags behind: bytes are then what
 * is short) are coded into RUN entries (what differs from the record
 * before, and the message). Either way a printf-style record's
 * message is kept as the buffer stores it (its format's id and its
 * values: reader_raw.h). The
 * first record of a file that names a format is preceded by a FORMAT
 * entry with the format's text, so that every file reads alone; a block
 * that goes to a new file (rotation) gets them again in that file's first
 * block. Records are taken in batches (shmlog__reader_drain()): the
 * mapping is guarded once per batch, not per record.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "archive_zstd.h"
#include "cli.h"
#include "reader_raw.h"
#include "shmlog.h"

/* Following a writer it keeps up with, the archiver takes what came in
 * at most every BATCH_NAP_US: a turn that found fewer than BATCH_SMALL
 * records is followed by a nap, so that each turn's fixed costs (a look
 * at every lane's head, the wait) are shared by many records. Not a turn
 * that a full block ended: records wait behind it (records coded one by
 * one, with --compact or from several busy lanes: a block holds about
 * 4300 of the benchmark's, and a turn of 4096 left the next one 178 to
 * take before the block filled; each block then cost a 1 ms nap, and a
 * writer at full speed overwrote three quarters of what it wrote). A
 * 16 MiB buffer written at 10 M records/s takes about 15 ms to wrap. */
#define BATCH_SMALL 1024
#define BATCH_NAP_US 1000
/* Bytes staged for the disk wait this long for more records before they
 * go to the file through the page cache (wait_for_records()). */
#define IDLE_MS 5

static void nap_us(long us)
{
	struct timespec d = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&d, NULL); /* a signal ends it early: cli_stop is looked at */
}

static void nap_ms(int ms)
{
	nap_us((long)ms * 1000);
}

/* ---- sources ---- */

/* Open @s's buffer and find (or make) its place among the archive's
 * buffers: the same buffer as the archive's entry of that path resumes
 * at its positions; another one (created again) starts anew. */
static int source_open(struct archiver *a, struct source *s)
{
	int n = shmlog_path(s->name, s->path, sizeof(s->path));
	if (n < 0)
		return n;
	if ((size_t)n > SHMLOG_ARC_PATH_MAX)
		return -ENAMETOOLONG;
	shmlog_reader_t *rd;
	int err = shmlog_reader_open(s->name, 0, &rd);
	if (err)
		return err;
	/* printf-style records as stored: formatted when the archive is
	 * read */
	shmlog__reader_keep_raw(rd);
	/* it keeps what it can: no rest from a writer that overtakes it */
	shmlog__reader_no_rest(rd);
	struct shmlog_info info;
	struct stat st;
	uint64_t first;
	err = shmlog_stat(s->name, &info);
	if (!err && stat(s->path, &st))
		err = -errno;
	if (!err)
		err = shmlog__reader_initial_seq(rd, &first);
	if (err) {
		shmlog_reader_close(rd);
		return err;
	}
	int id = -1, free_id = -1;
	for (int i = 0; i < BUFS_MAX; i++) {
		if (a->bufs[i].used && !strcmp(a->bufs[i].path, s->path))
			id = i;
		else if (!a->bufs[i].used && free_id < 0)
			free_id = i;
	}
	struct bufent *b = id >= 0 ? &a->bufs[id] : NULL;
	if (!b || b->created_ns != info.created_ns ||
	    b->ino != (uint64_t)st.st_ino || b->lanes != info.lanes) {
		if (id < 0)
			id = free_id;
		if (id < 0) {
			shmlog_reader_close(rd);
			return -ENFILE;
		}
		b = &a->bufs[id];
		err = bufent_set(b, s->path, (size_t)n, info.created_ns,
				 (uint64_t)st.st_ino, first, info.lanes);
		if (err) {
			shmlog_reader_close(rd);
			return err;
		}
		/* into the file before any of its records */
		if (a->fd >= 0)
			put_buffer(a, (unsigned)id);
		b->written = true;
	}
	free(s->torn);
	free(s->snap);
	s->torn = calloc(info.lanes, sizeof(*s->torn));
	s->snap = calloc(info.lanes, sizeof(*s->snap));
	if (!s->torn || !s->snap) {
		shmlog_reader_close(rd);
		return -ENOMEM;
	}
	if (s->rd)
		shmlog_reader_close(s->rd);
	s->rd = rd;
	s->b = b;
	s->id = (uint16_t)id;
	s->ev = SHMLOG_EV_NONE;
	s->waiting = false;
	return 0;
}

/* A buffer created again under its name: what is left of the old one was
 * read (this runs when every reader is idle), the new one is archived
 * from its first record. A removed buffer stays read (its writers may
 * still log into the orphaned copy). */
static void sources_check(struct archiver *a)
{
	for (int i = 0; i < a->nsrc; i++) {
		struct source *s = &a->src[i];
		struct stat st;
		if (stat(s->path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (!s->waiting && s->b && st.st_ino == s->b->ino)
			continue;
		struct source old = *s;
		old.torn = old.snap = NULL;
		/* the old buffer's records are written under its identity */
		if (flush(a))
			continue;
		a->gaps_due = false;
		int err = source_open(a, s);
		if (err) {
			s->rd = old.rd; /* not ready yet: try again later */
			continue;
		}
		if (!a->quiet)
			fprintf(stderr,
				"shmlog " CMD ": buffer %s %s: archiving it\n",
				s->path, old.waiting ? "is there" : "was created again");
	}
}

/* ---- draining ---- */

static int source_next(struct source *s)
{
	if (!s->rd)
		return SHMLOG_EV_NONE;
	int ev = shmlog_reader_next(s->rd, &s->rec, &s->lost);
	if (ev < 0) {
		fprintf(stderr, "shmlog " CMD ": %s: %s: archiving what was "
				"read\n", s->path, shmlog_strerror(ev));
		shmlog_reader_close(s->rd);
		s->rd = NULL;
		return SHMLOG_EV_NONE;
	}
	return ev;
}

static void take_event(struct archiver *a, struct source *s, int ev,
		       const struct shmlog_record *rec,
		       const struct shmlog_lost *lost)
{
	if (ev == SHMLOG_EV_RECORD)
		take_record(a, s, rec);
	else if (ev == SHMLOG_EV_LOST && lost->lane < s->b->lanes)
		s->torn[lost->lane] += lost->torn;
}

/* shmlog__reader_drain()'s hand: an event into the block, until full. */
static bool drain_take(void *ctx, int ev, const struct shmlog_record *rec,
		       const struct shmlog_lost *lost)
{
	struct archiver *a = ctx;
	take_event(a, &a->src[0], ev, rec, lost);
	return a->out_len < a->block_target && !cli_stop;
}

/* shmlog__reader_drain()'s hand for a span: into a SPAN entry. */
static bool drain_span(void *ctx, const struct shmlog__span *sp,
		       unsigned *took)
{
	struct archiver *a = ctx;
	take_span(a, &a->src[0], sp, took);
	return a->out_len < a->block_target && !cli_stop;
}

/* shmlog__reader_drain()'s room for a span's copy: in the block, where
 * its SPAN entry's records go (take_span()). */
static unsigned char *drain_room(void *ctx, size_t n)
{
	return span_room(ctx, n);
}

/* One source: its events in batches, straight into the block. */
static uint64_t drain_one(struct archiver *a)
{
	struct source *s = &a->src[0];
	if (!s->rd || cli_stop || a->out_len >= a->block_target)
		return 0;
	/* coded one by one where bytes are what is short: spans are then
	 * the reader's copies, not copied into the block */
	a->runs = a->compact || (a->disk_lags && !a->as_stored);
	int n = shmlog__reader_drain(s->rd, 4096,
				     a->block_target - a->out_len, drain_take,
				     drain_span, a->runs ? NULL : drain_room,
				     a);
	if (n < 0) {
		fprintf(stderr, "shmlog " CMD ": %s: %s: archiving what was "
				"read\n", s->path, shmlog_strerror(n));
		shmlog_reader_close(s->rd);
		s->rd = NULL;
		return 0;
	}
	return (uint64_t)n;
}

/* The oldest pending event of all sources (merged in time order, as
 * `shmlog cat` merges them), or NONE. */
static int merged_next(struct archiver *a, struct source **from)
{
	struct source *best = NULL;
	for (int i = 0; i < a->nsrc; i++) {
		struct source *s = &a->src[i];
		if (s->ev == SHMLOG_EV_NONE)
			s->ev = source_next(s);
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

/* Read until the block is full or nothing is left. Returns the events
 * taken. */
static uint64_t drain(struct archiver *a)
{
	if (a->nsrc == 1)
		return drain_one(a);
	uint64_t n = 0;
	while (!cli_stop && a->out_len < a->block_target) {
		struct source *s;
		int ev = merged_next(a, &s);
		if (ev == SHMLOG_EV_NONE)
			break;
		take_event(a, s, ev, &s->rec, &s->lost);
		n++;
	}
	return n;
}

/* Has every source read all that was published? (See
 * shmlog_reader_wait(): a look with timeout 0 after SHMLOG_EV_NONE.) */
static bool all_read(struct archiver *a)
{
	for (int i = 0; i < a->nsrc; i++)
		if (a->src[i].rd && a->src[i].ev != SHMLOG_EV_NONE)
			return false;
	for (int i = 0; i < a->nsrc; i++)
		if (a->src[i].rd && shmlog_reader_wait(a->src[i].rd, 0) == 0)
			return false;
	return true;
}

/* Losses no later record reveals: a lane whose records were all
 * overwritten and that writes no more. Each lane's next sequence number
 * is snapped first; once every reader has read all that was published
 * (all_read()), a record below the snap that was not delivered never will
 * be: it is lost. (A record committed after the snap is above it.) */
static void snap_lanes(struct archiver *a)
{
	for (int i = 0; i < a->nsrc; i++) {
		struct source *s = &a->src[i];
		for (unsigned l = 0; s->rd && l < s->b->lanes; l++)
			if (shmlog_reader_lane_next_seq(s->rd, l, &s->snap[l]))
				s->snap[l] = s->b->next[l];
	}
	a->gaps_due = true;
}

/* --once: has every lane of every source been archived (or counted
 * lost) up to its snap (snap_lanes())? Then what the buffers held when
 * it began is in the archive: a writer that never pauses, faster than
 * the archiver, would otherwise keep it draining for ever. */
static bool snap_reached(const struct archiver *a)
{
	for (int i = 0; i < a->nsrc; i++) {
		const struct source *s = &a->src[i];
		for (unsigned l = 0; s->rd && l < s->b->lanes; l++)
			if ((int64_t)(s->snap[l] - s->b->next[l]) > 0)
				return false;
	}
	return true;
}

static void close_gaps(struct archiver *a)
{
	for (int i = 0; i < a->nsrc; i++) {
		struct source *s = &a->src[i];
		struct bufent *b = s->b;
		for (unsigned l = 0; s->rd && l < b->lanes; l++) {
			if ((int64_t)(s->snap[l] - b->next[l]) <= 0)
				continue;
			if (a->out_len + sizeof(struct shmlog_arc_loss) > OUT_CAP)
				return; /* the next turn closes the rest */
			put_loss(a, s, l, b->next[l], s->snap[l] - 1, s->torn[l]);
			s->torn[l] = 0;
			b->next[l] = s->snap[l];
		}
	}
	a->gaps_due = false;
}

_Static_assert(SOURCES_MAX <= SHMLOG_WAIT_ANY_MAX, "one wait over all sources");

/* Until a record may be there in any source (one wait over all of them),
 * at most 100 ms: the chores and cli_stop are looked at in between. A
 * truncated buffer is ready at once: its next read drops it. With bytes
 * staged and not in the file yet, the wait is at most IDLE_MS: if no
 * record came meanwhile, the writers paused, and the bytes go to the file
 * now (stage_write_out()) rather than BLOCK_MS after they were read. */
static void wait_for_records(struct archiver *a)
{
	shmlog_reader_t *rd[SOURCES_MAX];
	for (int i = 0; i < a->nsrc; i++)
		rd[i] = a->src[i].rd;
	bool staged = stage_wait_ms(a, -1) >= 0;
	int ms = stage_wait_ms(a, 100);
	if (staged && ms > IDLE_MS)
		ms = IDLE_MS;
	int rc = shmlog_reader_wait_any(rd, (size_t)a->nsrc, ms ? ms : 1);
	if (rc >= 0)
		nap_us(BATCH_NAP_US); /* what comes with it, too */
	else if (rc == -ETIMEDOUT && staged)
		stage_write_out(a); /* if refused, the stage's write has it */
}

/* The periodic chores: files past the limits removed, what waits in the
 * stage to the file, sync, buffers created again. */
static void chores(struct archiver *a)
{
	if (a->prune_due)
		prune_files(a);
	if (!stage_wait_ms(a, BLOCK_MS))
		stage_write_out(a); /* if refused, the stage's write has it */
	uint64_t now = mono_ms();
	if (now - a->last_sync_ms >= SYNC_MS) {
		a->last_sync_ms = now;
		sync_now(a);
	}
	if (!a->once && now - a->last_check_ms >= CHECK_MS) {
		a->last_check_ms = now;
		if (dir_ours(a))
			sources_check(a);
	}
}

static int run(struct archiver *a)
{
	/* --once: rounds of draining until a look finds nothing new, or
	 * every lane is past where it was at the start; a bound, as writers
	 * may never stop */
	unsigned rounds = 0;
	uint64_t last_gaps_ms = mono_ms();
	/* the first file now, not at the first block: made then, it stopped
	 * the drain 8 ms while a writer may log at full speed (if the disk is
	 * full, the first block tries again) */
	if (a->fd < 0) {
		int err = new_file(a);
		if (err && !disk_full_err(err))
			return err;
	}
	/* --once: what the buffers hold now is what it archives */
	if (a->once)
		snap_lanes(a);
	while (!cli_stop && !a->dir_lost) {
		if (a->disk_full) {
			nap_ms(RETRY_MS);
			int err = flush(a);
			if (err && !disk_full_err(err))
				return err;
			continue;
		}
		uint64_t n = drain(a);
		/* the block ended the turn, not the records */
		bool full = a->out_len >= a->block_target;
		bool some = a->out_len > sizeof(struct shmlog_arc_block);
		if (!some)
			a->block_ms = 0;
		else if (!a->block_ms)
			a->block_ms = mono_ms();
		if (full || (some && !n) ||
		    (some && mono_ms() - a->block_ms >= BLOCK_MS)) {
			int err = flush(a);
			if (err && !disk_full_err(err))
				return err;
			if (err)
				continue;
		}
		chores(a);
		if (a->once && n && snap_reached(a))
			break;
		if (n) {
			if (!a->once && !full && n < BATCH_SMALL)
				nap_us(BATCH_NAP_US);
			continue;
		}
		if (!a->gaps_due && (a->once || mono_ms() - last_gaps_ms >= CHECK_MS)) {
			snap_lanes(a);
			continue;
		}
		if (a->gaps_due && all_read(a)) {
			close_gaps(a);
			last_gaps_ms = mono_ms();
			if (a->once)
				break;
			continue;
		}
		if (a->once && ++rounds > 1000)
			break;
		if (!a->once)
			wait_for_records(a);
	}
	/* what was read is written, if the disk lets it */
	int err = flush(a);
	if (!err && a->fd < 0)
		err = new_file(a); /* an archive of nothing still says where */
	int end = stage_finish(a);
	if (a->prune_due)
		prune_files(a); /* every file named now */
	sync_end(a);
	if (a->dir_lost)
		return -ESTALE;
	return err ? err : end;
}

/* ---- options ---- */

static int usage(void)
{
	printf("usage: shmlog archive -b NAME [-b NAME2 ...] -o DIR "
	       "[options]\n"
	       "Append every record of the buffers to files in DIR, as "
	       "they are written; read\n"
	       "them back with `shmlog cat --archive DIR`. Killed and "
	       "started again, it goes\n"
	       "on where it stopped: no record twice; records the buffer "
	       "overwrote meanwhile\n"
	       "are written as losses.\n\n" CLI_HELP_BUFFER
	       "                      (several -b: all of them, into the "
	       "same files)\n"
	       "  -o, --output DIR    the archive's directory (made if "
	       "missing)\n"
	       "      --once          archive what the buffers hold, then "
	       "exit\n"
	       "      --max-file-size BYTES  start a new file past BYTES "
	       "(default 64M)\n"
	       "      --max-files N   keep at most N files (the oldest go "
	       "first)\n"
	       "      --max-size BYTES  keep at most BYTES of files in all\n"
	       "      --max-age SECS  remove files older than SECS (suffix "
	       "s m h d)\n"
	       "      --compact       code every record against the one "
	       "before (files about\n"
	       "                      40%% smaller, more CPU a record); "
	       "without it, only\n"
	       "                      while the disk lags behind\n"
	       "      --as-stored     keep one writer's records as the "
	       "buffer stores them,\n"
	       "                      even while the disk lags (the "
	       "least CPU a record)\n"
	       "      --zstd[=LEVEL]  compress each block with zstd (level "
	       "1 unless given;\n"
	       "                      negative levels are faster): files "
	       "several times\n"
	       "                      smaller, for more CPU a record; "
	       "older shmlog cannot read them\n"
	       "  -q, --quiet         say nothing but errors\n" CLI_HELP_HELP
	       "BYTES take a suffix K, M or G (powers of 1024).\n");
	return 0;
}

static int parse_bytes(const char *opt, const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	uint64_t mul = 1;
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1024 * 1024, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1024 * 1024 * 1024, end++;
	if (end == s || *end || errno || s[0] == '-' || !v ||
	    v > UINT64_MAX / mul) {
		char msg[128];
		snprintf(msg, sizeof(msg),
			 "bad %s '%%s': give a size such as 4096, 64M or 1G",
			 opt);
		return cli_usage_error(CMD, msg, s);
	}
	*out = v * mul;
	return -1;
}

static int parse_age(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	uint64_t mul = *end == 'm' ? 60 : *end == 'h' ? 3600
				     : *end == 'd'   ? 86400
						     : 1;
	if (*end && strchr("smhd", *end))
		end++;
	if (end == s || *end || errno || s[0] == '-' || !v ||
	    v > UINT64_MAX / mul / 1000000000)
		return cli_usage_error(CMD,
				       "bad --max-age '%s': give seconds, or "
				       "a number with s, m, h or d",
				       s);
	*out = v * mul;
	return -1;
}

/* --zstd[=LEVEL] */
static int parse_zstd(struct archiver *a, const char *s)
{
	if (!shmlog__zstd_available())
		return cli_usage_error(CMD,
				       "--zstd%s: this shmlog was built without "
				       "zstd: build it with cmake -DSHMLOG_ZSTD=ON "
				       "(Debian: libzstd-dev)",
				       "");
	int lo, hi;
	shmlog__zstd_levels(&lo, &hi);
	a->zstd = true;
	a->zstd_level = 1;
	if (!s)
		return -1;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi || !v) {
		char msg[128];
		snprintf(msg, sizeof(msg),
			 "bad --zstd level '%%s': give %d to -1 (fastest) or "
			 "1 to %d (smallest)",
			 lo, hi);
		return cli_usage_error(CMD, msg, s);
	}
	a->zstd_level = (int)v;
	return -1;
}

static int parse(struct archiver *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"output", required_argument, 0, 'o'},
		{"once", no_argument, 0, '1'},
		{"max-file-size", required_argument, 0, 'F'},
		{"max-files", required_argument, 0, 'N'},
		{"max-size", required_argument, 0, 'S'},
		{"max-age", required_argument, 0, 'A'},
		{"compact", no_argument, 0, 'C'},
		{"as-stored", no_argument, 0, 'R'},
		{"zstd", optional_argument, 0, 'Z'},
		{"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c, rc = -1;
	while (rc < 0 &&
	       (c = getopt_long(argc, argv, "b:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (cli_set_buffer(CMD, optarg))
				return 2;
			if (a->nsrc == SOURCES_MAX)
				return cli_usage_error(CMD, "too many -b%s: 64 "
							    "at most", "");
			a->src[a->nsrc++].name = optarg;
			break;
		case 'o': a->dir = optarg; break;
		case '1': a->once = true; break;
		case 'C': a->compact = true; break;
		case 'R': a->as_stored = true; break;
		case 'Z': rc = parse_zstd(a, optarg); break;
		case 'q': a->quiet = true; break;
		case 'F':
			rc = parse_bytes("--max-file-size", optarg,
					 &a->max_file_size);
			if (rc < 0 && a->max_file_size < 65536)
				rc = cli_usage_error(CMD,
						     "--max-file-size %s is too "
						     "small: give 64K or more",
						     optarg);
			break;
		case 'S': rc = parse_bytes("--max-size", optarg, &a->max_size); break;
		case 'A': rc = parse_age(optarg, &a->max_age_s); break;
		case 'N':
			if (cli_parse_u64(optarg, UINT32_MAX, &a->max_files) ||
			    !a->max_files)
				return cli_usage_error(CMD,
						       "bad --max-files '%s': "
						       "give a number, 1 or "
						       "more",
						       optarg);
			break;
		case 'h': return usage();
		default: return cli_bad_option(CMD);
		}
	}
	if (rc >= 0)
		return rc;
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'",
				       argv[optind]);
	if (!a->dir)
		return cli_usage_error(CMD, "no archive directory%s: give -o DIR",
				       "");
	if (a->compact && a->as_stored)
		return cli_usage_error(CMD, "--compact and --as-stored%s ask "
					    "for opposite things: give one",
				       "");
	if (!a->nsrc)
		a->src[a->nsrc++].name = cli_buffer;
	return -1;
}

/* ---- the command ---- */

static int open_dir(struct archiver *a)
{
	if (mkdir(a->dir, 0750) && errno != EEXIST) {
		fprintf(stderr, "shmlog " CMD ": cannot make %s: %s\n", a->dir,
			strerror(errno));
		return 1;
	}
	a->dir_fd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (a->dir_fd < 0) {
		fprintf(stderr, "shmlog " CMD ": cannot open %s: %s\n", a->dir,
			strerror(errno));
		return 1;
	}
	a->sync.dir_fd = a->dir_fd;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/.lock", a->dir);
	a->lockfd = openat(a->dir_fd, ".lock",
			   O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (a->lockfd < 0) {
		fprintf(stderr, "shmlog " CMD ": cannot open %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	if (flock(a->lockfd, LOCK_EX | LOCK_NB)) {
		fprintf(stderr,
			"shmlog " CMD ": another archiver writes to %s: stop it "
			"first, or give another -o\n",
			a->dir);
		return 1;
	}
	return 0;
}

static void archiver_free(struct archiver *a)
{
	sync_end(a);
	release_reserved(a);
	for (int i = 0; i < a->nsrc; i++) {
		if (a->src[i].rd)
			shmlog_reader_close(a->src[i].rd);
		free(a->src[i].torn);
		free(a->src[i].snap);
	}
	for (unsigned i = 0; i < BUFS_MAX; i++)
		bufent_free(&a->bufs[i]);
	if (a->fd >= 0)
		close(a->fd);
	if (a->lockfd >= 0)
		close(a->lockfd);
	if (a->dir_fd >= 0)
		close(a->dir_fd);
	stage_release(a);
	free(a->zout);
	free(a->aside);
	shmlog__zstd_free(a->zctx);
}

int cmd_archive(int argc, char **argv)
{
	static struct archiver a; /* large: keep it off the stack */
	memset(&a, 0, sizeof(a));
	a.fd = a.lockfd = a.dfd = a.dir_fd = a.sync.dir_fd = -1;
	a.max_file_size = 64u << 20;
	int rc = parse(&a, argc, argv);
	if (rc >= 0)
		return rc;
	int err = stage_init(&a);
	if (!err)
		err = sync_start(&a);
	if (err) {
		archiver_free(&a);
		return cli_fail(CMD, err);
	}
	out_reset(&a);
	/* a block, its header and the largest record fit in a file of
	 * --max-file-size, after the file's first block */
	a.block_target = BLOCK_TARGET;
	if (a.max_file_size / 4 < a.block_target)
		a.block_target = a.max_file_size / 4;
	if (a.block_target < 4096)
		a.block_target = 4096;
	if ((rc = open_dir(&a)) != 0)
		goto out;
	err = recover(&a);
	if (err == -EPROTONOSUPPORT && a.newer_version == SHMLOG_ARC_VERSION &&
	    !shmlog__zstd_available()) {
		fprintf(stderr,
			"shmlog " CMD ": %s holds files written with --zstd, "
			"and this shmlog was built without zstd: build it with "
			"cmake -DSHMLOG_ZSTD=ON (Debian: libzstd-dev), or "
			"archive into another directory\n",
			a.dir);
		rc = 1;
		goto out;
	}
	if (err == -EPROTONOSUPPORT) {
		fprintf(stderr,
			"shmlog " CMD ": %s holds archive files of format "
			"version %u; this shmlog writes version %u: archive "
			"into another directory, or use the newer shmlog\n",
			a.dir, a.newer_version, SHMLOG_ARC_VERSION);
		rc = 1;
		goto out;
	}
	if (err) {
		fprintf(stderr, "shmlog " CMD ": cannot read the archive in %s: "
				"%s\n", a.dir, strerror(-err));
		rc = 1;
		goto out;
	}
	for (int i = 0; i < a.nsrc; i++) {
		struct source *s = &a.src[i];
		err = source_open(&a, s);
		if (err == -ENOENT && !a.once) {
			s->waiting = true;
			fprintf(stderr, "shmlog " CMD ": buffer %s does not "
					"exist yet: waiting for it\n",
				s->path);
			continue;
		}
		if (err) {
			cli_buffer = s->name;
			rc = cli_fail(CMD, err);
			goto out;
		}
	}
	err = run(&a);
	if (err == -ESTALE && a.dir_lost) {
		fprintf(stderr,
			"shmlog " CMD ": %s was removed or replaced while it "
			"archived into it (its .lock is no longer the lock it "
			"holds): stopped, so as not to write beside another "
			"archiver there; run it again to archive into %s anew "
			"(what the buffers still hold goes into it)\n",
			a.dir, a.dir);
		rc = 1;
	} else if (err) {
		fprintf(stderr, "shmlog " CMD ": cannot write to %s: %s%s\n",
			a.dir, strerror(-err),
			disk_full_err(err) ? ": records read and not written "
					     "are in the buffers still, if not "
					     "overwritten: run again"
					   : "");
		rc = 1;
	} else if (!a.quiet && a.once) {
		fprintf(stderr,
			"shmlog " CMD ": %" PRIu64 " records archived, %" PRIu64
			" lost (%" PRIu64 " losses) into %s\n",
			a.records, a.lost_records, a.losses, a.dir);
	}
	if (!a.quiet && a.lag_records)
		fprintf(stderr,
			"shmlog " CMD ": the disk lagged behind: %" PRIu64
			" records were coded compactly (as --compact codes "
			"them) until it caught up\n",
			a.lag_records);
	if (!a.quiet && a.overflows)
		fprintf(stderr,
			"shmlog " CMD ": the disk lagged behind: %" PRIu64
			" MiB went through the page cache instead of straight "
			"to the disk\n",
			a.overflows * (STAGE_STEP >> 20));
out:
	archiver_free(&a);
	return rc;
}
