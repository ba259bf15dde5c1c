/* SPDX-License-Identifier: MIT */
/*
 * The output buffer (struct out, format.h): records are formatted into it
 * and it is written with write(2) once about OUT_BLOCK bytes are in it,
 * large blocks and no lock per character (format.c says why).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "format_out.h"

int out_open(struct out *o, int fd)
{
	o->buf = malloc(OUT_CAP);
	if (!o->buf)
		return -ENOMEM;
	o->fd = fd;
	o->failed = false;
	o->len = 0;
	o->cap = OUT_CAP;
	return 0;
}

int out_flush(struct out *o)
{
	size_t done = 0;
	while (!o->failed && done < o->len) {
		ssize_t n = write(o->fd, o->buf + done, o->len - done);
		if (n > 0)
			done += (size_t)n;
		else if (n < 0 && errno != EINTR)
			o->failed = true;
	}
	o->len = 0;
	return o->failed ? -EPIPE : 0;
}

void out_close(struct out *o)
{
	out_flush(o);
	free(o->buf);
	o->buf = NULL;
}
