/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"

char shmlog_prio_char(int prio)
{
	static const char letters[] = "??VDIWEFS";
	return prio >= 0 && prio <= SHMLOG_SILENT ? letters[prio] : '?';
}

int shmlog_prio_parse(const char *s)
{
	static const char *const names[] = {
		[SHMLOG_VERBOSE] = "verbose", [SHMLOG_DEBUG] = "debug",
		[SHMLOG_INFO] = "info",	      [SHMLOG_WARN] = "warn",
		[SHMLOG_ERROR] = "error",     [SHMLOG_FATAL] = "fatal",
		[SHMLOG_SILENT] = "silent",
	};
	if (!s || !s[0])
		return -EINVAL;
	if (!s[1]) {
		if (s[0] >= '2' && s[0] <= '8')
			return s[0] - '0';
		for (int p = SHMLOG_VERBOSE; p <= SHMLOG_SILENT; p++)
			if ((s[0] | 0x20) == (shmlog_prio_char(p) | 0x20))
				return p;
		return -EINVAL;
	}
	for (int p = SHMLOG_VERBOSE; p <= SHMLOG_SILENT; p++)
		if (!strcasecmp(s, names[p]))
			return p;
	if (!strcasecmp(s, "warning"))
		return SHMLOG_WARN;
	return -EINVAL;
}

const char *shmlog_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case -EBADMSG: return "not a shmlog buffer (bad magic or checksum)";
	case -EPROTONOSUPPORT: return "buffer made by another version of shmlog (its format is not supported)";
	case -ENODATA: return "buffer header does not fit the file";
	case -EPERM: return "not permitted: a file that is not a buffer we may trust (symlink, FIFO, hard link, foreign owner or world-writable), or, creating one, a group the caller is not a member of";
	case -EAGAIN: return "every lane is held by a live writer";
	case -EBUSY: return "nested write from a signal handler";
	case -EIO: return "the buffer's file was truncated while we used it";
	default: return strerror(err < 0 ? -err : err);
	}
}

/* ---- SHMLOG_DEBUG=1 ---- */

/* The only place the library prints, and only when asked: a program whose
 * records never appear can be run with SHMLOG_DEBUG=1 to learn why. Once
 * per cause and process; write(2) only, so a signal handler may get here. */
void shmlog__debug(enum shmlog__debug_cause cause, int err, const char *what)
{
	static _Atomic unsigned char said[SHMLOG__DBG_CAUSES];
	/* what happened, then what it means */
	static const char *const why[SHMLOG__DBG_CAUSES][2] = {
		[SHMLOG__DBG_OPEN] = {"cannot open the default buffer",
				      "the SHMLOG_x macros log nothing"},
		[SHMLOG__DBG_OPEN_NAMED] = {"shmlog_open() cannot open buffer",
					    "nothing is logged into it"},
		[SHMLOG__DBG_NULL_HANDLE] = {"a write on a NULL handle",
					     "nothing is logged (did its "
					     "shmlog_open() fail?)"},
		[SHMLOG__DBG_NO_LANE] = {"a record was dropped",
					 "every lane of the buffer is held by "
					 "a live writer (create it with more "
					 "--lanes)"},
		[SHMLOG__DBG_NESTED] = {"a record was dropped",
					"written from a signal handler that "
					"interrupted a write, and no shared "
					"lane was free"},
		[SHMLOG__DBG_BAD_TAGS] = {"$SHMLOG_TAGS has a bad token",
					  "the variable is ignored as a whole, "
					  "the buffer's filter alone applies "
					  "(write TAG:P or *:P with P one of "
					  "V D I W E F S)"},
	};
	if ((unsigned)cause >= SHMLOG__DBG_CAUSES)
		return;
	const char *env = getenv("SHMLOG_DEBUG");
	if (!env || !env[0] || (env[0] == '0' && !env[1]))
		return;
	if (atomic_exchange_explicit(&said[cause], 1, memory_order_relaxed))
		return;
	bool reason = err && cause != SHMLOG__DBG_NULL_HANDLE &&
		      cause != SHMLOG__DBG_NO_LANE && cause != SHMLOG__DBG_NESTED;
	const char *parts[] = {"shmlog: ", why[cause][0],
			       what ? " '" : "", what ? what : "",
			       what ? "'" : "", reason ? ": " : "",
			       reason ? shmlog_strerror(err) : "", "; ",
			       why[cause][1], " (said once; SHMLOG_DEBUG=1)\n"};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t n = strlen(parts[i]);
		if (n && write(STDERR_FILENO, parts[i], n) < 0)
			return;
	}
}
