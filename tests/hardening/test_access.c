/* SPDX-License-Identifier: MIT */
/*
 * Squatting and permissions, across users.
 *
 * Run as root: children switch to other users (setresuid; no account is
 * created: the kernel needs none). Not root: skipped, with the reason.
 *
 * 7. Squatting: another user (nobody) pre-creates the buffer's name as a
 *    symlink, a FIFO, a hard link, a world-writable file, or a valid
 *    buffer of its own. Every writer (root, and another user) refuses it
 *    with -EPERM, creation says -EEXIST, SHMLOG_OPEN_CREATE does not adopt
 *    it; readers refuse all but the valid buffer, and see its real owner.
 * 8. Permissions, exactly as docs/SECURITY.md states them: writers write
 *    buffers owned by themselves or by root (never world-writable ones)
 *    if the kernel lets them open the file for writing; readers read any
 *    buffer the kernel lets them open for reading.
 */
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "shmlog.h"
#include "test.h"

#define NOBODY 65534 /* uid and gid */
#define OTHER 23451  /* a user in no group of interest */
#define MEMBER 23452 /* a user whose supplementary group is NOBODY's */

static char *path_of(const char *name)
{
	static char p[4][512];
	static int next;
	char *b = p[next++ % 4];
	REQUIRE(shmlog_path(name, b, sizeof(p[0])) > 0);
	return b;
}

/* Run @fn(@arg) as @uid:@gid with @group (or none) as supplementary
 * group; returns its result (an errno-style int). */
static int as_user(uid_t uid, gid_t gid, gid_t group,
		   int (*fn)(const char *), const char *arg)
{
	int *res = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(res != MAP_FAILED);
	*res = -9999;
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (uid != 0) {
			gid_t g[1] = {group};
			if (setgroups(group ? 1 : 0, g) || setresgid(gid, gid, gid) ||
			    setresuid(uid, uid, uid))
				_exit(1);
		}
		*res = fn(arg);
		_exit(0);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	int r = *res;
	munmap(res, 4096);
	return r;
}

static int do_write(const char *name)
{
	shmlog_t *h;
	int err = shmlog_open(name, 0, &h);
	if (err)
		return err;
	err = shmlog_write(h, SHMLOG_INFO, "t", "m");
	shmlog_close(h);
	return err;
}

static int do_write_create(const char *name)
{
	shmlog_t *h;
	int err = shmlog_open(name, SHMLOG_OPEN_CREATE, &h);
	if (!err)
		shmlog_close(h);
	return err;
}

static int do_read(const char *name)
{
	shmlog_reader_t *r;
	int err = shmlog_reader_open(name, 0, &r);
	if (err)
		return err;
	struct shmlog_record rec;
	while (shmlog_reader_next(r, &rec, NULL) > 0)
		;
	shmlog_reader_close(r);
	return 0;
}

static int do_create(const char *name)
{
	return shmlog_create(name, NULL);
}

static int do_create_0600(const char *name)
{
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.mode = 0600;
	return shmlog_create(name, &o);
}

/* ---- squatters, run as nobody ---- */

static char victim[512]; /* a root-owned buffer the squatter points at */

static int squat_symlink(const char *p)
{
	return symlink(victim, p) ? -errno : 0;
}

static int squat_fifo(const char *p)
{
	return mkfifo(p, 0600) ? -errno : 0;
}

static int squat_0666(const char *p)
{
	int fd = open(p, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || fchmod(fd, 0666) || ftruncate(fd, 1 << 20))
		return -errno;
	close(fd);
	return 0;
}

static int squat_valid_0644(const char *p)
{
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.mode = 0644;
	return shmlog_create(p, &o);
}

/* A buffer of the squatter's own, hard-linked under the victim's name
 * (protected_hardlinks forbids linking files of others). */
static int squat_hardlink(const char *p)
{
	char own[600];
	snprintf(own, sizeof(own), "%s.own", p);
	int err = squat_valid_0644(own);
	if (err)
		return err;
	return link(own, p) ? -errno : 0;
}

struct squat {
	const char *what;
	int (*make)(const char *);
	int reader_err; /* what a reader gets */
};

static void squatting(void)
{
	const char *vb = test_buffer("victim");
	REQUIRE(shmlog_create(vb, NULL) == 0);
	snprintf(victim, sizeof(victim), "%s", path_of(vb));
	const struct squat cases[] = {
		{"symlink", squat_symlink, -EPERM},
		{"FIFO", squat_fifo, -EPERM},
		{"hard link", squat_hardlink, -EPERM},
		{"mode 0666", squat_0666, -EPERM},
		{"valid buffer of another user", squat_valid_0644, 0},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct squat *c = &cases[k];
		const char *b = test_buffer("squat");
		const char *p = path_of(b);
		CHECK_EQ(as_user(NOBODY, NOBODY, 0, c->make, p), 0);
		struct stat st;
		CHECK_EQ(lstat(p, &st), 0);
		CHECK_EQ(st.st_uid, NOBODY);
		int w_root = do_write(b);
		int w_create = do_write_create(b);
		int w_other = as_user(OTHER, OTHER, 0, do_write, b);
		int create = do_create(b);
		int r_root = do_read(b);
		printf("squatted by uid %d as %s: root writer %d (%s), "
		       "other writer %d, create %d, root reader %d\n",
		       NOBODY, c->what, w_root, shmlog_strerror(w_root),
		       w_other, create, r_root);
		CHECK_EQ(w_root, -EPERM);
		CHECK_EQ(w_create, -EPERM);
		CHECK(w_other == -EPERM || w_other == -EACCES);
		CHECK_EQ(create, -EEXIST);
		CHECK_EQ(r_root, c->reader_err);
		if (c->reader_err == 0) {
			/* readers may read it, and know whose it is */
			struct shmlog_info in;
			CHECK_EQ(shmlog_stat(b, &in), 0);
			CHECK_EQ(in.uid, NOBODY);
		}
		/* the victim was not touched through the symlink */
		struct shmlog_info vi;
		CHECK_EQ(shmlog_stat(vb, &vi), 0);
		CHECK_EQ(vi.written, 0);
		unlink(p);
		char own[600];
		snprintf(own, sizeof(own), "%s.own", p);
		unlink(own);
	}
	shmlog_remove(vb);
}

/* ---- permissions ---- */

struct who {
	const char *name;
	uid_t uid;
	gid_t gid, group;
};

static const struct who users[] = {
	{"root", 0, 0, 0},
	{"owner", OTHER + 10, OTHER + 10, 0},
	{"group member", MEMBER, MEMBER, NOBODY},
	{"other user", OTHER, OTHER, 0},
};

/* Expected results for a buffer of @owner_uid, mode @mode, group NOBODY. */
static void expect(const char *label, uid_t owner, mode_t mode,
		   const int want_write[4], const int want_read[4])
{
	const char *b = test_buffer("perm");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 64 * 1024;
	o.mode = mode;
	o.gid = NOBODY;
	if (owner == 0) {
		REQUIRE(shmlog_create(b, &o) == 0);
	} else {
		/* created by the owner itself, then given to the group by
		 * root (an owner need not be in the group) */
		REQUIRE(as_user(owner, owner, 0, do_create_0600, b) == 0);
		REQUIRE(chown(path_of(b), owner, NOBODY) == 0);
		REQUIRE(chmod(path_of(b), mode) == 0);
	}
	for (int k = 0; k < 4; k++) {
		const struct who *u = &users[k];
		int w = as_user(u->uid, u->gid, u->group, do_write, b);
		int r = as_user(u->uid, u->gid, u->group, do_read, b);
		printf("%-26s %-12s write %-7s read %s\n", label, u->name,
		       w == 0 ? "yes" : w == -EPERM ? "EPERM" : w == -EACCES ? "EACCES" : "?",
		       r == 0 ? "yes" : r == -EACCES ? "EACCES" : "?");
		if (w != want_write[k] || r != want_read[k])
			fprintf(stderr, "  expected write %d read %d, got %d %d\n",
				want_write[k], want_read[k], w, r);
		CHECK_EQ(w, want_write[k]);
		CHECK_EQ(r, want_read[k]);
	}
	shmlog_remove(b);
}

static void permissions(void)
{
	const int A = -EACCES, P = -EPERM;
	/* order: root, owner, group member, other user. The owner of a
	 * root-owned buffer is root itself: column 1 then shows what
	 * "owner" (an unrelated user) gets. */
	{ /* root's buffer 0600: private to root */
		int w[4] = {0, A, A, A}, r[4] = {0, A, A, A};
		expect("root 0600", 0, 0600, w, r);
	}
	{ /* root's buffer 0640: the group reads */
		int w[4] = {0, A, A, A}, r[4] = {0, A, 0, A};
		expect("root 0640 group nobody", 0, 0640, w, r);
	}
	{ /* root's buffer 0660: the way to share one among a group */
		int w[4] = {0, A, 0, A}, r[4] = {0, A, 0, A};
		expect("root 0660 group nobody", 0, 0660, w, r);
	}
	{ /* root's buffer 0644: everybody reads */
		int w[4] = {0, A, A, A}, r[4] = {0, 0, 0, 0};
		expect("root 0644", 0, 0644, w, r);
	}
	{ /* a user's buffer 0600 */
		int w[4] = {P, 0, A, A}, r[4] = {0, 0, A, A};
		expect("user 0600", OTHER + 10, 0600, w, r);
	}
	{ /* a user's buffer 0660: the group may read, never write (writers
	   * trust only their own buffers and root's), root never writes */
		int w[4] = {P, 0, P, A}, r[4] = {0, 0, 0, A};
		expect("user 0660 group nobody", OTHER + 10, 0660, w, r);
	}
}

int main(void)
{
	if (geteuid() != 0)
		test_skip("test_access", "needs root to act as other users "
			  "(setresuid): run it as root");
	squatting();
	permissions();
	return test_done("test_access");
}
