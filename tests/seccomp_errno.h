/* SPDX-License-Identifier: MIT */
/*
 * Tests: make one system call fail with a chosen errno, in this process
 * and the ones it starts, as on a kernel or a filesystem without it (a
 * seccomp filter; it needs no privilege).
 */
#ifndef SHMLOG_TESTS_SECCOMP_ERRNO_H
#define SHMLOG_TESTS_SECCOMP_ERRNO_H

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>

/* System call @nr fails with @err from now on: 0, or -errno (-ENOTSUP on
 * an architecture this does not know). */
static inline int seccomp_errno(long nr, int err)
{
#if defined(__x86_64__)
	const uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const uint32_t arch = AUDIT_ARCH_AARCH64;
#else
#define SECCOMP_ERRNO_NO_ARCH
	(void)nr;
	(void)err;
	return -ENOTSUP;
#endif
#ifndef SECCOMP_ERRNO_NO_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 SECCOMP_RET_ERRNO | ((uint32_t)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
#endif
}

#endif
