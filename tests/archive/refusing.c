/* SPDX-License-Identifier: MIT */
/*
 * refusing CALL CMD [ARG...]: run CMD with one system call failing, as on
 * a system without it (a seccomp filter, inherited by CMD):
 *   fallocate  fails with EOPNOTSUPP, as on a filesystem that has no
 *              fallocate: `shmlog archive` then finds a full disk only
 *              when its writes are refused;
 *   madvise    MADV_HUGEPAGE fails with EINVAL, as on a kernel without
 *              transparent huge pages: the archiver's stages are then the
 *              system's 4 KiB pages, faulted as the drain fills them (the
 *              pages it also takes after a huge page was slow to fault).
 *              Other advice is let through (a sanitizer's runtime needs
 *              it).
 * Exits 77 where no seccomp filter can be set, 2 on a usage error.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp_errno.h"

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		long nr;
		int arg; /* -1: any arguments */
		uint32_t value;
		int err;
	} calls[] = {
		{"fallocate", SYS_fallocate, -1, 0, EOPNOTSUPP},
		{"madvise", SYS_madvise, 2, MADV_HUGEPAGE, EINVAL},
	};
	int k = -1;
	for (int i = 0; argc >= 3 && i < 2; i++)
		if (!strcmp(argv[1], calls[i].name))
			k = i;
	if (k < 0) {
		fprintf(stderr, "usage: refusing fallocate|madvise CMD [ARG...]\n");
		return 2;
	}
	int err = seccomp_errno_if(calls[k].nr, calls[k].arg, calls[k].value,
				   calls[k].err);
	if (err) {
		fprintf(stderr, "refusing: no seccomp filter here: %s\n",
			strerror(-err));
		return 77;
	}
	execvp(argv[2], argv + 2);
	perror("refusing: exec");
	return 127;
}
