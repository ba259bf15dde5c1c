/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	case -EPROTONOSUPPORT: return "buffer format version not supported";
	case -ENODATA: return "buffer header does not fit the file";
	case -EPERM: return "file is not a buffer we may trust (symlink, FIFO, hard link, foreign owner or world-writable)";
	case -EAGAIN: return "every lane is held by a live writer";
	case -EBUSY: return "nested write from a signal handler";
	case -EIO: return "the buffer's file was truncated while we used it";
	default: return strerror(err < 0 ? -err : err);
	}
}
