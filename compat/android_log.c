/* SPDX-License-Identifier: MIT */
/*
 * libshmlog-android: Android's liblog calls (<android/log.h>) over shmlog.
 * Android's priorities are shmlog's numbers; log ids other than main go to
 * a buffer of their name when one exists (never created here: a typo'd id
 * must not make buffers), else to the default buffer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <android/log.h>

#include "shmlog.h"

static const char *const buffer_names[LOG_ID_MAX] = {
	[LOG_ID_MAIN] = NULL, /* the default buffer */
	[LOG_ID_RADIO] = "radio",   [LOG_ID_EVENTS] = "events",
	[LOG_ID_SYSTEM] = "system", [LOG_ID_CRASH] = "crash",
	[LOG_ID_STATS] = "stats",   [LOG_ID_SECURITY] = "security",
	[LOG_ID_KERNEL] = "kernel",
};

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static shmlog_t *handles[LOG_ID_MAX];
static _Atomic int tried[LOG_ID_MAX];

/* The handle for log id @id: its own buffer if it exists, else the default
 * one. Opened once; never closed (as liblog's socket). */
static shmlog_t *handle_for(int id)
{
	if (id == LOG_ID_MAIN)
		return shmlog_default();
	if (!tried[id]) {
		pthread_mutex_lock(&open_lock);
		if (!tried[id]) {
			shmlog_t *h;
			if (shmlog_open(buffer_names[id], 0, &h) == 0)
				handles[id] = h;
			tried[id] = 1;
		}
		pthread_mutex_unlock(&open_lock);
	}
	return handles[id] ? handles[id] : shmlog_default();
}

static int result(int err)
{
	return err ? err : 1;
}

int __android_log_buf_write(int bufID, int prio, const char *tag,
			    const char *text)
{
	if (bufID == LOG_ID_DEFAULT)
		bufID = LOG_ID_MAIN;
	if (bufID < LOG_ID_MIN || bufID >= LOG_ID_MAX)
		return -EINVAL;
	shmlog_t *h = handle_for(bufID);
	if (!h)
		return -ENOENT;
	return result(shmlog_write(h, prio, tag, text));
}

int __android_log_write(int prio, const char *tag, const char *text)
{
	return __android_log_buf_write(LOG_ID_MAIN, prio, tag, text);
}

int __android_log_vprint(int prio, const char *tag, const char *fmt,
			 va_list ap)
{
	shmlog_t *h = shmlog_default();
	if (!h)
		return -ENOENT;
	return result(shmlog_vprint(h, prio, tag, fmt, ap));
}

int __android_log_print(int prio, const char *tag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = __android_log_vprint(prio, tag, fmt, ap);
	va_end(ap);
	return r;
}

int __android_log_buf_print(int bufID, int prio, const char *tag,
			    const char *fmt, ...)
{
	char msg[SHMLOG_MSG_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return __android_log_buf_write(bufID, prio, tag, msg);
}

void __android_log_assert(const char *cond, const char *tag, const char *fmt,
			  ...)
{
	char msg[SHMLOG_MSG_MAX + 1];
	if (fmt && fmt[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	} else if (cond) {
		snprintf(msg, sizeof(msg), "Assertion failed: %s", cond);
	} else {
		snprintf(msg, sizeof(msg), "Unspecified assertion failed");
	}
	shmlog_t *h = shmlog_default();
	/* the last words are kept whatever the filter says */
	if (h)
		shmlog_write_ex(h, SHMLOG_WRITE_UNFILTERED, 0, SHMLOG_FATAL,
				tag, msg, strlen(msg));
	fprintf(stderr, "%s: %s\n", tag ? tag : "?", msg);
	abort();
}

int __android_log_is_loggable(int prio, const char *tag, int default_prio)
{
	shmlog_t *h = shmlog_default();
	if (!h)
		return prio >= default_prio;
	return shmlog_enabled(h, prio, tag && tag[0] ? tag : "?");
}
