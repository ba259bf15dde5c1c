/* SPDX-License-Identifier: MIT */
/* The private buffer a filter benchmark runs on. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "filter_bench.h"
#include "shmlog.h"

int fb_buffer_setup(char *name, size_t len)
{
	snprintf(name, len, "bench-filter-%ld", (long)getpid());
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = SHMLOG_SIZE_MIN; /* nothing is written: keep it small */
	int err = shmlog_create(name, &o);
	if (err == -EEXIST) /* left over by a killed run with our pid */
		err = 0;
	if (err)
		return err;
	unsetenv("SHMLOG_TAGS");
	if (setenv("SHMLOG_BUFFER", name, 1) != 0)
		return -errno;
	return shmlog_default() ? 0 : -EIO;
}

void fb_buffer_remove(const char *name)
{
	shmlog_remove(name);
}

int fb_buffer_check_empty(const char *name, const char *who)
{
	struct shmlog_info st;
	int err = shmlog_stat(name, &st);
	if (err)
		return err;
	if (st.written == 0)
		return 0;
	fprintf(stderr, "shmlog-bench %s: %" PRIu64 " records reached buffer %s"
			": some measured call was not filtered out\n",
		who, st.written, name);
	return -EPROTO;
}

char *fb_spec_tags(char *buf, size_t len, int ntags, char lvl, char def)
{
	size_t off = 0;
	buf[0] = '\0';
	for (int i = 0; i < ntags && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "tag%03d:%c ", i,
					lvl);
	if (off < len)
		snprintf(buf + off, len - off, "*:%c", def);
	return buf;
}
