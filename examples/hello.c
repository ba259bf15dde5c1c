/* SPDX-License-Identifier: MIT */
/* The smallest shmlog writer: logs a few records into buffer "app"
 * (created if missing); read them with `shmlog cat -b app`. */
#include <shmlog.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	shmlog_t *h;
	int err = shmlog_open("app", SHMLOG_OPEN_CREATE, &h);
	if (err) {
		fprintf(stderr, "hello: %s\n", shmlog_strerror(err));
		return 1;
	}
	shmlog_write(h, SHMLOG_INFO, "hello", "started");
	for (int i = 0; i < 3; i++)
		shmlog_print(h, SHMLOG_DEBUG, "hello", "tick %d of pid %d", i,
			     (int)getpid());
	shmlog_close(h);

	/* the macros log to the default buffer ($SHMLOG_BUFFER or "main") */
	SHMLOG_W("hello", "done");
	return 0;
}
