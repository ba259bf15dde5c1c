/* SPDX-License-Identifier: MIT */
/*
 * Writes the seed corpus of the fuzz targets: real segments made by the
 * library, in the geometry fuzz_reader.c's overlay mode uses (64 KiB, 16
 * lanes, 16 chunks of 4 KiB, CLOCK_REALTIME), after various histories:
 * empty, a few records, a lane recycling its chunks (PADs), a torn record
 * left by a "dead" writer in its OPEN chunk, several writers (LIVE chunks),
 * writers that died holding their lanes (OPEN chunks) and took chunks from
 * each other, a filter spec, a clear mark. And fuzz_json.c's inputs:
 * damaged printf-style records (tests/json_damage.h) with formats of
 * their own.
 *
 * usage: make_seeds DIR   (writes the files of DIR/header, DIR/reader and
 *                          DIR/json)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "json_damage.h"

static char dir[512];

static void save(const char *sub, const char *name, const void *p, size_t n)
{
	char f[700];
	snprintf(f, sizeof(f), "%s/%s", dir, sub);
	mkdir(f, 0755);
	snprintf(f, sizeof(f), "%s/%s/%s", dir, sub, name);
	FILE *o = fopen(f, "wb");
	if (!o || fwrite(p, 1, n, o) != n || fclose(o)) {
		perror(f);
		exit(1);
	}
}

static unsigned char *slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	off_t sz = lseek(fd, 0, SEEK_END);
	unsigned char *b = malloc((size_t)sz);
	if (fd < 0 || !b || pread(fd, b, (size_t)sz, 0) != sz)
		exit(1);
	close(fd);
	*n = (size_t)sz;
	return b;
}

/* The lane that holds records, for a segment written by this process. */
static unsigned busy_lane(const unsigned char *b)
{
	const struct shmlog__fixed *f = (const void *)b;
	for (unsigned i = 0; i < f->lane_count; i++) {
		const struct shmlog__lane *l =
			(const void *)(b + f->lanes_off + i * sizeof(*l));
		if (atomic_load(&l->head) != f->initial_pos)
			return i;
	}
	return 0;
}

/* Chunk @i's descriptor word in the segment image @b. */
static uint64_t *desc(unsigned char *b, unsigned i)
{
	const struct shmlog__fixed *f = (const void *)b;
	return (uint64_t *)(void *)(b + f->chunks_off +
				    sizeof(struct shmlog__space) + (uint64_t)i * 8);
}

/* Save a segment as both targets' seeds. The reader overlay seed stops
 * after the last chunk that holds something, to stay small. */
static void save_segment(const char *name, const char *path)
{
	size_t n;
	unsigned char *b = slurp(path, &n);
	const struct shmlog__fixed *f = (const void *)b;
	unsigned chunks_used = 1;
	for (unsigned i = 0; i < f->chunk_count; i++)
		if (*desc(b, i))
			chunks_used = i + 1;
	unsigned char hs[sizeof(*f) + 9];
	memcpy(hs, f, sizeof(*f));
	memcpy(hs + sizeof(*f), &f->file_size, 8);
	hs[sizeof(*f) + 8] = 0;
	save("header", name, hs, sizeof(hs));
	size_t from = offsetof(struct shmlog__hdr, notify);
	size_t to = f->data_off + (size_t)chunks_used * f->chunk_size;
	unsigned char *s = malloc(to - from + 1);
	for (int mode = 0; mode < 2; mode++) {
		s[0] = (unsigned char)mode; /* overlay, from start or tail */
		memcpy(s + 1, b + from, to - from);
		char nm[100];
		snprintf(nm, sizeof(nm), "%s-%s", name, mode ? "tail" : "all");
		save("reader", nm, s, to - from + 1);
	}
	free(s);
	free(b);
}

static void write_n(shmlog_t *h, int n, int len, const char *tag)
{
	char msg[600];
	for (int i = 0; i < n; i++) {
		int l = snprintf(msg, sizeof(msg), "%s record %d ", tag, i);
		for (; l < len && l < (int)sizeof(msg) - 1; l++)
			msg[l] = (char)('a' + (i + l) % 26);
		shmlog_write_n(h, SHMLOG_VERBOSE + i % 6, tag, msg, (size_t)l);
	}
}

/* One input of fuzz_json.c: small buffer size, tag, format, block. */
static void save_json(const char *name, unsigned char small, const char *tag,
		      size_t tag_len, const char *fmt, const void *blk,
		      size_t blk_len)
{
	static unsigned char in[4 + 64 + 4096 + sizeof(((struct jd_rec *)0)->blk)];
	size_t fl = strlen(fmt), n = 0;
	in[n++] = small;
	in[n++] = (unsigned char)tag_len;
	in[n++] = (unsigned char)fl;
	in[n++] = (unsigned char)(fl >> 8);
	memcpy(in + n, tag, tag_len);
	n += tag_len;
	memcpy(in + n, fmt, fl);
	n += fl;
	memcpy(in + n, blk, blk_len);
	save("json", name, in, n + blk_len);
}

static void json_seeds(void)
{
	/* the case that printed "args":["eth0",]: a value cut short */
	static const unsigned char eth0[] = {5, 4, 0, 'e', 't', 'h', '0', 1, 0xdc};
	save_json("cut-int", 20, "net", 3, "link %s down after %d ms", eth0,
		  sizeof(eth0));
	/* a string that is not UTF-8 */
	static const unsigned char f8[] = {5, 3, 0, 0xf8, 0x80, 0x80};
	save_json("not-utf8", 4, "n\xff" "et", 5, "%s", f8, sizeof(f8));
	static const char *const fmts[] = {
		"link %s down after %d ms", "%d %lld %f %Lf %p %s",
		"bad \xf8\x80\x80 \xed\xa0\x80 \x01\x1b[31m %s %d",
		"%s|%s|%s|%s \"\\\xe2\x80\xa8 \xc3", "%.3s %*d %-8.2e %c",
		"%s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s",
		"", "%", "%n %m %1$d",
	};
	uint64_t s = 2;
	for (unsigned i = 0; i < 48; i++) {
		static struct jd_rec r;
		jd_make(&s, &r);
		char name[32];
		snprintf(name, sizeof(name), "damaged-%02u", i);
		save_json(name, (unsigned char)jd_rand(&s), r.tag, r.tag_len,
			  fmts[i % (sizeof(fmts) / sizeof(fmts[0]))], r.blk,
			  r.blk_len);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	mkdir(dir, 0755);
	json_seeds();
	char path[128];
	snprintf(path, sizeof(path), "/dev/shm/shmlog-seeds-%d", (int)getpid());
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.lanes = 16;
	o.clock = SHMLOG_CLOCK_REALTIME;
	shmlog_t *h;

	/* empty */
	unlink(path);
	if (shmlog_create(path, &o) || shmlog_open(path, 0, &h))
		return 1;
	save_segment("empty", path);

	/* a few records in one lane */
	write_n(h, 5, 20, "few");
	save_segment("few", path);

	/* printf-style calls formatted by the reader: the format table and
	 * deferred records, a string cut among them */
	static const char *const fmts[] = {
		"link %s down after %d ms", "%5.2f|%-8lld|%p|%c", "%*d %.*s",
		"%s%s%s%s",
	};
	char big[3000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 4; i++) {
		shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_INFO, "def",
				fmts[0], "eth0", 1500 + i);
		shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_WARN, "def",
				fmts[1], 2.5 * i, -9000000000LL * i,
				(void *)fmts, 'a' + i);
		shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_ERROR, "def",
				fmts[2], 7, i, 3, "abcdef");
	}
	shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED, SHMLOG_ERROR, "def", fmts[3],
			big, big, "c", "d");
	save_segment("deferred", path);

	/* a lane that took every chunk and recycled its own: PADs,
	 * overwritten records, LIVE chunks and the OPEN one */
	write_n(h, 600, 90, "wrap");
	save_segment("recycled", path);
	shmlog_close(h);

	/* a filter spec and a clear mark in page 0 */
	shmlog_set_filter(path, "net:D wrap:I *:W", NULL);
	shmlog_clear(path);
	if (shmlog_open(path, 0, &h))
		return 1;
	write_n(h, 3, 40, "after-clear");
	save_segment("filter-clear", path);
	shmlog_close(h);

	/* a torn record: the lane says a write is in progress by a dead
	 * owner (reserve beyond head, owner a pid that does not exist) */
	{
		int fd = open(path, O_RDWR);
		size_t n;
		unsigned char *b = slurp(path, &n);
		const struct shmlog__fixed *f = (const void *)b;
		struct shmlog__lane l;
		off_t at = (off_t)(f->lanes_off + busy_lane(b) * sizeof(l));
		if (pread(fd, &l, sizeof(l), at) != sizeof(l))
			return 1;
		uint64_t head = atomic_load(&l.head);
		atomic_store(&l.reserve, head + 64);
		atomic_store(&l.owner, (uint64_t)0x7ffffff0 << 32 | 0x7ffffff0);
		if (pwrite(fd, &l, sizeof(l), at) != sizeof(l))
			return 1;
		/* its chunk that holds head OPEN again: the writer died in it */
		for (unsigned i = 0; i < f->chunk_count; i++) {
			uint64_t w = *desc(b, i);
			uint64_t base = chunk_base(f, w);
			if (!chunk_valid(f, w) ||
			    chunk_lane(w) != busy_lane(b) ||
			    head - base > f->chunk_size)
				continue;
			w = chunk_id(w) | CHUNK_OPEN;
			off_t d = (off_t)((unsigned char *)desc(b, i) - b);
			if (pwrite(fd, &w, 8, d) != 8)
				return 1;
		}
		close(fd);
		free(b);
		save_segment("torn", path);
	}
	shmlog_remove(path);

	/* several writers (threads would do; lanes are per thread, so use
	 * children), interleaved */
	if (shmlog_create(path, &o))
		return 1;
	for (int k = 0; k < 3; k++) {
		pid_t p = fork();
		if (p == 0) {
			if (shmlog_open(path, 0, &h))
				_exit(1);
			char tag[8];
			snprintf(tag, sizeof(tag), "w%d", k);
			write_n(h, 30 + 40 * k, 50 + 30 * k, tag);
			shmlog_close(h);
			_exit(0);
		}
		int st;
		waitpid(p, &st, 0);
	}
	save_segment("writers", path);
	shmlog_remove(path);

	/* lanes still held: writers that died without closing (their
	 * chunks OPEN, their owner words set) and took chunks from each
	 * other, and this process's own lane, open while it is saved */
	if (shmlog_create(path, &o) || shmlog_open(path, 0, &h))
		return 1;
	write_n(h, 20, 120, "self");
	for (int k = 0; k < 4; k++) {
		pid_t p = fork();
		if (p == 0) {
			shmlog_t *c;
			if (shmlog_open(path, 0, &c))
				_exit(1);
			char tag[8];
			snprintf(tag, sizeof(tag), "d%d", k);
			write_n(c, 40 + 60 * k, 100 + 40 * k, tag);
			_exit(0); /* no close: as if killed */
		}
		int st;
		waitpid(p, &st, 0);
	}
	write_n(h, 10, 60, "self");
	save_segment("held", path);
	shmlog_close(h);
	shmlog_remove(path);
	return 0;
}
