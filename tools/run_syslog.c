/* SPDX-License-Identifier: MIT */
/*
 * `shmlog run --syslog`: the program's own /dev/log; see run_syslog.h.
 *
 * How the program gets it, in the child between fork and exec:
 *  1. unshare(CLONE_NEWNS); refused (EPERM: not privileged), unshare
 *     (CLONE_NEWUSER | CLONE_NEWNS) with our uid and gid mapped to
 *     themselves, so the program's identity does not change.
 *  2. Every mount made private: nothing we mount propagates out.
 *  3. /dev/log a socket (or a symbolic link to one, as systemd makes it):
 *     our socket is bind-mounted over it.
 *     No /dev/log (a container, a system without a syslog daemon), or a
 *     dangling link: /dev is rebuilt on a small tmpfs in a directory of
 *     ours, each entry bind-mounted from the real /dev (directories with
 *     what is mounted under them: /dev/shm, /dev/pts) and each symbolic
 *     link copied, plus "log", a link to our socket; the tmpfs is then
 *     moved over /dev. Devices that appear later are not seen by the
 *     program.
 * The program sees the rest of the system as before.
 */
#include "run_syslog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "write.h"

/* @dir/@name into @buf; -ENAMETOOLONG if it does not fit. */
static int join(char *buf, size_t cap, const char *dir, const char *name)
{
	size_t ld = strlen(dir), ln = strlen(name);
	if (ld + 1 + ln + 1 > cap)
		return -ENAMETOOLONG;
	memcpy(buf, dir, ld);
	buf[ld] = '/';
	memcpy(buf + ld + 1, name, ln + 1);
	return 0;
}

int run_syslog_open(struct run_syslog *rs)
{
	rs->fd = -1;
	rs->dir[0] = rs->path[0] = '\0';
	const char *base = getenv("XDG_RUNTIME_DIR");
	if (!base || base[0] != '/' || access(base, W_OK | X_OK))
		base = getenv("TMPDIR");
	if (!base || base[0] != '/' || access(base, W_OK | X_OK))
		base = "/tmp";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(rs->dir, sizeof(rs->dir), "%s/shmlog-run.XXXXXX",
			 base);
	if (n < 0 || (size_t)n + sizeof("/log") > sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (!mkdtemp(rs->dir))
		return -errno;
	join(rs->path, sizeof(rs->path), rs->dir, "log"); /* fits: above */
	memcpy(sa.sun_path, rs->path, strlen(rs->path) + 1);
	int err = 0, on = 1;
	rs->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (rs->fd < 0 ||
	    setsockopt(rs->fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) ||
	    bind(rs->fd, (struct sockaddr *)&sa, sizeof(sa)))
		err = -errno;
	/* root's program may drop to another user (a daemon) and still log;
	 * anyone else's keeps our uid: only we may reach the socket */
	if (!err && geteuid() == 0 &&
	    (chmod(rs->dir, 0711) || chmod(rs->path, 0666)))
		err = -errno;
	if (err) {
		run_syslog_close(rs, true);
		return err;
	}
	return 0;
}

void run_syslog_close(struct run_syslog *rs, bool remove)
{
	if (rs->fd >= 0)
		close(rs->fd);
	rs->fd = -1;
	if (remove && rs->dir[0]) {
		char stage[PATH_MAX];
		unlink(rs->path);
		if (!join(stage, sizeof(stage), rs->dir, "dev"))
			rmdir(stage);
		rmdir(rs->dir);
	}
	rs->dir[0] = rs->path[0] = '\0';
}

/* ---- the child's /dev/log ---- */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t len = (ssize_t)strlen(text);
	int err = write(fd, text, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return err;
}

/* A user namespace in which we keep our uid and gid, with a mount
 * namespace of its own. */
static int unshare_as_user(const char **what)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	int err;
	*what = "unshare(CLONE_NEWUSER | CLONE_NEWNS)";
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -errno;
	*what = "/proc/self/setgroups";
	/* ENOENT: a kernel older than 3.19, which does not ask for it */
	if ((err = write_file("/proc/self/setgroups", "deny")) &&
	    err != -ENOENT)
		return err;
	*what = "/proc/self/uid_map";
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if ((err = write_file("/proc/self/uid_map", map)))
		return err;
	*what = "/proc/self/gid_map";
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", map);
}

/* /dev/NAME as it is, into @stage/NAME. */
static int mirror_entry(const char *stage, const char *name)
{
	char from[PATH_MAX], to[PATH_MAX];
	if (join(from, sizeof(from), "/dev", name) ||
	    join(to, sizeof(to), stage, name))
		return -ENAMETOOLONG;
	struct stat st;
	if (lstat(from, &st))
		return errno == ENOENT ? 0 : -errno; /* gone meanwhile */
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(from, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlink(target, to) ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(to, st.st_mode & 07777))
			return -errno;
		return mount(from, to, NULL, MS_BIND | MS_REC, NULL) ? -errno : 0;
	}
	int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return mount(from, to, NULL, MS_BIND, NULL) ? -errno : 0;
}

/* No usable /dev/log: a /dev that is the real one plus ours (see the top
 * of the file). */
static int mirror_dev(const struct run_syslog *rs, const char **what)
{
	char stage[PATH_MAX], log[PATH_MAX];
	*what = "the new /dev's name";
	if (join(stage, sizeof(stage), rs->dir, "dev") ||
	    join(log, sizeof(log), stage, "log"))
		return -ENAMETOOLONG;
	*what = "mkdir of the new /dev";
	if (mkdir(stage, 0755) && errno != EEXIST)
		return -errno;
	*what = "tmpfs for the new /dev";
	if (mount("tmpfs", stage, "tmpfs", MS_NOSUID, "mode=0755,size=1m"))
		return -errno;
	*what = "listing /dev";
	DIR *dev = opendir("/dev");
	if (!dev)
		return -errno;
	struct dirent *e;
	int err = 0;
	/* bounded by /dev's listing */
	while (!err && (e = readdir(dev))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, "log"))
			continue;
		*what = "copying /dev into the new /dev";
		err = mirror_entry(stage, e->d_name);
	}
	closedir(dev);
	if (err)
		return err;
	*what = "the new /dev/log";
	if (symlink(rs->path, log))
		return -errno;
	*what = "moving the new /dev over /dev";
	return mount(stage, "/dev", NULL, MS_MOVE, NULL) ? -errno : 0;
}

int run_syslog_child(const struct run_syslog *rs, const char **what)
{
	*what = "unshare(CLONE_NEWNS)";
	if (unshare(CLONE_NEWNS)) {
		if (errno != EPERM)
			return -errno;
		int err = unshare_as_user(what);
		if (err)
			return err;
	}
	*what = "making the mounts private";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	struct stat st;
	if (stat("/dev/log", &st) == 0 && S_ISSOCK(st.st_mode)) {
		*what = "bind-mounting over /dev/log";
		return mount(rs->path, "/dev/log", NULL, MS_BIND, NULL) ? -errno
									: 0;
	}
	return mirror_dev(rs, what);
}

/* ---- datagrams into records ---- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* RFC 3164's "Mmm dd hh:mm:ss " at @p (@n bytes): its length, or 0. */
static size_t rfc3164_stamp(const char *p, size_t n)
{
	static const char shape[] = "Aaa 0d 00:00:00 ";
	size_t len = sizeof(shape) - 1;
	if (n < len)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char want = shape[i], c = p[i];
		bool ok = want == 'A'   ? c >= 'A' && c <= 'Z'
			  : want == 'a' ? c >= 'a' && c <= 'z'
			  : want == '0' ? is_digit(c)
			  : want == 'd' ? is_digit(c)
			  : c == want;
		if (i == 4 && c == ' ') /* "Dec  2": day padded with a space */
			ok = true;
		if (!ok)
			return 0;
	}
	return len;
}

/* "TAG: " or "TAG[PID]: " at @p (@n bytes): the tag's length in *@tag_len,
 * the length of the whole with its space in the return, or 0. */
static size_t tag_field(const char *p, size_t n, size_t *tag_len)
{
	size_t i = 0;
	while (i < n && p[i] != ' ' && p[i] != ':' && p[i] != '[')
		i++;
	if (i == 0 || i >= n)
		return 0;
	*tag_len = i;
	if (p[i] == '[') {
		while (i < n && p[i] != ']' && p[i] != ' ')
			i++;
		if (i >= n || p[i] != ']')
			return 0;
		i++;
	}
	if (i >= n || p[i] != ':')
		return 0;
	i++;
	if (i < n && p[i] == ' ')
		i++;
	return i;
}

/* The next space-separated field of RFC 5424's header at *@p. */
static const char *next_field(const char **p, const char *end, size_t *len)
{
	const char *f = *p;
	while (*p < end && **p != ' ')
		(*p)++;
	*len = (size_t)(*p - f);
	if (*p < end)
		(*p)++;
	return f;
}

/* RFC 5424's STRUCTURED-DATA at @p: "-" or "[...]" elements, in which
 * '\]' is no end. Returns where the message starts. */
static const char *skip_sd(const char *p, const char *end)
{
	if (p < end && *p == '-')
		return p + 1 < end ? p + 2 : end;
	while (p < end && *p == '[') {
		bool quoted = false;
		for (p++; p < end; p++) {
			if (*p == '\\' && p + 1 < end)
				p++;
			else if (*p == '"')
				quoted = !quoted;
			else if (*p == ']' && !quoted)
				break;
		}
		if (p < end)
			p++;
	}
	return p < end && *p == ' ' ? p + 1 : p;
}

/* "1 2026-12-02T..." or "1 - ": RFC 5424's VERSION and TIMESTAMP, not
 * a message that starts with a number ("<14>5 files left"). */
static bool is_5424(const char *p, const char *end)
{
	size_t n = (size_t)(end - p);
	if (n < 4 || p[0] < '1' || p[0] > '9')
		return false;
	size_t v = p[1] == ' ' ? 1 : is_digit(p[1]) && p[2] == ' ' ? 2 : 0;
	if (!v || n < v + 3)
		return false;
	const char *t = p + v + 1;
	if (t[0] == '-' && t[1] == ' ')
		return true;
	return n >= v + 1 + 11 && is_digit(t[0]) && is_digit(t[1]) &&
	       is_digit(t[2]) && is_digit(t[3]) && t[4] == '-' &&
	       is_digit(t[5]) && is_digit(t[6]) && t[7] == '-' && t[10] == 'T';
}

static void parse_5424(const char *p, const char *end, struct syslog_dgram *d)
{
	size_t n;
	next_field(&p, end, &n); /* VERSION */
	next_field(&p, end, &n); /* TIMESTAMP */
	next_field(&p, end, &n); /* HOSTNAME */
	const char *app = next_field(&p, end, &n);
	if (n && !(n == 1 && app[0] == '-')) {
		d->tag = app;
		d->tag_len = n;
	}
	next_field(&p, end, &n); /* PROCID: the kernel's pid is taken */
	next_field(&p, end, &n); /* MSGID */
	p = skip_sd(p, end);
	if (end - p >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
		p += 3; /* the BOM of a UTF-8 MSG */
	d->msg = p;
	d->len = (size_t)(end - p);
}

static void parse_3164(const char *p, const char *end, struct syslog_dgram *d)
{
	size_t n = (size_t)(end - p), stamp = rfc3164_stamp(p, n), t, tl;
	p += stamp;
	n -= stamp;
	if ((t = tag_field(p, n, &tl))) {
		d->tag = p;
		d->tag_len = tl;
		p += t;
	} else if (stamp) { /* "HOST TAG: ", as logger --rfc3164 sends */
		const char *sp = memchr(p, ' ', n);
		size_t rest = sp ? (size_t)(end - sp - 1) : 0;
		if (sp && sp > p && (t = tag_field(sp + 1, rest, &tl))) {
			d->tag = sp + 1;
			d->tag_len = tl;
			p = sp + 1 + t;
		}
	}
	d->msg = p;
	d->len = (size_t)(end - p);
}

void run_syslog_parse(const char *buf, size_t len, struct syslog_dgram *d)
{
	const char *p = buf, *end = buf + len;
	while (end > p && (end[-1] == '\0' || end[-1] == '\n'))
		end--;
	*d = (struct syslog_dgram){.level = 5}; /* user.notice */
	if (p < end && *p == '<') {
		const char *q = p + 1;
		int pri = 0;
		while (q < end && is_digit(*q) && q - p <= 3)
			pri = pri * 10 + (*q++ - '0');
		if (q < end && *q == '>' && q > p + 1 && pri <= 191) {
			d->level = pri & 7;
			p = q + 1;
		}
	}
	if (is_5424(p, end))
		parse_5424(p, end, d);
	else
		parse_3164(p, end, d);
}

/* The sender's pid from SCM_CREDENTIALS, or 0. */
static pid_t sender_pid(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred uc;
			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			return uc.pid;
		}
	}
	return 0;
}

int run_syslog_pump(shmlog_t **h, struct run_syslog *rs, const char *tag,
		    const char *force_tag)
{
	/* larger than any datagram logger(1) or Python sends; the rest of a
	 * longer one is cut (MSG_TRUNC) */
	static char buf[65536];
	union {
		char space[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} ctl;
	int count = 0;
	/* bounded: a program that never stops sending does not hold us */
	for (int max = 256; max > 0 && rs->fd >= 0; max--) {
		struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl.space,
				    .msg_controllen = sizeof(ctl.space)};
		ssize_t n = recvmsg(rs->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0)
			break; /* EAGAIN: all read; EINTR: the next poll */
		count++;
		struct syslog_dgram d;
		run_syslog_parse(buf, (size_t)n, &d);
		char t[SHMLOG_TAG_MAX + 1];
		if (force_tag)
			snprintf(t, sizeof(t), "%s", force_tag);
		else if (d.tag)
			snprintf(t, sizeof(t), "%.*s", (int)d.tag_len, d.tag);
		else
			snprintf(t, sizeof(t), "%s", tag);
		cli_write_line(h, 0, sender_pid(&mh),
			       cli_syslog_level_prio(d.level), t, d.msg, d.len);
	}
	return count;
}
