/* SPDX-License-Identifier: MIT */
/*
 * A small streaming JSON writer: one document, written as it goes, commas
 * and escapes handled. Used by every shmlog-bench command for its --json
 * output; it depends on stdio and the library's JSON string encoder
 * (src/json.h, linked as shmlog_json), so its strings are valid JSON and
 * UTF-8 whatever bytes they are given, as every JSON shmlog writes. Not
 * thread-safe: one writer per document.
 */
#ifndef SHMLOG_JSONW_H
#define SHMLOG_JSONW_H

#include <stdbool.h>
#include <stdio.h>

#define JSONW_MAX_DEPTH 16

struct jsonw {
	FILE *f;
	int depth;
	bool need_comma[JSONW_MAX_DEPTH];
	bool after_key;
	bool too_deep; /* nesting past JSONW_MAX_DEPTH: the document is bad */
};

/* Start writing to @f (nothing is written yet). */
void jsonw_init(struct jsonw *j, FILE *f);
/* A key whose value (an object or an array) follows. */
void jsonw_key(struct jsonw *j, const char *key);
void jsonw_begin_obj(struct jsonw *j);
void jsonw_end_obj(struct jsonw *j);
void jsonw_begin_arr(struct jsonw *j);
void jsonw_end_arr(struct jsonw *j);
/* Members (@key non-NULL, inside an object) or array elements (@key
 * NULL). A NULL string is written as ""; a non-finite number as null. */
void jsonw_str(struct jsonw *j, const char *key, const char *v);
void jsonw_num(struct jsonw *j, const char *key, double v);
void jsonw_int(struct jsonw *j, const char *key, long long v);
/* 0, or -EIO if writing failed or the nesting went too deep. Does not
 * close the stream. */
int jsonw_status(const struct jsonw *j);

#endif
