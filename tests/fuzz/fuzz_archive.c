/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: an archive reader (shmlog_reader_open_archive) over
 * one file of arbitrary bytes.
 *
 * Input: a flags byte, then the file. Flag bit 0 set: the file header's
 * and each block's CRC32C are fixed up, so that the fuzzer gets past them
 * and explores the entries behind. Bit 1 set: it is read as a dump
 * (SHMLOG_READ_DUMP). Whatever the bytes, the reader must
 * end (SHMLOG_EV_NONE within a bound no valid file of that size exceeds)
 * and every record it returns must lie within the limits it promises,
 * a printf-style one's format and values too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_format.h"
#include "archive_zstd.h"
#include "shmlog.h"

#define PROPERTY(c)                                                            \
	do {                                                                   \
		if (!(c))                                                      \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fix the checksums of @p (a file of @n bytes) where its lengths allow. */
static void fix_crcs(unsigned char *p, size_t n)
{
	struct shmlog_arc_file h;
	if (n < sizeof(h))
		return;
	memcpy(&h, p, sizeof(h));
	h.crc = shmlog__crc32c(0, &h, offsetof(struct shmlog_arc_file, crc));
	memcpy(p, &h, sizeof(h));
	size_t off = sizeof(h);
	while (off + sizeof(struct shmlog_arc_block) <= n) {
		struct shmlog_arc_block b;
		memcpy(&b, p + off, sizeof(b));
		if (b.len > n - off - sizeof(b))
			return;
		uint32_t crc = shmlog__crc32c(
			0, &b, offsetof(struct shmlog_arc_block, crc));
		b.crc = shmlog__crc32c(crc, p + off + sizeof(b), b.len);
		memcpy(p + off, &b, sizeof(b));
		off += sizeof(b) + b.len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[64], file[128];
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/shmlog-fuzz-arc.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(file, sizeof(file),
			 "%s/" SHMLOG_ARC_PREFIX "0000000000000001" SHMLOG_ARC_SUFFIX,
			 dir);
	}
	if (!size)
		return 0;
	size_t n = size - 1;
	unsigned char *p = malloc(n ? n : 1);
	if (!p)
		return 0;
	memcpy(p, data + 1, n);
	if (data[0] & 1)
		fix_crcs(p, n);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
	free(p);
	shmlog_reader_t *r;
	int flags = data[0] & 2 ? SHMLOG_READ_DUMP : 0;
	if (shmlog_reader_open_archive(dir, flags, &r) == 0) {
		struct shmlog_record rec;
		struct shmlog_lost lost;
		size_t events = 0;
		/* a record takes 5 bytes at least (in a run; an entry of
		 * its own, 48), of the file or of what a compressed block
		 * unpacks to: a block of 16 bytes at least, unpacked to
		 * SHMLOG_ARC_BLOCK_MAX at most */
		size_t bound = n / 5 + n / 16 * (SHMLOG_ARC_BLOCK_MAX / 5);
		bool said = false;
		int ev;
		for (;;) {
			ev = shmlog_reader_next(r, &rec, &lost);
			if (ev == -ENOTSUP && !said &&
			    !shmlog__zstd_available()) {
				said = true; /* once, then it goes on */
				continue;
			}
			if (ev <= 0)
				break;
			PROPERTY(++events <= bound);
			if (ev != SHMLOG_EV_RECORD)
				continue;
			PROPERTY(rec.tag_len <= SHMLOG_TAG_MAX);
			PROPERTY(rec.msg_len <= SHMLOG_MSG_MAX);
			PROPERTY(rec.tag[rec.tag_len] == '\0');
			PROPERTY(rec.msg[rec.msg_len] == '\0');
			PROPERTY(rec.lane < SHMLOG_LANES_MAX);
			PROPERTY(rec.prio >= SHMLOG_VERBOSE &&
				 rec.prio <= SHMLOG_FATAL);
			/* a printf-style record (version 2 on): its format, if
			 * the file has it, and its values as JSON, bounded */
			static char args[SHMLOG_DEFERRED_ARGS_MAX];
			const char *fmt = NULL;
			int d = shmlog_reader_deferred(r, &fmt, args,
						       sizeof(args));
			if (!(rec.flags & SHMLOG_REC_DEFERRED)) {
				PROPERTY(d == -ENOENT);
				continue;
			}
			PROPERTY(d == 0 || d == SHMLOG_DEFERRED_CUT);
			PROPERTY(memchr(args, '\0', sizeof(args)) != NULL);
			PROPERTY(!fmt || strlen(fmt) <= SHMLOG_MSG_MAX);
		}
		PROPERTY(ev == SHMLOG_EV_NONE);
		/* a second call at the end says the same */
		PROPERTY(shmlog_reader_next(r, &rec, &lost) == SHMLOG_EV_NONE);
		shmlog_reader_close(r);
	}
	unlink(file);
	return 0;
}
