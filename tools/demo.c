/* SPDX-License-Identifier: MIT */
/*
 * `shmlog demo`: several writer processes log seed 000's sample messages
 * into a buffer while this process follows it, then a summary that checks
 * the accounting: every record written was read, overwritten or torn.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	for (long i = 0; i < n;) {
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

int cmd_demo(int argc, char **argv, volatile sig_atomic_t *stop)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"writers", required_argument, 0, 'w'},
		{"records", required_argument, 0, 'n'},
		{"show", required_argument, 0, 's'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	long writers = 4, records = 20000, show = 16;
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "b:w:n:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': cli_buffer = optarg; break;
		case 'w':
			writers = strtol(optarg, &end, 10);
			if (*end || writers < 1 || writers > 64)
				return cli_usage_error("demo",
						       "bad --writers '%s': give "
						       "1 to 64",
						       optarg);
			break;
		case 'n':
			records = strtol(optarg, &end, 10);
			if (*end || records < 1)
				return cli_usage_error("demo",
						       "bad --records '%s': give "
						       "a positive number",
						       optarg);
			break;
		case 's':
			show = strtol(optarg, &end, 10);
			if (*end || show < 0)
				return cli_usage_error("demo",
						       "bad --show '%s'", optarg);
			break;
		case 'h':
			printf("usage: shmlog demo [-b NAME] [--writers N] "
			       "[--records N] [--show N]\n"
			       "N writer processes each log N records of seed "
			       "000's sample messages while this process\n"
			       "follows the buffer (created if missing); shows "
			       "the first records and a summary.\n");
			return 0;
		default: return 2;
		}
	}
	/* The buffer is created if missing, as the first write would. */
	int err = shmlog_create(cli_buffer, NULL);
	if (err && err != -EEXIST)
		return cli_fail("demo", err);
	shmlog_reader_t *rd;
	err = shmlog_reader_open(cli_buffer, SHMLOG_READ_TAIL, &rd);
	if (err)
		return cli_fail("demo", err);
	unsigned lanes = shmlog_reader_lanes(rd);
	uint64_t *start = calloc(lanes, sizeof(*start));
	for (unsigned i = 0; start && i < lanes; i++) {
		struct shmlog_lane_stats st;
		shmlog_reader_lane_stats(rd, i, &st);
		start[i] = st.written;
	}
	int pfd[2];
	if (!start || pipe(pfd) < 0) {
		free(start);
		shmlog_reader_close(rd);
		return cli_fail("demo", -errno);
	}
	printf("shmlog demo: %ld writer processes x %ld records into buffer "
	       "'%s'; following it:\n\n",
	       writers, records, cli_buffer_name());
	fflush(stdout);
	uint64_t t0 = now_ns();
	for (long w = 0; w < writers; w++) {
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			writer((int)w, records, 64, pfd[1]);
		}
		if (pid < 0)
			fprintf(stderr, "shmlog demo: fork: %s\n",
				strerror(errno));
	}
	close(pfd[1]);

	struct fmt f = {FMT_THREADTIME, isatty(1) != 0, false};
	long shown = 0, running = writers;
	uint64_t lost_events = 0;
	while (!*stop) {
		struct shmlog_record r;
		struct shmlog_lost lost;
		int ev = shmlog_reader_next(rd, &r, &lost);
		if (ev == SHMLOG_EV_RECORD) {
			if (shown < show) {
				fmt_record(stdout, &f, &r);
				if (++shown == show)
					printf("... (following the rest "
					       "silently)\n");
			}
			continue;
		}
		if (ev == SHMLOG_EV_LOST) {
			if (shown < show)
				fmt_lost(stdout, &f, &lost);
			lost_events++;
			continue;
		}
		/* nothing new: are the writers done? */
		while (running && waitpid(-1, NULL, WNOHANG) > 0)
			running--;
		if (!running && shmlog_reader_next(rd, &r, NULL) ==
					SHMLOG_EV_NONE)
			break;
		if (running)
			shmlog_reader_wait(rd, 100);
	}
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
	uint64_t bytes = 0;
	for (int k = 0; k < 16; k++)
		bytes += strlen(seed_messages[k].msg);
	printf("\nsummary (%.2f s):\n", secs);
	printf("  written:     %llu records by %ld processes (%llu refused)\n",
	       (unsigned long long)t.written, writers,
	       (unsigned long long)failed);
	if (busy)
		printf("  write cost:  %.1f ns per record inside shmlog_write, "
		       "in bursts of 64 between pauses (%.1f M records/s per "
		       "writer, %.0f B messages; `shmlog-bench log` measures it "
		       "properly)\n",
		       (double)busy / (double)(writers * records),
		       (double)(writers * records) / ((double)busy / 1e9) /
			       (double)writers / 1e6,
		       (double)bytes / 16.0);
	printf("  read:        %llu records (%.2f M records/s followed)\n",
	       (unsigned long long)t.read, (double)t.read / secs / 1e6);
	printf("  lost:        %llu overwritten before the reader got them, "
	       "%llu torn (%llu loss reports)\n",
	       (unsigned long long)t.overwritten, (unsigned long long)t.torn,
	       (unsigned long long)lost_events);
	bool exact = t.written == t.read + t.overwritten + t.torn;
	printf("  accounting:  written %s read + overwritten + torn (%llu %s "
	       "%llu)\n",
	       exact ? "=" : "!=", (unsigned long long)t.written,
	       exact ? "=" : "!=",
	       (unsigned long long)(t.read + t.overwritten + t.torn));
	printf("\nNext: `shmlog cat -b %s | tail`, `shmlog info -b %s`, "
	       "`shmlog cat -f -b %s` in another terminal.\n",
	       cli_buffer_name(), cli_buffer_name(), cli_buffer_name());
	free(start);
	shmlog_reader_close(rd);
	return exact ? 0 : 1;
}
