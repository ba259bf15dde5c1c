/* SPDX-License-Identifier: MIT */
/*
 * Shared by `shmlog-bench disabled` and `shmlog-bench eventloop`: a private
 * buffer for the run, and the measured call sites.
 *
 * The call sites live in their own translation units (sites.c, floor.c) so
 * the compiler sees exactly what it sees at a real call site: a literal
 * priority and tag, arguments that depend on the loop, and nothing that
 * tells it the call is disabled.
 */
#ifndef SHMLOG_BENCH_FILTER_H
#define SHMLOG_BENCH_FILTER_H

#include <stddef.h>
#include <stdint.h>

/* An empty asm statement: the loop cannot be deleted (a volatile asm runs
 * once per iteration) and nothing is emitted, so the loop is a counter, a
 * compare and a branch around the call site, as in real code. */
#define FB_KEEP() __asm__ volatile("")

/* Create "bench-filter-<pid>", point $SHMLOG_BUFFER at it before the first
 * macro call opens the default handle, and drop $SHMLOG_TAGS so the user's
 * environment cannot change what is measured. Returns 0 or a negative
 * errno; the name is written to @name. */
int fb_buffer_setup(char *name, size_t len);
void fb_buffer_remove(const char *name);

/* Every call a benchmark makes must be filtered out: check that nothing
 * reached the buffer. Returns 0, or -EPROTO after printing what leaked. */
int fb_buffer_check_empty(const char *name, const char *who);

/* A spec with @ntags entries "tagNNN:@lvl" then "*:@def"; returns @buf. */
char *fb_spec_tags(char *buf, size_t len, int ntags, char lvl, char def);

/* The measured loops: @n calls of one call site each (sites.c). */
void fb_loop_empty(uint64_t n); /* the loop alone */
void fb_loop_floor(uint64_t n); /* SHMLOG_D under SHMLOG_MIN_PRIORITY=I */
void fb_loop_global(uint64_t n); /* SHMLOG_D("net"), spec "*:W" */
void fb_loop_tag(uint64_t n); /* SHMLOG_D("tag057"), 100-tag spec */
void fb_loop_change(uint64_t n); /* SHMLOG_D("tag057"), another site */
void fb_loop_change2(uint64_t n); /* SHMLOG_D("tag058"), a third site */
void fb_loop_uncached(uint64_t n); /* shmlog_enabled() on every call */

/* One call of a site just after a live change, out of line so callgrind
 * can count it alone (--toggle-collect). */
void fb_first_call(void); /* fb_loop_change(1): recompiles the spec */
void fb_other_site_call(void); /* fb_loop_change2(1): spec already compiled */

#endif
