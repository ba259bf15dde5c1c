/* SPDX-License-Identifier: MIT */
/* Helpers shared by the contenders: scratch directories, collector
 * processes and their CPU, the common binary record. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

const char *lb_scratch = "/tmp";

/* pid and tid cached per thread, as a logger would: getpid()/gettid() are
 * not vDSO calls. Only writer processes fill records, and the parent that
 * forks them never does, so a child never inherits a stale cache. */
static _Thread_local uint32_t cached_tid, cached_pid_for_tid;
static uint32_t cached_pid;

void lb_hdr_fill(struct lb_hdr *h, const struct lb_msg *m)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (LB_UNLIKELY(cached_pid_for_tid == 0)) {
		cached_pid = (uint32_t)getpid();
		cached_tid = (uint32_t)gettid();
		cached_pid_for_tid = cached_pid;
	}
	h->time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	h->pid = cached_pid;
	h->tid = cached_tid;
	h->prio = (uint8_t)m->prio;
	h->tag_len = (uint8_t)(m->tag_len > 255 ? 255 : m->tag_len);
	h->len = (uint16_t)(h->tag_len + m->len);
}

size_t lb_rec_build(char *buf, const struct lb_msg *m)
{
	struct lb_hdr h;
	lb_hdr_fill(&h, m);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), m->tag, h.tag_len);
	memcpy(buf + sizeof(h) + h.tag_len, m->msg, m->len);
	return sizeof(h) + h.tag_len + m->len;
}

int lb_make_dir(struct lb_ctx *c)
{
	int n = snprintf(c->dir, sizeof(c->dir), "%s/shmlog-bench-%s-XXXXXX",
			 lb_scratch, c->ct->name);
	if (n >= (int)sizeof(c->dir)) {
		snprintf(c->why, sizeof(c->why), "--dir path too long");
		c->dir[0] = '\0';
		return -1;
	}
	if (!mkdtemp(c->dir)) {
		snprintf(c->why, sizeof(c->why),
			 "cannot make a directory in %s: %s", lb_scratch,
			 strerror(errno));
		c->dir[0] = '\0';
		return -1;
	}
	return 0;
}

void lb_remove_dir(struct lb_ctx *c)
{
	if (!c->dir[0])
		return;
	DIR *d = opendir(c->dir);
	if (d) {
		struct dirent *e;
		char p[512];
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(p, sizeof(p), "%s/%s", c->dir, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(c->dir);
	c->dir[0] = '\0';
}

struct lb_sink *lb_sink_new(void)
{
	void *p = mmap(NULL, sizeof(struct lb_sink), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void lb_sink_free(struct lb_sink *s)
{
	if (s)
		munmap(s, sizeof(*s));
}

pid_t lb_spawn(struct lb_ctx *c, void (*fn)(void *arg), void *arg)
{
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(c->why, sizeof(c->why), "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* A collector must never outlive the benchmark. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		fn(arg);
		_exit(0);
	}
	return pid;
}

void lb_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 200; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

const char *lb_proc_stat(const char *pid, char *buf, size_t len)
{
	char path[300];
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces: fields count from its ')'. */
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p + 2 : NULL;
}

double lb_proc_cpu_s(pid_t pid)
{
	char id[24], buf[1024];
	snprintf(id, sizeof(id), "%d", (int)pid);
	const char *p = lb_proc_stat(id, buf, sizeof(buf));
	if (!p)
		return -1;
	unsigned long ut, st;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
		   &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}
