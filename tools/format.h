/* SPDX-License-Identifier: MIT */
/* How the CLI shows records: logcat's formats, JSON, colour. */
#ifndef SHMLOG_FORMAT_H
#define SHMLOG_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "shmlog.h"

enum fmt_kind { FMT_THREADTIME, FMT_BRIEF, FMT_LONG, FMT_RAW, FMT_JSON };

struct fmt {
	enum fmt_kind kind;
	bool color;
	bool utc;
};

/* Parse a -v argument; -1 if unknown. */
int fmt_parse(const char *name);
void fmt_record(FILE *out, const struct fmt *f, const struct shmlog_record *r);
void fmt_lost(FILE *out, const struct fmt *f, const struct shmlog_lost *l);

#endif
