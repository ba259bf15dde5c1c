/* SPDX-License-Identifier: MIT */
/*
 * shmlog: daemon-less logging into a shared-memory ring.
 *
 * A buffer is a file (by default /dev/shm/shmlog.NAME) that holds a ring of
 * log records. Any process allowed to write the file logs into it with no
 * syscall, no lock and no daemon on the way; any process allowed to read it
 * dumps or follows it. See docs/DESIGN.md for the format and the protocol.
 *
 * Every function returns 0 (or a documented non-negative value) or a
 * negative errno value, leaves its out-parameters untouched on failure,
 * and never prints (but on stderr with SHMLOG_DEBUG=1), exits or aborts,
 * whatever the input, a corrupted or hostile segment included.
 *
 * Contracts. MT: thread-safe, on one handle too, with no lock by the caller
 * (rd: one thread at a time per reader, readers in parallel). AS:
 * async-signal-safe. Alloc: calls malloc(3). Blocks: waits for another
 * thread or process, or sleeps (file syscalls aside). 1st: only a thread's
 * first call on the handle (write: a process-local mutex to claim a lane);
 * flt: only the first call after the buffer's filter changed (compiles
 * it); ~: AS but for those two (SHMLOG_WRITE_UNFILTERED skips the filter).
 * Errors are -E...; open's: shmlog_open()'s. Details, and the exceptions
 * (shmlog_strerror() of a code shmlog does not name follows strerror(3)),
 * in each function's comment.
 *
 * function (shmlog_)           MT  AS  alloc    blocks errors (-E)
 * create_opts_init             yes yes no       no     -
 * path                         yes no  no       no     INVAL NAMETOOLONG
 * create                       yes no  no       10ms   EXIST INVAL NOSPC ACCES
 *                                                      PERM, open(2)'s
 * remove                       yes no  no       no     NOENT ACCES INVAL PERM
 * clear                        yes no  no       no     open's IO
 * open                         yes no  yes      mutex  BADMSG PROTONOSUPPORT
 *                                                      NODATA PERM NOENT NOMEM
 *                                                      MFILE
 * close                        no  no  free     mutex  -
 * check                        yes yes no       no     STALE INVAL, lstat(2)'s
 * write, write_n, write_ex     yes ~   flt      1st    INVAL AGAIN BUSY IO
 *                                                      STALE
 * print, vprint                yes no  flt      1st    as write
 * print_ex, vprint_ex; macros  yes no  flt,1st  1st    as write
 * default                      yes no  1st      1st    (NULL)
 * enabled                      yes no  flt      mutex  -
 * set_filter                   yes no  no       100ms  INVAL 2BIG IO open's
 * get_filter                   yes no  no       no     NAMETOOLONG AGAIN IO
 *                                                      open's
 * parse_filter                 yes yes no       no     INVAL
 * filter_new                   yes no  yes      no     INVAL NOMEM
 * filter_wants                 yes yes no       no     -
 * filter_free                  no  no  free     no     -
 * reader_open                  yes no  yes      no     open's
 * reader_open_archive          yes no  yes      no     NOENT NOTDIR ACCES INVAL
 *                                                      NOMEM
 * reader_close                 rd  no  free     no     -
 * reader_next                  rd  no  archive  no     IO
 * reader_wait                  rd  no  no       yes    TIMEDOUT INTR IO
 * reader_wait_any              rd  no  no       yes    TIMEDOUT INTR INVAL
 * reader_deferred              rd  no  no       no     NOENT
 * reader_lane_writer,          rd  no  no       no     NOENT AGAIN INVAL IO
 *   reader_recent_writer
 * reader_lanes                 rd  yes no       no     -
 * reader_lost_seq              rd  no  no       no     NOENT
 * reader_lane_next_seq, _stats rd  no  no       no     INVAL NOENT
 * reader_archive_source,       rd  no  no       no     NOENT INVAL
 *   reader_archive_next_seq
 * stat, stat_formats, _space   yes no  no       no     open's IO
 * prio_char                    yes yes no       no     -
 * prio_parse                   yes no  no       no     INVAL
 * strerror                     yes no  no       no     -
 */
#ifndef SHMLOG_H
#define SHMLOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SHMLOG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define SHMLOG_LIKELY(x) __builtin_expect(!!(x), 1)
#define SHMLOG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define SHMLOG_PRINTF(f, a)
#define SHMLOG_LIKELY(x) (x)
#define SHMLOG_UNLIKELY(x) (x)
#endif

/* ---- Priorities: Android's numbering, read at a glance by logcat users. */

enum shmlog_priority {
	SHMLOG_VERBOSE = 2,
	SHMLOG_DEBUG = 3,
	SHMLOG_INFO = 4,
	SHMLOG_WARN = 5,
	SHMLOG_ERROR = 6,
	SHMLOG_FATAL = 7,
	SHMLOG_SILENT = 8, /* only as a filter level: log nothing */
};

/* Limits of one record: longer tags and messages are truncated and flagged
 * SHMLOG_REC_TRUNCATED, never rejected. */
#define SHMLOG_TAG_MAX 64 /* bytes of tag kept */
#define SHMLOG_MSG_MAX 4000 /* bytes of message kept (less in tiny lanes) */

/* Buffer sizes accepted by shmlog_create(): the ring's data capacity. */
#define SHMLOG_SIZE_MIN (64u * 1024u)
#define SHMLOG_SIZE_DEFAULT (1024u * 1024u)
#define SHMLOG_SIZE_MAX ((uint64_t)16 << 30)

/* Each writing thread owns a lane while it logs, so a flooding writer only
 * overwrites its own records (docs/DESIGN.md). Capacity / lanes must fall
 * in SHMLOG_LANE_SIZE_MIN..MAX bytes. */
#define SHMLOG_LANES_MAX 1024
#define SHMLOG_LANE_SIZE_MIN 1024u
#define SHMLOG_LANE_SIZE_MAX 0x7fffffffu

/* Bytes of a buffer's filter spec with its NUL: shmlog_set_filter() takes
 * at most SHMLOG_FILTER_SPEC_MAX - 1. */
#define SHMLOG_FILTER_SPEC_MAX 2048

/* ---- Buffers: create, remove, locate. ---------------------------------- */

/* The clock a buffer stamps records with, chosen at creation: every writer
 * uses the same one, so records merge in order. */
enum shmlog_clock {
	SHMLOG_CLOCK_DEFAULT = 0, /* TSC when invariant, else REALTIME */
	SHMLOG_CLOCK_TSC = 1, /* rdtsc, calibrated against CLOCK_REALTIME */
	SHMLOG_CLOCK_REALTIME = 2, /* clock_gettime(CLOCK_REALTIME) */
	SHMLOG_CLOCK_COARSE = 3, /* CLOCK_MONOTONIC_COARSE: cheap, ~4 ms steps */
};

/* Options of shmlog_create(); zero (or NULL) means the default, field by
 * field. */
struct shmlog_create_opts {
	uint64_t size; /* data capacity in bytes; 0: SHMLOG_SIZE_DEFAULT */
	unsigned lanes; /* number of lanes; 0: chosen from size */
	mode_t mode; /* file mode; 0: 0600 */
	gid_t gid; /* group owner; 0 or (gid_t)-1: the caller's; group 0
		    * (root's) only with SHMLOG_CREATE_GID in @flags */
	int clock; /* enum shmlog_clock */
	/* For tests: first sequence number and logical position, to exercise
	 * counter wrap-around. 0 means the defaults. */
	uint64_t initial_seq;
	uint64_t initial_pos;
	unsigned flags; /* SHMLOG_CREATE_*; 0: none */
};

#define SHMLOG_CREATE_GID 0x1 /* give the file to @gid even when it is 0 */

/* Fill @opts with the defaults (zeroes). MT, AS. */
void shmlog_create_opts_init(struct shmlog_create_opts *opts);

/* Resolve a buffer name to its path: NAME is /dev/shm/shmlog.NAME, an
 * absolute path itself, NULL or "" the default ($SHMLOG_BUFFER, else
 * "main"). Returns the path's length, -EINVAL for a name with characters
 * outside [A-Za-z0-9._-] or a leading '.', -ENAMETOOLONG if @buf is too
 * small. MT (reads the environment); not AS (snprintf). */
int shmlog_path(const char *name, char *buf, size_t buflen);

/* Create a buffer (@opts NULL: defaults), fully initialised or not at all
 * (built under a temporary name, then linked). Errors: -EEXIST, -EINVAL
 * (name, option), -ENOSPC (posix_fallocate'd: never a SIGBUS later),
 * -EACCES, -EPERM (a group the caller is neither root for nor a member of),
 * open(2)'s. MT; no allocation; sleeps 10 ms the first time a process
 * calibrates the TSC. */
int shmlog_create(const char *name, const struct shmlog_create_opts *opts);

/* Remove a buffer's file. Processes mapping it keep what they wrote in the
 * orphaned copy, which no reader finds; the file is marked removed (if the
 * caller may write it) and their writes then say -ESTALE. Errors: -ENOENT,
 * -EACCES, -EINVAL, -EPERM (not a regular file). MT; not AS. */
int shmlog_remove(const char *name);

/* Hide every record written so far from later readers, touching no
 * writer's state. Errors: open's, -EIO if the file was truncated meanwhile.
 * MT; not AS. */
int shmlog_clear(const char *name);

/* ---- Writing. ---------------------------------------------------------- */

typedef struct shmlog shmlog_t;

#define SHMLOG_OPEN_CREATE 0x1 /* create the buffer with defaults if missing */

/* Attach to a buffer for writing, validating the segment: -EBADMSG bad magic
 * or checksum, -EPROTONOSUPPORT unknown major version, -ENODATA sizes that
 * do not fit the file, -EPERM a file we may not trust (symlink, FIFO, hard
 * link, foreign owner, world-writable), -ENOENT missing (without
 * SHMLOG_OPEN_CREATE), -ENOMEM, -EMFILE (a handle keeps two descriptors).
 * SHMLOG_DEBUG=1 says a failure on stderr, once. MT; allocates; takes a
 * process-local mutex; creating the buffer, sleeps as shmlog_create(). */
int shmlog_open(const char *name, int flags, shmlog_t **out);

/* Detach (NULL: nothing); this process's lanes are released, their records
 * stay. Not MT: no other thread may use @h during or after the call. */
void shmlog_close(shmlog_t *h);

/* Does @h still write where readers look: is the file its name leads to
 * the one @h maps? 0 yes; -ESTALE no: the buffer was removed
 * (shmlog_remove(), `shmlog rm`, rm(1)), and maybe created again. A
 * writer keeps logging into the removed file's chunk it holds, where no
 * reader finds the records, until the chunk is used up; only then do its
 * writes say -ESTALE. A long-running writer that logs now and then calls
 * this every so often, off its write path (say every 100 ms, before a
 * write), and on -ESTALE closes @h and opens the buffer again by name.
 * Errors: -EINVAL a NULL @h; lstat(2)'s (-EACCES, -ENOMEM, ...): nothing
 * known, @h goes on as it was. One lstat(2), no byte of the buffer read.
 * MT, AS; no allocation. */
int shmlog_check(shmlog_t *h);

/* Write one record if the buffer's filter wants it (`shmlog level`,
 * shmlog_set_filter(), $SHMLOG_TAGS; filtered out: 0). @prio outside
 * VERBOSE..FATAL is logged as INFO, a NULL or "" @tag as "?", a NULL @msg
 * as "(null)". Errors: -EINVAL a NULL @h; -EAGAIN no lane of the thread's
 * own and every shared lane busy, -EBUSY a signal handler interrupted a
 * write on this thread and handle and no shared lane is free (none below 8
 * lanes): both counted as dropped (docs/DESIGN.md, "Lanes"); -EIO the file
 * was truncated under a thread's first write (its lane claim survives the
 * SIGBUS; later writes do not: docs/SECURITY.md); -ESTALE
 * the buffer was removed and the thread's chunk in it is used up: the
 * handle never reopens itself (threads write with no lock), so close it
 * and open the buffer again. SHMLOG_DEBUG=1 says why, once per cause.
 * MT and lock-free: no syscall, lock, allocation or page fault in steady
 * state; a thread's first write to @h claims a lane (a process-local mutex
 * and an fcntl() lock: docs/DESIGN.md, "Lane ownership"). AS once the
 * thread has written to @h, but the first write after the filter changed
 * compiles it (malloc): a handler that must not allocate passes
 * SHMLOG_WRITE_UNFILTERED. */
int shmlog_write(shmlog_t *h, int prio, const char *tag, const char *msg);

/* As shmlog_write(), @len bytes of any value. Rules as shmlog_write(). */
int shmlog_write_n(shmlog_t *h, int prio, const char *tag, const char *msg,
		   size_t len);

/* printf-style, formatted into a stack buffer. Rules as shmlog_write(),
 * but not AS (vsnprintf). */
int shmlog_print(shmlog_t *h, int prio, const char *tag, const char *fmt, ...)
	SHMLOG_PRINTF(4, 5);
int shmlog_vprint(shmlog_t *h, int prio, const char *tag, const char *fmt,
		  va_list ap) SHMLOG_PRINTF(4, 0);

/* Flags of shmlog_write_ex() and shmlog_print_ex(). */
#define SHMLOG_WRITE_UNFILTERED 0x1 /* log even if the filter says no */
/* shmlog_print_ex() only: @fmt never changes at its address (a string
 * literal), so the call may be stored as its format's place in the buffer's
 * table and its values, formatted by whichever reader reads it. Conversions
 * it cannot store (%n, %m, positional, wide), and calls once the table is
 * full (counted: shmlog_stat_formats()), are formatted by the caller. Not
 * for a format built at run time in a buffer that is reused. */
#define SHMLOG_WRITE_DEFERRED 0x2

/* As shmlog_write_n(), with @flags (SHMLOG_WRITE_*) and @pid: 0 the caller,
 * else recorded as the record's pid and tid (a wrapper logging for a child,
 * as `shmlog run`; readers show it, never trust it). -EINVAL for an unknown
 * flag or a negative @pid. Rules as shmlog_write(). */
int shmlog_write_ex(shmlog_t *h, unsigned flags, pid_t pid, int prio,
		    const char *tag, const char *msg, size_t len);

/* As shmlog_print(), with @flags; -EINVAL for an unknown one. MT; not AS;
 * with SHMLOG_WRITE_DEFERRED, the first such call on a handle allocates its
 * format cache. */
int shmlog_print_ex(shmlog_t *h, unsigned flags, int prio, const char *tag,
		    const char *fmt, ...) SHMLOG_PRINTF(5, 6);
int shmlog_vprint_ex(shmlog_t *h, unsigned flags, int prio, const char *tag,
		     const char *fmt, va_list ap) SHMLOG_PRINTF(5, 0);

/* The process-wide default handle on $SHMLOG_BUFFER (else "main"), opened,
 * and the buffer created if missing, on first use. NULL if it cannot be
 * (the SHMLOG_x macros then log nothing; SHMLOG_DEBUG=1 says why). MT; the
 * first call opens it (other first callers wait), later ones load it. */
shmlog_t *shmlog_default(void);

/* The printf-style macros (shmlog_macros.h, included at the end):
 * SHMLOG_LOG(prio, tag, fmt, ...) logs through shmlog_default() if @prio is
 * enabled for @tag; SHMLOG_V, _D, _I, _W, _E, _F(tag, fmt, ...) are it for
 * each priority, and SHMLOGV .. SHMLOGF(fmt, ...) with the file's tag
 * SHMLOG_TAG (define it before including this header, as Android's
 * LOG_TAG; else "?"). A disabled call costs a load and two compares and
 * evaluates no argument: the call site caches its tag's answer, so the tag
 * is the same string on every call, a string literal or a constant array
 * (in C++ any other tag is asked about on each call). Calls below
 * SHMLOG_MIN_PRIORITY (define it first) vanish from the binary.
 * SHMLOG_LOG_TO(h, prio, tag, fmt, ...) logs through a handle of your own,
 * its filter asked on each call after the arguments are evaluated.
 * A call whose format is a string literal is stored deferred
 * (SHMLOG_WRITE_DEFERRED), its values typed by the compiler (C11 _Generic,
 * C++ templates) where it can tell them; the call site keeps the compiled
 * format and its id in the buffer, so a call copies its values and looks
 * nothing up. MT; not AS (a call site's first call allocates). */

/* ---- Filtering: per-tag levels in logcat's filter-spec syntax. --------- */

/* Is a record of @prio with @tag wanted on @h (NULL: no)? The buffer's spec
 * (shmlog_set_filter()) after $SHMLOG_TAGS, else everything. MT (a
 * process-local mutex); not AS; compiles a changed filter (malloc). */
int shmlog_enabled(shmlog_t *h, int prio, const char *tag);

/* Set a buffer's spec ("net:D *:W"; "" logs everything); every process
 * writing to it follows at its next call. Errors: -EINVAL (NULL @spec, or
 * a bad token, its offset in @bad_offset if not NULL), -E2BIG (does not
 * fit), -EIO (file truncated meanwhile), open's. MT; not AS; waits up to
 * ~100 ms (1 ms naps) for another setter, then takes over its lock (a
 * setter that died holding it). */
int shmlog_set_filter(const char *name, const char *spec, size_t *bad_offset);

/* Copy a buffer's spec into @buf, NUL-terminated. Returns its length,
 * -ENAMETOOLONG (@buf too small), -EAGAIN (a setter held the spec all
 * along: try again), -EIO (file truncated meanwhile), open's. MT; not AS;
 * never waits. */
int shmlog_get_filter(const char *name, char *buf, size_t buflen);

/* Check a spec: 0, or -EINVAL (NULL, or a bad token at *@bad_offset).
 * Tokens are TAG:P, TAG (TAG:V) or *:P, P one of V D I W E F S in either
 * case; a tag is 1 to SHMLOG_TAG_MAX bytes, matched exactly, with no '='
 * or '*' ("net=D" is refused, not a tag). MT, AS. */
int shmlog_parse_filter(const char *spec, size_t *bad_offset);

/* A compiled spec, for readers that filter what they show (the environment
 * is not consulted); never changes once made. */
typedef struct shmlog__filter shmlog_filter_t;

/* Compile @spec: -EINVAL (bad token at *@bad_offset), -ENOMEM. MT. */
int shmlog_filter_new(const char *spec, size_t *bad_offset,
		      shmlog_filter_t **out);
/* Does @f (NULL: everything) let @prio with @tag through? MT, AS. */
int shmlog_filter_wants(const shmlog_filter_t *f, int prio, const char *tag);
/* Free @f (NULL: nothing). Not MT: nobody may use @f during or after. */
void shmlog_filter_free(shmlog_filter_t *f);

/* ---- Reading: shmlog_reader.h (the reader API, its rules as above). */
#include "shmlog_reader.h"

/* ---- Inspection. ------------------------------------------------------ */

struct shmlog_info {
	uint64_t file_size; /* bytes of the file */
	uint64_t capacity; /* bytes of record space */
	uint64_t used; /* bytes currently holding records */
	unsigned lanes;
	unsigned writers; /* lanes held by a live process */
	unsigned version_major, version_minor;
	int clock; /* enum shmlog_clock */
	int64_t created_ns; /* creation time, ns since the Epoch */
	/* records written over the buffer's life, counting those a dead
	 * writer left unfinished (as shmlog_reader_lane_stats() does) */
	uint64_t written;
	uint64_t torn; /* records left unfinished by dead writers */
	uint64_t dropped; /* records refused: no free lane or nested write */
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* Describe a buffer; a lane's writer is live while its process holds the
 * lane's lock (docs/DESIGN.md, "Lane ownership"). Errors: open's, -EIO
 * (file truncated while read). MT; not AS; no allocation. */
int shmlog_stat(const char *name, struct shmlog_info *info);

/* The buffer's table of formats (SHMLOG_WRITE_DEFERRED calls). */
struct shmlog_format_stats {
	uint64_t formats; /* call sites' formats in the table */
	uint64_t used, size; /* bytes of the table taken, and its size */
	uint64_t full; /* calls formatted by the caller: the table was full */
	/* calls formatted by the caller: a conversion the reader does not
	 * format (%n, %m, positional, wide characters) */
	uint64_t refused;
};

/* Fill @st for buffer @name. Errors and rules as shmlog_stat(). */
int shmlog_stat_formats(const char *name, struct shmlog_format_stats *st);

/* Where a buffer's space goes, in chunks (docs/DESIGN.md, "Lanes and
 * chunks"); a writer is live while its lane's owner word is set. */
struct shmlog_space_stats {
	uint64_t chunk_size; /* bytes of a chunk */
	uint64_t chunks; /* chunks of the buffer */
	uint64_t unused; /* never written */
	uint64_t writers; /* held by live writers for their own records */
	/* held for writers that exited or died: their newest records */
	uint64_t departed;
	/* the most the departed keep beside the live writers of now: the
	 * oldest of theirs go first beyond it */
	uint64_t departed_bound;
};

/* Fill @st for buffer @name. Errors and rules as shmlog_stat(). */
int shmlog_stat_space(const char *name, struct shmlog_space_stats *st);

/* A priority's letter ('V'..'F', 'S'), '?' if out of range. MT, AS. */
char shmlog_prio_char(int prio);

/* Parse a priority letter, name or number ("W", "warn", "5": Android's 2
 * verbose to 8 silent; the shmlog command takes syslog's 0..7 instead);
 * -EINVAL if bad. MT; not AS (strcasecmp(3) is not on POSIX's list). */
int shmlog_prio_parse(const char *s);

/* A short English description of a negative return value. MT for the
 * codes shmlog names, others are strerror(3)'s under its rules. Not AS. */
const char *shmlog_strerror(int err);

#ifdef __cplusplus
}
#endif

/* The macros' machinery (internal: shmlog__ / SHMLOG__ names). */
#include "shmlog_macros.h"

/* C++: what the macros learn from templates (outside the extern "C"
 * block: templates have C++ linkage). */
#ifdef __cplusplus
#include "shmlog_cxx.h"
#endif

#endif /* SHMLOG_H */
