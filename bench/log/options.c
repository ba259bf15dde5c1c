/* SPDX-License-Identifier: MIT */
/* The command line of `shmlog-bench log`. */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: shmlog-bench log [options]\n"
		"\n"
		"shmlog against the other ways a Linux program can log, side by "
		"side in one run:\n"
		"one writer, then a message-size sweep, then 1-8 writers, then "
		"shmlog's readers\n"
		"and the history each of shmlog's writers keeps while one "
		"floods.\n"
		"\n"
		"  --quick          short runs (the CI smoke test, < 30 s)\n"
		"  --json FILE      write every figure as JSON\n"
		"  --plot DIR       draw SVG plots into DIR (needs "
		"python3-matplotlib)\n"
		"  --only A,B,...   run only these contenders (names below)\n"
		"  --with-kmsg      also write to /dev/kmsg: fills the "
		"machine's kernel log\n"
		"                   (dmesg) with benchmark lines; needs root\n"
		"  --dur SECONDS    measured time per run (default 0.5)\n"
		"  --reps N         runs per figure, the median reported "
		"(default 5, at most %d)\n"
		"  --batch N        calls per timed batch (default 16; 1 times "
		"every call)\n"
		"  --dir DIR        where file-based contenders write "
		"(default /tmp)\n"
		"  --wide           print every column (wider than 100 "
		"characters)\n"
		"  --no-wait-core   do not wait, before each run, for every "
		"CPU to be at its\n"
		"                   full speed (a probe of a few ms per CPU "
		"finds one slowed by\n"
		"                   a neighbour on its host core; the waits "
		"are bounded, and the\n"
		"                   probes are still taken and counted)\n"
		"  --no-strace --no-sweep --no-scaling --no-readers "
		"--no-history\n"
		"                   skip parts\n"
		"\ncontenders:\n",
		LB_MAX_REPS);
	for (int i = 0; i < lb_n_contenders; i++)
		fprintf(f, "  %-16s %s\n", lb_contenders[i]->name,
			lb_contenders[i]->what);
}

/* A name of --only that no contender has: say which names exist. */
static int check_only(const char *only)
{
	for (const char *p = only; *p;) {
		size_t l = strcspn(p, ",");
		bool found = false;
		for (int i = 0; i < lb_n_contenders && !found; i++)
			found = strlen(lb_contenders[i]->name) == l &&
				!strncmp(p, lb_contenders[i]->name, l);
		if (!found) {
			fprintf(stderr,
				"shmlog-bench log: --only: no contender "
				"called '%.*s'; the contenders are:\n ",
				(int)l, p);
			for (int i = 0; i < lb_n_contenders; i++)
				fprintf(stderr, " %s", lb_contenders[i]->name);
			fprintf(stderr, "\n");
			return -1;
		}
		p += l + (p[l] == ',');
	}
	return 0;
}

static bool flag(const char *a, struct lb_opts *o)
{
	if (!strcmp(a, "--quick"))
		o->main.quick = true;
	else if (!strcmp(a, "--no-strace"))
		o->main.strace = false;
	else if (!strcmp(a, "--no-sweep"))
		o->no_sweep = true;
	else if (!strcmp(a, "--no-scaling"))
		o->no_scaling = true;
	else if (!strcmp(a, "--no-readers"))
		o->no_readers = true;
	else if (!strcmp(a, "--no-history"))
		o->no_history = true;
	else if (!strcmp(a, "--with-kmsg"))
		o->with_kmsg = true;
	else if (!strcmp(a, "--wide"))
		o->wide = true;
	else if (!strcmp(a, "--no-wait-core"))
		o->no_wait_core = true;
	else
		return false;
	return true;
}

static bool takes_value(const char *a)
{
	static const char *const names[] = {"--json", "--plot", "--only",
					    "--dir",  "--dur",	"--reps",
					    "--batch"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(a, names[i]))
			return true;
	return false;
}

/* An option with a value; false if @a is none or @v is bad. */
static bool valued(const char *a, const char *v, struct lb_opts *o)
{
	if (!v)
		return false;
	if (!strcmp(a, "--json"))
		o->json = v;
	else if (!strcmp(a, "--plot"))
		o->plot = v;
	else if (!strcmp(a, "--only"))
		o->only = v;
	else if (!strcmp(a, "--dir"))
		lb_scratch = v;
	else if (!strcmp(a, "--dur") && atof(v) > 0)
		o->main.dur_s = atof(v);
	else if (!strcmp(a, "--reps") && atoi(v) > 0)
		o->main.reps = atoi(v) > LB_MAX_REPS ? LB_MAX_REPS : atoi(v);
	else if (!strcmp(a, "--batch") && atoi(v) > 0)
		o->main.batch = atoi(v);
	else
		return false;
	return true;
}

/* The sweep and the scaling runs are shorter: there are many more. */
static void derive_parts(struct lb_opts *o)
{
	if (o->main.quick) {
		o->main.dur_s = 0.05;
		o->main.warm_s = 0.02;
		o->main.reps = 1;
	}
	o->sweep = o->main;
	o->sweep.dur_s = o->main.quick ? 0.02 : o->main.dur_s * 0.3;
	o->sweep.warm_s = o->main.quick ? 0.01 : 0.05;
	o->sweep.reps = o->main.quick ? 1 : 3;
	o->scale = o->sweep;
	o->scale.dur_s = o->main.quick ? 0.03 : o->main.dur_s * 0.5;
}

int lb_parse_opts(int argc, char **argv, struct lb_opts *o)
{
	*o = (struct lb_opts){
	    .main = {.dur_s = 0.5,
		     .warm_s = 0.1,
		     .reps = 5,
		     .batch = 16,
		     .strace = true},
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		}
		if (flag(a, o))
			continue;
		if (valued(a, v, o)) {
			i++;
			continue;
		}
		fprintf(stderr,
			"shmlog-bench log: %s '%s'; 'shmlog-bench log --help' "
			"lists the options\n",
			takes_value(a) ? (v ? "bad value for" : "missing value for")
				       : "unknown option",
			a);
		return -1;
	}
	if (o->only && check_only(o->only) < 0)
		return -1;
	derive_parts(o);
	lb_core_waits = !o->no_wait_core;
	return 0;
}

static bool named_in(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");
		if (l == n && !strncmp(p, name, n))
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

/* /dev/kmsg runs only when asked for, by --with-kmsg or by name in --only:
 * its records land in the machine's kernel log. */
bool lb_selected(const struct lb_opts *o, const struct lb_contender *ct)
{
	if (o->only)
		return named_in(o->only, ct->name);
	return ct != &lb_kmsg || o->with_kmsg;
}
