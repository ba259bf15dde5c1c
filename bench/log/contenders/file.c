/* SPDX-License-Identifier: MIT */
/*
 * A plain log file, the first thing most programs do:
 *  - write(2) of each record to a file opened O_APPEND (every record is in
 *    the kernel, and so survives a crash of the process, when it returns);
 *  - stdio fwrite() to a FILE opened "a" with its default buffer (a syscall
 *    per 4 KiB; what is still in the buffer dies with the process).
 * Records are the common binary header, tag and message. The file lives in
 * the scratch directory (--dir) and is truncated before every run so that
 * the benchmark does not fill the disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static int file_setup(struct lb_ctx *c)
{
	if (lb_make_dir(c) < 0)
		return -1;
	snprintf(c->arg, sizeof(c->arg), "%s/%s.log", c->dir, c->ct->name);
	int fd = open(c->arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(c->why, sizeof(c->why), "create %s: %s", c->arg,
			 strerror(errno));
		lb_remove_dir(c);
		return -1;
	}
	close(fd);
	snprintf(c->note, sizeof(c->note), "file in %s", lb_scratch);
	return 0;
}

static void file_reset(struct lb_ctx *c)
{
	if (truncate(c->arg, 0) < 0)
		fprintf(stderr, "warning: truncate %s: %s\n", c->arg,
			strerror(errno));
}

static void file_teardown(struct lb_ctx *c)
{
	lb_remove_dir(c);
}

static void *wr_open(const char *arg, char *err, size_t errlen)
{
	int fd = open(arg, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "open(%s): %s", arg, strerror(errno));
		return NULL;
	}
	return (void *)(intptr_t)(fd + 1);
}

static long wr_write(void *w, const struct lb_msg *m)
{
	char buf[sizeof(struct lb_hdr) + 256 + LB_MSG_MAX];
	size_t len = lb_rec_build(buf, m);
	ssize_t n = write((int)(intptr_t)w - 1, buf, len);
	return n < 0 ? -errno : n;
}

static void wr_close(void *w)
{
	close((int)(intptr_t)w - 1);
}

const struct lb_contender lb_file_write = {
    .name = "file-write",
    .what = "write(2) of each record to a file opened O_APPEND",
    .setup = file_setup,
    .teardown = file_teardown,
    .reset = file_reset,
    .open = wr_open,
    .write = wr_write,
    .close = wr_close,
};

static void *io_open(const char *arg, char *err, size_t errlen)
{
	FILE *f = fopen(arg, "ae");
	if (!f)
		snprintf(err, errlen, "fopen(%s): %s", arg, strerror(errno));
	return f;
}

static long io_write(void *w, const struct lb_msg *m)
{
	char buf[sizeof(struct lb_hdr) + 256 + LB_MSG_MAX];
	size_t len = lb_rec_build(buf, m);
	/* One fwrite per record: stdio's lock is taken once, as a logger's
	 * line would be written. */
	return fwrite(buf, 1, len, w) == len ? (long)len : -EIO;
}

static void io_close(void *w)
{
	fclose(w);
}

const struct lb_contender lb_file_stdio = {
    .name = "file-stdio",
    .what = "stdio fwrite() of each record to a file (default buffer)",
    .setup = file_setup,
    .teardown = file_teardown,
    .reset = file_reset,
    .open = io_open,
    .write = io_write,
    .close = io_close,
};
