/* SPDX-License-Identifier: MIT */
/*
 * without_fallocate CMD [ARG...]: run CMD with fallocate(2) failing with
 * EOPNOTSUPP, as on a filesystem that has no fallocate: `shmlog archive`
 * then finds a full disk only when its writes are refused.
 */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp_errno.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: without_fallocate CMD [ARG...]\n");
		return 2;
	}
	int err = seccomp_errno(SYS_fallocate, EOPNOTSUPP);
	if (err) {
		fprintf(stderr, "without_fallocate: no seccomp filter here: %s\n",
			strerror(-err));
		return 77;
	}
	execvp(argv[1], argv + 1);
	perror("without_fallocate: exec");
	return 127;
}
