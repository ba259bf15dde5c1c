/* SPDX-License-Identifier: MIT */
/*
 * The archive's file format: what `shmlog archive` writes and
 * shmlog_reader_open_archive() reads. docs/archive.md has the same, byte
 * by byte, for people; this header is the one place the structures live,
 * each field's offset checked below.
 *
 * An archive is a directory of files named shmlog-NNNNNNNNNNNNNNNN.arc
 * (N: the file's number, 16 decimal digits, one more for each new file;
 * the highest is the newest). Every integer is little-endian.
 *
 *   file   = file header (128 bytes), then blocks
 *   block  = block header (16 bytes), then @len bytes of entries
 *   entry  = entry header (8 bytes: size, type), then the type's body
 *
 * A block is written by one write(2) and carries a CRC32C over its header's
 * first 12 bytes and its entries (or, compressed, version 5, the zstd
 * frame that holds them): a block whose checksum fails, or that
 * runs past the end of the file, is where the valid file ends (a torn tail:
 * the archiver cuts it off when it starts again). Readers never trust a
 * length: each is checked against the block and the file before use.
 *
 * Each file starts (its first block) with one BUFFER entry per buffer
 * archived: the buffer's identity and, for every lane, the sequence number
 * of the lane's next record still to archive. So a file alone says where
 * the archive resumes, and removing the oldest files loses nothing but
 * their records. The position to resume from is the newest file's BUFFER
 * entries advanced by its records and LOSS entries: no separate state file.
 *
 * Records (version 4) go in SPAN entries, a lane's records exactly as the
 * buffer stores them (struct shmlog_arc_span), copied whole from a chunk
 * with the clock piece that turns their raw times into wall time; or
 * (version 3: merged lanes, the disk lagging, `shmlog archive --compact`)
 * in RUN entries, each record coded against the one before it in the run
 * (struct shmlog_arc_run): a few bytes beside the message, which is kept
 * as stored. Versions 1 and 2
 * wrote a RECORD entry per record, 48 bytes of fields beside tag and
 * message; they read as they always did. archive_codec.h is the parser of
 * all of it.
 *
 * A printf-style record (SHMLOG_WRITE_DEFERRED) is kept as the buffer
 * stores it, its format's id and its argument values, and formatted only
 * when read. The file holds, before the first record that uses it, a
 * FORMAT entry with the format's text: each file is read alone, its
 * formats in it, whatever became of the buffer and the older files.
 * Times are wall clock: RECORD and RUN entries hold them converted when
 * archived with the buffer's clock anchors (the conversion every reader of
 * the buffer makes); a SPAN entry holds the piece of that conversion its
 * records fall in, so a reader of the archive needs no anchors either;
 * @raw_time is kept for ordering.
 */
#ifndef SHMLOG_ARCHIVE_FORMAT_H
#define SHMLOG_ARCHIVE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SHMLOG_ARC_MAGIC "shmlARC\n"
/* 2: printf-style records as stored (RECORD flag SHMLOG_ARC_REC_DEFERRED)
 * and FORMAT entries. 3: records in RUN entries, compact (below), instead
 * of one RECORD entry each. 4: SPAN entries too (below). Readers take
 * files of every earlier version: they hold no SPAN entries (before 4), no
 * RUN entries (before 3), no FORMAT entries (1), so every record of theirs
 * reads as it did. */
#define SHMLOG_ARC_VERSION 5
#define SHMLOG_ARC_VERSION_MIN 1
/* 5: blocks may be compressed (ZBLK, below). A file holds them only if it
 * says 5: `shmlog archive` without --zstd writes version 4, which readers
 * of version 4 take. */
#define SHMLOG_ARC_VERSION_PLAIN 4
#define SHMLOG_ARC_HOST_MAX 64
#define SHMLOG_ARC_BLOCK_MAGIC 0x4b4c4253u /* "SBLK" */
/* A compressed block (version 5): its @len bytes after the header are one
 * zstd frame, its content size in the frame's header, at most
 * SHMLOG_ARC_BLOCK_MAX; unpacked, the entries of a block. The CRC32C is
 * of the header's first 12 bytes and the frame, checked before it is
 * unpacked. */
#define SHMLOG_ARC_ZBLOCK_MAGIC 0x4b4c425au /* "ZBLK" */
/* A block's entries: at most this many bytes (readers refuse more). */
#define SHMLOG_ARC_BLOCK_MAX (4u << 20)
/* A file name: "shmlog-" 16 digits ".arc". */
#define SHMLOG_ARC_PREFIX "shmlog-"
#define SHMLOG_ARC_SUFFIX ".arc"
#define SHMLOG_ARC_NAME_LEN (7 + 16 + 4)

/* The number of an archive file named @name (SHMLOG_ARC_PREFIX, 16
 * decimal digits, SHMLOG_ARC_SUFFIX) into *@no; false for any other
 * name. */
static inline bool shmlog__arc_file_number(const char *name, uint64_t *no)
{
	size_t plen = strlen(SHMLOG_ARC_PREFIX);
	if (strlen(name) != SHMLOG_ARC_NAME_LEN ||
	    strncmp(name, SHMLOG_ARC_PREFIX, plen) ||
	    strcmp(name + plen + 16, SHMLOG_ARC_SUFFIX))
		return false;
	uint64_t v = 0;
	for (size_t i = plen; i < plen + 16; i++) {
		if (name[i] < '0' || name[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	*no = v;
	return true;
}
/* Bytes of a buffer's path kept in a BUFFER entry. */
#define SHMLOG_ARC_PATH_MAX 1024

struct shmlog_arc_file {
	char magic[8]; /* SHMLOG_ARC_MAGIC */
	uint32_t version; /* SHMLOG_ARC_VERSION */
	uint32_t header_size; /* sizeof(struct shmlog_arc_file) */
	uint64_t file_no; /* as in the file's name */
	int64_t created_ns; /* CLOCK_REALTIME when the file was made */
	char host[SHMLOG_ARC_HOST_MAX]; /* gethostname(), NUL-padded */
	uint8_t reserved[28]; /* 0 */
	uint32_t crc; /* CRC32C of every byte above */
};

struct shmlog_arc_block {
	uint32_t magic; /* SHMLOG_ARC_BLOCK_MAGIC */
	uint32_t len; /* bytes of entries after this header */
	uint32_t entries; /* how many */
	uint32_t crc; /* CRC32C of bytes 0..11, then of the entries */
};

enum shmlog_arc_type {
	SHMLOG_ARC_RECORD = 1,
	SHMLOG_ARC_LOSS = 2,
	SHMLOG_ARC_BUFFER = 3,
	SHMLOG_ARC_FORMAT = 4, /* version 2 */
	SHMLOG_ARC_RUN = 5, /* version 3 */
	SHMLOG_ARC_SPAN = 6, /* version 4 */
};

/* Every entry starts with these 8 bytes; @size counts them. Unknown types
 * are skipped by their size. */
struct shmlog_arc_entry {
	uint32_t size; /* bytes of the whole entry */
	uint8_t type; /* enum shmlog_arc_type */
	uint8_t reserved; /* 0 */
	uint16_t buf; /* the buffer (its BUFFER entry's @buf) */
};

/* A record, then its tag (@tag_len bytes) and message (@msg_len bytes),
 * no NULs added: size = 48 + tag_len + msg_len. With flag
 * SHMLOG_ARC_REC_DEFERRED (version 2), a printf-style record as the
 * buffer stores it: the message is its format's id (u32: a FORMAT entry
 * of the same @buf earlier in the file) and the values (fmtarg.h's
 * argument block), formatted by the reader. */
struct shmlog_arc_record {
	struct shmlog_arc_entry e;
	uint16_t lane;
	uint8_t prio;
	uint8_t flags; /* SHMLOG_REC_TRUNCATED, SHMLOG_ARC_REC_DEFERRED */
	uint32_t pid;
	uint32_t tid;
	uint16_t tag_len; /* <= SHMLOG_TAG_MAX */
	uint16_t msg_len; /* <= SHMLOG_MSG_MAX */
	uint64_t seq;
	int64_t time_ns; /* wall clock, ns since the Epoch */
	uint64_t raw_time; /* the buffer's clock value */
};

#define SHMLOG_ARC_REC_DEFERRED 0x2 /* = SHMLOG_REC_DEFERRED */

/* A format of buffer @e.buf's table (version 2): its id there, then its
 * text (@len bytes, no NUL) padded with zeros to 8: size = 16 + len
 * rounded up to 8. A later FORMAT entry of the same buffer and id
 * replaces an earlier one (the same text: a file says it again). */
struct shmlog_arc_format {
	struct shmlog_arc_entry e;
	uint32_t id; /* the format's id: a deferred record's first 4 bytes */
	uint32_t len; /* 1 .. SHMLOG_MSG_MAX */
};

/* Records of a lane that are not in the archive: seq @first..@last
 * (inclusive), @overwritten + @torn + @unstored of them. */
struct shmlog_arc_loss {
	struct shmlog_arc_entry e;
	uint16_t lane;
	uint16_t reserved; /* 0 */
	uint32_t reserved2; /* 0 */
	uint64_t first, last;
	uint64_t overwritten; /* gone from the buffer before it was read */
	uint64_t torn; /* writer died mid-record, or failed validation */
	uint64_t unstored; /* read, but could not be written (reserved) */
};

/* A buffer: its identity, then its path (@path_len bytes, no NUL), then
 * @known pairs of (u32 lane, u32 0, u64 next_seq), 16 bytes each: lanes
 * not listed have no known position. size = 48 + path_len rounded up to
 * 8 + 16 * known. Within a file a later BUFFER entry for the same @buf
 * replaces the earlier one (the buffer was created again). */
struct shmlog_arc_buffer {
	struct shmlog_arc_entry e;
	uint16_t lanes; /* lanes of the buffer */
	uint16_t path_len; /* <= SHMLOG_ARC_PATH_MAX */
	uint32_t known; /* lane positions that follow the path */
	int64_t created_ns; /* the segment's creation time */
	uint64_t ino; /* the file's inode when it was archived */
	uint64_t initial_seq; /* the first sequence number of every lane */
	uint64_t reserved; /* 0 */
};

struct shmlog_arc_lanepos {
	uint32_t lane;
	uint32_t reserved; /* 0 */
	uint64_t next;
};

/* A run of records (version 3), of any of the archive's buffers (@e.buf
 * is 0: each context names its buffer): @count records follow, each
 * coded against the one before it in the run (a reader decodes a run from
 * its start; nothing carries over from one run to the next):
 *
 *   head    u8: bits 0-2 prio, bit 3 truncated by the writer, bit 4
 *           printf-style as stored (as SHMLOG_ARC_REC_DEFERRED), bit 5 an
 *           explicit seq follows, bit 6 a new context follows, bit 7 the
 *           context of the record before (bits 6 and 7 never both)
 *   context bit 6: varint buf, varint lane, varint pid, varint tid, u8
 *           tag_len, the tag: the run's next context (numbered from 0, at
 *           most SHMLOG_ARC_RUN_CTX_MAX); neither bit 6 nor 7: u8, the
 *           number of a context given earlier in the run
 *   seq     bit 5: varint, the record's sequence number; else one more than
 *           the run's record before it in the same buffer and lane (the
 *           first record of a lane in a run always has bit 5)
 *   time    zigzag varint: time_ns minus the record before's (the first:
 *           minus @base_time_ns)
 *   raw     zigzag varint: raw_time minus the record before's (the first:
 *           minus @base_raw_time)
 *   msg     varint msg_len (at most SHMLOG_MSG_MAX), then the message
 *
 * A varint is 7 bits a byte, the low ones first, the top bit set on every
 * byte but the last, 10 bytes at most; zigzag maps a signed value v to
 * (v << 1) ^ (v >> 63). */
struct shmlog_arc_run {
	struct shmlog_arc_entry e;
	uint32_t count; /* records in the run */
	uint32_t reserved; /* 0 */
	int64_t base_time_ns;
	uint64_t base_raw_time;
};

#define SHMLOG_ARC_RUN_PRIO 0x07
#define SHMLOG_ARC_RUN_TRUNCATED 0x08
#define SHMLOG_ARC_RUN_DEFERRED 0x10
#define SHMLOG_ARC_RUN_SEQ 0x20
#define SHMLOG_ARC_RUN_NEWCTX 0x40
#define SHMLOG_ARC_RUN_SAMECTX 0x80
/* Contexts (lane, pid, tid, tag) one run may define. */
#define SHMLOG_ARC_RUN_CTX_MAX 255
/* The most bytes one record takes in a run. */
#define SHMLOG_ARC_RUN_REC_MAX                                                 \
	(1 + 10 + 10 + 10 + 10 + 1 + SHMLOG_TAG_MAX + 10 + 10 + 10 + 10 +     \
	 SHMLOG_MSG_MAX)

/* Records of one lane (version 4), exactly as the buffer stores them: the
 * buffer's 40-byte record header (docs/DESIGN.md, "Records"; its first
 * word, the record's place in the buffer, means nothing here), its tag and
 * message, then zeros to the record's @len, a multiple of 8; @count of
 * them back to back, with sequence numbers @first_seq, @first_seq + 1, and
 * so on. size = 48 + the records' lengths.
 *
 * A record's time in ns since the Epoch is its raw time on the piece of
 * the buffer's clock conversion the span was taken in (see
 * shmlog__arc_span_time()): base_ns + ((raw - base_raw) * mult >> shift),
 * the difference and the product signed, 128 bits wide. */
struct shmlog_arc_span {
	struct shmlog_arc_entry e;
	uint16_t lane;
	uint8_t shift; /* 0 .. 63 */
	uint8_t reserved; /* 0 */
	uint32_t count; /* records in the span, at least 1 */
	uint64_t first_seq;
	uint64_t base_raw;
	int64_t base_ns;
	uint64_t mult;
};

/* A record's header in a SPAN entry: the buffer's, as it stores it. */
struct shmlog_arc_span_rec {
	uint64_t word; /* the buffer's; ignored */
	uint64_t seq;
	uint64_t raw_time;
	uint32_t pid;
	uint32_t tid;
	uint16_t len; /* the whole record: header, tag, message, zeros */
	uint16_t msg_len; /* <= SHMLOG_MSG_MAX */
	uint8_t prio; /* 0 .. 7 */
	uint8_t flags; /* SHMLOG_REC_TRUNCATED, SHMLOG_ARC_REC_DEFERRED */
	uint8_t tag_len; /* <= SHMLOG_TAG_MAX */
	uint8_t reserved;
};

/* The wall time of raw time @raw on the clock piece of span @h. */
static inline int64_t shmlog__arc_span_time(const struct shmlog_arc_span *h,
					    uint64_t raw)
{
	/* unsigned sums: a hostile piece wraps, it never overflows */
	__int128 v = (__int128)(int64_t)(raw - h->base_raw) * (__int128)h->mult;
	return (int64_t)((uint64_t)h->base_ns +
			 (uint64_t)(unsigned __int128)(v >> (h->shift & 63)));
}

#define SHMLOG_ARC_AT(type, field, off)                                        \
	_Static_assert(offsetof(type, field) == (off),                          \
		       #type "." #field " at byte " #off)
SHMLOG_ARC_AT(struct shmlog_arc_file, version, 8);
SHMLOG_ARC_AT(struct shmlog_arc_file, header_size, 12);
SHMLOG_ARC_AT(struct shmlog_arc_file, file_no, 16);
SHMLOG_ARC_AT(struct shmlog_arc_file, created_ns, 24);
SHMLOG_ARC_AT(struct shmlog_arc_file, host, 32);
SHMLOG_ARC_AT(struct shmlog_arc_file, reserved, 96);
SHMLOG_ARC_AT(struct shmlog_arc_file, crc, 124);
_Static_assert(sizeof(struct shmlog_arc_file) == 128, "file header: 128");
SHMLOG_ARC_AT(struct shmlog_arc_block, len, 4);
SHMLOG_ARC_AT(struct shmlog_arc_block, entries, 8);
SHMLOG_ARC_AT(struct shmlog_arc_block, crc, 12);
_Static_assert(sizeof(struct shmlog_arc_block) == 16, "block header: 16");
SHMLOG_ARC_AT(struct shmlog_arc_entry, type, 4);
SHMLOG_ARC_AT(struct shmlog_arc_entry, buf, 6);
_Static_assert(sizeof(struct shmlog_arc_entry) == 8, "entry header: 8");
SHMLOG_ARC_AT(struct shmlog_arc_record, lane, 8);
SHMLOG_ARC_AT(struct shmlog_arc_record, prio, 10);
SHMLOG_ARC_AT(struct shmlog_arc_record, flags, 11);
SHMLOG_ARC_AT(struct shmlog_arc_record, pid, 12);
SHMLOG_ARC_AT(struct shmlog_arc_record, tid, 16);
SHMLOG_ARC_AT(struct shmlog_arc_record, tag_len, 20);
SHMLOG_ARC_AT(struct shmlog_arc_record, msg_len, 22);
SHMLOG_ARC_AT(struct shmlog_arc_record, seq, 24);
SHMLOG_ARC_AT(struct shmlog_arc_record, time_ns, 32);
SHMLOG_ARC_AT(struct shmlog_arc_record, raw_time, 40);
_Static_assert(sizeof(struct shmlog_arc_record) == 48, "record: 48");
SHMLOG_ARC_AT(struct shmlog_arc_format, id, 8);
SHMLOG_ARC_AT(struct shmlog_arc_format, len, 12);
_Static_assert(sizeof(struct shmlog_arc_format) == 16, "format: 16");
SHMLOG_ARC_AT(struct shmlog_arc_loss, lane, 8);
SHMLOG_ARC_AT(struct shmlog_arc_loss, first, 16);
SHMLOG_ARC_AT(struct shmlog_arc_loss, last, 24);
SHMLOG_ARC_AT(struct shmlog_arc_loss, overwritten, 32);
SHMLOG_ARC_AT(struct shmlog_arc_loss, torn, 40);
SHMLOG_ARC_AT(struct shmlog_arc_loss, unstored, 48);
_Static_assert(sizeof(struct shmlog_arc_loss) == 56, "loss: 56");
SHMLOG_ARC_AT(struct shmlog_arc_buffer, lanes, 8);
SHMLOG_ARC_AT(struct shmlog_arc_buffer, path_len, 10);
SHMLOG_ARC_AT(struct shmlog_arc_buffer, known, 12);
SHMLOG_ARC_AT(struct shmlog_arc_buffer, created_ns, 16);
SHMLOG_ARC_AT(struct shmlog_arc_buffer, ino, 24);
SHMLOG_ARC_AT(struct shmlog_arc_buffer, initial_seq, 32);
_Static_assert(sizeof(struct shmlog_arc_buffer) == 48, "buffer: 48");
_Static_assert(sizeof(struct shmlog_arc_lanepos) == 16, "lane pos: 16");
SHMLOG_ARC_AT(struct shmlog_arc_run, count, 8);
SHMLOG_ARC_AT(struct shmlog_arc_run, base_time_ns, 16);
SHMLOG_ARC_AT(struct shmlog_arc_run, base_raw_time, 24);
_Static_assert(sizeof(struct shmlog_arc_run) == 32, "run: 32");
SHMLOG_ARC_AT(struct shmlog_arc_span, lane, 8);
SHMLOG_ARC_AT(struct shmlog_arc_span, shift, 10);
SHMLOG_ARC_AT(struct shmlog_arc_span, count, 12);
SHMLOG_ARC_AT(struct shmlog_arc_span, first_seq, 16);
SHMLOG_ARC_AT(struct shmlog_arc_span, base_raw, 24);
SHMLOG_ARC_AT(struct shmlog_arc_span, base_ns, 32);
SHMLOG_ARC_AT(struct shmlog_arc_span, mult, 40);
_Static_assert(sizeof(struct shmlog_arc_span) == 48, "span: 48");
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, seq, 8);
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, raw_time, 16);
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, pid, 24);
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, tid, 28);
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, len, 32);
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, msg_len, 34);
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, prio, 36);
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, flags, 37);
SHMLOG_ARC_AT(struct shmlog_arc_span_rec, tag_len, 38);
_Static_assert(sizeof(struct shmlog_arc_span_rec) == 40, "span record: 40");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the archive format is little-endian");

/* ---- CRC32C (Castagnoli), as iSCSI and ext4 use it ---- */

/* The table for the byte-at-a-time path, built on first use (two threads
 * building it at once store the same values). */
static inline const uint32_t *shmlog__crc32c_table(void)
{
	static uint32_t table[256];
	static int ready;
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
			table[i] = c;
		}
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	return table;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The crc32 instruction takes 3 cycles and starts one a cycle: three
 * streams over three runs of SHMLOG__CRC_RUN bytes go three times as fast
 * as one, their registers joined after: the register of A then B is
 * shift(register of A) ^ (register of B from 0), shift being "then
 * SHMLOG__CRC_RUN zero bytes", linear in the register, so four tables of
 * 256 (one per byte of it) hold it. */
#define SHMLOG__CRC_RUN 4096

__attribute__((target("sse4.2"))) static inline uint64_t
shmlog__crc32c_run(uint64_t c, const unsigned char *p, size_t n)
{
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;
		__builtin_memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	return c;
}

/* shift(): register @c followed by SHMLOG__CRC_RUN zero bytes. The
 * tables are built on first use (two threads building them at once store
 * the same values). */
__attribute__((target("sse4.2"))) static inline uint32_t
shmlog__crc32c_shift(uint32_t c)
{
	static uint32_t t[4][256];
	static int ready;
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		static const unsigned char zeros[SHMLOG__CRC_RUN];
		for (unsigned k = 0; k < 4; k++)
			for (uint32_t b = 0; b < 256; b++)
				t[k][b] = (uint32_t)shmlog__crc32c_run(
					(uint64_t)b << (8 * k), zeros,
					SHMLOG__CRC_RUN);
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^
	       t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

__attribute__((target("sse4.2"))) static inline uint32_t
shmlog__crc32c_hw(uint32_t c, const unsigned char *p, size_t n)
{
	const size_t run = SHMLOG__CRC_RUN;
	for (; n >= 3 * run; n -= 3 * run, p += 3 * run) {
		uint64_t c0 = c, c1 = 0, c2 = 0;
		for (size_t i = 0; i < run; i += 8) {
			uint64_t w0, w1, w2;
			__builtin_memcpy(&w0, p + i, 8);
			__builtin_memcpy(&w1, p + run + i, 8);
			__builtin_memcpy(&w2, p + 2 * run + i, 8);
			c0 = __builtin_ia32_crc32di(c0, w0);
			c1 = __builtin_ia32_crc32di(c1, w1);
			c2 = __builtin_ia32_crc32di(c2, w2);
		}
		c = shmlog__crc32c_shift((uint32_t)c0) ^ (uint32_t)c1;
		c = shmlog__crc32c_shift(c) ^ (uint32_t)c2;
	}
	uint64_t c64 = shmlog__crc32c_run(c, p, n);
	p += n & ~(size_t)7;
	n &= 7;
	c = (uint32_t)c64;
	for (; n; n--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}

#if defined(__clang__) || __GNUC__ >= 8
#include <immintrin.h>
#define SHMLOG__CRC_WIDE 1
/* Wider still where the CPU multiplies without carries on 512-bit
 * registers (VPCLMULQDQ with AVX-512: AMD Zen 4, Intel Ice Lake and
 * later): the bytes are folded 256 at a time in four registers of four
 * 128-bit lanes. A lane's 16 bytes, a polynomial A, are worth A x^D
 * modulo P at the bytes D bits on; in two 64-bit halves that is the
 * first half times (x^(D+64) mod P) plus the second times (x^D mod P),
 * two carry-less products of at most 96 bits, added (xor) to those
 * bytes. The registers are then folded into one, its lanes into 16 bytes,
 * and the register of everything so far is the crc32 instruction's over
 * those 16 bytes from 0 (folding keeps the bytes' residue), then over the
 * rest. 2.1x the three streams on 256 KiB (AMD EPYC guest: 57 against 27
 * GB/s); tests/archive/archive_crc.c checks it against the table, and
 * the constants below against the polynomial.
 *
 * The constants for a fold over D bits, bit-reflected as the CRC is:
 * {rev32(x^(D+31) mod P), rev32(x^(D-33) mod P)} (the reflected product
 * comes out one bit higher, and the 32 bits of the register's own shift
 * are in them). */
#define SHMLOG__CRC_K2048 0xdcb17aa4u, 0xb9e02b86u
#define SHMLOG__CRC_K512 0x740eef02u, 0x9e4addf8u
#define SHMLOG__CRC_K384 0x1c291d04u, 0xddc0152bu
#define SHMLOG__CRC_K256 0x3da6d0cbu, 0xba4fc28eu
#define SHMLOG__CRC_K128 0xf20c0dfeu, 0x493c7d27u

#define SHMLOG__CRC_WIDE_TARGET                                                \
	__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

SHMLOG__CRC_WIDE_TARGET static inline __m512i
shmlog__crc_fold512(__m512i x, __m512i k)
{
	return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
				_mm512_clmulepi64_epi128(x, k, 0x11));
}

SHMLOG__CRC_WIDE_TARGET static inline __m128i
shmlog__crc_fold128(__m128i x, uint32_t lo, uint32_t hi)
{
	__m128i k = _mm_set_epi64x((long long)hi, (long long)lo);
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

SHMLOG__CRC_WIDE_TARGET static inline __m512i shmlog__crc_k512(uint32_t lo,
							       uint32_t hi)
{
	return _mm512_broadcast_i32x4(
		_mm_set_epi64x((long long)hi, (long long)lo));
}

/* As shmlog__crc32c_hw(), @n at least 256. */
SHMLOG__CRC_WIDE_TARGET static inline uint32_t
shmlog__crc32c_wide(uint32_t c, const unsigned char *p, size_t n)
{
	__m512i k = shmlog__crc_k512(SHMLOG__CRC_K2048);
	__m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64);
	__m512i x2 = _mm512_loadu_si512(p + 128),
		x3 = _mm512_loadu_si512(p + 192);
	x0 = _mm512_xor_si512(x0, _mm512_castsi128_si512(
					  _mm_cvtsi32_si128((int)c)));
	for (p += 256, n -= 256; n >= 256; n -= 256, p += 256) {
		x0 = _mm512_xor_si512(shmlog__crc_fold512(x0, k),
				      _mm512_loadu_si512(p));
		x1 = _mm512_xor_si512(shmlog__crc_fold512(x1, k),
				      _mm512_loadu_si512(p + 64));
		x2 = _mm512_xor_si512(shmlog__crc_fold512(x2, k),
				      _mm512_loadu_si512(p + 128));
		x3 = _mm512_xor_si512(shmlog__crc_fold512(x3, k),
				      _mm512_loadu_si512(p + 192));
	}
	k = shmlog__crc_k512(SHMLOG__CRC_K512);
	x0 = _mm512_xor_si512(shmlog__crc_fold512(x0, k), x1);
	x0 = _mm512_xor_si512(shmlog__crc_fold512(x0, k), x2);
	x0 = _mm512_xor_si512(shmlog__crc_fold512(x0, k), x3);
	__m128i r = _mm512_extracti32x4_epi32(x0, 3);
	r = _mm_xor_si128(r, shmlog__crc_fold128(
				     _mm512_extracti32x4_epi32(x0, 0),
				     SHMLOG__CRC_K384));
	r = _mm_xor_si128(r, shmlog__crc_fold128(
				     _mm512_extracti32x4_epi32(x0, 1),
				     SHMLOG__CRC_K256));
	r = _mm_xor_si128(r, shmlog__crc_fold128(
				     _mm512_extracti32x4_epi32(x0, 2),
				     SHMLOG__CRC_K128));
	uint64_t c64 = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
	c64 = _mm_crc32_u64(c64, (uint64_t)_mm_extract_epi64(r, 1));
	return shmlog__crc32c_hw((uint32_t)c64, p, n);
}
#endif
#endif

/* Which way shmlog__crc32c() goes on this CPU: 0 the table, 1 the crc32
 * instruction, 2 also the wide folding (SHMLOG__CRC_WIDE). */
static inline int shmlog__crc32c_path(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	static int path = -1;
	int use = __atomic_load_n(&path, __ATOMIC_RELAXED);
	if (use < 0) {
		__builtin_cpu_init();
		use = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#ifdef SHMLOG__CRC_WIDE
		if (use && __builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("vpclmulqdq") &&
		    __builtin_cpu_supports("pclmul"))
			use = 2;
#endif
		__atomic_store_n(&path, use, __ATOMIC_RELAXED);
	}
	return use;
#else
	return 0;
#endif
}

/* Continue CRC32C @crc (0 to start) over @n bytes at @p. Thread-safe. */
static inline uint32_t shmlog__crc32c(uint32_t crc, const void *p, size_t n)
{
	if (!n)
		return crc; /* and @p may be NULL: no pointer arithmetic on it */
	const unsigned char *b = (const unsigned char *)p;
	uint32_t c = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
	int use = shmlog__crc32c_path();
#ifdef SHMLOG__CRC_WIDE
	if (use == 2 && n >= 256)
		return ~shmlog__crc32c_wide(c, b, n);
#endif
	if (use)
		return ~shmlog__crc32c_hw(c, b, n);
#endif
	const uint32_t *t = shmlog__crc32c_table();
	for (size_t i = 0; i < n; i++)
		c = t[(c ^ b[i]) & 0xff] ^ (c >> 8);
	return ~c;
}

#endif
