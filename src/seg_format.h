/* SPDX-License-Identifier: MIT */
/*
 * The segment's format: every structure the file holds, the words packed
 * into it and their field helpers, and one row per field of
 * docs/DESIGN.md's byte tables ("Segment format 2, byte by byte"),
 * asserted at compile time at the end of this file.
 * tests/unit/test_seg_format.py reads those tables and these rows and fails on any
 * difference either way: change a field here, change its row and the
 * table with it.
 *
 * What the protocol does with these bytes is the design comment of each
 * file that writes them: ring.c (records, lanes, chunks), space.c and
 * space_survey.c (which chunk a writer takes), lane.c (claims and repairs), clock.c (anchors),
 * fmtarg_table.c (the format table).
 */
#ifndef SHMLOG_SEG_FORMAT_H
#define SHMLOG_SEG_FORMAT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shmlog.h"

#define SHMLOG__MAGIC "SHMLOG\x1a\x01"
#define SHMLOG__VERSION_MAJOR 2 /* 2: elastic lanes (chunks) */
/* 1: reserved chunks (CHUNK_RESV); 2: the lane's writer (struct
 * shmlog__ident), kept after it exits */
#define SHMLOG__VERSION_MINOR 2

#define SHMLOG__CACHELINE 64
#define SHMLOG__PAGE 4096
#define SHMLOG__ALIGNED __attribute__((aligned(SHMLOG__CACHELINE)))

/* Record states, kept in the low 3 bits of a record's first word; the
 * other bits are the record's logical position, so a word left over from an
 * earlier lap never matches. 0 is never valid. */
enum {
	REC_COMMITTED = 1, /* a complete record */
	REC_PAD = 2, /* filler up to the end of the chunk */
	REC_TORN = 3, /* its writer died before committing it */
	REC_STATE_MASK = 7,
};

/* ---- the segment, as laid out in the file ---- */

/* Written once by the creator before the file gets its name; immutable,
 * covered by @checksum. */
struct shmlog__fixed {
	char magic[8];
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t fixed_size; /* sizeof(struct shmlog__fixed) */
	uint64_t file_size;
	uint64_t lanes_off; /* lane control table */
	uint64_t data_off; /* chunks: chunk i at data_off + i*chunk_size */
	uint32_t lane_count; /* writer slots */
	uint32_t chunk_size; /* power of two, 4 KiB .. 1 MiB */
	uint32_t lane_ctl_size; /* sizeof(struct shmlog__lane) */
	uint32_t max_record; /* largest record, header included */
	uint32_t clock; /* enum shmlog_clock, never DEFAULT */
	uint32_t flags; /* none defined yet */
	uint64_t initial_pos; /* position of incarnation 0's byte 0 */
	uint64_t initial_seq; /* first sequence number of every lane */
	int64_t created_ns; /* CLOCK_REALTIME at creation */
	/* raw clock -> ns: ns = cal_ns + ((raw - cal_raw) * cal_mult >> cal_shift) */
	uint64_t cal_raw;
	int64_t cal_ns;
	uint32_t cal_mult;
	uint32_t cal_shift;
	uint64_t chunks_off; /* struct shmlog__space, then the descriptors */
	uint32_t chunk_count;
	uint32_t fmt_size; /* bytes of the format table, page multiple */
	uint64_t fmt_off; /* the format table (fmtarg_table.c), page aligned */
	uint64_t reserved; /* 0 */
	uint64_t checksum; /* FNV-1a 64 of every byte above */
};

/* Page 0 of the file. */
struct shmlog__hdr {
	struct shmlog__fixed fixed;
	/* Readers that sleep set @sleepers; the first writer to see it set
	 * clears it, bumps @futex and wakes them (wake.c, "Waking readers"). */
	struct {
		_Atomic uint32_t futex;
		_Atomic uint32_t sleepers;
	} notify SHMLOG__ALIGNED;
	/* Rarely written counters. */
	struct {
		_Atomic uint64_t dropped; /* refused writes: no lane, nested */
		_Atomic uint32_t releases; /* lanes given back (exclusive) */
		/* call sites of the SHMLOG_x macros whose values had no
		 * types the compiler could tell (a va_list per call; counted
		 * once per site and writing process) */
		_Atomic uint32_t fmt_untyped;
		/* printf-style calls (SHMLOG_WRITE_DEFERRED) formatted by the
		 * caller: the format table was full; a conversion the codec
		 * does not take */
		_Atomic uint64_t fmt_full, fmt_refused;
		/* the exclusive lane given back last, + 1 (0: none): where
		 * the next claim looks first, so that writers that come and
		 * go one after another (one-shot commands, cron jobs) go on
		 * in the same lane and chunk, their records in time order
		 * (a hint: any value is harmless) */
		_Atomic uint32_t last_released;
	} stats SHMLOG__ALIGNED;
	/* Read-mostly: the filter and the clear mark. Writers only read it. */
	struct {
		_Atomic uint32_t filter_gen; /* even: stable; odd: being set */
		uint32_t spec_len;
		_Atomic uint64_t clear_raw; /* records stamped before are hidden */
		/* nonzero: the file was unlinked by shmlog_remove(); writers
		 * take no more chunks in it (space.c, chunk_switch()). Was
		 * padding: 0 in buffers made before it. */
		_Atomic uint32_t removed;
	} config SHMLOG__ALIGNED;
	char spec[SHMLOG_FILTER_SPEC_MAX] SHMLOG__ALIGNED;
};

/* One lane's control block: two cache lines, one for claiming (rare) and
 * one written by the owner on every record. */
struct shmlog__lane {
	_Atomic uint64_t owner; /* pid << 32 | tid; 0: free */
	_Atomic uint64_t claims; /* times the lane was taken over */
	_Atomic uint64_t torn; /* records repaired as torn by claimers */
	/* the epoch when the lane's writer claimed it, as a chunk word's
	 * incarnation (| 1; 0: none): LIVE chunks of the lane older than
	 * it are a departed writer's, not this writer's (space.c, the
	 * space policy). Exclusive lanes only; written once per claim. */
	_Atomic uint64_t claim_mark;
	/* who claimed the lane last (minor 2; zero before, and in shared
	 * lanes): kept after the writer is gone, for people */
	struct shmlog__ident {
		/* odd while being written, even once done; 0: never */
		_Atomic uint32_t gen;
		_Atomic uint32_t pid, tid; /* as the writer saw them */
		/* in the recent writers' slots: the lane claimed, + 1; 0 in
		 * a lane's own, where IDENT_DIED says that the writer died
		 * holding the lane (a later claimer repaired it) */
		_Atomic uint32_t lane;
		/* its process name (comm), NUL-padded; not terminated if
		 * 16 bytes long */
		_Atomic uint64_t name[2];
	} ident;
	uint64_t reserved SHMLOG__ALIGNED; /* 0 */
	_Atomic uint64_t reserve; /* end of the newest reservation */
	_Atomic uint64_t head; /* end of the newest committed record */
	_Atomic uint64_t next_seq; /* seq of the next record */
	uint64_t pad1[4];
};

/* The space line, at chunks_off: written once per chunk taken. */
struct shmlog__space {
	_Atomic uint64_t epoch; /* incarnations handed out so far */
	uint64_t pad[7];
} SHMLOG__ALIGNED;

/* The format table (fmtarg_table.c), at fmt_off: this line, then entries at
 * 8-byte offsets from 64 on. An entry is a word, len | FMT_READY once its
 * len bytes (a format string, NUL-terminated, padded to 8) follow it; its
 * offset in the table is the format's id. Written once per call site. */
struct shmlog__fmt_table {
	_Atomic uint32_t next; /* offset of the next free byte */
	_Atomic uint32_t count; /* entries taken */
	uint64_t pad[7];
};
#define FMT_READY 0x80000000u
#define FMT_ENTRY_HDR 8u

/* An entry of the format table, as docs/DESIGN.md lays it out; fmtarg_table.c
 * reads and writes @word (len | FMT_READY) and the text behind it at
 * FMT_ENTRY_HDR. */
struct shmlog__fmt_entry {
	_Atomic uint32_t word; /* len | FMT_READY once @text is there */
	uint32_t reserved; /* 0 */
	char text[]; /* the format, NUL-terminated, padded to 8 */
};
_Static_assert(sizeof(struct shmlog__fmt_entry) == FMT_ENTRY_HDR,
	       "an entry's header is FMT_ENTRY_HDR bytes");

/* A record whose message is a format id (u32) and an argument block:
 * formatted by the reader (fmtarg_table.c). Bit 1 of the header's flags. */
#define REC_FLAG_DEFERRED 0x2u

/* A chunk descriptor word: inc << 20 | lane << 4 | state. The incarnation
 * (inc) is unique per taking of a chunk and names the chunk's positions:
 * its byte 0 is at initial_pos + inc * chunk_size. 0: never used. */
enum {
	CHUNK_LIVE = 1, /* holds records of @lane; anyone may take it */
	CHUNK_OPEN = 2, /* @lane's owner writes into it; nobody takes it */
	/* taken for @lane's owner to write into next, in a row with the
	 * chunk it took (space.c, chunk_pick()); no record in it. Readers
	 * skip it; the lane's owner gives it back (0) on release, and so
	 * does whoever claims the lane after its owner died. Minor 1. */
	CHUNK_RESV = 3,
	CHUNK_STATE_MASK = 0xf,
	CHUNK_LANE_SHIFT = 4,
	CHUNK_INC_SHIFT = 20,
};
#define CHUNK_NONE UINT32_MAX
#define CHUNK_INC_MASK ((UINT64_C(1) << (64 - CHUNK_INC_SHIFT)) - 1)

static inline uint64_t chunk_word(uint64_t inc, unsigned lane, unsigned state)
{
	return inc << CHUNK_INC_SHIFT | (uint64_t)lane << CHUNK_LANE_SHIFT |
	       state;
}
static inline unsigned chunk_state(uint64_t w)
{
	return (unsigned)(w & CHUNK_STATE_MASK);
}
static inline unsigned chunk_lane(uint64_t w)
{
	return (unsigned)(w >> CHUNK_LANE_SHIFT) & 0xffff;
}
/* What a chunk's bytes belong to: the word without its state (a lane's
 * chunk goes OPEN -> LIVE -> OPEN with its records untouched). */
static inline uint64_t chunk_id(uint64_t w)
{
	return w & ~(uint64_t)CHUNK_STATE_MASK;
}

/* A record in a chunk: this header, the tag, the message, padding to 8. */
struct shmlog__rec {
	_Atomic uint64_t word; /* logical position | state */
	uint64_t seq;
	uint64_t time; /* raw clock value */
	uint32_t pid;
	uint32_t tid;
	uint16_t len; /* whole record, multiple of 8 */
	uint16_t msg_len;
	uint8_t prio;
	uint8_t flags;
	uint8_t tag_len;
	uint8_t reserved;
};

#define REC_HDR ((uint32_t)sizeof(struct shmlog__rec))
#define REC_ALIGN 8u

/* A record's length in its chunk: header, tag and message, aligned. */
static inline uint32_t rec_len(uint32_t tag_len, uint32_t msg_len)
{
	return (REC_HDR + tag_len + msg_len + REC_ALIGN - 1) &
	       ~(REC_ALIGN - 1);
}
#define REC_MAX_LEN 65528u

_Static_assert(sizeof(struct shmlog__rec) == 40, "record header is 40 bytes");
_Static_assert(sizeof(struct shmlog__lane) == 128, "lane is two lines");
_Static_assert(sizeof(struct shmlog__ident) == 32, "ident fills the pad");
_Static_assert(sizeof(struct shmlog__space) == 64, "space is one line");
_Static_assert(sizeof(struct shmlog__fmt_table) == 64, "one line");
_Static_assert(sizeof(struct shmlog__hdr) <= SHMLOG__PAGE, "header fits a page");

/* Clock anchors (clock.c): (raw clock, wall time) pairs that writers add
 * now and then, at a fixed place near the end of page 0 (minor version 1;
 * the area is zero, so empty, in buffers made before). Every reader turns
 * a raw time into wall time with the newest valid anchor at or before it:
 * the same record, the same time, in every reader, at any later time. */
#define SHMLOG__ANCHOR_OFF 2560
#define SHMLOG__ANCHORS 24

struct shmlog__anchor {
	_Atomic uint64_t seq; /* 2n+1 while publication n is written, 2n+2 */
	_Atomic uint64_t raw; /* the anchor holds from this raw value on */
	_Atomic int64_t wall_ns; /* CLOCK_REALTIME at @raw */
	_Atomic int64_t mono_ns; /* CLOCK_MONOTONIC at @raw (later rates) */
	_Atomic uint64_t mult; /* ns per raw tick from @raw on, 32.32 */
	_Atomic uint64_t done_raw; /* raw clock once published; the anchor
				    * is valid iff 0 < done_raw <= raw */
};

struct shmlog__anchors {
	_Atomic uint64_t count; /* publications so far; n goes to slot n % N */
	uint64_t pad[7];
	struct shmlog__anchor a[SHMLOG__ANCHORS];
};

_Static_assert(sizeof(struct shmlog__hdr) <= SHMLOG__ANCHOR_OFF,
	       "the anchors do not overlap the header's fields");
_Static_assert(SHMLOG__ANCHOR_OFF + sizeof(struct shmlog__anchors) <=
		       SHMLOG__PAGE,
	       "the anchors fit page 0");

/* The writers that claimed lanes last (format 2.2), after the anchors at
 * the end of page 0: a lane's ident names only its last claimer, and
 * writers that take turns in one lane (one-shot commands go on in the
 * lane given back last) would go unnamed once they exit. Each claim takes
 * the next slot (count, fetch-add) whose ident is not being written, by a
 * CAS of its even sequence word to odd; slots hold no order. Zero (empty)
 * in buffers made before. */
#define SHMLOG__RECENT_OFF 3776
#define SHMLOG__RECENT 8

struct shmlog__recent {
	_Atomic uint64_t count; /* claims recorded so far */
	uint64_t pad[7];
	struct shmlog__ident slot[SHMLOG__RECENT];
};

_Static_assert(SHMLOG__ANCHOR_OFF + sizeof(struct shmlog__anchors) <=
		       SHMLOG__RECENT_OFF,
	       "the recent writers do not overlap the anchors");
_Static_assert(SHMLOG__RECENT_OFF + sizeof(struct shmlog__recent) <=
		       SHMLOG__PAGE,
	       "the recent writers fit page 0");

static inline struct shmlog__recent *hdr_recent(const struct shmlog__hdr *h)
{
	return (struct shmlog__recent *)(void *)((unsigned char *)h +
						 SHMLOG__RECENT_OFF);
}

static inline struct shmlog__anchors *hdr_anchors(const struct shmlog__hdr *h)
{
	return (struct shmlog__anchors *)(void *)((unsigned char *)h +
						  SHMLOG__ANCHOR_OFF);
}

/* The 8 bytes at offset 32 of a record header: len, msg_len, prio, flags,
 * tag_len, reserved (little-endian layout of struct shmlog__rec). */
static inline uint64_t rec_meta(uint32_t len, uint32_t msg_len, int prio,
				unsigned flags, uint32_t tag_len)
{
	return (uint64_t)len | (uint64_t)msg_len << 16 |
	       (uint64_t)(uint8_t)prio << 32 | (uint64_t)(uint8_t)flags << 40 |
	       (uint64_t)tag_len << 48;
}
_Static_assert(offsetof(struct shmlog__rec, len) == 32 &&
		       offsetof(struct shmlog__rec, tag_len) == 38,
	       "rec_meta() packs the header's word at offset 32");
#define META_MSG_LEN(m) ((uint32_t)((m) >> 16) & 0xffff)
#define META_TAG_LEN(m) ((uint32_t)((m) >> 48) & 0xff)

/* ---- every row of docs/DESIGN.md's byte tables ----
 *
 * FIELD(type, field, offset, size): the field is at that offset and that
 * many bytes long; LINE(type, field, offset, size): a member that has
 * that many bytes to itself (its cache line), it fits them; FLEX(type,
 * field, offset): a flexible array member
 * there (the table's size column is not a number); PLACE(name, offset
 * expression, offset, size): a part of page 0 that is not a member of
 * struct shmlog__hdr. One row per line: the test parses them.
 *
 * The file is little-endian: a big-endian build would read every buffer
 * wrong. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the segment format is little-endian");
#define SHMLOG__SIZEOF_MEMBER(type, field) sizeof(((type *)0)->field)
#define FIELD(type, field, off, size)                                          \
	_Static_assert(offsetof(type, field) == (off) &&                       \
			       SHMLOG__SIZEOF_MEMBER(type, field) == (size),   \
		       #type "." #field ": " #size " bytes at byte " #off)
#define LINE(type, field, off, size)                                           \
	_Static_assert(offsetof(type, field) == (off) &&                       \
			       SHMLOG__SIZEOF_MEMBER(type, field) <= (size),   \
		       #type "." #field ": in " #size " bytes at byte " #off)
#define FLEX(type, field, off)                                                 \
	_Static_assert(offsetof(type, field) == (off),                         \
		       #type "." #field "[] at byte " #off)
#define PLACE(name, expr, off, size)                                           \
	_Static_assert((expr) == (off) && (off) + (size) <= SHMLOG__PAGE,      \
		       "page 0's " #name ": " #size " bytes at byte " #off)

FIELD(struct shmlog__fixed, magic, 0, 8);
FIELD(struct shmlog__fixed, version_major, 8, 2);
FIELD(struct shmlog__fixed, version_minor, 10, 2);
FIELD(struct shmlog__fixed, fixed_size, 12, 4);
FIELD(struct shmlog__fixed, file_size, 16, 8);
FIELD(struct shmlog__fixed, lanes_off, 24, 8);
FIELD(struct shmlog__fixed, data_off, 32, 8);
FIELD(struct shmlog__fixed, lane_count, 40, 4);
FIELD(struct shmlog__fixed, chunk_size, 44, 4);
FIELD(struct shmlog__fixed, lane_ctl_size, 48, 4);
FIELD(struct shmlog__fixed, max_record, 52, 4);
FIELD(struct shmlog__fixed, clock, 56, 4);
FIELD(struct shmlog__fixed, flags, 60, 4);
FIELD(struct shmlog__fixed, initial_pos, 64, 8);
FIELD(struct shmlog__fixed, initial_seq, 72, 8);
FIELD(struct shmlog__fixed, created_ns, 80, 8);
FIELD(struct shmlog__fixed, cal_raw, 88, 8);
FIELD(struct shmlog__fixed, cal_ns, 96, 8);
FIELD(struct shmlog__fixed, cal_mult, 104, 4);
FIELD(struct shmlog__fixed, cal_shift, 108, 4);
FIELD(struct shmlog__fixed, chunks_off, 112, 8);
FIELD(struct shmlog__fixed, chunk_count, 120, 4);
FIELD(struct shmlog__fixed, fmt_size, 124, 4);
FIELD(struct shmlog__fixed, fmt_off, 128, 8);
FIELD(struct shmlog__fixed, reserved, 136, 8);
FIELD(struct shmlog__fixed, checksum, 144, 8);
_Static_assert(sizeof(struct shmlog__fixed) == 152, "fixed header: 152 bytes");
LINE(struct shmlog__hdr, notify, 192, 64);
LINE(struct shmlog__hdr, stats, 256, 64);
LINE(struct shmlog__hdr, config, 320, 64);
FIELD(struct shmlog__hdr, spec, 384, 2048);
PLACE(anchors, SHMLOG__ANCHOR_OFF, 2560, 1216);
PLACE(recent, SHMLOG__RECENT_OFF, 3776, 320);
_Static_assert(sizeof(struct shmlog__anchors) == 1216 &&
		       sizeof(struct shmlog__recent) == 320,
	       "the anchors and the recent writers are as large as placed");
/* the fields the page-0 table names inside its lines */
_Static_assert(offsetof(struct shmlog__hdr, stats.last_released) == 256 + 32,
	       "stats.last_released at byte 288");
_Static_assert(offsetof(struct shmlog__hdr, config.removed) == 320 + 16,
	       "config.removed at byte 336, in what was padding");
_Static_assert(384 + SHMLOG_FILTER_SPEC_MAX <= SHMLOG__ANCHOR_OFF,
	       "the spec ends before the anchors");

FIELD(struct shmlog__anchors, count, 0, 8);
FIELD(struct shmlog__anchors, a, 64, 1152);
FIELD(struct shmlog__anchor, seq, 0, 8);
FIELD(struct shmlog__anchor, raw, 8, 8);
FIELD(struct shmlog__anchor, wall_ns, 16, 8);
FIELD(struct shmlog__anchor, mono_ns, 24, 8);
FIELD(struct shmlog__anchor, mult, 32, 8);
FIELD(struct shmlog__anchor, done_raw, 40, 8);
_Static_assert(sizeof(struct shmlog__anchor) == 48, "an anchor: 48 bytes");

FIELD(struct shmlog__recent, count, 0, 8);
FIELD(struct shmlog__recent, slot, 64, 256);

FIELD(struct shmlog__lane, owner, 0, 8);
FIELD(struct shmlog__lane, claims, 8, 8);
FIELD(struct shmlog__lane, torn, 16, 8);
FIELD(struct shmlog__lane, claim_mark, 24, 8);
FIELD(struct shmlog__lane, ident.gen, 32, 4);
FIELD(struct shmlog__lane, ident.pid, 36, 4);
FIELD(struct shmlog__lane, ident.tid, 40, 4);
FIELD(struct shmlog__lane, ident.lane, 44, 4);
FIELD(struct shmlog__lane, ident.name, 48, 16);
FIELD(struct shmlog__lane, reserved, 64, 8);
FIELD(struct shmlog__lane, reserve, 72, 8);
FIELD(struct shmlog__lane, head, 80, 8);
FIELD(struct shmlog__lane, next_seq, 88, 8);

FIELD(struct shmlog__space, epoch, 0, 8);

FIELD(struct shmlog__fmt_table, next, 0, 4);
FIELD(struct shmlog__fmt_table, count, 4, 4);
FIELD(struct shmlog__fmt_entry, word, 0, 4);
FIELD(struct shmlog__fmt_entry, reserved, 4, 4);
FLEX(struct shmlog__fmt_entry, text, 8);

FIELD(struct shmlog__rec, word, 0, 8);
FIELD(struct shmlog__rec, seq, 8, 8);
FIELD(struct shmlog__rec, time, 16, 8);
FIELD(struct shmlog__rec, pid, 24, 4);
FIELD(struct shmlog__rec, tid, 28, 4);
FIELD(struct shmlog__rec, len, 32, 2);
FIELD(struct shmlog__rec, msg_len, 34, 2);
FIELD(struct shmlog__rec, prio, 36, 1);
FIELD(struct shmlog__rec, flags, 37, 1);
FIELD(struct shmlog__rec, tag_len, 38, 1);
FIELD(struct shmlog__rec, reserved, 39, 1);

#undef FIELD
#undef LINE
#undef FLEX
#undef PLACE

#endif
