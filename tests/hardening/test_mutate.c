/* SPDX-License-Identifier: MIT */
/*
 * The CLI over mutated buffers.
 *
 * Real buffers are made by the real CLI (several writers, a lane that
 * recycled its chunks, a clear mark, a filter, a record left torn by a
 * writer killed mid-record), then copied and mutated: random bit flips
 * anywhere, and targeted changes to the fields a reader trusts least: a
 * lane's head, reserve and next_seq (random, +-8, +-a few records, a
 * flipped bit), record words (state bits, a flipped bit, moved by 8
 * bytes), record lengths, the lane table, the chunk table (descriptor
 * words: random, naming another lane or none, another incarnation, OPEN
 * and LIVE swapped, a junk state; the epoch), page 0 (with and without a
 * fixed-up header checksum). Each mutated buffer goes through `shmlog
 * cat`, `shmlog info`, `shmlog tail -n 5`, `shmlog cat -f` (stopped
 * with SIGINT after a moment, which it must obey) and `shmlog top
 * --once` (by lane, and by pid as JSON).
 *
 * Fails on: a run past its time bound (a hang is a failure like a crash),
 * output beyond what the buffer can hold (a reader returning records
 * again and again), death by a signal, a sanitizer report.
 *
 * usage: test_mutate SHMLOG_CLI [SECONDS] [SEED]
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "hostile.h"
#include "internal.h"

static const char *cli;
static char tmpl[8][512]; /* base images: paths of copies in /dev/shm */
static unsigned char *base_img[8];
static size_t base_len[8];
static unsigned nbase;
static char work[512]; /* the mutated copy */
static uint64_t rng;

static uint64_t rnd(void)
{
	rng = sc_mix(rng + 0x9e3779b97f4a7c15ull);
	return rng;
}

/* Run the CLI with @argv; stdout and stderr are read (and counted) here.
 * @sigint_after_ms > 0: send SIGINT then (a follower). Returns a failure
 * description, or NULL. */
static const char *run(char *const argv[], int sigint_after_ms,
		       int bound_ms, size_t out_max, char *why, size_t wn)
{
	int out[2];
	REQUIRE(pipe(out) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(out[1], 2);
		close(out[0]);
		close(out[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(out[1]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)bound_ms * 1000000;
	uint64_t int_at = sigint_after_ms > 0
				  ? t0 + (uint64_t)sigint_after_ms * 1000000
				  : 0;
	size_t total = 0;
	bool sanitizer = false, killed = false, over = false, int_sent = false;
	char buf[65536], tailbuf[256] = "";
	int st = 0;
	for (;;) {
		struct pollfd p = {out[0], POLLIN, 0};
		poll(&p, 1, 10);
		ssize_t n;
		while ((n = read(out[0], buf, sizeof(buf) - 1)) > 0) {
			buf[n] = '\0';
			total += (size_t)n;
			if (strstr(buf, "Sanitizer") || strstr(buf, "runtime error"))
				sanitizer = true;
			snprintf(tailbuf, sizeof(tailbuf), "%.200s", buf);
		}
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		uint64_t now = now_ns();
		if (int_at && now >= int_at) {
			kill(pid, SIGINT);
			int_sent = true;
			int_at = 0;
			deadline = now + 3000000000ull; /* must obey within 3 s */
		}
		if (total > out_max && !over) {
			over = true;
			kill(pid, SIGKILL);
			killed = true;
		}
		if (now > deadline && !killed) {
			kill(pid, SIGKILL);
			killed = true;
		}
	}
	/* drain what is left */
	ssize_t n;
	while ((n = read(out[0], buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		total += (size_t)n;
		if (strstr(buf, "Sanitizer") || strstr(buf, "runtime error"))
			sanitizer = true;
	}
	close(out[0]);
	if (over) {
		snprintf(why, wn, "endless output (over %zu bytes)", out_max);
		return why;
	}
	if (killed) {
		snprintf(why, wn, "hang: still running after its bound");
		return why;
	}
	if (sanitizer) {
		snprintf(why, wn, "sanitizer report: %s", tailbuf);
		return why;
	}
	/* SIGINT before the CLI set its handler up (a slow start): it died
	 * of the signal we sent, which is obeying it */
	if (WIFSIGNALED(st) && !(sigint_after_ms > 0 && int_sent &&
				 WTERMSIG(st) == SIGINT)) {
		snprintf(why, wn, "killed by signal %d", WTERMSIG(st));
		return why;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		snprintf(why, wn, "could not run %s", argv[0]);
		return why;
	}
	return NULL;
}

/* Run the CLI with the arguments given (NULL-terminated); it must
 * succeed. */
#define cli_ok(...) cli_run_ok((const char *[]){__VA_ARGS__, NULL})
static void cli_run_ok(const char **args)
{
	char *argv[16] = {(char *)cli};
	for (int k = 0; args[k] && k < 14; k++)
		argv[k + 1] = (char *)args[k];
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv(cli, argv);
		_exit(127);
	}
	CHECK_EQ(hw_reap(pid), 0);
}

/* `shmlog write -b B -t TAG` with @lines lines on stdin. */
static void cli_write(const char *b, const char *tag, int lines)
{
	int in[2];
	REQUIRE(pipe(in) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		close(in[0]);
		close(in[1]);
		execl(cli, cli, "write", "-b", b, "-t", tag, "-p", "I",
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	FILE *f = fdopen(in[1], "w");
	REQUIRE(f);
	for (int i = 0; i < lines; i++)
		fprintf(f, "line %d of %s: %.*s\n", i, tag, (int)(rnd() % 120),
			"the quick brown fox jumps over the lazy dog, the five "
			"boxing wizards jump quickly, sphinx of black quartz "
			"judge my vow; pack my box with five dozen liquor jugs");
	fclose(f);
	CHECK_EQ(hw_reap(pid), 0);
}

static void snapshot(const char *path)
{
	int fd = open(path, O_RDONLY);
	REQUIRE(fd >= 0);
	struct stat st;
	REQUIRE(fstat(fd, &st) == 0);
	base_len[nbase] = (size_t)st.st_size;
	base_img[nbase] = malloc(base_len[nbase]);
	REQUIRE(base_img[nbase]);
	REQUIRE(read(fd, base_img[nbase], base_len[nbase]) ==
		(ssize_t)base_len[nbase]);
	close(fd);
	snprintf(tmpl[nbase], sizeof(tmpl[0]), "%s", path);
	nbase++;
}

/* The base buffers, made by the CLI. */
static void make_bases(void)
{
	char b[128], path[512];
	/* several writers, one lane that recycled its chunks many times */
	snprintf(b, sizeof(b), "test-mutate-a-%d", (int)getpid());
	cli_ok("create", "-b", b, "--size", "64K");
	cli_write(b, "net", 40);
	cli_write(b, "disk", 900);
	cli_write(b, "ui", 3);
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	snapshot(path);
	shmlog_remove(b);
	/* a clear mark, a filter, more lanes */
	snprintf(b, sizeof(b), "test-mutate-b-%d", (int)getpid());
	cli_ok("create", "-b", b, "--size", "128K", "--lanes", "8");
	cli_write(b, "old", 30);
	cli_ok("clear", "-b", b);
	cli_write(b, "new", 200);
	cli_write(b, "other", 700);
	cli_ok("level", "-b", b, "net:D *:W");
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	snapshot(path);
	shmlog_remove(b);
	/* a record left torn by a writer that died in it */
	snprintf(b, sizeof(b), "test-mutate-c-%d", (int)getpid());
	cli_ok("create", "-b", b, "--size", "64K", "--lanes", "4");
	cli_write(b, "a", 300);
	REQUIRE(shmlog_path(b, path, sizeof(path)) > 0);
	{
		shmlog_t *h;
		REQUIRE(shmlog_open(b, 0, &h) == 0);
		REQUIRE(sc_write(h, 1, 0, 50) == 0);
		/* a reservation left open, as by a writer killed mid-record */
		struct shmlog__fixed f = h->seg.fixed;
		for (unsigned i = 0; i < f.lane_count; i++) {
			struct shmlog__lane *l = seg_lane(&h->seg, i);
			if (atomic_load(&l->owner) == 0)
				continue;
			atomic_store(&l->reserve, atomic_load(&l->head) + 64);
			atomic_store(&l->owner, shmlog__owner_word(0x7ffffff0u, 0x7ffffff0u));
		}
		snapshot(path);
		shmlog_close(h);
	}
	shmlog_remove(b);
}

/* ---- mutations ---- */

static void fix_checksum(unsigned char *img)
{
	struct shmlog__fixed *f = (void *)img;
	f->checksum = shmlog__fnv1a(f, offsetof(struct shmlog__fixed, checksum));
}

static void flip_bits(unsigned char *img, size_t len, int n)
{
	for (int k = 0; k < n; k++) {
		uint64_t v = rnd();
		img[v % len] ^= (unsigned char)(1u << ((v >> 40) % 8));
	}
}

/* A record header (PADs included) in lane @lane, as a file offset, or -1. */
static long pick_record(unsigned char *img, const struct shmlog__fixed *f,
			unsigned lane)
{
	long found[512];
	size_t n = hw_lane_records(img, f, lane, found, NULL, 512);
	return n ? found[rnd() % n] : -1;
}

static void mutate_position(uint64_t *p)
{
	uint64_t v = rnd();
	switch (v % 6) {
	case 0: *p = rnd(); break;
	case 1: *p += 8; break;
	case 2: *p -= 8; break;
	case 3: *p += (v >> 8) % 4096; break;
	case 4: *p -= (v >> 8) % 4096; break;
	default: *p ^= 1ull << ((v >> 8) % 64); break;
	}
}

/* Apply one targeted or random mutation; returns its kind (for the
 * report). */
static int mutate(unsigned char *img, size_t len,
		  const struct shmlog__fixed *pristine)
{
	/* offsets from the header as the CLI made it: the image's own may
	 * be mutated already */
	struct shmlog__fixed f = *pristine;
	unsigned lane = (unsigned)(rnd() % f.lane_count);
	struct shmlog__lane *l = (void *)(img + f.lanes_off +
					  lane * sizeof(struct shmlog__lane));
	int kind = (int)(rnd() % 10);
	long at;
	switch (kind) {
	case 0: /* random bits anywhere */
		flip_bits(img, len, 1 + (int)(rnd() % 8));
		break;
	case 1: { /* a lane position */
		_Atomic uint64_t *w[] = {&l->reserve, &l->head, &l->next_seq};
		_Atomic uint64_t *p = w[rnd() % 3];
		uint64_t x = atomic_load(p);
		mutate_position(&x);
		atomic_store(p, x);
		break;
	}
	case 2: /* a record word's state bits */
		if ((at = pick_record(img, &f, lane)) >= 0) {
			_Atomic uint64_t *w = (void *)(img + at);
			atomic_store(w, (atomic_load(w) & ~7ull) | (rnd() % 8));
		}
		break;
	case 3: /* a record word: a bit, or moved by 8 */
		if ((at = pick_record(img, &f, lane)) >= 0) {
			_Atomic uint64_t *w = (void *)(img + at);
			uint64_t v = atomic_load(w), r = rnd();
			if (r % 3 == 0) {
				atomic_store(w, v ^ (1ull << ((r >> 8) % 64)));
			} else {
				long to = at + (r % 3 == 1 ? 8 : -8);
				atomic_store(w, 0);
				if (to >= (long)f.data_off && to + 8 <= (long)len)
					memcpy(img + to, &v, 8);
			}
		}
		break;
	case 4: /* record lengths */
		if ((at = pick_record(img, &f, lane)) >= 0) {
			struct shmlog__rec *r = (void *)(img + at);
			uint64_t v = rnd();
			if (v % 3 == 0)
				r->len = (uint16_t)(v >> 8);
			else if (v % 3 == 1)
				r->msg_len = (uint16_t)(v >> 8);
			else
				r->tag_len = (uint8_t)(v >> 8);
		}
		break;
	case 5: /* the lane table: owner, claims, torn */
		if (rnd() % 2)
			atomic_store(&l->owner, rnd());
		else
			atomic_store(&l->torn, rnd());
		break;
	case 6: /* page 0 past the fixed header */
		flip_bits(img + sizeof(struct shmlog__fixed),
			  SHMLOG__PAGE - sizeof(struct shmlog__fixed), 4);
		break;
	case 7: /* the fixed header, checksum fixed up to get past it */
		flip_bits(img, offsetof(struct shmlog__fixed, checksum), 1);
		fix_checksum(img);
		break;
	case 8: /* the chunk table: a descriptor word, the epoch */
		hw_tamper_chunks(img, &f, rnd());
		break;
	default: /* several of the above */
		for (int k = 0; k < 4; k++)
			mutate(img, len, pristine);
		break;
	}
	return kind;
}

static void remove_work(void)
{
	unlink(work);
}

static bool write_work(const unsigned char *img, size_t len)
{
	unlink(work);
	int fd = open(work, O_RDWR | O_CREAT | O_EXCL, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, img, len) == (ssize_t)len);
	close(fd);
	return true;
}

int main(int argc, char **argv)
{
	cli = argc > 1 ? argv[1] : NULL;
	REQUIRE(cli);
	double secs = argc > 2 ? atof(argv[2]) : 60;
	rng = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)getpid();
	unsigned long seed0 = (unsigned long)rng;
	snprintf(work, sizeof(work), "/dev/shm/shmlog.test-mutate-w-%d",
		 (int)getpid());
	atexit(remove_work);
	make_bases();
	uint64_t end = now_ns() + (uint64_t)(secs * 1e9);
	unsigned long images = 0, runs = 0, failures = 0, kinds[10] = {0};
	unsigned char *img = NULL;
	size_t img_cap = 0;
	while (now_ns() < end) {
		unsigned which = (unsigned)(rnd() % nbase);
		size_t len = base_len[which];
		if (len > img_cap) {
			img = realloc(img, len);
			REQUIRE(img);
			img_cap = len;
		}
		memcpy(img, base_img[which], len);
		int nm = 1 + (int)(rnd() % 3);
		for (int k = 0; k < nm; k++)
			kinds[mutate(img, len,
				      (const struct shmlog__fixed *)(const void *)
					      base_img[which])]++;
		write_work(img, len);
		images++;
		/* a buffer of N bytes holds fewer than N / 48 records; a line
		 * of output is at most ~4.2 KB (escaped): generous bound */
		size_t out_max = 64 * len + (1 << 20);
		char *cmds[6][9] = {
			{(char *)cli, "cat", "-b", work, NULL},
			{(char *)cli, "info", "-b", work, NULL},
			{(char *)cli, "tail", "-n", "5", "-b", work, NULL},
			{(char *)cli, "cat", "-f", "-b", work, NULL},
			{(char *)cli, "top", "--once", "--by", "lane", "-b",
			 work, NULL},
			{(char *)cli, "top", "--once", "-v", "json", "-b", work,
			 NULL},
		};
		for (int c = 0; c < 6; c++) {
			char why[400];
			const char *bad = run(cmds[c], c == 3 ? 150 : 0,
					      c == 3 ? 60000 : 10000, out_max,
					      why, sizeof(why));
			runs++;
			if (bad) {
				failures++;
				char keep[600];
				snprintf(keep, sizeof(keep),
					 "/tmp/shmlog-mutate-fail-%lu-%d.img",
					 images, c);
				int fd = open(keep, O_WRONLY | O_CREAT | O_TRUNC,
					      0600);
				if (fd >= 0) {
					ssize_t wr = write(fd, img, len);
					(void)wr;
					close(fd);
				}
				fprintf(stderr,
					"FAIL: shmlog %s %s on image %lu "
					"(start %#lx): %s; image kept in %s\n",
					cmds[c][1], c == 3 ? "-f" : "", images,
					seed0, bad, keep);
			}
		}
		if (failures > 10)
			break;
	}
	unlink(work);
	printf("mutated buffers: %lu images (%lu random flips, %lu lane "
	       "positions, %lu state bits, %lu words flipped or moved, %lu "
	       "lengths, %lu lane table, %lu page 0, %lu fixed header, %lu "
	       "chunk table, %lu several), %lu CLI runs, %lu failed\n",
	       images, kinds[0], kinds[1], kinds[2], kinds[3], kinds[4],
	       kinds[5], kinds[6], kinds[7], kinds[8], kinds[9], runs,
	       failures);
	CHECK(images > 0);
	CHECK_EQ(failures, 0);
	for (unsigned k = 0; k < nbase; k++)
		free(base_img[k]);
	free(img);
	return test_done("test_mutate");
}
