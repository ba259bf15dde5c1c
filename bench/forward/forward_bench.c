/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench forward: logs leaving the machine.
 *
 * Records per second and CPU per record from a writer to a central
 * rsyslogd, through
 *   - shmlog: writer -> ring -> `shmlog forward` -> central rsyslogd, over
 *     TCP (octet-counted RFC 5424), RELP (every record acknowledged) and a
 *     Unix stream socket;
 *   - today's common path: writer -> syslog(3) -> a local rsyslogd
 *     (imuxsock) -> TCP -> the same central rsyslogd;
 *   - and its reliable variant, the local rsyslogd forwarding with RELP
 *     (omrelp), next to shmlog's RELP;
 *   - shmlog forward over OTLP/HTTP (protobuf, JSON, protobuf with gzip)
 *     into a receiver of the benchmark's own that counts the LogRecords
 *     (otlp_receiver.c), where an OpenTelemetry Collector would be.
 * A run ends when the central rsyslogd has written the last record to its
 * file (or the OTLP receiver has counted it): the rate is end to end. CPU
 * counts every process on the path (writer, forwarder or local rsyslogd,
 * central rsyslogd or OTLP receiver).
 *
 * Then what the writers pay: their records/s alone, and while a forwarder
 * ships the same buffer to the central rsyslogd.
 *
 * Each rsyslogd is started here with a private configuration in a
 * temporary directory, listening on 127.0.0.1 and Unix sockets only. The
 * syslog(3) writer runs in a mount namespace of its own whose /dev/log is
 * the local rsyslogd's socket; where namespaces are not allowed it sends
 * the very datagram glibc's syslog(3) sends, and says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_cmds.h"
#include "otlp_receiver.h"
#include "shmlog.h"

#ifndef SHMLOG_CLI_PATH
#define SHMLOG_CLI_PATH "shmlog"
#endif

struct opts {
	long records; /* per delivery run */
	double writer_s; /* seconds per writer-rate run */
	int reps;
	int quick;
	const char *json;
	const char *cli;
};

struct env {
	char dir[256];
	char central_conf[300], relay_conf[300], relay2_conf[300];
	char out[300], tcp_sock[300], relay_sock[300], relay2_sock[300];
	int tcp_port, relp_port;
	pid_t central, relay, relay2; /* relay: omfwd TCP; relay2: omrelp */
	long lines_seen;
	off_t out_pos;
	struct otlp_rx otlp; /* the OTLP paths' receiver */
};

static double now_s(void)
{
	return (double)bench_now_ns() / 1e9;
}

/* CPU seconds a live process has used (utime + stime). */
static double proc_cpu(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
				"%lu %lu",
			 &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	int port = -1;
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &l))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static bool can_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bool ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a));
	if (fd >= 0)
		close(fd);
	return ok;
}

static pid_t spawn(char *const argv[], const char *log)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log ? log : "/dev/null",
			      O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void stop_child(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 200; i++) { /* 10 s, then no more manners */
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

static bool start_rsyslogd(const char *conf, const char *dir, const char *tag,
			   pid_t *pid)
{
	char pidf[300], log[300];
	snprintf(pidf, sizeof(pidf), "%s/%s.pid", dir, tag);
	snprintf(log, sizeof(log), "%s/%s.log", dir, tag);
	char *argv[] = {"rsyslogd", "-n", "-f", (char *)conf, "-i", pidf, NULL};
	*pid = spawn(argv, log);
	return *pid > 0;
}

static bool setup(struct env *e)
{
	snprintf(e->dir, sizeof(e->dir), "/tmp/shmlog-bench-fwd-XXXXXX");
	if (!mkdtemp(e->dir))
		return false;
	e->tcp_port = free_port();
	e->relp_port = free_port();
	snprintf(e->out, sizeof(e->out), "%s/central.out", e->dir);
	snprintf(e->tcp_sock, sizeof(e->tcp_sock), "%s/central.sock", e->dir);
	snprintf(e->relay_sock, sizeof(e->relay_sock), "%s/devlog", e->dir);
	snprintf(e->central_conf, sizeof(e->central_conf), "%s/central.conf",
		 e->dir);
	snprintf(e->relay_conf, sizeof(e->relay_conf), "%s/relay.conf", e->dir);
	snprintf(e->relay2_sock, sizeof(e->relay2_sock), "%s/devlog2", e->dir);
	snprintf(e->relay2_conf, sizeof(e->relay2_conf), "%s/relay2.conf",
		 e->dir);
	char conf[4096];
	snprintf(conf, sizeof(conf),
		 "global(workDirectory=\"%s\" maxMessageSize=\"64k\")\n"
		 "module(load=\"imptcp\")\nmodule(load=\"imrelp\")\n"
		 "input(type=\"imptcp\" port=\"%d\" address=\"127.0.0.1\")\n"
		 "input(type=\"imptcp\" path=\"%s\" unlink=\"on\")\n"
		 "input(type=\"imrelp\" port=\"%d\" address=\"127.0.0.1\")\n"
		 "template(name=\"m\" type=\"string\" string=\"%%msg%%\\n\")\n"
		 "action(type=\"omfile\" file=\"%s\" template=\"m\")\n",
		 e->dir, e->tcp_port, e->tcp_sock, e->relp_port, e->out);
	if (!write_file(e->central_conf, conf))
		return false;
	snprintf(conf, sizeof(conf),
		 "global(workDirectory=\"%s\" maxMessageSize=\"64k\")\n"
		 "module(load=\"imuxsock\" SysSock.Use=\"off\")\n"
		 "input(type=\"imuxsock\" Socket=\"%s\" RateLimit.Interval=\"0\")\n"
		 "action(type=\"omfwd\" target=\"127.0.0.1\" port=\"%d\" "
		 "protocol=\"tcp\" TCP_Framing=\"octet-counted\")\n",
		 e->dir, e->relay_sock, e->tcp_port);
	if (!write_file(e->relay_conf, conf))
		return false;
	snprintf(conf, sizeof(conf),
		 "global(workDirectory=\"%s\" maxMessageSize=\"64k\")\n"
		 "module(load=\"imuxsock\" SysSock.Use=\"off\")\n"
		 "module(load=\"omrelp\")\n"
		 "input(type=\"imuxsock\" Socket=\"%s\" RateLimit.Interval=\"0\")\n"
		 "action(type=\"omrelp\" target=\"127.0.0.1\" port=\"%d\" "
		 "windowSize=\"1024\")\n",
		 e->dir, e->relay2_sock, e->relp_port);
	if (!write_file(e->relay2_conf, conf))
		return false;
	if (!start_rsyslogd(e->central_conf, e->dir, "central", &e->central) ||
	    !start_rsyslogd(e->relay_conf, e->dir, "relay", &e->relay) ||
	    !start_rsyslogd(e->relay2_conf, e->dir, "relay2", &e->relay2))
		return false;
	for (int i = 0; i < 400; i++) { /* 20 s */
		struct stat st;
		if (can_connect(e->tcp_port) && can_connect(e->relp_port) &&
		    !stat(e->relay_sock, &st) && !stat(e->tcp_sock, &st) &&
		    !stat(e->relay2_sock, &st))
			return true;
		if (waitpid(e->central, NULL, WNOHANG) == e->central ||
		    waitpid(e->relay, NULL, WNOHANG) == e->relay ||
		    waitpid(e->relay2, NULL, WNOHANG) == e->relay2)
			break;
		usleep(50000);
	}
	fprintf(stderr,
		"shmlog-bench forward: rsyslogd did not start (see %s/*.log); "
		"RELP needs the rsyslog-relp package\n",
		e->dir);
	return false;
}

static void teardown(struct env *e)
{
	otlp_rx_stop(&e->otlp);
	stop_child(e->central);
	stop_child(e->relay);
	stop_child(e->relay2);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", e->dir);
}

/* New lines in the central rsyslogd's file since the last call. */
static long count_new_lines(struct env *e)
{
	int fd = open(e->out, O_RDONLY);
	if (fd < 0)
		return e->lines_seen;
	char buf[65536];
	ssize_t n;
	while ((n = pread(fd, buf, sizeof(buf), e->out_pos)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			e->lines_seen += buf[i] == '\n';
		e->out_pos += n;
	}
	close(fd);
	return e->lines_seen;
}

static bool is_otlp(const char *url)
{
	return url && !strncmp(url, "otlp", 4);
}

/* Records the receiver of @url has taken: lines in the central
 * rsyslogd's file, or LogRecords counted by the OTLP receiver. */
static long received(struct env *e, const char *url)
{
	if (is_otlp(url))
		return (long)__atomic_load_n(&e->otlp.c->records,
					     __ATOMIC_ACQUIRE);
	return count_new_lines(e);
}

static bool wait_received(struct env *e, const char *url, long target,
			  double limit_s)
{
	double end = now_s() + limit_s;
	while (now_s() < end) {
		if (received(e, url) >= target)
			return true;
		usleep(2000);
	}
	return false;
}

/* ---- writers ---- */

static const char payload[] =
	"GET /api/v1/items?id=%ld 200 1532 bytes in 2.3 ms from 10.0.0.7";

static void write_shmlog(const char *buf, long n)
{
	shmlog_t *h;
	if (shmlog_open(buf, 0, &h))
		_exit(1);
	char msg[160];
	for (long i = 0; i < n; i++) {
		int len = snprintf(msg, sizeof(msg), payload, i);
		shmlog_write_n(h, SHMLOG_INFO, "bench", msg, (size_t)len);
	}
	shmlog_close(h);
}

/* syslog(3) itself, in a mount namespace whose /dev/log is @sock. */
static bool private_dev_log(const char *sock)
{
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/dev", "tmpfs", 0, "size=64k"))
		return false;
	int fd = open("/dev/log", O_CREAT | O_WRONLY, 0666);
	if (fd < 0)
		return false;
	close(fd);
	return mount(sock, "/dev/log", NULL, MS_BIND, NULL) == 0;
}

/* What glibc's syslog(3) sends, where it cannot be pointed at our socket. */
static void write_syslog_datagrams(const char *sock, long n)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path, sock, strnlen(sock, sizeof(a.sun_path) - 1));
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		_exit(1);
	char msg[300], body[160];
	for (long i = 0; i < n; i++) {
		time_t t = time(NULL);
		struct tm tm;
		localtime_r(&t, &tm);
		char ts[32];
		strftime(ts, sizeof(ts), "%h %e %T", &tm);
		snprintf(body, sizeof(body), payload, i);
		int len = snprintf(msg, sizeof(msg), "<14>%s bench[%d]: %s", ts,
				   (int)getpid(), body);
		while (send(fd, msg, (size_t)len, MSG_NOSIGNAL) < 0 &&
		       errno == EINTR)
			;
	}
	close(fd);
}

static void write_syslog(const char *sock, long n, bool *real)
{
	*real = private_dev_log(sock);
	if (!*real) {
		write_syslog_datagrams(sock, n);
		return;
	}
	openlog("bench", LOG_PID | LOG_NDELAY, LOG_USER);
	char body[160];
	for (long i = 0; i < n; i++) {
		snprintf(body, sizeof(body), payload, i);
		syslog(LOG_INFO, "%s", body);
	}
	closelog();
}

/* ---- one delivery run ---- */

struct result {
	const char *path;
	double rate; /* records/s, end to end */
	double cpu_ns; /* CPU per record, every process on the path */
	double writer_ns, middle_ns, central_ns; /* its parts */
	double wire_bytes; /* per record, OTLP request bodies; else NaN */
	bool ok;
};

static pid_t start_forwarder(const struct opts *o, const char *buf,
			     const char *url)
{
	char *argv[] = {(char *)o->cli, "forward", "-b", (char *)buf, "--to",
			(char *)url, "--batch", "1024", NULL};
	return spawn(argv, NULL);
}

static bool make_buffer(const char *name, long records)
{
	struct shmlog_create_opts co;
	shmlog_create_opts_init(&co);
	co.size = (uint64_t)records * 160 * 2 + (8u << 20);
	co.lanes = 2;
	shmlog_remove(name);
	return shmlog_create(name, &co) == 0;
}

/* One path: shmlog forward to @url, or (@url NULL) syslog(3) into the
 * local rsyslogd @relay (which forwards over TCP or RELP). */
static struct result run_path(struct env *e, const struct opts *o,
			      const char *path, const char *url, pid_t relay,
			      const char *relay_sock, bool *syslog_real)
{
	struct result r = {path, 0, 0, 0, 0, 0, NAN, false};
	char buf[64];
	snprintf(buf, sizeof(buf), "bench-fwd-%d", (int)getpid());
	bool via_syslog = url == NULL;
	pid_t fwd = 0;
	if (!via_syslog) {
		if (!make_buffer(buf, o->records))
			return r;
		fwd = start_forwarder(o, buf, url);
	}
	bool otlp = is_otlp(url);
	pid_t central_pid = otlp ? e->otlp.pid : e->central;
	long base = received(e, url);
	int64_t wire0 = otlp ? e->otlp.c->bytes_in : 0;
	double c0 = proc_cpu(central_pid),
	       m0 = via_syslog ? proc_cpu(relay) : 0;
	double t0 = now_s();
	int pipefd[2];
	if (pipe(pipefd))
		return r;
	pid_t w = fork();
	if (w == 0) {
		bool real = false;
		if (via_syslog)
			write_syslog(relay_sock, o->records, &real);
		else
			write_shmlog(buf, o->records);
		if (write(pipefd[1], &real, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	r.ok = wait_received(e, url, base + o->records, 300);
	double t1 = now_s();
	double fwd_cpu = fwd > 0 ? proc_cpu(fwd) : proc_cpu(relay) - m0;
	double central = proc_cpu(central_pid) - c0;
	struct rusage ru;
	int st;
	wait4(w, &st, 0, &ru);
	bool real = false;
	if (read(pipefd[0], &real, 1) == 1 && via_syslog)
		*syslog_real = real;
	close(pipefd[0]);
	double writer = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	stop_child(fwd);
	if (!via_syslog)
		shmlog_remove(buf);
	double n = (double)o->records;
	r.rate = n / (t1 - t0);
	r.writer_ns = writer * 1e9 / n;
	r.middle_ns = fwd_cpu * 1e9 / n;
	r.central_ns = central * 1e9 / n;
	r.cpu_ns = r.writer_ns + r.middle_ns + r.central_ns;
	if (otlp)
		r.wire_bytes = (double)(e->otlp.c->bytes_in - wire0) / n;
	/* the central's file may hold a few lines more (a loss message, a
	 * duplicate after a reconnect): start the next run after them */
	count_new_lines(e);
	return r;
}

/* ---- writers' rate, with and without a forwarder ---- */

/* Pin every thread of @pid to @cpu (-1: let them run anywhere). */
static void pin_process(pid_t pid, int cpu)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	cpu_set_t set;
	CPU_ZERO(&set);
	if (cpu < 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			CPU_SET(i, &set);
	else
		CPU_SET(cpu, &set);
	FILE *ls = NULL;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "ls %s 2>/dev/null", path);
	ls = popen(cmd, "r");
	if (!ls)
		return;
	int tid;
	while (fscanf(ls, "%d", &tid) == 1)
		sched_setaffinity(tid, sizeof(set), &set);
	pclose(ls);
}

/* A writer flat out for @seconds: its records per second of wall-clock
 * time in rate[0], and per second of its own CPU time in rate[1] (what a
 * reader costs it through memory, whatever else shares the CPUs). */
static void writer_rate(const char *buf, double seconds, int cpu,
			double rate[2])
{
	int pfd[2];
	rate[0] = rate[1] = 0;
	if (pipe(pfd))
		return;
	pid_t w = fork();
	if (w == 0) {
		shmlog_t *h;
		bench_pin_cpu(cpu);
		if (shmlog_open(buf, 0, &h))
			_exit(1);
		char msg[160];
		long n = 0;
		struct bench_usage u0, u1;
		bench_usage_now(&u0, RUSAGE_SELF);
		double end = now_s() + seconds, t0 = now_s();
		while (1) {
			for (int k = 0; k < 256; k++, n++) {
				int len = snprintf(msg, sizeof(msg), payload, n);
				shmlog_write_n(h, SHMLOG_INFO, "bench", msg,
					       (size_t)len);
			}
			if (now_s() >= end)
				break;
		}
		bench_usage_now(&u1, RUSAGE_SELF);
		double out[2] = {(double)n / (now_s() - t0),
				 (double)n / (u1.user_s + u1.sys_s - u0.user_s -
					      u0.sys_s)};
		if (write(pfd[1], out, sizeof(out)) != sizeof(out))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], rate, 2 * sizeof(double)) != 2 * sizeof(double))
		rate[0] = rate[1] = 0;
	close(pfd[0]);
	waitpid(w, NULL, 0);
}

/* A writer at a steady @rate records/s for @seconds, as a busy service
 * logs: its CPU time per record, in ns (sleeps between bursts of 100
 * records are not counted: they are the pacing). */
static double writer_paced(const char *buf, double rate, double seconds)
{
	int pfd[2];
	if (pipe(pfd))
		return 0;
	pid_t w = fork();
	if (w == 0) {
		shmlog_t *h;
		if (shmlog_open(buf, 0, &h))
			_exit(1);
		char msg[160];
		long n = 0, total = (long)(rate * seconds);
		double t0 = now_s();
		struct bench_usage u0, u1;
		bench_usage_now(&u0, RUSAGE_SELF);
		while (n < total) {
			for (int k = 0; k < 100; k++, n++) {
				int len = snprintf(msg, sizeof(msg), payload, n);
				shmlog_write_n(h, SHMLOG_INFO, "bench", msg,
					       (size_t)len);
			}
			double ahead = (double)n / rate - (now_s() - t0);
			if (ahead > 0)
				usleep((useconds_t)(ahead * 1e6));
		}
		bench_usage_now(&u1, RUSAGE_SELF);
		double ns = (u1.user_s + u1.sys_s - u0.user_s - u0.sys_s) *
			    1e9 / (double)n;
		if (write(pfd[1], &ns, sizeof(ns)) != sizeof(ns))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	double ns = 0;
	if (read(pfd[0], &ns, sizeof(ns)) != sizeof(ns))
		ns = 0;
	close(pfd[0]);
	waitpid(w, NULL, 0);
	return ns;
}

static void paced_cost(struct env *e, const struct opts *o, double rate,
		       double *alone, double *with)
{
	char buf[64], url[64];
	snprintf(buf, sizeof(buf), "bench-fwdp-%d", (int)getpid());
	snprintf(url, sizeof(url), "syslog+tcp://127.0.0.1:%d", e->tcp_port);
	double a[9], w[9];
	int reps = o->reps > 9 ? 9 : o->reps;
	for (int i = 0; i < reps; i++) {
		make_buffer(buf, 100000);
		a[i] = writer_paced(buf, rate, o->writer_s * 2);
		make_buffer(buf, 100000);
		pid_t fwd = start_forwarder(o, buf, url);
		usleep(100000);
		w[i] = writer_paced(buf, rate, o->writer_s * 2);
		stop_child(fwd);
		count_new_lines(e);
	}
	shmlog_remove(buf);
	*alone = bench_median(a, reps);
	*with = bench_median(w, reps);
}

/* The writer's rate alone and with a forwarder shipping its buffer to
 * @url. @pinned: the writer on CPU 0, the forwarder and the central
 * rsyslogd on CPU 1, so what is left is what the forwarder costs the
 * writer through memory (the lines it reads); unpinned, they also share
 * CPU time. */
static void writers_cost(struct env *e, const struct opts *o, bool pinned,
			 const char *url, double alone[2], double with[2])
{
	char buf[64];
	snprintf(buf, sizeof(buf), "bench-fwdw-%d", (int)getpid());
	double a[2][9], w[2][9], r[2];
	int reps = o->reps > 9 ? 9 : o->reps;
	for (int i = 0; i < reps; i++) {
		make_buffer(buf, 100000);
		writer_rate(buf, o->writer_s, pinned ? 0 : -1, r);
		a[0][i] = r[0];
		a[1][i] = r[1];
		make_buffer(buf, 100000);
		pid_t fwd = start_forwarder(o, buf, url);
		usleep(100000); /* let it attach: its start is not measured */
		if (pinned) {
			pin_process(fwd, 1);
			pin_process(e->central, 1);
		}
		writer_rate(buf, o->writer_s, pinned ? 0 : -1, r);
		w[0][i] = r[0];
		w[1][i] = r[1];
		stop_child(fwd);
		pin_process(e->central, -1);
		count_new_lines(e);
	}
	shmlog_remove(buf);
	for (int k = 0; k < 2; k++) {
		alone[k] = bench_median(a[k], reps);
		with[k] = bench_median(w[k], reps);
	}
}

/* The control: the writer alone, then beside a process that only spins
 * (no memory traffic, no reading of the ring). What the writer loses to
 * it is what any busy neighbour costs on this machine (shared caches,
 * CPU time, a hypervisor's scheduling), not the forwarder. */
static void spinner_cost(const struct opts *o, double alone[2],
			 double with[2])
{
	char buf[64];
	snprintf(buf, sizeof(buf), "bench-fwds-%d", (int)getpid());
	double a[2][9], w[2][9], r[2];
	int reps = o->reps > 9 ? 9 : o->reps;
	for (int i = 0; i < reps; i++) {
		make_buffer(buf, 100000);
		writer_rate(buf, o->writer_s, -1, r);
		a[0][i] = r[0];
		a[1][i] = r[1];
		make_buffer(buf, 100000);
		pid_t spin = fork();
		if (spin == 0)
			for (volatile unsigned long k = 0;; k++)
				;
		writer_rate(buf, o->writer_s, -1, r);
		w[0][i] = r[0];
		w[1][i] = r[1];
		kill(spin, SIGKILL);
		waitpid(spin, NULL, 0);
	}
	shmlog_remove(buf);
	for (int k = 0; k < 2; k++) {
		alone[k] = bench_median(a[k], reps);
		with[k] = bench_median(w[k], reps);
	}
}

#define NPATHS 8

/* ---- the JSON document ---- */

/* The 1-minute load average, NaN if unknown: on a shared machine it says
 * how far the wall-clock figures can be trusted. */
static double load_average(void)
{
	double l[1];
	return getloadavg(l, 1) == 1 ? l[0] : NAN;
}

struct run_figures {
	const struct result *res; /* NPATHS delivery paths */
	const double *alone, *with, *alone_p, *with_p, *spin_a, *spin_w;
	const double *alone_otlp, *with_otlp;
	double paced_a, paced_w;
	bool syslog_real;
	double load_start, load_end;
};

static void json_pair(struct jsonw *j, const char *key, const double v[2])
{
	jsonw_key(j, key);
	jsonw_begin_obj(j);
	jsonw_num(j, "records_per_s", v[0]);
	jsonw_num(j, "records_per_cpu_s", v[1]);
	jsonw_end_obj(j);
}

/* The writers' rates: alone and beside a forwarder (shared CPUs and
 * pinned), and the control beside a spinner. */
static void json_writers(struct jsonw *j, const struct run_figures *f)
{
	jsonw_key(j, "writers");
	jsonw_begin_obj(j);
	json_pair(j, "alone", f->alone);
	json_pair(j, "with_forwarder", f->with);
	json_pair(j, "alone_pinned", f->alone_p);
	json_pair(j, "with_forwarder_pinned", f->with_p);
	json_pair(j, "alone_otlp", f->alone_otlp);
	json_pair(j, "with_otlp_forwarder", f->with_otlp);
	json_pair(j, "alone_spinner_control", f->spin_a);
	json_pair(j, "beside_spinner", f->spin_w);
	jsonw_num(j, "paced_rate", 100000);
	jsonw_num(j, "paced_cpu_ns_alone", f->paced_a);
	jsonw_num(j, "paced_cpu_ns_with_forwarder", f->paced_w);
	jsonw_end_obj(j);
}

static int write_json(const struct opts *o, const struct bench_machine *m,
		      const struct run_figures *f)
{
	struct jsonw j;
	if (!bench_json_open(&j, o->json, "forward", m))
		return -1;
	jsonw_key(&j, "conditions");
	jsonw_begin_obj(&j);
	jsonw_int(&j, "quick", o->quick);
	jsonw_int(&j, "records", o->records);
	jsonw_num(&j, "writer_s", o->writer_s);
	jsonw_int(&j, "reps", o->reps);
	jsonw_num(&j, "loadavg_start", f->load_start);
	jsonw_num(&j, "loadavg_end", f->load_end);
	jsonw_str(&j, "syslog_path",
		  f->syslog_real ? "syslog(3)" : "syslog(3) datagrams");
	jsonw_end_obj(&j);
	jsonw_key(&j, "paths");
	jsonw_begin_arr(&j);
	for (int i = 0; i < NPATHS; i++) {
		const struct result *r = &f->res[i];
		jsonw_begin_obj(&j);
		jsonw_str(&j, "path", r->path);
		jsonw_num(&j, "records_per_s", r->rate);
		jsonw_num(&j, "cpu_ns_per_record", r->cpu_ns);
		jsonw_num(&j, "writer_ns", r->writer_ns);
		jsonw_num(&j, "middle_ns", r->middle_ns);
		jsonw_num(&j, "central_ns", r->central_ns);
		if (!isnan(r->wire_bytes))
			jsonw_num(&j, "wire_bytes_per_record", r->wire_bytes);
		jsonw_int(&j, "complete", r->ok);
		jsonw_end_obj(&j);
	}
	jsonw_end_arr(&j);
	json_writers(&j, f);
	return bench_json_close(&j);
}

/* ---- the command ---- */

static int usage(FILE *f)
{
	fprintf(f,
		"usage: shmlog-bench forward [--quick] [--json FILE] "
		"[--records N] [--shmlog PATH]\n"
		"Records/s and CPU per record from a writer to a central "
		"rsyslogd: shmlog forward over\nTCP, RELP and a Unix socket, "
		"against syslog(3) through a local rsyslogd that forwards\n"
		"over TCP or RELP; shmlog forward over OTLP/HTTP (protobuf, "
		"JSON, gzip) into a\ncounting receiver; and the writers' rate "
		"with and without a forwarder. Needs\nrsyslogd and "
		"rsyslog-relp.\n");
	return f == stdout ? 0 : 2;
}

static void print_result(const struct result *r, double base_rate,
			 double base_cpu)
{
	printf("%-34s %12.0f %8.2fx %10.0f %8.2fx %9.0f %9.0f %9.0f", r->path,
	       r->rate, base_rate > 0 ? r->rate / base_rate : 0, r->cpu_ns,
	       base_cpu > 0 ? r->cpu_ns / base_cpu : 0, r->writer_ns,
	       r->middle_ns, r->central_ns);
	if (!isnan(r->wire_bytes))
		printf(" %9.1f", r->wire_bytes);
	printf("%s\n", r->ok ? "" : "  (incomplete: timed out)");
}

int bench_forward_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"quick", no_argument, 0, 'q'},
		{"json", required_argument, 0, 'j'},
		{"records", required_argument, 0, 'n'},
		{"shmlog", required_argument, 0, 's'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	struct opts o = {200000, 1.0, 3, 0, NULL, SHMLOG_CLI_PATH};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'q':
			o.records = 30000;
			o.writer_s = 0.3;
			o.reps = 1;
			o.quick = 1;
			break;
		case 'j': o.json = optarg; break;
		case 'n': o.records = atol(optarg); break;
		case 's': o.cli = optarg; break;
		case 'h': return usage(stdout);
		default: return usage(stderr);
		}
	}
	if (o.records <= 0)
		return usage(stderr);
	if (access(o.cli, X_OK)) {
		fprintf(stderr,
			"shmlog-bench forward: %s is not an executable: build "
			"the CLI or give --shmlog PATH\n",
			o.cli);
		return 1;
	}
	struct env e = {0};
	if (!setup(&e)) {
		teardown(&e);
		fprintf(stderr, "shmlog-bench forward: skipped: needs rsyslogd "
				"(packages rsyslog, rsyslog-relp)\n");
		return 77;
	}
	if (!otlp_rx_start(&e.otlp)) {
		teardown(&e);
		fprintf(stderr, "shmlog-bench forward: cannot start the OTLP "
				"receiver: %s\n",
			strerror(errno));
		return 1;
	}
	struct bench_machine m;
	bench_machine_get(&m);
	bench_machine_print(stdout, &m, "# ");
	double load_start = load_average();
	printf("# %ld records of ~70 bytes per path, end to end into a "
	       "central rsyslogd writing a file\n",
	       o.records);
	char tcp[64], relp[64], uds[400];
	snprintf(tcp, sizeof(tcp), "syslog+tcp://127.0.0.1:%d", e.tcp_port);
	snprintf(relp, sizeof(relp), "relp://127.0.0.1:%d", e.relp_port);
	snprintf(uds, sizeof(uds), "syslog+unix://%s", e.tcp_sock);
	bool real = false;
	struct result res[NPATHS];
	res[0] = run_path(&e, &o, "syslog(3) -> rsyslogd -> TCP", NULL,
			  e.relay, e.relay_sock, &real);
	res[1] = run_path(&e, &o, "shmlog forward, TCP", tcp, 0, NULL, &real);
	res[2] = run_path(&e, &o, "shmlog forward, RELP", relp, 0, NULL, &real);
	res[3] = run_path(&e, &o, "shmlog forward, Unix socket", uds, 0, NULL,
			  &real);
	res[4] = run_path(&e, &o, "syslog(3) -> rsyslogd -> RELP", NULL,
			  e.relay2, e.relay2_sock, &real);
	char otlp_pb[64], otlp_json[64], otlp_gz[96];
	snprintf(otlp_pb, sizeof(otlp_pb), "otlp://127.0.0.1:%d", e.otlp.port);
	snprintf(otlp_json, sizeof(otlp_json), "otlp+json://127.0.0.1:%d",
		 e.otlp.port);
	snprintf(otlp_gz, sizeof(otlp_gz), "%s?compression=gzip", otlp_pb);
	res[5] = run_path(&e, &o, "shmlog forward, OTLP protobuf", otlp_pb, 0,
			  NULL, &real);
	res[6] = run_path(&e, &o, "shmlog forward, OTLP JSON", otlp_json, 0,
			  NULL, &real);
	if (otlp_rx_gzip())
		res[7] = run_path(&e, &o, "shmlog forward, OTLP protobuf gzip",
				  otlp_gz, 0, NULL, &real);
	else
		res[7] = (struct result){"shmlog forward, OTLP protobuf gzip",
					 .wire_bytes = NAN};
	printf("# syslog(3): %s\n",
	       real ? "glibc's syslog(3), its /dev/log bound to the local "
		      "rsyslogd's socket in a private mount namespace"
		    : "the datagrams glibc's syslog(3) sends (no mount "
		      "namespace allowed here), to the local rsyslogd");
	printf("# CPU per record counts the writer, the middle (forwarder or "
	       "local rsyslogd) and the central rsyslogd\n");
	printf("# OTLP: central is the benchmark's counting receiver, not "
	       "rsyslogd; wire: request bytes per record\n");
	printf("%-34s %12s %9s %10s %9s %9s %9s %9s %9s\n", "path",
	       "records/s", "vs syslog", "CPU ns/rec", "vs syslog", "writer",
	       "middle", "central", "wire");
	for (int i = 0; i < NPATHS; i++)
		print_result(&res[i], res[0].rate, res[0].cpu_ns);
	printf("# the last row is rsyslog's own reliable path, for comparison "
	       "with shmlog's RELP: omrelp\n# with windowSize=1024 (its "
	       "default of 128 leaves it waiting for acknowledgements)\n");
	if (!otlp_rx_gzip())
		printf("# OTLP gzip: not measured, this shmlog-bench was built "
		       "without zlib\n");
	double alone[2], with[2], alone_p[2], with_p[2], alone_o[2], with_o[2];
	writers_cost(&e, &o, false, tcp, alone, with);
	writers_cost(&e, &o, true, tcp, alone_p, with_p);
	writers_cost(&e, &o, false, otlp_pb, alone_o, with_o);
	printf("\nwriter flat out, alone -> while a forwarder ships its buffer "
	       "over TCP (median of %d):\n",
	       o.reps);
	printf("  records/s, sharing the CPUs:               %10.0f -> %10.0f "
	       "(%.0f %%)\n",
	       alone[0], with[0], alone[0] > 0 ? 100 * with[0] / alone[0] : 0);
	printf("  records/s, writer alone on CPU 0:          %10.0f -> %10.0f "
	       "(%.0f %%)\n",
	       alone_p[0], with_p[0],
	       alone_p[0] > 0 ? 100 * with_p[0] / alone_p[0] : 0);
	printf("  records per second of the writer's CPU:    %10.0f -> %10.0f "
	       "(%.0f %%)\n",
	       alone[1], with[1], alone[1] > 0 ? 100 * with[1] / alone[1] : 0);
	printf("while a forwarder ships it over OTLP/HTTP protobuf instead:\n"
	       "  records/s, sharing the CPUs:               %10.0f -> %10.0f "
	       "(%.0f %%)\n"
	       "  records per second of the writer's CPU:    %10.0f -> %10.0f "
	       "(%.0f %%)\n",
	       alone_o[0], with_o[0],
	       alone_o[0] > 0 ? 100 * with_o[0] / alone_o[0] : 0, alone_o[1],
	       with_o[1], alone_o[1] > 0 ? 100 * with_o[1] / alone_o[1] : 0);
	double spin_a[2], spin_w[2];
	spinner_cost(&o, spin_a, spin_w);
	printf("control, beside a process that only spins instead:\n"
	       "  records/s:                                 %10.0f -> %10.0f "
	       "(%.0f %%)\n"
	       "  records per second of the writer's CPU:    %10.0f -> %10.0f "
	       "(%.0f %%)\n",
	       spin_a[0], spin_w[0],
	       spin_a[0] > 0 ? 100 * spin_w[0] / spin_a[0] : 0, spin_a[1],
	       spin_w[1], spin_a[1] > 0 ? 100 * spin_w[1] / spin_a[1] : 0);
	double paced_a, paced_w;
	paced_cost(&e, &o, 100000, &paced_a, &paced_w);
	printf("writer at a steady 100,000 records/s: CPU per record %.0f ns "
	       "alone, %.0f ns while the forwarder ships them\n",
	       paced_a, paced_w);
	double load_end = load_average();
	printf("# load average %.2f at the start, %.2f at the end, on %ld "
	       "CPUs: where the writer, the\n# forwarder and rsyslogd share "
	       "too few CPUs, the writer's wall-clock rate falls with\n# its "
	       "share of CPU time; its rate per CPU second shows what the "
	       "forwarder costs it otherwise\n",
	       load_start, load_end, sysconf(_SC_NPROCESSORS_ONLN));
	struct run_figures f = {
		.res = res,
		.alone = alone,
		.with = with,
		.alone_p = alone_p,
		.with_p = with_p,
		.spin_a = spin_a,
		.spin_w = spin_w,
		.alone_otlp = alone_o,
		.with_otlp = with_o,
		.paced_a = paced_a,
		.paced_w = paced_w,
		.syslog_real = real,
		.load_start = load_start,
		.load_end = load_end,
	};
	if (o.json && write_json(&o, &m, &f))
		fprintf(stderr, "shmlog-bench forward: cannot write %s: %s\n",
			o.json, strerror(errno));
	teardown(&e);
	bool all = true;
	for (int i = 0; i < NPATHS; i++)
		all &= res[i].ok || (i == 7 && !otlp_rx_gzip());
	return all ? 0 : 1;
}
