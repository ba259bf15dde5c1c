/* SPDX-License-Identifier: MIT */
/*
 * Android's liblog API (the NDK's <android/log.h>) on Linux, logging into
 * shmlog: code written for Android builds and logs unchanged. Link with
 * -lshmlog-android (pkg-config shmlog-android). Records go to the default
 * buffer ($SHMLOG_BUFFER, else main); __android_log_buf_write() sends the
 * other log ids to the buffer of that name (radio, events, system, crash,
 * stats, security, kernel) when it exists, else to the default one.
 * Priorities are Android's numbers, which shmlog shares; the buffer's
 * filter (`shmlog level`) governs every call. See docs/adopting.md.
 */
#ifndef SHMLOG_ANDROID_LOG_H
#define SHMLOG_ANDROID_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SHMLOG_ANDROID_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define SHMLOG_ANDROID_NORETURN __attribute__((noreturn))
#else
#define SHMLOG_ANDROID_PRINTF(f, a)
#define SHMLOG_ANDROID_NORETURN
#endif

typedef enum android_LogPriority {
	ANDROID_LOG_UNKNOWN = 0,
	ANDROID_LOG_DEFAULT, /* only for SetMinPriority() */
	ANDROID_LOG_VERBOSE,
	ANDROID_LOG_DEBUG,
	ANDROID_LOG_INFO,
	ANDROID_LOG_WARN,
	ANDROID_LOG_ERROR,
	ANDROID_LOG_FATAL,
	ANDROID_LOG_SILENT, /* only for SetMinPriority(); must be last */
} android_LogPriority;

typedef enum log_id {
	LOG_ID_MIN = 0,
	LOG_ID_MAIN = 0,
	LOG_ID_RADIO = 1,
	LOG_ID_EVENTS = 2,
	LOG_ID_SYSTEM = 3,
	LOG_ID_CRASH = 4,
	LOG_ID_STATS = 5,
	LOG_ID_SECURITY = 6,
	LOG_ID_KERNEL = 7,
	LOG_ID_MAX,
	LOG_ID_DEFAULT = 0x7FFFFFFF
} log_id_t;

/* Log @text with @tag at @prio (ANDROID_LOG_*; outside VERBOSE..FATAL:
 * INFO). Returns 1 when the record is written or filtered out, a negative
 * errno when it could not be (no buffer, no free lane). A NULL @tag is
 * logged as "?". Thread-safe. */
int __android_log_write(int prio, const char *tag, const char *text);

/* printf-style; returns as __android_log_write(). Thread-safe. */
int __android_log_print(int prio, const char *tag, const char *fmt, ...)
	SHMLOG_ANDROID_PRINTF(3, 4);
int __android_log_vprint(int prio, const char *tag, const char *fmt,
			 va_list ap) SHMLOG_ANDROID_PRINTF(3, 0);

/* As __android_log_write() into the buffer of log id @bufID; -EINVAL for
 * an id outside LOG_ID_MIN..LOG_ID_MAX-1 (LOG_ID_DEFAULT is main). */
int __android_log_buf_write(int bufID, int prio, const char *tag,
			    const char *text);
int __android_log_buf_print(int bufID, int prio, const char *tag,
			    const char *fmt, ...) SHMLOG_ANDROID_PRINTF(4, 5);

/* Log "@cond" or the message at FATAL, then abort(). */
void __android_log_assert(const char *cond, const char *tag, const char *fmt,
			  ...) SHMLOG_ANDROID_PRINTF(3, 4) SHMLOG_ANDROID_NORETURN;

/* Would a record of @prio with @tag be logged? The buffer's filter answers
 * (`shmlog level`, $SHMLOG_TAGS); @default_prio is the floor when no
 * buffer can be opened. */
int __android_log_is_loggable(int prio, const char *tag, int default_prio);

#ifdef __cplusplus
}
#endif

#endif /* SHMLOG_ANDROID_LOG_H */
