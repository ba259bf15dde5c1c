/* SPDX-License-Identifier: MIT */
/*
 * A writer for the archive tests, built with the library's test points
 * (shmlog_tp):
 *   archive_writer BUFFER printf N
 *       N printf-style records (SHMLOG_LOG_TO, formatted by readers), tag
 *       "pf", message "rec I <word> -I I/4" for I = 0 .. N-1;
 *   archive_writer BUFFER die POINT N
 *       N records "1" .. "N" (tag "die"), then one more during which it
 *       SIGKILLs itself at the write path's test point POINT (append.h:
 *       1 reserved, 3 tag written, 4 message written, 5 committed, 6 head
 *       published, next_seq not yet): a writer dead inside a write.
 *   archive_writer BUFFER movers T N W
 *       W waves of T threads at once, each writing N records "ID 1" ..
 *       "ID N" (tag "mv"; ID numbers the threads from 1) and exiting:
 *       with more threads than lanes, those without a lane borrow a
 *       shared one for each record until a lane is given back, then move
 *       to it (a write that finds the shared lanes lent out just then is
 *       tried again).
 * Exits 0 (printf, movers), or dies by SIGKILL (die); 1 on an error, 2
 * if the test point was never reached.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "shmlog.h"

static int kill_at;

static void die_here(int point)
{
	if (point == kill_at)
		kill(getpid(), SIGKILL);
}

static shmlog_t *mover_h;
static unsigned long mover_n;

static void *mover(void *arg)
{
	unsigned long id = (unsigned long)(uintptr_t)arg;
	char msg[48];
	for (unsigned long i = 1; i <= mover_n; i++) {
		int len = snprintf(msg, sizeof(msg), "%lu %lu", id, i);
		int err, tries = 0;
		/* -EAGAIN: the shared lanes were lent to others just then;
		 * tried again, bounded */
		while ((err = shmlog_write_n(mover_h, SHMLOG_INFO, "mv", msg,
					     (size_t)len)) == -EAGAIN &&
		       ++tries < 1000000)
			sched_yield();
		if (err) {
			fprintf(stderr, "archive_writer: write: %s\n",
				shmlog_strerror(err));
			return (void *)1; /* failed */
		}
	}
	return NULL;
}

static int movers(shmlog_t *h, unsigned t, unsigned long n, unsigned waves)
{
	pthread_t th[256];
	int rc = 0;
	mover_h = h;
	mover_n = n;
	if (t > 256)
		t = 256;
	for (unsigned w = 0; w < waves && !rc; w++) {
		unsigned made = 0;
		for (; made < t; made++)
			if (pthread_create(&th[made], NULL, mover,
					   (void *)(uintptr_t)(w * t + made + 1))) {
				rc = 1;
				break;
			}
		for (unsigned i = 0; i < made; i++) {
			void *ret;
			pthread_join(th[i], &ret);
			if (ret)
				rc = 1;
		}
	}
	shmlog_close(h);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 4 ||
	    (strcmp(argv[2], "printf") && strcmp(argv[2], "die") &&
	     strcmp(argv[2], "movers")) ||
	    (strcmp(argv[2], "printf") && argc < 5) ||
	    (!strcmp(argv[2], "movers") && argc < 6)) {
		fprintf(stderr, "usage: archive_writer BUFFER printf N | "
				"archive_writer BUFFER die POINT N | "
				"archive_writer BUFFER movers T N W\n");
		return 1;
	}
	shmlog_t *h;
	int err = shmlog_open(argv[1], 0, &h);
	if (err) {
		fprintf(stderr, "archive_writer: %s: %s\n", argv[1],
			shmlog_strerror(err));
		return 1;
	}
	if (!strcmp(argv[2], "printf")) {
		static const char *words[] = {"alpha", "b\xc3\xa9ta", "", "\"q\""};
		unsigned long n = strtoul(argv[3], NULL, 10);
		for (unsigned long i = 0; i < n; i++)
			SHMLOG_LOG_TO(h, SHMLOG_INFO, "pf", "rec %lu %s %d %.2f", i,
				      words[i % 4], -(int)i, i / 4.0);
		shmlog_close(h);
		return 0;
	}
	if (!strcmp(argv[2], "movers"))
		return movers(h, (unsigned)atoi(argv[3]),
			      strtoul(argv[4], NULL, 10),
			      (unsigned)atoi(argv[5]));
	kill_at = atoi(argv[3]);
	unsigned long n = strtoul(argv[4], NULL, 10);
	char msg[32];
	for (unsigned long i = 1; i <= n + 1; i++) {
		if (i == n + 1)
			shmlog__testpoint_hook = die_here;
		int len = snprintf(msg, sizeof(msg), "%lu", i);
		err = shmlog_write_n(h, SHMLOG_INFO, "die", msg, (size_t)len);
		if (err) {
			fprintf(stderr, "archive_writer: write: %s\n",
				shmlog_strerror(err));
			return 1;
		}
	}
	return 2; /* the test point was never reached */
}
