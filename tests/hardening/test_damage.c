/* SPDX-License-Identifier: MIT */
/*
 * Damage that a reader must get past, one case at a time, each made by
 * hand in a real buffer: a lane's head off a record boundary, behind the
 * reader or past its last record; a PAD in the middle of a lane; a flipped
 * bit in the oldest record's word or length; a TORN header flipped to
 * COMMITTED; a record word shifted by 8 bytes; big buffers with one bit
 * flipped in every lane.
 *
 * In every case the reader must end (a bounded number of calls, each
 * record at most once, in order), return only records someone wrote whole,
 * still return the valid records after the damage, count the damage once
 * (shmlog_lane_stats.corrupt) and keep its books exact: written = read +
 * overwritten + torn.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "hostile.h"
#include "internal.h"

struct img {
	const char *name;
	unsigned char *base;
	size_t size;
	struct shmlog__fixed f;
};

/* A buffer of @size bytes and @lanes lanes with @n self-describing records
 * of writer 1 in lane 0 (the writer is gone: the lane is free), mapped
 * read-write for tampering. */
static void img_make(struct img *m, size_t size, unsigned lanes, long n)
{
	m->name = test_buffer("damage");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = size;
	o.lanes = lanes;
	shmlog_remove(m->name);
	REQUIRE(shmlog_create(m->name, &o) == 0);
	if (n) {
		shmlog_t *h;
		REQUIRE(shmlog_open(m->name, 0, &h) == 0);
		REQUIRE(sc_write(h, 1, 0, n) == 0);
		shmlog_close(h);
	}
	char path[512];
	REQUIRE(shmlog_path(m->name, path, sizeof(path)) > 0);
	m->base = hw_map_rw(path, &m->size);
	REQUIRE(m->base != NULL);
	memcpy(&m->f, m->base, sizeof(m->f));
}

static void img_done(struct img *m)
{
	munmap(m->base, m->size);
	shmlog_remove(m->name);
}

static struct shmlog__lane *img_lane(struct img *m, unsigned i)
{
	return (void *)(m->base + m->f.lanes_off +
			i * sizeof(struct shmlog__lane));
}

/* Record @k of lane @i (PADs not counted), oldest first, and its
 * position. */
static struct shmlog__rec *img_rec(struct img *m, unsigned i, unsigned k,
				   uint64_t *pos)
{
	static long offs[16384];
	size_t n = hw_lane_records(m->base, &m->f, i, offs, NULL, 16384);
	for (size_t j = 0; j < n; j++) {
		struct shmlog__rec *r = (void *)(m->base + offs[j]);
		uint64_t w = atomic_load(&r->word);
		if ((w & REC_STATE_MASK) == REC_PAD || k--)
			continue;
		if (pos)
			*pos = w & ~(uint64_t)REC_STATE_MASK;
		return r;
	}
	REQUIRE(!"lane holds that many records");
	return NULL;
}

/* Records (not PADs) in lane @i. */
static unsigned img_count(struct img *m, unsigned i)
{
	static long offs[16384];
	size_t n = hw_lane_records(m->base, &m->f, i, offs, NULL, 16384);
	unsigned records = 0;
	for (size_t j = 0; j < n; j++) {
		struct shmlog__rec *r = (void *)(m->base + offs[j]);
		records += (atomic_load(&r->word) & REC_STATE_MASK) != REC_PAD;
	}
	return records;
}

struct dump {
	long records, bad, disorder, calls;
	bool ended; /* reached SHMLOG_EV_NONE within the bound */
	struct shmlog_lane_stats sum;
	uint64_t corrupt, lost_torn;
};

/* Read everything, at most @max_calls calls; each record checked against
 * its self-description, and records of one writer in increasing order. */
static void dump(const char *b, long max_calls, struct dump *d)
{
	memset(d, 0, sizeof(*d));
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	int64_t last[64];
	for (int k = 0; k < 64; k++)
		last[k] = -1;
	for (; d->calls < max_calls; d->calls++) {
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev = shmlog_reader_next(r, &rec, &l);
		if (ev == SHMLOG_EV_NONE) {
			d->ended = true;
			break;
		}
		if (ev == SHMLOG_EV_LOST) {
			d->lost_torn += l.torn;
			continue;
		}
		REQUIRE(ev == SHMLOG_EV_RECORD);
		unsigned w;
		uint64_t i;
		if (!sc_check(&rec, &w, &i)) {
			d->bad++;
			continue;
		}
		if (w >= 64 || (int64_t)i <= last[w])
			d->disorder++;
		else
			last[w] = (int64_t)i;
		d->records++;
	}
	/* a second look finds nothing either, and the reader does not spin:
	 * a damaged lane is "nothing new" until it changes */
	struct shmlog_record rec;
	CHECK_EQ(shmlog_reader_next(r, &rec, NULL), SHMLOG_EV_NONE);
	CHECK_EQ(shmlog_reader_wait(r, 0), -ETIMEDOUT);
	d->sum = hw_sum(r);
	for (unsigned k = 0; k < shmlog_reader_lanes(r); k++) {
		struct shmlog_lane_stats st;
		REQUIRE(shmlog_reader_lane_stats(r, k, &st) == 0);
		d->corrupt += st.corrupt;
	}
	shmlog_reader_close(r);
}

/* The common verdict: the dump ended, nothing bad, nothing twice, no
 * record counted twice. */
static void check_sane(const struct dump *d, long max_calls)
{
	CHECK(d->sum.written >=
	      d->sum.read + d->sum.overwritten + d->sum.torn + d->sum.skipped);
	CHECK(d->ended);
	CHECK(d->calls < max_calls);
	CHECK_EQ(d->bad, 0);
	CHECK_EQ(d->disorder, 0);
}

/* head moved off a record boundary into the last record: the records
 * below it are read once, the one across it is not (yet), and the reader
 * neither loops nor goes back to the oldest (it used to: the same three
 * records again and again, for ever). */
static void head_inside_record(void)
{
	struct img m;
	img_make(&m, 64 * 1024, 1, 3);
	struct shmlog__lane *l = img_lane(&m, 0);
	atomic_store(&l->head, atomic_load(&l->head) - 8);
	struct dump d;
	dump(m.name, 1000, &d);
	check_sane(&d, 1000);
	CHECK_EQ(d.records, 2);
	CHECK_EQ(d.corrupt, 1);
	img_done(&m);
}

/* head past the last record, over bytes nobody wrote: every record is
 * read, the garbage after them counted once. */
static void head_past_records(void)
{
	for (uint64_t extra = 8; extra <= 4096; extra *= 8) {
		struct img m;
		img_make(&m, 64 * 1024, 1, 12);
		struct shmlog__lane *l = img_lane(&m, 0);
		atomic_store(&l->head, atomic_load(&l->head) + extra);
		struct dump d;
		dump(m.name, 1000, &d);
		check_sane(&d, 1000);
		CHECK_EQ(d.records, 12);
		CHECK_EQ(d.corrupt, 1);
		img_done(&m);
	}
}

/* head misaligned, or behind records already there: no loop, nothing
 * past head. */
static void head_nonsense(void)
{
	uint64_t deltas[] = {3, 4, 12, (uint64_t)-8, (uint64_t)-4096};
	for (unsigned k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++) {
		struct img m;
		img_make(&m, 64 * 1024, 1, 12);
		struct shmlog__lane *l = img_lane(&m, 0);
		uint64_t pos;
		img_rec(&m, 0, 6, &pos);
		atomic_store(&l->head, pos + deltas[k]);
		struct dump d;
		dump(m.name, 1000, &d);
		check_sane(&d, 1000);
		CHECK(d.records <= 6);
		img_done(&m);
	}
}

/* A record in the middle of the lane marked PAD: the reader goes on at
 * the next record instead of jumping to the lane's end (and, as it was,
 * overshooting head and starting again at the oldest). */
static void pad_in_middle(void)
{
	struct img m;
	img_make(&m, 64 * 1024, 1, 12);
	uint64_t pos;
	struct shmlog__rec *r = img_rec(&m, 0, 5, &pos);
	atomic_store(&r->word, pos | REC_PAD);
	struct dump d;
	dump(m.name, 1000, &d);
	check_sane(&d, 1000);
	CHECK_EQ(d.records, 11);
	CHECK_EQ(d.corrupt, 1);
	CHECK_EQ(d.sum.torn, 1);
	CHECK_EQ(d.lost_torn, 1);
	CHECK_EQ(d.sum.written, d.sum.read + d.sum.overwritten + d.sum.torn);
	img_done(&m);
}

/* Is there a whole record of writer @w at @r, @room bytes before its
 * chunk's end, whatever its word says (one an earlier incarnation left)? */
static bool old_record_at(const struct shmlog__rec *r, uint64_t room,
			  unsigned w)
{
	if (room < REC_HDR || r->len < REC_HDR || r->len > room ||
	    r->tag_len > SHMLOG_TAG_MAX ||
	    (uint32_t)REC_HDR + r->tag_len + r->msg_len > r->len)
		return false;
	char tag[SHMLOG_TAG_MAX + 1], msg[1024];
	const char *body = (const char *)(r + 1);
	memcpy(tag, body, r->tag_len);
	tag[r->tag_len] = '\0';
	if (r->msg_len >= sizeof(msg))
		return false;
	memcpy(msg, body + r->tag_len, r->msg_len);
	msg[r->msg_len] = '\0';
	struct shmlog_record rec = {.prio = r->prio, .tag = tag,
				    .tag_len = r->tag_len, .msg = msg,
				    .msg_len = r->msg_len};
	unsigned ww;
	uint64_t i;
	return sc_check(&rec, &ww, &i) && ww == w;
}

/* The length of record @i of writer @w in a lane (sc_make()'s record). */
static uint32_t sc_rec_len(unsigned w, uint64_t i)
{
	char tag[16], msg[512];
	int prio;
	size_t n = sc_make(w, i, tag, &prio, msg);
	return (uint32_t)(REC_HDR + strlen(tag) + n + REC_ALIGN - 1) &
	       ~(uint32_t)(REC_ALIGN - 1);
}

/* The next record of writer @w from *@i on whose length is @len exactly
 * (@exact) or leaves at least a record's worth of @len (REC_HDR + 16)
 * after it; written by @h. false if none in the next 100000. */
static bool write_to_fill(shmlog_t *h, unsigned w, uint64_t *i, uint32_t len,
			  bool exact)
{
	for (uint64_t k = *i; k < *i + 100000; k++) {
		uint32_t l = sc_rec_len(w, k);
		if (exact ? l != len : l + REC_HDR + 16 > len)
			continue;
		REQUIRE(sc_write(h, w, k, 1) == 0);
		*i = k + 1;
		return true;
	}
	return false;
}

/* A PAD's word given another state: COMMITTED (a record) or TORN (a record
 * lost). A writer used to write only a PAD's first word, so what lay
 * behind it was whatever the chunk's earlier incarnation left there: here
 * a whole record of another lane, numbered far above this lane's records.
 * The reader reaches the PAD past damage (the record before it), where any
 * number above the lane's last one fits. It must not show that old record
 * (it did: writer 1's record again, after newer ones of writer 1, as
 * test_tamper saw once), nor take its number (it did, as a torn record:
 * the lane's records after it were then out of sequence, lost to that
 * reader). Writer 2's records are chosen so that its first chunk's PAD
 * lands on the first byte of a record writer 1 left there. */
static void pad_over_old_record(void)
{
	const unsigned states[] = {REC_COMMITTED, REC_TORN};
	for (unsigned s = 0; s < 2; s++) {
		struct img m;
		img_make(&m, 64 * 1024, 2, 0);
		const uint64_t cs = m.f.chunk_size;
		shmlog_t *a, *b;
		REQUIRE(shmlog_open(m.name, 0, &a) == 0);
		REQUIRE(shmlog_open(m.name, 0, &b) == 0);
		/* writer 1 fills the buffer and recycles its own chunks; then
		 * writer 2 takes writer 1's oldest (writer 1 holds more than
		 * its share) */
		REQUIRE(sc_write(a, 1, 0, 600) == 0);
		uint64_t i = 0;
		REQUIRE(sc_write(b, 2, i++, 1) == 0);
		unsigned lb =
			atomic_load(&img_lane(&m, 0)->next_seq) == 1 ? 0 : 1;
		long offs[64];
		uint64_t pos[64];
		REQUIRE(hw_lane_records(m.base, &m.f, lb, offs, pos, 64) == 1);
		long data = (long)m.f.data_off;
		long chunk = data + (offs[0] - data) / (long)cs * (long)cs;
		uint64_t cbase = pos[0] - (uint64_t)(offs[0] - chunk);
		uint64_t head = atomic_load(&img_lane(&m, lb)->head) - cbase;
		/* the last record writer 1 left in the chunk past what
		 * writer 2 wrote: its word still names its place then */
		uint64_t at = 0;
		for (uint64_t o = head + REC_HDR + 16; o + REC_HDR <= cs;
		     o += REC_ALIGN) {
			const struct shmlog__rec *r =
				(const void *)(m.base + chunk + o);
			uint64_t w = atomic_load(&r->word);
			uint64_t p = w & ~(uint64_t)REC_STATE_MASK;
			if ((w & REC_STATE_MASK) == REC_COMMITTED &&
			    (p - m.f.initial_pos) % cs == o &&
			    old_record_at(r, cs - o, 1))
				at = o;
		}
		REQUIRE(at);
		/* writer 2's records up to it, then one that does not fit
		 * after it: the PAD is written there */
		for (unsigned guard = 0; head != at; guard++) {
			REQUIRE(guard < 100);
			uint32_t rem = (uint32_t)(at - head);
			REQUIRE(write_to_fill(b, 2, &i, rem, rem <= 320));
			head = atomic_load(&img_lane(&m, lb)->head) - cbase;
		}
		uint64_t k = i;
		while (sc_rec_len(2, k) <= cs - at)
			k++;
		REQUIRE(sc_write(b, 2, k, 1) == 0);
		struct shmlog__rec *pad = (void *)(m.base + chunk + at);
		REQUIRE(atomic_load(&pad->word) == ((cbase + at) | REC_PAD));
		shmlog_close(a);
		shmlog_close(b);
		size_t n = hw_lane_records(m.base, &m.f, lb, offs, pos, 64);
		size_t j = 0;
		while (j < n && offs[j] != chunk + (long)at)
			j++;
		REQUIRE(j > 0 && j < n);
		struct shmlog__rec *before = (void *)(m.base + offs[j - 1]);
		/* behind the PAD's word: zeros to the chunk's end, but its
		 * seq, the number of the record before it */
		const unsigned char *rest = (const unsigned char *)pad + 16;
		size_t nonzero = 0;
		for (uint64_t o = 16; o < cs - at; o++)
			nonzero += rest[o - 16] != 0;
		CHECK_EQ(nonzero, 0);
		CHECK_EQ(pad->seq, before->seq);

		struct dump d0, d;
		dump(m.name, 10000, &d0);
		check_sane(&d0, 10000);
		atomic_store(&before->word,
			     atomic_load(&before->word) ^ (1u << 12));
		atomic_store(&pad->word, (cbase + at) | states[s]);
		dump(m.name, 10000, &d);
		check_sane(&d, 10000);
		CHECK_EQ(d.records, d0.records - 1);
		img_done(&m);
	}
}

/* One bit flipped in the oldest record (its word, its length): the other
 * eleven are shown, the damage is one torn record, counted once (it used
 * to hide the whole lane and count thousands of torn records per call). */
static void oldest_flipped(void)
{
	for (int what = 0; what < 3; what++) {
		struct img m;
		img_make(&m, 64 * 1024, 1, 12);
		uint64_t pos;
		struct shmlog__rec *r = img_rec(&m, 0, 0, &pos);
		if (what == 0)
			atomic_store(&r->word, atomic_load(&r->word) ^ (1u << 12));
		else if (what == 1)
			r->len ^= 64;
		else
			r->len ^= 8;
		struct dump d;
		dump(m.name, 1000, &d);
		check_sane(&d, 1000);
		CHECK_EQ(d.records, 11);
		CHECK_EQ(d.corrupt, 1);
		CHECK_EQ(d.sum.torn, 1);
		img_done(&m);
	}
}

/* State bits alone: a TORN record (as a claimer repairs one: header zeroed
 * but seq and len) flipped to COMMITTED is not shown; COMMITTED records
 * flipped to TORN or to an invalid state are counted, never shown. */
static void state_flips(void)
{
	for (unsigned st = 0; st < 8; st++) {
		if (st == REC_COMMITTED)
			continue;
		struct img m;
		img_make(&m, 64 * 1024, 1, 12);
		uint64_t pos;
		struct shmlog__rec *r = img_rec(&m, 0, 4, &pos);
		if (st == REC_PAD) { /* the TORN header, then the flip */
			uint64_t seq = r->seq;
			uint16_t len = r->len;
			memset((char *)r + 8, 0, REC_HDR - 8);
			r->seq = seq;
			r->len = len;
			atomic_store(&r->word, pos | REC_COMMITTED);
		} else {
			atomic_store(&r->word, pos | st);
		}
		struct dump d;
		dump(m.name, 1000, &d);
		check_sane(&d, 1000);
		CHECK_EQ(d.records, 11);
		CHECK_EQ(d.sum.torn, 1);
		img_done(&m);
	}
}

/* A record's word shifted by 8 bytes: moved to the slot before or after
 * (into the previous record's padding, or over its own seq), as is or
 * naming its new place. What it then frames is not a record anyone wrote
 * whole; it must not be shown, and the records around it must. */
static void word_shifted(void)
{
	int tried = 0;
	for (int how = 0; how < 4; how++) {
		int dir = how & 1 ? 8 : -8;
		bool rename = how & 2;
		for (unsigned k = 1; k < 11; k++) {
			struct img m;
			img_make(&m, 64 * 1024, 1, 12);
			uint64_t pos, ppos;
			struct shmlog__rec *r = img_rec(&m, 0, k, &pos);
			struct shmlog__rec *p = img_rec(&m, 0, k - 1, &ppos);
			/* moving a word down writes the previous record's last
			 * 8 bytes: only where they are padding, or it would be
			 * a rewritten message (a forgery, not damage) */
			if (dir < 0 && ppos + REC_HDR + p->tag_len + p->msg_len >
					       pos - 8) {
				img_done(&m);
				continue;
			}
			_Atomic uint64_t *to = (void *)((char *)r + dir);
			uint64_t w = atomic_load(&r->word);
			atomic_store(&r->word, 0);
			atomic_store(to, rename ? (pos + (uint64_t)dir) | REC_COMMITTED
						: w);
			struct dump d;
			dump(m.name, 1000, &d);
			check_sane(&d, 1000);
			CHECK(d.records >= 10);
			CHECK(d.corrupt >= 1);
			tried++;
			img_done(&m);
		}
	}
	CHECK(tried >= 20);
}

/* A big buffer, every lane full, one bit flipped in every lane's oldest
 * record: the dump takes about as long as an intact one, and the damage
 * is a handful of torn records, not millions. */
static void big_flipped(void)
{
	const unsigned lanes = 32;
	struct img m;
	img_make(&m, 16u << 20, lanes, 0);
	/* fill every lane a writer keeps (an eighth are shared lanes, lent
	 * one record at a time): a process per lane, each holding its lane
	 * until all have written (one after another, each would go on in
	 * the lane the one before gave back) */
	const unsigned writers = lanes - lanes / 8;
	int hold[2], done[2];
	REQUIRE(pipe(hold) == 0 && pipe(done) == 0);
	pid_t pids[32];
	for (unsigned i = 0; i < writers; i++) {
		pid_t p = fork();
		REQUIRE(p >= 0);
		if (p == 0) {
			close(hold[1]);
			shmlog_t *h;
			if (shmlog_open(m.name, 0, &h))
				_exit(1);
			if (sc_write(h, 2 + i, 0, 4000))
				_exit(2);
			char c = 'd';
			if (write(done[1], &c, 1) != 1)
				_exit(3);
			while (read(hold[0], &c, 1) > 0)
				;
			_exit(0);
		}
		pids[i] = p;
	}
	close(hold[0]);
	close(done[1]); /* a writer that dies: EOF, not a wait for ever */
	for (unsigned i = 0; i < writers; i++) {
		char c;
		REQUIRE(read(done[0], &c, 1) == 1);
	}
	close(hold[1]);
	close(done[0]);
	for (unsigned i = 0; i < writers; i++)
		CHECK_EQ(hw_reap(pids[i]), 0);
	struct dump d0;
	uint64_t t0 = now_ns();
	dump(m.name, 10000000, &d0);
	uint64_t intact_ns = now_ns() - t0;
	unsigned flipped = 0;
	for (unsigned i = 0; i < lanes; i++) {
		if (!img_count(&m, i))
			continue;
		struct shmlog__rec *r = img_rec(&m, i, 0, NULL);
		atomic_store(&r->word, atomic_load(&r->word) ^ (1u << 20));
		flipped++;
	}
	struct dump d;
	t0 = now_ns();
	dump(m.name, 10000000, &d);
	uint64_t damaged_ns = now_ns() - t0;
	printf("big buffer, %u lanes, one bit flipped in %u: dump %.1f ms "
	       "(intact %.1f ms), %ld records, %llu torn, %llu damaged places\n",
	       lanes, flipped, damaged_ns / 1e6, intact_ns / 1e6, d.records,
	       (unsigned long long)d.sum.torn, (unsigned long long)d.corrupt);
	check_sane(&d, 10000000);
	CHECK(flipped >= lanes / 2);
	CHECK_EQ(d.records, d0.records - flipped);
	CHECK_EQ(d.sum.torn, flipped);
	CHECK_EQ(d.corrupt, flipped);
	/* generous: a loaded machine, sanitizers */
	CHECK(damaged_ns < 4 * intact_ns + 2000000000ull);
	img_done(&m);
}

/* Many random damages of the same kinds, one to four at a time, on a lane
 * that recycled its chunks (PADs included): record words (state bits, a
 * bit, moved by 8 bytes into their own header), lengths, lane positions,
 * the chunk table (descriptor words, the epoch). No message byte is
 * written, so every record shown must be whole. */
static void random_damage(unsigned images)
{
	uint64_t v = 77;
	long shown = 0, corrupt = 0, bad = 0;
	for (unsigned n = 0; n < images; n++) {
		struct img m;
		img_make(&m, 64 * 1024, 1, 100 + (long)(n % 7) * 150);
		struct shmlog__lane *l = img_lane(&m, 0);
		unsigned records = img_count(&m, 0);
		REQUIRE(records > 0);
		unsigned k = 1 + (unsigned)((v = sc_mix(v)) % 4);
		/* the targets first: the walk needs the words intact */
		struct shmlog__rec *target[4];
		uint64_t tpos[4];
		for (unsigned j = 0; j < k; j++) {
			v = sc_mix(v);
			target[j] = img_rec(&m, 0, (unsigned)(v % records),
					    &tpos[j]);
		}
		for (unsigned j = 0; j < k; j++) {
			v = sc_mix(v);
			uint64_t pos = tpos[j];
			struct shmlog__rec *r = target[j];
			uint64_t w = atomic_load(&r->word);
			switch ((v >> 8) % 7) {
			case 0: /* state bits */
				atomic_store(&r->word, (w & ~7ull) | ((v >> 16) % 8));
				break;
			case 1: /* a bit */
				atomic_store(&r->word, w ^ (1ull << ((v >> 16) % 64)));
				break;
			case 2: /* into its own seq, as is or renamed */
				atomic_store(&r->word, 0);
				r->seq = (v >> 16) & 1 ? w : (pos + 8) | (w & 7);
				break;
			case 3: /* the length */
				r->len = (uint16_t)(r->len + 8 * (int)((v >> 16) % 9) - 32);
				break;
			case 4: { /* a lane position */
				_Atomic uint64_t *ps[] = {&l->head, &l->reserve,
							  &l->next_seq};
				_Atomic uint64_t *p = ps[(v >> 16) % 3];
				int64_t d = (int64_t)((v >> 20) % 512) - 256;
				atomic_store(p, atomic_load(p) + (uint64_t)(d * 8));
				break;
			}
			case 5: { /* a TORN header flipped to COMMITTED */
				uint16_t len = r->len;
				memset((char *)r + 16, 0, REC_HDR - 16);
				r->len = len;
				break;
			}
			default: /* the epoch, a chunk's descriptor */
				hw_tamper_chunks(m.base, &m.f, sc_mix(v));
				break;
			}
		}
		struct dump d;
		dump(m.name, 100000, &d);
		check_sane(&d, 100000);
		shown += d.records;
		bad += d.bad + d.disorder;
		corrupt += (long)d.corrupt;
		img_done(&m);
	}
	printf("random damage: %u buffers, %ld records shown, %ld not whole "
	       "or out of order, %ld damaged places\n",
	       images, shown, bad, corrupt);
}

int main(void)
{
	head_inside_record();
	head_past_records();
	head_nonsense();
	pad_in_middle();
	pad_over_old_record();
	oldest_flipped();
	state_flips();
	word_shifted();
	big_flipped();
	random_damage(600);
	return test_done("test_damage");
}
