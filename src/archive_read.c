/* SPDX-License-Identifier: MIT */
/*
 * Reading an archive (the directory `shmlog archive` writes; the format is
 * in archive_format.h and docs/archive.md): its files oldest first, each
 * block checked (CRC32C) before any of its entries is believed, each entry
 * checked against its block, so a truncated, damaged or hostile file ends
 * a reading early, never crashes or hangs it. Every loop is bounded by the
 * bytes of a block or by the files of the directory.
 *
 * A block that is not whole at the end of the newest file is a tail still
 * being written (or torn by a crash, to be cut by the archiver when it
 * starts again): the reader stops there and looks again at its next call,
 * so a reader follows an archive as it grows. A damaged block elsewhere
 * ends its file: the reader counts it (shmlog_lane_stats.corrupt) and goes
 * on with the next file.
 *
 * The reader keeps, per buffer and lane, the sequence number after the
 * last record or loss it delivered: shmlog_reader_archive_next_seq(), the
 * seam where a follower of the live buffer takes over.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive_codec.h"
#include "archive_read.h"
#include "fmtarg.h"
#include "internal.h"

/* Buffers one archive may name (BUFFER entries' @buf). */
#define ARC_BUFS_MAX 256

/* A format of a buffer's table, as a FORMAT entry gave it: an entry of
 * the buffer's shmlog__arc_idtab. */
struct arc_fmt {
	uint32_t id; /* first: the table's key; 0, a free slot */
	uint32_t len;
	char *text; /* NUL-terminated */
};
_Static_assert(offsetof(struct arc_fmt, id) == 0, "an idtab entry");
/* Formats one buffer may name: a table of 1 MiB holds fewer. */
#define ARC_FMTS_MAX (1u << 17)

struct arc_buf {
	bool used;
	struct shmlog__arc_idtab fmts; /* of struct arc_fmt */
	struct shmlog_archive_source src;
	char path[SHMLOG_ARC_PATH_MAX + 1];
	uint64_t *next; /* [lanes]: next sequence number, if known[] */
	bool *known;
};

struct arc_lane_count {
	uint64_t read, overwritten, torn;
};

struct shmlog__arc {
	char dir[PATH_MAX];
	int fd; /* the current file, -1: none yet */
	uint64_t file_no;
	uint64_t off; /* the next block's offset in the file */
	/* the host in the current file's header, and in that of the file
	 * the last record or loss came from (the reader moves to the next
	 * file before it knows whether the archive holds more) */
	char file_host[SHMLOG_ARC_HOST_MAX + 1];
	char host[SHMLOG_ARC_HOST_MAX + 1];
	bool host_new; /* file_host is not yet an event's */
	bool had_event;
	unsigned char *blk; /* the current block's entries */
	size_t blk_cap, blk_len, blk_pos;
	bool in_run; /* decoding the RUN or SPAN entry before blk_pos */
	struct shmlog__arc_run_dec run;
	bool skipping; /* SHMLOG_READ_TAIL: consume up to the end, silently */
	/* SHMLOG_READ_DUMP: the newest file at the first read and its size
	 * then (dump_set; no file: nothing to read) */
	bool dump, dump_set, dump_any;
	uint64_t end_file, end_off;
	struct arc_buf bufs[ARC_BUFS_MAX];
	unsigned lanes_max;
	struct arc_lane_count counts[SHMLOG_LANES_MAX];
	uint64_t corrupt;
	bool said_nozstd; /* -ENOTSUP returned for a compressed block */
	int last_buf; /* buffer of the last event, -1: none */
	bool lost_known;
	uint64_t lost_first, lost_last;
	char tag[SHMLOG_TAG_MAX + 1];
	char msg[SHMLOG_MSG_MAX + 1];
	/* the last record, if printf-style: its format (NULL: the archive
	 * holds none of that id), its values in msg, and the text made */
	bool deferred;
	const char *fmt;
	size_t args_len;
	char text[SHMLOG_MSG_MAX + 1];
};

/* ---- files ---- */

/* The smallest file number above @after (or at least @after if
 * @inclusive), or the largest of all (@newest). -ENOENT if none. */
static int find_file(const char *dir, uint64_t after, bool inclusive,
		     bool newest, uint64_t *out)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	bool found = false;
	uint64_t best = 0, no;
	while (shmlog__arc_dir_next(d, &no, NULL)) {
		if (newest) {
			if (!found || no > best)
				best = no;
			found = true;
			continue;
		}
		if (no < after || (no == after && !inclusive))
			continue;
		if (!found || no < best)
			best = no;
		found = true;
	}
	closedir(d);
	if (!found)
		return -ENOENT;
	*out = best;
	return 0;
}

static int file_path(const struct shmlog__arc *a, uint64_t no,
		     char path[PATH_MAX])
{
	if (snprintf(path, PATH_MAX,
		     "%s/" SHMLOG_ARC_PREFIX "%016llu" SHMLOG_ARC_SUFFIX,
		     a->dir, (unsigned long long)no) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static int open_file(struct shmlog__arc *a, uint64_t no)
{
	char path[PATH_MAX];
	if (file_path(a, no, path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (a->fd >= 0)
		close(a->fd);
	a->fd = fd;
	a->file_no = no;
	a->off = 0;
	a->blk_len = a->blk_pos = 0;
	a->in_run = false;
	return 0;
}

/* Is the file header at offset 0 whole and valid? Fills a->file_host. */
static bool read_file_header(struct shmlog__arc *a)
{
	struct shmlog_arc_file h;
	if (shmlog__arc_file_header(a->fd, &h))
		return false;
	memcpy(a->file_host, h.host, SHMLOG_ARC_HOST_MAX);
	a->file_host[SHMLOG_ARC_HOST_MAX] = '\0';
	a->host_new = true;
	a->off = sizeof(h);
	return true;
}

/* Load the block at a->off: SHMLOG__ARC_BLK_OK (a->off then past it),
 * _NOT_YET (the file ends inside it: a tail being written, or torn),
 * _BAD (damaged). */
static enum shmlog__arc_blk read_block(struct shmlog__arc *a)
{
	uint32_t len;
	enum shmlog__arc_blk r =
		shmlog__arc_block_read(a->fd, &a->off, &a->blk, &a->blk_cap, &len);
	if (r != SHMLOG__ARC_BLK_OK)
		return r;
	a->blk_len = len;
	a->blk_pos = 0;
	a->in_run = false;
	return r;
}

/* A dump (SHMLOG_READ_DUMP) ends where the archive ended at its first
 * read: is the block at the reader's place, or file @no, past that? */
static bool dump_over(const struct shmlog__arc *a, uint64_t no)
{
	if (!a->dump_set)
		return false;
	if (!a->dump_any || no > a->end_file)
		return true;
	return no == a->end_file && no == a->file_no && a->fd >= 0 &&
	       a->off >= a->end_off;
}

/* Where a dump ends: the newest file's size now (an archiver appends
 * whole blocks to it; a block it has not finished is not read). */
static void dump_end(struct shmlog__arc *a)
{
	a->dump_set = true;
	char path[PATH_MAX];
	struct stat st;
	a->dump_any = find_file(a->dir, 0, true, true, &a->end_file) == 0 &&
		      !file_path(a, a->end_file, path) && !stat(path, &st);
	a->end_off = a->dump_any ? (uint64_t)st.st_size : 0;
}

/* Move to the next file, if there is one (for a dump, up to its end). */
static bool next_file(struct shmlog__arc *a)
{
	uint64_t no;
	/* a file that cannot be opened or has no valid header is skipped;
	 * bounded by the directory's files, each visited once */
	while (find_file(a->dir, a->file_no, false, false, &no) == 0 &&
	       !dump_over(a, no)) {
		if (open_file(a, no) == 0 && read_file_header(a))
			return true;
		a->file_no = no;
		a->corrupt++;
	}
	return false;
}

/* ---- entries ---- */

static struct arc_buf *buf_of(struct shmlog__arc *a, unsigned id)
{
	return id < ARC_BUFS_MAX && a->bufs[id].used ? &a->bufs[id] : NULL;
}

static void buf_free(struct arc_buf *b)
{
	struct arc_fmt *f = b->fmts.v;
	for (uint32_t i = 0; i < b->fmts.cap; i++)
		free(f[i].text);
	free(b->fmts.v);
	free(b->next);
	free(b->known);
	memset(b, 0, sizeof(*b));
}

/* A BUFFER entry: the buffer's identity and lane positions. */
static bool take_buffer(struct shmlog__arc *a, const unsigned char *p,
			size_t size)
{
	struct shmlog_arc_buffer h;
	const char *path;
	const unsigned char *q;
	if (!shmlog__arc_buffer_entry(p, size, ARC_BUFS_MAX, &h, &path, &q))
		return false;
	struct arc_buf *b = &a->bufs[h.e.buf];
	bool same = b->used && b->src.created_ns == h.created_ns &&
		    b->src.ino == h.ino && b->src.lanes == h.lanes &&
		    b->path[h.path_len] == '\0' &&
		    !memcmp(b->path, path, h.path_len);
	if (!same) {
		buf_free(b);
		b->next = calloc(h.lanes, sizeof(*b->next));
		b->known = calloc(h.lanes, sizeof(*b->known));
		if (!b->next || !b->known) {
			buf_free(b);
			return false;
		}
		b->used = true;
		memcpy(b->path, path, h.path_len);
		b->path[h.path_len] = '\0';
		b->src.buffer = b->path;
		b->src.created_ns = h.created_ns;
		b->src.ino = h.ino;
		b->src.lanes = h.lanes;
		if (h.lanes > a->lanes_max)
			a->lanes_max = h.lanes;
	}
	for (uint32_t i = 0; i < h.known; i++) {
		struct shmlog_arc_lanepos lp;
		if (shmlog__arc_lanepos_at(&h, q, i, &lp)) {
			b->next[lp.lane] = lp.next;
			b->known[lp.lane] = true;
		}
	}
	return true;
}

/* A record or loss of the current file was taken: its host is the
 * file's. */
static void event_taken(struct shmlog__arc *a)
{
	a->had_event = true;
	if (a->host_new) {
		memcpy(a->host, a->file_host, sizeof(a->host));
		a->host_new = false;
	}
}

static void advance(struct shmlog__arc *a, unsigned id, unsigned lane,
		    uint64_t next)
{
	struct arc_buf *b = buf_of(a, id);
	if (b && lane < b->src.lanes) {
		b->next[lane] = next;
		b->known[lane] = true;
	}
}

static struct arc_fmt *fmt_find(const struct arc_buf *b, uint32_t id)
{
	return b ? shmlog__arc_idtab_find(&b->fmts, sizeof(struct arc_fmt), id)
		 : NULL;
}

/* A FORMAT entry: the text of a format its buffer's records name. */
static bool take_format(struct shmlog__arc *a, const unsigned char *p,
			size_t size)
{
	struct shmlog_arc_format h;
	memcpy(&h, p, sizeof(h));
	struct arc_buf *b = buf_of(a, h.e.buf);
	size_t room = ((size_t)h.len + 7) & ~(size_t)7;
	if (!b || !h.id || h.id % 8 || !h.len || h.len > SHMLOG_MSG_MAX ||
	    size != sizeof(h) + room)
		return false;
	if (a->skipping && fmt_find(b, h.id))
		return true;
	char *text = malloc(h.len + 1);
	if (!text)
		return true; /* its records read "<no format>": not damage */
	memcpy(text, p + sizeof(h), h.len);
	text[h.len] = '\0';
	struct arc_fmt *f = fmt_find(b, h.id);
	if (!f) {
		if (!shmlog__arc_idtab_room(&b->fmts, sizeof(*f), ARC_FMTS_MAX)) {
			free(text);
			return true;
		}
		f = shmlog__arc_idtab_add(&b->fmts, sizeof(*f), h.id);
	}
	free(f->text);
	f->text = text;
	f->len = (uint32_t)strlen(text); /* a NUL inside ends it */
	return true;
}

/* A printf-style record's text from its format and values, as a reader
 * of the buffer makes it (fmtarg_table.c), never trusting either. */
static void format_record(struct shmlog__arc *a, const struct arc_buf *b,
			  struct shmlog_record *rec)
{
	const unsigned char *m = (const unsigned char *)a->msg;
	uint32_t id = 0;
	if (rec->msg_len >= 4)
		memcpy(&id, m, 4);
	const struct arc_fmt *f = rec->msg_len >= 4 ? fmt_find(b, id) : NULL;
	size_t n;
	if (!f) {
		int w = snprintf(a->text, sizeof(a->text), "<no format %u>", id);
		n = w < 0 ? 0 : (size_t)w;
	} else {
		n = shmlog__fmt_format(f->text, f->len, m + 4,
				       rec->msg_len - 4, a->text,
				       sizeof(a->text));
	}
	if (n >= sizeof(a->text)) {
		n = sizeof(a->text) - 1;
		rec->flags |= SHMLOG_REC_TRUNCATED;
	}
	a->deferred = true;
	a->fmt = f ? f->text : NULL;
	a->args_len = rec->msg_len >= 4 ? rec->msg_len - 4 : 0;
	rec->msg = a->text;
	rec->msg_len = n;
	rec->flags |= SHMLOG_REC_DEFERRED;
}

/* A record of the file, @h, into *@rec (unless skipping): false if it
 * names a lane its buffer does not have. */
static bool take_record(struct shmlog__arc *a, const struct shmlog__arc_rec *h,
			struct shmlog_record *rec)
{
	struct arc_buf *b = buf_of(a, h->buf);
	if (h->lane >= (b ? b->src.lanes : SHMLOG_LANES_MAX))
		return false;
	advance(a, h->buf, h->lane, h->seq + 1);
	a->counts[h->lane].read++;
	a->last_buf = b ? h->buf : -1;
	event_taken(a);
	if (a->skipping)
		return true;
	memcpy(a->tag, h->tag, h->tag_len);
	a->tag[h->tag_len] = '\0';
	memcpy(a->msg, h->msg, h->msg_len);
	a->msg[h->msg_len] = '\0';
	rec->seq = h->seq;
	rec->time_ns = h->time_ns;
	rec->raw_time = h->raw_time;
	rec->pid = h->pid;
	rec->tid = h->tid;
	rec->prio = h->prio >= SHMLOG_VERBOSE && h->prio <= SHMLOG_FATAL
			    ? h->prio
			    : SHMLOG_INFO;
	rec->flags = h->flags & SHMLOG_REC_TRUNCATED;
	rec->lane = h->lane;
	rec->tag = a->tag;
	rec->tag_len = h->tag_len;
	rec->msg = a->msg;
	rec->msg_len = h->msg_len;
	a->deferred = false;
	if (h->flags & SHMLOG_ARC_REC_DEFERRED)
		format_record(a, b, rec);
	return true;
}

static bool take_loss(struct shmlog__arc *a, const unsigned char *p,
		      size_t size, struct shmlog_lost *lost)
{
	struct shmlog_arc_loss h;
	memcpy(&h, p, sizeof(h));
	struct arc_buf *b = buf_of(a, h.e.buf);
	if (size != sizeof(h) || h.last < h.first ||
	    h.lane >= (b ? b->src.lanes : SHMLOG_LANES_MAX))
		return false;
	advance(a, h.e.buf, h.lane, h.last + 1);
	/* unstored records are gone as overwritten ones are: not in the
	 * archive, nothing torn about them */
	uint64_t over = h.overwritten + h.unstored;
	a->counts[h.lane].overwritten += over;
	a->counts[h.lane].torn += h.torn;
	a->last_buf = b ? h.e.buf : -1;
	event_taken(a);
	if (a->skipping)
		return true;
	a->lost_known = true;
	a->lost_first = h.first;
	a->lost_last = h.last;
	lost->lane = h.lane;
	lost->overwritten = over;
	lost->torn = h.torn;
	return true;
}

/* The next record of the RUN or SPAN entry being decoded:
 * SHMLOG_EV_RECORD, or SHMLOG_EV_NONE at its end (damage counted). */
static int run_next(struct shmlog__arc *a, struct shmlog_record *rec)
{
	struct shmlog__arc_rec h;
	int k;
	/* each turn decodes a record: bounded by the run's bytes */
	while ((k = shmlog__arc_run_next(&a->run, &h)) > 0) {
		if (!take_record(a, &h, rec)) {
			k = -1;
			break;
		}
		if (!a->skipping)
			return SHMLOG_EV_RECORD;
	}
	a->in_run = false;
	if (k < 0) { /* damage ends the block, as a damaged entry does */
		a->corrupt++;
		a->blk_pos = a->blk_len;
	}
	return SHMLOG_EV_NONE;
}

/* The next event of the current block, or SHMLOG_EV_NONE at its end. A
 * damaged entry ends the block (its checksum held: a hostile file). */
static int block_next(struct shmlog__arc *a, struct shmlog_record *rec,
		      struct shmlog_lost *lost)
{
	if (a->in_run && run_next(a, rec) == SHMLOG_EV_RECORD)
		return SHMLOG_EV_RECORD;
	struct shmlog_arc_entry e;
	/* each turn moves past an entry: bounded by the block */
	while (shmlog__arc_entry_at(a->blk, a->blk_len, a->blk_pos, &e)) {
		const unsigned char *p = a->blk + a->blk_pos;
		a->blk_pos += e.size;
		struct shmlog__arc_rec h;
		bool ok = true;
		switch (e.type) {
		case SHMLOG_ARC_RECORD:
			ok = shmlog__arc_record_entry(p, e.size, &h) &&
			     take_record(a, &h, rec);
			if (ok && !a->skipping)
				return SHMLOG_EV_RECORD;
			break;
		case SHMLOG_ARC_RUN:
		case SHMLOG_ARC_SPAN:
			ok = e.type == SHMLOG_ARC_RUN
				     ? shmlog__arc_run_begin(&a->run, p, e.size)
				     : shmlog__arc_span_begin(&a->run, p, e.size);
			if (ok) {
				a->in_run = true;
				if (run_next(a, rec) == SHMLOG_EV_RECORD)
					return SHMLOG_EV_RECORD;
			}
			break;
		case SHMLOG_ARC_LOSS:
			ok = e.size >= sizeof(struct shmlog_arc_loss) &&
			     take_loss(a, p, e.size, lost);
			if (ok && !a->skipping)
				return SHMLOG_EV_LOST;
			break;
		case SHMLOG_ARC_BUFFER:
			ok = take_buffer(a, p, e.size);
			break;
		case SHMLOG_ARC_FORMAT:
			ok = e.size >= sizeof(struct shmlog_arc_format) &&
			     take_format(a, p, e.size);
			break;
		default: break; /* a later version's: skipped by its size */
		}
		if (!ok) {
			a->corrupt++;
			break;
		}
	}
	a->blk_pos = a->blk_len = 0;
	a->in_run = false;
	return SHMLOG_EV_NONE;
}

int shmlog__arc_next(struct shmlog__arc *a, struct shmlog_record *rec,
		     struct shmlog_lost *lost)
{
	struct shmlog_record r;
	struct shmlog_lost l;
	if (a->dump && !a->dump_set && !a->skipping)
		dump_end(a);
	/* each turn consumes a block or a file: bounded by what the
	 * directory holds */
	for (;;) {
		int ev = block_next(a, &r, &l);
		if (ev == SHMLOG_EV_RECORD) {
			*rec = r;
			return ev;
		}
		if (ev == SHMLOG_EV_LOST) {
			if (lost)
				*lost = l;
			return ev;
		}
		if (a->fd < 0) {
			if (!next_file(a))
				return SHMLOG_EV_NONE;
			continue;
		}
		if (dump_over(a, a->file_no))
			return SHMLOG_EV_NONE;
		enum shmlog__arc_blk br = read_block(a);
		if (br == SHMLOG__ARC_BLK_OK)
			continue;
		if (br == SHMLOG__ARC_BLK_NOZSTD) {
			/* the rest of this file is out of reach: skipped,
			 * said once */
			a->corrupt++;
			if (!next_file(a) && a->fd >= 0) {
				close(a->fd);
				a->fd = -1;
			}
			if (!a->said_nozstd) {
				a->said_nozstd = true;
				return -ENOTSUP;
			}
			continue;
		}
		/* the end of this file: go on with the next one if any;
		 * else this is the archive's end for now */
		uint64_t no;
		bool newer = find_file(a->dir, a->file_no, false, false, &no) == 0;
		if (!newer) {
			a->skipping = false;
			return SHMLOG_EV_NONE;
		}
		if (br == SHMLOG__ARC_BLK_BAD)
			a->corrupt++;
		/* a block not whole before a newer file: torn, never to
		 * be finished */
		else if (lseek(a->fd, 0, SEEK_END) > (off_t)a->off)
			a->corrupt++;
		if (!next_file(a))
			return SHMLOG_EV_NONE;
	}
}

int shmlog__arc_open(const char *dir, int flags, struct shmlog__arc **out)
{
	if (flags & ~(SHMLOG_READ_TAIL | SHMLOG_READ_DUMP))
		return -EINVAL;
	if (!dir || !*dir)
		return -EINVAL;
	struct stat st;
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	struct shmlog__arc *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	if (snprintf(a->dir, sizeof(a->dir), "%s", dir) >= (int)sizeof(a->dir)) {
		free(a);
		return -ENAMETOOLONG;
	}
	a->fd = -1;
	a->last_buf = -1;
	a->dump = flags & SHMLOG_READ_DUMP;
	uint64_t first = 0;
	int err = find_file(dir, 0, true, (flags & SHMLOG_READ_TAIL) != 0,
			    &first);
	if (err == 0) {
		/* start just before @first: next_file() opens it */
		a->file_no = first;
		if (open_file(a, first) || !read_file_header(a)) {
			if (a->fd >= 0)
				close(a->fd);
			a->fd = -1;
			a->corrupt++;
		}
	} else if (err != -ENOENT) {
		free(a);
		return err;
	}
	a->skipping = (flags & SHMLOG_READ_TAIL) != 0;
	if (a->skipping) {
		struct shmlog_record r;
		struct shmlog_lost l;
		while (shmlog__arc_next(a, &r, &l) != SHMLOG_EV_NONE)
			;
		a->skipping = false;
	}
	*out = a;
	return 0;
}

void shmlog__arc_close(struct shmlog__arc *a)
{
	if (!a)
		return;
	if (a->fd >= 0)
		close(a->fd);
	for (unsigned i = 0; i < ARC_BUFS_MAX; i++)
		buf_free(&a->bufs[i]);
	free(a->blk);
	free(a);
}

/* ---- waiting, books ---- */

/* Where the archive ends now: the newest file's number and size. */
static void arc_end(const struct shmlog__arc *a, uint64_t *no, off_t *size)
{
	*no = 0;
	*size = 0;
	if (find_file(a->dir, 0, true, true, no))
		return;
	char path[PATH_MAX];
	struct stat st;
	if (snprintf(path, sizeof(path), "%s/" SHMLOG_ARC_PREFIX "%016llu"
		     SHMLOG_ARC_SUFFIX, a->dir, (unsigned long long)*no) <
		    (int)sizeof(path) &&
	    stat(path, &st) == 0)
		*size = st.st_size;
}

int shmlog__arc_wait(struct shmlog__arc *a, int timeout_ms)
{
	uint64_t no0, no;
	off_t size0, size;
	arc_end(a, &no0, &size0);
	/* what this reader has not read yet is there already */
	if (no0 != a->file_no || (a->fd >= 0 && size0 > (off_t)a->off) ||
	    (a->fd < 0 && no0))
		return 0;
	/* no notification from the archiver: look every 10 ms */
	for (int waited = 0; timeout_ms < 0 || waited < timeout_ms;
	     waited += 10) {
		struct timespec d = {0, 10 * 1000000};
		if (timeout_ms >= 0 && timeout_ms - waited < 10)
			d.tv_nsec = (long)(timeout_ms - waited) * 1000000;
		if (nanosleep(&d, NULL))
			return -EINTR;
		arc_end(a, &no, &size);
		if (no != no0 || size != size0)
			return 0;
	}
	return -ETIMEDOUT;
}

unsigned shmlog__arc_lanes(const struct shmlog__arc *a)
{
	return a->lanes_max ? a->lanes_max : 1;
}

int shmlog__arc_lost_seq(const struct shmlog__arc *a, uint64_t *first,
			 uint64_t *last)
{
	if (!a->lost_known)
		return -ENOENT;
	*first = a->lost_first;
	*last = a->lost_last;
	return 0;
}

int shmlog__arc_lane_next_seq(const struct shmlog__arc *a, unsigned lane,
			      uint64_t *next)
{
	if (lane >= SHMLOG_LANES_MAX)
		return -EINVAL;
	const struct arc_buf *b =
		a->last_buf >= 0 ? &a->bufs[a->last_buf] : NULL;
	if (!b || lane >= b->src.lanes || !b->known[lane])
		return -ENOENT;
	*next = b->next[lane];
	return 0;
}

int shmlog__arc_lane_stats(const struct shmlog__arc *a, unsigned lane,
			   struct shmlog_lane_stats *st)
{
	if (lane >= SHMLOG_LANES_MAX)
		return -EINVAL;
	const struct arc_lane_count *c = &a->counts[lane];
	struct shmlog_lane_stats s;
	memset(&s, 0, sizeof(s));
	s.read = c->read;
	s.overwritten = c->overwritten;
	s.torn = c->torn;
	s.written = c->read + c->overwritten + c->torn;
	s.corrupt = lane == 0 ? a->corrupt : 0;
	*st = s;
	return 0;
}

static const struct arc_buf *buf_by_path(const struct shmlog__arc *a,
					 const char *path)
{
	if (!path)
		return a->last_buf >= 0 ? &a->bufs[a->last_buf] : NULL;
	for (unsigned i = 0; i < ARC_BUFS_MAX; i++)
		if (a->bufs[i].used && !strcmp(a->bufs[i].path, path))
			return &a->bufs[i];
	return NULL;
}

int shmlog__arc_deferred(const struct shmlog__arc *a, const char **fmt,
			 char *args, size_t cap)
{
	if (!a->deferred)
		return -ENOENT;
	if (fmt)
		*fmt = a->fmt;
	if (args && cap)
		return shmlog__defer_args_json((const unsigned char *)a->msg + 4,
					       a->args_len, args, cap);
	return 0;
}

int shmlog__arc_source(const struct shmlog__arc *a, const char *path,
		       struct shmlog_archive_source *src)
{
	const struct arc_buf *b = buf_by_path(a, path);
	if (!b)
		return -ENOENT;
	*src = b->src;
	src->host = a->had_event ? a->host : a->file_host;
	return 0;
}

int shmlog__arc_next_seq(const struct shmlog__arc *a, const char *path,
			 unsigned lane, uint64_t *next)
{
	const struct arc_buf *b = buf_by_path(a, path);
	if (!b)
		return -ENOENT;
	if (lane >= b->src.lanes)
		return -EINVAL;
	if (!b->known[lane])
		return -ENOENT;
	*next = b->next[lane];
	return 0;
}

int shmlog_reader_open_archive(const char *dir, int flags,
			       shmlog_reader_t **out)
{
	struct shmlog__arc *a;
	int err = shmlog__arc_open(dir, flags, &a);
	if (err)
		return err;
	err = shmlog__reader_wrap_archive(a, flags, out);
	if (err)
		shmlog__arc_close(a);
	return err;
}
