/* SPDX-License-Identifier: MIT */
/*
 * shmlog: daemon-less logging into a shared-memory ring.
 *
 * A buffer is a file (by default /dev/shm/shmlog.NAME) that holds a ring of
 * log records. Any process allowed to write the file logs into it with no
 * syscall, no lock and no daemon on the way; any process allowed to read it
 * dumps or follows it. See docs/DESIGN.md for the format and the protocol.
 *
 * Conventions, for every function below:
 *  - Functions return 0 (or a documented non-negative count) on success and a
 *    negative errno value on failure. Out-parameters are left untouched on
 *    failure. The library never prints, never exits and never aborts on any
 *    input, including a corrupted or hostile segment.
 *  - "Thread-safe" means the function may be called on the same handle from
 *    several threads at once with no locking by the caller.
 *  - "Async-signal-safe" means it may be called from a signal handler.
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

/* ------------------------------------------------------------------------ */
/* Priorities: Android's numbering, so logcat users read them at a glance.  */

enum shmlog_priority {
	SHMLOG_VERBOSE = 2,
	SHMLOG_DEBUG = 3,
	SHMLOG_INFO = 4,
	SHMLOG_WARN = 5,
	SHMLOG_ERROR = 6,
	SHMLOG_FATAL = 7,
	SHMLOG_SILENT = 8, /* only as a filter level: log nothing */
};

/* Limits of one record. Longer tags and messages are truncated and the
 * record is flagged SHMLOG_REC_TRUNCATED; nothing is ever rejected for size. */
#define SHMLOG_TAG_MAX 64 /* bytes of tag kept */
#define SHMLOG_MSG_MAX 4000 /* bytes of message kept (less in tiny lanes) */

/* Buffer sizes accepted by shmlog_create(): the ring's data capacity. */
#define SHMLOG_SIZE_MIN (64u * 1024u)
#define SHMLOG_SIZE_DEFAULT (1024u * 1024u)
#define SHMLOG_SIZE_MAX ((uint64_t)16 << 30)

/* Lanes: each writing thread owns one lane while it logs, so a flooding
 * writer only ever overwrites its own records (see docs/DESIGN.md). */
#define SHMLOG_LANES_MAX 1024
/* Bytes of ring in one lane: capacity / lanes must fall in this range. */
#define SHMLOG_LANE_SIZE_MIN 1024u
#define SHMLOG_LANE_SIZE_MAX 0x7fffffffu

/* Bytes a buffer's filter spec may hold, its terminating NUL included:
 * shmlog_set_filter() takes specs of at most SHMLOG_FILTER_SPEC_MAX - 1
 * bytes. */
#define SHMLOG_FILTER_SPEC_MAX 2048

/* ------------------------------------------------------------------------ */
/* Buffers: create, remove, locate.                                          */

/* Clocks a buffer can stamp its records with. Chosen at creation; every
 * writer of the buffer uses the same one so records merge in order. */
enum shmlog_clock {
	SHMLOG_CLOCK_DEFAULT = 0, /* TSC when invariant, else REALTIME */
	SHMLOG_CLOCK_TSC = 1, /* rdtsc, calibrated against CLOCK_REALTIME */
	SHMLOG_CLOCK_REALTIME = 2, /* clock_gettime(CLOCK_REALTIME) */
	SHMLOG_CLOCK_COARSE = 3, /* CLOCK_MONOTONIC_COARSE: cheap, ~4 ms steps */
};

/* Options of shmlog_create(). A zero-initialised struct means the defaults,
 * field by field ("struct shmlog_create_opts o = {0}" or NULL). */
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

/* Flags of struct shmlog_create_opts. */
#define SHMLOG_CREATE_GID 0x1 /* give the file to @gid even when it is 0 */

/* Fill @opts with defaults (the same as zeroing it). Thread-safe,
 * async-signal-safe. */
void shmlog_create_opts_init(struct shmlog_create_opts *opts);

/* Resolve a buffer name to its file path. NAME maps to /dev/shm/shmlog.NAME;
 * an absolute path is taken as it is; NULL or "" means the default buffer
 * ($SHMLOG_BUFFER, else "main"). Returns the length of the path, or
 * -EINVAL for a name with characters outside [A-Za-z0-9._-] (or starting
 * with '.'), -ENAMETOOLONG if @buf is too small. Thread-safe. */
int shmlog_path(const char *name, char *buf, size_t buflen);

/* Create a buffer; @opts may be NULL for defaults. The file appears fully
 * initialised or not at all (it is built under a temporary name and linked
 * into place). Errors: -EEXIST, -EINVAL (bad name or option), -ENOSPC (no
 * room: checked with posix_fallocate, never a SIGBUS later), -EACCES,
 * -EPERM when the file cannot be given to the group asked for (the caller
 * is not root and not a member of it), and others from open(2).
 * Thread-safe. */
int shmlog_create(const char *name, const struct shmlog_create_opts *opts);

/* Remove a buffer's file. Processes that have it mapped keep what they
 * wrote in the orphaned copy, which no reader finds; the removed file is
 * marked so (when the caller may open it for writing), and their writes
 * take no new chunk in it and say -ESTALE (shmlog_write()).
 * `shmlog rm` refuses while shmlog_stat() counts live writers, unless
 * --force. Errors: -ENOENT, -EACCES, -EINVAL, -EPERM (not a regular
 * file). Thread-safe. */
int shmlog_remove(const char *name);

/* Hide every record written so far from later readers, without touching any
 * writer's state (readers skip records stamped before the clear). Errors as
 * shmlog_open(), and -EIO if the file was truncated meanwhile. Thread-safe. */
int shmlog_clear(const char *name);

/* ------------------------------------------------------------------------ */
/* Writing.                                                                  */

typedef struct shmlog shmlog_t;

/* Flags for shmlog_open(). */
#define SHMLOG_OPEN_CREATE 0x1 /* create the buffer with defaults if missing */

/* Attach to a buffer for writing. The segment is validated: -EBADMSG bad
 * magic or checksum, -EPROTONOSUPPORT unknown major version, -ENODATA sizes
 * that do not fit the file, -EPERM a file that is not a regular file we may
 * trust (symlink, FIFO, hard link, foreign owner, world-writable), -ENOENT
 * missing (without SHMLOG_OPEN_CREATE), -ENOMEM, -EMFILE (no descriptor
 * left: a handle keeps two, one of them for the lanes' locks). With
 * SHMLOG_DEBUG=1 in the environment a failure is also said on stderr (once
 * per process), as is a later write on the NULL handle. Thread-safe. */
int shmlog_open(const char *name, int flags, shmlog_t **out);

/* Detach. The lanes this process holds are released; their records stay.
 * No other thread may use @h during or after the call. */
void shmlog_close(shmlog_t *h);

/* Write one record, if the buffer's filter wants it: `shmlog level` and
 * $SHMLOG_TAGS govern every write, as they govern the SHMLOG_x macros (a
 * record filtered out returns 0, and costs two loads and a compare when
 * no filter restricts its priority). shmlog_write_ex() with
 * SHMLOG_WRITE_UNFILTERED bypasses the filter on purpose. @prio outside
 * VERBOSE..FATAL is logged as INFO; a NULL or empty @tag is logged as "?";
 * a NULL @msg is logged as "(null)". Too long tags/messages are truncated
 * and flagged.
 *
 * Returns 0, or -EAGAIN when the thread has no lane of its own and every
 * shared lane is in use at that instant (the record is counted as dropped
 * in the segment; see docs/DESIGN.md, "Lanes"), or -EBUSY when called from a
 * signal handler that interrupted a write on the same thread and handle and
 * no shared lane was free (counted too; such nested writes go to a shared
 * lane, and buffers of fewer than 8 lanes have none), or -EIO when the
 * buffer's file was truncated under a thread's first write (its claim of a
 * lane survives the SIGBUS; later writes do not: docs/SECURITY.md), or
 * -ESTALE once the buffer was removed (shmlog_remove(), `shmlog rm
 * --force`): the thread's chunk in the removed file is used up, and no
 * other is taken in it (its records would reach no reader). The handle
 * does not reopen by itself (its threads write without a lock, and its
 * mapping cannot change under them): close it and open the buffer again
 * by name once it is created again, as `shmlog run` and `shmlog write`
 * do. With
 * SHMLOG_DEBUG=1 in the environment the library says why on stderr, once
 * per cause (the only place it ever prints). No syscall, lock, allocation
 * or page fault in steady state: the first write of a thread claims a lane
 * (an fcntl() lock; docs/DESIGN.md, "Lane ownership").
 * Thread-safe and lock-free: never waits for anybody. Async-signal-safe
 * once the calling thread has written to @h before (its first write claims
 * a lane under a process-local mutex), except that the first write after
 * the filter changed compiles it (malloc): a signal handler that must
 * never allocate writes with SHMLOG_WRITE_UNFILTERED. */
int shmlog_write(shmlog_t *h, int prio, const char *tag, const char *msg);

/* As shmlog_write(), with an explicit message length (the message may then
 * contain any bytes). */
int shmlog_write_n(shmlog_t *h, int prio, const char *tag, const char *msg,
		   size_t len);

/* printf-style writes, formatted into a stack buffer (no allocation).
 * Thread-safe; not async-signal-safe (vsnprintf is not). */
int shmlog_print(shmlog_t *h, int prio, const char *tag, const char *fmt, ...)
	SHMLOG_PRINTF(4, 5);
int shmlog_vprint(shmlog_t *h, int prio, const char *tag, const char *fmt,
		  va_list ap) SHMLOG_PRINTF(4, 0);

/* Flags for shmlog_write_ex() and shmlog_print_ex(). */
#define SHMLOG_WRITE_UNFILTERED 0x1 /* log even if the filter says no */
/* shmlog_print_ex() only: @fmt is a string that never changes at its
 * address (a string literal). The call may then be stored as its format's
 * place in the buffer's table and its argument values, and formatted by
 * whichever reader reads it, in any process, at any later time: a copy of
 * the values instead of vsnprintf in the caller. Conversions it cannot
 * store (%n, %m, positional, wide characters), and calls made once the
 * buffer's format table is full, are formatted by the caller as without
 * the flag (the latter counted: shmlog_stat_formats()). The SHMLOG_x
 * macros pass it when the format is a string literal. Not for a format
 * built at run time in a buffer that is reused. */
#define SHMLOG_WRITE_DEFERRED 0x2

/* As shmlog_write_n(), with @flags (SHMLOG_WRITE_*) and the process the
 * record is from: @pid 0 means the caller (pid and tid as usual), another
 * value is recorded as the record's pid and tid (a wrapper logging for a
 * child, as `shmlog run` does; readers show it, never trust it). Errors as
 * shmlog_write(), and -EINVAL for an unknown flag or a negative @pid.
 * Thread-safety as shmlog_write(). */
int shmlog_write_ex(shmlog_t *h, unsigned flags, pid_t pid, int prio,
		    const char *tag, const char *msg, size_t len);

/* As shmlog_print(), with @flags (SHMLOG_WRITE_*). -EINVAL for an unknown
 * flag. The SHMLOG_x macros call it with SHMLOG_WRITE_UNFILTERED: their
 * call site asked the filter already. */
int shmlog_print_ex(shmlog_t *h, unsigned flags, int prio, const char *tag,
		    const char *fmt, ...) SHMLOG_PRINTF(5, 6);
/* As shmlog_print_ex(), with a va_list. */
int shmlog_vprint_ex(shmlog_t *h, unsigned flags, int prio, const char *tag,
		     const char *fmt, va_list ap) SHMLOG_PRINTF(5, 0);

/* printf-style calls through a handle of your own, deferred as the
 * SHMLOG_x macros do: SHMLOG_LOG_TO(h, SHMLOG_INFO, "net", "link %s down",
 * ifname) is shmlog_print_ex(h, 0, ...) with SHMLOG_WRITE_DEFERRED when
 * the format is a string literal, and the call site keeps what never
 * changes (its format's plan, and its id in the buffer of the handle it
 * last wrote to), so a call copies its values without looking the format
 * up. The handle's filter is asked on every call (after the arguments are
 * evaluated). Thread-safety as shmlog_print_ex(). */
#define SHMLOG_LOG_TO(h, prio, tag, ...)                                       \
	do {                                                                   \
		SHMLOG__PRINT((h), 0, (prio), (tag), __VA_ARGS__)              \
	} while (0)

/* The process-wide default handle, opened on first use on $SHMLOG_BUFFER
 * (else "main"), creating the buffer if missing. Returns NULL if it cannot
 * be opened (the SHMLOG_x macros then log nothing; with SHMLOG_DEBUG=1 in
 * the environment the library says why on stderr, once). Thread-safe. */
shmlog_t *shmlog_default(void);

/* ------------------------------------------------------------------------ */
/* Filtering: per-tag levels, logcat filter-spec syntax.                     */

/* Is a record of @prio with @tag currently wanted on @h? Follows the spec
 * set with shmlog_set_filter() on the buffer, else $SHMLOG_TAGS, else
 * everything. Thread-safe; not async-signal-safe (it may recompile the
 * filter after a change). */
int shmlog_enabled(shmlog_t *h, int prio, const char *tag);

/* Set the filter spec of a buffer ("net:D *:W"); every process writing to it
 * follows it at its next call. "" restores "log everything". Errors:
 * -EINVAL with the offending token's offset in @bad_offset (may be NULL),
 * -E2BIG if the spec does not fit the segment, -EIO if the file was
 * truncated meanwhile, and shmlog_open()'s. */
int shmlog_set_filter(const char *name, const char *spec, size_t *bad_offset);

/* Copy a buffer's current filter spec into @buf (NUL-terminated).
 * Returns its length, -ENAMETOOLONG if @buf is too small, -EIO if the file
 * was truncated meanwhile, or open errors. */
int shmlog_get_filter(const char *name, char *buf, size_t buflen);

/* Check a spec without applying it: 0, or -EINVAL with the offset of the
 * bad token in @bad_offset. Tokens are TAG:P, TAG (TAG:V) or *:P, P one
 * of V D I W E F S in either case; a tag is 1 to SHMLOG_TAG_MAX bytes,
 * matched exactly, and holds no '=' or '*' ("net=D" is refused, not a
 * tag). Thread-safe. */
int shmlog_parse_filter(const char *spec, size_t *bad_offset);

/* A compiled filter spec, for readers that filter what they show (the
 * environment is not consulted). */
typedef struct shmlog__filter shmlog_filter_t;

/* Compile @spec. Errors: -EINVAL (bad token at *@bad_offset), -ENOMEM. */
int shmlog_filter_new(const char *spec, size_t *bad_offset,
		      shmlog_filter_t **out);
/* Does @f let a record of @prio with @tag through? Thread-safe. */
int shmlog_filter_wants(const shmlog_filter_t *f, int prio, const char *tag);
void shmlog_filter_free(shmlog_filter_t *f);

/* Per-call-site cache used by the SHMLOG_x macros: the answer for one tag,
 * valid while the buffer's filter generation equals @gen. */
struct shmlog_site {
	uint32_t gen; /* generation the answer was computed at; 0: never */
	int32_t level; /* lowest priority enabled for this tag */
	const char *tag;
};

/* Internal to the macros: the default handle's filter generation word
 * (points at a private word until the default handle is opened). */
extern const uint32_t *shmlog__filter_gen;
int shmlog__site_refresh(struct shmlog_site *site, int prio);
/* As shmlog__site_refresh(), for the tag of this call. */
int shmlog__site_update(struct shmlog_site *site, int prio, const char *tag);

/* Compile-time floor: calls below it vanish from the binary. */
#ifndef SHMLOG_MIN_PRIORITY
#define SHMLOG_MIN_PRIORITY SHMLOG_VERBOSE
#endif

/* Internal to the macros: is @prio enabled for @tag on the default handle?
 * For tags that are not fixed strings (C++), which no call site caches. */
int shmlog__tag_enabled(int prio, const char *tag);

/* A call site caches the answer for its tag, so the tag must be the same
 * string on every call: a string literal or a constant array (in C the
 * static initialiser insists). In C++ a tag that is a pointer, known only
 * at run time (or a char array that is not const), is asked about on each
 * call instead (a few ns more when enabled or disabled, correct for every
 * tag), and the call is then stored as any other. */
#ifdef __cplusplus
/* shmlog__cxx::tag_fixed(): include/shmlog_cxx.h */
#define SHMLOG__TAG_FIXED(tag) ::shmlog__cxx::tag_fixed(tag)
/* A call whose tag is not fixed, once the filter let it through: as any
 * other (deferred, typed): its site keeps the format, never the tag. */
#define SHMLOG__PRINT_ANY_TAG(h, flags, prio, tag, ...)                        \
	SHMLOG__PRINT(h, flags, prio, tag, __VA_ARGS__)
#else
#define SHMLOG__TAG_FIXED(tag) 1
/* never taken in C, where every tag is fixed: the plain call */
#define SHMLOG__PRINT_ANY_TAG(h, flags, prio, tag, ...)                        \
	shmlog_print_ex(h, flags, prio, tag, __VA_ARGS__);
#endif

/* The format of a call (its first argument after the tag), and whether
 * it is a string literal the compiler can see: then the call is deferred
 * (SHMLOG_WRITE_DEFERRED). */
#define SHMLOG__FMT_(fmt, ...) fmt
#define SHMLOG__FMT(...) SHMLOG__FMT_(__VA_ARGS__, 0)
#if defined(__GNUC__) || defined(__clang__)
#define SHMLOG__DEFER(...)                                                     \
	(__builtin_constant_p(SHMLOG__FMT(__VA_ARGS__)) ? SHMLOG_WRITE_DEFERRED \
							: 0)
#else
#define SHMLOG__DEFER(...) 0
#endif

/* Internal to the macros: what a printf-style call site keeps once it is
 * deferred (src/deferred.c), zero until its first call; only the library
 * reads or writes it, atomically. @types is the macro's: what it knew of
 * the call's arguments at compile time (SHMLOG__TYPES), 0 if nothing. */
struct shmlog_fmt_site {
	uint64_t key; /* the handle written to, and the format's id there */
	const void *plan; /* the format, checked and compiled */
	unsigned flags; /* the macro's: 0 or SHMLOG_WRITE_UNFILTERED */
	uint64_t types; /* SHMLOG__TYPES() of the call, or 0 */
	int typed_ok; /* 1: typed calls; -1: a va_list (refused); 0: ask */
};

/* Internal to the macros: a deferred call through @site (@fmt a string
 * literal, the same on every call of the site). As shmlog_print_ex() with
 * the site's flags otherwise. Five arguments before the values, so that
 * one of them still travels in a register. */
int shmlog__print_site(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
		       const char *tag, const char *fmt, ...)
	SHMLOG_PRINTF(5, 6);

/* Internal to the macros: shmlog__print_site() for a site of these
 * macros (its types field set) whose values have no types the compiler
 * could tell: counted once per site and buffer it writes to, in the
 * buffer's header (stats). A site whose format the reader does not
 * format (%m, %n) comes here too, counted as refused, per call. */
int shmlog__print_untyped(shmlog_t *h, struct shmlog_fmt_site *site,
			  int prio, const char *tag, const char *fmt, ...)
	SHMLOG_PRINTF(5, 6);

/* Internal to the macros: one argument of a printf-style call whose type
 * the compiler told the macro (C11 _Generic), in 8 bytes: integers
 * widened to 64 bits with their sign, float and double as double, strings
 * and void pointers as the pointer. */
union shmlog__arg {
	long long i;
	unsigned long long u;
	double d;
	const void *p;
};

/* Internal to the macros: as shmlog__print_site(), the values already
 * fetched into @args, @site->types saying what they are (at most 8; see
 * SHMLOG__TYPES). No va_list and no parsing per call: the site's plan,
 * checked once against the types, says where each value goes, and the
 * block is written straight into the record. Six arguments: all in
 * registers. */
int shmlog__print_typed(shmlog_t *h, struct shmlog_fmt_site *site, int prio,
			const char *tag, const char *fmt,
			const union shmlog__arg *args);

/* Internal to the macros: make @site's plan before its first typed call
 * (the values not yet fetched): 1 if its calls can be typed, 0 if they go
 * through a va_list (a conversion the reader does not format, such as %m
 * or %n: the caller formats it; or no memory). Sets @site->typed_ok. */
int shmlog__site_prepare(struct shmlog_fmt_site *site, const char *fmt);

/*
 * What a call's arguments are, known at compile time. Each argument gets
 * a code: SHMLOG__TY_INT (any integer type, enums, _Bool), SHMLOG__TY_DBL
 * (float, double), SHMLOG__TY_PTR (char, signed char and unsigned char
 * pointers, void pointers, const or not), 0 for anything else (long
 * double, other pointers, structures); SHMLOG__TYPES(fmt, ...) packs the
 * count in bits 0-3 and argument i's code in bits 4i..4i+3. A call with
 * more than 8 values, or with a value of code 0, is not typed: it goes
 * through shmlog__print_site() and its va_list, as before (the library
 * counts such call sites in the buffer's stats). C11 tells the types with
 * _Generic (below); C++11 and later with templates, the same codes and
 * values (include/shmlog_cxx.h, included at the end of this file); older
 * C and C++ take the va_list path.
 */
#define SHMLOG__TY_INT 1
#define SHMLOG__TY_DBL 2
#define SHMLOG__TY_PTR 3
#if !defined(__cplusplus) && defined(__STDC_VERSION__) &&                     \
	__STDC_VERSION__ >= 201112L && (defined(__GNUC__) || defined(__clang__))
#define SHMLOG__TYPED_CALLS 1
#define SHMLOG__TY(x)                                                          \
	_Generic((x), _Bool: 1, char: 1, signed char: 1, unsigned char: 1,    \
		 short: 1, unsigned short: 1, int: 1, unsigned: 1, long: 1,    \
		 unsigned long: 1, long long: 1, unsigned long long: 1,        \
		 float: 2, double: 2, char *: 3, const char *: 3,              \
		 signed char *: 3, const signed char *: 3, unsigned char *: 3, \
		 const unsigned char *: 3, void *: 3, const void *: 3,         \
		 default: 0)
/* The value itself where its type has a code, else 0: the branch that
 * uses it is never taken then, but must compile. */
#define SHMLOG__TYV(x)                                                         \
	_Generic((x), _Bool: (x), char: (x), signed char: (x),                \
		 unsigned char: (x), short: (x), unsigned short: (x),          \
		 int: (x), unsigned: (x), long: (x), unsigned long: (x),       \
		 long long: (x), unsigned long long: (x), float: (x),          \
		 double: (x), char *: (x), const char *: (x),                  \
		 signed char *: (x), const signed char *: (x),                 \
		 unsigned char *: (x), const unsigned char *: (x),             \
		 void *: (x), const void *: (x), default: 0)
static inline union shmlog__arg shmlog__arg_i(long long v)
{
	union shmlog__arg a;
	a.i = v;
	return a;
}
static inline union shmlog__arg shmlog__arg_u(unsigned long long v)
{
	union shmlog__arg a;
	a.u = v;
	return a;
}
static inline union shmlog__arg shmlog__arg_d(double v)
{
	union shmlog__arg a;
	a.d = v;
	return a;
}
static inline union shmlog__arg shmlog__arg_p(const void *v)
{
	union shmlog__arg a;
	a.p = v;
	return a;
}
#define SHMLOG__ARG(x)                                                         \
	_Generic((x), unsigned: shmlog__arg_u, unsigned long: shmlog__arg_u,  \
		 unsigned long long: shmlog__arg_u, float: shmlog__arg_d,      \
		 double: shmlog__arg_d, char *: shmlog__arg_p,                 \
		 const char *: shmlog__arg_p, signed char *: shmlog__arg_p,    \
		 const signed char *: shmlog__arg_p,                           \
		 unsigned char *: shmlog__arg_p,                               \
		 const unsigned char *: shmlog__arg_p, void *: shmlog__arg_p,  \
		 const void *: shmlog__arg_p, default: shmlog__arg_i)(         \
		SHMLOG__TYV(x))
#elif defined(__cplusplus) && __cplusplus >= 201103L &&                       \
	(defined(__GNUC__) || defined(__clang__))
/* C++: SHMLOG__TY and SHMLOG__ARG are templates' (include/shmlog_cxx.h),
 * defined once this file's C declarations are done. */
#define SHMLOG__TYPED_CALLS 1
#else
#define SHMLOG__TY(x) 0
#define SHMLOG__ARG(x) {0}
#endif

/* The number of values after the format: 0 to 8, or M (more). */
#define SHMLOG__CAT_(a, b) a##b
#define SHMLOG__CAT(a, b) SHMLOG__CAT_(a, b)
#define SHMLOG__NVAL_(f, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, \
	a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, \
	a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, \
	a43, a44, a45, a46, a47, a48, a49, a50, a51, a52, a53, a54, a55, a56, a57, \
	a58, a59, a60, a61, a62, a63, a64, n, ...) n
#define SHMLOG__NVAL(...) \
	SHMLOG__NVAL_(__VA_ARGS__, M, M, M, M, M, M, M, M, M, M, M, M, M, \
		M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, \
		M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, \
		M, M, M, 8, 7, 6, 5, 4, 3, 2, 1, 0, ~)
/* Per count: all typed (KNOWN), the codes packed (CODES), the values
 * (VALUES), each value once. */
#define SHMLOG__KNOWN_0(f) 1
#define SHMLOG__KNOWN_1(f, a1) (SHMLOG__TY(a1) && SHMLOG__KNOWN_0(f))
#define SHMLOG__KNOWN_2(f, a1, a2) (SHMLOG__TY(a1) && SHMLOG__KNOWN_1(f, a2))
#define SHMLOG__KNOWN_3(f, a1, a2, a3) (SHMLOG__TY(a1) && SHMLOG__KNOWN_2(f, a2, a3))
#define SHMLOG__KNOWN_4(f, a1, a2, a3, a4) (SHMLOG__TY(a1) && SHMLOG__KNOWN_3(f, a2, a3, a4))
#define SHMLOG__KNOWN_5(f, a1, a2, a3, a4, a5) (SHMLOG__TY(a1) && SHMLOG__KNOWN_4(f, a2, a3, a4, a5))
#define SHMLOG__KNOWN_6(f, a1, a2, a3, a4, a5, a6) (SHMLOG__TY(a1) && SHMLOG__KNOWN_5(f, a2, a3, a4, a5, a6))
#define SHMLOG__KNOWN_7(f, a1, a2, a3, a4, a5, a6, a7) (SHMLOG__TY(a1) && SHMLOG__KNOWN_6(f, a2, a3, a4, a5, a6, a7))
#define SHMLOG__KNOWN_8(f, a1, a2, a3, a4, a5, a6, a7, a8) (SHMLOG__TY(a1) && SHMLOG__KNOWN_7(f, a2, a3, a4, a5, a6, a7, a8))
#define SHMLOG__CODES_0(f) 0
#define SHMLOG__CODES_1(f, a1) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_0(f) << 4)
#define SHMLOG__CODES_2(f, a1, a2) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_1(f, a2) << 4)
#define SHMLOG__CODES_3(f, a1, a2, a3) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_2(f, a2, a3) << 4)
#define SHMLOG__CODES_4(f, a1, a2, a3, a4) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_3(f, a2, a3, a4) << 4)
#define SHMLOG__CODES_5(f, a1, a2, a3, a4, a5) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_4(f, a2, a3, a4, a5) << 4)
#define SHMLOG__CODES_6(f, a1, a2, a3, a4, a5, a6) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_5(f, a2, a3, a4, a5, a6) << 4)
#define SHMLOG__CODES_7(f, a1, a2, a3, a4, a5, a6, a7) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_6(f, a2, a3, a4, a5, a6, a7) << 4)
#define SHMLOG__CODES_8(f, a1, a2, a3, a4, a5, a6, a7, a8) \
	((UINT64_C(0) + SHMLOG__TY(a1)) | SHMLOG__CODES_7(f, a2, a3, a4, a5, a6, a7, a8) << 4)
#define SHMLOG__VALUES_0(f) {0}
#define SHMLOG__VALUES_1(f, a1) SHMLOG__ARG(a1)
#define SHMLOG__VALUES_2(f, a1, a2) SHMLOG__ARG(a1), SHMLOG__VALUES_1(f, a2)
#define SHMLOG__VALUES_3(f, a1, a2, a3) SHMLOG__ARG(a1), SHMLOG__VALUES_2(f, a2, a3)
#define SHMLOG__VALUES_4(f, a1, a2, a3, a4) SHMLOG__ARG(a1), SHMLOG__VALUES_3(f, a2, a3, a4)
#define SHMLOG__VALUES_5(f, a1, a2, a3, a4, a5) SHMLOG__ARG(a1), SHMLOG__VALUES_4(f, a2, a3, a4, a5)
#define SHMLOG__VALUES_6(f, a1, a2, a3, a4, a5, a6) SHMLOG__ARG(a1), SHMLOG__VALUES_5(f, a2, a3, a4, a5, a6)
#define SHMLOG__VALUES_7(f, a1, a2, a3, a4, a5, a6, a7) SHMLOG__ARG(a1), SHMLOG__VALUES_6(f, a2, a3, a4, a5, a6, a7)
#define SHMLOG__VALUES_8(f, a1, a2, a3, a4, a5, a6, a7, a8) SHMLOG__ARG(a1), SHMLOG__VALUES_7(f, a2, a3, a4, a5, a6, a7, a8)
#define SHMLOG__KNOWN_M(...) 0
#define SHMLOG__CODES_M(...) 0
#define SHMLOG__VALUES_M(...) {0}
/* Are all the call's values typed (a constant)? Their types (a constant)
 * and their values (an initialiser list, the values evaluated once). No
 * cast: C++ programs built with -Wold-style-cast expand these too. */
#define SHMLOG__KNOWN(...)                                                     \
	SHMLOG__CAT(SHMLOG__KNOWN_, SHMLOG__NVAL(__VA_ARGS__))(__VA_ARGS__)
#define SHMLOG__TYPES(...)                                                     \
	((UINT64_C(0) + SHMLOG__CAT(SHMLOG__NUM_, SHMLOG__NVAL(__VA_ARGS__))) | \
	 SHMLOG__CAT(SHMLOG__CODES_, SHMLOG__NVAL(__VA_ARGS__))(__VA_ARGS__)   \
		 << 4)
#define SHMLOG__NUM_0 0
#define SHMLOG__NUM_1 1
#define SHMLOG__NUM_2 2
#define SHMLOG__NUM_3 3
#define SHMLOG__NUM_4 4
#define SHMLOG__NUM_5 5
#define SHMLOG__NUM_6 6
#define SHMLOG__NUM_7 7
#define SHMLOG__NUM_8 8
#define SHMLOG__NUM_M 0
#define SHMLOG__VALUES(...)                                                    \
	SHMLOG__CAT(SHMLOG__VALUES_, SHMLOG__NVAL(__VA_ARGS__))(__VA_ARGS__)
/* A site's types: SHMLOG__TYPED_SITE with the call's SHMLOG__TYPES(), or
 * SHMLOG__UNTYPED_SITE (its calls take a va_list). */
#define SHMLOG__TYPED_SITE (UINT64_C(1) << 63)
#define SHMLOG__UNTYPED_SITE (UINT64_C(1) << 62)
#ifdef SHMLOG__TYPED_CALLS
static inline int shmlog__site_typed(struct shmlog_fmt_site *site,
				     const char *fmt)
{
	int ok = __atomic_load_n(&site->typed_ok, __ATOMIC_RELAXED);
	return ok > 0 || (ok == 0 && shmlog__site_prepare(site, fmt));
}
#define SHMLOG__TYPED_OK(site, ...)                                            \
	(SHMLOG__KNOWN(__VA_ARGS__) &&                                         \
	 shmlog__site_typed(&(site), SHMLOG__FMT(__VA_ARGS__)))
#define SHMLOG__SITE_TYPES(...)                                                \
	(SHMLOG__KNOWN(__VA_ARGS__)                                            \
		 ? SHMLOG__TYPED_SITE | SHMLOG__TYPES(__VA_ARGS__)             \
		 : SHMLOG__UNTYPED_SITE)
#else
#define SHMLOG__TYPED_OK(site, ...) 0
#define SHMLOG__SITE_TYPES(...) SHMLOG__UNTYPED_SITE
#endif

/* A printf-style call, its result into @res: typed when the format is a
 * string literal and the compiler told every value's type, else through
 * its site's cache with a va_list when the format is a string literal,
 * else formatted by the caller. A statement. */
#define SHMLOG__PRINT_AS(res, h, flags, prio, tag, ...)                        \
	{                                                                      \
		static struct shmlog_fmt_site shmlog__fsite_ = {               \
			0, 0, flags, SHMLOG__SITE_TYPES(__VA_ARGS__), 0};      \
		if (SHMLOG__DEFER(__VA_ARGS__) &&                              \
		    SHMLOG__TYPED_OK(shmlog__fsite_, __VA_ARGS__)) {           \
			const union shmlog__arg shmlog__args_[] = {            \
				SHMLOG__VALUES(__VA_ARGS__)};                  \
			(res) = shmlog__print_typed(                           \
				(h), &shmlog__fsite_, (prio), (tag),           \
				SHMLOG__FMT(__VA_ARGS__), shmlog__args_);      \
		} else if (SHMLOG__DEFER(__VA_ARGS__)) {                       \
			(res) = shmlog__print_untyped((h), &shmlog__fsite_,    \
						      (prio), (tag),           \
						      __VA_ARGS__);            \
		} else {                                                       \
			(res) = shmlog_print_ex((h), (flags), (prio), (tag),   \
						__VA_ARGS__);                  \
		}                                                              \
	}

/* The same, its result dropped. */
#define SHMLOG__PRINT(h, flags, prio, tag, ...)                                \
	{                                                                      \
		int shmlog__res_;                                              \
		SHMLOG__PRINT_AS(shmlog__res_, h, flags, prio, tag,            \
				 __VA_ARGS__)                                  \
		(void)shmlog__res_;                                            \
	}

/* The cached check of a call site whose tag is fixed. */
#define SHMLOG__SITE_WANTS(prio, tag)                                          \
	static struct shmlog_site shmlog__site_ = {0, 0, tag};                 \
	if (__atomic_load_n(shmlog__filter_gen, __ATOMIC_ACQUIRE) ==           \
			    shmlog__site_.gen                                  \
		    ? (prio) >= shmlog__site_.level                            \
		    : shmlog__site_update(&shmlog__site_, (prio), (tag)))

/* Log through the default handle if @prio is enabled for @tag. A disabled
 * call costs a load and two compares: the arguments are not evaluated. */
#define SHMLOG_LOG(prio, tag, ...)                                             \
	do {                                                                   \
		if ((prio) >= SHMLOG_MIN_PRIORITY) {                           \
			if (SHMLOG__TAG_FIXED(tag)) {                          \
				SHMLOG__SITE_WANTS(prio, tag)                  \
				SHMLOG__PRINT(shmlog_default(),                \
					      SHMLOG_WRITE_UNFILTERED, (prio), \
					      (tag), __VA_ARGS__)              \
			} else if (shmlog__tag_enabled((prio), (tag))) {       \
				SHMLOG__PRINT_ANY_TAG(shmlog_default(),        \
						      SHMLOG_WRITE_UNFILTERED, \
						      (prio), (tag),           \
						      __VA_ARGS__)             \
			}                                                      \
		}                                                              \
	} while (0)

#define SHMLOG_V(tag, ...) SHMLOG_LOG(SHMLOG_VERBOSE, tag, __VA_ARGS__)
#define SHMLOG_D(tag, ...) SHMLOG_LOG(SHMLOG_DEBUG, tag, __VA_ARGS__)
#define SHMLOG_I(tag, ...) SHMLOG_LOG(SHMLOG_INFO, tag, __VA_ARGS__)
#define SHMLOG_W(tag, ...) SHMLOG_LOG(SHMLOG_WARN, tag, __VA_ARGS__)
#define SHMLOG_E(tag, ...) SHMLOG_LOG(SHMLOG_ERROR, tag, __VA_ARGS__)
#define SHMLOG_F(tag, ...) SHMLOG_LOG(SHMLOG_FATAL, tag, __VA_ARGS__)

/* The file's default tag, as Android's LOG_TAG: define SHMLOG_TAG before
 * including this header ("#define SHMLOG_TAG \"net\""), then log with
 * SHMLOGI("link %s", "up") and the like. Without it the tag is "?". */
#ifndef SHMLOG_TAG
#define SHMLOG_TAG "?"
#endif
#define SHMLOGV(...) SHMLOG_LOG(SHMLOG_VERBOSE, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGD(...) SHMLOG_LOG(SHMLOG_DEBUG, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGI(...) SHMLOG_LOG(SHMLOG_INFO, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGW(...) SHMLOG_LOG(SHMLOG_WARN, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGE(...) SHMLOG_LOG(SHMLOG_ERROR, SHMLOG_TAG, __VA_ARGS__)
#define SHMLOGF(...) SHMLOG_LOG(SHMLOG_FATAL, SHMLOG_TAG, __VA_ARGS__)

/* ------------------------------------------------------------------------ */
/* Reading.                                                                  */

typedef struct shmlog_reader shmlog_reader_t;

/* Flags for shmlog_reader_open(). */
#define SHMLOG_READ_TAIL 0x1 /* start after the newest record (follow only) */

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
/* the message was formatted by this reader from the call's format and
 * argument values (SHMLOG_WRITE_DEFERRED); shmlog_reader_deferred() gives
 * the format and the values */
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

/* Attach to a buffer for reading (read-only mapping). Errors as
 * shmlog_open(). The reader never writes the segment except to say that it
 * waits (shmlog_reader_wait()). One reader per thread: not thread-safe. */
int shmlog_reader_open(const char *name, int flags, shmlog_reader_t **out);
void shmlog_reader_close(shmlog_reader_t *r);

/* Next record, oldest first, merged across lanes in time order. Returns
 * SHMLOG_EV_RECORD (filling *rec), SHMLOG_EV_LOST (filling *lost, once per
 * gap, before the record that follows it), or SHMLOG_EV_NONE when there is
 * nothing more for now. Skips records that fail validation (counted as
 * torn) and steps over a damaged lane once (shmlog_lane_stats.corrupt);
 * never returns a record twice, nor a lane's records out of order, so a
 * loop until SHMLOG_EV_NONE ends whatever the file holds. Never blocks. Returns -EIO, once, if the buffer's file was
 * truncated under the reader (it survives the SIGBUS; see
 * docs/SECURITY.md), and SHMLOG_EV_NONE after that. */
int shmlog_reader_next(shmlog_reader_t *r, struct shmlog_record *rec,
		       struct shmlog_lost *lost);

/* The record shmlog_reader_next() returned last, if it was written with
 * SHMLOG_WRITE_DEFERRED (flag SHMLOG_REC_DEFERRED): its format as found in
 * the buffer, or in the archive for a reader of one (*@fmt,
 * NUL-terminated, valid until the next call; NULL if the record named no
 * format the buffer or archive holds) and its argument values as
 * a JSON array into @args (@cap bytes, NUL-terminated: numbers, strings
 * escaped as JSON, pointers as "0x..." strings, NaN and infinities as
 * strings). The array is valid JSON and valid UTF-8 whatever the buffer
 * holds: a byte of a string that is not UTF-8 becomes U+FFFD, controls
 * are escaped. Values are whole: the array ends before the first value
 * that the record does not hold whole (a damaged or hostile record) or
 * that @args has no room for; @cap = SHMLOG_DEFERRED_ARGS_MAX always has
 * room for the values of a record written by shmlog (below 3, @args is
 * ""). Returns 0 if the array holds every value, SHMLOG_DEFERRED_CUT (a
 * positive value, @fmt and @args filled all the same) if it ends early,
 * or -ENOENT if the last record was not deferred. Not thread-safe with
 * other calls on @r. */
#define SHMLOG_DEFERRED_CUT 1
/* 6 bytes of JSON for a byte of a value at most, and the brackets. */
#define SHMLOG_DEFERRED_ARGS_MAX (6 * SHMLOG_MSG_MAX + 3)
int shmlog_reader_deferred(const shmlog_reader_t *r, const char **fmt,
			   char *args, size_t cap);

/* Block until a writer may have committed a new record, or @timeout_ms
 * passes (-1: forever; 0: only look). Returns 0 (woken or new data),
 * -ETIMEDOUT, -EINTR if a signal arrived, or -EIO if the file was
 * truncated. A reader that calls it is a follower, made to cost writers
 * little (docs/DESIGN.md, "Following writers"): it watches the lanes for
 * up to 20 us before it sleeps (it naps instead, polling, behind a writer
 * at full speed), and returns as soon as it sees a record;
 * it loads the head of a lane being written at most every 4 us (16 us
 * behind a writer at full speed), so a record waits about 5 us at most
 * for a follower that keeps up with a writer below that; writers
 * only pay a wake-up syscall when a reader actually sleeps here. A
 * follower's shmlog_reader_next() may say SHMLOG_EV_NONE while records
 * published in the last 4 us (on a lane it rests on, below: up to 10 ms)
 * are still to come: the next call of this one returns for them. With
 * @timeout_ms 0 it loads every lane's head, whatever its last look, and
 * ends every rest (a loop of such calls costs a writer a miss each): a
 * follower has read everything published when shmlog_reader_next() said
 * SHMLOG_EV_NONE and then this call with 0 returned -ETIMEDOUT (after
 * the writers are gone: read on until it does). On x86 a follower flushes from the caches the lines of the
 * records it has read. A follower overtaken by a writer at full speed
 * (more than 2 bytes a nanosecond) leaves that lane alone three times as
 * long as it read it: the records it skips are counted as overwritten. */
int shmlog_reader_wait(shmlog_reader_t *r, int timeout_ms);

/* One wait over several readers (of several buffers, or archives), as
 * shmlog_reader_wait() waits on one: returns the index in @r of a reader
 * that has something for shmlog_reader_next() (the lowest such index;
 * others may be ready too, so read them all before waiting again),
 * -ETIMEDOUT when @timeout_ms passes (-1: forever; 0: only look, as
 * shmlog_reader_wait() with 0), -EINTR if a signal arrived, or -EINVAL
 * (@r NULL, @n above SHMLOG_WAIT_ANY_MAX, or no reader and @timeout_ms
 * -1). NULL entries are skipped, as poll(2) skips a negative descriptor;
 * with no reader at all it sleeps @timeout_ms. A reader whose file was
 * truncated under it is ready (its shmlog_reader_next() reports -EIO):
 * set its entry to NULL once that was reported. Watches, naps and
 * sleeps as shmlog_reader_wait() does, on every reader's buffer at
 * once (futex_waitv(2), Linux 5.16 and later; before, and for readers
 * of an archive or of a buffer whose header it may not write, it looks
 * every 10 ms). Thread-safety: not thread-safe with other calls on any
 * of the readers (each reader's own rule); different sets on different
 * threads are fine. Not async-signal-safe. Allocates nothing. Blocks
 * for up to @timeout_ms. */
#define SHMLOG_WAIT_ANY_MAX 128
int shmlog_reader_wait_any(shmlog_reader_t *const *r, size_t n,
			   int timeout_ms);

/* Per-lane accounting, exact: written = read + overwritten + torn + pending,
 * where pending are committed records the reader has not consumed yet.
 * Records lost where the lane was found damaged (a record or a position
 * that no writer could have made: a corrupt or tampered file) count as
 * torn; @corrupt counts the places, each once. (@corrupt is the newest
 * field, added at the end: the ones before it keep their places.) */
struct shmlog_lane_stats {
	uint64_t written; /* records the lane's writers have started */
	uint64_t read; /* returned by this reader */
	uint64_t overwritten; /* lost to wrap before this reader got them */
	uint64_t torn; /* writer died mid-record, or failed validation */
	uint64_t skipped; /* hidden by shmlog_clear() or the start position */
	uint32_t owner_pid; /* current owner, 0 if free (its own namespace's) */
	uint32_t owner_tid;
	/* 1 if a live process holds the lane (judged by the lane's lock, so
	 * right across pid namespaces and pid reuse), 0 if it is free or its
	 * owner died (the next writer to claim it takes it over) */
	uint32_t owner_alive;
	uint64_t corrupt; /* places found damaged (each counted once) */
};

/* Who claimed a lane last (shmlog_reader_lane_writer()): kept in the
 * buffer after the writer gives the lane back or dies, so that a writer
 * that has exited can still be named. */
struct shmlog_lane_writer {
	uint32_t pid, tid; /* as the writer saw them (its pid namespace) */
	char name[17]; /* its process name (comm) at the claim, "" if none */
	/* 1 while it holds the lane (its process alive, judged by the
	 * lane's lock), 0 once it gave the lane back, exited or died */
	uint8_t alive;
	/* 1 if it died holding the lane and a later writer found it so
	 * (and repaired the lane); a writer dead but not yet found has
	 * alive 0 and the lane's owner_pid still set
	 * (shmlog_lane_stats) */
	uint8_t died;
};

/* Fill @w with lane @lane's last claimer. Written once per claim by
 * writers of format 2.2 and later (never per record); lanes lent one
 * record at a time (the last eighth) keep none. Returns 0, -ENOENT if no
 * writer recorded itself in the lane (never claimed since the buffer was
 * made, a shared lane, an archive reader), -EAGAIN if a claimer kept
 * rewriting it while it was read (try again), -EINVAL if @lane is out of
 * range, -EIO if the file was truncated under the reader. @w is untouched
 * on failure. Not thread-safe with other calls on @r. */
int shmlog_reader_lane_writer(const shmlog_reader_t *r, unsigned lane,
			      struct shmlog_lane_writer *w);

/* A lane's ident names only its last claimer; writers that took turns in
 * one lane (one-shot commands go on in the lane given back last) are
 * named by the buffer's last SHMLOG_RECENT_WRITERS claims, kept in as
 * many slots, in no order. Fill @w with slot @i's writer (alive as
 * above). Returns 0, -ENOENT if the slot is empty (or an archive
 * reader), -EAGAIN, -EINVAL if @i >= SHMLOG_RECENT_WRITERS, -EIO as
 * shmlog_reader_lane_writer(). */
#define SHMLOG_RECENT_WRITERS 8
int shmlog_reader_recent_writer(const shmlog_reader_t *r, unsigned i,
				struct shmlog_lane_writer *w);

/* Number of lanes of the reader's buffer. */
unsigned shmlog_reader_lanes(const shmlog_reader_t *r);

/* The sequence numbers of the loss the last SHMLOG_EV_LOST reported: its
 * records lie among @first..@last of its lane (inclusive; the range may
 * also hold records hidden by shmlog_clear()), @last being the one just
 * before the lane's next record. Reports of the same loss, by several
 * readers or runs, carry the same range. Returns 0, or -ENOENT if no loss
 * was reported yet (the out-parameters then untouched). Not thread-safe
 * with other calls on @r. */
int shmlog_reader_lost_seq(const shmlog_reader_t *r, uint64_t *first,
			   uint64_t *last);

/* The sequence number lane @lane's next record will carry (the newest
 * one's plus one; the buffer's first one if the lane wrote none). 0, or
 * -EINVAL if @lane is out of range. */
int shmlog_reader_lane_next_seq(const shmlog_reader_t *r, unsigned lane,
				uint64_t *next);

/* Fill @st with lane @lane's counters. -EINVAL if out of range. */
int shmlog_reader_lane_stats(const shmlog_reader_t *r, unsigned lane,
			     struct shmlog_lane_stats *st);

/* Read an archive: the directory `shmlog archive -o DIR` writes (format:
 * docs/archive.md). The reader gives the archived records and losses, in
 * the order they were archived, through the calls above: a record as
 * shmlog_reader_next() gives it (a printf-style one with its message as
 * it was formatted when archived: shmlog_reader_deferred() says -ENOENT),
 * and a loss (SHMLOG_EV_LOST, shmlog_reader_lost_seq()) for each span of
 * records the archive does not hold (@overwritten also counts records
 * the archiver could not store). SHMLOG_READ_TAIL starts after the newest
 * record. At the archive's end shmlog_reader_next() says SHMLOG_EV_NONE;
 * records archived later are returned by later calls, and
 * shmlog_reader_wait() waits for them (it looks every 10 ms). A damaged
 * or hostile file ends early (the rest of that file is skipped, counted
 * as @corrupt in lane 0's shmlog_reader_lane_stats()), never crashes or
 * hangs the reader. shmlog_reader_lane_stats() counts what this reader
 * read and the losses it reported, per lane number (of every buffer);
 * shmlog_reader_lane_next_seq() is the archive's position in the buffer
 * of the last record or loss (-ENOENT if unknown). Errors: -ENOENT,
 * -ENOTDIR, -EACCES, -EINVAL (bad flag), -ENOMEM. Not thread-safe. */
int shmlog_reader_open_archive(const char *dir, int flags,
			       shmlog_reader_t **out);

/* A buffer an archive holds records of. */
struct shmlog_archive_source {
	const char *buffer; /* the buffer's path when archived */
	int64_t created_ns; /* its creation time (shmlog_info.created_ns) */
	uint64_t ino; /* its file's inode */
	unsigned lanes;
	const char *host; /* host name of the archive file read last */
};

/* The buffer whose path is @buffer in an archive reader @r (NULL: the
 * buffer of the last record or loss returned). Strings valid until @r is
 * closed. 0, -ENOENT if the reader met no such buffer yet, -EINVAL if @r
 * is not an archive reader. */
int shmlog_reader_archive_source(const shmlog_reader_t *r, const char *buffer,
				 struct shmlog_archive_source *src);

/* Where an archive reader @r stands in buffer @buffer's lane @lane: the
 * sequence number after the last record or loss of that lane it returned
 * (or that a file it read started from). A follower of the live buffer
 * that skips the lane's records below it continues the archive with no
 * gap and no duplicate, if the buffer is the same one (compare
 * created_ns). 0; -ENOENT if unknown (no such buffer, or no position for
 * the lane); -EINVAL if @lane is out of range or @r is not an archive
 * reader. */
int shmlog_reader_archive_next_seq(const shmlog_reader_t *r,
				   const char *buffer, unsigned lane,
				   uint64_t *next);

/* ------------------------------------------------------------------------ */
/* Inspection.                                                               */

struct shmlog_info {
	uint64_t file_size; /* bytes of the file */
	uint64_t capacity; /* bytes of record space */
	uint64_t used; /* bytes currently holding records */
	unsigned lanes;
	unsigned writers; /* lanes held by a live process */
	unsigned version_major, version_minor;
	int clock; /* enum shmlog_clock */
	int64_t created_ns; /* creation time, ns since the Epoch */
	/* records written over the buffer's life, counting a record a dead
	 * writer left unfinished (as shmlog_reader_lane_stats() does) */
	uint64_t written;
	uint64_t torn; /* records left unfinished by dead writers */
	uint64_t dropped; /* records refused: no free lane or nested write */
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* Describe a buffer. Errors as shmlog_reader_open(), and -EIO if the file
 * was truncated while it was read (it survives the SIGBUS). A lane's writer
 * counts as live while its process holds the lane's lock (docs/DESIGN.md,
 * "Lane ownership"). Thread-safe. */
int shmlog_stat(const char *name, struct shmlog_info *info);

/* The buffer's table of formats (printf-style calls formatted by the
 * reader, SHMLOG_WRITE_DEFERRED). */
struct shmlog_format_stats {
	uint64_t formats; /* call sites' formats in the table */
	uint64_t used, size; /* bytes of the table taken, and its size */
	uint64_t full; /* calls formatted by the caller: the table was full */
	/* calls formatted by the caller: a conversion the reader does not
	 * format (%n, %m, positional, wide characters) */
	uint64_t refused;
};

/* Fill @st for buffer @name. Errors as shmlog_stat(). Thread-safe. */
int shmlog_stat_formats(const char *name, struct shmlog_format_stats *st);

/* Where a buffer's space goes, in chunks (docs/DESIGN.md, "Lanes and
 * chunks"). A lane's writer is counted live while the lane's owner word
 * is set, as the space policy counts it. */
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

/* Fill @st for buffer @name. Errors as shmlog_stat(). Thread-safe. */
int shmlog_stat_space(const char *name, struct shmlog_space_stats *st);

/* One-letter name of a priority ('V'..'F', 'S'), '?' if out of range. */
char shmlog_prio_char(int prio);

/* Parse a priority letter or name ("W", "warn", "5"); -EINVAL if bad.
 * Numbers are Android's, as logcat's (2 verbose to 8 silent); the shmlog
 * command takes syslog's 0 (emerg) to 7 (debug) instead, as logger(1). */
int shmlog_prio_parse(const char *s);

/* A short English description of a negative return value. Thread-safe. */
const char *shmlog_strerror(int err);

#ifdef __cplusplus
}
#endif

/* C++: what the macros learn from templates (outside the extern "C"
 * block: templates have C++ linkage). */
#ifdef __cplusplus
#include "shmlog_cxx.h"
#endif

#endif /* SHMLOG_H */
