/* SPDX-License-Identifier: MIT */
/* The seam between an archive and its live buffer: see archive_seam.h. */
#include "archive_seam.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

struct archive_seam {
	unsigned lanes;
	uint64_t *next; /* the archive's position per lane */
	bool *known;
};

int archive_seam_open(const shmlog_reader_t *arc, const char *name,
		      struct archive_seam **out)
{
	char path[PATH_MAX];
	struct shmlog_archive_source src;
	struct shmlog_info info;
	*out = NULL;
	int err = shmlog_path(name, path, sizeof(path));
	if (err < 0)
		return err;
	if (shmlog_reader_archive_source(arc, path, &src))
		return 0; /* nothing of it archived */
	if ((err = shmlog_stat(name, &info)) != 0)
		return err;
	if (info.created_ns != src.created_ns || info.lanes != src.lanes)
		return 0; /* another buffer of that name */
	struct archive_seam *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->lanes = src.lanes;
	s->next = calloc(src.lanes, sizeof(*s->next));
	s->known = calloc(src.lanes, sizeof(*s->known));
	if (!s->next || !s->known) {
		archive_seam_free(s);
		return -ENOMEM;
	}
	for (unsigned l = 0; l < s->lanes; l++)
		s->known[l] = shmlog_reader_archive_next_seq(arc, path, l,
							     &s->next[l]) == 0;
	*out = s;
	return 0;
}

bool archive_seam_seen(struct archive_seam *s, const shmlog_reader_t *rd,
		       int ev, const struct shmlog_record *rec,
		       const struct shmlog_lost *lost)
{
	if (!s)
		return false;
	if (ev == SHMLOG_EV_LOST) {
		uint64_t first, last;
		unsigned l = lost->lane;
		/* a loss of records the archive has (or says were lost) */
		return l < s->lanes && s->known[l] &&
		       !shmlog_reader_lost_seq(rd, &first, &last) &&
		       (int64_t)(last - s->next[l]) < 0;
	}
	if (ev != SHMLOG_EV_RECORD || rec->lane >= s->lanes ||
	    !s->known[rec->lane])
		return false;
	if ((int64_t)(rec->seq - s->next[rec->lane]) < 0)
		return true;
	/* past the seam: the lane's records come from the buffer now */
	s->known[rec->lane] = false;
	return false;
}

bool archive_seam_next(const struct archive_seam *s, unsigned lane,
		       uint64_t *next)
{
	if (!s || lane >= s->lanes || !s->known[lane])
		return false;
	*next = s->next[lane];
	return true;
}

void archive_seam_free(struct archive_seam *s)
{
	if (!s)
		return;
	free(s->next);
	free(s->known);
	free(s);
}
