/* SPDX-License-Identifier: MIT */
/*
 * Which chunk a writer takes, and how: the chunk switch (step 0 of the
 * write in ring.c's design comment) and the append's slow path,
 * shmlog__ring_append(). The switch inlines the space policy's steps it
 * runs on every switch (a survey slice, a hint, a reserved chunk); in two
 * files each would be a call across files on every switch, with every
 * register the switch keeps live saved and restored around it
 * (docs/benchmarks.md, "Constants and choices in the source"). The
 * policy itself, which chunk to take (the order of preference), and the
 * pass over the descriptor table it answers from are in space_survey.c:
 * a writer runs that once per list of own chunks, not per switch.
 *
 * Taking a chunk is a compare-and-swap of its word from what the taker saw
 * (LIVE, some lane, some inc, or 0) to OPEN(new inc, taker's lane). The
 * whole word is the generation: inc only grows, so the CAS cannot succeed
 * on a chunk that changed hands meanwhile (no ABA). The one word that
 * comes back is a reserved chunk's, given back untouched to the lane it
 * was reserved from (resv_take()): its bytes never changed, so a CAS or a
 * reader's check that succeeds on it finds what it saw. A failed CAS means
 * somebody else took it, and departed writers found at their bound by the
 * time their chunk is looked for mean others took from them: look again,
 * at most TAKE_TRIES times in all, then drop the record (counted). Nobody
 * waits for anybody.
 *
 * ===================================================================
 * The switch
 * ===================================================================
 *
 * chunk_switch, once per chunk:
 *   a. PAD at head if head is not the chunk's end (zeros to the chunk's
 *      end, then its word); head = chunk end (release)      LMM(ring:E)
 *   b. the chunk's word OPEN -> LIVE (release): from now on it may be
 *      taken                                                LMM(ring:K)
 *   c. inc = the next of the writer's block (a fetch_add(epoch, 16) when
 *      it has none left); choose a chunk (space_survey.c)
 *   d. CAS its word to OPEN(inc, lane) (acq_rel)            LMM(ring:Q)
 *   e. release fence: the word changes before any byte of the
 *      chunk is rewritten                                   LMM(ring:R)
 *   f. reserve = head = the new chunk's base (release)      LMM(ring:E)
 * */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "append.h"
#include "internal.h"
#include "space_survey.h"

/* Does chunk word @a go before @b in what a lane gives up first? Its
 * reserved chunks, which hold no record, then its LIVE ones oldest first
 * (by base). */
static inline bool give_before(const struct shmlog__fixed *f, uint64_t a,
			       uint64_t b)
{
	bool ra = chunk_state(a) == CHUNK_RESV, rb = chunk_state(b) == CHUNK_RESV;
	if (ra != rb)
		return ra;
	return pos_before(chunk_base(f, a), chunk_base(f, b));
}

/* The first @max chunks lane @lane gives up, in that order (give_before():
 * its reserved chunks, then its LIVE ones oldest first), into @idx and
 * @word: how many; and in *@held how many chunks the lane holds (LIVE,
 * OPEN and reserved). One pass over the descriptor table. A reserved
 * chunk goes first: taking it costs the lane no record, where its LIVE
 * chunks are its history, and a lane that counts its reserved chunks in
 * its share would otherwise lose history for room it has not filled. */
static unsigned lane_oldest(const struct shmlog__seg *s, unsigned lane,
			    uint32_t *idx, uint64_t *word, unsigned max,
			    uint32_t *held)
{
	const struct shmlog__fixed *f = &s->fixed;
	unsigned n = 0;
	*held = 0;
	/* the departed's chunks in the lane are not its writer's to give
	 * (departed_take() takes them) nor to count */
	uint64_t mark = atomic_load_explicit(&seg_lane(s, lane)->claim_mark,
					     memory_order_relaxed);
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (chunk_lane(w) != lane || !chunk_held(f, w))
			continue;
		if (chunk_state(w) == CHUNK_LIVE && claim_before(w, mark))
			continue;
		++*held;
		if (chunk_state(w) == CHUNK_OPEN)
			continue;
		/* insertion into the sorted few */
		unsigned k = n < max ? n++ : max;
		while (k > 0 && give_before(f, w, word[k - 1])) {
			if (k < max) {
				idx[k] = idx[k - 1];
				word[k] = word[k - 1];
			}
			k--;
		}
		if (k < max) {
			idx[k] = i;
			word[k] = w;
		}
	}
	return n;
}

/* ---- the space policy: which chunk a writer takes -------------------- */

/* At most this many chunks a writer takes ahead (CHUNK_RESV), in a row
 * with the one it takes from another lane (chunk_pick()). */
#define RESV_MAX 8
/* A survey's pass runs on the last this many switches of the list (fewer
 * if the list is shorter), a slice of the table each. One: the whole
 * pass on the switch that takes the list's last chunk (survey_step). */
#define SURVEY_SPAN 1

struct shmlog__survey {
	uint32_t size; /* bytes of this mapping */
	uint32_t lanes; /* entries of held and seen */
	uint32_t at; /* descriptors of the pass read; NO_PASS: none */
	uint32_t start; /* the pass reads from here to the end, then on from 0 */
	uint32_t slice; /* descriptors read per switch in this pass */
	uint64_t below; /* the word of the chunk written when it began */
	/* every chunk below it has been used; a reserved chunk given back
	 * (resv: 0 again) is found by the next pass (survey_step()) */
	uint32_t fresh;
	uint32_t own_n, own_at; /* the list in use; own_at <= own_n */
	/* chunks reserved for us, to take in this order (chunk_pick()) */
	uint32_t resv_n, resv_at;
	uint32_t resv_idx[RESV_MAX];
	uint64_t resv_word[RESV_MAX];
	uint32_t own_idx[OWN_LIST];
	uint64_t own_word[OWN_LIST];
	struct survey_acc acc;
	/* mark[lanes], then held[lanes], pre[lanes], seen[lanes] (uint16_t) */
	uint64_t arrays[];
};

static void acc_reset(struct survey_acc *a)
{
	for (uint32_t k = 0; k < a->seen_n; k++) {
		a->held[a->seen[k]] = 0;
		if (a->pre)
			a->pre[a->seen[k]] = 0;
	}
	a->seen_n = 0;
	a->zero = NO_PASS;
	a->cand_n = 0;
	a->pre_me = 0;
}

/* Forget the list of own chunks to take. Both counters together: a list
 * shortened under its cursor (own_at > own_n) would be read past its end,
 * and the words there taken for chunk indices. */
static inline void own_list_drop(struct shmlog__survey *sv)
{
	sv->own_n = sv->own_at = 0;
}

/* The pass's own oldest chunks, those whose words are still what the
 * pass read (we took some of them meanwhile), become the list to take.
 * @below (non-zero): a pass spread over switches lists only chunks older
 * than @below, the chunk we were writing when it began: one we took or
 * closed during the pass may have been read before (a stale word) or
 * after (a young chunk of ours), and a list holding the second but not
 * the first would recycle a chunk younger than one it left: a hole in
 * the lane's history. Everything older was ours throughout. */
static void survey_install(const struct shmlog__seg *s,
			   struct shmlog__survey *sv, uint32_t skip,
			   uint64_t below)
{
	uint32_t n = 0;
	for (uint32_t k = skip; k < sv->acc.cand_n; k++) {
		if (below && !inc_before(sv->acc.cand_word[k], below))
			break; /* sorted: the rest are younger still */
		if (atomic_load_explicit(seg_chunk(s, sv->acc.cand_idx[k]),
					 memory_order_relaxed) !=
		    sv->acc.cand_word[k])
			continue;
		sv->own_idx[n] = sv->acc.cand_idx[k];
		sv->own_word[n++] = sv->acc.cand_word[k];
	}
	sv->own_n = n;
	sv->own_at = 0;
}

/* What the departed hold now, counted as shmlog__survey_decide() counts
 * them from the pass @a (whose lanes it knows the writers of), and their
 * oldest LIVE chunk into *@idx and *@word (*@word 0: none). They lose
 * their oldest records first, so what they keep is their newest,
 * whichever lanes the writers that came and went used. A chunk is the
 * departed's if its lane has no writer, or if it is older than its
 * writer's claim (claim_mark). One more pass over the table, on the
 * switches that take from the departed only (while they hold more than
 * their bound). */
static int64_t departed_scan(const struct shmlog__seg *s,
			     const struct survey_acc *a, unsigned *idx,
			     uint64_t *word)
{
	const struct shmlog__fixed *f = &s->fixed;
	int64_t count = 0;
	uint64_t oldest = 0;
	for (uint32_t i = 0; i < f->chunk_count; i++) {
		uint64_t d = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (!chunk_held(f, d))
			continue;
		unsigned l = chunk_lane(d);
		uint32_t h = a->held[l];
		if (!h)
			continue; /* a lane the pass did not see */
		bool live = chunk_state(d) == CHUNK_LIVE;
		if ((h & HELD_OWNED) &&
		    !(live && claim_before(d, atomic_load_explicit(
						      &seg_lane(s, l)->claim_mark,
						      memory_order_relaxed))))
			continue; /* its writer's */
		count++;
		if (live && (!oldest || inc_before(d, oldest))) {
			oldest = d;
			*idx = i;
		}
	}
	*word = oldest;
	return count;
}

/* What chunk_pick() found: a chunk to take, none, or the departed had
 * come down to their bound meanwhile (ask the policy again). */
enum pick { PICK_NONE, PICK_TAKE, PICK_AGAIN };

/* The departed's oldest LIVE chunk, while they hold more than their
 * bound (a->departed_cap), counted as the chunk is looked for: the pass
 * that decided for them was read a while ago, and other writers may have
 * taken from them since, on the same count. Each took one then: with
 * four flooders beside a departed writer at its bound plus one, the
 * departed kept two chunks less than their bound. PICK_AGAIN if they are
 * at the bound now: the policy is asked again. */
static enum pick departed_take(const struct shmlog__seg *s,
			       const struct survey_acc *a, unsigned *out,
			       uint64_t *word)
{
	TESTPOINT(18); /* decided for the departed, not looked yet */
	if (departed_scan(s, a, out, word) <= a->departed_cap || !*word)
		return PICK_AGAIN;
	return PICK_TAKE;
}

/* Taking chunk @at from lane @victim (which held @now chunks), also take
 * its next oldest ones for ourselves, up to what we lack of our share
 * (@share; @mine held) and it holds above its own (@vshare), to write
 * into one by one: they are reserved (CHUNK_RESV), no record in them,
 * readers skip them. Without it the taker and a victim that recycles its
 * own oldest chunk take that writer's chunks in turn, and theirs end up
 * interleaved one by one (fresh_stretch(): about a tenth of each one's
 * rate);
 * with it the taker's come in rows. No more than the chunks we have
 * written since the lane was claimed (a writer that logs once and goes
 * takes one), nor RESV_MAX. The victim loses its reserved chunks first,
 * then its oldest, as it would chunk by chunk. */
static void resv_take(const struct shmlog__seg *s, struct shmlog__wlane *w,
		      struct shmlog__survey *sv, unsigned victim, unsigned at,
		      int64_t now, int64_t vshare, int64_t share, int64_t mine)
{
	sv->resv_n = sv->resv_at = 0;
	int64_t k = share - mine - 1; /* we lack, after this chunk */
	if (now - vshare - 1 < k)
		k = now - vshare - 1; /* it holds above its share, after it */
	if ((int64_t)w->switches < k)
		k = w->switches;
	if (k > RESV_MAX)
		k = RESV_MAX;
	if (k <= 0)
		return;
	uint32_t idx[RESV_MAX + 1];
	uint64_t word[RESV_MAX + 1], was[RESV_MAX];
	uint32_t held;
	unsigned n = lane_oldest(s, victim, idx, word, (unsigned)k + 1, &held);
	for (unsigned j = 0; j < n && sv->resv_n < (uint32_t)k; j++) {
		if (idx[j] == at)
			continue;
		uint64_t old = word[j];
		uint64_t resv = old >> CHUNK_INC_SHIFT << CHUNK_INC_SHIFT |
				(uint64_t)w->lane << CHUNK_LANE_SHIFT |
				CHUNK_RESV;
		if (!atomic_compare_exchange_strong_explicit(
			    seg_chunk(s, idx[j]), &old, resv,
			    memory_order_acq_rel, memory_order_relaxed))
			break; /* its owner took it: the row ends here */
		was[sv->resv_n] = word[j];
		sv->resv_idx[sv->resv_n] = idx[j];
		sv->resv_word[sv->resv_n++] = resv;
	}
	if (!sv->resv_n)
		return;
	TESTPOINT(16); /* reserved; the lane not counted again */
	/* Others may have taken from it meanwhile, on the same count (two
	 * takers at once, or one that was preempted between its count and
	 * its CASes): a writer that then stops writing would keep less than
	 * its share for good. Count again, and give the youngest of the
	 * reserved chunks back until it holds its share once we have taken
	 * @at: untouched, they still hold its records, and its history stays
	 * its newest records without a hole. (One that was its own reserved
	 * chunk goes back reserved; if its writer released the lane
	 * meanwhile, the lane's next claim gives it back, lane_resume().) */
	lane_oldest(s, victim, idx, word, 0, &held);
	for (int64_t under = vshare + 1 - (int64_t)held;
	     under > 0 && sv->resv_n; under--) {
		uint32_t j = --sv->resv_n;
		uint64_t resv = sv->resv_word[j];
		atomic_compare_exchange_strong_explicit(
			seg_chunk(s, sv->resv_idx[j]), &resv, was[j],
			memory_order_acq_rel, memory_order_relaxed);
	}
}

/* The chunk the writer of lane w->lane takes next, asking the policy
 * whole (one pass over the table): a never-used one, else the oldest
 * LIVE chunk of the lane furthest above its fair share, else the taker's
 * own oldest LIVE chunk. *@word is what the descriptor held (the CAS's
 * expected value). With a survey, the next few own chunks are listed
 * too. PICK_NONE: no chunk can be taken (every chunk is some live
 * writer's OPEN one); PICK_AGAIN: the departed came down to their bound
 * meanwhile (departed_take()). */
static enum pick chunk_pick(const struct shmlog__seg *s, struct shmlog__wlane *w,
		       struct shmlog__survey *sv, unsigned *out, uint64_t *word)
{
	const struct shmlog__fixed *f = &s->fixed;
	uint32_t held[SHMLOG_LANES_MAX], pre[SHMLOG_LANES_MAX];
	uint16_t seen[SHMLOG_LANES_MAX];
	struct survey_acc stack_acc, *a = &stack_acc;
	if (sv) {
		a = &sv->acc;
		sv->at = NO_PASS; /* a pass in progress is given up */
		own_list_drop(sv);
		acc_reset(a);
	} else {
		memset(held, 0, f->lane_count * sizeof(held[0]));
		memset(pre, 0, f->lane_count * sizeof(pre[0]));
		a->held = held;
		a->seen = seen;
		a->mark = NULL; /* read from the lanes as the pass goes */
		a->pre = pre;
		a->seen_n = a->cand_n = a->pre_me = 0;
		a->zero = NO_PASS;
	}
	shmlog__survey_scan(s, w->lane, w->claim_mark, a, 0, f->chunk_count,
			    true);
	if (a->zero != NO_PASS) {
		*out = a->zero;
		*word = 0;
		return PICK_TAKE;
	}
	unsigned victim = shmlog__survey_decide(s, w->lane, a);
	if (victim == UINT_MAX)
		return PICK_NONE;
	if (victim == VICTIM_DEPARTED)
		return departed_take(s, a, out, word);
	if (victim == w->lane) {
		if (!a->cand_n)
			return PICK_NONE;
		*out = a->cand_idx[0];
		*word = a->cand_word[0];
		if (sv) /* the next oldest, for the switches to come */
			survey_install(s, sv, 1, 0);
		return PICK_TAKE;
	}
	/* The table was read word by word while chunks changed hands: look
	 * at the victim once more, as it is now, and take from another
	 * writer only if it is still above its share. */
	uint32_t now = 0, at;
	int64_t n = a->n, cc = f->chunk_count;
	int64_t keep = a->departed < a->departed_cap ? a->departed
						     : a->departed_cap;
	int64_t share = (cc - keep) / n;
	if (!lane_oldest(s, victim, &at, word, 1, &now))
		return PICK_NONE;
	if ((int64_t)now * n <= cc - keep &&
	    (a->held[w->lane] & HELD_OWN_LIVE)) {
		/* no longer above its share: our own oldest instead */
		if (!a->cand_n)
			return PICK_NONE;
		*out = a->cand_idx[0];
		*word = a->cand_word[0];
		return PICK_TAKE;
	}
	*out = at;
	if (sv)
		resv_take(s, w, sv, victim, at, now, share, share,
			  (a->held[w->lane] & HELD_COUNT) - a->pre_me);
	return PICK_TAKE;
}

/* The survey of an exclusive lane's writer, mapped on its first switch
 * (private, a page or two: lane_count counters). NULL for a shared lane
 * (lent for one record) or if it cannot be had: each switch then asks
 * the policy whole. */
static struct shmlog__survey *survey_of(const struct shmlog__seg *s,
					struct shmlog__wlane *w)
{
	const struct shmlog__fixed *f = &s->fixed;
	struct shmlog__survey *sv = w->survey;
	if (SHMLOG_LIKELY(sv && sv->lanes == f->lane_count))
		return sv;
	if (w->lane >= shmlog__lanes_exclusive(f) || w->survey_failed)
		return NULL;
	if (sv) { /* made for another buffer */
		munmap(sv, sv->size);
		w->survey = NULL;
	}
	size_t size = sizeof(*sv) +
		      (size_t)f->lane_count *
			      (sizeof(uint64_t) + 2 * sizeof(uint32_t) +
			       sizeof(uint16_t));
	size = (size + SHMLOG__PAGE - 1) & ~(size_t)(SHMLOG__PAGE - 1);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		w->survey_failed = true;
		return NULL;
	}
	sv = p;
	sv->size = (uint32_t)size;
	sv->lanes = f->lane_count;
	sv->at = NO_PASS;
	sv->acc.mark = sv->arrays;
	sv->acc.held = (uint32_t *)(void *)(sv->acc.mark + f->lane_count);
	sv->acc.pre = sv->acc.held + f->lane_count;
	sv->acc.seen = (uint16_t *)(void *)(sv->acc.pre + f->lane_count);
	sv->acc.zero = NO_PASS;
	w->survey = sv;
	return sv;
}

/* A part of the survey, after a switch that took one of the listed own
 * chunks: the list's last SURVEY_SPAN switches (all of a shorter list's)
 * read the table once, a slice each, and the pass's answer replaces the
 * list before it runs out. The switches before them do none of it. With
 * SURVEY_SPAN 1 the pass is one switch's, the one that takes the list's
 * last chunk: one switch in about 60 for a lone writer with the default
 * buffer. A slice's cost is mostly its first touch of lines that the
 * records written since the last pass evicted (the survey's arrays, the
 * table), not its instructions, so a pass split over several switches
 * costs each of them most of a whole pass: one pass on one switch puts
 * the cost on the fewest calls (docs/benchmarks.md, "Constants and
 * choices in the source").
 * Nothing while the buffer still has never-used chunks, nor while the
 * policy's last answer was another lane's chunk (each switch asks it
 * whole then). */
static void survey_step(const struct shmlog__seg *s, struct shmlog__wlane *w,
			struct shmlog__survey *sv)
{
	uint32_t cc = s->fixed.chunk_count;
	if (sv->at == NO_PASS) {
		if (sv->fresh < cc || sv->own_n == 0)
			return;
		/* the pass runs on the list's last switches: this one and
		 * one per chunk left on it */
		uint32_t left = sv->own_n - sv->own_at;
		if (left >= SURVEY_SPAN)
			return;
		sv->slice = (cc + left) / (left + 1);
		/* from the oldest chunk on: oldest first in table order */
		sv->start = sv->own_idx[sv->own_at < sv->own_n ? sv->own_at
							       : sv->own_n - 1];
		if (sv->start >= cc)
			sv->start = 0;
		sv->below = w->cword;
		acc_reset(&sv->acc);
		sv->at = 0;
	}
	uint32_t end = cc - sv->at > sv->slice ? sv->at + sv->slice : cc;
	/* [at, end) of the pass, in the table from start on, circularly */
	uint32_t lo = sv->start + sv->at, hi = sv->start + end;
	if (lo < cc)
		shmlog__survey_scan(s, w->lane, w->claim_mark, &sv->acc, lo,
			    hi < cc ? hi : cc, false);
	if (hi > cc)
		shmlog__survey_scan(s, w->lane, w->claim_mark, &sv->acc,
			    lo > cc ? lo - cc : 0,
			    hi - cc, false);
	sv->at = end;
	if (end < cc)
		return;
	sv->at = NO_PASS;
	if (sv->acc.zero != NO_PASS) { /* a never-used chunk: take it next */
		sv->fresh = sv->acc.zero;
		return;
	}
	if (shmlog__survey_decide(s, w->lane, &sv->acc) == w->lane)
		survey_install(s, sv, 0, sv->below);
	else
		own_list_drop(sv); /* another lane is above its share */
}

void shmlog__wlane_forget(struct shmlog__wlane *w)
{
	if (w->survey)
		munmap(w->survey, w->survey->size);
	memset(w, 0, sizeof(*w));
}

/* Forget what a survey knows of the lane it was made for: its pass, its
 * list of own chunks, its reserved chunks, its never-used mark (lane.c: a
 * claim resumes a lane, maybe another one). */
void shmlog__survey_forget(struct shmlog__survey *sv)
{
	sv->at = NO_PASS;
	own_list_drop(sv);
	sv->resv_n = sv->resv_at = 0;
	sv->fresh = 0;
}

/* Forget the chunks reserved for the lane (lane.c: it was given back,
 * and its reserved chunks with it). */
void shmlog__survey_resv_drop(struct shmlog__survey *sv)
{
	sv->resv_n = sv->resv_at = 0;
}

/* ---- writer side ---------------------------------------------------- */

/* Make pages [@a, @b) resident and writable in this process. */
static void pages_prefault(uintptr_t a, uintptr_t b)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0)
		return;
#endif
	/* Older kernels: a write fault per page that changes nothing. */
	for (uintptr_t p = a; p < b; p += SHMLOG__PAGE)
		atomic_fetch_add_explicit((_Atomic uint64_t *)p, 0,
					  memory_order_relaxed);
}

/* Buffers up to this much data are made resident whole, with one call,
 * the first time a writer of the process takes a chunk; larger ones a
 * chunk at a time (page tables for gigabytes a writer may never touch). */
#define PREFAULT_WHOLE (64u << 20)

/* Make chunk @i's pages resident and writable in this process, once per
 * handle, so that appends take no page fault. */
static void chunk_prefault(const struct shmlog__seg *s, struct shmlog *h,
			   unsigned i)
{
	const struct shmlog__fixed *f = &s->fixed;
	if (!h || !h->prefaulted ||
	    atomic_load_explicit(&h->prefaulted[i], memory_order_relaxed))
		return;
	uint64_t data = (uint64_t)f->chunk_count * f->chunk_size;
	if (data <= PREFAULT_WHOLE) {
		/* the first chunk of this handle: all of them at once */
		if (atomic_exchange_explicit(&h->prefaulted[0], 2,
					     memory_order_relaxed) == 2)
			return;
		uintptr_t a = (uintptr_t)seg_chunk_data(s, 0);
		pages_prefault(a, a + data);
		for (unsigned k = 0; k < f->chunk_count; k++)
			atomic_store_explicit(&h->prefaulted[k], 2,
					      memory_order_relaxed);
		return;
	}
	if (atomic_exchange_explicit(&h->prefaulted[i], 1,
				     memory_order_relaxed))
		return;
	uintptr_t a = (uintptr_t)seg_chunk_data(s, i);
	pages_prefault(a, a + f->chunk_size);
}

/* Lines at the start of a chunk taken that the writer asks for, for
 * writing, as it takes the chunk: 1 KiB, a sixteenth of the default
 * chunk. Where two writers' chunks lie interleaved in memory (writers
 * that came and went leave them so, docs/DESIGN.md), the first lines of
 * a chunk may sit in the other writer's core, fetched there by its
 * prefetcher running past the end of a chunk of its own, and every first
 * store to one waits for it. Asked for at the switch, they come while
 * the first records are built. Asked every time, not only where a
 * neighbour in the table is another writer's: the neighbours that count
 * are physical, which the table only suggests. The figures behind 16
 * and PREFETCHW: docs/benchmarks.md, "Constants and choices in the
 * source". */
#define CHUNK_CLAIM_LINES 16

#if defined(__x86_64__) || defined(__i386__)
/* PREFETCHW: AMD's since the K6-2, Intel's since Broadwell (CPUID
 * 0x80000001, ECX bit 8); the same answer in any thread. */
static bool have_prefetchw(void)
{
	/* 0: not known yet, 1: no, 2: yes */
	static _Atomic int known;
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (SHMLOG_UNLIKELY(!k)) {
		unsigned a, b, c, d;
		k = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & 1u << 8)
			    ? 2
			    : 1;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 2;
}
#endif

static void chunk_claim_lines(const unsigned char *data)
{
#if defined(__x86_64__) || defined(__i386__)
	if (!have_prefetchw())
		return;
	for (int k = 0; k < CHUNK_CLAIM_LINES; k++)
		__asm__ volatile("prefetchw %0" ::"m"(data[64 * k]));
#else
	for (int k = 0; k < CHUNK_CLAIM_LINES; k++)
		__builtin_prefetch(data + 64 * k, 1, 3);
#endif
}
/* Incarnations a writer reserves at once: the epoch's line, which every
 * writer of every process writes, is written once per INC_BLOCK chunks
 * taken, not once per chunk. */
#define INC_BLOCK 16

/* A new incarnation number for the lane @w owns, never 0: the next of its
 * block, reserved after the lane was claimed, so larger than any its
 * chunks have (positions grow along a lane) and unique (no ABA). */
static uint64_t chunk_inc(const struct shmlog__seg *s, struct shmlog__wlane *w)
{
	for (;;) {
		while (w->inc_next != w->inc_end) {
			uint64_t inc = w->inc_next++ & CHUNK_INC_MASK;
			if (inc)
				return inc;
		}
		w->inc_next = atomic_fetch_add_explicit(&seg_space(s)->epoch,
							INC_BLOCK,
							memory_order_relaxed) +
			      1;
		w->inc_end = w->inc_next + INC_BLOCK;
	}
}

/* End the OPEN chunk with a PAD at the writer's head (switch step a).
 * Readers read only a PAD's word, but the whole rest of the chunk is
 * zeroed too (the seq slot aside: the lane's last number): the bytes
 * behind a PAD were left by the chunk's earlier incarnation, often a
 * whole record of another lane, and a word given another state (a
 * hostile write: COMMITTED, TORN), or moved, would make them one again:
 * an old record shown after newer ones of its writer, or a number far
 * above the lane's taken as its last. Zeroed, they frame no record (a
 * length of 0, priority 0) whatever is done to the word. Fewer bytes
 * than the record that did not fit, once per chunk; before the word,
 * which is stored with release. */
static void pad_write(struct shmlog__wlane *w)
{
	struct shmlog__rec *r = rec_at(w->cdata, w->head - w->cbase);
	memset((char *)r + sizeof(r->word), 0,
	       (size_t)(w->cend - w->head) - sizeof(r->word));
	if (w->cend - w->head >= REC_HDR)
		r->seq = w->seq - 1;
	atomic_store_explicit(&r->word, w->head | REC_PAD,
			      memory_order_release);
}

#define TAKE_TRIES 16

/* Take chunk @i, whose word was @old, as the writer's OPEN chunk of
 * incarnation @inc (steps d-f). false: somebody else took it first. */
static inline bool chunk_take(const struct shmlog__seg *s,
			      struct shmlog__wlane *w, unsigned i, uint64_t old,
			      uint64_t inc)
{
	uint64_t open = chunk_word(inc, w->lane, CHUNK_OPEN);
	/* Every index a switch takes comes from a pass over the table or a
	 * list made from one; checked here, where it becomes an address,
	 * so that no slip in the lists' bookkeeping writes outside it. */
	if (SHMLOG_UNLIKELY(i >= s->fixed.chunk_count))
		return false;
	if (!atomic_compare_exchange_strong_explicit(
		    seg_chunk(s, i), &old, open, memory_order_acq_rel,
		    memory_order_relaxed)) /* d: LMM(ring:Q), acquires ring:K */
		return false;
	/* e: LMM(ring:R) the new word before any byte of the chunk is
	 * rewritten; pairs with the readers' LMM(ring:G) */
	shmlog__fence_release();
	TESTPOINT(12);
	chunk_install(s, w, i, open);
	w->head = w->cbase; /* f */
	atomic_store_explicit(&w->ctl->reserve, w->head, memory_order_relaxed);
	/* LMM(ring:E) the new chunk's word before the head in it */
	atomic_store_explicit(&w->ctl->head, w->head,
			      memory_order_release);
	TESTPOINT(13);
	return true;
}

/* Where a writer starts in a buffer that still has never-used chunks,
 * having none before it (@last: CHUNK_NONE) or not the one after its
 * last: the middle of the longest stretch of never-used chunks, the
 * table's start if all are. Writers that start together so take the
 * buffer in stretches, each going on into the chunk after its last,
 * rather than turn about chunk by chunk: interleaved chunks cost each
 * writer about a tenth of its rate (docs/DESIGN.md, the space policy).
 * Once per switch while the buffer has never-used chunks: a read of the
 * table. */
static unsigned fresh_stretch(const struct shmlog__seg *s, uint32_t from)
{
	uint32_t cc = s->fixed.chunk_count, best = cc, best_n = 0, run = 0;
	for (uint32_t i = from; i <= cc; i++) {
		if (i < cc && atomic_load_explicit(seg_chunk(s, i),
						   memory_order_relaxed) == 0) {
			run++;
			continue;
		}
		if (run > best_n) {
			best_n = run;
			best = i - run;
		}
		run = 0;
	}
	if (!best_n)
		return cc;
	/* all of it never used: its start; else past a stretch's middle, so
	 * that the writer before it has as much room to go on into */
	return best_n == cc ? 0 : best + best_n / 2;
}

/* The chunk to take next, from the survey's hints: a never-used one (the
 * one after @last if it is, else fresh_stretch()'s), else our own next
 * oldest as the survey said last (*@listed). false: neither, ask the
 * policy whole. */
static inline bool chunk_hint(const struct shmlog__seg *s,
			      struct shmlog__survey *sv, uint32_t last,
			      unsigned *i, uint64_t *old, bool *listed)
{
	uint32_t cc = s->fixed.chunk_count;
	/* never-used chunks first; the hint only moves up (a reserved
	 * chunk given back below it is the next pass's to find) */
	if (SHMLOG_UNLIKELY(sv->fresh < cc)) {
		while (sv->fresh < cc &&
		       atomic_load_explicit(seg_chunk(s, sv->fresh),
					    memory_order_relaxed) != 0)
			sv->fresh++;
		uint32_t at = last + 1;
		if (last == CHUNK_NONE || at >= cc ||
		    atomic_load_explicit(seg_chunk(s, at),
					 memory_order_relaxed) != 0)
			at = fresh_stretch(s, sv->fresh);
		if (at < cc) {
			*i = at;
			*old = 0;
			*listed = false;
			return true;
		}
		sv->fresh = cc; /* none left */
	}
	if (sv->resv_at < sv->resv_n) { /* ours, in a row (resv_take()) */
		*i = sv->resv_idx[sv->resv_at];
		*old = sv->resv_word[sv->resv_at++];
		*listed = false;
		return true;
	}
	if (sv->own_at >= sv->own_n)
		return false;
	*i = sv->own_idx[sv->own_at];
	*old = sv->own_word[sv->own_at++];
	*listed = true;
	return true;
}

/* The record does not fit the OPEN chunk (or there is none): end it and
 * take another (steps a-f in the design comment). false: none could be
 * had; the writer is left without a chunk and the record is dropped.
 * The common switch, a lone writer's or one at or under its share, is
 * steps a-f on the chunk its survey listed: no loop, no look at the
 * table (the survey's slice aside). */
static __attribute__((noinline)) bool
chunk_switch(const struct shmlog__seg *s, struct shmlog__wlane *w)
{
	struct shmlog__lane *ctl = w->ctl;
	uint32_t last = w->chunk;
	uint64_t last_word = chunk_id(w->cword) | CHUNK_LIVE;
	if (last != CHUNK_NONE) {
		if (w->head != w->cend) { /* a: PAD to the chunk's end */
			pad_write(w);
			TESTPOINT(2);
			w->head = w->cend;
			atomic_store_explicit(&ctl->reserve, w->head,
					      memory_order_relaxed);
			/* LMM(ring:E) the PAD before the head past it */
			atomic_store_explicit(&ctl->head, w->head,
					      memory_order_release);
		}
		TESTPOINT(10);
		/* b: OPEN -> LIVE; a CAS, not a store: a hostile file may
		 * have changed the word. The writer's view of the chunk is
		 * replaced when it takes the next one (chunk_none() if it
		 * takes none). */
		uint64_t open = w->cword;
		atomic_compare_exchange_strong_explicit(
			w->cdesc, &open, last_word, memory_order_release,
			memory_order_relaxed); /* LMM(ring:K): records, then LIVE */
		TESTPOINT(11);
	}
	/* the file was removed: its records are lost to every reader; take
	 * no more of it, and the write says so (-ESTALE). A relaxed load of
	 * the read-mostly line every write reads already (filter_gen). */
	if (SHMLOG_UNLIKELY(shmlog__seg_removed(s))) {
		chunk_none(w);
		return false;
	}
	uint64_t inc = chunk_inc(s, w); /* c */
	struct shmlog__survey *sv = survey_of(s, w);
	for (int t = 0; t < TAKE_TRIES; t++) {
		unsigned i;
		uint64_t old;
		bool listed = false;
		enum pick p = PICK_TAKE;
		if (!(sv && chunk_hint(s, sv, last, &i, &old, &listed)))
			p = chunk_pick(s, w, sv, &i, &old);
		if (p == PICK_NONE)
			break;
		if (p == PICK_AGAIN)
			continue;
		if (SHMLOG_UNLIKELY(!chunk_take(s, w, i, old, inc))) {
			if (listed) /* taken from us: ask the policy */
				own_list_drop(sv);
			continue;
		}
		chunk_prefault(s, w->h, i);
		chunk_claim_lines(w->cdata);
		w->switches++;
		if (sv)
			survey_step(s, w, sv);
		return true;
	}
	/* Nothing to take: every chunk is some live writer's OPEN one, or
	 * the table was scribbled on. The chunk we just filled is ours: go
	 * on in it, a new incarnation, rather than lose every record. */
	chunk_none(w);
	if (last == CHUNK_NONE || !chunk_take(s, w, last, last_word, inc))
		return false; /* none, or taken meanwhile */
	return true;
}

/* The append, steps 0-5: the record fits the OPEN chunk (append.h), or a
 * chunk is switched to first. */
bool shmlog__ring_append(const struct shmlog__seg *s, struct shmlog__wlane *w,
			 uint64_t time, uint64_t meta, const char *tag,
			 uint64_t tword, const char *msg)
{
	if (SHMLOG_LIKELY(shmlog__append_fit(w, time, meta, tag,
					     META_TAG_LEN(meta), tword, msg,
					     META_MSG_LEN(meta))))
		return true;
	return shmlog__ring_append_next(s, w, time, meta, tag, tword, msg);
}

bool shmlog__ring_append_next(const struct shmlog__seg *s,
			      struct shmlog__wlane *w, uint64_t time,
			      uint64_t meta, const char *tag, uint64_t tword,
			      const char *msg)
{
	uint32_t tag_len = META_TAG_LEN(meta), msg_len = META_MSG_LEN(meta);
	uint32_t len = rec_len(tag_len, msg_len);
	if (!shmlog__ring_make_room(s, w, len))
		return false;
	return shmlog__append_fit(w, time, meta, tag, tag_len, tword, msg,
				  msg_len);
}

bool shmlog__ring_make_room(const struct shmlog__seg *s,
			    struct shmlog__wlane *w, uint32_t len)
{
	/* the OPEN chunk's word changed: the file was scribbled on, and
	 * another writer may take the chunk: leave it to them */
	if (w->chunk != CHUNK_NONE &&
	    atomic_load_explicit(w->cdesc, memory_order_relaxed) != w->cword) {
		w->head = w->cend; /* no PAD: not ours to write */
		chunk_none(w);
	}
	return w->cend - w->head >= len || chunk_switch(s, w);
}
