/* SPDX-License-Identifier: MIT */
/*
 * archive_check --entries DIR: the kinds of entries DIR's files hold, a
 * line each ("span 12", "run 3", ...), then the records in each form
 * ("run-records N", "span-records N"), for tests that check which form
 * the archiver chose.
 *
 * archive_check DIR [WRITTEN] [--no-loss] [--msg-seq] [--thread-seq]
 * [--first SEQ]: read
 * an archive through the library (shmlog_reader_open_archive) and check
 * what `shmlog archive` guarantees, exiting 1 with the reason otherwise:
 *  - per lane, records and losses follow each other with no overlap and
 *    no hole: each starts where the one before ended (no record twice);
 *  - with WRITTEN: records + records lost = WRITTEN, exactly;
 *  - with --first: each lane's first record or loss begins at SEQ (the
 *    buffer's first sequence number: the archive accounts for every
 *    record its buffer numbered);
 *  - with --no-loss: no loss at all;
 *  - with --msg-seq: messages are 1, 2, 3 ... in archive order (one
 *    writer wrote `seq 1 N`), so none is missing, doubled or reordered;
 *  - with --thread-seq: messages are "ID K", and each ID's K are 1, 2,
 *    3 ... in archive order (threads that move between lanes, numbered
 *    ID: archive_writer movers).
 * Prints "records N lost N corrupt N".
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_codec.h"
#include "shmlog.h"

/* --entries: every valid block of every file of @dir, its entries by
 * type, how many blocks were zstd-compressed ("zblock N"), and the
 * records in RUN and in SPAN entries ("run-records N", "span-records
 * N"). */
static int entries(const char *dir)
{
	static const char *const names[] = {"?", "record", "loss", "buffer",
					    "format", "run", "span"};
	uint64_t count[7] = {0}, zblocks = 0, run_records = 0,
		 span_records = 0;
	DIR *d = opendir(dir);
	if (!d) {
		perror(dir);
		return 1;
	}
	struct dirent *e;
	unsigned char *buf = NULL;
	size_t cap = 0;
	while ((e = readdir(d))) {
		uint64_t no;
		if (!shmlog__arc_file_number(e->d_name, &no))
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		uint64_t off = sizeof(struct shmlog_arc_file);
		uint32_t len;
		/* each turn moves past a block: bounded by the file */
		for (;;) {
			uint32_t magic = 0;
			if (pread(fd, &magic, 4, (off_t)off) != 4 ||
			    shmlog__arc_block_read(fd, &off, &buf, &cap, &len) !=
				    SHMLOG__ARC_BLK_OK)
				break;
			zblocks += magic == SHMLOG_ARC_ZBLOCK_MAGIC;
			struct shmlog_arc_entry en;
			for (size_t pos = 0;
			     shmlog__arc_entry_at(buf, len, pos, &en);
			     pos += en.size) {
				count[en.type < 7 ? en.type : 0]++;
				uint32_t k = 0;
				if (en.type == SHMLOG_ARC_RUN &&
				    en.size >= sizeof(struct shmlog_arc_run)) {
					memcpy(&k, buf + pos + offsetof(struct shmlog_arc_run, count), 4);
					run_records += k;
				} else if (en.type == SHMLOG_ARC_SPAN &&
					   en.size >= sizeof(struct shmlog_arc_span)) {
					memcpy(&k, buf + pos + offsetof(struct shmlog_arc_span, count), 4);
					span_records += k;
				}
			}
		}
		close(fd);
	}
	closedir(d);
	free(buf);
	for (int t = 0; t < 7; t++)
		if (count[t])
			printf("%s %" PRIu64 "\n", names[t], count[t]);
	if (zblocks)
		printf("zblock %" PRIu64 "\n", zblocks);
	printf("run-records %" PRIu64 "\nspan-records %" PRIu64 "\n",
	       run_records, span_records);
	return 0;
}

static int fail(const char *what, unsigned lane, uint64_t a, uint64_t b)
{
	fprintf(stderr, "archive_check: %s (lane %u: %" PRIu64 " vs %" PRIu64
			")\n", what, lane, a, b);
	return 1;
}

/* --thread-seq: the next K of each ID, in a table by ID (open
 * addressing) */
#define THREADS_MAX 65536
static uint64_t thread_id[THREADS_MAX];
static uint64_t thread_next[THREADS_MAX]; /* 0: a free place */

static uint64_t *thread_expect(uint64_t id)
{
	for (unsigned i = 0, h = (unsigned)(id % THREADS_MAX); i < THREADS_MAX;
	     i++, h = (h + 1) % THREADS_MAX) {
		if (thread_next[h] && thread_id[h] == id)
			return &thread_next[h];
		if (!thread_next[h]) {
			thread_id[h] = id;
			thread_next[h] = 1;
			return &thread_next[h];
		}
	}
	return NULL;
}

/* Is @rec's message @prefix (@plen bytes) then the number @expect? */
static bool msg_is(const struct shmlog_record *rec, const char *prefix,
		   size_t plen, uint64_t expect)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, expect);
	return rec->msg_len == plen + (size_t)n &&
	       !memcmp(rec->msg, prefix, plen) &&
	       !memcmp(rec->msg + plen, buf, (size_t)n);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--entries"))
		return entries(argv[2]);
	if (argc < 2) {
		fprintf(stderr, "usage: archive_check DIR [WRITTEN] "
				"[--no-loss] [--msg-seq] [--thread-seq] "
				"[--first SEQ]\n"
				"       archive_check --entries DIR\n");
		return 2;
	}
	bool no_loss = false, msg_seq = false, thread_seq = false;
	bool have_written = false;
	bool have_first = false;
	uint64_t written = 0, first_seq = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--first") && i + 1 < argc) {
			first_seq = strtoull(argv[++i], NULL, 10);
			have_first = true;
		} else if (!strcmp(argv[i], "--no-loss"))
			no_loss = true;
		else if (!strcmp(argv[i], "--msg-seq"))
			msg_seq = true;
		else if (!strcmp(argv[i], "--thread-seq"))
			thread_seq = true;
		else {
			written = strtoull(argv[i], NULL, 10);
			have_written = true;
		}
	}
	shmlog_reader_t *r;
	int err = shmlog_reader_open_archive(argv[1], 0, &r);
	if (err) {
		fprintf(stderr, "archive_check: %s: %s\n", argv[1],
			shmlog_strerror(err));
		return 1;
	}
	static uint64_t next[SHMLOG_LANES_MAX];
	static bool known[SHMLOG_LANES_MAX];
	uint64_t records = 0, lost = 0, expect_msg = 1;
	struct shmlog_record rec;
	struct shmlog_lost l;
	int ev, rc = 0;
	while (!rc && (ev = shmlog_reader_next(r, &rec, &l)) > 0) {
		if (ev == SHMLOG_EV_LOST) {
			uint64_t first, last;
			if (shmlog_reader_lost_seq(r, &first, &last))
				rc = fail("a loss without its range", l.lane, 0, 0);
			else if (last - first + 1 != l.overwritten + l.torn)
				rc = fail("a loss's count is not its range",
					  l.lane, last - first + 1,
					  l.overwritten + l.torn);
			else if (known[l.lane] && first != next[l.lane])
				rc = fail("a loss does not start where the lane "
					  "stood", l.lane, first, next[l.lane]);
			else if (!known[l.lane] && have_first &&
				 first != first_seq)
				rc = fail("a lane's first loss does not start at "
					  "the buffer's first number",
					  l.lane, first, first_seq);
			else if (no_loss)
				rc = fail("a loss", l.lane, first, last);
			lost += l.overwritten + l.torn;
			next[l.lane] = last + 1;
			known[l.lane] = true;
			continue;
		}
		if (rec.lane >= SHMLOG_LANES_MAX)
			rc = fail("lane out of range", rec.lane, 0, 0);
		else if (known[rec.lane] && rec.seq != next[rec.lane])
			rc = fail(rec.seq < next[rec.lane]
					  ? "a record twice or out of order"
					  : "a hole with no loss",
				  rec.lane, rec.seq, next[rec.lane]);
		else if (!known[rec.lane] && have_first && rec.seq != first_seq)
			rc = fail("a lane's first record is not the buffer's "
				  "first number", rec.lane, rec.seq, first_seq);
		if (!rc && msg_seq) {
			if (!msg_is(&rec, "", 0, expect_msg))
				rc = fail("message out of sequence", rec.lane,
					  strtoull(rec.msg, NULL, 10),
					  expect_msg);
			expect_msg++;
		}
		if (!rc && thread_seq) {
			const char *sp = memchr(rec.msg, ' ', rec.msg_len);
			size_t plen = sp ? (size_t)(sp - rec.msg) + 1 : 0;
			uint64_t *e = sp ? thread_expect(strtoull(rec.msg, NULL,
								  10))
					 : NULL;
			if (!e)
				rc = fail("not \"ID K\", or more IDs than the "
					  "check holds", rec.lane, plen,
					  THREADS_MAX);
			else if (!msg_is(&rec, rec.msg, plen, *e))
				rc = fail("a thread's message out of sequence",
					  rec.lane, strtoull(rec.msg + plen, NULL,
							     10),
					  *e);
			else
				++*e;
		}
		next[rec.lane] = rec.seq + 1;
		known[rec.lane] = true;
		records++;
	}
	struct shmlog_lane_stats st;
	shmlog_reader_lane_stats(r, 0, &st);
	shmlog_reader_close(r);
	printf("records %" PRIu64 " lost %" PRIu64 " corrupt %" PRIu64 "\n",
	       records, lost, st.corrupt);
	if (!rc && st.corrupt)
		rc = fail("damaged places in the archive", 0, st.corrupt, 0);
	if (!rc && have_written && records + lost != written)
		rc = fail("archived + lost != written", 0, records + lost,
			  written);
	return rc;
}
