/* SPDX-License-Identifier: MIT */
/*
 * A writer for the forwarding tests: fwd_writer BUFFER TAG COUNT [RATE]
 * writes COUNT records tagged TAG, priorities cycling V..F, each message
 * built from its index by fwd_message() (the test builds the same bytes to
 * check what the receiver got): quotes, backslashes, ']', a tab, a
 * newline, bytes that are not UTF-8 and UTF-8 that is. RATE (records per
 * second, 0: as fast as possible) paces it. With "printf" after RATE the
 * records are printf-style calls the reader formats (SHMLOG_LOG_TO with a
 * literal format): their format and values travel with them. Exits 0 when
 * all were written.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmlog.h"

static size_t fwd_message(char *buf, size_t cap, unsigned long i)
{
	int n = snprintf(buf, cap,
			 "rec %lu \"quoted\" back\\slash ]bracket\ttab\nline2 "
			 "\xff\xfe\x80 caf\xc3\xa9 end",
			 i);
	return n < 0 ? 0 : (size_t)n;
}

/* One plain record; a full lane (-EAGAIN) is waited out. */
static int write_one(shmlog_t *h, int prio, const char *tag, const char *msg,
		     size_t len)
{
	int err;
	while ((err = shmlog_write_n(h, prio, tag, msg, len)) == -EAGAIN)
		nanosleep(&(struct timespec){0, 100000}, NULL);
	return err;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: fwd_writer BUFFER TAG COUNT [RATE [printf]]\n");
		return 2;
	}
	unsigned long count = strtoul(argv[3], NULL, 10);
	double rate = argc > 4 ? strtod(argv[4], NULL) : 0;
	bool printf_style = argc > 5 && !strcmp(argv[5], "printf");
	shmlog_t *h;
	int err = shmlog_open(argv[1], 0, &h);
	if (err) {
		fprintf(stderr, "fwd_writer: %s: %s\n", argv[1],
			shmlog_strerror(err));
		return 1;
	}
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char msg[256];
	for (unsigned long i = 0; i < count; i++) {
		size_t len = fwd_message(msg, sizeof(msg), i);
		int prio = SHMLOG_VERBOSE + (int)(i % 6);
		if (printf_style) { /* deferred: the reader formats it */
			SHMLOG_LOG_TO(h, prio, argv[2],
				      "rec %lu \"quoted\" %s %d %.2f", i,
				      "caf\xc3\xa9 \xff", -(int)i, i / 4.0);
		} else {
			err = write_one(h, prio, argv[2], msg, len);
		}
		if (err) {
			fprintf(stderr, "fwd_writer: write: %s\n",
				shmlog_strerror(err));
			return 1;
		}
		if (rate > 0) { /* pace: never ahead of i / rate seconds */
			double due = (double)(i + 1) / rate;
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			double el = (double)(now.tv_sec - t0.tv_sec) +
				    (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
			if (due > el) {
				double d = due - el;
				struct timespec ts = {(time_t)d,
						      (long)((d - (double)(time_t)d) *
							     1e9)};
				nanosleep(&ts, NULL);
			}
		}
	}
	shmlog_close(h);
	return 0;
}
