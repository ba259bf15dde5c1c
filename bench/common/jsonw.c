/* SPDX-License-Identifier: MIT */
#include "jsonw.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "json.h"
#include "utf8.h"

void jsonw_init(struct jsonw *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

static void sep(struct jsonw *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
}

/* Input bytes per call of the encoder: its output fits on the stack. */
#define PIECE 256

/* @s as a JSON string by the library's encoder (src/json.h: valid JSON
 * and UTF-8 whatever the bytes), a piece at a time: pieces end on a
 * character's boundary, so the pieces' strings, quotes dropped, make the
 * whole string's. */
static void string(FILE *f, const char *s)
{
	char out[SHMLOG__JSON_STR_MAX(PIECE)];
	size_t n = strlen(s);
	fputc('"', f);
	while (n) {
		size_t k = n > PIECE ? shmlog__utf8_cut(s, PIECE) : n;
		size_t w = shmlog__json_str(out, sizeof(out), s, k, NULL);
		fwrite(out + 1, 1, w - 2, f);
		s += k;
		n -= k;
	}
	fputc('"', f);
}

static void member(struct jsonw *j, const char *key)
{
	sep(j);
	if (key) {
		string(j->f, key);
		fputc(':', j->f);
	}
}

void jsonw_key(struct jsonw *j, const char *key)
{
	member(j, key);
	j->after_key = true;
}

static void begin(struct jsonw *j, char c)
{
	sep(j);
	fputc(c, j->f);
	if (j->depth + 1 >= JSONW_MAX_DEPTH) {
		j->too_deep = true;
		return;
	}
	j->depth++;
	j->need_comma[j->depth] = false;
}

static void end(struct jsonw *j, char c)
{
	fputc(c, j->f);
	if (j->depth > 0)
		j->depth--;
	j->need_comma[j->depth] = true;
}

void jsonw_begin_obj(struct jsonw *j)
{
	begin(j, '{');
}

void jsonw_end_obj(struct jsonw *j)
{
	end(j, '}');
}

void jsonw_begin_arr(struct jsonw *j)
{
	begin(j, '[');
}

void jsonw_end_arr(struct jsonw *j)
{
	end(j, ']');
}

void jsonw_str(struct jsonw *j, const char *key, const char *v)
{
	member(j, key);
	string(j->f, v ? v : "");
}

void jsonw_num(struct jsonw *j, const char *key, double v)
{
	member(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);
}

void jsonw_int(struct jsonw *j, const char *key, long long v)
{
	member(j, key);
	fprintf(j->f, "%lld", v);
}

int jsonw_status(const struct jsonw *j)
{
	return ferror(j->f) || j->too_deep ? -EIO : 0;
}
