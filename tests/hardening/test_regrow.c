/* SPDX-License-Identifier: MIT */
/*
 * A buffer shrunk and regrown in a loop by its owner, while every kind of
 * caller maps it: shmlog_stat(), `shmlog ls`, `shmlog info`, readers
 * (open, next, wait, lane stats), the filter calls, shmlog_clear(), and
 * writers opening, claiming a lane (their first write) and closing. Each
 * touch of a page past the file's current end raises SIGBUS; no caller may
 * die of it (they report -EIO, or the buffer's header is refused).
 *
 * Any user can do this to their own buffer, and root's `shmlog ls` maps
 * every buffer: it used to die of SIGBUS about one run in eight.
 *
 * usage: test_regrow [SHMLOG_CLI [SECONDS]]
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "hostile.h"

static const char *buf;
static uint64_t deadline;

static bool running(void)
{
	return now_ns() < deadline;
}

/* The owner: shrink to one of a few sizes, grow back, put the bytes back
 * (so that the buffer is whole again for a moment), again and again. */
static void truncator(const char *path, const unsigned char *image,
		      size_t size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		_exit(10);
	const off_t small[] = {0, 4096, 8192, 12288, 64 * 1024};
	for (unsigned k = 0; running(); k++) {
		if (ftruncate(fd, small[k % 5]) || ftruncate(fd, (off_t)size))
			_exit(11);
		if (pwrite(fd, image, size, 0) != (ssize_t)size)
			_exit(12);
	}
	_exit(0);
}

static void stat_loop(void)
{
	for (long n = 0; running(); n++) {
		struct shmlog_info in;
		shmlog_stat(buf, &in);
		char spec[4096];
		shmlog_get_filter(buf, spec, sizeof(spec));
		if (n % 16 == 0) {
			shmlog_set_filter(buf, "*:V", NULL);
			shmlog_clear(buf);
		}
	}
	_exit(0);
}

static void reader_loop(void)
{
	while (running()) {
		shmlog_reader_t *r;
		if (shmlog_reader_open(buf, 0, &r))
			continue;
		struct shmlog_record rec;
		struct shmlog_lost lost;
		for (int k = 0; k < 2000; k++)
			if (shmlog_reader_next(r, &rec, &lost) <= 0)
				break;
		shmlog_reader_wait(r, 0);
		for (unsigned i = 0; i < shmlog_reader_lanes(r); i++) {
			struct shmlog_lane_stats st;
			shmlog_reader_lane_stats(r, i, &st);
		}
		shmlog_reader_close(r);
	}
	_exit(0);
}

/* Open, claim a lane with a first write, close: the writer's slow paths.
 * (The steady-state write path is not guarded: a writer trusts the owner
 * of its buffer, docs/SECURITY.md.) */
static void writer_loop(unsigned w)
{
	for (uint64_t i = 0; running(); i++) {
		shmlog_t *h;
		if (shmlog_open(buf, 0, &h))
			continue;
		char tag[16], msg[512];
		int prio;
		size_t len = sc_make(w, i, tag, &prio, msg);
		shmlog_write_n(h, prio, tag, msg, len);
		shmlog_close(h);
	}
	_exit(0);
}

/* The CLI, as root runs it over everybody's buffers. */
static void cli_loop(const char *cli, const char *which)
{
	int dn = open("/dev/null", O_WRONLY);
	while (running()) {
		pid_t pid = fork();
		if (pid < 0)
			_exit(20);
		if (pid == 0) {
			dup2(dn, 1);
			dup2(dn, 2);
			if (!strcmp(which, "ls"))
				execl(cli, cli, "ls", (char *)NULL);
			else
				execl(cli, cli, "info", "-b", buf, (char *)NULL);
			_exit(127);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid)
			_exit(21);
		if (WIFSIGNALED(st)) {
			fprintf(stderr, "shmlog %s died of signal %d\n", which,
				WTERMSIG(st));
			_exit(22);
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
			_exit(23);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *cli = argc > 1 && argv[1][0] ? argv[1] : NULL;
	double seconds = argc > 2 ? atof(argv[2]) : 3;
	buf = test_buffer("regrow");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 256 * 1024;
	o.lanes = 4;
	REQUIRE(shmlog_create(buf, &o) == 0);
	/* something to read */
	shmlog_t *h;
	REQUIRE(shmlog_open(buf, 0, &h) == 0);
	REQUIRE(sc_write(h, 0, 0, 500) == 0);
	shmlog_close(h);

	char path[512];
	REQUIRE(shmlog_path(buf, path, sizeof(path)) > 0);
	struct stat st;
	REQUIRE(stat(path, &st) == 0);
	size_t size = (size_t)st.st_size;
	unsigned char *image = malloc(size);
	int fd = open(path, O_RDONLY);
	REQUIRE(image && fd >= 0 && pread(fd, image, size, 0) == (ssize_t)size);
	close(fd);

	deadline = now_ns() + (uint64_t)(seconds * 1e9);
	struct {
		const char *what;
		pid_t pid;
	} kids[8];
	unsigned n = 0;
	pid_t p;
#define SPAWN(name, call)                                                      \
	do {                                                                   \
		p = fork();                                                    \
		REQUIRE(p >= 0);                                               \
		if (p == 0) {                                                  \
			call;                                                  \
		}                                                              \
		kids[n].what = name;                                           \
		kids[n++].pid = p;                                             \
	} while (0)
	SPAWN("truncator", truncator(path, image, size));
	SPAWN("shmlog_stat and the filter calls", stat_loop());
	SPAWN("reader", reader_loop());
	SPAWN("writer 1", writer_loop(1));
	SPAWN("writer 2", writer_loop(2));
	if (cli) {
		SPAWN("shmlog ls", cli_loop(cli, "ls"));
		SPAWN("shmlog info", cli_loop(cli, "info"));
	} else {
		printf("no CLI given: `shmlog ls` and `shmlog info` not run\n");
	}
	for (unsigned k = 0; k < n; k++) {
		int rc = hw_reap(kids[k].pid);
		if (rc)
			fprintf(stderr, "%s: %s %d\n", kids[k].what,
				rc >= 128 ? "killed by signal" : "exit status",
				rc >= 128 ? rc - 128 : rc);
		CHECK_EQ(rc, 0);
	}
	printf("%.1f s of shrinking and regrowing under %u callers: %s\n",
	       seconds, n - 1, test_failures ? "FAILED" : "none crashed");
	free(image);
	shmlog_remove(buf);
	return test_done("test_regrow");
}
