/* SPDX-License-Identifier: MIT */
/*
 * shmlog run: run a program unchanged with its standard output and error
 * logged line by line, as systemd-cat and Android's logwrapper do. Records
 * carry the program's pid; its exit status is passed through and logged;
 * signals sent to us are passed on; `--syslog` also catches what it sends
 * to syslog(3), through the LD_PRELOAD shim libshmlog-syslog.so, and what
 * it sends to /dev/log itself, through a /dev/log of its own
 * (run_syslog.h).
 *
 * The program's children: a background job or a daemon the program
 * started inherits its standard output and error, and may go on writing
 * after the program has exited. run keeps reading until the last process
 * holding the pipes closes them, so their lines are logged and no writer
 * ever meets a pipe without a reader (SIGPIPE). When run is to stop first
 * (--exit-with-child, or SIGINT/SIGTERM once the program has exited), it
 * hands the pipes to a background copy of itself that follows them to
 * their end: run exits with the program's status, the descendants write on
 * undisturbed. The log says which of these happened.
 */
#include <dirent.h>
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
#include "run_syslog.h"
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
	bool exit_with_child; /* stop reading when the program exits */
	char **argv;
};

/* One captured stream: a pipe and the part of a line read so far. */
struct stream {
	int fd; /* -1 once closed */
	int prio;
	size_t len;
	bool continued; /* the line was split: no "<N>" in the rest */
	/* one byte more than a record holds: a line that fills it goes
	 * into records as cli_line_piece() cuts it, the rest stays */
	char buf[SHMLOG_MSG_MAX + 1];
};

/* The program's pid, which every record carries; the pid signals are
 * passed on to, 0 once the program is reaped (the pid may be reused). */
static pid_t child_pid;
static volatile sig_atomic_t forward_pid;
/* SIGINT or SIGTERM came: stop once the program has exited */
static volatile sig_atomic_t stop_requested;
/* --syslog: the program's /dev/log, read beside its output */
static struct run_syslog dev_log = {.fd = -1};

/* Pass a signal someone sent us on to the program. One the terminal sent
 * (Ctrl-C: from the kernel) already went to the whole foreground process
 * group, the program included: not twice. */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGINT || sig == SIGTERM)
		stop_requested = 1;
	if (forward_pid > 0 && si->si_code != SI_KERNEL)
		kill((pid_t)forward_pid, sig);
}

/* Only there to interrupt poll() when the program exits. */
static void on_child(int sig)
{
	(void)sig;
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
	struct sigaction sc = {.sa_handler = on_child}; /* no SA_RESTART */
	sigemptyset(&sc.sa_mask);
	sigaction(SIGCHLD, &sc, NULL);
}

static void log_line(shmlog_t **h, const struct run_opts *o, struct stream *s,
		     const char *tag, const char *line, size_t len)
{
	int prio = s->prio;
	if (o->level_prefix && !s->continued && len >= 3 && line[0] == '<' &&
	    line[1] >= '0' && line[1] <= '7' && line[2] == '>') {
		prio = cli_syslog_level_prio(line[1] - '0');
		line += 3;
		len -= 3;
	}
	cli_write_line(h, 0, child_pid, prio, tag, line, len);
}

/* Log the complete lines in @s's buffer; a line longer than a record
 * (cli_line_piece()) is logged a record at a time as it comes. */
static void drain_lines(shmlog_t **h, const struct run_opts *o,
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
	if (s->len && eof) {
		log_line(h, o, s, tag, s->buf, s->len);
		s->continued = false;
		s->len = 0;
	} else if (s->len == sizeof(s->buf)) {
		size_t n = cli_line_piece(s->buf, s->len);
		log_line(h, o, s, tag, s->buf, n);
		s->continued = true;
		memmove(s->buf, s->buf + n, s->len - n);
		s->len -= n;
	}
}

/* Read what @s has; close it at end of file. */
static void pump(shmlog_t **h, const struct run_opts *o, struct stream *s,
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

/* What the child tells the parent before exec, through a close-on-exec
 * pipe that closes unread when all went well. */
struct child_report {
	int exec_err; /* exec failed with this errno; 0: it did not */
	int dev_log_err; /* --syslog: no /dev/log of its own (-errno) */
	char dev_log_what[64]; /* the step that failed */
};

static void report(int fd, const struct child_report *r)
{
	if (write(fd, r, sizeof(*r)) < 0)
		_exit(127);
}

/* In the child: become the program. */
static void exec_child(const struct run_opts *o, int out, int err, int repfd)
{
	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	signal(SIGPIPE, SIG_DFL); /* main() ignores it; exec keeps that */
	if (cli_buffer)
		setenv("SHMLOG_BUFFER", cli_buffer, 1);
	struct child_report r = {0};
	if (o->syslog)
		setup_syslog_env(o);
	if (o->syslog && dev_log.fd >= 0) {
		const char *what = "";
		r.dev_log_err = run_syslog_child(&dev_log, &what);
		if (r.dev_log_err) {
			snprintf(r.dev_log_what, sizeof(r.dev_log_what), "%s",
				 what);
			report(repfd, &r);
			r.dev_log_err = 0;
		}
	}
	execvp(o->argv[0], o->argv);
	r.exec_err = errno;
	report(repfd, &r);
	_exit(127);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* What the program's end was, as a sentence in @msg, at @prio; returns
 * run's exit status: the program's, or 128+N if signal N killed it. */
static int exit_text(int status, char *msg, size_t cap, int *prio)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		snprintf(msg, cap, "killed by signal %d (%s)%s", sig,
			 strsignal(sig), WCOREDUMP(status) ? ", core dumped" : "");
		*prio = SHMLOG_ERROR;
		return 128 + sig;
	}
	int rc = WEXITSTATUS(status);
	snprintf(msg, cap, "exited with status %d", rc);
	*prio = rc ? SHMLOG_WARN : SHMLOG_INFO;
	return rc;
}

static void log_msg(shmlog_t **h, const char *tag, int prio, const char *msg)
{
	cli_write_line(h, 0, child_pid, prio, tag, msg, strlen(msg));
}

/* At the end: log what is left on the program's /dev/log. Bounded: a
 * descendant that never stops sending does not hold us. */
static void drain_dev_log(shmlog_t **h, const struct run_opts *o,
			  const char *tag)
{
	for (int max = 64; max > 0 && dev_log.fd >= 0; max--)
		if (!run_syslog_pump(h, &dev_log, tag, o->tag))
			return;
}

static bool streams_open(const struct stream *s)
{
	return s[0].fd >= 0 || s[1].fd >= 0;
}

/* Poll the open streams of @s for @timeout_ms; log what came from each
 * that has something. Returns poll()'s result. */
static int poll_pump(shmlog_t **h, const struct run_opts *o, struct stream *s,
		     const char *tag, int timeout_ms)
{
	struct pollfd p[3];
	int n = 0;
	for (int i = 0; i < 2; i++)
		if (s[i].fd >= 0)
			p[n++] = (struct pollfd){.fd = s[i].fd, .events = POLLIN};
	/* the program's /dev/log, last */
	if (dev_log.fd >= 0)
		p[n++] = (struct pollfd){.fd = dev_log.fd, .events = POLLIN};
	int r = poll(n ? p : NULL, (nfds_t)n, timeout_ms);
	if (r <= 0)
		return r;
	int k = 0;
	for (int i = 0; i < 2; i++) {
		if (s[i].fd < 0)
			continue;
		if (p[k++].revents)
			pump(h, o, &s[i], tag);
	}
	if (k < n && p[k].revents)
		run_syslog_pump(h, &dev_log, tag, o->tag);
	return r;
}

/* Wait up to @timeout_ms for output and log what came. A signal (the
 * program's exit: SIGCHLD) ends the wait early. */
static void read_output(shmlog_t **h, const struct run_opts *o,
			struct stream *s, const char *tag, int timeout_ms)
{
	poll_pump(h, o, s, tag, timeout_ms);
}

/* The program has exited: log what it left in the pipes. Returns when
 * they are closed or hold nothing more for now; bounded by @max reads (a
 * descendant writing without pause does not hold us here). */
static void read_left(shmlog_t **h, const struct run_opts *o, struct stream *s,
		      const char *tag)
{
	for (int max = 4096; max > 0 && streams_open(s); max--) {
		int r = poll_pump(h, o, s, tag, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
	}
}

/* How many other processes hold the pipes of @s open (the program's
 * descendants, or whoever they passed them to): their descriptors in
 * /proc name the pipes' inodes. Processes we may not look into are not
 * counted; -1 if /proc cannot be read. Bounded by /proc's listing. */
static int count_holders(const struct stream *s)
{
	char want[2][48] = {"", ""};
	for (int i = 0; i < 2; i++) {
		struct stat st;
		if (s[i].fd >= 0 && fstat(s[i].fd, &st) == 0)
			snprintf(want[i], sizeof(want[i]), "pipe:[%lu]",
				 (unsigned long)st.st_ino);
	}
	DIR *proc = opendir("/proc");
	if (!proc)
		return -1;
	int count = 0;
	pid_t self = getpid();
	struct dirent *e;
	while ((e = readdir(proc))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
		DIR *fds = opendir(dir);
		if (!fds)
			continue;
		bool holds = false;
		struct dirent *f;
		while (!holds && (f = readdir(fds))) {
			char link[64];
			ssize_t n = readlinkat(dirfd(fds), f->d_name, link,
					       sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			holds = (want[0][0] && !strcmp(link, want[0])) ||
				(want[1][0] && !strcmp(link, want[1]));
		}
		closedir(fds);
		count += holds;
	}
	closedir(proc);
	return count;
}

/* "1 descendant still holds its output" and the like, into @buf. */
static void holders_text(const struct stream *s, char *buf, size_t cap)
{
	int n = count_holders(s);
	if (n > 0)
		snprintf(buf, cap, "%d descendant%s still hold%s its output", n,
			 n == 1 ? "" : "s", n == 1 ? "s" : "");
	else
		snprintf(buf, cap, "another process still holds its output");
}

/* Follow the output until every holder has closed it, or until
 * *@stop. Returns true at the end of the output. */
static bool follow_output(shmlog_t **h, const struct run_opts *o,
			  struct stream *s, const char *tag,
			  volatile sig_atomic_t *stop)
{
	while (streams_open(s) && !*stop)
		read_output(h, o, s, tag, 100);
	return !streams_open(s);
}

static void on_logger_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Hand the pipes to a background copy of us that follows them to their
 * end, so that no descendant writes into a pipe without a reader. It
 * leaves our session (the terminal's Ctrl-C is not for it) and our
 * standard streams (a `$(shmlog run ...)` ends with us); SIGTERM stops
 * it. Returns its pid (in the parent), or -1 if it could not be made. */
static pid_t hand_off(shmlog_t **h, const struct run_opts *o, struct stream *s,
		      const char *tag)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	forward_pid = 0;
	stop_requested = 0;
	struct sigaction ign = {.sa_handler = SIG_IGN};
	struct sigaction term = {.sa_handler = on_logger_term};
	sigemptyset(&ign.sa_mask);
	sigemptyset(&term.sa_mask);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &ign, NULL);
	sigaction(SIGTERM, &term, NULL);
	if (follow_output(h, o, s, tag, &stop_requested)) {
		log_msg(h, tag, SHMLOG_INFO, "output closed");
	} else {
		for (int i = 0; i < 2; i++)
			drain_lines(h, o, &s[i], tag, true);
		log_msg(h, tag, SHMLOG_WARN,
			"stopped following its output (SIGTERM) while it was "
			"still open: a process writing to it now gets EPIPE "
			"or SIGPIPE");
	}
	drain_dev_log(h, o, tag);
	run_syslog_close(&dev_log, true);
	shmlog_close(*h);
	_exit(0);
}

/* The program has exited (@how, logged at @prio) and left its output
 * open: follow it, or hand it off. */
static void after_exit(shmlog_t **h, const struct run_opts *o,
		       struct stream *s, const char *tag, const char *how,
		       int prio)
{
	static const char bg[] =
		"a background shmlog run follows it until it is closed";
	char who[96], msg[384];
	holders_text(s, who, sizeof(who));
	if (o->exit_with_child) {
		snprintf(msg, sizeof(msg), "%s; %s: --exit-with-child: %s", how,
			 who, bg);
	} else if (stop_requested) {
		snprintf(msg, sizeof(msg), "%s; %s: asked to stop "
			 "(SIGINT/SIGTERM): %s", how, who, bg);
	} else {
		snprintf(msg, sizeof(msg), "%s; %s: following it until it is "
			 "closed", how, who);
		log_msg(h, tag, prio, msg);
		if (follow_output(h, o, s, tag, &stop_requested)) {
			log_msg(h, tag, SHMLOG_INFO, "output closed");
			return;
		}
		holders_text(s, who, sizeof(who));
		snprintf(msg, sizeof(msg), "asked to stop (SIGINT/SIGTERM); "
			 "%s: %s", who, bg);
		prio = SHMLOG_INFO;
	}
	/* logged first: the background logger's records come after it */
	log_msg(h, tag, prio, msg);
	if (hand_off(h, o, s, tag) < 0) {
		snprintf(msg, sizeof(msg), "cannot follow its output in the "
			 "background (fork: %s): a process writing to it now "
			 "gets EPIPE or SIGPIPE", strerror(errno));
		log_msg(h, tag, SHMLOG_ERROR, msg);
		fprintf(stderr, "shmlog run: %s\n", msg);
	} else {
		/* the background logger reads the program's /dev/log too,
		 * and removes it at its end */
		run_syslog_close(&dev_log, false);
	}
	/* the background logger has the pipes and any partial line */
	for (int i = 0; i < 2; i++) {
		if (s[i].fd >= 0)
			close(s[i].fd);
		s[i].fd = -1;
		s[i].len = 0;
	}
}

/* Capture both streams while the program runs, then what it left, then
 * its descendants' output until they close it (see the top of the file). */
static int supervise(shmlog_t **h, const struct run_opts *o, const char *tag,
		     struct stream *s)
{
	int status = 0;
	for (;;) {
		pid_t w = waitpid(child_pid, &status, WNOHANG);
		if (w == child_pid || (w < 0 && errno == ECHILD))
			break;
		/* SIGCHLD ends the wait; 100 ms bounds a lost race */
		read_output(h, o, s, tag, 100);
	}
	forward_pid = 0;
	read_left(h, o, s, tag);
	char how[128];
	int prio;
	int rc = exit_text(status, how, sizeof(how), &prio);
	if (!streams_open(s))
		log_msg(h, tag, prio, how);
	else
		after_exit(h, o, s, tag, how, prio);
	for (int i = 0; i < 2; i++) {
		if (s[i].fd >= 0) {
			drain_lines(h, o, &s[i], tag, true);
			close(s[i].fd);
		}
	}
	return rc;
}

static int parse_prio(const char *arg, int *out)
{
	int p = cli_parse_priority(arg);
	if (p < SHMLOG_VERBOSE || p > SHMLOG_FATAL)
		return cli_usage_error("run",
				       "bad priority '%s': " CLI_PRIO_HINT,
				       arg);
	*out = p;
	return 0;
}

static void run_help(void)
{
	printf("usage: shmlog run [-b NAME] [-t TAG] [-p PRIO] "
	       "[--stderr-priority PRIO] [--syslog]\n"
	       "                  [--exit-with-child] -- COMMAND [ARG...]\n"
	       "Run COMMAND with its standard output and error logged, one "
	       "record per line,\nwith COMMAND's pid; exit with its status "
	       "(128+N if killed by signal N), logged too.\n"
	       "Output COMMAND's children still write after it exited "
	       "(background jobs,\ndaemons) is logged until the last of them "
	       "closes it.\n\n"
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
	       "                            libshmlog-syslog.so) and to "
	       "/dev/log (logger,\n"
	       "                            Python's SysLogHandler: a /dev/log "
	       "of its own, in\n"
	       "                            a private mount namespace)\n"
	       "      --exit-with-child     exit when COMMAND does; output its "
	       "children still\n"
	       "                            hold is logged by a background "
	       "shmlog run until\n"
	       "                            they close it (never left to "
	       "SIGPIPE)\n"
	       "      --create              create the buffer if missing\n"
	       "PRIO: V D I W E F, a name as logger(1) takes it (emerg alert "
	       "crit err warning\nnotice info debug, or facility.level), or "
	       "syslog's number 0 (emerg) to 7 (debug).\n"
	       "A line longer than a record (4000 bytes) is logged as several "
	       "records.\nSignals sent to shmlog run are passed on;\nafter SIGINT or "
	       "SIGTERM it stops at COMMAND's exit, as with "
	       "--exit-with-child.\n");
}

static int parse_run(int argc, char **argv, struct run_opts *o)
{
	enum { OPT_STDERR = 256, OPT_NO_PREFIX, OPT_SYSLOG, OPT_CREATE,
	       OPT_EXIT_WITH_CHILD };
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"tag", required_argument, 0, 't'},
		{"priority", required_argument, 0, 'p'},
		{"stderr-priority", required_argument, 0, OPT_STDERR},
		{"no-level-prefix", no_argument, 0, OPT_NO_PREFIX},
		{"syslog", no_argument, 0, OPT_SYSLOG},
		{"create", no_argument, 0, OPT_CREATE},
		{"exit-with-child", no_argument, 0, OPT_EXIT_WITH_CHILD},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c, err;
	/* '+': options end at COMMAND, so `shmlog run ls -l` needs no "--" */
	while ((c = cli_getopt(argc, argv, "+b:t:p:h", opts)) != -1) {
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
		case OPT_EXIT_WITH_CHILD: o->exit_with_child = true; break;
		case 'h': run_help(); return 0;
		default: return cli_bad_option("run");
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

/* --syslog cannot give the program a /dev/log of its own: say why, on
 * stderr and in the log, and go on without (its syslog(3) calls are still
 * caught by the shim). */
static void no_dev_log(shmlog_t **h, const char *tag, const char *what,
		       int err)
{
	char msg[512];
	snprintf(msg, sizeof(msg),
		 "--syslog: cannot give the program a /dev/log of its own "
		 "(%s: %s): what it sends to /dev/log itself (logger, "
		 "Python's SysLogHandler) is not logged, its syslog(3) calls "
		 "are%s",
		 what, strerror(-err),
		 err == -EPERM || err == -ENOSPC || err == -EINVAL
			 ? ". It needs a mount namespace: run as root, or "
			   "allow user namespaces (sysctl "
			   "user.max_user_namespaces, "
			   "kernel.unprivileged_userns_clone, "
			   "kernel.apparmor_restrict_unprivileged_userns)"
			 : "");
	fprintf(stderr, "shmlog run: %s\n", msg);
	log_msg(h, tag, SHMLOG_WARN, msg);
}

/* Read what the child reported until exec closes the pipe @fd: a /dev/log
 * it could not have is reported here; returns the errno of a failed exec,
 * or 0. */
static int read_reports(int fd, shmlog_t **h, const char *tag)
{
	struct child_report r;
	ssize_t n;
	for (;;) {
		while ((n = read(fd, &r, sizeof(r))) < 0 && errno == EINTR)
			;
		if (n != (ssize_t)sizeof(r))
			return 0; /* closed by exec (or the child died) */
		if (r.dev_log_err) {
			r.dev_log_what[sizeof(r.dev_log_what) - 1] = '\0';
			no_dev_log(h, tag, r.dev_log_what, r.dev_log_err);
		}
		if (r.exec_err)
			return r.exec_err;
	}
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o = {.out_prio = SHMLOG_INFO,
			     .err_prio = SHMLOG_WARN,
			     .level_prefix = true};
	int r = parse_run(argc, argv, &o);
	if (r >= 0)
		return r;
	/* the handle changes if the buffer is removed and created again
	 * (cli_write_line()) */
	shmlog_t *writer, **h = &writer;
	int err = cli_open_writer("run", o.create, h);
	if (err)
		return cli_writer_fail("run", err);
	const char *tag = o.tag ? o.tag : base_name(o.argv[0]);
	if (o.syslog) {
		err = run_syslog_open(&dev_log);
		if (err)
			no_dev_log(h, tag, "a socket for it", err);
	}

	int out[2], errp[2], exec_err[2];
	if (pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
	    pipe2(exec_err, O_CLOEXEC)) {
		perror("shmlog run: pipe");
		shmlog_close(*h);
		return 1;
	}
	/* forward from before the fork: a signal in between is not lost */
	forward_signals();
	pid_t pid = fork();
	if (pid < 0) {
		perror("shmlog run: fork");
		run_syslog_close(&dev_log, true);
		shmlog_close(*h);
		return 1;
	}
	if (pid == 0)
		exec_child(&o, out[1], errp[1], exec_err[1]);
	child_pid = pid;
	forward_pid = pid;
	close(out[1]);
	close(errp[1]);
	close(exec_err[1]);
	int e = read_reports(exec_err[0], h, tag);
	close(exec_err[0]);
	if (e) {
		waitpid(pid, NULL, 0);
		run_syslog_close(&dev_log, true);
		close(out[0]);
		close(errp[0]);
		fprintf(stderr, "shmlog run: cannot run '%s': %s%s\n", o.argv[0],
			strerror(e),
			e == ENOENT ? " (not found in $PATH)" : "");
		char msg[PATH_MAX + 64];
		snprintf(msg, sizeof(msg), "cannot run '%s': %s", o.argv[0],
			 strerror(e));
		cli_write_line(h, 0, 0, SHMLOG_ERROR, tag, msg, strlen(msg));
		shmlog_close(*h);
		return e == ENOENT ? 127 : 126;
	}
	static struct stream s[2];
	s[0] = (struct stream){.fd = out[0], .prio = o.out_prio};
	s[1] = (struct stream){.fd = errp[0], .prio = o.err_prio};
	int rc = supervise(h, &o, tag, s);
	drain_dev_log(h, &o, tag);
	run_syslog_close(&dev_log, true);
	shmlog_close(*h);
	return rc;
}
