/* SPDX-License-Identifier: MIT */
/*
 * `shmlog demo`: several writer processes log sample messages
 * into a buffer while this process follows it, then a summary that checks
 * the accounting: every record written was read, overwritten or torn.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "sample_messages.h"
#include "shmlog.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A writer process: @n records in bursts, a short pause between bursts so
 * that a reader printing to a terminal can keep up. Reports its busy time
 * (ns spent inside shmlog_write) on @fd. */
static void writer(int id, long n, int burst, int fd)
{
	shmlog_t *h;
	if (shmlog_open(cli_buffer, 0, &h))
		_exit(1);
	uint64_t busy = 0;
	long failed = 0;
	for (long i = 0; i < n && !cli_stop;) {
		uint64_t t0 = now_ns();
		for (int b = 0; b < burst && i < n; b++, i++) {
			const struct seed_message *m =
				&seed_messages[(i + id) % 16];
			if (shmlog_write(h, m->prio, m->tag, m->msg))
				failed++;
		}
		busy += now_ns() - t0;
		struct timespec pause = {0, 200 * 1000};
		nanosleep(&pause, NULL);
	}
	shmlog_close(h);
	uint64_t msg[2] = {busy, (uint64_t)failed};
	if (write(fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		_exit(1);
	_exit(0);
}

struct totals {
	uint64_t read, overwritten, torn, written;
};

static void lane_totals(shmlog_reader_t *rd, const uint64_t *start,
			struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < shmlog_reader_lanes(rd); i++) {
		struct shmlog_lane_stats st;
		if (shmlog_reader_lane_stats(rd, i, &st))
			continue;
		t->read += st.read;
		t->overwritten += st.overwritten;
		t->torn += st.torn;
		t->written += st.written - start[i];
	}
}

struct demo_opts {
	long writers, records, show;
};

/* Parse the options into @o. Returns -1 to go on, else the exit status. */
static int demo_parse(int argc, char **argv, struct demo_opts *o)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"writers", required_argument, 0, 'w'},
		{"records", required_argument, 0, 'n'},
		{"show", required_argument, 0, 's'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	uint64_t v;
	while ((c = cli_getopt(argc, argv, "b:w:n:s:h", opts)) != -1) {
		switch (c) {
		case 'b':
			if (cli_set_buffer("demo", optarg))
				return 2;
			break;
		case 'w':
			if (cli_parse_u64(optarg, 64, &v) || v < 1)
				return cli_usage_error("demo",
						       "bad --writers '%s': give "
						       "1 to 64",
						       optarg);
			o->writers = (long)v;
			break;
		case 'n':
			if (cli_parse_u64(optarg, 1000000000, &v) || v < 1)
				return cli_usage_error("demo",
						       "bad --records '%s': give "
						       "1 to 1000000000",
						       optarg);
			o->records = (long)v;
			break;
		case 's':
			if (cli_parse_u64(optarg, LONG_MAX, &v))
				return cli_usage_error("demo",
						       "bad --show '%s': give a "
						       "number of records",
						       optarg);
			o->show = (long)v;
			break;
		case 'h':
			printf("usage: shmlog demo [-b NAME] [--writers N] "
			       "[--records N] [--show N]\n"
			       "Several writer processes log sample messages "
			       "while this process follows the\nbuffer "
			       "(created if missing), then a summary checks "
			       "that every record\nwritten was read, "
			       "overwritten or torn.\n\n"
			       CLI_HELP_BUFFER
			       "  -w, --writers N     writer processes, 1 to 64 "
			       "(default 4)\n"
			       "  -n, --records N     records per writer "
			       "(default 20000)\n"
			       "  -s, --show N        records printed before "
			       "following silently (default 16)\n"
			       CLI_HELP_HELP);
			return 0;
		default: return cli_bad_option("demo");
		}
	}
	if (optind < argc)
		return cli_usage_error("demo", "unexpected argument '%s'",
				       argv[optind]);
	return -1;
}

/* Follow the buffer until every writer is done: print the first @show
 * records, count the rest. Returns the number of loss reports. */
static uint64_t demo_follow(shmlog_reader_t *rd, long show, long running)
{
	struct fmt f = {.kind = FMT_THREADTIME, .color = isatty(1) != 0};
	struct out out = {0};
	if (show && out_open(&out, 1))
		show = 0;
	long shown = 0;
	uint64_t lost_events = 0;
	while (!cli_stop) {
		struct shmlog_record r;
		struct shmlog_lost lost;
		int ev = shmlog_reader_next(rd, &r, &lost);
		if (ev == SHMLOG_EV_RECORD) {
			if (shown < show) {
				fmt_record(&out, &f, &r);
				out_flush(&out);
				if (++shown == show)
					printf("... (following the rest "
					       "silently)\n");
			}
			continue;
		}
		if (ev == SHMLOG_EV_LOST) {
			if (shown < show) {
				fmt_lost(&out, &f, &lost);
				out_flush(&out);
			}
			lost_events++;
			continue;
		}
		/* nothing new: are the writers done? */
		while (running && waitpid(-1, NULL, WNOHANG) > 0)
			running--;
		/* done when a wait runs out: a follower's next() may say NONE
		 * with records still to come (shmlog_reader_wait()) */
		if (!running) {
			if (shmlog_reader_wait(rd, 20) == -ETIMEDOUT)
				break;
			continue;
		}
		shmlog_reader_wait(rd, 100);
	}
	if (out.buf)
		out_close(&out);
	return lost_events;
}

static void demo_summary(const struct demo_opts *o, const struct totals *t,
			 double secs, uint64_t busy, uint64_t failed,
			 uint64_t lost_events)
{
	uint64_t bytes = 0;
	for (int k = 0; k < 16; k++)
		bytes += strlen(seed_messages[k].msg);
	uint64_t total = (uint64_t)(o->writers * o->records);
	printf("\nsummary (%.2f s):\n", secs);
	printf("  written:     %llu records by %ld processes (%llu refused)\n",
	       (unsigned long long)t->written, o->writers,
	       (unsigned long long)failed);
	if (busy)
		printf("  write cost:  %.1f ns per record inside shmlog_write, "
		       "in bursts of 64 between pauses (%.1f M records/s per "
		       "writer, %.0f B messages; `shmlog-bench log` measures it "
		       "properly)\n",
		       (double)busy / (double)total,
		       (double)total / ((double)busy / 1e9) /
			       (double)o->writers / 1e6,
		       (double)bytes / 16.0);
	printf("  read:        %llu records (%.2f M records/s followed)\n",
	       (unsigned long long)t->read, (double)t->read / secs / 1e6);
	printf("  lost:        %llu overwritten before the reader got them, "
	       "%llu torn (%llu loss reports)\n",
	       (unsigned long long)t->overwritten, (unsigned long long)t->torn,
	       (unsigned long long)lost_events);
	bool exact = t->written == t->read + t->overwritten + t->torn;
	if (cli_stop)
		printf("  interrupted: records written after the reader "
		       "stopped are not read, so the books need not "
		       "balance\n");
	printf("  accounting:  written %s read + overwritten + torn (%llu %s "
	       "%llu)\n",
	       exact ? "=" : "!=", (unsigned long long)t->written,
	       exact ? "=" : "!=",
	       (unsigned long long)(t->read + t->overwritten + t->torn));
	printf("\nNext: `shmlog cat -b %s | tail`, `shmlog info -b %s`, "
	       "`shmlog cat -f -b %s` in another terminal.\n",
	       cli_buffer_name(), cli_buffer_name(), cli_buffer_name());
}

/* Each lane's count of records written so far, to count only the demo's. */
static uint64_t *lanes_written(shmlog_reader_t *rd)
{
	unsigned lanes = shmlog_reader_lanes(rd);
	uint64_t *start = calloc(lanes, sizeof(*start));
	for (unsigned i = 0; start && i < lanes; i++) {
		struct shmlog_lane_stats st = {0};
		shmlog_reader_lane_stats(rd, i, &st);
		start[i] = st.written;
	}
	return start;
}

static int demo_run(const struct demo_opts *o)
{
	/* The buffer is created if missing, as the first write would. */
	int err = shmlog_create(cli_buffer, NULL);
	if (err && err != -EEXIST)
		return cli_fail("demo", err);
	shmlog_reader_t *rd;
	err = shmlog_reader_open(cli_buffer, SHMLOG_READ_TAIL, &rd);
	if (err)
		return cli_fail("demo", err);
	uint64_t *start = lanes_written(rd);
	int pfd[2];
	if (!start || pipe(pfd) < 0) {
		err = start ? -errno : -ENOMEM;
		free(start);
		shmlog_reader_close(rd);
		return cli_fail("demo", err);
	}
	printf("shmlog demo: %ld writer processes x %ld records into buffer "
	       "'%s'; following it:\n\n",
	       o->writers, o->records, cli_buffer_name());
	fflush(stdout); /* records are written to fd 1 directly */
	uint64_t t0 = now_ns();
	long running = 0;
	pid_t pids[64];
	for (long w = 0; w < o->writers; w++) {
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			writer((int)w, o->records, 64, pfd[1]);
		}
		if (pid < 0)
			fprintf(stderr, "shmlog demo: fork: %s\n",
				strerror(errno));
		else
			pids[running++] = pid;
	}
	close(pfd[1]);
	uint64_t lost_events = demo_follow(rd, o->show, running);
	/* Interrupted: the writers stop too (a SIGTERM sent to this process
	 * alone does not reach them). */
	for (long w = 0; cli_stop && w < running; w++)
		kill(pids[w], SIGTERM);
	double secs = (double)(now_ns() - t0) / 1e9;
	uint64_t busy = 0, failed = 0, msg[2];
	while (read(pfd[0], msg, sizeof(msg)) == (ssize_t)sizeof(msg)) {
		busy += msg[0];
		failed += msg[1];
	}
	close(pfd[0]);
	while (waitpid(-1, NULL, 0) > 0)
		;
	struct totals t;
	lane_totals(rd, start, &t);
	demo_summary(o, &t, secs, busy, failed, lost_events);
	free(start);
	shmlog_reader_close(rd);
	if (cli_stop)
		return 130; /* interrupted, as a shell reports it */
	return t.written == t.read + t.overwritten + t.torn ? 0 : 1;
}

int cmd_demo(int argc, char **argv)
{
	struct demo_opts o = {.writers = 4, .records = 20000, .show = 16};
	int rc = demo_parse(argc, argv, &o);
	return rc >= 0 ? rc : demo_run(&o);
}
