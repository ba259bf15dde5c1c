/* SPDX-License-Identifier: MIT */
/*
 * A live hostile mutator rewrites headers, offsets and
 * lengths while a reader follows.
 *
 * The reader must never crash, never loop (every call is timed), never
 * touch memory outside its mapping (ASan; guard pages, checked here), and
 * never return a record that fails the self-describing check, as long as
 * the mutator damages the structure: page 0 (fixed header included), every
 * lane's positions (reserve, head, next_seq), the chunk table (descriptor
 * words, the epoch), and the record headers (word, len, tag_len, msg_len)
 * of lanes whose writers are done. What it
 * damages must be counted (torn, overwritten), never shown.
 *
 * What the mutator cannot do without being caught, it can do by forging:
 * whoever may write the file may write any record, and a changed message
 * byte is such a record (there is no per-record checksum: see
 * docs/SECURITY.md). The last phase lets the mutator scribble anywhere,
 * messages included, and checks only that the reader survives and that
 * what it returns is well-formed.
 *
 * usage: test_hostile [SECONDS_PER_PHASE]
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "hostile.h"
#include "internal.h"

#define STATIC_WRITERS 4
#define LIVE_WRITERS 2
#define LANES 8

static const char *buffer;
static char path[512];

/* COMMITTED record starts of lane @i (its writer is done), as file
 * offsets, and their positions. */
static size_t walk_lane(unsigned char *base, const struct shmlog__fixed *f,
			unsigned i, long *t, uint64_t *pos, size_t max)
{
	size_t n = hw_lane_records(base, f, i, t, pos, max), k = 0;
	for (size_t j = 0; j < n; j++) {
		_Atomic uint64_t *w = (void *)(base + t[j]);
		if ((atomic_load(w) & REC_STATE_MASK) == REC_COMMITTED) {
			pos[k] = pos[j];
			t[k++] = t[j];
		}
	}
	return k;
}

/* The mutator: runs until killed. @forge: scribble anywhere. */
static void mutator(bool forge, uint64_t seed, const unsigned *static_lanes,
		    unsigned nstatic)
{
	size_t size;
	unsigned char *base = hw_map_rw(path, &size);
	if (!base)
		_exit(21);
	struct shmlog__fixed f;
	memcpy(&f, base, sizeof(f)); /* trusted: we made it */
	static long t[STATIC_WRITERS * 4096];
	static uint64_t tpos[STATIC_WRITERS * 4096]; /* what each word names */
	size_t nt = 0;
	for (unsigned k = 0; k < nstatic; k++)
		nt += walk_lane(base, &f, static_lanes[k], t + nt, tpos + nt,
				sizeof(t) / sizeof(t[0]) - nt);
	for (uint64_t n = 0;; n++) {
		seed = sc_mix(seed + n);
		uint64_t v = sc_mix(seed ^ 0x5555);
		/* the chunk table (4) only when forging: a scribbled
		 * descriptor can hand a live writer's chunk to another one,
		 * and then two writers write over each other's records (the
		 * reader is then safe from crashes and hangs, not from
		 * forged content: docs/SECURITY.md) */
		unsigned what = (unsigned)(seed % (forge ? 6 : 4));
		if (what == 0) { /* page 0, the fixed header too */
			size_t off = (size_t)(v % SHMLOG__PAGE);
			size_t clear = offsetof(struct shmlog__hdr,
						config.clear_raw);
			unsigned char was = base[off];
			base[off] = (unsigned char)(v >> 32);
			if (off < sizeof(f) || off - clear < 8) {
				/* readers opening now must refuse the file;
				 * then put it back, or nobody could open. The
				 * clear mark too: one later than the records'
				 * times hides every record (as shmlog_clear()
				 * does: a forge, not damage), and left so from
				 * the first ~150 ms on, a reader held up that
				 * long by a loaded machine read nothing */
				sleep_ns(1000000);
				base[off] = was;
			}
		} else if (what == 1) { /* a lane position */
			unsigned lane = (unsigned)(v % f.lane_count);
			struct shmlog__lane *l =
				(void *)(base + f.lanes_off +
					 lane * sizeof(struct shmlog__lane));
			_Atomic uint64_t *w[] = {&l->reserve, &l->head,
						 &l->next_seq};
			_Atomic uint64_t *p = w[(v >> 8) % 3];
			uint64_t x = atomic_load(p);
			switch ((v >> 12) % 4) {
			case 0: x = sc_mix(v); break;
			case 1: x += (v >> 20) % 4096; break;
			case 2: x -= (v >> 20) % 4096; break;
			default: x ^= 1ull << ((v >> 20) % 64); break;
			}
			atomic_store(p, x);
		} else if ((what == 2 || what == 3) && nt) { /* a header */
			size_t j = (size_t)((v >> 8) % nt);
			_Atomic uint64_t *word = (void *)(base + t[j]);
			_Atomic uint64_t *meta = (void *)(base + t[j] + 32);
			uint64_t w = atomic_load(word), m = atomic_load(meta);
			uint64_t x = (v >> 20) & 0xffff, nm;
			if (what == 2) /* len */
				nm = (m & ~0xffffull) | x;
			else if ((v >> 40) & 1) /* tag_len no writer makes */
				nm = (m & ~(0xffull << 48)) |
				     (uint64_t)(SHMLOG_TAG_MAX + 1 + x % 190) << 48;
			else /* msg_len past any record: no len fits it, so
			      * that a later len cannot make the header whole
			      * again with a longer message (a forge: it was
			      * read as a record whose message ran into the
			      * next record) */
				nm = (m & ~(0xffffull << 16)) |
				     (uint64_t)(f.max_record - REC_HDR + 1 +
						x % 1000) << 16;
			/* Only while the word still names the record: its
			 * chunk may have gone to a live writer since, whose
			 * messages are not the mutator's to change. A
			 * compare-and-swap lands on that header or nowhere. */
			if ((w & ~7ull) != tpos[j])
				;
			else if (what == 2 && (v >> 40) & 1)
				atomic_compare_exchange_strong(
					word, &w, w ^ (1ull << ((v >> 20) % 64)));
			else if (atomic_load(word) == w)
				atomic_compare_exchange_strong(meta, &m, nm);
		} else if (what == 4 && (v >> 60) & 1) {
			/* the format table: an entry's word or bytes, the
			 * table's next (deferred records are formatted from
			 * it) */
			base[f.fmt_off + v % f.fmt_size] = (unsigned char)(v >> 32);
		} else if (what == 4) { /* the epoch, a chunk's descriptor */
			hw_tamper_chunks(base, &f, sc_mix(v));
		} else if (what == 5) { /* forge: any byte of any chunk */
			uint64_t span = (uint64_t)f.chunk_count * f.chunk_size;
			base[f.data_off + v % span] = (unsigned char)(v >> 32);
		}
		if (n % 64 == 0)
			sleep_ns(20000);
	}
}

/* Follow the buffer for @secs with readers opened afresh now and then,
 * the first one @first; returns the number of records that failed the
 * self-check. */
static uint64_t follow(double secs, shmlog_reader_t *first, uint64_t *records,
		       uint64_t *lat_max, uint64_t *lat_p99, uint64_t *garbage)
{
	uint64_t bad = 0, end = now_ns() + (uint64_t)(secs * 1e9);
	size_t cap = 1 << 20, nl = 0;
	uint64_t *lat = malloc(cap * sizeof(*lat));
	REQUIRE(lat);
	while (now_ns() < end) {
		shmlog_reader_t *r = first;
		int err = first ? 0 : shmlog_reader_open(buffer, 0, &r);
		first = NULL;
		if (err) {
			/* a damaged fixed header is refused: fine */
			CHECK(err == -EBADMSG || err == -ENODATA ||
			      err == -EPROTONOSUPPORT);
			sleep_ns(1000000);
			continue;
		}
		uint64_t reopen = now_ns() + 100000000;
		while (now_ns() < reopen && now_ns() < end) {
			struct shmlog_record rec;
			struct shmlog_lost l;
			uint64_t t0 = now_ns();
			int ev = shmlog_reader_next(r, &rec, &l);
			uint64_t dt = now_ns() - t0;
			if (nl < cap)
				lat[nl++] = dt;
			CHECK(ev >= 0);
			if (ev == SHMLOG_EV_NONE) {
				shmlog_reader_wait(r, 5);
				continue;
			}
			if (ev != SHMLOG_EV_RECORD)
				continue;
			++*records;
			/* well-formed, whatever the file says */
			CHECK(rec.tag_len <= SHMLOG_TAG_MAX);
			CHECK(rec.tag[rec.tag_len] == '\0');
			CHECK(rec.msg[rec.msg_len] == '\0');
			CHECK(rec.prio >= SHMLOG_VERBOSE &&
			      rec.prio <= SHMLOG_FATAL);
			if (rec.flags & SHMLOG_REC_DEFERRED)
				continue; /* formatted here: not self-checking */
			unsigned w;
			uint64_t i;
			if (!sc_check(&rec, &w, &i) && bad++ < 3)
				fprintf(stderr, "not intact: lane %u tag %.20s "
						"msg %.60s\n",
					rec.lane, rec.tag, rec.msg);
		}
		struct shmlog_lane_stats s = hw_sum(r);
		*garbage += s.torn;
		shmlog_reader_close(r);
	}
	qsort(lat, nl, sizeof(*lat), hw_cmp_u64);
	*lat_max = nl ? lat[nl - 1] : 0;
	*lat_p99 = hw_pct(lat, nl, 0.99);
	free(lat);
	return bad;
}

static void phase(bool forge, double secs)
{
	buffer = test_buffer(forge ? "forge" : "hostile");
	REQUIRE(shmlog_path(buffer, path, sizeof(path)) > 0);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 256 * 1024;
	o.lanes = LANES;
	REQUIRE(shmlog_create(buffer, &o) == 0);

	/* writers that are done: their lanes are the mutator's targets.
	 * They stay alive (stopped) so that their lanes stay theirs: a live
	 * writer must never write where the mutator damages headers. */
	pid_t done[STATIC_WRITERS];
	for (unsigned w = 0; w < STATIC_WRITERS; w++) {
		done[w] = fork();
		REQUIRE(done[w] >= 0);
		if (done[w] == 0) {
			shmlog_t *h;
			if (shmlog_open(buffer, 0, &h))
				_exit(10);
			char tag[16], msg[512];
			int prio;
			for (uint64_t i = 0; i < 400; i++) {
				size_t len = sc_make(w, i, tag, &prio, msg);
				shmlog_write_n(h, prio, tag, msg, len);
			}
			/* printf-style calls formatted by the readers, from the
			 * format table the forging mutator scribbles on too */
			for (int i = 0; forge && w == 0 && i < 50; i++)
				shmlog_print_ex(h, SHMLOG_WRITE_DEFERRED,
						SHMLOG_INFO, "def",
						"deferred %d of %s, %.2f %*s|",
						i, "fifty", i * 0.5, i % 9, "x");
			raise(SIGSTOP);
			_exit(0);
		}
		int st;
		REQUIRE(waitpid(done[w], &st, WUNTRACED) == done[w]);
		REQUIRE(WIFSTOPPED(st));
	}
	unsigned static_lanes[LANES], nstatic = 0;
	{
		shmlog_reader_t *r;
		REQUIRE(shmlog_reader_open(buffer, 0, &r) == 0);
		for (unsigned k = 0; k < LANES; k++) {
			struct shmlog_lane_stats st;
			REQUIRE(shmlog_reader_lane_stats(r, k, &st) == 0);
			if (st.written)
				static_lanes[nstatic++] = k;
		}
		shmlog_reader_close(r);
	}
	CHECK_EQ(nstatic, STATIC_WRITERS);
	/* live writers, paced, in the other lanes */
	pid_t live[LIVE_WRITERS];
	for (unsigned k = 0; k < LIVE_WRITERS; k++)
		live[k] = hw_spawn(buffer, 100 + k, 0, 0, 50000);
	/* the first reader opens before the mutator starts: one opened
	 * later may find the fixed header damaged (refused) at each try for
	 * as long as a loaded machine holds it up, and the forging mutator
	 * hides the live writers' records from readers within ms (it
	 * scribbles on the chunk table): then the writers that are done are
	 * all there is to read, while the scribbling leaves them readable */
	shmlog_reader_t *first;
	REQUIRE(shmlog_reader_open(buffer, 0, &first) == 0);
	pid_t mut = fork();
	REQUIRE(mut >= 0);
	if (mut == 0)
		mutator(forge, 42, static_lanes, nstatic);

	uint64_t records = 0, lat_max = 0, lat_p99 = 0, garbage = 0;
	uint64_t bad =
		follow(secs, first, &records, &lat_max, &lat_p99, &garbage);
	hw_kill(mut);
	for (unsigned w = 0; w < STATIC_WRITERS; w++)
		hw_kill(done[w]);
	for (unsigned k = 0; k < LIVE_WRITERS; k++) {
		/* the live writers were never disturbed */
		CHECK(kill(live[k], 0) == 0);
		hw_kill(live[k]);
	}
	printf("%s: %.0f s, %llu records read, %llu not intact, %llu "
	       "garbage counted as torn; reader_next took p99 %.1f us, max "
	       "%.1f ms\n",
	       forge ? "forging mutator" : "damaging mutator", secs,
	       (unsigned long long)records, (unsigned long long)bad,
	       (unsigned long long)garbage, (double)lat_p99 / 1e3,
	       (double)lat_max / 1e6);
	CHECK(records > 0);
	CHECK(garbage > 0); /* the damage was seen, and counted */
	if (!forge)
		CHECK_EQ(bad, 0);
	/* bounded work: a call walks at most every lane once; even on a
	 * loaded 2-core machine it never takes a second */
	CHECK(lat_max < 1000000000);
	shmlog_remove(buffer);
}

/* A record whose tag is longer than any writer makes (tag_len 200, within
 * the record's length): counted as torn, not copied into the reader's
 * 65-byte tag buffer (found by this test: it overflowed). */
static void long_tag(void)
{
	const char *b = test_buffer("longtag");
	REQUIRE(shmlog_create(b, NULL) == 0);
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	char msg[400];
	memset(msg, 'x', sizeof(msg));
	REQUIRE(shmlog_write_n(h, SHMLOG_INFO, "t", msg, sizeof(msg)) == 0);
	REQUIRE(shmlog_write(h, SHMLOG_INFO, "t", "after") == 0);
	shmlog_close(h);
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	size_t size;
	unsigned char *base = hw_map_rw(path, &size);
	REQUIRE(base != NULL);
	const struct shmlog__fixed *f = (const void *)base;
	long t[4];
	uint64_t tp[4];
	size_t n = 0;
	for (unsigned i = 0; i < f->lane_count && !n; i++)
		n = walk_lane(base, f, i, t, tp, 4);
	REQUIRE(n == 2);
	struct shmlog__rec *r = (void *)(base + t[0]);
	r->tag_len = 200;
	r->msg_len = 100;
	shmlog_reader_t *rd;
	REQUIRE(shmlog_reader_open(b, 0, &rd) == 0);
	struct shmlog_record rec;
	struct shmlog_lost l;
	CHECK_EQ(shmlog_reader_next(rd, &rec, &l), SHMLOG_EV_LOST);
	CHECK_EQ(l.torn, 1);
	CHECK_EQ(shmlog_reader_next(rd, &rec, &l), SHMLOG_EV_RECORD);
	CHECK_STR(rec.msg, "after");
	CHECK_EQ(shmlog_reader_next(rd, &rec, &l), SHMLOG_EV_NONE);
	struct shmlog_lane_stats s = hw_sum(rd);
	CHECK_EQ(s.torn, 1);
	CHECK_EQ(s.written, s.read + s.torn + s.overwritten);
	shmlog_reader_close(rd);
	munmap(base, size);
	shmlog_remove(b);
}

/* The mapping sits between two inaccessible pages. */
static void guard_pages(void)
{
	const char *b = test_buffer("guard");
	REQUIRE(shmlog_create(b, NULL) == 0);
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	FILE *m = fopen("/proc/self/maps", "r");
	REQUIRE(m);
	char line[1024], prev[1024] = "";
	unsigned long lo = 0, hi = 0, plo = 0, phi = 0;
	int found = 0;
	bool before_ok = false, after_ok = false;
	while (fgets(line, sizeof(line), m)) {
		unsigned long a, z;
		char perm[8];
		if (sscanf(line, "%lx-%lx %7s", &a, &z, perm) != 3)
			continue;
		if (found == 1) {
			after_ok = a == hi && !strncmp(perm, "---", 3);
			found = 2;
		}
		if (strstr(line, path) && z - a > SHMLOG__PAGE && !found) {
			lo = a;
			hi = z;
			found = 1;
			char pp[8];
			before_ok = sscanf(prev, "%lx-%lx %7s", &plo, &phi, pp) == 3 &&
				    phi == lo && !strncmp(pp, "---", 3);
		}
		snprintf(prev, sizeof(prev), "%s", line);
	}
	fclose(m);
	CHECK(found > 0);
	CHECK(before_ok);
	CHECK(after_ok);
	shmlog_reader_close(r);
	shmlog_remove(b);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	guard_pages();
	long_tag();
	phase(false, secs);
	phase(true, secs);
	return test_done("test_hostile");
}
