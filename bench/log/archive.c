/* SPDX-License-Identifier: MIT */
/*
 * shmlog's archiver (`shmlog archive`, the CLI beside this program) behind
 * one writer, its files in the scratch directory:
 *  - full speed: the writer logs N records as fast as it can into a
 *    64 MiB buffer the archiver follows; the rate at which the archive
 *    then holds them (records kept / the time from the first write to the
 *    archive's last write), and the records lost: a writer faster than
 *    the archiver's drain loses what the ring overwrites before it is
 *    read (writers never wait). The same writer alone, into a buffer
 *    nobody reads, in the same run (alone and followed in turn), is the
 *    baseline of every ratio. The archiver's CPU per record kept: user +
 *    system of all its threads from the first write until the archive
 *    holds the last record; what it spent before, starting (exec, the
 *    buffer's mapping, its first stages), is reported apart;
 *  - keep-all: the fastest writer whose every record the archive keeps,
 *    as a writer that must keep everything would be run. Sweeps of runs
 *    paced at 20 %, 25 %, 30 % ... of the writer's rate alone, ARC_SWEEP_N
 *    records each into a 128 MiB buffer (what it holds, about 6 % of a
 *    run, rides out a stall of the archiver of some 60 ms; a drain
 *    slower than the pace by more than that loses records), each sweep
 *    ending at the first pace that lost records in two runs (one stall
 *    of the machine longer than the buffer covers loses records at any
 *    pace; a pace the archiver cannot hold loses them every time): the
 *    median of the sweeps' fastest paces kept whole, and the archiver's
 *    CPU per record there;
 *  - full speed once more with the records written by two processes at
 *    once, half each (several busy lanes: their records are coded one by
 *    one against each other, as with `--compact`);
 *  - full speed once more with `--compact` (every record coded against
 *    the one before), with `--as-stored` (records kept as the buffer
 *    stores them even while the disk lags: what the default's choice
 *    buys), and with `--zstd` (blocks compressed; if the CLI was built
 *    with zstd): CPU and bytes per record;
 *  - paced: the writer at 10 M records/s into a 16 MiB buffer: the
 *    archiver's CPU a record (as above), and records lost (written, and
 *    neither in the archive nor counted as lost by it is impossible: the
 *    archive's books are exact, so lost = written - kept);
 *  - the disk's write rate, 1 MiB write(2)s then fdatasync, in the same
 *    directory: the bound on any rate that ends on that disk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#include "shmlog.h"

#define ARC_PACED_RPS 10e6
#define ARC_PACED_BUFFER (16u << 20)
#define ARC_KEEP_BUFFER (64u << 20)
#define ARC_SWEEP_BUFFER (128u << 20)
#define ARC_SWEEP_N 24000000u
#define ARC_SWEEP_FIRST 0.2
#define ARC_SWEEP_STEP 0.05
#define ARC_SWEEP_TRIES 2
#define ARC_WAIT_NS (60 * 1000000000ull) /* an archiver left behind */

/* The CLI: beside this program (installed), or in the build tree. */
static bool find_cli(char *out, size_t n)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return false;
	self[len] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = '\0';
	static const char *const where[] = {"/shmlog", "/../tools/shmlog"};
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		if (strlen(self) + strlen(where[i]) >= n)
			return false;
		strcpy(out, self);
		strcat(out, where[i]);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

/* Empty and remove the archive directory @dir (files of one level). */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

/* The archive files in @dir: their newest modification (CLOCK_REALTIME
 * ns; 0: none) into *@newest, their bytes into *@bytes. */
static void dir_files(const char *dir, uint64_t *newest, uint64_t *bytes)
{
	*newest = *bytes = 0;
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".arc") &&
		    fstatat(dirfd(d), e->d_name, &st, 0) == 0) {
			uint64_t t = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
				     (uint64_t)st.st_mtim.tv_nsec;
			if (t > *newest)
				*newest = t;
			*bytes += (uint64_t)st.st_size;
		}
	closedir(d);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Count what the archive in @dir holds until records + lost reach
 * @want (or ARC_WAIT_NS pass): false if it never did. */
static bool archive_count(const char *dir, uint64_t want, uint64_t *kept,
			  uint64_t *lost)
{
	shmlog_reader_t *rd = NULL;
	uint64_t give_up = bench_now_ns() + ARC_WAIT_NS;
	*kept = *lost = 0;
	/* each turn reads what is there or waits at most 50 ms; bounded by
	 * give_up */
	while (bench_now_ns() < give_up) {
		if (!rd && shmlog_reader_open_archive(dir, 0, &rd) < 0) {
			rd = NULL;
			usleep(10000);
			continue;
		}
		struct shmlog_record rec;
		struct shmlog_lost l;
		int ev;
		while ((ev = shmlog_reader_next(rd, &rec, &l)) > 0) {
			if (ev == SHMLOG_EV_RECORD)
				(*kept)++;
			else
				*lost += l.overwritten + l.torn;
		}
		if (*kept + *lost >= want)
			break;
		shmlog_reader_wait(rd, 50);
	}
	if (rd)
		shmlog_reader_close(rd);
	return *kept + *lost >= want;
}

/* A fresh buffer @name of @size bytes, opened into *@h. */
static bool fresh_buffer(const char *name, uint64_t size, shmlog_t **h)
{
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = size;
	shmlog_remove(name);
	if (shmlog_create(name, &o) < 0)
		return false;
	if (shmlog_open(name, 0, h) < 0) {
		shmlog_remove(name);
		return false;
	}
	return true;
}

/* `shmlog archive -b @name -o @dir -q`, and @opt if not NULL (--compact,
 * --zstd), following; -1 on failure. */
static pid_t start_archiver(const char *cli, const char *name,
			    const char *dir, const char *opt)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		execl(cli, "shmlog", "archive", "-b", name, "-o", dir, "-q",
		      "--max-size", "8G", opt,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Does `shmlog archive` take --zstd (a shmlog built with zstd)? */
static bool cli_has_zstd(const char *cli)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		/* refused at the option if built without; else refused for
		 * the missing -o: exit 2 either way, so ask --help after it */
		execl(cli, "shmlog", "archive", "--zstd", "--help", (char *)NULL);
		_exit(127);
	}
	int status;
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* SIGTERM, and wait for it: false if it did not exit 0. */
static bool stop_archiver(pid_t pid)
{
	int status;
	kill(pid, SIGTERM);
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/* The CPU time (user + system, all threads) process @pid has spent so
 * far, in ns; -1 if it cannot be read. */
static double cpu_of(pid_t pid)
{
	clockid_t id;
	struct timespec ts;
	if (clock_getcpuclockid(pid, &id) || clock_gettime(id, &ts))
		return -1;
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* @n records at full speed (@rps 0) or paced at @rps: the rate achieved
 * (records/s), 0 on failure. */
static double write_n(shmlog_t *h, const struct lb_work *w, uint64_t n,
		      double rps)
{
	uint64_t i = 0, t0 = bench_now_ns();
	while (i < n) {
		uint64_t due = n;
		if (rps > 0) {
			double d = (double)(bench_now_ns() - t0) * rps / 1e9;
			due = d < (double)n ? (uint64_t)d : n;
		}
		for (; i < due; i++) {
			const struct lb_msg *m = &w->m[i % LB_WORK_N];
			if (shmlog_write_n(h, m->prio, m->tag, m->msg, m->len) <
			    0)
				return 0;
		}
	}
	uint64_t t = bench_now_ns() - t0;
	return t ? (double)n * 1e9 / (double)t : 0;
}

enum run_kind {
	RUN_KEEP, /* one writer, the default archiver */
	RUN_TWO, /* two writer processes, half the records each */
	RUN_COMPACT,
	RUN_AS_STORED,
	RUN_ZSTD
};

/* RUN_TWO's second writer: a process of its own (a lane of its own) that
 * writes records @from .. @n - 1 of @w into buffer @name at full speed;
 * -1 on failure. */
static pid_t second_writer(const char *name, const struct lb_work *w,
			   uint64_t from, uint64_t n)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		shmlog_t *h;
		if (shmlog_open(name, 0, &h) < 0)
			_exit(1);
		for (uint64_t i = from; i < n; i++) {
			const struct lb_msg *m = &w->m[i % LB_WORK_N];
			if (shmlog_write_n(h, m->prio, m->tag, m->msg,
					   m->len) < 0)
				_exit(1);
		}
		shmlog_close(h);
		_exit(0);
	}
	return pid;
}

/* One run: @n records into a buffer of @size bytes followed by the
 * archiver (full speed if @rps is 0), its figures into *@v. */
static bool archive_run(const char *cli, const struct lb_work *w, uint64_t n,
			double rps, uint64_t size, enum run_kind kind,
			struct lb_archive_variant *v)
{
	char name[64], dir[PATH_MAX];
	shmlog_t *h;
	snprintf(name, sizeof(name), "bench-%d-archive", (int)getpid());
	snprintf(dir, sizeof(dir), "%s/shmlog-bench-%d-archive", lb_scratch,
		 (int)getpid());
	remove_dir(dir);
	*v = (struct lb_archive_variant){0};
	if (!fresh_buffer(name, size, &h)) {
		snprintf(v->why, sizeof(v->why), "no buffer");
		return false;
	}
	pid_t pid = start_archiver(cli, name, dir,
				   kind == RUN_COMPACT     ? "--compact"
				   : kind == RUN_AS_STORED ? "--as-stored"
				   : kind == RUN_ZSTD      ? "--zstd"
							   : NULL);
	bool ok = pid > 0;
	const char *why = ok ? NULL : "the archiver did not start";
	uint64_t kept = 0, lost = 0;
	/* ready: it has archived a first record */
	ok = ok && shmlog_write(h, SHMLOG_INFO, "bench", "start") == 0 &&
	     archive_count(dir, 1, &kept, &lost);
	if (!ok && !why)
		why = "its first record never reached the archive";
	double cpu0 = ok ? cpu_of(pid) : -1;
	uint64_t t0 = realtime_ns();
	double wrote = 0;
	if (ok && kind == RUN_TWO) {
		pid_t w2 = second_writer(name, w, n / 2, n);
		int status = 0;
		wrote = w2 > 0 ? write_n(h, w, n / 2, 0) : 0;
		ok = w2 > 0 && waitpid(w2, &status, 0) == w2 &&
		     WIFEXITED(status) && WEXITSTATUS(status) == 0;
	} else if (ok) {
		wrote = write_n(h, w, n, rps);
	}
	if (ok && !(wrote > 0))
		why = "a writer failed", ok = false;
	if (ok && !archive_count(dir, n + 1, &kept, &lost))
		why = "the archive did not account for every record in 60 s",
		ok = false;
	double cpu1 = ok ? cpu_of(pid) : -1;
	uint64_t t1, bytes;
	dir_files(dir, &t1, &bytes);
	if (pid > 0 && !stop_archiver(pid) && ok)
		why = "the archiver did not exit 0 on SIGTERM", ok = false;
	shmlog_close(h);
	shmlog_remove(name);
	remove_dir(dir);
	if (ok && (cpu0 < 0 || cpu1 < cpu0))
		why = "its CPU time could not be read", ok = false;
	if (ok && kept < 2)
		why = "nothing kept", ok = false;
	if (!ok) {
		snprintf(v->why, sizeof(v->why), "%s", why);
		return false;
	}
	kept--; /* the first record, before the clock started */
	*v = (struct lb_archive_variant){
		.ok = true,
		.written = n,
		.kept = kept,
		.lost = lost,
		.rps = t1 > t0 ? (double)kept * 1e9 / (double)(t1 - t0) : 0,
		.writer_rps = wrote,
		.start_cpu_ns = cpu0,
		.cpu_ns_per_rec = (cpu1 - cpu0) / (double)kept,
		.bytes_per_rec = (double)bytes / (double)(kept + 1),
	};
	return true;
}

/* The writer alone: the same records into a buffer nobody reads. */
static double writer_alone(const struct lb_work *w, uint64_t n)
{
	char name[64];
	shmlog_t *h;
	snprintf(name, sizeof(name), "bench-%d-alone", (int)getpid());
	if (!fresh_buffer(name, ARC_KEEP_BUFFER, &h))
		return 0;
	double rps = write_n(h, w, n, 0);
	shmlog_close(h);
	shmlog_remove(name);
	return rps;
}

/* @bytes in 1 MiB write(2)s, then fdatasync: bytes/s, 0 on failure. */
static double disk_rate(uint64_t bytes)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/shmlog-bench-%d-disk", lb_scratch,
		 (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	static char block[1 << 20];
	memset(block, 'x', sizeof(block));
	uint64_t t0 = bench_now_ns(), done = 0;
	while (done < bytes) {
		ssize_t k = write(fd, block, sizeof(block));
		if (k <= 0)
			break;
		done += (uint64_t)k;
	}
	bool ok = done >= bytes && fdatasync(fd) == 0;
	uint64_t t = bench_now_ns() - t0;
	close(fd);
	unlink(path);
	return ok && t ? (double)bytes * 1e9 / (double)t : 0;
}

/* A keep-all sweep: runs paced at ARC_SWEEP_FIRST, + ARC_SWEEP_STEP ...
 * of @alone records/s, until a pace loses a record in each of
 * ARC_SWEEP_TRIES runs, or passes @alone; false if a run failed. A pace
 * kept whole counts at that pace (the writer reaches it to within a
 * record or two), unless the writer fell short of it by more than 1 %:
 * then at the rate it wrote. */
static bool keep_sweep(const char *cli, const struct lb_work *w, uint64_t n,
		       double alone, struct lb_archive_sweep *sw, char *why,
		       size_t why_cap)
{
	*sw = (struct lb_archive_sweep){0};
	for (int i = 0;; i++) {
		double f = ARC_SWEEP_FIRST + ARC_SWEEP_STEP * i;
		if (f > 1.0 + 1e-9)
			return true;
		struct lb_archive_variant v;
		bool whole = false;
		int tries = 0;
		while (!whole && tries < ARC_SWEEP_TRIES) {
			tries++;
			if (!archive_run(cli, w, n, f * alone, ARC_SWEEP_BUFFER,
					 RUN_KEEP, &v)) {
				snprintf(why, why_cap,
					 "a keep-all run at %.0f %% of the "
					 "writer's rate: %s", 100 * f, v.why);
				return false;
			}
			whole = !v.lost && v.kept >= n;
		}
		if (!whole) {
			sw->next_rps = v.writer_rps;
			sw->next_lost = v.written > v.kept ? v.written - v.kept
							   : v.lost;
			return true;
		}
		sw->rps = v.writer_rps >= 0.99 * f * alone ? f * alone
							   : v.writer_rps;
		sw->cpu_ns_per_rec = v.cpu_ns_per_rec;
		sw->bytes_per_rec = v.bytes_per_rec;
		sw->retried += tries > 1;
	}
}

void lb_archive_run(const struct lb_config *cfg, struct lb_archive *a)
{
	memset(a, 0, sizeof(*a));
	char cli[PATH_MAX];
	if (!find_cli(cli, sizeof(cli))) {
		snprintf(a->why, sizeof(a->why),
			 "the shmlog CLI is not beside shmlog-bench");
		return;
	}
	struct lb_work w;
	lb_work_seed(&w);
	uint64_t n = cfg->quick ? 300000 : 16000000;
	int reps = cfg->quick ? 1 : 3, k = 0;
	double full[3], alone[3], cpu[3], start[3];
	struct lb_archive_variant best = {0};
	for (int i = 0; i < reps; i++) {
		struct lb_archive_variant r;
		/* alone and followed in turn: a drifting load hits both */
		alone[k] = writer_alone(&w, n);
		if (!alone[k] || !archive_run(cli, &w, n, 0, ARC_KEEP_BUFFER,
					      RUN_KEEP, &r))
			continue;
		full[k] = r.rps;
		cpu[k] = r.cpu_ns_per_rec;
		start[k] = r.start_cpu_ns;
		if (!k || r.rps > best.rps)
			best = r;
		k++;
	}
	if (!k) {
		snprintf(a->why, sizeof(a->why), "the archiver did not run "
			 "(%.150s)", cli);
		return;
	}
	a->runs = k;
	a->writer_alone_rps = bench_median(alone, k);
	a->full_written = best.written;
	a->full_kept = best.kept;
	a->full_lost = best.lost;
	a->full_writer_rps = best.writer_rps;
	a->full_bytes_per_rec = best.bytes_per_rec;
	a->full_rps = bench_median(full, k);
	a->full_cpu_ns_per_rec = bench_median(cpu, k);
	a->start_cpu_ns = bench_median(start, k);
	/* keep-all: the sweeps, paced from the writer's rate alone */
	uint64_t sn = cfg->quick ? 300000 : ARC_SWEEP_N;
	int sweeps = cfg->quick ? 1 : LB_ARC_SWEEPS;
	double rate[LB_ARC_SWEEPS], scpu[LB_ARC_SWEEPS], sbytes[LB_ARC_SWEEPS];
	for (int i = 0; i < sweeps; i++) {
		if (!keep_sweep(cli, &w, sn, a->writer_alone_rps, &a->sweep[i],
				a->why, sizeof(a->why)))
			return;
		rate[i] = a->sweep[i].rps;
		scpu[i] = a->sweep[i].cpu_ns_per_rec;
		sbytes[i] = a->sweep[i].bytes_per_rec;
	}
	a->sweeps = sweeps;
	a->keep_written = sn;
	a->keep_buffer_bytes = ARC_SWEEP_BUFFER;
	a->keep_step = ARC_SWEEP_STEP;
	a->keep_tries = ARC_SWEEP_TRIES;
	a->keep_rps = bench_median(rate, sweeps);
	a->cpu_ns_per_rec = bench_median(scpu, sweeps);
	a->bytes_per_rec = bench_median(sbytes, sweeps);
	a->paced_target_rps = ARC_PACED_RPS;
	a->paced_buffer_bytes = ARC_PACED_BUFFER;
	uint64_t pn = (uint64_t)(ARC_PACED_RPS * (cfg->quick ? 0.1 : 1.0));
	struct lb_archive_variant p;
	a->paced_ok = archive_run(cli, &w, pn, ARC_PACED_RPS,
				  ARC_PACED_BUFFER, RUN_KEEP, &p);
	if (a->paced_ok) {
		a->paced_written = p.written;
		a->paced_writer_rps = p.writer_rps;
		a->paced_lost = p.written > p.kept ? p.written - p.kept : 0;
		a->paced_cpu_ns_per_rec = p.cpu_ns_per_rec;
	}
	archive_run(cli, &w, n, 0, ARC_KEEP_BUFFER, RUN_TWO, &a->two);
	archive_run(cli, &w, n, 0, ARC_KEEP_BUFFER, RUN_COMPACT, &a->compact);
	archive_run(cli, &w, n, 0, ARC_KEEP_BUFFER, RUN_AS_STORED,
		    &a->as_stored);
	if (cli_has_zstd(cli))
		archive_run(cli, &w, n, 0, ARC_KEEP_BUFFER, RUN_ZSTD, &a->zstd);
	a->disk_bytes_per_s = disk_rate(cfg->quick ? 32u << 20 : 512u << 20);
	a->ok = true;
}
