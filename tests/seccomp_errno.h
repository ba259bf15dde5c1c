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

/* System call @nr fails with @err from now on (if @arg >= 0, only when
 * its argument number @arg, its low 32 bits, is @value): 0, or -errno
 * (-ENOTSUP on an architecture this does not know). */
static inline int seccomp_errno_if(long nr, int arg, uint32_t value, int err)
{
#if defined(__x86_64__)
	const uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const uint32_t arch = AUDIT_ARCH_AARCH64;
#else
#define SECCOMP_ERRNO_NO_ARCH
	(void)nr;
	(void)arg;
	(void)value;
	(void)err;
	return -ENOTSUP;
#endif
#ifndef SECCOMP_ERRNO_NO_ARCH
	/* what the call's number is matched with next: the low half of
	 * argument @arg, or (for any arguments) the number again */
	uint32_t at = offsetof(struct seccomp_data, nr), match = (uint32_t)nr;
	if (arg >= 0) {
		at = offsetof(struct seccomp_data, args) + 8 * (uint32_t)arg;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		at += 4;
#endif
		match = value;
	}
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, at),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, match, 0, 1),
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

/* System call @nr fails with @err from now on, whatever its arguments. */
static inline int seccomp_errno(long nr, int err)
{
	return seccomp_errno_if(nr, -1, 0, err);
}

#endif
