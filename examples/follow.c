/* SPDX-License-Identifier: MIT */
/* A minimal follower, like `shmlog tail -f`: prints new records of buffer
 * "app" as they arrive, and losses as they happen. */
#include <errno.h>
#include <shmlog.h>
#include <stdio.h>

int main(void)
{
	shmlog_reader_t *r;
	int err = shmlog_reader_open("app", SHMLOG_READ_TAIL, &r);
	if (err) {
		fprintf(stderr, "follow: %s\n", shmlog_strerror(err));
		return 1;
	}
	for (;;) {
		struct shmlog_record rec;
		struct shmlog_lost lost;
		switch (shmlog_reader_next(r, &rec, &lost)) {
		case SHMLOG_EV_RECORD:
			printf("%c/%s(%u): %s\n", shmlog_prio_char(rec.prio),
			       rec.tag, rec.pid, rec.msg);
			break;
		case SHMLOG_EV_LOST:
			printf("--- %llu lost ---\n",
			       (unsigned long long)(lost.overwritten + lost.torn));
			break;
		default:
			fflush(stdout);
			err = shmlog_reader_wait(r, -1); /* sleeps until a write */
			if (err && err != -EINTR && err != -ETIMEDOUT)
				return 1;
		}
	}
}
