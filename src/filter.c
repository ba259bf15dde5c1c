/* SPDX-License-Identifier: MIT */
/*
 * Filters: logcat's filter-spec syntax ("net:D ui:W *:S"), per buffer and
 * changeable while processes run.
 *
 * The spec text lives in the segment's read-mostly config line, guarded by
 * filter_gen used as a sequence lock (odd while being set). Each process
 * compiles it into a private table when the generation changes. Call sites
 * (the SHMLOG_x macros) cache their tag's answer together with the
 * generation it was computed at, so a disabled call is a load of the
 * generation and two compares; nothing on that path writes shared memory.
 * The effective spec is $SHMLOG_TAGS followed by the buffer's spec: later
 * entries win.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct filter_entry {
	char tag[SHMLOG_TAG_MAX + 1];
	int level;
	int order; /* position in the spec: later entries win */
};

struct shmlog__filter {
	int def; /* level for tags not listed ("*") */
	int max; /* highest level of def and every entry */
	int min; /* lowest level of def and every entry */
	struct shmlog__filter *retired_next; /* in the handle's retired list */
	int n;
	struct filter_entry e[]; /* sorted by tag */
};

/* Where the macros find the default handle's generation. Until the default
 * handle exists it points at a word no site has cached, so every site asks
 * shmlog__site_refresh() once. */
static const uint32_t no_default_gen = 1;
const uint32_t *shmlog__filter_gen = &no_default_gen;

static pthread_mutex_t filter_lock = PTHREAD_MUTEX_INITIALIZER;

static int level_of(char c)
{
	switch (c) {
	case 'V': case 'v': return SHMLOG_VERBOSE;
	case 'D': case 'd': return SHMLOG_DEBUG;
	case 'I': case 'i': return SHMLOG_INFO;
	case 'W': case 'w': return SHMLOG_WARN;
	case 'E': case 'e': return SHMLOG_ERROR;
	case 'F': case 'f': return SHMLOG_FATAL;
	case 'S': case 's': return SHMLOG_SILENT;
	default: return -1;
	}
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ',';
}

/* A tag of a spec is matched exactly: "*" alone is the default, and a
 * '*' or '=' inside one is a mistake to refuse rather than a tag to store
 * ("net=D" meant net:D; "net*" a wildcard there is none of). */
static bool tag_is_plain(const char *tag, size_t len)
{
	if (len == 1 && tag[0] == '*')
		return true;
	return !memchr(tag, '*', len) && !memchr(tag, '=', len);
}

/* Walk the tokens of @spec; call @fn for each good one. Returns 0 or
 * -EINVAL with the offset of the bad token in *@bad. */
static int spec_walk(const char *spec, size_t *bad,
		     void (*fn)(void *ctx, const char *tag, size_t len,
				int level),
		     void *ctx)
{
	const char *p = spec;
	while (*p) {
		while (is_space(*p))
			p++;
		if (!*p)
			break;
		const char *tok = p;
		while (*p && !is_space(*p))
			p++;
		size_t n = (size_t)(p - tok);
		const char *colon = memrchr(tok, ':', n);
		size_t taglen = colon ? (size_t)(colon - tok) : n;
		int level = SHMLOG_VERBOSE; /* "TAG" alone: everything */
		if (colon) {
			if ((size_t)(colon - tok) + 2 != n ||
			    (level = level_of(colon[1])) < 0)
				goto bad;
		}
		if (taglen == 0 || taglen > SHMLOG_TAG_MAX ||
		    !tag_is_plain(tok, taglen))
			goto bad;
		if (fn)
			fn(ctx, tok, taglen, level);
		continue;
bad:
		if (bad)
			*bad = (size_t)(tok - spec);
		return -EINVAL;
	}
	return 0;
}

int shmlog_parse_filter(const char *spec, size_t *bad_offset)
{
	if (!spec)
		return -EINVAL;
	return spec_walk(spec, bad_offset, NULL, NULL);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct filter_entry *)a)->tag,
		      ((const struct filter_entry *)b)->tag);
}

/* Sort by tag, and among equal tags by order of appearance. */
static int entry_cmp_order(const void *a, const void *b)
{
	const struct filter_entry *x = a, *y = b;
	int c = strcmp(x->tag, y->tag);
	return c ? c : (x->order > y->order) - (x->order < y->order);
}

static void add_entry(void *ctx, const char *tag, size_t len, int level)
{
	struct shmlog__filter *f = ctx;
	if (len == 1 && tag[0] == '*') {
		f->def = level;
		return;
	}
	memcpy(f->e[f->n].tag, tag, len);
	f->e[f->n].tag[len] = '\0';
	f->e[f->n].level = level;
	f->e[f->n].order = f->n;
	f->n++;
}

/* Sort the entries for bsearch; of a tag named twice the later one wins. */
static void filter_finish(struct shmlog__filter *f)
{
	qsort(f->e, (size_t)f->n, sizeof(f->e[0]), entry_cmp_order);
	int out = 0;
	for (int i = 0; i < f->n; i++) {
		if (i + 1 < f->n && !strcmp(f->e[i].tag, f->e[i + 1].tag))
			continue;
		f->e[out++] = f->e[i];
	}
	f->n = out;
}

static size_t count_tokens(const char *s)
{
	size_t n = 0;
	for (bool in = false; *s; s++) {
		if (!is_space(*s) && !in)
			n++;
		in = !is_space(*s);
	}
	return n;
}

/* A $SHMLOG_TAGS that does not parse is ignored as a whole; the CLI says
 * so on every command, a program with SHMLOG_DEBUG=1 (once). */
static void say_bad_env(const char *env, size_t bad)
{
	char tok[72];
	size_t n = 0;
	while (env[bad + n] && !is_space(env[bad + n]) && n + 1 < sizeof(tok)) {
		tok[n] = env[bad + n];
		n++;
	}
	tok[n] = '\0';
	shmlog__debug(SHMLOG__DBG_BAD_TAGS, 0, tok);
}

/* Compile "@env @spec" (either may be NULL). A bad $SHMLOG_TAGS is
 * ignored here as a whole (never "log nothing"): say_bad_env(). */
static struct shmlog__filter *filter_compile(const char *env, const char *spec)
{
	size_t cap = (env ? count_tokens(env) : 0) +
		     (spec ? count_tokens(spec) : 0) + 1;
	struct shmlog__filter *f =
		calloc(1, sizeof(*f) + cap * sizeof(struct filter_entry));
	if (!f)
		return NULL;
	f->def = SHMLOG_VERBOSE;
	size_t bad = 0;
	if (env && shmlog_parse_filter(env, &bad) == 0)
		spec_walk(env, NULL, add_entry, f);
	else if (env)
		say_bad_env(env, bad);
	if (spec && shmlog_parse_filter(spec, NULL) == 0)
		spec_walk(spec, NULL, add_entry, f);
	filter_finish(f);
	f->max = f->min = f->def;
	for (int i = 0; i < f->n; i++) {
		if (f->e[i].level > f->max)
			f->max = f->e[i].level;
		if (f->e[i].level < f->min)
			f->min = f->e[i].level;
	}
	return f;
}

int shmlog__filter_level(const struct shmlog__filter *f, const char *tag)
{
	if (!f)
		return SHMLOG_VERBOSE;
	if (!tag || !tag[0])
		tag = "?";
	struct filter_entry key;
	size_t n = strnlen(tag, SHMLOG_TAG_MAX);
	memcpy(key.tag, tag, n);
	key.tag[n] = '\0';
	const struct filter_entry *e =
		bsearch(&key, f->e, (size_t)f->n, sizeof(f->e[0]), entry_cmp);
	return e ? e->level : f->def;
}

/* Copy the buffer's spec out, consistent with generation *@gen. */
static bool spec_read(const struct shmlog__hdr *hdr, char *buf, uint32_t *gen)
{
	for (int tries = 0; tries < 1000; tries++) {
		/* LMM(filter:C) the generation before the spec; pairs with
		 * LMM(filter:B) */
		uint32_t g1 = atomic_load_explicit(&hdr->config.filter_gen,
						   memory_order_acquire);
		if (g1 & 1)
			continue;
		uint32_t n = hdr->config.spec_len;
		if (n >= sizeof(hdr->spec))
			n = 0;
		memcpy(buf, hdr->spec, n);
		buf[n] = '\0';
		/* LMM(filter:D) the copy before the second look: a spec
		 * being set (LMM(filter:A)) changed the generation */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&hdr->config.filter_gen,
					 memory_order_relaxed) == g1) {
			*gen = g1;
			return true;
		}
	}
	return false;
}

/* Make @f the handle's filter, answering for generation @gen. The one it
 * replaces may still be read by a writer on another thread (or in a signal
 * handler): it is kept until the handle is closed. Filters change when a
 * person runs `shmlog level`: the list stays short. */
static void filter_publish(struct shmlog *h, struct shmlog__filter *f,
			   uint32_t gen)
{
	struct shmlog__filter *old = h->filter;
	if (f != old) {
		/* LMM(filter:E) the filter whole before writers see it;
		 * pairs with LMM(filter:F) */
		__atomic_store_n(&h->filter, f, __ATOMIC_RELEASE);
		if (old) {
			old->retired_next = h->retired;
			h->retired = old;
		}
	}
	h->filter_gen_seen = gen;
	int max = f ? f->max : SHMLOG_VERBOSE;
	int min = f ? f->min : SHMLOG_VERBOSE;
	/* LMM(filter:E) the filter before the word made from it */
	atomic_store_explicit(&h->filter_fast, shmlog__filter_word(gen, min, max),
			      memory_order_release);
}

/* Bring @h's compiled filter up to date; returns the generation its answers
 * may be cached under. Called with filter_lock held. */
/* What filter_refresh() finds in the segment. */
enum spec_seen { SPEC_SAME, SPEC_COPIED, SPEC_BUSY, SPEC_GONE };

/* Load the generation and, if it moved, copy the spec text out of @h's
 * segment, surviving a truncation of the file (guard.c): the caller holds
 * filter_lock, which a fault must never leave locked. */
static enum spec_seen spec_snapshot(struct shmlog *h, uint32_t *gen,
				    char *spec, uint32_t *read_gen)
{
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) != 0) {
		shmlog__guard_recovered();
		return SPEC_GONE;
	}
	shmlog__guard_arm(&g, &h->seg);
	const struct shmlog__hdr *hdr = h->seg.hdr;
	enum spec_seen seen = SPEC_SAME;
	/* LMM(filter:G) pairs with LMM(filter:B) */
	*gen = atomic_load_explicit(&hdr->config.filter_gen,
				    memory_order_acquire);
	if (!h->filter || *gen != h->filter_gen_seen)
		seen = spec_read(hdr, spec, read_gen) ? SPEC_COPIED : SPEC_BUSY;
	shmlog__guard_disarm();
	return seen;
}

static uint32_t filter_refresh(struct shmlog *h)
{
	char spec[sizeof(h->seg.hdr->spec) + 1];
	uint32_t gen = 0, read_gen = 0;
	switch (spec_snapshot(h, &gen, spec, &read_gen)) {
	case SPEC_SAME: return gen;
	case SPEC_COPIED: break;
	case SPEC_GONE: /* truncated under us: keep what we have */
		if (h->filter)
			return h->filter_gen_seen;
		/* fall through - a first filter from $SHMLOG_TAGS alone */
	case SPEC_BUSY: {
		/* A setter is at work, or died at work (the generation stays
		 * odd until the next `shmlog level` takes the lock over):
		 * keep the answers we have, and let call sites cache them
		 * under this generation rather than ask again on every call.
		 * The setter's final (even) generation invalidates them. */
		struct shmlog__filter *f = h->filter;
		if (!f)
			f = filter_compile(getenv("SHMLOG_TAGS"), NULL);
		filter_publish(h, f, gen);
		return gen;
	}
	}
	struct shmlog__filter *f = filter_compile(getenv("SHMLOG_TAGS"), spec);
	if (f)
		filter_publish(h, f, read_gen);
	return h->filter_gen_seen;
}

void shmlog__filter_init(struct shmlog *h)
{
	pthread_mutex_lock(&filter_lock);
	/* a generation no buffer has: the first write compiles the filter
	 * if this fails for want of memory */
	atomic_store_explicit(&h->filter_fast,
			      shmlog__filter_word(1, 0, SHMLOG_SILENT),
			      memory_order_relaxed);
	filter_refresh(h);
	pthread_mutex_unlock(&filter_lock);
}

void shmlog__filter_free_all(struct shmlog *h)
{
	free(h->filter);
	h->filter = NULL;
	while (h->retired) {
		struct shmlog__filter *next = h->retired->retired_next;
		free(h->retired);
		h->retired = next;
	}
}

bool shmlog__write_wanted_slow(struct shmlog *h, int prio, const char *tag)
{
	/* LMM(filter:G) the generation; LMM(filter:F) the word made from the
	 * filter (pairs with LMM(filter:E)) */
	uint32_t gen = atomic_load_explicit(&h->seg.hdr->config.filter_gen,
					    memory_order_acquire);
	uint64_t fast = atomic_load_explicit(&h->filter_fast,
					     memory_order_acquire);
	/* The filter changed: compile it again, unless another thread (or
	 * the code this signal handler interrupted) is at it; then the
	 * filter we have answers this once. */
	if ((uint32_t)(fast >> 32) != gen &&
	    pthread_mutex_trylock(&filter_lock) == 0) {
		filter_refresh(h);
		pthread_mutex_unlock(&filter_lock);
	}
	/* LMM(filter:F) pairs with LMM(filter:E): the filter whole */
	const struct shmlog__filter *f =
		__atomic_load_n(&h->filter, __ATOMIC_ACQUIRE);
	return shmlog_filter_wants(f, prio, tag);
}

int shmlog_filter_new(const char *spec, size_t *bad_offset,
		      shmlog_filter_t **out)
{
	int err = shmlog_parse_filter(spec, bad_offset);
	if (err)
		return err;
	struct shmlog__filter *f = filter_compile(NULL, spec);
	if (!f)
		return -ENOMEM;
	*out = f;
	return 0;
}

int shmlog_filter_wants(const shmlog_filter_t *f, int prio, const char *tag)
{
	int level = shmlog__filter_level(f, tag);
	return prio >= level && level < SHMLOG_SILENT;
}

void shmlog_filter_free(shmlog_filter_t *f)
{
	free(f);
}

int shmlog_enabled(shmlog_t *h, int prio, const char *tag)
{
	if (!h)
		return 0;
	pthread_mutex_lock(&filter_lock);
	filter_refresh(h);
	int wanted = shmlog_filter_wants(h->filter, prio, tag);
	pthread_mutex_unlock(&filter_lock);
	return wanted;
}

/* Recompute a call site's answer for @tag (NULL keeps the site's own)
 * from the filter of @h, the default handle (NULL: none, log nothing). */
int shmlog__site_set(struct shmlog_site *site, struct shmlog *h, int prio,
		     const char *tag)
{
	pthread_mutex_lock(&filter_lock);
	if (tag)
		site->tag = tag;
	int level = SHMLOG_SILENT;
	uint32_t gen = no_default_gen;
	if (h) {
		gen = filter_refresh(h);
		level = shmlog__filter_level(h->filter, site->tag);
	}
	site->level = level;
	__atomic_store_n(&site->gen, gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&filter_lock);
	return prio >= level && level < SHMLOG_SILENT;
}

/* Take the spec's sequence lock. A setter that died holding it (odd for
 * longer than ~100 ms) is taken over. Returns the odd value held. */
static uint32_t spec_lock(struct shmlog__hdr *hdr)
{
	for (int tries = 0;; tries++) {
		uint32_t g = atomic_load(&hdr->config.filter_gen);
		if (g & 1) {
			if (tries >= 100)
				return g;
			struct timespec d = {0, 1000000};
			nanosleep(&d, NULL);
			continue;
		}
		/* LMM(filter:A) odd, by a seq_cst CAS (its acquire keeps the
		 * spec's stores after it); pairs with LMM(filter:D) */
		if (atomic_compare_exchange_strong(&hdr->config.filter_gen, &g,
						   g + 1))
			return g + 1;
	}
}

int shmlog_set_filter(const char *name, const char *spec, size_t *bad_offset)
{
	if (!spec)
		return -EINVAL;
	int err = shmlog_parse_filter(spec, bad_offset);
	if (err)
		return err;
	size_t n = strlen(spec);
	struct shmlog__seg s;
	if (n >= sizeof(((struct shmlog__hdr *)0)->spec))
		return -E2BIG;
	err = shmlog__seg_attach(name, SEG_WRITE, &s);
	if (err)
		return err;
	struct shmlog__hdr *hdr = s.hdr;
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		shmlog__guard_arm(&g, &s);
		uint32_t held = spec_lock(hdr);
		memcpy(hdr->spec, spec, n);
		hdr->spec[n] = '\0';
		hdr->config.spec_len = (uint32_t)n;
		uint32_t next = held + 1;
		if (next == 0 || next == no_default_gen)
			next = 2; /* 0 means "never" to a call site */
		/* LMM(filter:B) the spec before the even generation;
		 * pairs with LMM(filter:C) */
		atomic_store_explicit(&hdr->config.filter_gen, next,
				      memory_order_release);
		shmlog__guard_disarm();
	} else {
		shmlog__guard_recovered();
		err = -EIO; /* the file was truncated under us */
	}
	shmlog__seg_detach(&s);
	return err;
}

int shmlog_get_filter(const char *name, char *buf, size_t buflen)
{
	struct shmlog__seg s;
	int err = shmlog__seg_attach(name, 0, &s);
	if (err)
		return err;
	char spec[sizeof(s.hdr->spec) + 1];
	uint32_t gen;
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) == 0) {
		shmlog__guard_arm(&g, &s);
		if (!spec_read(s.hdr, spec, &gen))
			err = -EAGAIN;
		shmlog__guard_disarm();
	} else {
		shmlog__guard_recovered();
		err = -EIO; /* the file was truncated under us */
	}
	shmlog__seg_detach(&s);
	if (err)
		return err;
	size_t n = strlen(spec);
	if (n + 1 > buflen)
		return -ENAMETOOLONG;
	memcpy(buf, spec, n + 1);
	return (int)n;
}
