/* SPDX-License-Identifier: MIT */
/*
 * Counting instructions with callgrind. Timings on a shared 2-core VM move
 * by tens of percent between runs; instruction counts do not, so they are
 * what the "8 instructions per call" target is checked against.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "callgrind.h"

/* Run @argv with stdout and stderr into one pipe; keep the output in @out.
 * Returns the exit status, or -1. */
static int run_capture(char *const argv[], char *out, size_t len)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		close(p[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	size_t off = 0;
	for (;;) {
		char sink[4096];
		char *dst = off + 1 < len ? out + off : sink;
		size_t room = off + 1 < len ? len - 1 - off : sizeof(sink);
		ssize_t r = read(p[0], dst, room);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (dst != sink)
			off += (size_t)r;
	}
	out[off] = '\0';
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool fb_callgrind_available(void)
{
	static int avail = -1;
	if (avail < 0) {
		char out[256];
		char *argv[] = {"valgrind", "--version", NULL};
		avail = run_capture(argv, out, sizeof(out)) == 0;
	}
	return avail;
}

int64_t fb_callgrind_count(const char *func, char *const args[])
{
	if (!fb_callgrind_available())
		return -1;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char toggle[256];
	snprintf(toggle, sizeof(toggle), "--toggle-collect=%s", func);
	char *argv[32] = {"valgrind", "--tool=callgrind",
			  "--callgrind-out-file=/dev/null",
			  "--collect-atstart=no", toggle, exe};
	int argc = 6;
	for (int i = 0; args[i] && argc < 31; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	static char out[65536];
	if (run_capture(argv, out, sizeof(out)) != 0)
		return -1;
	/* "==PID== Collected : 123456" */
	const char *c = strstr(out, "Collected :");
	if (!c)
		return -1;
	return strtoll(c + strlen("Collected :"), NULL, 10);
}
