/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: every JSON output over a hostile printf-style record.
 *
 * Input: byte 0 picks a small buffer size for the values (3 + byte 0),
 * byte 1 the tag's length (at most 64), bytes 2-3 the format's length
 * (little-endian, at most what is left); then the tag, the format, and the
 * rest is the value block (src/fmtarg.c's layout, or anything).
 *
 * The block goes through shmlog__defer_args_json() (what
 * shmlog_reader_deferred() gives) into a buffer that holds it all and
 * into the small one, the format and block through the reader's
 * formatter (shmlog__fmt_format()), and the record so made through
 * tools/format.c in every format (json with the format and values, as
 * `shmlog cat -v json` shows them; threadtime, brief, long, raw, each
 * with and without "printable") and through the benchmarks' jsonw. Every
 * JSON output must be one valid JSON text and valid UTF-8
 * (tests/json_check.h), the small array a valid array of the first values
 * of the whole one; every text output valid UTF-8 with no control
 * character but newlines and tabs. A violated property aborts.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "internal.h"
#include "json.h"
#include "json_check.h"
#include "jsonw.h"

#define PROPERTY(c)                                                            \
	do {                                                                   \
		if (!(c))                                                      \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Valid UTF-8, and no C0 control but \n and \t, no DEL, no C1. */
static bool text_clean(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (!jc_utf8_valid(u, n))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((u[i] < 0x20 && u[i] != '\n' && u[i] != '\t') ||
		    u[i] == 0x7f ||
		    (u[i] == 0xc2 && i + 1 < n && u[i + 1] <= 0x9f))
			return false;
	return true;
}

/* The record through tools/format.c in @f's format; checked. The output
 * goes to a memory file (@o->fd), as it goes to stdout: a record of many
 * lines may be flushed in parts (out_room()); what is checked is all of
 * it, read back. */
static void through_format(struct out *o, const struct fmt *f,
			   const struct shmlog_record *r, const char *fmt,
			   const char *args, bool cut)
{
	static char buf[4u << 20];
	PROPERTY(ftruncate(o->fd, 0) == 0 && lseek(o->fd, 0, SEEK_SET) == 0);
	o->len = 0;
	fmt_record_deferred(o, f, r, fmt, args, cut);
	PROPERTY(out_flush(o) == 0);
	off_t end = lseek(o->fd, 0, SEEK_END);
	PROPERTY(end > 0 && (size_t)end <= sizeof(buf) &&
		 pread(o->fd, buf, (size_t)end, 0) == end);
	size_t len = (size_t)end;
	PROPERTY(buf[len - 1] == '\n');
	if (f->kind == FMT_JSON)
		PROPERTY(jc_json_valid(buf, len - 1) &&
			 !memchr(buf, '\n', len - 1));
	else
		PROPERTY(text_clean(buf, len));
	if (f->kind == FMT_RAW) /* one line a record */
		PROPERTY(!memchr(buf, '\n', len - 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char args[SHMLOG__JSON_STR_MAX(65536) + 64];
	static char small[260], text[SHMLOG_MSG_MAX + 1];
	static char fmt[65536 + 1], tag[SHMLOG_TAG_MAX + 1];
	static struct out o;
	if (size < 4)
		return 0;
	if (!o.buf) {
		int fd = memfd_create("fuzz-json-out", MFD_CLOEXEC);
		if (fd < 0 || out_open(&o, fd) != 0)
			abort();
	}
	size_t cap = 3 + (size_t)data[0];
	size_t tag_len = data[1] % (SHMLOG_TAG_MAX + 1);
	size_t fmt_len = (size_t)data[2] | (size_t)data[3] << 8;
	data += 4;
	size -= 4;
	if (tag_len > size)
		tag_len = size;
	memcpy(tag, data, tag_len);
	tag[tag_len] = '\0';
	data += tag_len;
	size -= tag_len;
	if (fmt_len > size)
		fmt_len = size;
	memcpy(fmt, data, fmt_len);
	fmt[fmt_len] = '\0';
	const unsigned char *blk = data + fmt_len;
	size_t blk_len = size - fmt_len;

	/* shmlog_reader_deferred()'s array, whole and cut */
	int rc = shmlog__defer_args_json(blk, blk_len, args, sizeof(args));
	PROPERTY(rc == 0 || rc == SHMLOG_DEFERRED_CUT);
	size_t n = strlen(args);
	PROPERTY(jc_json_valid(args, n) && args[0] == '[');
	int rs = shmlog__defer_args_json(blk, blk_len, small, cap);
	size_t m = strlen(small);
	PROPERTY(m < cap && jc_json_valid(small, m));
	if (n < cap)
		PROPERTY(rs == rc && !strcmp(small, args));
	else /* the first values: a prefix of the whole array, closed */
		PROPERTY(rs == SHMLOG_DEFERRED_CUT && m >= 2 &&
			 !memcmp(small, args, m - 1) &&
			 (args[m - 1] == ',' || m == 2));

	/* the message the reader makes, and the record shown */
	size_t t = shmlog__fmt_format(fmt, fmt_len, blk, blk_len, text,
				      sizeof(text));
	if (t >= sizeof(text))
		t = sizeof(text) - 1;
	struct shmlog_record r = {
		.seq = 1, .time_ns = 1700000000123456789, .pid = 1, .tid = 2,
		.prio = SHMLOG_INFO, .flags = SHMLOG_REC_DEFERRED, .tag = tag,
		.tag_len = tag_len, .msg = text, .msg_len = t,
	};
	static const enum fmt_kind kinds[] = {FMT_JSON, FMT_THREADTIME,
					      FMT_BRIEF, FMT_LONG, FMT_RAW};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (int printable = 0; printable < 2; printable++) {
			struct fmt f = {.kind = kinds[k], .utc = true,
					.printable = printable};
			through_format(&o, &f, &r, fmt, args, rc != 0);
		}
	}
	/* the raw block as a message, as `forward --to jsonl:` shows any
	 * record */
	r.msg = (const char *)blk;
	r.msg_len = blk_len < 65535 ? blk_len : 65535;
	through_format(&o, &(struct fmt){.kind = FMT_JSON, .utc = true}, &r,
		       NULL, NULL, false);

	/* the benchmarks' writer */
	char *doc = NULL;
	size_t doc_len = 0;
	FILE *mf = open_memstream(&doc, &doc_len);
	PROPERTY(mf != NULL);
	struct jsonw j;
	jsonw_init(&j, mf);
	jsonw_begin_obj(&j);
	jsonw_str(&j, tag, text);
	jsonw_str(&j, "fmt", fmt);
	jsonw_end_obj(&j);
	PROPERTY(jsonw_status(&j) == 0);
	fclose(mf);
	PROPERTY(jc_json_valid(doc, doc_len));
	free(doc);
	return 0;
}
