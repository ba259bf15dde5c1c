/* SPDX-License-Identifier: MIT */
/*
 * Live tampering: a mutator scribbles on record words (state bits, single
 * bits, words moved 8 bytes into their own header), record lengths, lane
 * positions (head, reserve, next_seq) and the chunk table (descriptor
 * words, the epoch) of lanes that writers are writing at full speed (a
 * PAD in one pick of four: given another state, a PAD whose word was
 * all a writer wrote framed what the chunk held before, a whole record
 * of another lane, shown again out of its writer's order),
 * while readers follow: one that keeps up and one that lags (so that
 * writers lap it, the window where a torn copy would slip through).
 *
 * The mutator never touches a message byte, so every record a reader
 * returns must be one a writer wrote whole: each is checked against its
 * self-description (the message, tag and priority of record i of writer
 * w are a function of (w, i), like a checksum the writer put in it), and
 * each writer's records must come in order, none twice. Zero bad records
 * allowed. Writers must never fail nor crash; every reader call is timed.
 *
 * Then the chunk table alone: a scribbled descriptor can give a live
 * writer's chunk to another writer, and two writers then write over each
 * other's records, so what a reader returns is no longer the point (it is
 * counted and printed); readers must not crash nor hang, and writers must
 * not crash (they may drop records, counted).
 *
 * Last, many writers: 12 writer processes into a 16 MiB, 16-lane buffer
 * (so the space policy's surveys, lists of own chunks and reserved rows
 * are in play) while the mutator scribbles on the chunk table and on
 * every word of the lane table (owner words, counters, claim marks,
 * positions), and a reader follows: no writer may crash, no reader call may hang.
 *
 * usage: test_tamper [SECONDS]
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "hostile.h"
#include "internal.h"

#define LANES 4
#define WRITERS 3

static const char *buffer;
static char path[512];

/* One of the first 64 record headers of lane @lane, picked by @v (racy:
 * the writer is writing; whatever is found is only a target), and the
 * position its word named; NULL if none. */
static struct shmlog__rec *pick(unsigned char *base,
				const struct shmlog__fixed *f, unsigned lane,
				uint64_t v, uint64_t *pos_out)
{
	long offs[64];
	uint64_t pos[64];
	size_t n = hw_lane_records(base, f, lane, offs, pos, 64);
	if (!n)
		return NULL;
	size_t k = (size_t)(v % 64) < n ? (size_t)(v % 64) : n - 1;
	/* one pick in four a PAD if there is one: the bytes behind it are
	 * not the record's (a writer writes them zero) */
	for (size_t j = 0; j < n && (v >> 40) % 4 == 0; j++) {
		const struct shmlog__rec *r =
			(const void *)(base + offs[(k + j) % n]);
		if ((atomic_load(&r->word) & REC_STATE_MASK) == REC_PAD) {
			k = (k + j) % n;
			break;
		}
	}
	*pos_out = pos[k];
	return (void *)(base + offs[k]);
}

/* Scribble on a word of lane @lane's control block: any (@all), or one
 * of its positions. */
static void tamper_lane(unsigned char *base, const struct shmlog__fixed *f,
			unsigned lane, uint64_t v, bool all)
{
	struct shmlog__lane *l =
		(void *)(base + f->lanes_off + lane * sizeof(struct shmlog__lane));
	_Atomic uint64_t *w[] = {&l->reserve, &l->head,	      &l->next_seq,
				 &l->owner,   &l->claims,     &l->torn,
				 &l->claim_mark};
	_Atomic uint64_t *p = w[(v >> 8) % (all ? 7 : 3)];
	uint64_t x = atomic_load(p);
	switch ((v >> 12) % 5) {
	case 0: x = sc_mix(v); break;
	case 1: x += 8; break;
	case 2: x -= 8; break;
	case 3: x += (v >> 20) % 2048; break;
	default: x ^= 1ull << ((v >> 20) % 64); break;
	}
	atomic_store(p, x);
}

/* @tables: 1 the chunk table only, 2 the chunk and lane tables. */
static void mutator(uint64_t seed, int tables)
{
	size_t size;
	unsigned char *base = hw_map_rw(path, &size);
	if (!base)
		_exit(21);
	struct shmlog__fixed f;
	memcpy(&f, base, sizeof(f));
	for (uint64_t n = 0;; n++) {
		seed = sc_mix(seed + n);
		uint64_t v = sc_mix(seed ^ 0xabcdef);
		unsigned lane = (unsigned)(v % f.lane_count);
		unsigned what = tables == 1	? 6
				: tables == 2 ? 6 + (unsigned)(seed % 2)
					      : (unsigned)(seed % 6);
		uint64_t pos = 0;
		if (what == 6) { /* the epoch, a chunk's descriptor */
			hw_tamper_chunks(base, &f, v);
		} else if (what == 7) { /* any word of a lane's block */
			tamper_lane(base, &f, lane, v, true);
		} else if (what == 5) { /* a lane position */
			tamper_lane(base, &f, lane, v, false);
		} else {
			struct shmlog__rec *r = pick(base, &f, lane, v >> 8, &pos);
			if (!r)
				continue;
			uint64_t w = atomic_load(&r->word);
			if ((w & ~7ull) != pos)
				continue;
			/* The writer may reuse these bytes at any moment:
			 * every change is a compare-and-swap against what
			 * was read while the word named the record, so that
			 * it lands on that record's header or not at all,
			 * never in a message. */
			_Atomic uint64_t *word = &r->word;
			_Atomic uint64_t *seq = (void *)((char *)r + 8);
			_Atomic uint64_t *time = (void *)((char *)r + 16);
			_Atomic uint64_t *ids = (void *)((char *)r + 24);
			_Atomic uint64_t *meta = (void *)((char *)r + 32);
			uint64_t sv = atomic_load(seq), tv = atomic_load(time);
			uint64_t iv = atomic_load(ids), mv = atomic_load(meta);
			if (atomic_load(word) != w)
				continue; /* reused meanwhile */
			switch (what) {
			case 0: /* state bits only */
				atomic_compare_exchange_strong(
					word, &w, (w & ~7ull) | ((v >> 16) % 8));
				break;
			case 1: /* one bit of the word */
				atomic_compare_exchange_strong(
					word, &w, w ^ (1ull << ((v >> 16) % 64)));
				break;
			case 2: /* moved 8 bytes up, into its own seq: as is,
				 * or naming its new place */
				if (atomic_compare_exchange_strong(word, &w, 0))
					atomic_compare_exchange_strong(
						seq, &sv,
						(v >> 16) & 1 ? w : (pos + 8) | (w & 7));
				break;
			case 3: { /* the length (low 16 bits of meta) */
				uint64_t len = mv & 0xffff;
				switch ((v >> 16) % 3) {
				case 0: len ^= 8u << ((v >> 20) % 8); break;
				case 1: len += 8; break;
				default: len -= 8; break;
				}
				uint64_t nv = (mv & ~0xffffull) | (len & 0xffff);
				if (atomic_load(word) == w)
					atomic_compare_exchange_strong(meta, &mv, nv);
				break;
			}
			default: /* a TORN header flipped to COMMITTED: the
				  * header as a repair leaves it (seq, len) */
				if (!atomic_compare_exchange_strong(word, &w, 0))
					break;
				atomic_compare_exchange_strong(time, &tv, 0);
				atomic_compare_exchange_strong(ids, &iv, 0);
				atomic_compare_exchange_strong(meta, &mv,
							       mv & 0xffff);
				uint64_t zero = 0;
				atomic_compare_exchange_strong(
					word, &zero, pos | REC_COMMITTED);
				break;
			}
		}
		if (n % 8 == 0)
			sleep_ns(30000);
	}
}

/* A writer that writes until killed, whatever its writes return (a
 * scribbled table may cost it records: dropped, counted). */
static pid_t fork_writer(unsigned id)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid)
		return pid;
	shmlog_t *h;
	if (shmlog_open(buffer, 0, &h))
		_exit(10);
	char tag[16], msg[512];
	int prio;
	for (uint64_t i = 0;; i++) {
		size_t len = sc_make(id, i, tag, &prio, msg);
		shmlog_write_n(h, prio, tag, msg, len);
	}
}

struct result {
	uint64_t records, bad, disorder, torn, corrupt, lat_max;
};

/* Follow for @secs; @lag_ns: pause between batches (to be lapped). The
 * first records out of order are printed under @name (NULL: not). */
static void follow(double secs, uint64_t lag_ns, struct result *res,
		   const char *name)
{
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
	while (now_ns() < end) {
		shmlog_reader_t *r;
		REQUIRE(shmlog_reader_open(buffer, 0, &r) == 0);
		int64_t last[WRITERS];
		struct shmlog_record prev[WRITERS];
		memset(prev, 0, sizeof(prev));
		for (int k = 0; k < WRITERS; k++)
			last[k] = -1;
		uint64_t reopen = now_ns() + 200000000;
		unsigned batch = 0;
		while (now_ns() < reopen && now_ns() < end) {
			struct shmlog_record rec;
			struct shmlog_lost l;
			uint64_t t0 = now_ns();
			int ev = shmlog_reader_next(r, &rec, &l);
			uint64_t dt = now_ns() - t0;
			if (dt > res->lat_max)
				res->lat_max = dt;
			CHECK(ev >= 0);
			if (ev == SHMLOG_EV_NONE || (lag_ns && ++batch % 64 == 0)) {
				if (lag_ns)
					sleep_ns(lag_ns);
				else
					shmlog_reader_wait(r, 5);
				continue;
			}
			if (ev != SHMLOG_EV_RECORD)
				continue;
			res->records++;
			unsigned w;
			uint64_t i;
			if (!sc_check(&rec, &w, &i) || w < 100 ||
			    w >= 100 + WRITERS) {
				if (res->bad++ < 5)
					fprintf(stderr, "not whole: lane %u tag "
							"%.20s msg %.60s\n",
						rec.lane, rec.tag, rec.msg);
				continue;
			}
			if ((int64_t)i <= last[w - 100] &&
			    res->disorder++ < 5 && name)
				fprintf(stderr, "%s: out of order: writer %u "
						"record %lld (lane %u seq %llu) "
						"after %lld (lane %u seq %llu)\n",
					name, w, (long long)i, rec.lane,
					(unsigned long long)rec.seq,
					(long long)last[w - 100],
					prev[w - 100].lane,
					(unsigned long long)prev[w - 100].seq);
			last[w - 100] = (int64_t)i;
			prev[w - 100] = rec;
		}
		struct shmlog_lane_stats s = hw_sum(r);
		res->torn += s.torn;
		for (unsigned k = 0; k < shmlog_reader_lanes(r); k++) {
			struct shmlog_lane_stats st;
			REQUIRE(shmlog_reader_lane_stats(r, k, &st) == 0);
			res->corrupt += st.corrupt;
		}
		shmlog_reader_close(r);
	}
}

#define MANY 12

/* Many writers, both tables scribbled on: nobody crashes nor hangs. */
static void many_writers(double secs)
{
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 16u << 20;
	o.lanes = 16;
	REQUIRE(shmlog_create(buffer, &o) == 0);
	pid_t w[MANY];
	for (unsigned k = 0; k < MANY; k++)
		w[k] = fork_writer(200 + k);
	pid_t mut = fork();
	REQUIRE(mut >= 0);
	if (mut == 0)
		mutator(777, 2);
	struct result res;
	memset(&res, 0, sizeof(res));
	follow(secs, 0, &res, NULL);
	hw_kill(mut);
	unsigned crashed = 0;
	for (unsigned k = 0; k < MANY; k++) {
		int st;
		pid_t got = waitpid(w[k], &st, WNOHANG);
		if (got == 0) {
			hw_kill(w[k]);
		} else if (got == w[k] && WIFSIGNALED(st)) {
			crashed++;
			fprintf(stderr, "writer %u killed by signal %d\n", k,
				WTERMSIG(st));
		}
	}
	printf("%d writers, chunk and lane tables scribbled on for %.1f s: "
	       "%llu records read, %u writers crashed, reader_next max "
	       "%.1f ms\n",
	       MANY, secs, (unsigned long long)res.records, crashed,
	       (double)res.lat_max / 1e6);
	CHECK_EQ(crashed, 0);
	CHECK(res.records > 0);
	CHECK(res.lat_max < 1000000000);
	shmlog_remove(buffer);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	buffer = test_buffer("tamper");
	REQUIRE(shmlog_path(buffer, path, sizeof(path)) > 0);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 128 * 1024;
	o.lanes = LANES;
	REQUIRE(shmlog_create(buffer, &o) == 0);
	pid_t w[WRITERS];
	for (unsigned k = 0; k < WRITERS; k++)
		w[k] = hw_spawn(buffer, 100 + k, 0, 0, k == 2 ? 20000 : 0);
	pid_t mut = fork();
	REQUIRE(mut >= 0);
	if (mut == 0)
		mutator(1234, 0);

	struct result keep, lag, tables;
	memset(&keep, 0, sizeof(keep));
	memset(&lag, 0, sizeof(lag));
	memset(&tables, 0, sizeof(tables));
	follow(secs / 2, 0, &keep, "reader keeping up");
	follow(secs / 2, 1000000, &lag, "reader lapped");
	hw_kill(mut);
	for (unsigned k = 0; k < WRITERS; k++) {
		/* writers never failed nor crashed */
		CHECK(kill(w[k], 0) == 0);
		int st;
		CHECK(waitpid(w[k], &st, WNOHANG) == 0);
	}
	mut = fork();
	REQUIRE(mut >= 0);
	if (mut == 0)
		mutator(4321, 1);
	follow(secs / 4, 0, &tables, NULL);
	hw_kill(mut);
	for (unsigned k = 0; k < WRITERS; k++) {
		int st;
		pid_t got = waitpid(w[k], &st, WNOHANG);
		CHECK(got == 0 || !WIFSIGNALED(st)); /* no writer crashed */
		if (got == 0)
			hw_kill(w[k]);
	}
	printf("chunk table scribbled on for %.1f s: %llu records read "
	       "(%llu not whole, %llu out of order: forged by the scribbles), "
	       "reader_next max %.1f ms\n",
	       secs / 4, (unsigned long long)tables.records,
	       (unsigned long long)tables.bad,
	       (unsigned long long)tables.disorder,
	       (double)tables.lat_max / 1e6);
	CHECK(tables.lat_max < 1000000000);
	struct result *rs[] = {&keep, &lag};
	const char *names[] = {"reader keeping up", "reader lapped"};
	for (int k = 0; k < 2; k++) {
		printf("live tampering, %s (%.0f s): %llu records, %llu not "
		       "whole, %llu out of order, %llu torn, %llu damaged "
		       "places; slowest reader_next %.1f ms\n",
		       names[k], secs / 2, (unsigned long long)rs[k]->records,
		       (unsigned long long)rs[k]->bad,
		       (unsigned long long)rs[k]->disorder,
		       (unsigned long long)rs[k]->torn,
		       (unsigned long long)rs[k]->corrupt,
		       (double)rs[k]->lat_max / 1e6);
		CHECK(rs[k]->records > 0);
		CHECK_EQ(rs[k]->bad, 0);
		CHECK_EQ(rs[k]->disorder, 0);
		CHECK(rs[k]->corrupt > 0); /* the damage was seen */
		CHECK(rs[k]->lat_max < 1000000000);
	}
	shmlog_remove(buffer);
	many_writers(secs / 4);
	return test_done("test_tamper");
}
