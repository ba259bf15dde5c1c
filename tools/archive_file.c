/* SPDX-License-Identifier: MIT */
/*
 * `shmlog archive`: the directory's files (archive.h). Recovery takes the
 * position from the newest file (archive_codec.h parses it, as the
 * library's reader does); blocks are sealed into the stage that takes them
 * to the current file (archive_disk.c); a new file starts with every
 * known buffer's identity and position; the oldest files go first when a
 * limit is passed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "archive_codec.h"
#include "archive_zstd.h"

/* File @no's name in the archive's directory (a->dir_fd). */
static void file_name(uint64_t no, char *buf, size_t n)
{
	snprintf(buf, n, SHMLOG_ARC_PREFIX "%016" PRIu64 SHMLOG_ARC_SUFFIX, no);
}

/* Is DIR still the directory this archiver locked, its .lock the file it
 * holds? Removed (or removed and made again, where another archiver may
 * hold the new lock), its files are not this archiver's to make or
 * remove: a->dir_lost then, and the archiver stops (archive.c). Its files
 * are made, named and removed in the directory it opened (a->dir_fd), so
 * a directory made again under the same path is never written to; this
 * look is what stops the archiver then, rather than have it fail at its
 * next file. */
bool dir_ours(struct archiver *a)
{
	char path[PATH_MAX];
	struct stat held, named;
	snprintf(path, sizeof(path), "%s/.lock", a->dir);
	if (fstat(a->lockfd, &held) == 0 && stat(path, &named) == 0 &&
	    held.st_dev == named.st_dev && held.st_ino == named.st_ino)
		return true;
	a->dir_lost = true;
	return false;
}

/* A new file's name until its header is on disk: no archive file's to
 * readers and recovery (shmlog__arc_file_number()). */
#define HIDDEN_SUFFIX ".new"

static void hidden_name(uint64_t no, char *buf, size_t n)
{
	snprintf(buf, n,
		 SHMLOG_ARC_PREFIX "%016" PRIu64 SHMLOG_ARC_SUFFIX HIDDEN_SUFFIX,
		 no);
}

/* The archive's directory, to read: a stream of its own over a->dir_fd
 * (NULL, errno set, if none). */
static DIR *dir_read(const struct archiver *a)
{
	int fd = openat(a->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* Remove new files a killed run left unnamed (an archive file's name and
 * HIDDEN_SUFFIX). The positions are the named files', so whatever blocks
 * they hold are read again from the buffers, or counted lost. */
static void remove_hidden(const struct archiver *a)
{
	DIR *d = dir_read(a);
	if (!d)
		return;
	struct dirent *e;
	size_t slen = strlen(HIDDEN_SUFFIX);
	/* each turn takes an entry: bounded by the directory */
	while ((e = readdir(d))) {
		char name[sizeof(e->d_name)];
		size_t n = strlen(e->d_name);
		uint64_t no;
		if (n <= slen || strcmp(e->d_name + n - slen, HIDDEN_SUFFIX))
			continue;
		memcpy(name, e->d_name, n - slen);
		name[n - slen] = '\0';
		if (shmlog__arc_file_number(name, &no))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
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
	DIR *d = dir_read(a);
	if (!d)
		return -errno;
	struct file_info *v = NULL;
	size_t len = 0, cap = 0;
	uint64_t no;
	const char *name;
	while (shmlog__arc_dir_next(d, &no, &name)) {
		struct stat st;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) ||
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

/* The version this run's files say: the oldest that holds what it
 * writes (readers of version 4 read an archive made without --zstd). */
static uint32_t file_version(const struct archiver *a)
{
	return a->zstd ? SHMLOG_ARC_VERSION : SHMLOG_ARC_VERSION_PLAIN;
}

void bufent_free(struct bufent *b)
{
	struct fmtent *f = b->fmts.v;
	for (uint32_t i = 0; i < b->fmts.cap; i++)
		free(f[i].text);
	free(b->fmts.v);
	free(b->next);
	free(b->flushed);
	memset(b, 0, sizeof(*b));
}

int bufent_set(struct bufent *b, const char *path, size_t path_len,
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
	const char *path;
	const unsigned char *q;
	if (!shmlog__arc_buffer_entry(p, size, BUFS_MAX, &h, &path, &q))
		return;
	struct bufent *b = &a->bufs[h.e.buf];
	if (bufent_set(b, path, h.path_len, h.created_ns, h.ino,
		       h.initial_seq, h.lanes))
		return;
	b->written = true;
	for (uint32_t i = 0; i < h.known; i++) {
		struct shmlog_arc_lanepos lp;
		if (shmlog__arc_lanepos_at(&h, q, i, &lp))
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
	struct shmlog_arc_entry e;
	struct shmlog__arc_rec r;
	/* each turn moves past an entry: bounded by the block */
	for (size_t pos = 0; shmlog__arc_entry_at(p, len, pos, &e);
	     pos += e.size) {
		const unsigned char *q = p + pos;
		if (e.type == SHMLOG_ARC_BUFFER) {
			scan_buffer(a, q, e.size);
		} else if (e.type == SHMLOG_ARC_RECORD &&
			   shmlog__arc_record_entry(q, e.size, &r)) {
			scan_advance(a, r.buf, r.lane, r.seq + 1);
		} else if ((e.type == SHMLOG_ARC_RUN &&
			    shmlog__arc_run_begin(a->scan, q, e.size)) ||
			   (e.type == SHMLOG_ARC_SPAN &&
			    shmlog__arc_span_begin(a->scan, q, e.size))) {
			/* bounded by the run's bytes */
			while (shmlog__arc_run_next(a->scan, &r) > 0)
				scan_advance(a, r.buf, r.lane, r.seq + 1);
		} else if (e.type == SHMLOG_ARC_LOSS &&
			   e.size >= sizeof(struct shmlog_arc_loss)) {
			struct shmlog_arc_loss l;
			memcpy(&l, q, sizeof(l));
			scan_advance(a, l.e.buf, l.lane, l.last + 1);
		}
	}
}

/* Read the blocks of file @fd, whose header @h is valid: its valid
 * length in *@valid, the buffers' positions into a->bufs. False if it
 * has no whole first block (nothing usable). */
static bool scan_file(struct archiver *a, int fd,
		      const struct shmlog_arc_file *h, uint64_t *valid)
{
	a->file_created_ns = h->created_ns;
	uint64_t off = sizeof(*h);
	unsigned char *buf = NULL;
	size_t cap = 0;
	uint32_t len;
	bool any = false;
	a->scan = malloc(sizeof(*a->scan));
	/* each turn moves past a block: bounded by the file */
	while (a->scan && shmlog__arc_block_read(fd, &off, &buf, &cap, &len) ==
				  SHMLOG__ARC_BLK_OK) {
		scan_entries(a, buf, len);
		any = true;
	}
	free(buf);
	free(a->scan);
	a->scan = NULL;
	*valid = off;
	return any; /* a file without its first block names no buffer */
}

/* Find where the archive ends: the newest file with a valid start, its
 * torn tail cut off, opened for appending. Newer files that never got
 * their first block whole are removed. */
int recover(struct archiver *a)
{
	struct file_info *files;
	size_t n;
	remove_hidden(a);
	int err = list_files(a, &files, &n);
	if (err)
		return err;
	a->fd = -1;
	a->file_no = n ? files[n - 1].no : 0;
	for (size_t i = 0; i < n; i++)
		a->total_size += files[i].size;
	while (n) {
		uint64_t no = files[--n].no, valid;
		char path[PATH_MAX];
		file_name(no, path, sizeof(path));
		int fd = openat(a->dir_fd, path,
				O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			err = -errno;
			break;
		}
		for (unsigned i = 0; i < BUFS_MAX; i++)
			bufent_free(&a->bufs[i]);
		struct shmlog_arc_file h;
		int hr = shmlog__arc_file_header(fd, &h);
		if (!hr && h.version > SHMLOG_ARC_VERSION_PLAIN &&
		    !shmlog__zstd_available())
			hr = -EPROTONOSUPPORT; /* blocks it cannot read: never cut */
		if (!hr && scan_file(a, fd, &h, &valid)) {
			struct stat st;
			if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > valid) {
				if (!a->quiet)
					fprintf(stderr,
						"shmlog " CMD ": %s/%s: cut a "
						"torn tail of %" PRIu64
						" bytes\n",
						a->dir, path,
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
			if (h.version >= file_version(a)) {
				a->fd = fd; /* it may hold what this run writes */
				err = stage_begin(a, path);
			} else {
				/* an older version's (or plain, and this run
				 * compresses): its positions hold, the records
				 * go on in a new file of this one */
				close(fd);
			}
			break;
		}
		if (hr == -EPROTONOSUPPORT) {
			/* a later shmlog's: never cut nor removed */
			a->newer_version = h.version;
			close(fd);
			err = -EPROTONOSUPPORT;
			break;
		}
		/* made but never given its first block: nothing lost */
		close(fd);
		if (unlinkat(a->dir_fd, path, 0) && errno != ENOENT) {
			err = -errno;
			break;
		}
	}
	free(files);
	return err;
}

/* ---- writing blocks, files, rotation ---- */

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
 * buffer's BUFFER entry. The current file's last bytes, its end, then
 * these and the new file's name go to the syncer, in that order
 * (stage_next_file()): its positions say the file before is whole. */
int new_file(struct archiver *a)
{
	if (!dir_ours(a))
		return -ESTALE;
	uint64_t no = a->file_no + 1;
	char path[PATH_MAX], hidden[PATH_MAX];
	file_name(no, path, sizeof(path));
	hidden_name(no, hidden, sizeof(hidden));
	int fd = openat(a->dir_fd, hidden,
			O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
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
		const struct fmtent *f = b->fmts.v;
		for (uint32_t k = 0; k < b->fmts.cap; k++)
			if (f[k].len && f[k].block == a->block_no)
				cap += format_size(&f[k]);
	}
	unsigned char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		unlinkat(a->dir_fd, hidden, 0);
		return -ENOMEM;
	}
	struct shmlog_arc_file h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SHMLOG_ARC_MAGIC, 8);
	h.version = file_version(a);
	h.header_size = sizeof(h);
	h.file_no = no;
	h.created_ns = wall_ns();
	gethostname(h.host, sizeof(h.host) - 1);
	h.crc = shmlog__crc32c(0, &h, offsetof(struct shmlog_arc_file, crc));
	memcpy(buf, &h, sizeof(h));
	/* the BUFFER entries go through the block being filled: moved
	 * aside (its run closed first), then back */
	run_end(a);
	unsigned char *saved_out = a->out;
	size_t saved_len = a->out_len;
	uint32_t saved_entries = a->out_entries;
	a->out = buf + sizeof(h);
	out_reset(a);
	for (unsigned i = 0; i < BUFS_MAX; i++) {
		a->bufs[i].written = a->bufs[i].used;
		if (a->bufs[i].used)
			put_buffer(a, i);
	}
	/* the formats the block being filled names: it goes to this file */
	for (unsigned i = 0; i < BUFS_MAX; i++) {
		struct bufent *b = &a->bufs[i];
		struct fmtent *fmts = b->fmts.v;
		for (uint32_t k = 0; b->used && k < b->fmts.cap; k++) {
			struct fmtent *f = &fmts[k];
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
	/* its blocks are reserved by the drain at its first block, before
	 * that is sealed (reserve_ahead()): a reservation of the syncer's
	 * came after blocks were sealed, and a full disk was then found by
	 * the writes (a torn block, measured under ASan) */
	int err = stage_next_file(a, fd, hidden, path, buf, len);
	if (err) {
		free(buf);
		close(fd);
		unlinkat(a->dir_fd, hidden, 0);
		return err;
	}
	a->fd = fd;
	a->reserved = 0;
	a->file_no = no;
	a->file_size = a->file_start = len;
	a->file_created_ns = h.created_ns;
	a->unsynced = len;
	return 0;
}

/* Remove the oldest files while a limit is passed; never the current.
 * Not while a new file waits for its name (sync_naming()): the files are
 * counted once they all have one (a->prune_due, the drain's chores). */
void prune_files(struct archiver *a)
{
	if ((!a->max_files && !a->max_size && !a->max_age_s) || !dir_ours(a))
		return;
	a->prune_due = sync_naming(a);
	if (a->prune_due)
		return;
	struct file_info *f;
	size_t n;
	if (list_files(a, &f, &n))
		return;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (f[i].no == a->file_no)
			f[i].size = a->file_size; /* some of it staged still */
		total += f[i].size;
	}
	a->total_size = total;
	int64_t now = (int64_t)time(NULL);
	for (size_t i = 0; i + 1 < n && f[i].no != a->file_no; i++) {
		bool over = (a->max_files && n - i > a->max_files) ||
			    (a->max_size && total > a->max_size) ||
			    (a->max_age_s &&
			     now - f[i].mtime > (int64_t)a->max_age_s);
		if (!over)
			break;
		char path[PATH_MAX];
		file_name(f[i].no, path, sizeof(path));
		if (unlinkat(a->dir_fd, path, 0) == 0)
			total -= f[i].size;
	}
	a->total_size = total;
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

/* Blocks for the next @len bytes of the current file and RESERVE_STEP
 * more, reserved beyond its end (FALLOC_FL_KEEP_SIZE: readers, recovery
 * and the size limits see the bytes written, no more), within
 * --max-file-size and --max-size; without the room for the step, the
 * room for the @len bytes alone. This is how a full disk is found before
 * a block is sealed, while the block can still wait (the syncer's writes
 * then land in room reserved): -ENOSPC or -EDQUOT. A filesystem without
 * fallocate(2) gets plain writes, and the syncer finds a full disk. */
static int reserve_ahead(struct archiver *a, size_t len)
{
	uint64_t end = a->file_size + len;
	if (end <= a->reserved || a->reserved == UINT64_MAX)
		return 0; /* reserved already, or not to be */
	uint64_t want = a->file_size + RESERVE_STEP;
	if (a->max_file_size && want > a->max_file_size)
		want = a->max_file_size;
	if (a->max_size) {
		uint64_t room = a->max_size > a->total_size
					? a->max_size - a->total_size
					: 0;
		if (want - a->file_size > room)
			want = a->file_size + room;
	}
	if (want > end &&
	    fallocate(a->fd, FALLOC_FL_KEEP_SIZE, (off_t)a->file_size,
		      (off_t)(want - a->file_size)) == 0) {
		a->reserved = want;
		return 0;
	}
	if (fallocate(a->fd, FALLOC_FL_KEEP_SIZE, (off_t)a->file_size,
		      (off_t)len) == 0) {
		a->reserved = end;
		return 0;
	}
	if (disk_full_err(-errno))
		return -errno;
	a->reserved = UINT64_MAX;
	return 0;
}

/* The current file's blocks past its end given back, a killed run's
 * too: a file left behind takes the room of what it holds. (A failure
 * costs space, not correctness.) */
void release_reserved(struct archiver *a)
{
	if (a->fd >= 0 && file_cut(a->fd, a->file_size) == 0)
		a->reserved = 0;
}

/* --zstd: the sealed block a->out compressed, a ZBLK, in its place: its
 * length; as it was if it does not shrink (or zstd fails: a plain block
 * is as good). */
static size_t zstd_block(struct archiver *a)
{
	const size_t hdr = sizeof(struct shmlog_arc_block);
	size_t need = hdr + shmlog__zstd_bound(a->out_len - hdr);
	if (need > a->zout_cap) {
		unsigned char *p = realloc(a->zout, need);
		if (!p)
			return a->out_len;
		a->zout = p;
		a->zout_cap = need;
	}
	long k = shmlog__zstd_pack(&a->zctx, a->zstd_level, a->out + hdr,
				   a->out_len - hdr, a->zout + hdr,
				   a->zout_cap - hdr);
	if (k <= 0 || (size_t)k >= a->out_len - hdr)
		return a->out_len;
	struct shmlog_arc_block h = {
		.magic = SHMLOG_ARC_ZBLOCK_MAGIC,
		.len = (uint32_t)k,
		.entries = a->out_entries,
	};
	uint32_t crc = shmlog__crc32c(0, &h, offsetof(struct shmlog_arc_block, crc));
	h.crc = shmlog__crc32c(crc, a->zout + hdr, (size_t)k);
	memcpy(a->out, &h, hdr);
	memcpy(a->out + hdr, a->zout + hdr, (size_t)k);
	return hdr + (size_t)k;
}

/* Seal the block being filled into the stage, on its way to the file. 0,
 * or -ENOSPC and the like (the block kept as it is), or another error. */
int flush(struct archiver *a)
{
	run_end(a);
	if (a->out_len <= sizeof(struct shmlog_arc_block))
		return 0;
	int err = 0;
	bool rotated = false;
	if (want_rotate(a, a->out_len)) {
		err = new_file(a);
		rotated = !err;
	}
	if (!err)
		err = stage_room(a, a->out_len);
	if (!err)
		err = reserve_ahead(a, a->out_len); /* more than a ZBLK needs */
	if (err) {
		if (disk_full_err(err))
			say_disk_full(a, err);
		return err;
	}
	seal_block(a, a->out, a->out_len, a->out_entries);
	size_t blk_len = a->zstd ? zstd_block(a) : a->out_len;
	stage_add(a, blk_len, a->block_ms ? a->block_ms : mono_ms());
	a->unsynced += blk_len;
	a->block_no++;
	/* the total grows with the current file too; a look lists the
	 * directory, so it is taken at a new file, past --max-size by the
	 * count kept since the last look, or every CHECK_MS for --max-age */
	a->total_size += blk_len;
	if (rotated || (a->max_size && a->total_size > a->max_size) ||
	    (a->max_age_s && mono_ms() - a->last_prune_ms >= CHECK_MS)) {
		a->last_prune_ms = mono_ms();
		prune_files(a);
	}
	out_reset(a);
	a->block_ms = 0; /* the next block's age counts from its first entry */
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
