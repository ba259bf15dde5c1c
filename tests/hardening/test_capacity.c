/* SPDX-License-Identifier: MIT */
/*
 * Capacity: how much of its own recent history each writer keeps in a
 * 4 MiB buffer with the default lanes, measured through the public API
 * only. A writer's history kept is the sum of kept_record_bytes() over its
 * records that a reader can still read (common/kept.h); what it wrote, the
 * same sum over every record it wrote. The bounds:
 *   - a lone writer keeps at least 90 % of the buffer's capacity
 *     (shmlog_info.capacity);
 *   - with N writers, each keeps at least 90 % of capacity / N, or all it
 *     wrote if that is less, whatever the others write, one of them
 *     flooding (10 x capacity) included;
 *   - a quiet writer keeps all of its 100 records while a flooder runs.
 * What it keeps must be its newest records: the ones read of each writer
 * are numbered without a hole up to the last one it wrote.
 *
 * The books must balance exactly, too: the reader is opened before the
 * first write, so records read + records reported lost (SHMLOG_EV_LOST)
 * = records written, and the lanes' counters and shmlog_stat() agree.
 *
 * Writers are threads of this process (sharing one handle, as a program's
 * threads do) or forked processes (a handle each). Each holds on to its
 * handle, and so to its place in the buffer, until the figures are taken:
 * the parent drives them through phases with a pipe per writer ("go") and
 * one shared pipe back ("done"), then closes the go pipes to let them exit.
 * No sleeps; alarm() bounds the whole run. The buffer's name is unique to
 * the run and removed at the end, on failure and on the alarm too.
 *
 * usage: test_capacity
 *   Every case prints its figures, the failing ones marked, and the run
 *   goes on through every case before it fails: the figures of a ring that
 *   keeps less than the bounds are all in one failed run. Nothing turns
 *   the bounds off.
 */
#include <limits.h>
#include <pthread.h>
#include <sys/syscall.h>

#include "hostile.h"
#include "kept.h"

#define BUFFER_SIZE (4u << 20)
#define MAX_WRITERS 8
#define PHASES 2
#define BOUND 0.90 /* share of the fair share that must be kept */
#define MSG_MIN 24
#define MSG_MAX 300
#define QUIET_RECORDS 100
#define TIME_LIMIT_S 100 /* under CTest's 120 s */

static const char *case_name; /* the case running, for failure messages */

/* ---- the buffer, removed whatever happens ---- */

static char buffer_name[96];
static char buffer_file[PATH_MAX];
static pid_t main_pid;

static void remove_buffer(void)
{
	if (getpid() == main_pid && buffer_file[0])
		unlink(buffer_file);
	buffer_file[0] = '\0';
}

static void on_fatal_signal(int sig)
{
	static const char msg[] = "test_capacity: time limit or signal: "
				  "giving up (a writer or the reader hung)\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do about it */
	}
	if (getpid() == main_pid && buffer_file[0])
		unlink(buffer_file);
	_exit(128 + sig);
}

static void arm_cleanup(void)
{
	main_pid = getpid();
	atexit(remove_buffer);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal_signal;
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a writer whose parent is gone: EPIPE */
	alarm(TIME_LIMIT_S);
}

/* Create the buffer of one case; returns its capacity. */
static uint64_t buffer_new(void)
{
	struct shmlog_create_opts o;
	struct shmlog_info info;
	shmlog_create_opts_init(&o);
	o.size = BUFFER_SIZE; /* lanes: the default for the size */
	snprintf(buffer_name, sizeof(buffer_name), "%s",
		 test_buffer("capacity"));
	REQUIRE(shmlog_path(buffer_name, buffer_file, sizeof(buffer_file)) > 0);
	shmlog_remove(buffer_name); /* a leftover of a killed run */
	REQUIRE(shmlog_create(buffer_name, &o) == 0);
	REQUIRE(shmlog_stat(buffer_name, &info) == 0);
	REQUIRE(info.capacity > 0);
	return info.capacity;
}

/* ---- records: self-describing, messages of 24..300 bytes ---- */

/* Record @i of writer @w: tag "capW", a message "w=W i=I " and letters,
 * its length and priority drawn from (w, i). Returns the message length. */
static size_t rec_make(unsigned w, uint64_t i, char *tag, int *prio,
		       char *msg)
{
	uint64_t h = sc_mix(((uint64_t)w << 40) ^ i ^ 0x5ca1ab1eull);
	snprintf(tag, 16, "cap%u", w);
	*prio = SHMLOG_VERBOSE + (int)(h % 6);
	int n = snprintf(msg, 40, "w=%u i=%llu ", w, (unsigned long long)i);
	size_t len = MSG_MIN + (size_t)(h >> 8) % (MSG_MAX - MSG_MIN + 1);
	if (len < (size_t)n)
		len = (size_t)n;
	for (size_t k = (size_t)n; k < len; k++)
		msg[k] = (char)('a' + sc_mix(h + k) % 26);
	msg[len] = '\0';
	return len;
}

/* Is @r record i of writer w, whole? Sets *@w and *@i. */
static bool rec_check(const struct shmlog_record *r, unsigned *w, uint64_t *i)
{
	unsigned ww;
	unsigned long long ii;
	char tag[16], msg[MSG_MAX + 1];
	int prio;
	if (sscanf(r->msg, "w=%u i=%llu ", &ww, &ii) != 2)
		return false;
	size_t len = rec_make(ww, ii, tag, &prio, msg);
	if (len != r->msg_len || memcmp(msg, r->msg, len) ||
	    strcmp(tag, r->tag) || prio != r->prio)
		return false;
	*w = ww;
	*i = ii;
	return true;
}

/* ---- writers ---- */

/* What a writer writes in one phase: records until @bytes of history
 * (kept_record_bytes) are written, or exactly @records of them. */
struct phase {
	uint64_t bytes, records;
};

/* One writer. In memory shared with the forked ones. */
struct writer {
	unsigned id;
	bool flooder;
	struct phase phase[PHASES];
	int go[2];	     /* the parent writes a byte per phase, closes */
	pid_t pid, tid;	     /* as its records will say */
	uint64_t written;    /* records */
	uint64_t written_b;  /* bytes of history written */
	uint64_t failed;     /* writes that returned an error */
	/* what the reader found */
	uint64_t kept, kept_b, first, last, out_of_order;
};

struct crew {
	struct writer w[MAX_WRITERS];
	unsigned n;
	bool processes;
	int done[2]; /* every writer writes a byte per phase done */
	shmlog_t *h; /* the threads' handle */
	pthread_t thr[MAX_WRITERS];
};

static bool phase_done(const struct phase *p, uint64_t recs, uint64_t bytes)
{
	return p->records ? recs >= p->records : bytes >= p->bytes;
}

static void phase_write(shmlog_t *h, struct writer *w, const struct phase *p)
{
	char tag[16], msg[MSG_MAX + 1];
	int prio;
	uint64_t recs = 0, bytes = 0;
	while (!phase_done(p, recs, bytes)) {
		size_t len = rec_make(w->id, w->written, tag, &prio, msg);
		if (shmlog_write_n(h, prio, tag, msg, len)) {
			w->failed++; /* a writer with a place never fails */
			return;
		}
		uint64_t b = kept_record_bytes(strlen(tag), len);
		w->written++;
		w->written_b += b;
		bytes += b;
		recs++;
	}
}

/* The life of a writer: a phase per byte on its go pipe, then hold on
 * until the parent closes the pipe (it has measured). */
static int writer_life(shmlog_t *h, struct writer *w, int done_fd)
{
	char c;
	w->pid = getpid();
	w->tid = (pid_t)syscall(SYS_gettid);
	for (int p = 0; p < PHASES; p++) {
		if (read(w->go[0], &c, 1) != 1)
			return -1; /* the parent gave up */
		phase_write(h, w, &w->phase[p]);
		if (write(done_fd, "d", 1) != 1)
			return -1;
	}
	while (read(w->go[0], &c, 1) > 0)
		;
	return 0;
}

static struct crew *the_crew;

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	writer_life(the_crew->h, w, the_crew->done[1]);
	return NULL;
}

static void writer_process(struct crew *cr, struct writer *w)
{
	shmlog_t *h;
	/* only the parent may hold a go pipe's write end, or its closing
	 * would not end the writers' last read; and no read end but ours */
	for (unsigned k = 0; k < cr->n; k++) {
		close(cr->w[k].go[1]);
		if (&cr->w[k] != w)
			close(cr->w[k].go[0]);
	}
	close(cr->done[0]);
	if (shmlog_open(buffer_name, 0, &h))
		_exit(10);
	int err = writer_life(h, w, cr->done[1]);
	shmlog_close(h);
	_exit(err ? 11 : 0);
}

static struct crew *crew_new(unsigned n, bool processes)
{
	REQUIRE(n >= 1 && n <= MAX_WRITERS);
	struct crew *cr = mmap(NULL, sizeof(*cr), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(cr != MAP_FAILED);
	memset(cr, 0, sizeof(*cr));
	cr->n = n;
	cr->processes = processes;
	for (unsigned k = 0; k < n; k++)
		cr->w[k].id = k;
	return cr;
}

static void crew_start(struct crew *cr)
{
	REQUIRE(pipe(cr->done) == 0);
	for (unsigned k = 0; k < cr->n; k++)
		REQUIRE(pipe(cr->w[k].go) == 0);
	if (!cr->processes) {
		REQUIRE(shmlog_open(buffer_name, 0, &cr->h) == 0);
		the_crew = cr;
		for (unsigned k = 0; k < cr->n; k++)
			REQUIRE(pthread_create(&cr->thr[k], NULL, writer_thread,
					       &cr->w[k]) == 0);
		return;
	}
	fflush(NULL);
	for (unsigned k = 0; k < cr->n; k++) {
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0)
			writer_process(cr, &cr->w[k]);
		cr->w[k].pid = pid;
		close(cr->w[k].go[0]);
	}
}

/* Run every writer's next phase, and wait until all are done with it. */
static void crew_phase(struct crew *cr)
{
	for (unsigned k = 0; k < cr->n; k++)
		REQUIRE(write(cr->w[k].go[1], "g", 1) == 1);
	for (unsigned k = 0; k < cr->n; k++) {
		char c;
		REQUIRE(read(cr->done[0], &c, 1) == 1);
	}
}

/* Let the writers go (they have been measured), and wait for them. */
static void crew_finish(struct crew *cr)
{
	for (unsigned k = 0; k < cr->n; k++)
		close(cr->w[k].go[1]);
	for (unsigned k = 0; k < cr->n; k++) {
		if (cr->processes) {
			CHECK_EQ(hw_reap(cr->w[k].pid), 0);
		} else {
			pthread_join(cr->thr[k], NULL);
		}
	}
	if (!cr->processes) {
		shmlog_close(cr->h);
		for (unsigned k = 0; k < cr->n; k++)
			close(cr->w[k].go[0]);
	}
	close(cr->done[0]);
	close(cr->done[1]);
}

/* ---- measuring ---- */

struct books {
	uint64_t read, stray, bad, lost_overwritten, lost_torn, lost_events;
};

static struct writer *writer_of(struct crew *cr,
				const struct shmlog_record *rec)
{
	for (unsigned k = 0; k < cr->n; k++)
		if ((uint32_t)cr->w[k].pid == rec->pid &&
		    (uint32_t)cr->w[k].tid == rec->tid)
			return &cr->w[k];
	return NULL;
}

/* A record read: whose, whole, and in its writer's order? */
static void tally(struct crew *cr, const struct shmlog_record *rec,
		  struct books *bk)
{
	struct writer *w = writer_of(cr, rec);
	unsigned id;
	uint64_t i;
	bk->read++;
	if (!w) {
		bk->stray++;
		return;
	}
	if (!rec_check(rec, &id, &i) || id != w->id) {
		bk->bad++;
		return;
	}
	if (w->kept && i != w->last + 1)
		w->out_of_order++; /* a hole, or a record out of order */
	if (!w->kept)
		w->first = i;
	w->last = i;
	w->kept++;
	w->kept_b += kept_record_bytes(rec->tag_len, rec->msg_len);
}

/* Read everything the buffer holds; the reader was opened before the first
 * write. Then check that the books balance. */
static void measure(struct crew *cr, shmlog_reader_t *r)
{
	struct books bk = {0};
	for (;;) {
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev = shmlog_reader_next(r, &rec, &l);
		if (ev == SHMLOG_EV_NONE)
			break;
		REQUIRE(ev > 0);
		if (ev == SHMLOG_EV_RECORD) {
			tally(cr, &rec, &bk);
		} else {
			bk.lost_events++;
			bk.lost_overwritten += l.overwritten;
			bk.lost_torn += l.torn;
		}
	}
	uint64_t written = 0;
	for (unsigned k = 0; k < cr->n; k++) {
		struct writer *w = &cr->w[k];
		written += w->written;
		CHECK_EQ(w->failed, 0);
		/* its newest records, without a hole, up to its last one */
		CHECK(w->kept > 0);
		CHECK_EQ(w->out_of_order, 0);
		CHECK_EQ(w->last + 1, w->written);
		CHECK_EQ(w->first + w->kept, w->written);
	}
	CHECK_EQ(bk.bad, 0);
	CHECK_EQ(bk.stray, 0);
	CHECK_EQ(bk.lost_torn, 0);
	CHECK_EQ(bk.read + bk.lost_overwritten, written);

	struct shmlog_lane_stats sum;
	test_sum_lanes(r, &sum);
	CHECK_EQ(sum.written, written);
	CHECK_EQ(sum.read, bk.read);
	CHECK_EQ(sum.overwritten, bk.lost_overwritten);
	CHECK_EQ(sum.torn, 0);
	CHECK_EQ(sum.skipped, 0);

	struct shmlog_info info;
	REQUIRE(shmlog_stat(buffer_name, &info) == 0);
	CHECK_EQ(info.written, written);
	CHECK_EQ(info.dropped, 0);
	CHECK_EQ(info.torn, 0);
	CHECK_EQ(info.writers, cr->n); /* all still holding on */
	printf("  books: %llu records written, %llu read, %llu reported "
	       "overwritten in %llu gaps\n",
	       (unsigned long long)written, (unsigned long long)bk.read,
	       (unsigned long long)bk.lost_overwritten,
	       (unsigned long long)bk.lost_events);
}

/* The writer of @cr that owns a lane whose owner word is @owner, or NULL. */
static const struct writer *owner_of(const struct crew *cr, uint64_t owner)
{
	for (unsigned k = 0; k < cr->n && owner; k++)
		if (owner == shmlog__owner_word((uint32_t)cr->w[k].pid,
						(uint32_t)cr->w[k].tid))
			return &cr->w[k];
	return NULL;
}

/* Where each lane's chunks are, by state (LIVE / OPEN / RESV), read from
 * the file's descriptor table, the lane named by the writer that owns it:
 * a writer whose history falls short of its share shows whether its
 * chunks were taken (fewer held) or stand empty (reserved). Lanes that
 * hold no chunk are left out. */
static void print_census(const struct crew *cr)
{
	size_t size;
	unsigned char *base = hw_map_rw(buffer_file, &size);
	REQUIRE(base);
	struct shmlog__fixed f;
	memcpy(&f, base, sizeof(f));
	static unsigned n[SHMLOG_LANES_MAX][CHUNK_RESV + 1];
	memset(n, 0, sizeof(n));
	for (unsigned i = 0; i < f.chunk_count; i++) {
		uint64_t d = atomic_load(hw_desc(base, &f, i));
		if (chunk_held(&f, d))
			n[chunk_lane(d)][chunk_state(d)]++;
	}
	printf("  chunks held (LIVE / OPEN / RESV) of %u:", f.chunk_count);
	for (unsigned l = 0; l < f.lane_count; l++) {
		if (!n[l][CHUNK_LIVE] && !n[l][CHUNK_OPEN] && !n[l][CHUNK_RESV])
			continue;
		const struct shmlog__lane *ln = (const void *)(
			base + f.lanes_off + (uint64_t)l * sizeof(*ln));
		uint64_t owner = atomic_load(&ln->owner);
		const struct writer *w = owner_of(cr, owner);
		if (w)
			printf(" writer %u:", w->id);
		else
			printf(" lane %u (%s):", l, owner ? "owned" : "free");
		printf(" %u/%u/%u", n[l][CHUNK_LIVE], n[l][CHUNK_OPEN],
		       n[l][CHUNK_RESV]);
	}
	printf("\n");
	munmap(base, size);
}

/* Run a case: the writers' phases on a fresh buffer, then the figures. */
static void crew_run(struct crew *cr)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(buffer_name, 0, &r) == 0);
	crew_start(cr);
	for (int p = 0; p < PHASES; p++)
		crew_phase(cr);
	measure(cr, r); /* while every writer still holds on */
	print_census(cr);
	crew_finish(cr);
	shmlog_reader_close(r);
	shmlog_remove(buffer_name);
	buffer_file[0] = '\0';
}

/* ---- the bound ---- */

/* Does writer @w keep at least BOUND of @share bytes, or all it wrote if
 * that is less? Prints the figure; fails the test if not. */
static void expect_kept(const char *what, const struct writer *w,
			uint64_t share)
{
	double want = BOUND * (double)share;
	if ((double)w->written_b < want)
		want = (double)w->written_b;
	bool ok = (double)w->kept_b >= want;
	printf("  %-9s %2u: wrote %9llu B (%7llu records), keeps %8llu B "
	       "(%5llu records) = %6.2f %% of its share of %llu B%s\n",
	       what, w->id, (unsigned long long)w->written_b,
	       (unsigned long long)w->written,
	       (unsigned long long)w->kept_b, (unsigned long long)w->kept,
	       100.0 * (double)w->kept_b / (double)share,
	       (unsigned long long)share,
	       ok ? "" : "  FAILS");
	test_checks++;
	if (!ok) {
		test_failures++;
		fprintf(stderr,
			"test_capacity: %s: %s %u keeps %llu B, wants >= "
			"%.0f B (%.0f %% of %llu B, or all it wrote)\n",
			case_name, what, w->id, (unsigned long long)w->kept_b,
			want,
			BOUND * 100, (unsigned long long)share);
	}
}

/* The smallest and largest share kept among the writers @from..n-1. */
static void print_spread(const struct crew *cr, unsigned from, uint64_t share)
{
	double lo = 1e300, hi = 0;
	for (unsigned k = from; k < cr->n; k++) {
		double s = (double)cr->w[k].kept_b / (double)share;
		lo = s < lo ? s : lo;
		hi = s > hi ? s : hi;
	}
	printf("  kept / share: min %.2f %%, max %.2f %% (bound %.0f %%)\n",
	       lo * 100, hi * 100, BOUND * 100);
}

/* ---- the cases ---- */

/* (a) One thread writes 3 x capacity of mixed sizes. */
static void case_lone_writer(void)
{
	case_name = "lone writer";
	uint64_t cap = buffer_new();
	struct crew *cr = crew_new(1, false);
	printf("lone writer, 3 x capacity (%llu B):\n",
	       (unsigned long long)cap);
	cr->w[0].phase[0].bytes = 3 * cap;
	crew_run(cr);
	expect_kept("writer", &cr->w[0], cap);
	munmap(cr, sizeof(*cr));
}

/* (b) @n writers, threads or processes, each writing 3 x capacity / n at
 * the same time. */
static void case_shared(unsigned n, bool processes)
{
	case_name = processes ? "shared, processes" : "shared, threads";
	uint64_t cap = buffer_new(), share = cap / n;
	struct crew *cr = crew_new(n, processes);
	printf("%u writers (%s), 3 x their share each:\n", n,
	       processes ? "processes" : "threads");
	for (unsigned k = 0; k < n; k++)
		cr->w[k].phase[0].bytes = 3 * share;
	crew_run(cr);
	for (unsigned k = 0; k < n; k++)
		expect_kept("writer", &cr->w[k], share);
	print_spread(cr, 0, share);
	munmap(cr, sizeof(*cr));
}

/* (b) @n writers, writer 0 flooding: 10 x capacity, half of it while the
 * others write 1.5 x their share, half after they are done (the flood is
 * then newer than every record of theirs). */
static void case_flood(unsigned n, bool processes)
{
	case_name = processes ? "flood, processes" : "flood, threads";
	uint64_t cap = buffer_new(), share = cap / n;
	struct crew *cr = crew_new(n, processes);
	printf("%u writers (%s), writer 0 flooding 10 x capacity, the others "
	       "1.5 x their share:\n",
	       n, processes ? "processes" : "threads");
	cr->w[0].flooder = true;
	cr->w[0].phase[0].bytes = 5 * cap;
	cr->w[0].phase[1].bytes = 5 * cap;
	for (unsigned k = 1; k < n; k++)
		cr->w[k].phase[0].bytes = share + share / 2;
	crew_run(cr);
	printf("  flooder    0: wrote %llu B, keeps %llu B = %.2f %% of its "
	       "share (not bounded)\n",
	       (unsigned long long)cr->w[0].written_b,
	       (unsigned long long)cr->w[0].kept_b,
	       100.0 * (double)cr->w[0].kept_b / (double)share);
	for (unsigned k = 1; k < n; k++)
		expect_kept("writer", &cr->w[k], share);
	print_spread(cr, 1, share);
	munmap(cr, sizeof(*cr));
}

/* (c) A quiet writer writes 100 records, then a flooder writes 10 x
 * capacity: all 100 must still be there. */
static void case_quiet(void)
{
	case_name = "quiet writer";
	uint64_t cap = buffer_new();
	struct crew *cr = crew_new(2, false);
	printf("quiet writer, %d records, then a flooder, 10 x capacity:\n",
	       QUIET_RECORDS);
	cr->w[0].phase[0].records = QUIET_RECORDS;
	cr->w[1].flooder = true;
	cr->w[1].phase[1].bytes = 10 * cap;
	crew_run(cr);
	const struct writer *q = &cr->w[0];
	printf("  quiet writer: %llu of %d records kept (%llu of %llu B); "
	       "the flooder keeps %llu B = %.2f %% of capacity\n",
	       (unsigned long long)q->kept, QUIET_RECORDS,
	       (unsigned long long)q->kept_b, (unsigned long long)q->written_b,
	       (unsigned long long)cr->w[1].kept_b,
	       100.0 * (double)cr->w[1].kept_b / (double)cap);
	CHECK_EQ(q->kept, QUIET_RECORDS);
	CHECK_EQ(q->kept_b, q->written_b);
	munmap(cr, sizeof(*cr));
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "usage: test_capacity (no arguments)\n");
		return 2;
	}
	arm_cleanup();
	setvbuf(stdout, NULL, _IOLBF, 0);
	case_lone_writer();
	case_shared(2, false);
	case_shared(8, false);
	case_shared(8, true);
	case_flood(2, false);
	case_flood(8, false);
	case_flood(8, true);
	case_quiet();
	return test_done("test_capacity");
}
