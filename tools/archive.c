/* SPDX-License-Identifier: MIT */
/*
 * `shmlog archive -b B [-b B2 ...] -o DIR`: follow buffers and append
 * every record to files in DIR (src/archive_format.h, docs/archive.md),
 * so that nothing is lost to the ring's wrap while the archiver keeps up.
 *
 * How it stays exact across crashes:
 *  - Records go to the file in blocks, each one write(2) of up to
 *    BLOCK_TARGET bytes with a CRC32C. Whatever a SIGKILL leaves is a
 *    prefix of whole blocks and perhaps a torn one; on start the newest
 *    file is scanned, the torn tail cut (ftruncate) and the position per
 *    buffer and lane taken from what the file holds: its first block's
 *    BUFFER entries advanced by its RECORD and LOSS entries. There is no
 *    other state, so the position and the records never disagree.
 *  - A record whose sequence number is below its lane's position is in
 *    the archive already and skipped; a record above it means the ones
 *    between were lost (overwritten before they were read, or torn): a
 *    LOSS entry says so, with the range, before the record. The first
 *    position of a lane is the buffer's first sequence number, so the
 *    archive accounts for every record a writer ever started: archived +
 *    lost = written.
 *  - A full disk (ENOSPC, EDQUOT): the partial block is cut off, the
 *    archiver says so once and stops reading (the records it holds stay
 *    in memory), tries again every RETRY_MS, and when the write goes
 *    through reads on; what the ring overwrote meanwhile becomes LOSS
 *    entries. Writers never wait for it.
 *  - One archiver per DIR: it holds an flock(2) on DIR/.lock.
 *
 * The drain path formats nothing: it copies each record's header fields,
 * tag and message into the block, a printf-style record's message as the
 * buffer stores it (its format's id and its values: reader_raw.h). The
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

#include "archive_format.h"
#include "cli.h"
#include "reader_raw.h"
#include "shmlog.h"

#define CMD "archive"
#define SOURCES_MAX 64
#define BUFS_MAX 256 /* buffer ids in one archive */
#define BLOCK_TARGET (256u << 10) /* a write(2) once a block holds this */
#define ENTRY_MAX                                                              \
	(sizeof(struct shmlog_arc_record) + SHMLOG_TAG_MAX + SHMLOG_MSG_MAX)
#define OUT_CAP (BLOCK_TARGET + 64 * 1024 + ENTRY_MAX)
#define RETRY_MS 200 /* a full disk is tried again this often */
#define SYNC_MS 1000 /* written data is fdatasync'ed this often */
#define CHECK_MS 500 /* removed or recreated buffers are looked for */
/* Following a writer it keeps up with, the archiver takes what came in
 * at most every BATCH_NAP_US: a turn that found fewer than BATCH_SMALL
 * records is followed by a nap, so that each turn's fixed costs (a look
 * at every lane's head, the wait) are shared by many records. A 16 MiB
 * buffer written at 10 M records/s takes about 15 ms to wrap. */
#define BATCH_SMALL 1024
#define BATCH_NAP_US 1000
/* A block is written when full, when a turn finds nothing new, or once it
 * is this old: what was read reaches the file within it. */
#define BLOCK_MS 100

/* A format of a buffer's table that its records named. */
struct fmtent {
	uint32_t id; /* 0: a free slot */
	uint32_t len; /* 0: the buffer holds no format of that id */
	char *text;
	uint64_t file; /* the file its FORMAT entry went to last */
	uint64_t block; /* the block that named it last (archiver.block_no) */
};

/* A buffer the archive knows: one being read now, or one named by the
 * newest file (kept so that every new file carries its position). */
struct bufent {
	struct fmtent *fmts; /* open addressing, fmt_cap slots */
	uint32_t fmt_cap, fmt_count;
	bool used;
	char path[SHMLOG_ARC_PATH_MAX + 1];
	int64_t created_ns;
	uint64_t ino;
	uint64_t initial_seq;
	unsigned lanes;
	uint64_t *next; /* next sequence number to archive, per lane */
	uint64_t *flushed; /* the same, as the file holds it */
	bool written; /* its BUFFER entry is in the current file */
};

/* A buffer being read. */
struct source {
	const char *name; /* as given to -b */
	char path[512];
	shmlog_reader_t *rd;
	struct bufent *b;
	uint16_t id;
	uint64_t *torn; /* torn records reported before the lane's next one */
	uint64_t *snap; /* each lane's next sequence number, seen earlier */
	int ev; /* a peeked event (merging several buffers), or NONE */
	struct shmlog_record rec;
	struct shmlog_lost lost;
	bool waiting; /* not there yet (follow mode): looked for again */
};

struct archiver {
	/* options */
	const char *dir;
	bool once, quiet;
	uint64_t max_file_size, max_files, max_size, max_age_s;
	/* state */
	struct source src[SOURCES_MAX];
	int nsrc;
	struct bufent bufs[BUFS_MAX];
	int lockfd;
	int fd; /* the current file */
	uint64_t file_no, file_size;
	uint64_t file_start; /* bytes of the file before its first records */
	int64_t file_created_ns;
	unsigned char *out; /* the block being filled: header, then entries */
	size_t out_len;
	uint32_t out_entries;
	bool disk_full;
	uint64_t block_no; /* blocks written so far: the one filled has it */
	uint64_t block_ms; /* mono_ms() when its first entry went in */
	uint64_t unsynced; /* bytes written since the last fdatasync */
	uint64_t records, losses, lost_records;
	uint64_t last_sync_ms, last_check_ms;
	bool gaps_due; /* lanes' positions snapped: close_gaps() when idle */
	uint32_t newer_version; /* the version of a file too new to append to */
	size_t block_target; /* BLOCK_TARGET, less for small files */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nap_us(long us)
{
	struct timespec d = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&d, NULL); /* a signal ends it early: cli_stop is looked at */
}

static void nap_ms(int ms)
{
	nap_us((long)ms * 1000);
}

static void file_path(const struct archiver *a, uint64_t no, char *buf,
		      size_t n)
{
	snprintf(buf, n, "%s/" SHMLOG_ARC_PREFIX "%016" PRIu64 SHMLOG_ARC_SUFFIX,
		 a->dir, no);
}

/* ---- the archive's files ---- */

struct file_info {
	uint64_t no;
	uint64_t size;
	int64_t mtime;
};

static int cmp_file(const void *x, const void *y)
{
	const struct file_info *a = x, *b = y;
	return a->no < b->no ? -1 : a->no > b->no;
}

/* The archive's files, oldest first, in *@out (malloc'ed). */
static int list_files(const struct archiver *a, struct file_info **out,
		      size_t *n)
{
	DIR *d = opendir(a->dir);
	if (!d)
		return -errno;
	struct file_info *v = NULL;
	size_t len = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		uint64_t no;
		struct stat st;
		if (!shmlog__arc_file_number(e->d_name, &no) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (len == cap) {
			cap = cap ? 2 * cap : 64;
			struct file_info *p = realloc(v, cap * sizeof(*v));
			if (!p) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = p;
		}
		v[len++] = (struct file_info){no, (uint64_t)st.st_size,
					      (int64_t)st.st_mtime};
	}
	closedir(d);
	if (len) /* v is NULL for none: qsort wants an array */
		qsort(v, len, sizeof(*v), cmp_file);
	*out = v;
	*n = len;
	return 0;
}

/* ---- buffers known to the archive ---- */

static void bufent_free(struct bufent *b)
{
	for (uint32_t i = 0; i < b->fmt_cap; i++)
		free(b->fmts[i].text);
	free(b->fmts);
	free(b->next);
	free(b->flushed);
	memset(b, 0, sizeof(*b));
}

static int bufent_set(struct bufent *b, const char *path, size_t path_len,
		      int64_t created_ns, uint64_t ino, uint64_t initial_seq,
		      unsigned lanes)
{
	bufent_free(b);
	b->next = calloc(lanes, sizeof(*b->next));
	b->flushed = calloc(lanes, sizeof(*b->flushed));
	if (!b->next || !b->flushed) {
		bufent_free(b);
		return -ENOMEM;
	}
	b->used = true;
	memcpy(b->path, path, path_len);
	b->path[path_len] = '\0';
	b->created_ns = created_ns;
	b->ino = ino;
	b->initial_seq = initial_seq;
	b->lanes = lanes;
	for (unsigned l = 0; l < lanes; l++)
		b->next[l] = b->flushed[l] = initial_seq;
	return 0;
}

/* ---- recovery: what the newest file holds ---- */

static void scan_buffer(struct archiver *a, const unsigned char *p,
			size_t size)
{
	struct shmlog_arc_buffer h;
	memcpy(&h, p, sizeof(h));
	size_t room = ((size_t)h.path_len + 7) & ~(size_t)7;
	if (h.e.buf >= BUFS_MAX || !h.lanes || h.lanes > SHMLOG_LANES_MAX ||
	    h.path_len > SHMLOG_ARC_PATH_MAX || h.known > h.lanes ||
	    size != sizeof(h) + room + (size_t)h.known * 16)
		return;
	struct bufent *b = &a->bufs[h.e.buf];
	if (bufent_set(b, (const char *)p + sizeof(h), h.path_len, h.created_ns,
		       h.ino, h.initial_seq, h.lanes))
		return;
	b->written = true;
	const unsigned char *q = p + sizeof(h) + room;
	for (uint32_t i = 0; i < h.known; i++, q += 16) {
		struct shmlog_arc_lanepos lp;
		memcpy(&lp, q, sizeof(lp));
		if (lp.lane < h.lanes)
			b->next[lp.lane] = b->flushed[lp.lane] = lp.next;
	}
}

static void scan_advance(struct archiver *a, unsigned id, unsigned lane,
			 uint64_t next)
{
	if (id < BUFS_MAX && a->bufs[id].used && lane < a->bufs[id].lanes)
		a->bufs[id].next[lane] = a->bufs[id].flushed[lane] = next;
}

static void scan_entries(struct archiver *a, const unsigned char *p,
			 size_t len)
{
	size_t pos = 0;
	while (pos + sizeof(struct shmlog_arc_entry) <= len) {
		struct shmlog_arc_entry e;
		memcpy(&e, p + pos, sizeof(e));
		if (e.size < sizeof(e) || e.size > len - pos)
			return;
		const unsigned char *q = p + pos;
		if (e.type == SHMLOG_ARC_BUFFER &&
		    e.size >= sizeof(struct shmlog_arc_buffer)) {
			scan_buffer(a, q, e.size);
		} else if (e.type == SHMLOG_ARC_RECORD &&
			   e.size >= sizeof(struct shmlog_arc_record)) {
			struct shmlog_arc_record r;
			memcpy(&r, q, sizeof(r));
			scan_advance(a, r.e.buf, r.lane, r.seq + 1);
		} else if (e.type == SHMLOG_ARC_LOSS &&
			   e.size >= sizeof(struct shmlog_arc_loss)) {
			struct shmlog_arc_loss l;
			memcpy(&l, q, sizeof(l));
			scan_advance(a, l.e.buf, l.lane, l.last + 1);
		}
		pos += e.size;
	}
}

/* Read file @no: its valid length in *@valid, its format version in
 * *@version, the buffers' positions into a->bufs. False if its header is
 * not valid (nothing usable). */
static bool scan_file(struct archiver *a, int fd, uint64_t *valid,
		      uint32_t *version)
{
	struct shmlog_arc_file h;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, SHMLOG_ARC_MAGIC, 8) ||
	    h.version < SHMLOG_ARC_VERSION_MIN ||
	    h.version > SHMLOG_ARC_VERSION || h.header_size != sizeof(h) ||
	    h.crc != shmlog__crc32c(0, &h, offsetof(struct shmlog_arc_file, crc)))
		return false;
	a->file_created_ns = h.created_ns;
	*version = h.version;
	uint64_t off = sizeof(h);
	unsigned char *buf = malloc(SHMLOG_ARC_BLOCK_MAX);
	if (!buf)
		return false;
	bool any = false;
	for (;;) { /* each turn moves past a block: bounded by the file */
		struct shmlog_arc_block b;
		if (pread(fd, &b, sizeof(b), (off_t)off) != (ssize_t)sizeof(b) ||
		    b.magic != SHMLOG_ARC_BLOCK_MAGIC ||
		    b.len > SHMLOG_ARC_BLOCK_MAX ||
		    pread(fd, buf, b.len, (off_t)(off + sizeof(b))) !=
			    (ssize_t)b.len)
			break;
		uint32_t crc = shmlog__crc32c(
			0, &b, offsetof(struct shmlog_arc_block, crc));
		if (shmlog__crc32c(crc, buf, b.len) != b.crc)
			break;
		scan_entries(a, buf, b.len);
		off += sizeof(b) + b.len;
		any = true;
	}
	free(buf);
	*valid = off;
	return any; /* a file without its first block names no buffer */
}

/* Find where the archive ends: the newest file with a valid start, its
 * torn tail cut off, opened for appending. Newer files that never got
 * their first block whole are removed. */
static int recover(struct archiver *a)
{
	struct file_info *files;
	size_t n;
	int err = list_files(a, &files, &n);
	if (err)
		return err;
	a->fd = -1;
	a->file_no = n ? files[n - 1].no : 0;
	while (n) {
		uint64_t no = files[--n].no, valid;
		char path[PATH_MAX];
		file_path(a, no, path, sizeof(path));
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			err = -errno;
			break;
		}
		for (unsigned i = 0; i < BUFS_MAX; i++)
			bufent_free(&a->bufs[i]);
		uint32_t version;
		if (scan_file(a, fd, &valid, &version)) {
			struct stat st;
			if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > valid) {
				if (!a->quiet)
					fprintf(stderr,
						"shmlog " CMD ": %s: cut a torn "
						"tail of %" PRIu64 " bytes\n",
						path,
						(uint64_t)st.st_size - valid);
				if (ftruncate(fd, (off_t)valid)) {
					err = -errno;
					close(fd);
					break;
				}
			}
			a->file_no = no;
			a->file_size = valid;
			a->file_start = sizeof(struct shmlog_arc_file);
			if (version == SHMLOG_ARC_VERSION) {
				a->fd = fd;
			} else {
				/* an older version's: its positions hold, the
				 * records go on in a new file of this one */
				close(fd);
			}
			break;
		}
		struct shmlog_arc_file h;
		if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
		    !memcmp(h.magic, SHMLOG_ARC_MAGIC, 8) &&
		    h.version > SHMLOG_ARC_VERSION) {
			/* a later shmlog's: never cut nor removed */
			a->newer_version = h.version;
			close(fd);
			err = -EPROTONOSUPPORT;
			break;
		}
		/* made but never given its first block: nothing lost */
		close(fd);
		if (unlink(path) && errno != ENOENT) {
			err = -errno;
			break;
		}
	}
	free(files);
	if (err)
		return err;
	if (a->fd >= 0 && lseek(a->fd, (off_t)a->file_size, SEEK_SET) < 0)
		return -errno;
	return 0;
}

/* ---- the block being filled ---- */

static void *out_reserve(struct archiver *a, size_t n)
{
	void *p = a->out + a->out_len;
	a->out_len += n;
	a->out_entries++;
	return p;
}

static void put_buffer(struct archiver *a, unsigned id)
{
	const struct bufent *b = &a->bufs[id];
	size_t plen = strlen(b->path);
	size_t room = (plen + 7) & ~(size_t)7;
	size_t size = sizeof(struct shmlog_arc_buffer) + room + 16 * b->lanes;
	unsigned char *p = out_reserve(a, size);
	struct shmlog_arc_buffer h = {
		.e = {.size = (uint32_t)size,
		      .type = SHMLOG_ARC_BUFFER,
		      .buf = (uint16_t)id},
		.lanes = (uint16_t)b->lanes,
		.path_len = (uint16_t)plen,
		.known = b->lanes,
		.created_ns = b->created_ns,
		.ino = b->ino,
		.initial_seq = b->initial_seq,
	};
	memcpy(p, &h, sizeof(h));
	memset(p + sizeof(h), 0, room);
	memcpy(p + sizeof(h), b->path, plen);
	p += sizeof(h) + room;
	for (unsigned l = 0; l < b->lanes; l++, p += 16) {
		/* the position the file holds: the entries after this one
		 * in the block advance it */
		struct shmlog_arc_lanepos lp = {.lane = l, .next = b->flushed[l]};
		memcpy(p, &lp, sizeof(lp));
	}
}

static void put_loss(struct archiver *a, const struct source *s, unsigned lane,
		     uint64_t first, uint64_t last, uint64_t torn)
{
	uint64_t n = last - first + 1;
	if (torn > n)
		torn = n;
	struct shmlog_arc_loss h = {
		.e = {.size = sizeof(h), .type = SHMLOG_ARC_LOSS, .buf = s->id},
		.lane = (uint16_t)lane,
		.first = first,
		.last = last,
		.overwritten = n - torn,
		.torn = torn,
	};
	memcpy(out_reserve(a, sizeof(h)), &h, sizeof(h));
	a->losses++;
	a->lost_records += n;
}

/* ---- formats of printf-style records ---- */

/* Format @id's slot in @b's table: its own, or the free one it goes to
 * (the table is at most half full). */
static struct fmtent *fmt_slot(const struct bufent *b, uint32_t id)
{
	uint32_t mask = b->fmt_cap - 1;
	uint32_t i = (id >> 3) * 0x9e3779b1u & mask;
	while (b->fmts[i].id && b->fmts[i].id != id)
		i = (i + 1) & mask;
	return &b->fmts[i];
}

/* Format @id of @s's buffer, looked up in the buffer's table the first
 * time; NULL only without memory. */
static struct fmtent *fmt_get(struct source *s, uint32_t id)
{
	struct bufent *b = s->b;
	if (b->fmt_cap) {
		struct fmtent *f = fmt_slot(b, id);
		if (f->id)
			return f;
	}
	if (b->fmt_count + 1 > b->fmt_cap / 2) {
		uint32_t cap = b->fmt_cap ? 2 * b->fmt_cap : 64;
		struct fmtent *old = b->fmts, *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		uint32_t old_cap = b->fmt_cap;
		b->fmts = v;
		b->fmt_cap = cap;
		for (uint32_t i = 0; i < old_cap; i++)
			if (old[i].id)
				*fmt_slot(b, old[i].id) = old[i];
		free(old);
	}
	static char text[SHMLOG_MSG_MAX + 1];
	int n = s->rd ? shmlog__reader_format_of(s->rd, id, text, sizeof(text))
		      : -ENOENT;
	char *copy = NULL;
	if (n > 0 && !(copy = malloc((size_t)n + 1)))
		return NULL;
	if (copy)
		memcpy(copy, text, (size_t)n + 1);
	struct fmtent *f = fmt_slot(b, id);
	*f = (struct fmtent){.id = id,
			     .len = copy ? (uint32_t)n : 0,
			     .text = copy,
			     .file = UINT64_MAX,
			     .block = UINT64_MAX};
	b->fmt_count++;
	return f;
}

static size_t format_size(const struct fmtent *f)
{
	return sizeof(struct shmlog_arc_format) + ((f->len + 7) & ~7u);
}

static void put_format(struct archiver *a, unsigned id, struct fmtent *f)
{
	size_t size = format_size(f);
	unsigned char *p = out_reserve(a, size);
	struct shmlog_arc_format h = {
		.e = {.size = (uint32_t)size,
		      .type = SHMLOG_ARC_FORMAT,
		      .buf = (uint16_t)id},
		.id = f->id,
		.len = f->len,
	};
	memcpy(p, &h, sizeof(h));
	memset(p + size - 8, 0, 8);
	memcpy(p + sizeof(h), f->text, f->len);
	f->file = a->file_no;
}

/* The FORMAT entry a deferred record @r of @s needs before it, unless
 * the file has it already. */
static void need_format(struct archiver *a, struct source *s,
			const struct shmlog_record *r)
{
	uint32_t id;
	if (r->msg_len < 4)
		return;
	memcpy(&id, r->msg, 4);
	if (!id)
		return; /* no format has id 0: the record reads "<no format>" */
	struct fmtent *f = fmt_get(s, id);
	if (!f || !f->len)
		return; /* none in the buffer: read as a reader of it would */
	f->block = a->block_no;
	if (f->file != a->file_no)
		put_format(a, s->id, f);
}

/* Store @v, of the type of @type's @field, at that field's place in @p. */
#define PUT(p, type, field, v)                                                 \
	do {                                                                   \
		__typeof__(((type *)0)->field) v_ = (v);                       \
		memcpy((p) + offsetof(type, field), &v_, sizeof(v_));          \
	} while (0)

/* memcpy() for the short lengths of tags and messages: words, the last
 * one overlapping. (GCC expands a memcpy() of a length it knows to be
 * bounded into `rep movsq`, whose start-up costs more than a short copy
 * itself; the loop must not become a memcpy() call either.) */
#if defined(__GNUC__) && !defined(__clang__) /* GCC's own attribute */
#define NO_LOOP_TO_MEMCPY                                                      \
	__attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NO_LOOP_TO_MEMCPY
#endif
NO_LOOP_TO_MEMCPY static inline void copy_short(unsigned char *dst,
						const char *src, size_t n)
{
	if (n >= 256) {
		memcpy(dst, src, n);
	} else if (n >= 16) {
		unsigned char w[16];
		for (size_t i = 0; i + 16 < n; i += 16) {
			memcpy(w, src + i, 16);
			memcpy(dst + i, w, 16);
		}
		memcpy(w, src + n - 16, 16);
		memcpy(dst + n - 16, w, 16);
	} else if (n >= 8) {
		uint64_t w, v;
		memcpy(&w, src, 8);
		memcpy(&v, src + n - 8, 8);
		memcpy(dst, &w, 8);
		memcpy(dst + n - 8, &v, 8);
	} else if (n >= 4) {
		uint32_t w, v;
		memcpy(&w, src, 4);
		memcpy(&v, src + n - 4, 4);
		memcpy(dst, &w, 4);
		memcpy(dst + n - 4, &v, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			dst[i] = (unsigned char)src[i];
	}
}

static void put_record(struct archiver *a, struct source *s,
		       const struct shmlog_record *r)
{
	size_t tl = r->tag_len > SHMLOG_TAG_MAX ? SHMLOG_TAG_MAX : r->tag_len;
	size_t ml = r->msg_len > SHMLOG_MSG_MAX ? SHMLOG_MSG_MAX : r->msg_len;
	size_t size = sizeof(struct shmlog_arc_record) + tl + ml;
	bool deferred = r->flags & SHMLOG_REC_DEFERRED;
	if (deferred)
		need_format(a, s, r);
	unsigned char *p = out_reserve(a, size);
	/* field by field into the block: a struct built on the stack and
	 * copied stalls on its own stores (store forwarding) */
	uint8_t flags = (uint8_t)((r->flags & SHMLOG_REC_TRUNCATED) |
				  (deferred ? SHMLOG_ARC_REC_DEFERRED : 0));
	PUT(p, struct shmlog_arc_record, e.size, (uint32_t)size);
	PUT(p, struct shmlog_arc_record, e.type, (uint8_t)SHMLOG_ARC_RECORD);
	PUT(p, struct shmlog_arc_record, e.reserved, (uint8_t)0);
	PUT(p, struct shmlog_arc_record, e.buf, s->id);
	PUT(p, struct shmlog_arc_record, lane, (uint16_t)r->lane);
	PUT(p, struct shmlog_arc_record, prio, (uint8_t)r->prio);
	PUT(p, struct shmlog_arc_record, flags, flags);
	PUT(p, struct shmlog_arc_record, pid, r->pid);
	PUT(p, struct shmlog_arc_record, tid, r->tid);
	PUT(p, struct shmlog_arc_record, tag_len, (uint16_t)tl);
	PUT(p, struct shmlog_arc_record, msg_len, (uint16_t)ml);
	PUT(p, struct shmlog_arc_record, seq, r->seq);
	PUT(p, struct shmlog_arc_record, time_ns, r->time_ns);
	PUT(p, struct shmlog_arc_record, raw_time, r->raw_time);
	const size_t hsize = sizeof(struct shmlog_arc_record);
	copy_short(p + hsize, r->tag, tl);
	copy_short(p + hsize + tl, r->msg, ml);
	a->records++;
}

/* A record read from @s: skipped if archived already, after a LOSS entry
 * if records before it are missing. */
static void take_record(struct archiver *a, struct source *s,
			const struct shmlog_record *r)
{
	struct bufent *b = s->b;
	unsigned lane = r->lane;
	if (lane >= b->lanes)
		return;
	int64_t ahead = (int64_t)(r->seq - b->next[lane]);
	if (ahead < 0)
		return; /* in the archive already (read again after a restart) */
	if (ahead > 0)
		put_loss(a, s, lane, b->next[lane], r->seq - 1, s->torn[lane]);
	s->torn[lane] = 0;
	b->next[lane] = r->seq + 1;
	put_record(a, s, r);
}

/* ---- writing blocks, files, rotation ---- */

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) { /* each turn writes something or fails */
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -ENOSPC;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void seal_block(struct archiver *a, unsigned char *blk, size_t len,
		       uint32_t entries)
{
	struct shmlog_arc_block h = {
		.magic = SHMLOG_ARC_BLOCK_MAGIC,
		.len = (uint32_t)(len - sizeof(h)),
		.entries = entries,
	};
	uint32_t crc = shmlog__crc32c(0, &h, offsetof(struct shmlog_arc_block, crc));
	h.crc = shmlog__crc32c(crc, blk + sizeof(h), len - sizeof(h));
	memcpy(blk, &h, sizeof(h));
	(void)a;
}

/* Start file a->file_no + 1: its header and a first block of every known
 * buffer's BUFFER entry, one write(2). */
static int new_file(struct archiver *a)
{
	uint64_t no = a->file_no + 1;
	char path[PATH_MAX];
	file_path(a, no, path, sizeof(path));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		      0640);
	if (fd < 0)
		return -errno;
	size_t cap = sizeof(struct shmlog_arc_file) +
		     sizeof(struct shmlog_arc_block);
	for (unsigned i = 0; i < BUFS_MAX; i++) {
		const struct bufent *b = &a->bufs[i];
		if (!b->used)
			continue;
		cap += sizeof(struct shmlog_arc_buffer) + SHMLOG_ARC_PATH_MAX +
		       8 + 16 * b->lanes;
		for (uint32_t k = 0; k < b->fmt_cap; k++)
			if (b->fmts[k].len && b->fmts[k].block == a->block_no)
				cap += format_size(&b->fmts[k]);
	}
	unsigned char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		unlink(path);
		return -ENOMEM;
	}
	struct shmlog_arc_file h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SHMLOG_ARC_MAGIC, 8);
	h.version = SHMLOG_ARC_VERSION;
	h.header_size = sizeof(h);
	h.file_no = no;
	h.created_ns = wall_ns();
	gethostname(h.host, sizeof(h.host) - 1);
	h.crc = shmlog__crc32c(0, &h, offsetof(struct shmlog_arc_file, crc));
	memcpy(buf, &h, sizeof(h));
	/* the BUFFER entries go through the block being filled: moved
	 * aside, then back */
	unsigned char *saved_out = a->out;
	size_t saved_len = a->out_len;
	uint32_t saved_entries = a->out_entries;
	a->out = buf + sizeof(h);
	a->out_len = sizeof(struct shmlog_arc_block);
	a->out_entries = 0;
	for (unsigned i = 0; i < BUFS_MAX; i++) {
		a->bufs[i].written = a->bufs[i].used;
		if (a->bufs[i].used)
			put_buffer(a, i);
	}
	/* the formats the block being filled names: it goes to this file */
	for (unsigned i = 0; i < BUFS_MAX; i++) {
		struct bufent *b = &a->bufs[i];
		for (uint32_t k = 0; b->used && k < b->fmt_cap; k++) {
			struct fmtent *f = &b->fmts[k];
			if (f->len && f->block == a->block_no) {
				put_format(a, i, f);
				f->file = no;
			}
		}
	}
	seal_block(a, a->out, a->out_len, a->out_entries);
	size_t len = sizeof(h) + a->out_len;
	a->out = saved_out;
	a->out_len = saved_len;
	a->out_entries = saved_entries;
	int err = write_all(fd, buf, len);
	free(buf);
	if (err) {
		close(fd);
		unlink(path);
		return err;
	}
	if (a->fd >= 0) {
		fdatasync(a->fd);
		close(a->fd);
	}
	a->fd = fd;
	a->file_no = no;
	a->file_size = a->file_start = len;
	a->file_created_ns = h.created_ns;
	a->unsynced = len;
	return 0;
}

/* Remove the oldest files while a limit is passed; never the current. */
static void prune(struct archiver *a)
{
	if (!a->max_files && !a->max_size && !a->max_age_s)
		return;
	struct file_info *f;
	size_t n;
	if (list_files(a, &f, &n))
		return;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += f[i].size;
	int64_t now = (int64_t)time(NULL);
	for (size_t i = 0; i + 1 < n && f[i].no != a->file_no; i++) {
		bool over = (a->max_files && n - i > a->max_files) ||
			    (a->max_size && total > a->max_size) ||
			    (a->max_age_s &&
			     now - f[i].mtime > (int64_t)a->max_age_s);
		if (!over)
			break;
		char path[PATH_MAX];
		file_path(a, f[i].no, path, sizeof(path));
		if (unlink(path) == 0)
			total -= f[i].size;
	}
	free(f);
}

/* Is it time for a new file before @len more bytes? */
static bool want_rotate(const struct archiver *a, size_t len)
{
	if (a->fd < 0)
		return true;
	if (a->max_file_size && a->file_size + len > a->max_file_size &&
	    a->file_size > a->file_start)
		return true;
	if (a->max_age_s) {
		/* files age out in steps of a tenth of the age allowed */
		int64_t step = (int64_t)a->max_age_s * 100000000;
		if (step < 1000000000)
			step = 1000000000;
		if (wall_ns() - a->file_created_ns > step)
			return true;
	}
	return false;
}

static bool disk_full_err(int err)
{
	return err == -ENOSPC || err == -EDQUOT || err == -EFBIG;
}

static void say_disk_full(struct archiver *a, int err)
{
	if (a->disk_full)
		return;
	a->disk_full = true;
	fprintf(stderr,
		"shmlog " CMD ": cannot write to %s: %s: holding what was read "
		"and trying again every %d ms; records the buffers overwrite "
		"meanwhile are written as losses. Free some space (or lower "
		"--max-size)\n",
		a->dir, strerror(-err), RETRY_MS);
}

/* Write the block being filled. 0, -ENOSPC and the like (the block kept,
 * the file as it was before), or another error. */
static int flush(struct archiver *a)
{
	if (a->out_len <= sizeof(struct shmlog_arc_block))
		return 0;
	int err = 0;
	bool rotated = false;
	if (want_rotate(a, a->out_len)) {
		err = new_file(a);
		rotated = !err;
	}
	if (!err) {
		seal_block(a, a->out, a->out_len, a->out_entries);
		err = write_all(a->fd, a->out, a->out_len);
		if (err) {
			/* cut what part of the block made it: the file ends
			 * with whole blocks */
			if (ftruncate(a->fd, (off_t)a->file_size) == 0)
				lseek(a->fd, (off_t)a->file_size, SEEK_SET);
		}
	}
	if (err) {
		if (disk_full_err(err))
			say_disk_full(a, err);
		return err;
	}
	a->file_size += a->out_len;
	a->unsynced += a->out_len;
	a->block_no++;
	/* the total grows with the current file too */
	if (rotated || a->max_size || a->max_age_s)
		prune(a);
	a->out_len = sizeof(struct shmlog_arc_block);
	a->out_entries = 0;
	for (unsigned i = 0; i < BUFS_MAX; i++)
		if (a->bufs[i].used)
			memcpy(a->bufs[i].flushed, a->bufs[i].next,
			       a->bufs[i].lanes * sizeof(uint64_t));
	if (a->disk_full) {
		a->disk_full = false;
		fprintf(stderr,
			"shmlog " CMD ": writing to %s again; records lost so "
			"far: %" PRIu64 " (shown as losses)\n",
			a->dir, a->lost_records);
	}
	return 0;
}

static void sync_now(struct archiver *a)
{
	if (a->fd >= 0 && a->unsynced) {
		fdatasync(a->fd);
		a->unsynced = 0;
	}
}

/* ---- sources ---- */

/* The buffer's first sequence number: what a lane that wrote nothing
 * would number its next record. */
static int initial_seq(shmlog_reader_t *rd, uint64_t *out)
{
	uint64_t next;
	struct shmlog_lane_stats st;
	int err = shmlog_reader_lane_next_seq(rd, 0, &next);
	if (!err)
		err = shmlog_reader_lane_stats(rd, 0, &st);
	if (!err)
		*out = next - st.written;
	return err;
}

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
	struct shmlog_info info;
	struct stat st;
	uint64_t first;
	err = shmlog_stat(s->name, &info);
	if (!err && stat(s->path, &st))
		err = -errno;
	if (!err)
		err = initial_seq(rd, &first);
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

/* One source: its events in batches, straight into the block. */
static uint64_t drain_one(struct archiver *a)
{
	struct source *s = &a->src[0];
	if (!s->rd || cli_stop || a->out_len >= a->block_target)
		return 0;
	int n = shmlog__reader_drain(s->rd, 4096,
				     a->block_target - a->out_len, drain_take, a);
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

static void wait_for_records(struct archiver *a)
{
	int per = a->nsrc > 1 ? 20 : 100;
	for (int i = 0; i < a->nsrc && !cli_stop; i++)
		if (a->src[i].rd && shmlog_reader_wait(a->src[i].rd, per) == 0) {
			nap_us(BATCH_NAP_US); /* what comes with it, too */
			return;
		}
	bool any = false;
	for (int i = 0; i < a->nsrc; i++)
		any |= a->src[i].rd != NULL;
	if (!any)
		nap_ms(100);
}

/* The periodic chores: sync, buffers created again. */
static void chores(struct archiver *a)
{
	uint64_t now = mono_ms();
	if (now - a->last_sync_ms >= SYNC_MS) {
		a->last_sync_ms = now;
		sync_now(a);
	}
	if (!a->once && now - a->last_check_ms >= CHECK_MS) {
		a->last_check_ms = now;
		sources_check(a);
	}
}

static int run(struct archiver *a)
{
	/* --once: rounds of draining until a look finds nothing new; a
	 * bound, as writers may never stop */
	unsigned rounds = 0;
	uint64_t last_gaps_ms = mono_ms();
	while (!cli_stop) {
		if (a->disk_full) {
			nap_ms(RETRY_MS);
			int err = flush(a);
			if (err && !disk_full_err(err))
				return err;
			continue;
		}
		uint64_t n = drain(a);
		bool some = a->out_len > sizeof(struct shmlog_arc_block);
		if (!some)
			a->block_ms = 0;
		else if (!a->block_ms)
			a->block_ms = mono_ms();
		if (a->out_len >= a->block_target || (some && !n) ||
		    (some && mono_ms() - a->block_ms >= BLOCK_MS)) {
			int err = flush(a);
			if (err && !disk_full_err(err))
				return err;
			if (err)
				continue;
		}
		chores(a);
		if (n) {
			if (!a->once && n < BATCH_SMALL)
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
	sync_now(a);
	return err;
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
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/.lock", a->dir);
	a->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
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
	free(a->out);
}

int cmd_archive(int argc, char **argv)
{
	static struct archiver a; /* large: keep it off the stack */
	memset(&a, 0, sizeof(a));
	a.fd = a.lockfd = -1;
	a.max_file_size = 64u << 20;
	int rc = parse(&a, argc, argv);
	if (rc >= 0)
		return rc;
	a.out = malloc(OUT_CAP);
	if (!a.out)
		return cli_fail(CMD, -ENOMEM);
	a.out_len = sizeof(struct shmlog_arc_block);
	/* a block, its header and the largest record fit in a file of
	 * --max-file-size, after the file's first block */
	a.block_target = BLOCK_TARGET;
	if (a.max_file_size / 4 < a.block_target)
		a.block_target = a.max_file_size / 4;
	if (a.block_target < 4096)
		a.block_target = 4096;
	if ((rc = open_dir(&a)) != 0)
		goto out;
	int err = recover(&a);
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
	if (err) {
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
out:
	archiver_free(&a);
	return rc;
}
