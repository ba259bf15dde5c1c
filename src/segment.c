/* SPDX-License-Identifier: MIT */
/*
 * Segments: naming, creating, attaching and validating the files that hold
 * buffers. Creation is atomic (a fully built file is renamed to its name,
 * never replacing one);
 * attaching trusts nothing: the file must be a regular file we may trust,
 * and the header must check out before anything in it is used.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* renameat2(2)'s flag, in <linux/fs.h>, which clashes with <sys/mount.h>. */
#define RENAME_NOREPLACE_FLAG (1u << 0)

#define SHM_DIR "/dev/shm"
#define SHM_PREFIX "shmlog."

static bool name_ok(const char *name)
{
	if (!name[0] || name[0] == '.' || strlen(name) > 200)
		return false;
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

int shmlog_path(const char *name, char *buf, size_t buflen)
{
	if (!name || !name[0]) {
		name = getenv("SHMLOG_BUFFER");
		if (!name || !name[0])
			name = "main";
	}
	int n;
	if (name[0] == '/') {
		if (strstr(name, "/../") || name[strlen(name) - 1] == '/')
			return -EINVAL;
		n = snprintf(buf, buflen, "%s", name);
	} else {
		if (!name_ok(name))
			return -EINVAL;
		n = snprintf(buf, buflen, SHM_DIR "/" SHM_PREFIX "%s", name);
	}
	if (n < 0 || (size_t)n >= buflen)
		return -ENAMETOOLONG;
	return n;
}

uint64_t shmlog__fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void shmlog_create_opts_init(struct shmlog_create_opts *opts)
{
	memset(opts, 0, sizeof(*opts)); /* zero: every field's default */
}

/* The group to give the file to, or (gid_t)-1 to leave it the caller's.
 * Zero is "unset" unless asked for with SHMLOG_CREATE_GID: a zeroed struct
 * must not mean root's group (a failed fchown for every other user). */
static gid_t wanted_gid(const struct shmlog_create_opts *o)
{
	if (o->gid == 0 && !(o->flags & SHMLOG_CREATE_GID))
		return (gid_t)-1;
	return o->gid;
}

/* Default lane count: one lane per 64 KiB of capacity, 4 to 64. */
static unsigned default_lanes(uint64_t size)
{
	uint64_t n = size / (64 * 1024);
	return n < 4 ? 4 : n > 64 ? 64 : (unsigned)n;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* The chunk size for a buffer of @size bytes and @lanes writer slots: a
 * power of two near size / 256 (at least 16 KiB, so that a record of the
 * longest message fits in a third of a chunk; at most 1 MiB), halved for
 * small buffers until there are at least 16 chunks and two per lane, down
 * to a page. Fewer, larger chunks make the writers' scan of the chunk
 * table (once per chunk) rarer; more of them make the fair share finer: a
 * writer keeps its share less a chunk or two. */
static uint32_t chunk_size_for(uint64_t size, unsigned lanes)
{
	uint64_t cs = 16 * 1024;
	while (cs < (1u << 20) && cs * 2 <= size / 256)
		cs *= 2;
	while (cs > SHMLOG__PAGE && (size / cs < 16 || size / cs < 2 * lanes))
		cs /= 2;
	return (uint32_t)cs;
}

/* Lay out a segment for @o into @f. */
static int layout(const struct shmlog_create_opts *o, struct shmlog__fixed *f)
{
	uint64_t size = o->size ? o->size : SHMLOG_SIZE_DEFAULT;
	if (size < SHMLOG_SIZE_MIN || size > SHMLOG_SIZE_MAX)
		return -EINVAL;
	unsigned lanes = o->lanes ? o->lanes : default_lanes(size);
	if (lanes < 1 || lanes > SHMLOG_LANES_MAX)
		return -EINVAL;
	uint32_t cs = chunk_size_for(size, lanes);
	uint64_t chunks = size / cs;
	if (chunks < lanes || chunks < 2)
		return -EINVAL; /* not a chunk for every writer */
	if (o->clock < SHMLOG_CLOCK_DEFAULT || o->clock > SHMLOG_CLOCK_COARSE)
		return -EINVAL;

	memset(f, 0, sizeof(*f));
	memcpy(f->magic, SHMLOG__MAGIC, sizeof(f->magic));
	f->version_major = SHMLOG__VERSION_MAJOR;
	f->version_minor = SHMLOG__VERSION_MINOR;
	f->fixed_size = sizeof(*f);
	f->lanes_off = SHMLOG__PAGE;
	f->chunks_off = f->lanes_off +
			(uint64_t)lanes * sizeof(struct shmlog__lane);
	f->fmt_off = round_up(f->chunks_off + sizeof(struct shmlog__space) +
				      chunks * 8,
			      SHMLOG__PAGE);
	/* the format table: a call site's format once, about 60 bytes */
	uint64_t fmts = round_up(size / 64, SHMLOG__PAGE);
	f->fmt_size = (uint32_t)(fmts < 16384 ? 16384 : fmts > (1u << 20) ? (1u << 20) : fmts);
	f->data_off = f->fmt_off + f->fmt_size;
	f->lane_count = lanes;
	f->chunk_size = cs;
	f->chunk_count = (uint32_t)chunks;
	f->lane_ctl_size = sizeof(struct shmlog__lane);
	uint64_t maxrec = REC_HDR + SHMLOG_TAG_MAX + SHMLOG_MSG_MAX;
	maxrec = round_up(maxrec, REC_ALIGN);
	if (maxrec > cs / 3)
		maxrec = cs / 3 / REC_ALIGN * REC_ALIGN;
	f->max_record = (uint32_t)maxrec;
	f->file_size = f->data_off + chunks * cs;
	f->clock = o->clock ? (uint32_t)o->clock
			    : (uint32_t)shmlog__clock_default();
	/* Start positions a few chunks below 2^64, so that every buffer
	 * exercises the wrap of its position counters early. */
	f->initial_pos = o->initial_pos
				 ? o->initial_pos & ~(uint64_t)(REC_ALIGN - 1)
				 : (uint64_t)0 - 4 * (uint64_t)cs;
	f->initial_seq = o->initial_seq;
	f->created_ns = shmlog__realtime_ns();
	shmlog__clock_calibrate(f);
	f->checksum = shmlog__fnv1a(f, offsetof(struct shmlog__fixed, checksum));
	return 0;
}

/* The largest file a buffer can be: SHMLOG_SIZE_MAX of chunks and the
 * tables before them, with room to spare. */
#define SHMLOG__FILE_MAX (SHMLOG_SIZE_MAX * 2)

int shmlog__fixed_validate(const struct shmlog__fixed *f, uint64_t file_size)
{
	if (memcmp(f->magic, SHMLOG__MAGIC, sizeof(f->magic)) != 0)
		return -EBADMSG;
	if (f->version_major != SHMLOG__VERSION_MAJOR)
		return -EPROTONOSUPPORT;
	if (f->checksum !=
	    shmlog__fnv1a(f, offsetof(struct shmlog__fixed, checksum)))
		return -EBADMSG;
	if (f->fixed_size != sizeof(*f) ||
	    f->lane_ctl_size != sizeof(struct shmlog__lane))
		return -ENODATA;
	if (f->flags || f->reserved)
		return -EPROTONOSUPPORT; /* features this version lacks */
	if (f->lane_count < 1 || f->lane_count > SHMLOG_LANES_MAX)
		return -ENODATA;
	if (f->chunk_size < SHMLOG__PAGE || f->chunk_size > (1u << 20) ||
	    (f->chunk_size & (f->chunk_size - 1)))
		return -ENODATA;
	if (f->chunk_count < 2 || f->chunk_count > (1u << 24))
		return -ENODATA;
	/* room for a header, the longest tag and some message: a writer's
	 * room for the message (max_record - header - tag) never wraps, and
	 * no writer makes a record its readers would refuse (every layout()
	 * gives at least a third of a page) */
	if (f->max_record < REC_HDR + SHMLOG_TAG_MAX + REC_ALIGN ||
	    f->max_record > f->chunk_size / 3 ||
	    f->max_record > REC_MAX_LEN || f->max_record % REC_ALIGN)
		return -ENODATA;
	/* Every offset inside a file of a size a buffer can have: the sums
	 * below (an offset plus a table's size) cannot wrap. A format table
	 * placed at 2^64 - 16 KiB once ended at 0, below data_off, and put
	 * the chunk table past the end of the file (found by fuzz_header). */
	if (file_size > SHMLOG__FILE_MAX || f->lanes_off > file_size ||
	    f->chunks_off > file_size || f->fmt_off > file_size ||
	    f->data_off > file_size)
		return -ENODATA;
	if (f->lanes_off < sizeof(struct shmlog__hdr) ||
	    f->lanes_off % SHMLOG__CACHELINE)
		return -ENODATA;
	uint64_t table = (uint64_t)f->lane_count * sizeof(struct shmlog__lane);
	if (f->chunks_off < f->lanes_off + table ||
	    f->chunks_off % SHMLOG__CACHELINE)
		return -ENODATA;
	uint64_t descs = sizeof(struct shmlog__space) + (uint64_t)f->chunk_count * 8;
	if (f->fmt_off < f->chunks_off + descs || f->fmt_off % SHMLOG__PAGE ||
	    f->fmt_size < SHMLOG__PAGE || f->fmt_size > (1u << 20) ||
	    f->fmt_size % SHMLOG__PAGE)
		return -ENODATA;
	if (f->data_off < f->fmt_off + f->fmt_size || f->data_off % SHMLOG__PAGE)
		return -ENODATA;
	uint64_t data = (uint64_t)f->chunk_count * f->chunk_size;
	if (f->file_size != file_size || f->data_off + data != file_size)
		return -ENODATA;
	if (f->clock < SHMLOG_CLOCK_TSC || f->clock > SHMLOG_CLOCK_COARSE)
		return -ENODATA;
	if (f->initial_pos & (REC_ALIGN - 1))
		return -ENODATA;
	if (f->cal_shift > 63)
		return -ENODATA;
	return 0;
}

/* Build the file under a temporary name in the same directory. */
static int create_tmp(const char *path, mode_t mode, gid_t gid,
		      const struct shmlog__fixed *f, char *tmp, size_t tmplen)
{
	if (snprintf(tmp, tmplen, "%s.tmp-XXXXXX", path) >= (int)tmplen)
		return -ENAMETOOLONG;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = 0;
	if (fchmod(fd, mode) < 0 ||
	    (gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid) < 0)) {
		err = -errno;
		goto fail;
	}
	/* Reserve every page now: a full /dev/shm is ENOSPC here, not a
	 * SIGBUS in some writer later. */
	err = -posix_fallocate(fd, 0, (off_t)f->file_size);
	if (err)
		goto fail;
	void *p = mmap(NULL, SHMLOG__PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	struct shmlog__hdr *hdr = p;
	hdr->fixed = *f;
	atomic_store(&hdr->config.filter_gen, 2);
	/* the first clock anchor, before the buffer has a name: whatever is
	 * stamped in it converts the same way from the first record on */
	_Atomic uint64_t due = 0;
	shmlog__anchor_refresh(f, hdr, shmlog__clock_raw((int)f->clock), &due);
	munmap(p, SHMLOG__PAGE);
	/* Lane positions: every lane starts empty at initial_pos; the
	 * chunk table is zero: every chunk unused, epoch 0. */
	size_t tbl = (size_t)(f->data_off - f->lanes_off);
	p = mmap(NULL, tbl, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)f->lanes_off);
	if (p == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	struct shmlog__fmt_table *ft =
		(void *)((unsigned char *)p + (f->fmt_off - f->lanes_off));
	atomic_store(&ft->next, sizeof(*ft));
	for (unsigned i = 0; i < f->lane_count; i++) {
		struct shmlog__lane *l = (struct shmlog__lane *)p + i;
		atomic_store(&l->reserve, f->initial_pos);
		atomic_store(&l->head, f->initial_pos);
		atomic_store(&l->next_seq, f->initial_seq);
	}
	munmap(p, tbl);
	return fd;
fail:
	unlink(tmp);
	close(fd);
	return err;
}

/* Give the built file @tmp the name @path, unless @path exists: exactly
 * one racing creator wins, the others get -EEXIST. rename(2) with
 * RENAME_NOREPLACE does it in one step, so the file never has two names:
 * an opener racing the creator sees one link, as check_file() wants (with
 * link(2) then unlink(2), an opener between the two saw two links and was
 * refused with EPERM). Filesystems without RENAME_NOREPLACE get the two
 * steps. */
static int publish(const char *tmp, const char *path)
{
	int err = 0;
#ifdef SYS_renameat2
	if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path,
		    RENAME_NOREPLACE_FLAG) == 0) {
		TESTPOINT(15); /* named; nothing left to clean up */
		return 0;
	}
	err = -errno;
	if (err != -EINVAL && err != -ENOSYS && err != -EOPNOTSUPP) {
		unlink(tmp);
		return err;
	}
#endif
	/* link(2) never replaces either */
	err = link(tmp, path) < 0 ? -errno : 0;
	TESTPOINT(15);
	unlink(tmp);
	return err;
}

int shmlog_create(const char *name, const struct shmlog_create_opts *opts)
{
	struct shmlog_create_opts def;
	if (!opts) {
		shmlog_create_opts_init(&def);
		opts = &def;
	}
	char path[512], tmp[600];
	int err = shmlog_path(name, path, sizeof(path));
	if (err < 0)
		return err;
	if (opts->mode & ~(mode_t)0777 || opts->mode & 0002)
		return -EINVAL; /* world-writable buffers are refused */
	if (opts->flags & ~(unsigned)SHMLOG_CREATE_GID)
		return -EINVAL;
	struct shmlog__fixed f;
	err = layout(opts, &f);
	if (err)
		return err;
	int fd = create_tmp(path, opts->mode ? opts->mode : 0600,
			    wanted_gid(opts), &f, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	err = publish(tmp, path);
	close(fd);
	return err;
}

/* Tell the writers that still map the file of @fd that it is gone: they
 * take no new chunk in it, and their writes say -ESTALE from then on.
 * Best effort: a file we cannot map for writing, or that is no buffer,
 * is left as it is. */
static void mark_removed(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < SHMLOG__PAGE)
		return;
	void *p = mmap(NULL, SHMLOG__PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	if (p == MAP_FAILED)
		return;
	struct shmlog__hdr *hdr = p;
	if (!memcmp(hdr->fixed.magic, SHMLOG__MAGIC, sizeof(hdr->fixed.magic)))
		atomic_store_explicit(&hdr->config.removed, 1,
				      memory_order_relaxed);
	munmap(p, SHMLOG__PAGE);
}

int shmlog_remove(const char *name)
{
	char path[512];
	int err = shmlog_path(name, path, sizeof(path));
	if (err < 0)
		return err;
	struct stat st, fst;
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EPERM;
	/* held open across the unlink, so that the file marked is the one
	 * removed (and only once it is) */
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &fst) < 0 || fst.st_ino != st.st_ino ||
			fst.st_dev != st.st_dev || !S_ISREG(fst.st_mode))) {
		close(fd);
		fd = -1;
	}
	err = unlink(path) < 0 ? -errno : 0;
	if (fd >= 0) {
		if (!err)
			mark_removed(fd);
		close(fd);
	}
	return err;
}

/* Is the opened file one we may trust? */
static int check_file(int fd, bool writing, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EPERM;
	if (st->st_nlink != 1)
		return -EPERM; /* a hard link planted elsewhere */
	if (st->st_mode & 0002)
		return -EPERM; /* world-writable: anyone could forge it */
	/* Writers log only into buffers of their own user or of root: the
	 * owner of a file can read, rewrite and truncate it under everyone
	 * who maps it (docs/SECURITY.md). Readers read any buffer the kernel
	 * lets them open. */
	if (writing && st->st_uid != geteuid() && st->st_uid != 0)
		return -EPERM;
	if ((uint64_t)st->st_size < SHMLOG__PAGE)
		return -ENODATA;
	return 0;
}

/* Bytes reserved around a mapping: the file, rounded up to pages, between
 * two PROT_NONE guard pages. */
static uint64_t map_span(uint64_t size)
{
	return round_up(size, SHMLOG__PAGE) + 2 * SHMLOG__PAGE;
}

void shmlog__seg_detach(struct shmlog__seg *s)
{
	if (s->base)
		munmap(s->base - SHMLOG__PAGE, map_span(s->size));
	if (s->hdr_map)
		munmap(s->hdr_map, SHMLOG__PAGE);
	if (s->fd >= 0)
		close(s->fd);
	s->base = NULL;
	s->hdr_map = NULL;
	s->fd = -1;
}

static int map_segment(struct shmlog__seg *s, const struct stat *st)
{
	uint64_t size = (uint64_t)st->st_size;
	struct shmlog__fixed f;
	if (pread(s->fd, &f, sizeof(f), 0) != (ssize_t)sizeof(f))
		return -ENODATA;
	int err = shmlog__fixed_validate(&f, size);
	if (err)
		return err;
	/* Guard pages: reserve the span with no access at all, then map the
	 * file over its middle. Whatever a bug in the bounds checks might
	 * compute, reading just before or after the file faults at once
	 * instead of reading (or, for a writer, writing) a neighbour. */
	if (size > SIZE_MAX - 4 * SHMLOG__PAGE)
		return -ENOMEM;
	unsigned char *span = mmap(NULL, map_span(size), PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				   -1, 0);
	if (span == MAP_FAILED)
		return -errno;
	int prot = PROT_READ | (s->writable ? PROT_WRITE : 0);
	void *p = mmap(span + SHMLOG__PAGE, size, prot, MAP_SHARED | MAP_FIXED,
		       s->fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		munmap(span, map_span(size));
		return err;
	}
	s->base = p;
	s->size = size;
	s->fixed = f;
	s->hdr = p;
	s->uid = st->st_uid;
	s->gid = st->st_gid;
	s->mode = st->st_mode & 07777;
	if (s->writable) {
		s->hdr_writable = true;
	} else if (s->hdr_writable) {
		/* A reader with write permission maps page 0 writable on its
		 * own, to say that it sleeps; the records stay read-only. */
		void *h = mmap(NULL, SHMLOG__PAGE, PROT_READ | PROT_WRITE,
			       MAP_SHARED, s->fd, 0);
		if (h == MAP_FAILED) {
			s->hdr_writable = false;
		} else {
			s->hdr_map = h;
			s->hdr = h;
		}
	}
	return 0;
}

int shmlog__seg_attach(const char *name, int flags, struct shmlog__seg *s)
{
	char path[512];
	int err = shmlog_path(name, path, sizeof(path));
	if (err < 0)
		return err;
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	bool writing = flags & SEG_WRITE;
	for (int attempt = 0;; attempt++) {
		int mode = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
		s->fd = open(path, mode | O_RDWR);
		if (s->fd >= 0) {
			s->hdr_writable = true;
		} else if (!writing && (errno == EACCES || errno == EROFS)) {
			s->fd = open(path, mode | O_RDONLY);
		}
		if (s->fd >= 0)
			break;
		err = errno == ELOOP ? -EPERM : -errno;
		if (err != -ENOENT || !(flags & SEG_CREATE) || attempt > 0)
			return err;
		err = shmlog_create(name, NULL);
		if (err && err != -EEXIST)
			return err; /* EEXIST: somebody else won the race */
	}
	s->writable = writing;
	struct stat st;
	err = check_file(s->fd, writing, &st);
	if (!err)
		err = map_segment(s, &st);
	if (err) {
		shmlog__seg_detach(s);
		return err;
	}
	return 0;
}

/* Store the clear mark, guarded: the file may be truncated under us.
 * Apart from its caller, so that no variable of the caller lives across
 * the sigsetjmp() (GCC's -Wclobbered at -O3). */
static int clear_mark(const struct shmlog__seg *s, uint64_t now)
{
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) != 0) {
		shmlog__guard_recovered();
		return -EIO; /* truncated under us */
	}
	shmlog__guard_arm(&g, s);
	/* LMM(config:A) pairs with LMM(config:B) */
	atomic_store_explicit(&s->hdr->config.clear_raw, now ? now : 1,
			      memory_order_release);
	shmlog__guard_disarm();
	return 0;
}

int shmlog_clear(const char *name)
{
	struct shmlog__seg s;
	int err = shmlog__seg_attach(name, SEG_WRITE, &s);
	if (err)
		return err;
	err = clear_mark(&s, shmlog__clock_raw((int)s.fixed.clock));
	shmlog__seg_detach(&s);
	return err;
}
