/* SPDX-License-Identifier: MIT */
/*
 * The append of one record into the OPEN chunk of the lane a writer owns,
 * steps 1-5 of the writer in ring.c's design comment, inline: it is the
 * whole write path of a call, and a call into another file costs the
 * saving and restoring of every register the caller keeps live. space.c
 * (shmlog__ring_append: a chunk to switch to first) and writer.c (the
 * common case: the record fits) both append through it. The protocol,
 * its memory-ordering labels and the test points stay the ones ring.c
 * describes.
 */
#ifndef SHMLOG_APPEND_H
#define SHMLOG_APPEND_H

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "internal.h"

/* Copies of 8 and 16 bytes as single moves (fixed-size memcpy). */
static inline void copy8(char *d, const char *s)
{
	memcpy(d, s, 8);
}
static inline void copy16(char *d, const char *s)
{
	memcpy(d, s, 16);
}

/* Copy @n bytes, n <= 128, inline: a log message is short, and a library
 * call would cost more than the copy. Overlapping moves of 16 (8, 4)
 * bytes cover the range; nothing is read or written outside [s, s+n),
 * [d, d+n). Longer messages go to memcpy(). */
static inline void copy_short(char *d, const char *s, uint32_t n)
{
	if (n >= 16) {
		copy16(d, s);
		if (n > 32) {
			copy16(d + 16, s + 16);
			if (n > 64) {
				copy16(d + 32, s + 32);
				copy16(d + 48, s + 48);
				if (n > 96) {
					copy16(d + 64, s + 64);
					copy16(d + 80, s + 80);
				}
			}
			copy16(d + n - 32, s + n - 32);
		}
		copy16(d + n - 16, s + n - 16);
	} else if (n >= 8) {
		copy8(d, s);
		copy8(d + n - 8, s + n - 8);
	} else if (n >= 4) {
		memcpy(d, s, 4);
		memcpy(d + n - 4, s + n - 4, 4);
	} else if (n) {
		d[0] = s[0];
		d[n / 2] = s[n / 2];
		d[n - 1] = s[n - 1];
	}
}

static inline void copy_msg(char *d, const char *s, uint32_t n)
{
	if (SHMLOG_LIKELY(n <= 128))
		copy_short(d, s, n);
	else
		memcpy(d, s, n);
}

/* The length of @tag (at most @max bytes counted) and, for a tag shorter
 * than 8 bytes, its bytes zero-padded to 8 in *@word (the record takes
 * them with one store). A tag is a few bytes: one load of 8, where they
 * do not cross a page boundary, finds its end; reading past a string
 * inside its page cannot fault (the C library's strlen does the same).
 * Builds under AddressSanitizer or ThreadSanitizer measure it with
 * strnlen(), which the sanitizers understand (the bytes past the NUL may
 * be another object's, or written by another thread). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SHMLOG__EXACT_READS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SHMLOG__EXACT_READS 1
#endif
#endif

static inline uint32_t tag_measure(const char *tag, uint32_t max,
				   uint64_t *word)
{
#ifndef SHMLOG__EXACT_READS
	if (SHMLOG_LIKELY(((uintptr_t)tag & (SHMLOG__PAGE - 1)) <=
			  SHMLOG__PAGE - 8)) {
		uint64_t v;
		memcpy(&v, tag, 8); /* little-endian: byte 0 lowest */
		uint64_t zero = (v - UINT64_C(0x0101010101010101)) & ~v &
				UINT64_C(0x8080808080808080);
		if (SHMLOG_LIKELY(zero)) {
			/* the lowest flag is exact: bit 7 of the first NUL;
			 * the bytes from the NUL on are not the tag's:
			 * zeroed, never copied into the record */
			*word = v & ((zero ^ (zero - 1)) >> 8);
			return (uint32_t)__builtin_ctzll(zero) >> 3;
		}
	}
#endif
	size_t n = strnlen(tag, max);
	*word = 0;
	if (n < 8)
		memcpy(word, tag, n);
	return (uint32_t)n;
}

/* Step 1, for both appends below: room for @len bytes at @pos (the
 * lane's head) in the OPEN chunk, and the chunk's word still naming it
 * ours; then the lane's reserve word at the record's end, ordered before
 * the record's stores. false, with nothing written: no chunk (cend ==
 * head), a full one, or a scribbled word. Our OPEN chunk is ours as long
 * as its word says so: nobody else changes it, unless the file was
 * scribbled on; one load of a line written once per chunk. */
static inline __attribute__((always_inline)) bool
append_reserve(struct shmlog__wlane *w, uint64_t pos, uint32_t len)
{
	if (SHMLOG_UNLIKELY(w->cend - pos < len) ||
	    SHMLOG_UNLIKELY(atomic_load_explicit(w->cdesc,
						 memory_order_relaxed) !=
			    w->cword))
		return false;
	atomic_store_explicit(&w->ctl->reserve, pos + len,
			      memory_order_relaxed);
	/* LMM(ring:C) the reservation before the record's bytes: a claimer
	 * that finds this writer dead (its lock is a full barrier) repairs
	 * [head, reserve) */
	shmlog__fence_release();
	TESTPOINT(1);
	return true;
}

/* Where shmlog__append_begin() reserved a record, for the commit. */
struct shmlog__append_at {
	unsigned char *msg;
	struct shmlog__rec *r;
	uint64_t pos, end, seq;
};

/* The commit tail, steps 3-5, the one place a record is published: its
 * word (LMM(ring:D)), the lane's head (LMM(ring:E)), the next sequence
 * number, for the record @r at @pos, ending at @end, numbered @seq, whose bytes are
 * written. Every append ends here (shmlog__append_fit_as(),
 * shmlog__append_commit()); step 6 is shmlog__append_wake_due(). @ctl is
 * w->ctl, loaded by the caller before it wrote the record (the record's
 * stores could alias it for the compiler). */
static inline __attribute__((always_inline)) void
append_publish(struct shmlog__wlane *w, struct shmlog__lane *ctl,
	       struct shmlog__rec *r, uint64_t pos, uint64_t end, uint64_t seq)
{
	TESTPOINT(4);
	/* LMM(ring:D) the record whole before its word names it */
	atomic_store_explicit(&r->word, pos | REC_COMMITTED,
			      memory_order_release);
	TESTPOINT(5);
	/* LMM(ring:E) the record before the head that publishes it; pairs
	 * with the reader's acquire of head, LMM(ring:F) */
	atomic_store_explicit(&ctl->head, end, memory_order_release);
	TESTPOINT(6);
	/* LMM(ring:N) the head before next_seq; pairs with LMM(ring:P) */
	atomic_store_explicit(&ctl->next_seq, seq + 1, memory_order_release);
	w->head = end;
	w->seq = seq + 1;
}

/* Steps 3-5 for the record shmlog__append_begin() reserved at @at, its
 * message written. */
static inline __attribute__((always_inline)) void
shmlog__append_commit(struct shmlog__wlane *w,
		      const struct shmlog__append_at *at)
{
	append_publish(w, w->ctl, at->r, at->pos, at->end, at->seq);
}

/* Step 6's look, after the commit tail, for callers whose record needs
 * no fence before it (writer.c: the leaf, leaf_len_end, and the typed
 * call, typed_fit: membarrier gives the readers' side of Dekker's pattern,
 * wake.c): a compiler barrier, then the sleepers word. LMM(ring:W)
 * pairs with the sleeping reader's membarrier: the reader sees the new head, or
 * this load sees its flag. */
static inline __attribute__((always_inline)) bool
shmlog__append_wake_due(const struct shmlog__wlane *w)
{
	atomic_signal_fence(memory_order_seq_cst); /* LMM(ring:W) */
	return atomic_load_explicit(w->sleepers, memory_order_relaxed);
}

/* Append the record (@meta: rec_meta() without len, holding @tag_len
 * and @msg_len, which the caller also passes as they are; @tword: the
 * tag's bytes if it is shorter than 8) at the lane's head, if it fits
 * the OPEN chunk and the chunk's word still names it ours. false, with
 * nothing written: it does not (no chunk, a full one, a scribbled word),
 * and shmlog__ring_append() takes it from there. */
static inline __attribute__((always_inline)) bool
shmlog__append_fit_as(struct shmlog__wlane *w, uint64_t time, uint64_t meta,
		      const char *tag, uint32_t tag_len, uint64_t tword,
		      const char *msg, uint32_t msg_len, bool leaf)
{
	struct shmlog__lane *ctl = w->ctl;
	uint32_t len = rec_len(tag_len, msg_len);
	uint64_t pos = w->head, seq = w->seq;
	if (!append_reserve(w, pos, len))
		return false;
	uint64_t end = pos + len;

	/* the header but its word, which commits the record */
	struct shmlog__rec *r = (struct shmlog__rec *)(w->rec_base + pos);
	r->seq = seq;
	r->time = time;
	uint64_t ids = (uint64_t)w->tid << 32 | w->pid;
	memcpy(&r->pid, &ids, sizeof(ids));
	meta |= len;
	memcpy(&r->len, &meta, sizeof(meta));
	char *body = (char *)(r + 1);
	/* 8 bytes at the body stay inside the record: a tag of 1 byte or
	 * more makes it at least REC_HDR + 8 long; the message overwrites
	 * what follows the tag */
	if (SHMLOG_LIKELY(tag_len - 1 < 7))
		memcpy(body, &tword, 8);
	else if (leaf)
		copy_short(body, tag, tag_len);
	else
		memcpy(body, tag, tag_len);
	TESTPOINT(3);
	if (leaf)
		copy_short(body + tag_len, msg, msg_len);
	else
		copy_msg(body + tag_len, msg, msg_len);
	append_publish(w, ctl, r, pos, end, seq);
	return true;
}

/*
 * shmlog__append_fit_as() in two steps, for a caller that writes the
 * message itself, straight into the record (a typed printf-style call
 * encodes its values there: fmtarg_call.c, shmlog__print_typed). The same
 * protocol, labels and test points.
 *
 * shmlog__append_begin(): steps 1-3, the reservation of a record whose
 * message is @msg_len bytes, its header but the word, and its tag; *@at
 * says where the message goes (at->msg, @msg_len bytes to fill before
 * shmlog__append_commit()). false, with nothing written: it does not fit
 * the OPEN chunk (as append_fit_as's false). @tag_len is 1 to 15
 * (tag_short()).
 */
static inline __attribute__((always_inline)) bool
shmlog__append_begin(struct shmlog__wlane *w, uint64_t time, uint64_t meta,
		     const char *tag, uint32_t tag_len, uint64_t tword,
		     uint32_t msg_len, struct shmlog__append_at *at)
{
	uint32_t len = rec_len(tag_len, msg_len);
	uint64_t pos = w->head, seq = w->seq;
	if (!append_reserve(w, pos, len))
		return false;
	uint64_t end = pos + len;

	struct shmlog__rec *r = (struct shmlog__rec *)(w->rec_base + pos);
	uint64_t ids = (uint64_t)w->tid << 32 | w->pid;
	r->seq = seq;
	r->time = time;
	memcpy(&r->pid, &ids, sizeof(ids));
	meta |= len;
	memcpy(&r->len, &meta, sizeof(meta));
	char *body = (char *)(r + 1);
	if (SHMLOG_LIKELY(tag_len < 8))
		memcpy(body, &tword, 8); /* the message overwrites the rest */
	else
		copy_short(body, tag, tag_len);
	TESTPOINT(3);
	*at = (struct shmlog__append_at){(unsigned char *)body + tag_len, r,
					 pos, end, seq};
	return true;
}

/* The same for a caller that calls nothing (shmlog_write_n()'s leaf):
 * the tag under 16 bytes, the message at most 128, copied inline. */
static inline __attribute__((always_inline)) bool
shmlog__append_fit(struct shmlog__wlane *w, uint64_t time, uint64_t meta,
		   const char *tag, uint32_t tag_len, uint64_t tword,
		   const char *msg, uint32_t msg_len)
{
	return shmlog__append_fit_as(w, time, meta, tag, tag_len, tword, msg,
				     msg_len, false);
}

/* The length of @tag if it is 1 to 15 bytes long, else 0 (a null @tag
 * too), read with loads of 8 bytes that do not cross a page boundary (0
 * if they would); for a tag under 8 bytes, its bytes in *@word,
 * zero-padded if @pad, else followed by whatever 8 bytes from @tag hold
 * past its NUL (for a caller whose message overwrites them in the record:
 * shmlog__print_typed()). */
static inline __attribute__((always_inline)) uint32_t
tag_short_as(const char *tag, uint64_t *word, const bool pad)
{
#ifdef SHMLOG__EXACT_READS
	(void)pad; /* zero-padded all the same */
	if (!tag)
		return 0;
	size_t n = strnlen(tag, 16);
	*word = 0;
	if (n < 8)
		memcpy(word, tag, n);
	return n < 16 ? (uint32_t)n : 0;
#else
	const uint64_t ones = UINT64_C(0x0101010101010101);
	const uint64_t highs = UINT64_C(0x8080808080808080);
	/* one compare: 8 bytes from @tag stay in its page and @tag is not
	 * null (one byte below it wraps to the page's last byte); a tag at
	 * a page's first byte is asked again */
	if (SHMLOG_UNLIKELY((((uintptr_t)tag - 1) & (SHMLOG__PAGE - 1)) >
			    SHMLOG__PAGE - 9) &&
	    (!tag || ((uintptr_t)tag & (SHMLOG__PAGE - 1)) > SHMLOG__PAGE - 8))
		return 0;
	uint64_t v;
	memcpy(&v, tag, 8);
#ifdef __SSE2__
	if (!pad) {
		/* a bit for each NUL byte among the 16 of the register,
		 * the 8 above the tag's zeros: the tag's length is the
		 * lowest bit, 8 if no NUL is among its 8 bytes */
		unsigned n = (unsigned)__builtin_ctz(
			(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
				_mm_cvtsi64_si128((long long)v),
				_mm_setzero_si128())));
		if (SHMLOG_LIKELY(n - 1 < 7)) {
			*word = v;
			return n;
		}
		if (!n)
			return 0;
		goto second;
	}
	/* 0xff at each NUL byte, the first exact (a compare of the 8 bytes
	 * with zero, fewer instructions than the word arithmetic below) */
	uint64_t zero = (uint64_t)_mm_cvtsi128_si64(_mm_cmpeq_epi8(
		_mm_cvtsi64_si128((long long)v), _mm_setzero_si128()));
	const unsigned below = 1; /* its lowest bit is bit 0 of the NUL */
#else
	/* bit 7 of each NUL byte, the first exact */
	uint64_t zero = (v - ones) & ~v & highs;
	const unsigned below = 8; /* its lowest bit is bit 7 of the NUL */
#endif
	if (SHMLOG_LIKELY(zero)) {
		/* the bytes below the first NUL */
		*word = pad ? v & ((zero ^ (zero - 1)) >> below) : v;
		return (uint32_t)__builtin_ctzll(zero) >> 3;
	}
#ifdef __SSE2__
second:
#endif
	if (SHMLOG_UNLIKELY(((uintptr_t)tag & (SHMLOG__PAGE - 1)) >
			    SHMLOG__PAGE - 16))
		return 0;
	memcpy(&v, tag + 8, 8);
	zero = (v - ones) & ~v & highs;
	*word = 0;
	return zero ? 8 + ((uint32_t)__builtin_ctzll(zero) >> 3) : 0;
#endif
}

static inline uint32_t tag_short(const char *tag, uint64_t *word)
{
	return tag_short_as(tag, word, true);
}

#endif
