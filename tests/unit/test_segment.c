/* SPDX-License-Identifier: MIT */
/*
 * Creating and attaching: options, races, and every kind of file that is
 * not a buffer we may trust (garbage, truncated, foreign version, symlink,
 * FIFO, hard link, world-writable).
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "internal.h"
#include "test.h"

static char *path_of(const char *name)
{
	static char p[4][512];
	static int next;
	char *b = p[next++ % 4];
	REQUIRE(shmlog_path(name, b, sizeof(p[0])) > 0);
	return b;
}

static int try_open(const char *name)
{
	shmlog_t *h = NULL;
	int err = shmlog_open(name, 0, &h);
	if (!err)
		shmlog_close(h);
	shmlog_reader_t *r = NULL;
	int rerr = shmlog_reader_open(name, 0, &r);
	if (!rerr)
		shmlog_reader_close(r);
	/* writers and readers must agree on what they refuse */
	if (err != -EPERM)
		CHECK_EQ(err, rerr);
	return err;
}

static void test_options(void)
{
	const char *b = test_buffer("opt");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 1000;
	CHECK_EQ(shmlog_create(b, &o), -EINVAL);
	o.size = SHMLOG_SIZE_MAX + 1;
	CHECK_EQ(shmlog_create(b, &o), -EINVAL);
	o.size = 64 * 1024;
	o.lanes = 1000; /* lanes of 64 bytes */
	CHECK_EQ(shmlog_create(b, &o), -EINVAL);
	o.lanes = 0;
	o.mode = 0666;
	CHECK_EQ(shmlog_create(b, &o), -EINVAL);
	o.mode = 0640;
	o.clock = 17;
	CHECK_EQ(shmlog_create(b, &o), -EINVAL);
	o.clock = SHMLOG_CLOCK_COARSE;
	CHECK_EQ(shmlog_create("bad/name", &o), -EINVAL);
	CHECK_EQ(shmlog_create(b, &o), 0);
	CHECK_EQ(shmlog_create(b, &o), -EEXIST);
	struct stat st;
	CHECK_EQ(stat(path_of(b), &st), 0);
	CHECK_EQ(st.st_mode & 0777, 0640);
	struct shmlog_info in;
	CHECK_EQ(shmlog_stat(b, &in), 0);
	CHECK_EQ(in.clock, SHMLOG_CLOCK_COARSE);
	CHECK_EQ(in.lanes, 4);
	CHECK(in.capacity <= 64 * 1024 && in.capacity > 60 * 1024);
	CHECK_EQ(in.file_size, st.st_size);
	CHECK_EQ(shmlog_remove(b), 0);
	CHECK_EQ(shmlog_remove(b), -ENOENT);

	/* 1 GiB works, and sizes are exact */
	o.size = 1ull << 30;
	o.mode = 0600;
	CHECK_EQ(shmlog_create(b, &o), 0);
	CHECK_EQ(shmlog_stat(b, &in), 0);
	CHECK_EQ(in.capacity, 1ull << 30);
	CHECK_EQ(shmlog_remove(b), 0);

	/* a buffer on a real filesystem, by absolute path */
	char abs[128];
	snprintf(abs, sizeof(abs), "/tmp/shmlog-test-%d.buf", (int)getpid());
	unlink(abs);
	CHECK_EQ(shmlog_create(abs, NULL), 0);
	CHECK_EQ(try_open(abs), 0);
	CHECK_EQ(shmlog_remove(abs), 0);
}

/* Many processes race to create the same default buffer on first write:
 * all succeed, one file results, nothing is lost. */
static void test_create_race(void)
{
	const char *b = test_buffer("race");
	enum { N = 8 };
	for (int i = 0; i < N; i++) {
		if (fork() == 0) {
			shmlog_t *h;
			if (shmlog_open(b, SHMLOG_OPEN_CREATE, &h))
				_exit(1);
			int err = shmlog_write(h, SHMLOG_INFO, "race", "hi");
			shmlog_close(h);
			_exit(err ? 2 : 0);
		}
	}
	int ok = 0, st;
	while (wait(&st) > 0)
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	CHECK_EQ(ok, N);
	struct shmlog_info in;
	CHECK_EQ(shmlog_stat(b, &in), 0);
	CHECK_EQ(in.written, N);
	shmlog_remove(b);
}

/* The moment a creator has given its file the buffer's name (test point
 * 15, before anything else it does): a writer and a reader that open the
 * name then must attach. When the name was given by link(2), the file had
 * a second name until the creator unlinked it, and openers racing the
 * creator were refused as if a hard link had been planted: under load, 7
 * of the 8 processes of test_create_race failed. */
static const char *published_name;
static int published_open = 1, published_seen;

static void at_publish(int point)
{
	if (point != 15 || !published_name)
		return;
	published_seen++;
	published_open = try_open(published_name);
}

static void test_open_while_published(void)
{
	const char *b = test_buffer("publish");
	shmlog_remove(b);
	published_name = b;
	shmlog__testpoint_hook = at_publish;
	CHECK_EQ(shmlog_create(b, NULL), 0);
	shmlog__testpoint_hook = NULL;
	published_name = NULL;
	CHECK_EQ(published_seen, 1);
	CHECK_EQ(published_open, 0);
	/* and one name is all it has afterwards */
	struct stat st;
	CHECK_EQ(stat(path_of(b), &st), 0);
	CHECK_EQ(st.st_nlink, 1);
	shmlog_remove(b);
}

/* Write @len bytes of @data as the file of @name. */
static void plant(const char *name, const void *data, size_t len, mode_t mode)
{
	const char *p = path_of(name);
	unlink(p);
	int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, mode);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, data, len) == (ssize_t)len);
	fchmod(fd, mode);
	close(fd);
}

static void test_hostile_files(void)
{
	const char *b = test_buffer("hostile");
	CHECK_EQ(try_open(b), -ENOENT);

	/* garbage and truncated files */
	static char junk[8192];
	memset(junk, 0xa5, sizeof(junk));
	plant(b, junk, sizeof(junk), 0600);
	CHECK_EQ(try_open(b), -EBADMSG);
	plant(b, junk, 100, 0600);
	CHECK_EQ(try_open(b), -ENODATA);
	plant(b, "", 0, 0600);
	CHECK_EQ(try_open(b), -ENODATA);

	/* a real buffer, then damaged in various ways */
	const char *good = test_buffer("good");
	REQUIRE(shmlog_create(good, NULL) == 0);
	int fd = open(path_of(good), O_RDONLY);
	REQUIRE(fd >= 0);
	struct stat st;
	fstat(fd, &st);
	char *img = malloc((size_t)st.st_size);
	REQUIRE(img && read(fd, img, (size_t)st.st_size) == st.st_size);
	close(fd);
	struct shmlog__fixed *f = (struct shmlog__fixed *)(void *)img;

	f->version_major = 99; /* a future format */
	f->checksum = shmlog__fnv1a(f, offsetof(struct shmlog__fixed, checksum));
	plant(b, img, (size_t)st.st_size, 0600);
	CHECK_EQ(try_open(b), -EPROTONOSUPPORT);

	/* format 1 (one ring per lane), checksum and all: refused by
	 * readers and writers alike, never read as chunks */
	f->version_major = 1;
	f->checksum = shmlog__fnv1a(f, offsetof(struct shmlog__fixed, checksum));
	plant(b, img, (size_t)st.st_size, 0600);
	shmlog_reader_t *r1 = NULL;
	CHECK_EQ(shmlog_reader_open(b, 0, &r1), -EPROTONOSUPPORT);
	shmlog_t *h1 = NULL;
	CHECK_EQ(shmlog_open(b, 0, &h1), -EPROTONOSUPPORT);
	f->version_major = SHMLOG__VERSION_MAJOR;
	f->checksum = shmlog__fnv1a(f, offsetof(struct shmlog__fixed, checksum));

	/* the chunk geometry: each change, checksum fixed up, is refused */
	const struct shmlog__fixed good_f = *f;
	struct {
		const char *what;
		uint32_t *field;
		uint32_t value;
		int err;
	} bad[] = {
		{"chunk_size not a power of two", &f->chunk_size,
		 good_f.chunk_size + 4096, -ENODATA},
		{"chunk_size not a power of two, odd", &f->chunk_size,
		 good_f.chunk_size - 8, -ENODATA},
		{"chunk_size below a page", &f->chunk_size, 2048, -ENODATA},
		{"chunk_size above 1 MiB", &f->chunk_size, 2u << 20, -ENODATA},
		{"chunk_size twice: chunks past the file", &f->chunk_size,
		 good_f.chunk_size * 2, -ENODATA},
		{"chunk_size half: the file ends past the chunks",
		 &f->chunk_size, good_f.chunk_size / 2, -ENODATA},
		{"one chunk more than the file holds", &f->chunk_count,
		 good_f.chunk_count + 1, -ENODATA},
		{"one chunk fewer", &f->chunk_count, good_f.chunk_count - 1,
		 -ENODATA},
		{"a chunk count that wraps the size", &f->chunk_count,
		 UINT32_MAX, -ENODATA},
		{"no chunks", &f->chunk_count, 0, -ENODATA},
		{"one chunk", &f->chunk_count, 1, -ENODATA},
		{"max_record over half a chunk", &f->max_record,
		 good_f.chunk_size / 2 + 8, -ENODATA},
		{"max_record not a multiple of 8", &f->max_record,
		 good_f.max_record - 4, -ENODATA},
		{"max_record below a header and the longest tag",
		 &f->max_record, REC_HDR + 8, -ENODATA},
		{"flags", &f->flags, 1, -EPROTONOSUPPORT},
		{"reserved", (uint32_t *)(void *)&f->reserved, 1,
		 -EPROTONOSUPPORT},
		{"reserved, high half", (uint32_t *)(void *)&f->reserved + 1,
		 0x80000000u, -EPROTONOSUPPORT},
		{"a format table of no pages", &f->fmt_size, 0, -ENODATA},
		{"a format table not of whole pages", &f->fmt_size,
		 good_f.fmt_size - 8, -ENODATA},
		{"a format table over the chunks", &f->fmt_size,
		 good_f.fmt_size + 4096, -ENODATA},
		{"a format table inside the descriptors",
		 (uint32_t *)(void *)&f->fmt_off, (uint32_t)good_f.chunks_off,
		 -ENODATA},
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		*f = good_f;
		*bad[k].field = bad[k].value;
		f->checksum = shmlog__fnv1a(f, offsetof(struct shmlog__fixed,
							 checksum));
		plant(b, img, (size_t)st.st_size, 0600);
		int got = try_open(b);
		if (got != bad[k].err)
			fprintf(stderr, "%s: %d, not %d\n", bad[k].what, got,
				bad[k].err);
		CHECK_EQ(got, bad[k].err);
	}
	/* the chunk table where the lanes are, or the data over it */
	struct {
		uint64_t *field;
		uint64_t value;
	} bad64[] = {
		{&f->chunks_off, good_f.lanes_off},
		{&f->chunks_off, good_f.chunks_off + 8},
		{&f->data_off, good_f.chunks_off},
		{&f->data_off, good_f.data_off + 4096},
		{&f->lanes_off, good_f.chunks_off},
	};
	for (size_t k = 0; k < sizeof(bad64) / sizeof(bad64[0]); k++) {
		*f = good_f;
		*bad64[k].field = bad64[k].value;
		f->checksum = shmlog__fnv1a(f, offsetof(struct shmlog__fixed,
							 checksum));
		plant(b, img, (size_t)st.st_size, 0600);
		CHECK_EQ(try_open(b), -ENODATA);
	}
	*f = good_f;

	f->checksum ^= 1; /* checksum mismatch */
	plant(b, img, (size_t)st.st_size, 0600);
	CHECK_EQ(try_open(b), -EBADMSG);
	f->checksum ^= 1;

	plant(b, img, (size_t)st.st_size - 4096, 0600); /* truncated */
	CHECK_EQ(try_open(b), -ENODATA);

	plant(b, img, (size_t)st.st_size, 0600); /* intact copy works */
	CHECK_EQ(try_open(b), 0);

	/* world-writable: anyone could forge records */
	plant(b, img, (size_t)st.st_size, 0666);
	chmod(path_of(b), 0666);
	CHECK_EQ(try_open(b), -EPERM);

	/* a symlink to a good buffer */
	unlink(path_of(b));
	CHECK_EQ(symlink(path_of(good), path_of(b)), 0);
	CHECK_EQ(try_open(b), -EPERM);
	CHECK_EQ(shmlog_remove(b), -EPERM);
	unlink(path_of(b));

	/* a FIFO: refused, and never blocks */
	CHECK_EQ(mkfifo(path_of(b), 0600), 0);
	CHECK_EQ(try_open(b), -EPERM);
	unlink(path_of(b));

	/* a hard link to a good buffer */
	CHECK_EQ(link(path_of(good), path_of(b)), 0);
	CHECK_EQ(try_open(b), -EPERM);
	unlink(path_of(b));
	CHECK_EQ(try_open(good), 0);

	/* a directory */
	CHECK_EQ(mkdir(path_of(b), 0700), 0);
	CHECK(try_open(b) != 0);
	rmdir(path_of(b));

	free(img);
	shmlog_remove(good);
}

int main(void)
{
	test_options();
	test_create_race();
	test_open_while_published();
	test_hostile_files();
	return test_done("test_segment");
}
