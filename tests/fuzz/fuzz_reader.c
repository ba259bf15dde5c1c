/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a reader over an arbitrary segment image.
 *
 * Input byte 0 is a mode:
 *   bit 0  open the reader with SHMLOG_READ_TAIL
 *   bit 1  raw: the rest of the input is the whole file; if it holds a
 *          fixed header, its checksum and file_size are fixed up so that
 *          the fuzzer explores the checks behind them
 *   else   overlay: the rest of the input replaces the bytes of a valid
 *          segment (16 lanes of 4 KiB, made once at start-up) from the end
 *          of its fixed header on: notify/stats/config lines, filter
 *          spec, lane table, records. This is where the reader's record
 *          walking is fuzzed; the seed corpus holds real segments.
 * The image is written to a file in /dev/shm, a reader opens it and reads
 * up to 4096 events and waits with no timeout; every record it returns
 * must be well-formed, a deferred one's values a valid JSON array (a
 * violated property aborts, a finding), and it must
 * never crash, hang or touch memory out of bounds (ASan, guard pages).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "json_check.h"

#define PROPERTY(c)                                                            \
	do {                                                                   \
		if (!(c))                                                      \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[128];
static unsigned char *tmpl; /* the valid segment the overlay starts from */
static size_t tmpl_size;

static void remove_file(void)
{
	unlink(path);
}

/* The template: built by the library, exactly as tests/fuzz/make_seeds.c
 * builds the seeds. */
static void init(void)
{
	atexit(remove_file); /* leave nothing in /dev/shm behind */
	snprintf(path, sizeof(path), "/dev/shm/shmlog-fuzz-%d", (int)getpid());
	unlink(path);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.lanes = 16;
	o.clock = SHMLOG_CLOCK_REALTIME;
	if (shmlog_create(path, &o) != 0)
		abort();
	int fd = open(path, O_RDONLY);
	off_t n = lseek(fd, 0, SEEK_END);
	tmpl = malloc((size_t)n);
	if (fd < 0 || n <= 0 || !tmpl || pread(fd, tmpl, (size_t)n, 0) != n)
		abort();
	tmpl_size = (size_t)n;
	close(fd);
	unlink(path);
}

static void put_file(const unsigned char *img, size_t n)
{
	unlink(path); /* a fresh file: the reader may still map the old */
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, img + done, n - done);
		if (w <= 0)
			abort();
		done += (size_t)w;
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!tmpl)
		init();
	if (size < 1)
		return 0;
	unsigned mode = data[0];
	data++;
	size--;
	unsigned char *img;
	size_t n;
	if (mode & 2) {
		n = size;
		img = malloc(n ? n : 1);
		memcpy(img, data, n);
		if (n >= sizeof(struct shmlog__fixed)) {
			struct shmlog__fixed f;
			memcpy(&f, img, sizeof(f));
			f.file_size = n;
			f.checksum = shmlog__fnv1a(
				&f, offsetof(struct shmlog__fixed, checksum));
			memcpy(img, &f, sizeof(f));
		}
	} else {
		size_t from = offsetof(struct shmlog__hdr, notify);
		n = tmpl_size;
		img = malloc(n);
		memcpy(img, tmpl, n);
		if (size > n - from)
			size = n - from;
		memcpy(img + from, data, size);
	}
	put_file(img, n);
	free(img);

	shmlog_reader_t *r;
	int flags = mode & 1 ? SHMLOG_READ_TAIL : 0;
	if (shmlog_reader_open(path, flags, &r) != 0)
		return 0;
	unsigned lanes = shmlog_reader_lanes(r);
	struct shmlog_record rec;
	struct shmlog_lost lost;
	for (int k = 0; k < 4096; k++) {
		int ev = shmlog_reader_next(r, &rec, &lost);
		if (ev == SHMLOG_EV_NONE)
			break;
		PROPERTY(ev == SHMLOG_EV_RECORD || ev == SHMLOG_EV_LOST);
		if (ev == SHMLOG_EV_LOST) {
			PROPERTY(lost.lane < lanes);
			continue;
		}
		PROPERTY(rec.lane < lanes);
		PROPERTY(rec.tag_len <= SHMLOG_TAG_MAX);
		PROPERTY(rec.tag[rec.tag_len] == '\0');
		PROPERTY(rec.msg_len <= SHMLOG_MSG_MAX + SHMLOG_TAG_MAX);
		PROPERTY(rec.msg[rec.msg_len] == '\0');
		PROPERTY(rec.prio >= SHMLOG_VERBOSE && rec.prio <= SHMLOG_FATAL);
		PROPERTY((rec.flags & ~(unsigned)(SHMLOG_REC_TRUNCATED |
						   SHMLOG_REC_DEFERRED)) == 0);
		if (rec.flags & SHMLOG_REC_DEFERRED) {
			/* formatted here from a hostile table and block */
			const char *fmt = NULL;
			char args[256];
			int rc = shmlog_reader_deferred(r, &fmt, args,
							sizeof(args));
			PROPERTY(rc == 0 || rc == SHMLOG_DEFERRED_CUT);
			PROPERTY(!fmt || strlen(fmt) <= SHMLOG_MSG_MAX);
			size_t a = strlen(args);
			PROPERTY(a < sizeof(args) && args[0] == '[' &&
				 args[a - 1] == ']');
			PROPERTY(jc_json_valid(args, a));
		}
	}
	for (unsigned i = 0; i < lanes; i++) {
		struct shmlog_lane_stats st;
		PROPERTY(shmlog_reader_lane_stats(r, i, &st) == 0);
	}
	/* the wait looks at every lane's head too; it must not block */
	int w = shmlog_reader_wait(r, 0);
	PROPERTY(w == 0 || w == -ETIMEDOUT || w == -EINTR);
	shmlog_reader_close(r);
	return 0;
}
