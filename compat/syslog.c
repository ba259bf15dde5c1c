/* SPDX-License-Identifier: MIT */
/*
 * libshmlog-syslog.so: syslog(3) into shmlog, for programs that cannot be
 * changed. Preloaded (LD_PRELOAD, or `shmlog run --syslog`), it replaces
 * openlog, syslog, vsyslog, closelog and setlogmask, and the fortified
 * __syslog_chk and __vsyslog_chk that glibc's _FORTIFY_SOURCE builds call.
 *
 * - The ident of openlog() is the tag ($SHMLOG_SYSLOG_TAG overrides it;
 *   without either, the program's name, as glibc does).
 * - Priorities: emerg, alert, crit -> F; err -> E; warning -> W; notice,
 *   info -> I; debug -> D. The facility is dropped. setlogmask() masks as
 *   in glibc; the buffer's filter (`shmlog level`) applies on top.
 * - Every record carries the pid: LOG_PID is always satisfied; it changes
 *   only the LOG_PERROR copy ("ident[pid]: message") on stderr, as glibc.
 *   `shmlog run --syslog` captures stderr into the buffer already: it sets
 *   SHMLOG_SYSLOG_PERROR=0, and the copy is left out (else logged twice).
 * - "%m" is the text of errno at the call.
 * - Records go to $SHMLOG_BUFFER, else the buffer "main" (created when
 *   missing, as the default buffer always is). Nothing goes to /dev/log.
 *
 * The library is linked in (not a dependency): the shim is one file to
 * preload, and exports nothing but the syslog(3) calls.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "shmlog.h"

/* glibc's fortified entry points (not in <syslog.h> unless fortifying) */
void __syslog_chk(int pri, int flag, const char *fmt, ...);
void __vsyslog_chk(int pri, int flag, const char *fmt, va_list ap);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char ident[SHMLOG_TAG_MAX + 1]; /* "": the program's name */
static int options; /* LOG_PID, LOG_PERROR, ... */
static int mask = 0xff; /* LOG_UPTO(LOG_DEBUG) */

static int prio_of(int pri)
{
	static const int map[8] = {
		SHMLOG_FATAL, SHMLOG_FATAL, SHMLOG_FATAL, /* emerg alert crit */
		SHMLOG_ERROR, SHMLOG_WARN,		  /* err warning */
		SHMLOG_INFO,  SHMLOG_INFO,  SHMLOG_DEBUG, /* notice info debug */
	};
	return map[LOG_PRI(pri)];
}

/* The tag of the next record, copied under the lock. */
static void current_tag(char *tag, int *opts, int *m)
{
	pthread_mutex_lock(&lock);
	const char *env = getenv("SHMLOG_SYSLOG_TAG");
	const char *t = env && env[0] ? env
			: ident[0]	? ident
					: program_invocation_short_name;
	snprintf(tag, SHMLOG_TAG_MAX + 1, "%s", t ? t : "syslog");
	*opts = options;
	*m = mask;
	pthread_mutex_unlock(&lock);
}

void openlog(const char *id, int option, int facility)
{
	(void)facility;
	pthread_mutex_lock(&lock);
	snprintf(ident, sizeof(ident), "%s", id ? id : "");
	options = option;
	pthread_mutex_unlock(&lock);
	if (option & LOG_NDELAY)
		shmlog_default();
}

void closelog(void)
{
	pthread_mutex_lock(&lock);
	ident[0] = '\0';
	options = 0;
	pthread_mutex_unlock(&lock);
}

int setlogmask(int m)
{
	pthread_mutex_lock(&lock);
	int old = mask;
	if (m)
		mask = m;
	pthread_mutex_unlock(&lock);
	return old;
}

/* @fmt with each "%m" replaced by @err's text (its '%' doubled). */
static const char *expand_m(const char *fmt, int err, char *buf, size_t cap)
{
	if (!strstr(fmt, "%m"))
		return fmt;
	const char *text = strerror(err);
	size_t o = 0;
	for (const char *p = fmt; *p && o + 1 < cap; p++) {
		if (p[0] == '%' && p[1] == '%') {
			if (o + 2 >= cap)
				break;
			buf[o++] = '%';
			buf[o++] = '%';
			p++;
		} else if (p[0] == '%' && p[1] == 'm') {
			for (const char *t = text; *t && o + 2 < cap; t++) {
				if (*t == '%')
					buf[o++] = '%';
				buf[o++] = *t;
			}
			p++;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	return buf;
}

void vsyslog(int pri, const char *fmt, va_list ap)
{
	int err = errno;
	char tag[SHMLOG_TAG_MAX + 1];
	int opts, m;
	current_tag(tag, &opts, &m);
	if (!(LOG_MASK(LOG_PRI(pri)) & m) || !fmt)
		return;
	char fmtbuf[1024], msg[SHMLOG_MSG_MAX + 1];
	vsnprintf(msg, sizeof(msg), expand_m(fmt, err, fmtbuf, sizeof(fmtbuf)),
		  ap);
	shmlog_t *h = shmlog_default();
	if (h)
		shmlog_write(h, prio_of(pri), tag, msg);
	const char *perror_env = getenv("SHMLOG_SYSLOG_PERROR");
	if (opts & LOG_PERROR && !(perror_env && !strcmp(perror_env, "0"))) {
		size_t n = strlen(msg);
		const char *nl = n && msg[n - 1] == '\n' ? "" : "\n";
		if (opts & LOG_PID)
			dprintf(STDERR_FILENO, "%s[%d]: %s%s", tag, (int)getpid(),
				msg, nl);
		else
			dprintf(STDERR_FILENO, "%s: %s%s", tag, msg, nl);
	}
	errno = err;
}

void syslog(int pri, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsyslog(pri, fmt, ap);
	va_end(ap);
}

void __vsyslog_chk(int pri, int flag, const char *fmt, va_list ap)
{
	(void)flag;
	vsyslog(pri, fmt, ap);
}

void __syslog_chk(int pri, int flag, const char *fmt, ...)
{
	(void)flag;
	va_list ap;
	va_start(ap, fmt);
	vsyslog(pri, fmt, ap);
	va_end(ap);
}
