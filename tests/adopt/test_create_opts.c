/* SPDX-License-Identifier: MIT */
/*
 * A zero-initialised struct shmlog_create_opts means the defaults, field by
 * field: in particular gid 0 is "the caller's group", not root's (which made
 * every non-root creation fail with a misleading "untrusted file"); root's
 * group is asked for with SHMLOG_CREATE_GID; a group the caller is not in
 * is -EPERM. Run as root, the test also checks it as another user.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shmlog.h"
#include "test.h"

#define OTHER_ID 54321 /* a user and group nobody uses */

static const char *names[4];

static void cleanup(void)
{
	for (int i = 0; i < 4; i++)
		if (names[i])
			shmlog_remove(names[i]);
}

static gid_t file_gid(const char *name)
{
	char path[512];
	struct stat st;
	REQUIRE(shmlog_path(name, path, sizeof(path)) > 0);
	REQUIRE(stat(path, &st) == 0);
	return st.st_gid;
}

/* Runs in a child, as a user who is not root and in no group but its own:
 * exits with the number of failed checks. */
static void as_unprivileged(void)
{
	struct shmlog_create_opts zero = {0};
	CHECK_EQ(shmlog_create(names[0], &zero), 0);
	CHECK_EQ(file_gid(names[0]), getegid());
	struct shmlog_create_opts root_group = {.flags = SHMLOG_CREATE_GID};
	CHECK_EQ(shmlog_create(names[1], &root_group), -EPERM);
	struct shmlog_create_opts foreign = {.gid = OTHER_ID + 1};
	CHECK_EQ(shmlog_create(names[1], &foreign), -EPERM);
	CHECK(strstr(shmlog_strerror(-EPERM), "group") != NULL);
	exit(test_failures);
}

static void run_child(void (*fn)(void), bool drop)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (drop) {
			REQUIRE(setgroups(0, NULL) == 0);
			REQUIRE(setgid(OTHER_ID) == 0);
			REQUIRE(setuid(OTHER_ID) == 0);
		}
		fn();
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* As root in group OTHER_ID: zero leaves the file in our group; asking
 * for group 0 explicitly gives it to root's. */
static void as_root_other_group(void)
{
	REQUIRE(setgid(OTHER_ID) == 0);
	struct shmlog_create_opts zero = {0};
	CHECK_EQ(shmlog_create(names[2], &zero), 0);
	CHECK_EQ(file_gid(names[2]), (gid_t)OTHER_ID);
	struct shmlog_create_opts root_group = {.flags = SHMLOG_CREATE_GID};
	CHECK_EQ(shmlog_create(names[3], &root_group), 0);
	CHECK_EQ(file_gid(names[3]), (gid_t)0);
	exit(test_failures);
}

int main(void)
{
	names[0] = test_buffer("copts-zero");
	names[1] = test_buffer("copts-refused");
	names[2] = test_buffer("copts-root-zero");
	names[3] = test_buffer("copts-root-gid0");
	cleanup();
	atexit(cleanup);

	struct shmlog_create_opts init, zero;
	memset(&init, 0xa5, sizeof(init));
	memset(&zero, 0, sizeof(zero));
	shmlog_create_opts_init(&init);
	CHECK(memcmp(&init, &zero, sizeof(zero)) == 0);
	struct shmlog_create_opts bad = {.flags = 0x80};
	CHECK_EQ(shmlog_create(names[1], &bad), -EINVAL);

	if (geteuid() == 0) {
		run_child(as_unprivileged, true);
		run_child(as_root_other_group, false);
	} else {
		printf("note: not root: checked as this user only\n");
		run_child(as_unprivileged, false);
	}
	return test_done("test_create_opts");
}
