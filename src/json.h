/* SPDX-License-Identifier: MIT */
/*
 * The JSON string encoder: every JSON the project emits writes its strings
 * through it (shmlog_reader_deferred() in src/fmtarg_table.c, `shmlog cat -v
 * json` and `shmlog forward --to jsonl:` in tools/format.c, the
 * benchmarks' documents in bench/common/jsonw.c), so that one policy holds for
 * all of them and their output is valid JSON and valid UTF-8 whatever the
 * bytes given:
 *
 *   " \                   escaped as \" and \\
 *   \n \r \t              as themselves, escaped
 *   other C0 and DEL      \u00XX
 *   C1 (U+0080-U+009F)    \u00XX (some terminals take U+009B as CSI)
 *   U+2028, U+2029        \u2028, \u2029 (valid JSON, not JavaScript)
 *   a byte not UTF-8      \ufffd, one per byte, and the caller is told
 *   other UTF-8           as it is
 *
 * Internal to shmlog (src/json.c): in the library, and linked by the CLI
 * and shmlog-bench as the static library shmlog_json, since the shared
 * library exports the API only. Depends on libc alone; no state, so any
 * thread may call it.
 */
#ifndef SHMLOG_JSON_H
#define SHMLOG_JSON_H

#include <stddef.h>

/* The most bytes shmlog__json_str() writes for @n bytes: 6 for each (a
 * \u escape), and the quotes. */
#define SHMLOG__JSON_STR_MAX(n) (6 * (size_t)(n) + 2)

/* shmlog__json_str()'s *@flags: some bytes were not UTF-8 (each became
 * U+FFFD). */
#define SHMLOG__JSON_NOT_UTF8 0x1u

/* @n bytes of @s (any bytes, NULs included) as a JSON string, its quotes
 * included, into @dst (@cap bytes, no NUL added). Returns the string's
 * length; if that is above @cap, @dst holds only its first @cap bytes (to
 * be dropped: they may end inside an escape). ORs SHMLOG__JSON_NOT_UTF8
 * into *@flags (if @flags is not NULL) when some bytes were not UTF-8.
 * Writes nothing past @dst + @cap. */
size_t shmlog__json_str(char *dst, size_t cap, const char *s, size_t n,
			unsigned *flags);

#endif
