/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench: the measurement suite. Each subcommand lives in its own
 * folder under bench/ and reports through bench/common.
 */
#include <stdio.h>
#include <string.h>

#include "bench_cmds.h"

struct cmd {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *help;
};

static const struct cmd cmds[] = {
#ifdef HAVE_BENCH_LOG
	{"log", bench_log_main, "shmlog against the other ways to log, side by side"},
#endif
#ifdef HAVE_BENCH_IPC
	{"ipc", bench_ipc_main, "IPC mechanisms: the embedded IPC study's conversations"},
#endif
#ifdef HAVE_BENCH_FILTER
	{"disabled", bench_disabled_main, "cost of a filtered-out log call"},
	{"eventloop", bench_eventloop_main, "the libvirt study's event loop, logging disabled"},
#endif
#ifdef HAVE_BENCH_FAULTS
	{"faults", bench_faults_main,
	 "minor page faults: stdio, malloc, shmlog (the buffered-IO study)"},
#endif
#ifdef HAVE_BENCH_FORWARD
	{"forward", bench_forward_main,
	 "shmlog forward vs syslog(3) into rsyslogd, and over OTLP"},
#endif
	{NULL, NULL, NULL},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: shmlog-bench COMMAND [--quick] [--json FILE] [options]\n\ncommands:\n");
	for (const struct cmd *c = cmds; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->help);
	fprintf(f, "\n'shmlog-bench COMMAND --help' shows a command's options;\n"
		   "'shmlog-bench --version' the version.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("shmlog-bench %s\n", SHMLOG_VERSION);
		return 0;
	}
	for (const struct cmd *c = cmds; c->name; c++)
		if (!strcmp(argv[1], c->name))
			return c->main(argc - 1, argv + 1);
	fprintf(stderr, "shmlog-bench: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
