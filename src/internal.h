/* SPDX-License-Identifier: MIT */
/*
 * Internal definitions shared by the library's files: the segment layout
 * (see the design comment at the top of ring.c and docs/DESIGN.md), the
 * handle structures, and the internal functions (prefix shmlog__).
 */
#ifndef SHMLOG_INTERNAL_H
#define SHMLOG_INTERNAL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fmtarg.h"
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
	uint64_t fmt_off; /* the format table (deferred.c), page aligned */
	uint64_t reserved; /* 0 */
	uint64_t checksum; /* FNV-1a 64 of every byte above */
};

/* Page 0 of the file. */
struct shmlog__hdr {
	struct shmlog__fixed fixed;
	/* Readers that sleep set @sleepers; the first writer to see it set
	 * clears it, bumps @futex and wakes them (ring.c, "Waking readers"). */
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
		 * take no more chunks in it (ring.c, chunk_switch()). Was
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
	 * it are a departed writer's, not this writer's (ring.c, the space
	 * policy). Exclusive lanes only; written once per claim. */
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
	uint64_t reserved1 SHMLOG__ALIGNED; /* 0 */
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

/* The format table (deferred.c), at fmt_off: this line, then entries at
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

/* A record whose message is a format id (u32) and an argument block:
 * formatted by the reader (deferred.c). Bit 1 of the header's flags. */
#define REC_FLAG_DEFERRED 0x2u

/* A chunk descriptor word: inc << 20 | lane << 4 | state. The incarnation
 * (inc) is unique per taking of a chunk and names the chunk's positions:
 * its byte 0 is at initial_pos + inc * chunk_size. 0: never used. */
enum {
	CHUNK_LIVE = 1, /* holds records of @lane; anyone may take it */
	CHUNK_OPEN = 2, /* @lane's owner writes into it; nobody takes it */
	/* taken for @lane's owner to write into next, in a row with the
	 * chunk it took (ring.c, chunk_pick()); no record in it. Readers
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

/* ---- a mapped segment ---- */

struct shmlog__seg {
	unsigned char *base; /* whole file */
	uint64_t size;
	struct shmlog__hdr *hdr; /* base, or a separate writable page 0 */
	struct shmlog__fixed fixed; /* validated private copy */
	int fd;
	bool writable;
	bool hdr_writable; /* may set notify.sleepers */
	unsigned char *hdr_map; /* separate RW mapping of page 0, or NULL */
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* Was the file removed (shmlog_remove())? Read at chunk switches only. */
static inline bool shmlog__seg_removed(const struct shmlog__seg *s)
{
	return atomic_load_explicit(&s->hdr->config.removed,
				    memory_order_relaxed) != 0;
}

static inline struct shmlog__lane *seg_lane(const struct shmlog__seg *s,
					    unsigned i)
{
	return (struct shmlog__lane *)(s->base + s->fixed.lanes_off +
				       (uint64_t)i * sizeof(struct shmlog__lane));
}

static inline struct shmlog__space *seg_space(const struct shmlog__seg *s)
{
	return (struct shmlog__space *)(void *)(s->base + s->fixed.chunks_off);
}

/* Chunk @i's descriptor word (i < chunk_count). */
static inline _Atomic uint64_t *seg_chunk(const struct shmlog__seg *s,
					  unsigned i)
{
	return (_Atomic uint64_t *)(void *)(s->base + s->fixed.chunks_off +
					    sizeof(struct shmlog__space) +
					    (uint64_t)i * 8);
}

/* Chunk @i's bytes. */
static inline unsigned char *seg_chunk_data(const struct shmlog__seg *s,
					    unsigned i)
{
	return s->base + s->fixed.data_off + (uint64_t)i * s->fixed.chunk_size;
}

/* Position of byte 0 of the chunk incarnation a descriptor word names. */
static inline uint64_t chunk_base(const struct shmlog__fixed *f, uint64_t w)
{
	return f->initial_pos + (w >> CHUNK_INC_SHIFT) * f->chunk_size;
}

/* A word a writer may have stored that takes up room of its lane: a LIVE
 * or OPEN chunk (chunk_valid()), or a reserved one. */
static inline bool chunk_held(const struct shmlog__fixed *f, uint64_t w)
{
	unsigned st = chunk_state(w);
	return st - CHUNK_LIVE <= CHUNK_RESV - CHUNK_LIVE &&
	       chunk_lane(w) < f->lane_count && (w >> CHUNK_INC_SHIFT) != 0;
}

/* Is @w a descriptor word a writer could have stored for a lane, one
 * that holds records? */
static inline bool chunk_valid(const struct shmlog__fixed *f, uint64_t w)
{
	unsigned st = chunk_state(w);
	return (st == CHUNK_LIVE || st == CHUNK_OPEN) &&
	       chunk_lane(w) < f->lane_count && (w >> CHUNK_INC_SHIFT) != 0;
}

/* ---- surviving truncation (guard.c): see the comment there ---- */
struct shmlog__guard {
	sigjmp_buf env;
	const unsigned char *lo, *hi; /* the armed segment's mapping */
	const unsigned char *hdr; /* its separate page 0, or NULL */
	struct shmlog__guard *prev; /* armed on this thread before (nested) */
};
void shmlog__guard_arm(struct shmlog__guard *g, const struct shmlog__seg *s);
void shmlog__guard_disarm(void);
/* Back from a fault by siglongjmp: call first thing. */
void shmlog__guard_recovered(void);

/* Access flags for shmlog__seg_attach(). */
#define SEG_WRITE 0x1
#define SEG_CREATE 0x2

int shmlog__seg_attach(const char *name, int flags, struct shmlog__seg *s);
void shmlog__seg_detach(struct shmlog__seg *s);
/* Validate a header copy against a file size. 0 or -EBADMSG, etc. */
int shmlog__fixed_validate(const struct shmlog__fixed *f, uint64_t file_size);
uint64_t shmlog__fnv1a(const void *p, size_t n);

/* ---- clocks (clock.c) ---- */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SHMLOG__HAVE_TSC 1
static inline uint64_t shmlog__rdtsc(void)
{
	return __rdtsc();
}
#else
#define SHMLOG__HAVE_TSC 0
static inline uint64_t shmlog__rdtsc(void)
{
	return 0;
}
#endif

static inline uint64_t shmlog__clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The raw clock value a record is stamped with: inline, it is on the
 * write path. */
static inline uint64_t shmlog__clock_raw(int clock)
{
	switch (clock) {
	case SHMLOG_CLOCK_TSC:
		return shmlog__rdtsc();
	case SHMLOG_CLOCK_COARSE:
		return shmlog__clock_ns(CLOCK_MONOTONIC_COARSE);
	default:
		return shmlog__clock_ns(CLOCK_REALTIME);
	}
}
/* Calibrate @f->clock: fill cal_* so raw values convert to wall time. */
void shmlog__clock_calibrate(struct shmlog__fixed *f);
int shmlog__clock_default(void);
/* Convert @raw to ns since the Epoch with the calibration in @f, anchored
 * at (@now_raw, @now_ns) (0: at the calibration itself). */
int64_t shmlog__clock_to_ns(const struct shmlog__fixed *f, uint64_t raw,
			    uint64_t now_raw, int64_t now_ns);

/* A validated private copy of a segment's anchors, sorted by raw. */
struct shmlog__clockmap {
	unsigned n;
	bool pending; /* a publication was under way */
	uint64_t count; /* the segment's count when copied */
	uint64_t taken_raw; /* raw clock when copied */
	struct {
		uint64_t raw;
		int64_t wall_ns, mono_ns;
		uint64_t mult;
	} a[SHMLOG__ANCHORS];
};
/* Copy and validate the anchors of @hdr (hostile input: the copy holds
 * only anchors that check out). */
void shmlog__clockmap_read(const struct shmlog__fixed *f,
			   const struct shmlog__hdr *hdr,
			   struct shmlog__clockmap *m);
/* May an anchor that applies to @raw be missing from @m? (Then read it
 * again before converting @raw.) */
bool shmlog__clockmap_stale(const struct shmlog__clockmap *m,
			    const struct shmlog__hdr *hdr, uint64_t raw);
/* @raw in ns since the Epoch: the newest anchor at or before it, else the
 * oldest one, else the calibration in @f. Deterministic in @m. */
int64_t shmlog__clock_convert(const struct shmlog__fixed *f,
			      const struct shmlog__clockmap *m, uint64_t raw);
/* Writers: publish an anchor if the newest is older than the schedule
 * wants (or there is none); *@due is when to look again (raw). Cheap to
 * call rarely; makes no syscall (vDSO clocks). */
void shmlog__anchor_refresh(const struct shmlog__fixed *f,
			    struct shmlog__hdr *hdr, uint64_t now_raw,
			    _Atomic uint64_t *due);
/* Publish an anchor for the clock triple (@raw, @wall_ns, @mono_ns), taken
 * at once, after the anchors in @m (a copy of the segment's). @done_raw:
 * 0 to read the raw clock once it is written (tests pass a simulated one).
 * false if another publisher went first or it took too long to be valid. */
bool shmlog__anchor_publish(const struct shmlog__fixed *f,
			    struct shmlog__hdr *hdr,
			    const struct shmlog__clockmap *m, uint64_t raw,
			    int64_t wall_ns, int64_t mono_ns, uint64_t done_raw);
/* The schedule: when (raw) the next anchor is due after those in @m. */
uint64_t shmlog__anchor_due(const struct shmlog__fixed *f,
			    const struct shmlog__clockmap *m);
int64_t shmlog__realtime_ns(void);

/* ---- the ring protocol (ring.c) ---- */

/* A writer's look at the whole descriptor table, spread over its chunk
 * switches, and the chunks it takes next (ring.c: "The switch"). Private
 * memory of the writing thread, mapped when it first switches chunks in
 * a lane of its own. */
struct shmlog__survey;

struct shmlog__wlane {
	/* The write paths' one compare (writer.c): the handle's id while
	 * this slot holds a lane of its own for it (ctl set) and no write of
	 * this thread is inside it; 0 if the slot holds no lane, or while
	 * the general path writes; the id with its top bit set (KEY_BUSY)
	 * while an inline append is inside the lane. */
	uint64_t key;
	uint64_t handle_id; /* 0: slot unused */
	struct shmlog__lane *ctl;
	/* the OPEN chunk: its bytes less its base position (record at
	 * position p: rec_base + p), where its word is (NULL: no chunk) and
	 * what it holds */
	uintptr_t rec_base;
	_Atomic uint64_t *cdesc;
	uint64_t cword;
	uint64_t head, seq;
	uint64_t cend; /* the OPEN chunk's end; cend == head: none */
	uint32_t pid, tid; /* in this order: one load for the header */
	_Atomic uint32_t *sleepers; /* the buffer's notify.sleepers */
	volatile unsigned busy; /* a write is in progress on this thread */
	uint32_t chunk; /* the OPEN chunk's index, CHUNK_NONE */
	unsigned char *cdata; /* its bytes */
	uint64_t cbase; /* its base position */
	struct shmlog *h;
	unsigned lane;
	/* No lane of its own (ctl == NULL): the thread borrows a shared lane
	 * per record, and tries again for its own when a lane is released. */
	uint32_t releases_seen;
	/* The space policy's survey and the chunks it said to take next
	 * (NULL: none, each switch asks the policy whole; survey_failed:
	 * mapping it failed once, not tried again) */
	struct shmlog__survey *survey;
	bool survey_failed;
	/* a typed call is being made again after its switch (writer.c,
	 * print_typed_switch()): a second miss is the general path's */
	bool typed_again;
	/* incarnations reserved for this lane's next chunks, [inc_next,
	 * inc_end): one fetch-add on the epoch per INC_BLOCK chunks */
	uint64_t inc_next, inc_end;
	uint32_t switches; /* chunks taken since the lane was claimed */
	uint64_t claim_mark; /* the lane's claim_mark, as this writer set it */
};

/* A record to append, as the writer passes it: the raw time, the header's
 * second-to-last word packed (len filled in by the append), tag and
 * message. Two registers of metadata instead of a struct in memory. */
struct shmlog__recdesc {
	uint64_t time;
	uint64_t meta; /* rec_meta(): msg_len, prio, flags, tag_len */
	const char *tag;
	uint64_t tword; /* the tag's bytes, if shorter than 8 (append.h) */
	const char *msg;
};

/* The 8 bytes at offset 32 of a record header: len, msg_len, prio, flags,
 * tag_len, reserved (little-endian layout of struct shmlog__rec). */
static inline uint64_t rec_meta(uint32_t len, uint32_t msg_len, int prio,
				unsigned flags, uint32_t tag_len)
{
	return (uint64_t)len | (uint64_t)msg_len << 16 |
	       (uint64_t)(uint8_t)prio << 32 | (uint64_t)(uint8_t)flags << 40 |
	       (uint64_t)tag_len << 48;
}
#define META_MSG_LEN(m) ((uint32_t)((m) >> 16) & 0xffff)
#define META_TAG_LEN(m) ((uint32_t)((m) >> 48) & 0xff)


/* ---- lane ownership (owner.c): an OFD lock per lane ---- */

/* The owner word a writer stores: who holds the lane, for people. */
uint64_t shmlog__owner_word(uint32_t pid, uint32_t tid);
/* Is lane @lane, whose owner word is @owner, held by a live process (other
 * than through @s's own description)? 1 or 0, or a negative errno
 * (-EINVAL: no OFD locks). */
int shmlog__owner_alive(const struct shmlog__seg *s, unsigned lane,
			uint64_t owner);
/* Shared lanes: the word a borrower stores (naming its handle's slot), and
 * whether the borrower a word names is dead. */
uint64_t shmlog__borrow_word(const struct shmlog *h, uint32_t tid);
bool shmlog__is_borrow_word(uint64_t owner);
bool shmlog__borrower_dead(const struct shmlog *h, uint64_t owner);
/* Take a slot for @h's borrowers (h->slot -1 if none could be had). */
void shmlog__slot_take(struct shmlog *h);
/* Take lane @lane's lock for thread @tid of this process: false if a live
 * process or a live thread of ours holds it. Async-signal-safe. */
bool shmlog__lane_lock(struct shmlog *h, unsigned lane, uint32_t tid);
/* Drop it (the owner word must already say free). */
void shmlog__lane_unlock(struct shmlog *h, unsigned lane);
/* Open @h's lock descriptor (@path: the buffer's file), close it. */
int shmlog__owner_open(struct shmlog *h, const char *path);
void shmlog__owner_close(struct shmlog *h);
/* In a fork() child: a description of our own for @h, and no lanes held.
 * On failure the child may not claim lanes through @h. */
int shmlog__owner_reopen(struct shmlog *h);

/* Record lane @lane's claimer (format 2.2): @pid, @tid and the
 * process's name, in the lane's ident and in a slot of the recent writers
 * (page 0 of @s's writable header), kept after it gives the lane back.
 * The caller holds the lane (an exclusive one). A few syscalls: claims
 * only. Async-signal-safe. */
void shmlog__ident_store(const struct shmlog__seg *s, unsigned lane,
			 uint32_t pid, uint32_t tid);
#define IDENT_DIED 0x80000000u
/* Say in lane @ctl's ident that its writer died holding the lane: by the
 * claimer that found it dead, holding the lane now. */
void shmlog__ident_died(struct shmlog__lane *ctl);
/* An ident's writer: 0 with *@pid, *@tid, *@lane (the ident's lane
 * field) and @name (16 bytes, NUL-padded, not terminated if all 16 are
 * used), -ENOENT if nobody recorded itself, -EAGAIN if it kept changing
 * under the reader. Reads the mapping: call it guarded. */
int shmlog__ident_load(const struct shmlog__ident *id, uint32_t *pid,
		       uint32_t *tid, uint32_t *lane, char name[16]);
/* Claim lane @lane for the caller if free (or, with @steal_dead, abandoned
 * by a dead owner: then whatever it left is repaired). true on success,
 * with @w filled. @w->h and @w->tid must be set. */
bool shmlog__lane_claim(const struct shmlog__seg *s, unsigned lane,
			uint64_t me, bool steal_dead, struct shmlog__wlane *w);
/* Make lane @lane's OPEN chunks LIVE, and give its reserved ones back
 * (its owner is gone: shmlog_close() of a handle whose threads held it). */
void shmlog__lane_close_chunks(const struct shmlog__seg *s, unsigned lane);
/* shmlog_stat_space()'s figures, by the space policy's rules. */
void shmlog__space_census(const struct shmlog__seg *s,
			  struct shmlog_space_stats *st);
/* Say that exclusive lane @lane was given back: threads without a lane
 * try again, and the next claim looks at it first (stats.last_released). */
void shmlog__lane_announce(struct shmlog__hdr *hdr, unsigned lane);
/* Give a lane back; @announce: shmlog__lane_announce() it (not for a
 * shared lane lent for one record). */
void shmlog__lane_release(struct shmlog__wlane *w, bool announce);
/* Forget a thread's lane view (zero it), unmapping its survey: the thread
 * exits, forks, loses the handle. Does not touch the segment. */
void shmlog__wlane_forget(struct shmlog__wlane *w);
/* Lanes [0, exclusive) are for threads to keep; the rest are lent out one
 * record at a time to threads that found none free. */
static inline unsigned shmlog__lanes_exclusive(const struct shmlog__fixed *f)
{
	return f->lane_count - f->lane_count / 8;
}
/* Append one record to the lane @w owns (@tword: the tag's bytes if it is
 * shorter than 8, as tag_measure() in append.h gives them). false if no
 * chunk could be had (the record is dropped: count it). */
bool shmlog__ring_append(const struct shmlog__seg *s, struct shmlog__wlane *w,
			 uint64_t time, uint64_t meta, const char *tag,
			 uint64_t tword, const char *msg);
/* Room for a record of @len bytes (header included, aligned) in the
 * lane @w owns: the OPEN chunk if it holds it and its word still names it
 * ours, else a new chunk taken. false: none could be had. */
bool shmlog__ring_make_room(const struct shmlog__seg *s,
			    struct shmlog__wlane *w, uint32_t len);
/* shmlog__ring_append() for a caller whose own try at the OPEN chunk
 * (shmlog__append_fit_as(): append.h) just failed: the chunk is switched
 * to first, no second try where the first was. */
bool shmlog__ring_append_next(const struct shmlog__seg *s,
			      struct shmlog__wlane *w, uint64_t time,
			      uint64_t meta, const char *tag, uint64_t tword,
			      const char *msg);
/* Bytes of the data area holding records: every LIVE chunk whole, each
 * OPEN chunk up to its lane's head. With @per_lane (lane_count entries,
 * zeroed by the caller): each lane's bytes and, in per_lane[lane_count +
 * lane], its chunks. Reads the mapping: call it guarded. */
uint64_t shmlog__space_used(const struct shmlog__seg *s, uint64_t *per_lane);
/* Claim and give back (repairing them) the lanes of dead owners that still
 * hold chunks, so that their space counts as nobody's share. Slow path:
 * a lock probe per such lane. */
void shmlog__reap_dead(struct shmlog *h, uint64_t me, uint32_t tid);
/* Wake sleeping readers if any (slow path of every append). */
void shmlog__ring_wake(struct shmlog__hdr *hdr);

/* ---- the record protocol for readers: reader_proto.h ---- */
#include "reader_proto.h"

/* ---- printf-style calls formatted by the reader (deferred.c) ---- */

/* Encode the call (@fmt a string that never changes at its address) as
 * its format's id and its argument values into @buf (@cap bytes, and no
 * more than fits a record beside @tag): 0 with *@len and the record's
 * *@flags, or 1 if it cannot be deferred, and the caller formats the text
 * itself (a conversion the codec refuses, a full table, a value too big).
 * Consumes @ap either way. */
int shmlog__defer_encode(struct shmlog *h, const char *tag, const char *fmt,
			 va_list ap, unsigned char *buf, size_t cap,
			 size_t *len, unsigned *flags);
/* A call site's plan (struct shmlog_fmt_site, include/shmlog.h): its
 * format, checked and compiled once per site, whatever the buffer. Never
 * freed: a site is static and outlives every handle. */
struct shmlog__fmt_plan {
	const char *fmt;
	struct shmlog__fmt_spec spec;
	/* a typed site's (its types nonzero): how its values are written
	 * (fmtarg_typed.h); types 0: not made */
	struct shmlog__fmt_typed typed;
};

/* A site's key: the handle's id, and the format's id in that handle's
 * buffer (the table is at most 1 MiB: 21 bits), 0 there if the table was
 * full. Handles whose id does not fit are never cached. */
#define SHMLOG__SITE_ID_BITS 21
#define SHMLOG__SITE_ID_MASK ((UINT64_C(1) << SHMLOG__SITE_ID_BITS) - 1)
/* Bit 0 of the key (a format's id is 8-aligned): the typed call's fast
 * path does not take this site's calls (its plan is not fast, or the
 * table was full), so that path checks one bit, not the plan. */
#define SHMLOG__SITE_SLOW UINT64_C(1)
/* Bit 2: a typed site whose plan writes two strings or more: the fast
 * path's other function takes it (writer.c, print_typed_several), so
 * that the common one neither checks for it nor carries its loop. */
#define SHMLOG__SITE_SEVERAL UINT64_C(4)
#define SHMLOG__SITE_FLAGS (SHMLOG__SITE_SLOW | SHMLOG__SITE_SEVERAL)
#define SHMLOG__SITE_ID(key)                                                   \
	((uint32_t)((key) & SHMLOG__SITE_ID_MASK & ~SHMLOG__SITE_FLAGS))
/* A key with its format's id cleared (bits 0 and 2 kept: a slow site's
 * never equals a handle's site_key, a several-string site's equals it
 * with bit 2 added), and the site_key of a handle whose id does not fit
 * a key: bit 1, never set in a cleared key. */
#define SHMLOG__SITE_HANDLE(key) ((key) & ~(SHMLOG__SITE_ID_MASK & ~SHMLOG__SITE_FLAGS))
#define SHMLOG__SITE_NONE UINT64_C(2)

/* The site's plan and *@id if @site was made for @h and @fmt, else NULL:
 * ask shmlog__defer_site(). Three loads and three compares (the typed
 * fast path, writer.c, checks the key's SHMLOG__SITE_SLOW bit instead of
 * the id and the plan). */
static inline const struct shmlog__fmt_plan *
shmlog__defer_site_ready(const struct shmlog *h,
			 const struct shmlog_fmt_site *site, const char *fmt,
			 uint32_t *id);
/* The slow path: make @site's plan (with its typed layout if @types,
 * the site's types, says SHMLOG__TYPED_SITE; @types is 0 for a site of a
 * caller built before sites had types), register its format in @h's
 * buffer, or say why the caller formats this call itself (NULL: a format the
 * codec refuses or a full table, each counted as shmlog_print_ex()
 * counts them; or another thread making the same format right now). */
const struct shmlog__fmt_plan *shmlog__defer_site(struct shmlog *h,
						  struct shmlog_fmt_site *site,
						  const char *fmt,
						  uint64_t types,
						  uint32_t *id);

/* A deferred record's argument block (@blk, @len bytes: hostile) as a
 * JSON array into @out (@cap bytes, NUL-terminated; "" if @cap < 3),
 * valid JSON and UTF-8 whatever the block holds (strings through json.c).
 * Returns 0 if the array holds every value of the block, or
 * SHMLOG_DEFERRED_CUT if it holds only those before the first that the
 * block does not hold whole (damage) or that did not fit. */
int shmlog__defer_args_json(const unsigned char *blk, size_t len, char *out,
			    size_t cap);
/* The argument block of the record shmlog_reader_next() returned last,
 * as the record holds it (after the format's id): for tests that compare
 * blocks byte for byte. 0, or -ENOENT if that record was not deferred
 * (reader.c). */
struct shmlog_reader;
int shmlog__reader_args(const struct shmlog_reader *r,
			const unsigned char **args, size_t *len);
/* Free a handle's cache of call sites (shmlog_close()). */
void shmlog__defer_free(struct shmlog *h);
/* The format whose id is @id in @s's table, copied into @buf (@cap
 * bytes, NUL-terminated): its length, or -1 if the id names no ready
 * entry. Reads the mapping: call it guarded. */
ssize_t shmlog__defer_fmt_lookup(const struct shmlog__seg *s, uint32_t id,
				 char *buf, size_t cap);
/* A deferred record's message (@msg, @len bytes: the id and the block)
 * as text into @out (@cap bytes, NUL-terminated); returns the length
 * (cut to cap - 1). *@fmt and *@fmt_len: the format as found in the
 * table, copied into @fmt_buf (@fmt_cap bytes); NULL if the id is bad.
 * Reads the mapping: call it guarded. Hostile input throughout. */
size_t shmlog__defer_format(const struct shmlog__seg *s,
			    const unsigned char *msg, size_t len, char *out,
			    size_t cap, char *fmt_buf, size_t fmt_cap,
			    size_t *fmt_len);

/* ---- test points (compiled in with SHMLOG_TESTPOINTS only) ---- */
#ifdef SHMLOG_TESTPOINTS
extern void (*shmlog__testpoint_hook)(int point);
#define TESTPOINT(n)                                                           \
	do {                                                                   \
		if (shmlog__testpoint_hook)                                    \
			shmlog__testpoint_hook(n);                             \
	} while (0)
#else
#define TESTPOINT(n) ((void)0)
#endif

/* ---- filters (filter.c) ---- */
struct shmlog__filter; /* compiled spec, process-private */
int shmlog__filter_level(const struct shmlog__filter *f, const char *tag);
struct shmlog;
/* Compile the buffer's filter for a new handle (shmlog_open()). */
void shmlog__filter_init(struct shmlog *h);
/* Free the handle's filters, current and retired (shmlog_close()). */
void shmlog__filter_free_all(struct shmlog *h);
/* Does the filter let a write of @prio with @tag through? The slow half of
 * write_wanted() in writer.c: no lock unless the filter changed. */
bool shmlog__write_wanted_slow(struct shmlog *h, int prio, const char *tag);
/* The macros' call sites (shmlog__site_update() in writer.c, which knows
 * the default handle): set @site's cached answer from @h's filter. */
int shmlog__site_set(struct shmlog_site *site, struct shmlog *h, int prio,
		     const char *tag);

/* ---- SHMLOG_DEBUG=1: why nothing is logged (util.c) ---- */
enum shmlog__debug_cause {
	SHMLOG__DBG_OPEN, /* the default buffer could not be opened */
	SHMLOG__DBG_OPEN_NAMED, /* shmlog_open() failed */
	SHMLOG__DBG_NULL_HANDLE, /* a write on a NULL handle */
	SHMLOG__DBG_NO_LANE, /* a record dropped: every lane busy */
	SHMLOG__DBG_NESTED, /* a record dropped: nested in a signal handler */
	SHMLOG__DBG_BAD_TAGS, /* $SHMLOG_TAGS does not parse: ignored */
	SHMLOG__DBG_CAUSES,
};
/* Say on stderr, once per cause and only with SHMLOG_DEBUG=1 in the
 * environment, why a record was not logged. @err: a negative errno or 0;
 * @what: a name (buffer) or NULL. Async-signal-safe (write(2) only). */
void shmlog__debug(enum shmlog__debug_cause cause, int err, const char *what);

/* ---- the handle ---- */
struct shmlog__defer_cache;
struct shmlog {
	struct shmlog__seg seg;
	/* From id to anchor_due: what the leaves and the typed call read
	 * on every write, in one cache line with the segment's end. */
	uint64_t id; /* unique per process lifetime; never reused */
	size_t tls_off; /* where a thread's lane view for it is (writer.c) */
	/* what a site's key holds for this handle but the format's id:
	 * id << SHMLOG__SITE_ID_BITS, or SHMLOG__SITE_NONE (no key has it)
	 * if the id does not fit or typed_fit is 0 (the typed fast path:
	 * one compare) */
	uint64_t site_key;
	/* id with its top bit set: a thread's key while a typed call is
	 * inside its lane (writer.c, KEY_BUSY) */
	uint64_t busy_key;
	/* a message this long or shorter fits a record whatever its tag */
	uint32_t msg_fit;
	/* ... and shorter than this, shmlog_write_n()'s leaf writes it (0:
	 * never: the clock is not the TSC, or writers must fence) */
	uint32_t leaf_len_end;
	_Atomic uint64_t anchor_due; /* raw time to look at the anchors again */
	/* ... and a typed printf-style call's block this long or shorter
	 * takes its fast path (0: never, for the same two reasons) */
	uint32_t typed_fit;
	bool need_fence; /* membarrier unavailable: writers fence */
	_Atomic unsigned char *prefaulted; /* per chunk: pages made resident */
	/* Per lane: the thread of ours holding it through this handle (its
	 * tid), 0 if none. The description's lock (owner.c) cannot tell our
	 * threads apart; this does. */
	_Atomic uint32_t *holder;
	int lock_fd; /* the lanes' locks: a description never mapped */
	int slot; /* our borrowers' slot (owner.c), -1: cannot borrow */
	uint32_t slot_nonce;
	char *lock_path; /* the file, to open it again after fork() */
	bool no_ofd; /* the kernel has no OFD locks (Linux < 3.15) */
	bool claims_refused; /* a fork child without a description of its own */
	/* filter cache */
	uint32_t filter_gen_seen;
	struct shmlog__filter *filter; /* read lock-free by writers (atomic) */
	struct shmlog__filter *retired; /* replaced ones, freed at close */
	/* call sites whose formats are in the buffer's table (deferred.c) */
	_Atomic(struct shmlog__defer_cache *) defer;
	/* The writers' lock-free answer, shmlog__filter_word(): the
	 * generation it is good for, the lowest and the highest level any
	 * tag needs. A write at or above the highest passes whatever its
	 * tag; one below the lowest is dropped whatever its tag; only one in
	 * between looks its tag up. */
	_Atomic uint64_t filter_fast;
};

/* generation << 32 | lowest << 16 | highest (levels 0..SHMLOG_SILENT) */
static inline uint64_t shmlog__filter_word(uint32_t gen, int min, int max)
{
	return (uint64_t)gen << 32 | (uint64_t)(uint16_t)min << 16 |
	       (uint16_t)max;
}

/* What the filter word @fast says of a write at @prio (a valid priority)
 * while the buffer's generation is @gen: 1 pass, 0 drop, -1 ask the
 * filter (shmlog__write_wanted_slow()). */
static inline int shmlog__filter_fast(uint64_t fast, uint32_t gen, int prio)
{
	if (SHMLOG_UNLIKELY((uint32_t)(fast >> 32) != gen))
		return -1;
	/* a valid priority is small and positive: compared in 16 bits */
	if (SHMLOG_LIKELY((uint16_t)prio >= (uint16_t)fast))
		return 1;
	return prio < (int)(uint16_t)(fast >> 16) ? 0 : -1;
}

static inline const struct shmlog__fmt_plan *
shmlog__defer_site_ready(const struct shmlog *h,
			 const struct shmlog_fmt_site *site, const char *fmt,
			 uint32_t *id)
{
	/* LMM(site:B) pairs with the release store of the key
	 * (deferred.c, LMM(site:A)): the plan and the table's entry are
	 * there before the key names them */
	uint64_t key = __atomic_load_n(&site->key, __ATOMIC_ACQUIRE);
	if (SHMLOG_UNLIKELY(key >> SHMLOG__SITE_ID_BITS != h->id ||
			    !SHMLOG__SITE_ID(key)))
		return NULL;
	const struct shmlog__fmt_plan *p =
		(const struct shmlog__fmt_plan *)__atomic_load_n(
			&site->plan, __ATOMIC_RELAXED);
	if (SHMLOG_UNLIKELY(p->fmt != fmt))
		return NULL;
	*id = SHMLOG__SITE_ID(key);
	return p;
}

/* The bytes an argument block may take in @h's buffer: what fits a
 * record beside the longest tag, at most a message. */
static inline size_t shmlog__defer_room(const struct shmlog *h)
{
	size_t max = h->seg.fixed.max_record; /* >= REC_HDR + 8 (validated) */
	if (SHMLOG_UNLIKELY(max <= REC_HDR + SHMLOG_TAG_MAX))
		return 0;
	size_t room = max - REC_HDR - SHMLOG_TAG_MAX;
	return room < SHMLOG_MSG_MAX ? room : SHMLOG_MSG_MAX;
}

/* membarrier(2): register once per process; false if unsupported. */
bool shmlog__membarrier_register(void);
int shmlog__membarrier(void);

#endif
