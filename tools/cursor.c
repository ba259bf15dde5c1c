/* SPDX-License-Identifier: MIT */
/* Cursors: see cursor.h for the format and the guarantees. */
#include "cursor.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CURSOR_MAGIC "shmlog-cursor 1\n"
#define CURSOR_FILE_MAX (4u << 20) /* 1024 lanes x a few buffers fit well */

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int cursor_identify(const char *name, struct cursor_id *id)
{
	struct cursor_id out = {0};
	int n = shmlog_path(name, out.path, sizeof(out.path));
	if (n < 0)
		return n;
	struct shmlog_info info;
	int err = shmlog_stat(name, &info);
	if (err)
		return err;
	struct stat st;
	if (stat(out.path, &st))
		return -errno;
	out.created_ns = info.created_ns;
	out.ino = (uint64_t)st.st_ino;
	out.lanes = info.lanes;
	*id = out;
	return 0;
}

struct cursor_buf *cursor_find(struct cursor *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->bufs[i].id.path, path))
			return &c->bufs[i];
	return NULL;
}

struct cursor_buf *cursor_add(struct cursor *c, const struct cursor_id *id)
{
	if (id->lanes == 0 || id->lanes > SHMLOG_LANES_MAX)
		return NULL;
	struct cursor_buf *bufs = realloc(c->bufs, (c->n + 1) * sizeof(*bufs));
	if (!bufs)
		return NULL;
	c->bufs = bufs;
	struct cursor_buf *b = &bufs[c->n];
	b->id = *id;
	b->next = calloc(id->lanes, sizeof(*b->next));
	b->known = calloc(id->lanes, sizeof(*b->known));
	if (!b->next || !b->known) {
		free(b->next);
		free(b->known);
		return NULL;
	}
	c->n++;
	return b;
}

int cursor_reset(struct cursor_buf *b, const struct cursor_id *id)
{
	uint64_t *next = calloc(id->lanes, sizeof(*next));
	bool *known = calloc(id->lanes, sizeof(*known));
	if (!id->lanes || !next || !known) {
		free(next);
		free(known);
		return -ENOMEM;
	}
	free(b->next);
	free(b->known);
	b->next = next;
	b->known = known;
	b->id = *id;
	return 0;
}

void cursor_free(struct cursor *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->bufs[i].next);
		free(c->bufs[i].known);
	}
	free(c->bufs);
	c->bufs = NULL;
	c->n = 0;
}

bool cursor_same_buffer(const struct cursor_id *saved,
			const struct cursor_id *now, char *why, size_t whylen)
{
	if (saved->created_ns != now->created_ns || saved->ino != now->ino) {
		snprintf(why, whylen,
			 "the cursor was taken from another buffer of that "
			 "name (created at %" PRId64 " ns, inode %" PRIu64
			 "; this one: %" PRId64 " ns, inode %" PRIu64
			 "): it was removed and created again",
			 saved->created_ns, saved->ino, now->created_ns,
			 now->ino);
		return false;
	}
	if (saved->lanes != now->lanes) {
		snprintf(why, whylen,
			 "the cursor names %u lanes, the buffer has %u",
			 saved->lanes, now->lanes);
		return false;
	}
	return true;
}

unsigned cursor_drop_ahead(struct cursor_buf *b, const shmlog_reader_t *rd,
			   char *why, size_t whylen)
{
	unsigned n = 0;
	for (unsigned l = 0; l < b->id.lanes; l++) {
		uint64_t next;
		if (!b->known[l] || shmlog_reader_lane_next_seq(rd, l, &next) ||
		    (int64_t)(b->next[l] - next) <= 0)
			continue;
		if (!n++)
			snprintf(why, whylen,
				 "lane %u resumes at seq %" PRIu64 ", but the "
				 "lane's next record will be seq %" PRIu64,
				 l, b->next[l], next);
		b->known[l] = false;
		b->next[l] = 0;
	}
	return n;
}

/* ---- loading ---- */

/* Open @file for reading if it is a regular file. A FIFO would block the
 * open or the read until some writer came, a device would read forever:
 * O_NONBLOCK lets the open return, and fstat() tells. A symbolic link is
 * refused (O_NOFOLLOW): every save renames a new file over the path, which
 * would replace the link, not the file it names. -EINVAL (not a regular
 * file) and -ELOOP (a link) with a sentence in @why. */
static int open_regular(const char *file, char *why, size_t whylen)
{
	int fd = open(file, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		if (err == ELOOP)
			snprintf(why, whylen, "it is a symbolic link: give the "
				 "path of the file itself (every save replaces "
				 "the file, which would replace the link)");
		else
			snprintf(why, whylen, "%s", strerror(err));
		return -err;
	}
	struct stat st;
	if (fstat(fd, &st)) {
		int err = errno;
		snprintf(why, whylen, "%s", strerror(err));
		close(fd);
		return -err;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "it is %s, not a regular file: give a "
			 "regular file (or a path that does not exist yet)",
			 S_ISFIFO(st.st_mode)  ? "a FIFO"
			 : S_ISDIR(st.st_mode) ? "a directory"
			 : S_ISSOCK(st.st_mode) ? "a socket"
			 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
				 ? "a device"
				 : "something else");
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int read_all(const char *file, char **out, size_t *len, char *why,
		    size_t whylen)
{
	int fd = open_regular(file, why, whylen);
	if (fd < 0)
		return fd;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	int err = buf ? 0 : -ENOMEM;
	while (!err) {
		if (n == cap) {
			if (cap >= CURSOR_FILE_MAX) {
				err = -EFBIG;
				break;
			}
			cap *= 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = -errno;
		else if (r == 0)
			break;
		else
			n += (size_t)r;
	}
	close(fd);
	if (err) {
		snprintf(why, whylen, "%s", strerror(-err));
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int bad(char *why, size_t whylen, unsigned line, const char *what)
{
	snprintf(why, whylen, "line %u: %s", line, what);
	return -EBADMSG;
}

/* Parse the lines of a cursor file whose checksum was verified. */
static int parse_body(char *text, struct cursor *c, char *why, size_t whylen)
{
	struct cursor_buf *cur = NULL;
	unsigned line = 1;
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		line++;
		if (!strncmp(l, "buffer ", 7)) {
			/* the path comes last: it may hold spaces */
			struct cursor_id id = {0};
			int at = 0;
			if (sscanf(l + 7,
				   "created_ns=%" SCNd64 " ino=%" SCNu64
				   " lanes=%u %n",
				   &id.created_ns, &id.ino, &id.lanes, &at) != 3 ||
			    !at || id.lanes == 0 || id.lanes > SHMLOG_LANES_MAX)
				return bad(why, whylen, line,
					   "bad buffer identity");
			const char *p = l + 7 + at;
			if (p[0] != '/' || strlen(p) >= sizeof(id.path))
				return bad(why, whylen, line, "bad buffer path");
			strcpy(id.path, p);
			if (cursor_find(c, id.path))
				return bad(why, whylen, line,
					   "buffer named twice");
			cur = cursor_add(c, &id);
			if (!cur)
				return -ENOMEM;
			continue;
		}
		unsigned lane;
		uint64_t next;
		int used = 0;
		if (!cur || sscanf(l, "%u %" SCNu64 "%n", &lane, &next, &used) != 2 ||
		    l[used] != '\0' || lane >= cur->id.lanes ||
		    cur->known[lane])
			return bad(why, whylen, line, "bad lane line");
		cur->next[lane] = next;
		cur->known[lane] = true;
	}
	return 0;
}

int cursor_load(const char *file, struct cursor *c, char *why, size_t whylen)
{
	char *text = NULL;
	size_t len = 0;
	int err = read_all(file, &text, &len, why, whylen);
	if (err)
		return err;
	err = -EBADMSG;
	size_t ml = strlen(CURSOR_MAGIC);
	char *sum = NULL;
	if (len < ml || memcmp(text, CURSOR_MAGIC, ml)) {
		snprintf(why, whylen, "not a shmlog cursor file");
		goto out;
	}
	/* the checksum line is the last one */
	if (len < 2 || text[len - 1] != '\n') {
		snprintf(why, whylen, "truncated (no final newline)");
		goto out;
	}
	text[len - 1] = '\0';
	sum = strrchr(text, '\n');
	uint64_t want;
	int used = 0;
	if (!sum || sscanf(sum + 1, "checksum %" SCNx64 "%n", &want, &used) != 1 ||
	    sum[1 + used] != '\0') {
		snprintf(why, whylen, "no checksum line at the end");
		goto out;
	}
	if (fnv1a(text, (size_t)(sum + 1 - text)) != want) {
		snprintf(why, whylen, "checksum mismatch (damaged or edited)");
		goto out;
	}
	*sum = '\0';
	err = parse_body(text + ml, c, why, whylen);
	if (err)
		cursor_free(c);
out:
	free(text);
	return err;
}

/* ---- saving ---- */

static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return 0;
		}
		char *nb = realloc(*buf, *cap * 2 + (size_t)n);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = *cap * 2 + (size_t)n;
	}
}

static int format_cursor(const struct cursor *c, char **out, size_t *outlen)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	int err = put(&buf, &len, &cap, "%s", CURSOR_MAGIC);
	for (size_t i = 0; i < c->n && !err; i++) {
		const struct cursor_buf *b = &c->bufs[i];
		err = put(&buf, &len, &cap,
			  "buffer created_ns=%" PRId64 " ino=%" PRIu64
			  " lanes=%u %s\n",
			  b->id.created_ns, b->id.ino, b->id.lanes, b->id.path);
		for (unsigned l = 0; l < b->id.lanes && !err; l++)
			if (b->known[l])
				err = put(&buf, &len, &cap, "%u %" PRIu64 "\n",
					  l, b->next[l]);
	}
	if (!err)
		err = put(&buf, &len, &cap, "checksum %016" PRIx64 "\n",
			  fnv1a(buf, len));
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fsync_dir_of(const char *file)
{
	char copy[PATH_MAX];
	snprintf(copy, sizeof(copy), "%s", file);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = fsync(fd) ? -errno : 0;
	close(fd);
	return err == -EINVAL ? 0 : err; /* some file systems refuse it */
}

int cursor_save(const char *file, const struct cursor *c)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", file) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	char *text = NULL;
	size_t len = 0;
	int err = format_cursor(c, &text, &len);
	if (err)
		return err;
	/* a fresh file: whatever is at FILE.tmp (a stale one, a link planted
	 * to have us truncate another file) is removed, not followed */
	if (unlink(tmp) && errno != ENOENT) {
		free(text);
		return -errno;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0600);
	if (fd < 0) {
		err = -errno;
		free(text);
		return err;
	}
	err = write_all(fd, text, len);
	free(text);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, file))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	return fsync_dir_of(file);
}
