/* SPDX-License-Identifier: MIT */
/*
 * A full /dev/shm. A small tmpfs is mounted for the test
 * (in a private mount namespace, so nothing outside sees it) and buffers
 * are created in it by absolute path: creating one that does not fit fails
 * with -ENOSPC (posix_fallocate at creation), never a SIGBUS later, leaves
 * no temporary file behind, and the buffers already there keep working:
 * their pages were reserved when they were made, so writers lap them
 * while the file system is full, and readers read them whole.
 *
 * Needs root (CAP_SYS_ADMIN for unshare + mount): skipped otherwise, with
 * the reason.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "hostile.h"

static char dir[128];

static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void write_records(const char *b, unsigned w, long n)
{
	shmlog_t *h;
	REQUIRE(shmlog_open(b, 0, &h) == 0);
	CHECK_EQ(sc_write(h, w, 0, n), 0);
	shmlog_close(h);
}

/* Read all: every record intact, the newest is record @n-1 of writer @w;
 * @total were written. Returns the number of records read. */
static long read_back(const char *b, unsigned w, long n, long total)
{
	shmlog_reader_t *r;
	REQUIRE(shmlog_reader_open(b, 0, &r) == 0);
	struct shmlog_record rec;
	long got = 0;
	int64_t last = -1;
	int ev;
	while ((ev = shmlog_reader_next(r, &rec, NULL)) > 0) {
		unsigned ww = 0;
		uint64_t i = 0;
		CHECK(sc_check(&rec, &ww, &i));
		if (ww == w)
			last = (int64_t)i;
		got++;
	}
	CHECK_EQ(ev, SHMLOG_EV_NONE);
	CHECK_EQ(last, n - 1);
	struct shmlog_lane_stats s = hw_sum(r);
	CHECK_EQ(s.written, total);
	CHECK_EQ(s.written, s.read + s.overwritten + s.torn);
	shmlog_reader_close(r);
	return got;
}

static void in_namespace(void)
{
	char a[200], big[200], p[200];
	snprintf(a, sizeof(a), "%s/a.buf", dir);
	snprintf(big, sizeof(big), "%s/big.buf", dir);
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 256 * 1024;
	CHECK_EQ(shmlog_create(a, &o), 0);
	write_records(a, 1, 100);

	/* too big for what is left: ENOSPC, and nothing left behind */
	o.size = 2 * 1024 * 1024;
	CHECK_EQ(shmlog_create(big, &o), -ENOSPC);
	CHECK_EQ(entries(), 1);

	/* fill the file system with buffers until one does not fit */
	o.size = 64 * 1024;
	int made = 0, err = 0;
	for (int k = 0; k < 100 && !err; k++) {
		snprintf(p, sizeof(p), "%s/fill%d.buf", dir, k);
		err = shmlog_create(p, &o);
		made += !err;
	}
	CHECK_EQ(err, -ENOSPC);
	CHECK_EQ(entries(), 1 + made);
	/* and what little is left with a plain file */
	snprintf(p, sizeof(p), "%s/filler", dir);
	int fd = open(p, O_WRONLY | O_CREAT, 0600);
	char blk[4096] = {0};
	while (fd >= 0 && write(fd, blk, sizeof(blk)) == (ssize_t)sizeof(blk))
		;
	if (fd >= 0)
		close(fd);
	CHECK_EQ(shmlog_create(big, &o), -ENOSPC);

	/* the full file system does not touch existing buffers: writers lap
	 * them (every page was reserved at creation: no SIGBUS), readers
	 * read them */
	write_records(a, 2, 20000);
	long got = read_back(a, 2, 20000, 20000 + 100);
	(void)got;
	printf("tmpfs of 1 MiB: one 256 KiB buffer, %d of 64 KiB, then "
	       "-ENOSPC; the first buffer lapped while full, read back whole\n",
	       made);
}

int main(void)
{
	if (geteuid() != 0)
		test_skip("test_enospc", "needs root to mount a tmpfs: run it "
			  "as root");
	snprintf(dir, sizeof(dir), "/tmp/shmlog-enospc-%d", (int)getpid());
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
			fprintf(stderr, "test_enospc: skipped: cannot make a "
				"mount namespace here (%s)\n", strerror(errno));
			_exit(TEST_SKIP);
		}
		if (mkdir(dir, 0700) ||
		    mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700")) {
			fprintf(stderr, "test_enospc: skipped: cannot mount a "
				"tmpfs (%s)\n", strerror(errno));
			rmdir(dir);
			_exit(TEST_SKIP);
		}
		in_namespace();
		umount2(dir, MNT_DETACH);
		rmdir(dir);
		int rc = test_done("test_enospc");
		fflush(stdout);
		_exit(rc);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	rmdir(dir);
	/* the child said why it could not mount */
	if (WIFEXITED(st) && WEXITSTATUS(st) == TEST_SKIP)
		return TEST_SKIP;
	if (WIFSIGNALED(st))
		fprintf(stderr, "test_enospc: killed by signal %d\n",
			WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
