/* SPDX-License-Identifier: MIT */
/* Cursors for `shmlog cat`: see cat_cursor.h and cursor.h. */
#include "cat_cursor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor.h"

struct cat_cursor {
	const char *file;
	bool save;
	struct cursor cursor;
	size_t buf; /* index of the buffer's section */
};

static int fail(struct cat_cursor *c, const char *fmt, const char *a,
		const char *b)
{
	fprintf(stderr, fmt, a, b);
	cursor_free(&c->cursor);
	free(c);
	return 1;
}

int cat_cursor_open(const char *file, bool save, const char *name,
		    const shmlog_reader_t *rd, struct cat_cursor **out)
{
	struct cat_cursor *c = calloc(1, sizeof(*c));
	if (!c)
		return 1;
	c->file = file;
	c->save = save;
	char why[512];
	int err = cursor_load(file, &c->cursor, why, sizeof(why));
	if (err == -EBADMSG)
		fprintf(stderr,
			"shmlog cat: warning: cursor file %s is damaged (%s): "
			"showing every record%s\n",
			file, why, save ? "; it is written anew" : "");
	else if (err && err != -ENOENT)
		return fail(c, "shmlog cat: cannot use cursor file %s: %s\n",
			    file, why);
	struct cursor_id id;
	err = cursor_identify(name, &id);
	if (err)
		return fail(c, "shmlog cat: %s: %s\n", name ? name : "main",
			    shmlog_strerror(err));
	struct cursor_buf *b = cursor_find(&c->cursor, id.path);
	if (b && !cursor_same_buffer(&b->id, &id, why, sizeof(why))) {
		fprintf(stderr,
			"shmlog cat: warning: cursor file %s does not apply to "
			"%s: %s: showing every record\n",
			file, id.path, why);
		if (cursor_reset(b, &id))
			return fail(c, "shmlog cat: %s%s\n", "out of memory",
				    "");
	}
	if (!b)
		b = cursor_add(&c->cursor, &id);
	if (!b)
		return fail(c, "shmlog cat: %s%s\n", "out of memory", "");
	unsigned ahead = cursor_drop_ahead(b, rd, why, sizeof(why));
	if (ahead)
		fprintf(stderr,
			"shmlog cat: warning: cursor file %s is ahead of %s (%s; "
			"%u lane%s in all): the buffer was cleared or recreated "
			"since, or the cursor is another buffer's; showing %s "
			"from the oldest record\n",
			file, id.path, why, ahead, ahead == 1 ? "" : "s",
			ahead == 1 ? "that lane" : "those lanes");
	c->buf = (size_t)(b - c->cursor.bufs);
	*out = c;
	return 0;
}

bool cat_cursor_seen(struct cat_cursor *c, const struct shmlog_record *r)
{
	struct cursor_buf *b = &c->cursor.bufs[c->buf];
	if (r->lane >= b->id.lanes)
		return false;
	if (cursor_done(b, r->lane, r->seq))
		return true;
	b->known[r->lane] = true;
	b->next[r->lane] = r->seq + 1;
	return false;
}

int cat_cursor_close(struct cat_cursor *c)
{
	if (!c)
		return 0;
	int rc = 0;
	if (c->save) {
		int err = cursor_save(c->file, &c->cursor);
		if (err) {
			fprintf(stderr,
				"shmlog cat: cannot save cursor file %s: %s\n",
				c->file, strerror(-err));
			rc = 1;
		}
	}
	cursor_free(&c->cursor);
	free(c);
	return rc;
}
