/* SPDX-License-Identifier: MIT */
/*
 * SHMLOG_DEBUG=1 (util.c): why nothing is logged, said once per cause.
 */
#ifndef SHMLOG_DEBUG_H
#define SHMLOG_DEBUG_H

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

#endif
