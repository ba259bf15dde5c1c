/* SPDX-License-Identifier: MIT */
/*
 * syslog(3) into a real rsyslogd, which we start with a private
 * configuration (one imuxsock socket in our scratch directory, everything
 * to one file there, no rate limiting) and stop at teardown.
 *
 * glibc's syslog() always sends to /dev/log. Nothing on the machine must
 * be disturbed, so each writer process enters a private mount namespace
 * and makes /dev/log point at our socket there only: it bind-mounts the
 * socket over an existing /dev/log, or, when there is none, mounts a
 * private tmpfs on /dev holding just a "log" symlink (a writer needs
 * nothing else from /dev). Both need root; without it we skip.
 *
 * The daemon's CPU is part of the price; we count what reached the output
 * file by its newlines to know when the daemon has caught up.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

#define RSYSLOGD "/usr/sbin/rsyslogd"

struct rs_state {
	int out_fd; /* the daemon's output file, read for newlines */
	uint64_t lines;
	char out[300];
};

static int write_conf(struct lb_ctx *c, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f,
		"# shmlog-bench's private rsyslogd: one socket, one file.\n"
		"global(workDirectory=\"%s\")\n"
		"module(load=\"imuxsock\" SysSock.Use=\"off\")\n"
		"input(type=\"imuxsock\" Socket=\"%s/log\" "
		"RateLimit.Interval=\"0\")\n"
		"*.* action(type=\"omfile\" file=\"%s/rsyslog.log\")\n",
		c->dir, c->dir, c->dir);
	return fclose(f);
}

static void start_daemon(void *arg)
{
	struct lb_ctx *c = arg;
	char conf[300], pid[300], err[300];
	snprintf(conf, sizeof(conf), "%s/rsyslog.conf", c->dir);
	snprintf(pid, sizeof(pid), "%s/rsyslogd.pid", c->dir);
	snprintf(err, sizeof(err), "%s/rsyslogd.err", c->dir);
	int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	execl(RSYSLOGD, "rsyslogd", "-n", "-f", conf, "-i", pid, (char *)NULL);
	_exit(127);
}

static int wait_for_socket(struct lb_ctx *c)
{
	char sock[300];
	struct stat st;
	snprintf(sock, sizeof(sock), "%s/log", c->dir);
	for (int i = 0; i < 500; i++) {
		if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode))
			return 0;
		if (waitpid(c->collector, NULL, WNOHANG) == c->collector) {
			c->collector = 0;
			return -1;
		}
		usleep(10000);
	}
	return -1;
}

/* The daemon's first line of complaint, for the skip message. */
static void daemon_error(struct lb_ctx *c, char *buf, size_t len)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/rsyslogd.err", c->dir);
	snprintf(buf, len, "no message");
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static int rs_setup(struct lb_ctx *c)
{
	if (access(RSYSLOGD, X_OK) != 0) {
		snprintf(c->why, sizeof(c->why),
			 RSYSLOGD " is not installed (Debian package rsyslog)");
		return -1;
	}
	if (geteuid() != 0) {
		snprintf(c->why, sizeof(c->why),
			 "needs root: syslog(3) writes to /dev/log, which we "
			 "redirect "
			 "in a private mount namespace");
		return -1;
	}
	if (lb_make_dir(c) < 0)
		return -1;
	char conf[300];
	snprintf(conf, sizeof(conf), "%s/rsyslog.conf", c->dir);
	if (write_conf(c, conf) != 0) {
		snprintf(c->why, sizeof(c->why), "cannot write %.200s", conf);
		lb_remove_dir(c);
		return -1;
	}
	c->collector = lb_spawn(c, start_daemon, c);
	if (c->collector < 0 || wait_for_socket(c) < 0) {
		char first[200];
		daemon_error(c, first, sizeof(first));
		snprintf(c->why, sizeof(c->why),
			 "rsyslogd did not create its socket: %s", first);
		lb_stop(c->collector);
		c->collector = 0;
		lb_remove_dir(c);
		return -1;
	}
	struct rs_state *s = calloc(1, sizeof(*s));
	if (!s) {
		lb_stop(c->collector);
		lb_remove_dir(c);
		return -1;
	}
	snprintf(s->out, sizeof(s->out), "%s/rsyslog.log", c->dir);
	s->out_fd = -1;
	c->priv = s;
	snprintf(c->arg, sizeof(c->arg), "%s/log", c->dir);
	snprintf(c->note, sizeof(c->note),
		 "rsyslogd (pid %d), private socket and file",
		 (int)c->collector);
	return 0;
}

static void rs_teardown(struct lb_ctx *c)
{
	struct rs_state *s = c->priv;
	lb_stop(c->collector);
	c->collector = 0;
	if (s && s->out_fd >= 0)
		close(s->out_fd);
	free(s);
	c->priv = NULL;
	lb_remove_dir(c);
}

/* Lines in the daemon's output file so far: it writes one per record. */
static int64_t rs_consumed(struct lb_ctx *c)
{
	struct rs_state *s = c->priv;
	char buf[65536];
	if (s->out_fd < 0) {
		s->out_fd = open(s->out, O_RDONLY | O_CLOEXEC);
		if (s->out_fd < 0)
			return 0;
	}
	ssize_t n;
	while ((n = read(s->out_fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			s->lines += buf[i] == '\n';
	return (int64_t)s->lines;
}

/* Make /dev/log reach @sock in this process's own mount namespace. */
static int redirect_dev_log(const char *sock, char *err, size_t errlen)
{
	struct stat st;
	if (unshare(CLONE_NEWNS) < 0) {
		snprintf(err, errlen, "unshare(CLONE_NEWNS): %s",
			 strerror(errno));
		return -1;
	}
	/* Keep our mounts from propagating back to the machine. */
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		snprintf(err, errlen, "make / private: %s", strerror(errno));
		return -1;
	}
	if (lstat("/dev/log", &st) == 0) {
		if (mount(sock, "/dev/log", NULL, MS_BIND, NULL) < 0) {
			snprintf(err, errlen, "bind %s on /dev/log: %s", sock,
				 strerror(errno));
			return -1;
		}
		return 0;
	}
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k") <
		0 ||
	    symlink(sock, "/dev/log") < 0) {
		snprintf(err, errlen, "private /dev/log: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void *rs_open(const char *arg, char *err, size_t errlen)
{
	if (redirect_dev_log(arg, err, errlen) < 0)
		return NULL;
	/* LOG_NDELAY: connect now, not on the first measured call. */
	openlog("shmlog-bench", LOG_PID | LOG_NDELAY, LOG_USER);
	return (void *)1;
}

static int syslog_level(int prio)
{
	static const int map[] = {LOG_DEBUG,   LOG_DEBUG, LOG_DEBUG, LOG_INFO,
				  LOG_WARNING, LOG_ERR,	  LOG_CRIT};
	return prio >= 2 && prio <= 7 ? map[prio - 1] : LOG_INFO;
}

static long rs_write(void *w, const struct lb_msg *m)
{
	(void)w;
	syslog(syslog_level(m->prio), "%s: %.*s", m->tag, (int)m->len, m->msg);
	return 0;
}

static void rs_close(void *w)
{
	(void)w;
	closelog();
}

const struct lb_contender lb_syslog = {
    .name = "syslog-rsyslogd",
    .what = "syslog(3) to a private rsyslogd (imuxsock -> omfile)",
    .setup = rs_setup,
    .teardown = rs_teardown,
    .open = rs_open,
    .write = rs_write,
    .close = rs_close,
    .consumed = rs_consumed,
};
