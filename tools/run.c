/* SPDX-License-Identifier: MIT */
/*
 * shmlog run: run a program unchanged with its standard output and error
 * logged line by line, as systemd-cat and Android's logwrapper do. Records
 * carry the program's pid; its exit status is passed through and logged;
 * signals sent to us are passed on; `--syslog` also catches what it sends
 * to syslog(3), through the LD_PRELOAD shim libshmlog-syslog.so.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "shmlog.h"
#include "write.h"

/* Where the syslog shim was built; the installed copy is looked for first
 * (beside the library: ../lib*, relative to this program). */
#ifndef SHMLOG_SYSLOG_SHIM_BUILD
#define SHMLOG_SYSLOG_SHIM_BUILD ""
#endif
#ifndef SHMLOG_LIBDIR
#define SHMLOG_LIBDIR "lib"
#endif
#define SHIM_NAME "libshmlog-syslog.so"

struct run_opts {
	const char *tag; /* NULL: the program's name */
	int out_prio, err_prio;
	bool level_prefix; /* "<N>" at a line's start sets its priority */
	bool syslog; /* LD_PRELOAD the syslog(3) shim */
	bool create;
	char **argv;
};

/* One captured stream: a pipe and the part of a line read so far. */
struct stream {
	int fd; /* -1 once closed */
	int prio;
	size_t len;
	bool continued; /* the line was split: no "<N>" in the rest */
	char buf[SHMLOG_MSG_MAX];
};

static volatile pid_t child_pid;

/* Pass a signal someone sent us on to the program. One the terminal sent
 * (Ctrl-C: from the kernel) already went to the whole foreground process
 * group, the program included: not twice. */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si->si_code != SI_KERNEL)
		kill(child_pid, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT,
				SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

static void forward_signals(void)
{
	struct sigaction sa = {.sa_sigaction = forward_signal,
			       .sa_flags = SA_SIGINFO | SA_RESTART};
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &sa, NULL);
}

static void log_line(shmlog_t *h, const struct run_opts *o, struct stream *s,
		     const char *tag, const char *line, size_t len)
{
	int prio = s->prio;
	if (o->level_prefix && !s->continued && len >= 3 && line[0] == '<' &&
	    line[1] >= '0' && line[1] <= '7' && line[2] == '>') {
		prio = cli_syslog_level_prio(line[1] - '0');
		line += 3;
		len -= 3;
	}
	shmlog_write_ex(h, 0, child_pid, prio, tag, line, len);
}

/* Log the complete lines in @s's buffer; a line as long as the buffer is
 * logged as it is and continues in the next record. */
static void drain_lines(shmlog_t *h, const struct run_opts *o,
			struct stream *s, const char *tag, bool eof)
{
	size_t start = 0;
	for (;;) {
		char *nl = memchr(s->buf + start, '\n', s->len - start);
		if (!nl)
			break;
		size_t n = (size_t)(nl - (s->buf + start));
		log_line(h, o, s, tag, s->buf + start, n);
		s->continued = false;
		start += n + 1;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
	if (s->len && (s->len == sizeof(s->buf) || eof)) {
		log_line(h, o, s, tag, s->buf, s->len);
		s->continued = !eof;
		s->len = 0;
	}
}

/* Read what @s has; close it at end of file. */
static void pump(shmlog_t *h, const struct run_opts *o, struct stream *s,
		 const char *tag)
{
	ssize_t n = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		drain_lines(h, o, s, tag, true);
		close(s->fd);
		s->fd = -1;
		return;
	}
	s->len += (size_t)n;
	drain_lines(h, o, s, tag, false);
}

/* The syslog shim to preload: $SHMLOG_SYSLOG_SHIM, else beside the library
 * this program was installed with, else where it was built, else let the
 * dynamic linker search for it. */
static void shim_path(char *buf, size_t cap)
{
	const char *env = getenv("SHMLOG_SYSLOG_SHIM");
	if (env && env[0]) {
		snprintf(buf, cap, "%s", env);
		return;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			int n2 = snprintf(buf, cap, "%s/../%s/" SHIM_NAME, exe,
					  SHMLOG_LIBDIR);
			if (n2 > 0 && (size_t)n2 < cap && access(buf, R_OK) == 0)
				return;
		}
	}
	if (SHMLOG_SYSLOG_SHIM_BUILD[0] &&
	    access(SHMLOG_SYSLOG_SHIM_BUILD, R_OK) == 0) {
		snprintf(buf, cap, "%s", SHMLOG_SYSLOG_SHIM_BUILD);
		return;
	}
	snprintf(buf, cap, "%s", SHIM_NAME);
}

/* In the child: the environment the program gets with --syslog. */
static void setup_syslog_env(const struct run_opts *o)
{
	char shim[PATH_MAX], pre[2 * PATH_MAX + 2];
	shim_path(shim, sizeof(shim));
	const char *old = getenv("LD_PRELOAD");
	snprintf(pre, sizeof(pre), "%s%s%s", shim, old && old[0] ? " " : "",
		 old ? old : "");
	setenv("LD_PRELOAD", pre, 1);
	/* LOG_PERROR's copy on stderr would be captured: logged twice */
	setenv("SHMLOG_SYSLOG_PERROR", "0", 1);
	if (o->tag)
		setenv("SHMLOG_SYSLOG_TAG", o->tag, 1);
}

/* In the child: become the program. Exec failures go to the parent through
 * @errfd (close-on-exec: it closes unread when exec works). */
static void exec_child(const struct run_opts *o, int out, int err, int errfd)
{
	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	signal(SIGPIPE, SIG_DFL); /* main() ignores it; exec keeps that */
	if (cli_buffer)
		setenv("SHMLOG_BUFFER", cli_buffer, 1);
	if (o->syslog)
		setup_syslog_env(o);
	execvp(o->argv[0], o->argv);
	int e = errno;
	if (write(errfd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

static int log_exit(shmlog_t *h, const char *tag, int status)
{
	char msg[128];
	int prio, rc;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		snprintf(msg, sizeof(msg), "killed by signal %d (%s)%s", sig,
			 strsignal(sig), WCOREDUMP(status) ? ", core dumped" : "");
		prio = SHMLOG_ERROR;
		rc = 128 + sig;
	} else {
		rc = WEXITSTATUS(status);
		snprintf(msg, sizeof(msg), "exited with status %d", rc);
		prio = rc ? SHMLOG_WARN : SHMLOG_INFO;
	}
	shmlog_write_ex(h, 0, child_pid, prio, tag, msg, strlen(msg));
	return rc;
}

/* Capture both streams until the program has exited and they are drained.
 * A grandchild that keeps the pipes open does not keep us: once the program
 * is gone we read what is there and stop. */
static int supervise(shmlog_t *h, const struct run_opts *o, const char *tag,
		     struct stream *s)
{
	int status = 0;
	bool exited = false;
	for (;;) {
		struct pollfd p[2];
		int n = 0;
		for (int i = 0; i < 2; i++)
			if (s[i].fd >= 0)
				p[n++] = (struct pollfd){.fd = s[i].fd,
							 .events = POLLIN};
		if (!n && exited)
			break;
		if (!exited) {
			pid_t w = waitpid(child_pid, &status, WNOHANG);
			if (w == child_pid)
				exited = true;
		}
		if (!n) { /* both closed: just wait */
			if (waitpid(child_pid, &status, 0) == child_pid)
				exited = true;
			continue;
		}
		int r = poll(p, (nfds_t)n, exited ? 0 : 100);
		if (r < 0 && errno != EINTR)
			break;
		if (r == 0 && exited)
			break;
		for (int i = 0, k = 0; i < 2; i++) {
			if (s[i].fd < 0)
				continue;
			if (p[k++].revents)
				pump(h, o, &s[i], tag);
		}
	}
	for (int i = 0; i < 2; i++) {
		if (s[i].fd >= 0) {
			drain_lines(h, o, &s[i], tag, true);
			close(s[i].fd);
		}
	}
	return log_exit(h, tag, status);
}

static int parse_prio(const char *arg, int *out)
{
	int p = cli_parse_priority(arg);
	if (p < SHMLOG_VERBOSE || p > SHMLOG_FATAL)
		return cli_usage_error("run",
				       "bad priority '%s': give V D I W E F, a "
				       "name (debug, info, warning, err, ...) "
				       "or facility.level",
				       arg);
	*out = p;
	return 0;
}

static void run_help(void)
{
	printf("usage: shmlog run [-b NAME] [-t TAG] [-p PRIO] "
	       "[--stderr-priority PRIO] [--syslog] -- COMMAND [ARG...]\n"
	       "Run COMMAND with its standard output and error logged, one "
	       "record per line,\nwith COMMAND's pid; exit with its status "
	       "(128+N if killed by signal N), logged too.\n\n"
	       "  -b, --buffer NAME         the buffer (default $SHMLOG_BUFFER, "
	       "else main)\n"
	       "  -t, --tag TAG             the records' tag (default: COMMAND's "
	       "name)\n"
	       "  -p, --priority PRIO       standard output's priority "
	       "(default I)\n"
	       "      --stderr-priority P   standard error's priority "
	       "(default W)\n"
	       "      --no-level-prefix     take a line's leading <N> (a "
	       "syslog level 0-7,\n"
	       "                            as systemd-cat reads it) as text\n"
	       "      --syslog              also log what COMMAND sends to "
	       "syslog(3) (preloads\n"
	       "                            libshmlog-syslog.so)\n"
	       "      --create              create the buffer if missing\n"
	       "PRIO: V D I W E F, or a name as logger(1) takes it (emerg alert "
	       "crit err warning\nnotice info debug, or facility.level). "
	       "Signals sent to shmlog run are passed on.\n");
}

static int parse_run(int argc, char **argv, struct run_opts *o)
{
	enum { OPT_STDERR = 256, OPT_NO_PREFIX, OPT_SYSLOG, OPT_CREATE };
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"tag", required_argument, 0, 't'},
		{"priority", required_argument, 0, 'p'},
		{"stderr-priority", required_argument, 0, OPT_STDERR},
		{"no-level-prefix", no_argument, 0, OPT_NO_PREFIX},
		{"syslog", no_argument, 0, OPT_SYSLOG},
		{"create", no_argument, 0, OPT_CREATE},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c, err;
	/* '+': options end at COMMAND, so `shmlog run ls -l` needs no "--" */
	while ((c = getopt_long(argc, argv, "+b:t:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': cli_buffer = optarg; break;
		case 't':
			if (!optarg[0])
				return cli_usage_error("run", "empty tag%s: give "
							      "-t NAME", "");
			o->tag = optarg;
			break;
		case 'p':
			if ((err = parse_prio(optarg, &o->out_prio)))
				return err;
			break;
		case OPT_STDERR:
			if ((err = parse_prio(optarg, &o->err_prio)))
				return err;
			break;
		case OPT_NO_PREFIX: o->level_prefix = false; break;
		case OPT_SYSLOG: o->syslog = true; break;
		case OPT_CREATE: o->create = true; break;
		case 'h': run_help(); return 0;
		default:
			fprintf(stderr, "Try `shmlog run --help`.\n");
			return 2;
		}
	}
	if (optind >= argc)
		return cli_usage_error("run",
				       "no command given%s: shmlog run [options] "
				       "-- COMMAND [ARG...]",
				       "");
	o->argv = argv + optind;
	return -1;
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o = {.out_prio = SHMLOG_INFO,
			     .err_prio = SHMLOG_WARN,
			     .level_prefix = true};
	int r = parse_run(argc, argv, &o);
	if (r >= 0)
		return r;
	shmlog_t *h;
	int err = cli_open_writer(o.create, &h);
	if (err)
		return cli_writer_fail("run", err);
	const char *tag = o.tag ? o.tag : base_name(o.argv[0]);

	int out[2], errp[2], exec_err[2];
	if (pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
	    pipe2(exec_err, O_CLOEXEC)) {
		perror("shmlog run: pipe");
		shmlog_close(h);
		return 1;
	}
	/* forward from before the fork: a signal in between is not lost */
	forward_signals();
	pid_t pid = fork();
	if (pid < 0) {
		perror("shmlog run: fork");
		shmlog_close(h);
		return 1;
	}
	if (pid == 0)
		exec_child(&o, out[1], errp[1], exec_err[1]);
	child_pid = pid;
	close(out[1]);
	close(errp[1]);
	close(exec_err[1]);
	int e;
	ssize_t n;
	while ((n = read(exec_err[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(exec_err[0]);
	if (n == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		close(out[0]);
		close(errp[0]);
		fprintf(stderr, "shmlog run: cannot run '%s': %s%s\n", o.argv[0],
			strerror(e),
			e == ENOENT ? " (not found in $PATH)" : "");
		char msg[PATH_MAX + 64];
		snprintf(msg, sizeof(msg), "cannot run '%s': %s", o.argv[0],
			 strerror(e));
		shmlog_write(h, SHMLOG_ERROR, tag, msg);
		shmlog_close(h);
		return e == ENOENT ? 127 : 126;
	}
	static struct stream s[2];
	s[0] = (struct stream){.fd = out[0], .prio = o.out_prio};
	s[1] = (struct stream){.fd = errp[0], .prio = o.err_prio};
	int rc = supervise(h, &o, tag, s);
	shmlog_close(h);
	return rc;
}
