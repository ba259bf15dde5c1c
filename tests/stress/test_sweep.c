/* SPDX-License-Identifier: MIT */
/*
 * The configuration sweep: the write path and the reader across the
 * configurations users pick, not only the small defaults. Each case is a
 * buffer size (the minimum to hundreds of MiB), a lane count (1 to 64),
 * writers (1 to 16, threads of one handle or processes with a handle
 * each), a record length (short, or the longest a message may be), the
 * call (shmlog_write_n() or a printf-style call whose values the reader
 * formats) and a reader that follows the writers or one that dumps the
 * buffer after them. Every writer writes enough to wrap the buffer six
 * times. For each case:
 *  - no writer dies (each case runs in a process of its own, so a thread
 *    that faults fails its case, named, and the sweep goes on);
 *  - every record read describes its own content (selfcheck.h: writer,
 *    number, tag, priority and message all follow from (writer, number))
 *    and no record is read twice;
 *  - the accounting is exact: per lane written = read + overwritten + torn
 *    with nothing torn or damaged, the lanes' written adds up to the
 *    writes the writers saw succeed, and what the reader counted per lane
 *    is what the lane says it read.
 *
 * usage: test_sweep [--long] [CASE...]   (CASE: an index into the table,
 * to run one case again; --long adds the largest buffers and more records)
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "selfcheck.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

enum len_kind { LEN_SHORT, LEN_MAX };
enum call_kind { CALL_PLAIN, CALL_PRINTF };

struct sweep_case {
	unsigned size_kib;
	unsigned lanes;
	unsigned writers;
	bool processes;
	enum len_kind len;
	enum call_kind call;
	bool follow;
};

/* Pairs of every dimension's values, and the configurations that once
 * killed a writer: two threads into 16 MiB with 4 lanes, and 16 writer
 * processes into 16 MiB with 16 lanes (a list of the writer's own chunks
 * read past its end after a pass found another lane above its share). */
static const struct sweep_case cases[] = {
	{ 16384, 4, 2, false, LEN_SHORT, CALL_PLAIN, false },
	{ 16384, 16, 16, true, LEN_SHORT, CALL_PLAIN, false },
	{ 16384, 4, 2, false, LEN_SHORT, CALL_PRINTF, true },
	{ 64, 1, 1, false, LEN_SHORT, CALL_PLAIN, false },
	{ 64, 1, 2, true, LEN_MAX, CALL_PRINTF, true },
	{ 64, 16, 16, false, LEN_SHORT, CALL_PLAIN, true },
	{ 256, 64, 16, false, LEN_SHORT, CALL_PLAIN, true },
	{ 64, 16, 4, true, LEN_MAX, CALL_PLAIN, false },
	{ 64, 4, 16, true, LEN_SHORT, CALL_PRINTF, false },
	{ 1024, 1, 4, false, LEN_SHORT, CALL_PRINTF, false },
	{ 1024, 4, 1, true, LEN_MAX, CALL_PLAIN, true },
	{ 1024, 16, 16, false, LEN_MAX, CALL_PRINTF, false },
	{ 1024, 64, 2, true, LEN_SHORT, CALL_PLAIN, true },
	{ 1024, 64, 16, true, LEN_SHORT, CALL_PRINTF, true },
	{ 4096, 8, 8, false, LEN_SHORT, CALL_PLAIN, true },
	{ 4096, 2, 16, true, LEN_SHORT, CALL_PLAIN, false },
	{ 16384, 1, 16, false, LEN_MAX, CALL_PLAIN, true },
	{ 16384, 64, 4, false, LEN_SHORT, CALL_PRINTF, false },
	{ 16384, 16, 2, true, LEN_MAX, CALL_PRINTF, false },
	{ 16384, 64, 16, true, LEN_SHORT, CALL_PLAIN, true },
	{ 65536, 4, 4, true, LEN_SHORT, CALL_PLAIN, true },
	{ 65536, 16, 8, false, LEN_MAX, CALL_PRINTF, true },
	{ 131072, 64, 16, true, LEN_SHORT, CALL_PLAIN, false },
	{ 131072, 4, 2, false, LEN_MAX, CALL_PLAIN, false },
	{ 131072, 1, 1, true, LEN_SHORT, CALL_PRINTF, true },
	/* --long only: the largest buffers */
	{ 262144, 16, 16, true, LEN_SHORT, CALL_PLAIN, true },
	{ 524288, 64, 8, false, LEN_MAX, CALL_PRINTF, false },
};
#define LONG_FROM 25
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* Bytes a record of @len takes in the ring, near enough to size a run. */
#define FILL_BYTES(len) ((len) == LEN_MAX ? 4100u : 120u)

struct run {
	const struct sweep_case *c;
	const char *buffer;
	shmlog_t *h; /* threads: the one handle */
	pid_t pids[16]; /* processes */
	long per_writer;
	/* shared with writer processes */
	struct counts {
		_Atomic uint64_t ok[16], failed[16];
		_Atomic unsigned done;
	} *n;
};

/* Writer @w's record @i: selfcheck.h's, with the message made as long as
 * a message may be for LEN_MAX. */
static size_t make(const struct sweep_case *c, unsigned w, uint64_t i,
		   char *tag, int *prio, char *msg, size_t cap)
{
	size_t len = sc_make(w, i, tag, prio, msg);
	if (c->len == LEN_MAX) {
		uint64_t h = sc_mix(((uint64_t)w << 40) ^ i ^ 0x5eed);
		for (; len < cap - 1; len++)
			msg[len] = (char)('A' + (sc_mix(h + len) % 26));
		msg[len] = '\0';
	}
	return len;
}

static void write_all(struct run *rn, shmlog_t *h, unsigned w)
{
	const struct sweep_case *c = rn->c;
	static _Thread_local char msg[SHMLOG_MSG_MAX + 1];
	char tag[16];
	int prio;
	for (long i = 0; i < rn->per_writer; i++) {
		size_t len = make(c, w, (uint64_t)i, tag, &prio, msg, sizeof(msg));
		int r;
		if (c->call == CALL_PLAIN) {
			r = shmlog_write_n(h, prio, tag, msg, len);
		} else {
			/* the same text, as a format and its values */
			size_t head = (size_t)(strchr(strchr(msg, ' ') + 1, ' ') -
					       msg) + 1;
			SHMLOG_LOG_TO(h, prio, tag, "w=%u i=%llu %s", w,
				      (unsigned long long)i, msg + head);
			r = 0;
		}
		if (r == 0)
			atomic_fetch_add(&rn->n->ok[w], 1);
		else
			atomic_fetch_add(&rn->n->failed[w], 1);
	}
}

struct thread_arg {
	struct run *rn;
	unsigned w;
};

static void *writer_thread(void *p)
{
	struct thread_arg *a = p;
	write_all(a->rn, a->rn->h, a->w);
	atomic_fetch_add(&a->rn->n->done, 1);
	return NULL;
}

/* The reader's tally. */
struct tally {
	uint64_t records, bad, twice;
	uint64_t per_lane[64];
	uint8_t *seen[16]; /* a bit per record number, per writer */
};

static void take(struct run *rn, struct tally *t, const struct shmlog_record *rec)
{
	unsigned w;
	uint64_t i;
	t->records++;
	if (rec->lane < 64)
		t->per_lane[rec->lane]++;
	char tag[16];
	int prio;
	static char want[SHMLOG_MSG_MAX + 1];
	unsigned ww;
	unsigned long long ii;
	if (sscanf(rec->msg, "w=%u i=%llu ", &ww, &ii) != 2 ||
	    ww >= rn->c->writers || ii >= (unsigned long long)rn->per_writer) {
		if (t->bad++ < 5)
			fprintf(stderr, "  bad record: %.80s\n", rec->msg);
		return;
	}
	w = ww;
	i = ii;
	size_t len = make(rn->c, w, i, tag, &prio, want, sizeof(want));
	/* a record cut to fit a small lane is a prefix, and says so (a
	 * printf-style call's value cut short ends in "<...>") */
	size_t got = rec->msg_len;
	bool cut = (rec->flags & SHMLOG_REC_TRUNCATED) && got < len;
	if (cut && (rec->flags & SHMLOG_REC_DEFERRED) && got >= 5 &&
	    !memcmp(rec->msg + got - 5, "<...>", 5))
		got -= 5;
	if ((!cut && got != len) || memcmp(want, rec->msg, got) ||
	    strcmp(tag, rec->tag) || prio != rec->prio) {
		if (t->bad++ < 5)
			fprintf(stderr, "  record of writer %u number %llu "
					"differs from what it wrote (%zu bytes, "
					"flags %#x; wrote %zu)\n",
				w, (unsigned long long)i, rec->msg_len,
				rec->flags, len);
		return;
	}
	uint8_t bit = (uint8_t)(1u << (i & 7));
	if (t->seen[w][i >> 3] & bit)
		t->twice++;
	t->seen[w][i >> 3] |= bit;
}

/* Writers still writing: not done, and (processes) not exited either, so
 * that a writer that died does not keep the follower following. */
static bool writers_left(const struct run *rn)
{
	if (atomic_load(&rn->n->done) >= rn->c->writers)
		return false;
	if (!rn->c->processes)
		return true; /* a thread that faults ends the whole case */
	for (unsigned w = 0; w < rn->c->writers; w++) {
		siginfo_t si = {0};
		/* WNOWAIT: looked at, left to be reaped and judged later */
		if (waitid(P_PID, (id_t)rn->pids[w], &si,
			   WEXITED | WNOHANG | WNOWAIT) != 0 ||
		    si.si_pid == 0)
			return true;
	}
	return false; /* every one exited, done or not */
}

/* Read until nothing is left; a follower first follows until the writers
 * are done or gone. Bounded: the writers write a fixed count and end. */
static void read_all(struct run *rn, shmlog_reader_t *r, struct tally *t,
		     bool follow)
{
	struct shmlog_record rec;
	struct shmlog_lost lost;
	for (;;) {
		int ev = shmlog_reader_next(r, &rec, &lost);
		if (ev == SHMLOG_EV_RECORD) {
			take(rn, t, &rec);
			continue;
		}
		if (ev == SHMLOG_EV_LOST)
			continue;
		REQUIRE(ev == SHMLOG_EV_NONE);
		if (follow && writers_left(rn)) {
			shmlog_reader_wait(r, 50);
			continue;
		}
		/* everything published is read once a look at every head
		 * finds nothing new (shmlog_reader_wait()) */
		if (shmlog_reader_wait(r, 0) == -ETIMEDOUT)
			return;
	}
}

static void describe(const struct sweep_case *c, char *buf, size_t cap)
{
	snprintf(buf, cap, "%u KiB, %u lanes, %u writer %s, %s records, %s, %s",
		 c->size_kib, c->lanes, c->writers,
		 c->processes ? "processes" : "threads",
		 c->len == LEN_MAX ? "longest" : "short",
		 c->call == CALL_PLAIN ? "shmlog_write_n()" : "printf-style",
		 c->follow ? "a follower" : "read after");
}

/* One case, in a process of its own: 0 if every check held. */
static int run_case(const struct sweep_case *c, bool longer)
{
	struct run rn = { .c = c };
	rn.buffer = test_buffer("sweep");
	shmlog_remove(rn.buffer);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = (uint64_t)c->size_kib << 10;
	o.lanes = c->lanes;
	int err = shmlog_create(rn.buffer, &o);
	if (err)
		fprintf(stderr, "  shmlog_create: %s\n", shmlog_strerror(err));
	REQUIRE(err == 0);
	/* enough to wrap the buffer six times, at least 2,000 a writer */
	uint64_t total = 6 * o.size / FILL_BYTES(c->len);
	if (longer)
		total *= 4;
	if (SANITIZED)
		total /= 8;
	rn.per_writer = (long)(total / c->writers);
	if (rn.per_writer < 2000)
		rn.per_writer = 2000;
	rn.n = mmap(NULL, sizeof(*rn.n), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(rn.n != MAP_FAILED);

	struct tally t = { 0 };
	for (unsigned w = 0; w < c->writers; w++)
		REQUIRE((t.seen[w] = calloc((size_t)rn.per_writer / 8 + 1, 1)));
	shmlog_reader_t *r = NULL;
	if (c->follow)
		REQUIRE(shmlog_reader_open(rn.buffer, 0, &r) == 0);

	pid_t *pids = rn.pids;
	pthread_t th[16];
	struct thread_arg ta[16];
	if (c->processes) {
		for (unsigned w = 0; w < c->writers; w++) {
			pids[w] = fork();
			REQUIRE(pids[w] >= 0);
			if (pids[w] == 0) {
				shmlog_t *h;
				if (shmlog_open(rn.buffer, 0, &h))
					_exit(3);
				write_all(&rn, h, w);
				atomic_fetch_add(&rn.n->done, 1);
				shmlog_close(h);
				_exit(0);
			}
		}
	} else {
		REQUIRE(shmlog_open(rn.buffer, 0, &rn.h) == 0);
		for (unsigned w = 0; w < c->writers; w++) {
			ta[w] = (struct thread_arg){ &rn, w };
			REQUIRE(pthread_create(&th[w], NULL, writer_thread,
					       &ta[w]) == 0);
		}
	}
	if (c->follow)
		read_all(&rn, r, &t, true);

	int deaths = 0;
	for (unsigned w = 0; w < c->writers; w++) {
		if (!c->processes) {
			pthread_join(th[w], NULL);
			continue;
		}
		int st;
		REQUIRE(waitpid(pids[w], &st, 0) == pids[w]);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			deaths++;
			fprintf(stderr, "  writer %u: %s %d\n", w,
				WIFSIGNALED(st) ? "killed by signal" : "exit",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		}
	}
	if (!c->follow)
		REQUIRE(shmlog_reader_open(rn.buffer, 0, &r) == 0);
	read_all(&rn, r, &t, false);

	CHECK_EQ(deaths, 0);
	CHECK_EQ(t.bad, 0);
	CHECK_EQ(t.twice, 0);
	uint64_t written = 0, read = 0;
	unsigned lanes = shmlog_reader_lanes(r);
	for (unsigned l = 0; l < lanes; l++) {
		struct shmlog_lane_stats st;
		REQUIRE(shmlog_reader_lane_stats(r, l, &st) == 0);
		written += st.written;
		read += st.read;
		CHECK_EQ(st.written, st.read + st.overwritten + st.torn);
		CHECK_EQ(st.torn, 0);
		CHECK_EQ(st.corrupt, 0);
		if (l < 64)
			CHECK_EQ(st.read, t.per_lane[l]);
	}
	/* a call that found no lane is counted dropped by the buffer, and a
	 * plain call says it failed */
	uint64_t tried = 0, failed = 0;
	for (unsigned w = 0; w < c->writers; w++) {
		tried += rn.n->ok[w] + rn.n->failed[w];
		failed += rn.n->failed[w];
	}
	struct shmlog_info info;
	REQUIRE(shmlog_stat(rn.buffer, &info) == 0);
	CHECK_EQ(written + info.dropped, tried);
	if (c->call == CALL_PLAIN)
		CHECK_EQ(failed, info.dropped);
	CHECK_EQ(read, t.records);
	/* a writer with a lane of its own never fails a write */
	if (c->writers <= c->lanes)
		for (unsigned w = 0; w < c->writers; w++)
			CHECK_EQ(rn.n->failed[w], 0);
	CHECK(t.records > 0);

	shmlog_reader_close(r);
	if (rn.h)
		shmlog_close(rn.h);
	shmlog_remove(rn.buffer);
	for (unsigned w = 0; w < c->writers; w++)
		free(t.seen[w]);
	printf("    %llu records written, %llu read, %llu dropped\n",
	       (unsigned long long)written, (unsigned long long)t.records,
	       (unsigned long long)info.dropped);
	fflush(stdout);
	return test_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	bool longer = false;
	bool pick[NCASES] = { false }, picked = false;
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--long")) {
			longer = true;
			continue;
		}
		unsigned k = (unsigned)atoi(argv[a]);
		REQUIRE(k < NCASES);
		pick[k] = picked = true;
	}
	unsigned last = longer || picked ? NCASES : LONG_FROM;
	int failed = 0, ran = 0;
	for (unsigned k = 0; k < last; k++) {
		if (picked && !pick[k])
			continue;
		const struct sweep_case *c = &cases[k];
		/* sanitizers: memory and time grow with the buffer */
		if (SANITIZED && c->size_kib > 16384)
			continue;
		char what[160];
		describe(c, what, sizeof(what));
		printf("case %u: %s\n", k, what);
		fflush(stdout);
		pid_t p = fork();
		REQUIRE(p >= 0);
		if (p == 0)
			_exit(run_case(c, longer));
		int st;
		REQUIRE(waitpid(p, &st, 0) == p);
		ran++;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			failed++;
			fprintf(stderr, "case %u FAILED (%s): %s %d\n", k, what,
				WIFSIGNALED(st) ? "killed by signal" : "exit",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		}
	}
	printf("test_sweep: %d cases, %d failed\n", ran, failed);
	return failed ? 1 : 0;
}
