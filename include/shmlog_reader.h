/* SPDX-License-Identifier: MIT */
/*
 * shmlog's reader API: opening a buffer or an archive for reading, the
 * records and losses it returns, waiting for more (on one buffer or
 * several), and each lane's exact accounting. Its functions' rules are in
 * the contract table at the top of shmlog.h and in each comment below.
 *
 * Included by shmlog.h where the reader API belongs among its sections;
 * include shmlog.h, never this file on its own.
 */
#ifndef SHMLOG_READER_H
#define SHMLOG_READER_H

#ifndef SHMLOG_H
#error "include shmlog.h: it includes shmlog_reader.h"
#endif

/* ---- Reading. "Per reader": one thread at a time calls on a reader
 * (readers run in parallel). No reader call but shmlog_reader_lanes() is
 * AS. ------------------------------------------------------------------- */

typedef struct shmlog_reader shmlog_reader_t;

#define SHMLOG_READ_TAIL 0x1 /* start after the newest record (follow only) */
/* A dump: end where the buffer (each lane) or archive (its newest file)
 * ended at the first shmlog_reader_next(), as `dmesg` and `journalctl`
 * without -f end where the log ended when they began. Without it a reader
 * goes on while writers write, and a loop until SHMLOG_EV_NONE behind a
 * writer faster than the reader may never end. A dump reader does not
 * wait: shmlog_reader_wait() and _wait_any() say -EINVAL. */
#define SHMLOG_READ_DUMP 0x2

/* A record as returned to a reader: a validated copy in the reader's own
 * memory, valid until the next call on the reader. */
struct shmlog_record {
	uint64_t seq; /* per-lane sequence number (gaps are losses) */
	/* wall-clock time, ns since the Epoch: the same for a record in every
	 * reader, every time (the buffer's clock anchors, docs/DESIGN.md) */
	int64_t time_ns;
	uint64_t raw_time; /* the clock value as stored (for ordering) */
	uint32_t pid, tid; /* as reported by the writer (not verified) */
	int prio; /* SHMLOG_VERBOSE..SHMLOG_FATAL */
	unsigned flags; /* SHMLOG_REC_* */
	unsigned lane; /* lane the record was read from */
	const char *tag; /* NUL-terminated */
	size_t tag_len;
	const char *msg; /* NUL-terminated (may contain NULs: use msg_len) */
	size_t msg_len;
};

#define SHMLOG_REC_TRUNCATED 0x1 /* tag or message was cut to fit */
/* formatted by this reader from the call's format and values
 * (SHMLOG_WRITE_DEFERRED): shmlog_reader_deferred() gives them */
#define SHMLOG_REC_DEFERRED 0x2

/* What shmlog_reader_next() produced. */
enum shmlog_event {
	SHMLOG_EV_NONE = 0, /* nothing new: dump done, or wait and retry */
	SHMLOG_EV_RECORD = 1, /* *rec holds a record */
	SHMLOG_EV_LOST = 2, /* records were lost just before the next one;
			     * *lost says how many and why */
};

struct shmlog_lost {
	unsigned lane;
	uint64_t overwritten; /* overwritten before this reader got them */
	uint64_t torn; /* writer died mid-record */
};

/* Attach to a buffer for reading, mapped read-only: the reader writes the
 * segment only to say it waits (shmlog_reader_wait()). Errors: open's. MT
 * (each call makes its own reader); allocates. shmlog_reader_close() (NULL:
 * nothing) frees it: not MT with any other call on it. */
int shmlog_reader_open(const char *name, int flags, shmlog_reader_t **out);
void shmlog_reader_close(shmlog_reader_t *r);

/* Next record, oldest first, merged across lanes in time order:
 * SHMLOG_EV_RECORD (*rec filled), SHMLOG_EV_LOST (*lost filled, once per
 * gap, before the record after it), SHMLOG_EV_NONE (nothing more for now).
 * A thread's records come in the order it wrote them, also when it moved
 * to another lane while the reader read (a reader that waits may show one
 * written microseconds before the move after the next: docs/DESIGN.md).
 * Records that fail validation are skipped (torn), a damaged lane stepped
 * over once (shmlog_lane_stats.corrupt); no record comes twice or out of
 * its lane's order, so a loop until SHMLOG_EV_NONE ends whatever the file
 * holds, once its writers pause (SHMLOG_READ_DUMP: whatever they do; its
 * losses are reported up to its end). -EIO once if the file was truncated
 * under the reader (docs/SECURITY.md), SHMLOG_EV_NONE after; -ENOTSUP
 * once for an archive it cannot unpack (shmlog_reader_open_archive()). Per
 * reader; never blocks; allocates for an archive reader only. */
int shmlog_reader_next(shmlog_reader_t *r, struct shmlog_record *rec,
		       struct shmlog_lost *lost);

/* For the last record if SHMLOG_REC_DEFERRED: *@fmt its format from the
 * buffer or archive (valid until the next call; NULL if neither holds it)
 * and its values as a JSON array in @args (@cap bytes, NUL-terminated;
 * pointers, NaN and infinities as strings). The array is valid JSON and
 * UTF-8 whatever the buffer holds (bad bytes become U+FFFD, controls are
 * escaped) and holds
 * whole values only, ending before one the record does not hold whole or
 * @args has no room for (SHMLOG_DEFERRED_ARGS_MAX bytes hold any record
 * shmlog wrote; below 3, @args is ""). Returns 0, SHMLOG_DEFERRED_CUT
 * (positive, all filled) if the array ends early, -ENOENT if the last
 * record was not deferred. Per reader. */
#define SHMLOG_DEFERRED_CUT 1
/* 6 bytes of JSON for a byte of a value at most, and the brackets. */
#define SHMLOG_DEFERRED_ARGS_MAX (6 * SHMLOG_MSG_MAX + 3)
int shmlog_reader_deferred(const shmlog_reader_t *r, const char **fmt,
			   char *args, size_t cap);

/* Block until a writer may have committed a record, or @timeout_ms passes
 * (-1: forever; 0: only look): 0, -ETIMEDOUT, -EINTR (a signal), -EIO (file
 * truncated), -EINVAL (a dump: SHMLOG_READ_DUMP). The caller is a
 * follower, paced to cost writers little (docs/DESIGN.md, "Following
 * writers"): it watches the lanes for up to
 * 20 us, then sleeps on a futex, or naps behind a writer at full speed;
 * writers pay a wake-up only while a reader sleeps. It may leave records
 * published in the last 4 us (10 ms on a lane it rests on) for its next
 * call; with 0 it looks at every lane and ends every rest, so a follower
 * has read everything once shmlog_reader_next() said SHMLOG_EV_NONE and
 * then a wait with 0 said -ETIMEDOUT. Records a follower overtaken by a
 * writer at full speed skips count as overwritten. On x86 a follower
 * flushes the lines of the records it has read from the caches. Per
 * reader; blocks by design. */
int shmlog_reader_wait(shmlog_reader_t *r, int timeout_ms);

/* One wait over several readers (of several buffers, or archives), as
 * shmlog_reader_wait() waits on one: returns the index in @r of a reader
 * that has something for shmlog_reader_next() (the lowest such index;
 * others may be ready too, so read them all before waiting again),
 * -ETIMEDOUT when @timeout_ms passes, never sooner (negative: forever;
 * 0: only look, as shmlog_reader_wait() with 0), -EINTR if a signal
 * interrupted its sleep (one handled while it looks between two sleeps
 * does not end the wait), or -EINVAL at once (@r NULL, @n above
 * SHMLOG_WAIT_ANY_MAX, a dump among them, or no reader and a negative
 * @timeout_ms). NULL entries are skipped, as poll(2) skips a negative
 * descriptor; with no reader at all it sleeps @timeout_ms. A reader whose
 * file was truncated under it is ready (its shmlog_reader_next() reports
 * -EIO):
 * set its entry to NULL once that was reported. Watches, naps and
 * sleeps as shmlog_reader_wait() does, on every reader's buffer at
 * once: futex_waitv(2), Linux 5.16 and later. Where that call is
 * missing or refused (an older kernel, a seccomp filter; after the first
 * refusal the process no longer tries it), a set of more than one
 * reader looks every 10 ms instead, and finds a record with its first
 * look after the write; so does any set with a reader of an archive, of
 * a buffer whose header it may not write, or without membarrier(2). One
 * reader alone (the others NULL) sleeps on its futex on any kernel.
 * Thread-safety: not thread-safe with other calls on any of the readers
 * (each reader's own rule); different sets on different threads are
 * fine. Not async-signal-safe. Allocates nothing. Blocks for up to
 * @timeout_ms. */
#define SHMLOG_WAIT_ANY_MAX 128
int shmlog_reader_wait_any(shmlog_reader_t *const *r, size_t n,
			   int timeout_ms);

/* Per-lane accounting, exact: written = read + overwritten + torn + pending
 * (committed, not yet read). Records lost where the lane was found damaged
 * (a record or position no writer could make) count as torn; @corrupt
 * counts the places, each once (the newest field, hence the last). */
struct shmlog_lane_stats {
	uint64_t written; /* records the lane's writers have started */
	uint64_t read; /* returned by this reader */
	uint64_t overwritten; /* lost to wrap before this reader got them */
	uint64_t torn; /* writer died mid-record, or failed validation */
	uint64_t skipped; /* hidden by shmlog_clear() or the start position */
	uint32_t owner_pid; /* current owner, 0 if free (its own namespace's) */
	uint32_t owner_tid;
	/* 1 if a live process holds the lane (by the lane's lock: right across
	 * pid namespaces and pid reuse), 0 if free or its owner died */
	uint32_t owner_alive;
	uint64_t corrupt; /* places found damaged (each counted once) */
};

/* Who claimed a lane last, kept after it gives the lane back or dies. */
struct shmlog_lane_writer {
	uint32_t pid, tid; /* as the writer saw them (its pid namespace) */
	char name[17]; /* its process name (comm) at the claim, "" if none */
	/* 1 while it holds the lane (alive, by the lane's lock), 0 once it
	 * gave the lane back, exited or died */
	uint8_t alive;
	/* 1 if it died holding the lane and a later writer found it so; one
	 * dead, not yet found has alive 0 and the lane's owner_pid set */
	uint8_t died;
};

/* Fill @w with lane @lane's last claimer (written once per claim by writers
 * of format 2.2 on; lanes lent one record at a time keep none). 0, -ENOENT
 * none (never claimed, a shared lane, an archive reader), -EAGAIN a
 * claimer rewrote it meanwhile (try again), -EINVAL @lane out of range,
 * -EIO file truncated. Per reader. */
int shmlog_reader_lane_writer(const shmlog_reader_t *r, unsigned lane,
			      struct shmlog_lane_writer *w);

/* Writers that took turns in one lane: the buffer's last
 * SHMLOG_RECENT_WRITERS claims, one per slot, in no order. Fill @w with
 * slot @i's. 0, -ENOENT (empty slot, archive reader), -EAGAIN, -EINVAL
 * (@i too big), -EIO as shmlog_reader_lane_writer(). Per reader. */
#define SHMLOG_RECENT_WRITERS 8
int shmlog_reader_recent_writer(const shmlog_reader_t *r, unsigned i,
				struct shmlog_lane_writer *w);

/* The reader's number of lanes. AS; MT on a buffer's reader (fixed at
 * open), not on an archive reader's (it grows as it reads). */
unsigned shmlog_reader_lanes(const shmlog_reader_t *r);

/* The last SHMLOG_EV_LOST's records lie among @first..@last of its lane
 * (inclusive, with any hidden by shmlog_clear()), @last just before the
 * lane's next record; every report of that loss, by any reader or run,
 * carries the same range. 0, or -ENOENT if no loss was reported yet. Per
 * reader. */
int shmlog_reader_lost_seq(const shmlog_reader_t *r, uint64_t *first,
			   uint64_t *last);

/* The sequence number lane @lane's next record will carry (the newest
 * one's plus one, or the buffer's first). 0, or -EINVAL (out of range);
 * an archive reader: -ENOENT if unknown. Per reader. */
int shmlog_reader_lane_next_seq(const shmlog_reader_t *r, unsigned lane,
				uint64_t *next);

/* Fill @st with lane @lane's counters. 0, or -EINVAL (out of range); for
 * a file truncated under the reader, the counters the reader knows. Per
 * reader. */
int shmlog_reader_lane_stats(const shmlog_reader_t *r, unsigned lane,
			     struct shmlog_lane_stats *st);

/* Read an archive (the directory `shmlog archive -o DIR` writes:
 * docs/archive.md) through the calls above, in archived order: records
 * (printf-style ones as formatted when archived: shmlog_reader_deferred()
 * says -ENOENT) and a loss for each span the archive lacks (@overwritten
 * also counts records the archiver could not store); SHMLOG_READ_TAIL
 * starts after the newest, SHMLOG_READ_DUMP ends at the first block past
 * the newest file's end at the first read. At its end SHMLOG_EV_NONE;
 * shmlog_reader_wait() waits for more (looking every 10 ms). A damaged or
 * hostile file ends early (counted as @corrupt in lane 0), never crashing
 * or hanging the reader. Blocks compressed by `shmlog archive --zstd` are
 * read by a library built with zstd (cmake -DSHMLOG_ZSTD=ON); one built without
 * skips the files that hold them (counted as @corrupt) and its
 * shmlog_reader_next() says -ENOTSUP once, then goes on.
 * shmlog_reader_lane_stats() counts what this reader read and the
 * losses it reported, per lane number (of every buffer);
 * shmlog_reader_lane_next_seq() is the archive's position in the buffer
 * (-ENOENT unknown). Errors: -ENOENT, -ENOTDIR, -EACCES, -EINVAL (bad
 * flag), -ENOMEM. MT; allocates. */
int shmlog_reader_open_archive(const char *dir, int flags,
			       shmlog_reader_t **out);

/* A buffer an archive holds records of. */
struct shmlog_archive_source {
	const char *buffer; /* the buffer's path when archived */
	int64_t created_ns; /* its creation time (shmlog_info.created_ns) */
	uint64_t ino; /* its file's inode */
	unsigned lanes;
	/* the host that wrote the archive file the last record or loss came
	 * from (before any, the first file): its header's gethostname() */
	const char *host;
};

/* The buffer with path @buffer (NULL: that of the last record or loss) in
 * archive reader @r; strings valid until @r is closed. 0, -ENOENT (not met
 * yet), -EINVAL (not an archive reader). Per reader. */
int shmlog_reader_archive_source(const shmlog_reader_t *r, const char *buffer,
				 struct shmlog_archive_source *src);

/* The sequence number after the last record or loss of @buffer's lane
 * @lane that archive reader @r returned: a follower of the same live
 * buffer (compare created_ns) that skips the lane's records below it goes
 * on with no gap and no duplicate. 0, -ENOENT (unknown), -EINVAL (@lane out
 * of range, not an archive reader). Per reader. */
int shmlog_reader_archive_next_seq(const shmlog_reader_t *r,
				   const char *buffer, unsigned lane,
				   uint64_t *next);

#endif /* SHMLOG_READER_H */
