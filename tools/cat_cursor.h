/* SPDX-License-Identifier: MIT */
/* `shmlog cat --after-cursor FILE` / `--cursor-file FILE`: show only the
 * records after a cursor (as `shmlog forward` saves them), and with
 * --cursor-file save where the dump stopped, like journalctl's option of
 * that name. */
#ifndef SHMLOG_CAT_CURSOR_H
#define SHMLOG_CAT_CURSOR_H

#include <stdbool.h>

#include "shmlog.h"

struct cat_cursor;

/* Load @file's cursor for buffer @name, read by @rd (a missing file is an
 * empty cursor; a damaged one or one of another buffer is reported on
 * stderr and ignored: everything is shown; lanes it is ahead of are
 * reported and shown from their oldest record). @save: write it back on close.
 * Returns 0, or 1 after printing why it cannot be used. */
int cat_cursor_open(const char *file, bool save, const char *name,
		    const shmlog_reader_t *rd, struct cat_cursor **out);
/* Was @r shown before? If not, the cursor moves past it. */
bool cat_cursor_seen(struct cat_cursor *c, const struct shmlog_record *r);
/* Save (with --cursor-file) and free. Returns 0, or 1 if saving failed. */
int cat_cursor_close(struct cat_cursor *c);

#endif
