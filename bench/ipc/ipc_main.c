/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench ipc: options, the run matrix, the study-shaped table, the
 * stage breakdown and the JSON. See docs/ipc-benchmarks.md for how to read
 * the output.
 */
#include "ipc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_cmds.h"

static const struct ipc_transport *const transports[] = {
	&ipc_posix_mq,	  &ipc_shm_sem,	    &ipc_shm_futex,
	&ipc_shm_eventfd, &ipc_pipe,	    &ipc_unix_stream,
	&ipc_unix_dgram,  &ipc_tcp,
#ifdef HAVE_TIRPC
	&ipc_onc_rpc,	  &ipc_onc_rpc_unix,
#endif
	&ipc_shmlog,
};
#define NTRANSPORTS (sizeof(transports) / sizeof(transports[0]))

/* The study's sizes, then the sweep up to 1 MiB. */
static const size_t sizes_full[] = {4,	   16,	    128,      1024,	 4096,
				    16384, 65536, 262144, 1048576};
static const size_t sizes_quick[] = {4, 1024, 1048576};
#define MAX_SIZES 32
#define MAX_REPS 9
#define MAX_RATES 8
/* notify-rate's default rates: the goal's 5 M/s and two below it */
static const uint64_t rates_default[] = {1000000, 2000000, 5000000};

/* What a frame checksum costs, for 4 B, 1 KiB, 1 MiB of payload. */
static double checksum_ns[3];

/* --wide: every column, past 100 characters */
static bool wide_tables;

struct opts {
	bool quick;
	const char *json;
	int cpu_client, cpu_server;
	const char *cpus;
	char mech_filter[256];
	bool conv_on[IPC_NCONV];
	size_t sizes[MAX_SIZES];
	int nsizes;
	bool wait_on[2];
	uint64_t spin_ns;
	uint64_t run_ns, warm_ns;
	uint64_t pace_ns;
	uint64_t rates[MAX_RATES]; /* notify-rate: events per second */
	int nrates;
	bool stages;
	bool stages_all; /* instrument every sync mechanism, not only shm */
	int stage_reps; /* plain/instrumented pairs per mechanism */
	int reps; /* runs per point of the matrix (median kept) */
	long corrupt_at;
};

/* One line of the table, kept for the summary and the JSON. */
struct row {
	const char *mech;
	const char *wait_note; /* the mechanism polls inside its blocking wait */
	enum ipc_conv conv;
	size_t size;
	uint64_t rate; /* notify-rate: events per second offered */
	enum ipc_wait wait;
	enum ipc_stamps instrumented;
	const char *series; /* "matrix" or "stages" (paired runs) */
	int status;
	char why[320];
	uint64_t msgs, sent, lost;
	double secs, mps, kps;
	uint64_t p50, p90, p99, p999, max;
	double mean;
	double cpu_cli, cpu_srv; /* ns per message */
	double csw_cli, csw_srv, flt_cli, flt_srv; /* per message */
	bool have_stages;
	uint64_t st_p50[3], st_p99[3];
	double steal_ms; /* hypervisor steal time during this run */
	int reps; /* runs of this point; this row is the median one */
	double mps_min, mps_max; /* Msgs/s over those runs */
};

static struct row *rows;
static size_t nrows, caprows;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: shmlog-bench ipc [options]\n"
		"\n"
		"The embedded IPC study's three conversations over every local "
		"IPC mechanism,\none client process and one server process "
		"per run.\n"
		"\n"
		"  --quick            few sizes, short runs (< 60 s; what CI "
		"runs)\n"
		"  --wide             print every column (past 100 "
		"characters)\n"
		"  --json FILE        write every result with the machine "
		"description\n"
		"  --cpus WHERE       different (default with 2+ cores), same, "
		"none (unpinned),\n"
		"                     or C,S (client CPU, server CPU)\n"
		"  --mech LIST        only these mechanisms (comma-separated "
		"names, see below)\n"
		"  --conv LIST        request,send,notify,notify-paced,"
		"notify-rate\n                     (default: all)\n"
		"  --sizes LIST       payload sizes, e.g. 4,16,128,1K,1M\n"
		"  --wait WHICH       block, spin or both (default both)\n"
		"  --pace-us N        notify-paced: sleep between events "
		"(default 50)\n"
		"  --rates LIST       notify-rate: events per second, e.g. "
		"500k,1M,5M\n"
		"                     (default 1M,2M,5M, quick 5M; the sender "
		"busy-waits between them)\n"
		"  --spin-us N        spin budget before blocking (default "
		"50)\n"
		"  --time-ms N        measured time per run (default 100, "
		"quick 30)\n"
		"  --reps N           runs per point, the median kept (default "
		"5, quick 1)\n"
		"  --stages all|shm|none  instrumented re-runs with stage "
		"timestamps\n"
		"                     (default: all, quick: shm)\n"
		"  --corrupt-at N     self-test: damage frame N; the run must "
		"fail\n"
		"\nmechanisms:\n");
	for (size_t i = 0; i < NTRANSPORTS; i++)
		fprintf(f, "  %-13s %s\n", transports[i]->name,
			transports[i]->desc);
}

static int parse_list(const char *s, char *out, size_t len)
{
	if (strlen(s) + 3 > len)
		return -1;
	snprintf(out, len, ",%s,", s);
	return 0;
}

static bool mech_selected(const struct opts *o, const char *name)
{
	char key[64];
	if (!o->mech_filter[0])
		return true;
	snprintf(key, sizeof(key), ",%s,", name);
	return strstr(o->mech_filter, key) != NULL;
}

/* A comma-separated list of at most @max values of @s into @out, each by
 * @one (false: not a value); how many, or -1 if none or one is bad. */
static int parse_values(const char *s, double *out, int max,
			bool (*one)(const char *t, double *v))
{
	char buf[512], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", s);
	int n = 0;
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (n == max || !one(t, &out[n]))
			return -1;
		n++;
	}
	return n ? n : -1;
}

/* A message size: 1 B to 64 MiB, as bench_parse_size() reads it. */
static bool size_value(const char *t, double *v)
{
	long long z = bench_parse_size(t);
	*v = (double)z;
	return z >= 1 && z <= (64ll << 20);
}

/* Events per second: 1 to 100 M, with k or M for 10^3 or 10^6. */
static bool rate_value(const char *t, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(t, &end);
	if (*end == 'k' || *end == 'K')
		*v *= 1e3, end++;
	else if (*end == 'm' || *end == 'M')
		*v *= 1e6, end++;
	return !errno && end != t && !*end && *v >= 1 && *v <= 1e8;
}

static int parse_sizes(struct opts *o, const char *s)
{
	double v[MAX_SIZES];
	int n = parse_values(s, v, MAX_SIZES, size_value);
	for (int i = 0; i < n; i++)
		o->sizes[i] = (size_t)v[i];
	o->nsizes = n > 0 ? n : 0;
	return n > 0 ? 0 : -1;
}

static int parse_rates(struct opts *o, const char *s)
{
	double v[MAX_RATES];
	int n = parse_values(s, v, MAX_RATES, rate_value);
	for (int i = 0; i < n; i++)
		o->rates[i] = (uint64_t)v[i];
	o->nrates = n > 0 ? n : 0;
	return n > 0 ? 0 : -1;
}

static int parse_cpus(struct opts *o, const char *s)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	o->cpus = s;
	if (!strcmp(s, "none")) {
		o->cpu_client = o->cpu_server = -1;
	} else if (!strcmp(s, "same")) {
		o->cpu_client = o->cpu_server = 0;
	} else if (!strcmp(s, "different")) {
		if (n < 2)
			return -1;
		o->cpu_client = 0;
		o->cpu_server = 1;
	} else if (sscanf(s, "%d,%d", &o->cpu_client, &o->cpu_server) != 2 ||
		   o->cpu_client < 0 || o->cpu_server < 0 ||
		   o->cpu_client >= n || o->cpu_server >= n) {
		return -1;
	}
	return 0;
}

/* Every name of @list (",a,b,") must be one of @n @names: a name that
 * matches nothing is an error naming the valid ones, not an empty run. */
static int check_names(const char *list, const char *opt,
		       const char *(*name)(size_t i), size_t n)
{
	for (const char *p = list + 1; *p;) {
		size_t l = strcspn(p, ",");
		bool found = l == 0;
		for (size_t i = 0; i < n && !found; i++)
			found = strlen(name(i)) == l && !strncmp(p, name(i), l);
		if (!found) {
			fprintf(stderr,
				"shmlog-bench ipc: %s: no '%.*s' in this "
				"build; the names are:\n ",
				opt, (int)l, p);
			for (size_t i = 0; i < n; i++)
				fprintf(stderr, " %s", name(i));
			fprintf(stderr, "\n");
			return -1;
		}
		p += l + (p[l] == ',');
	}
	return 0;
}

static const char *mech_name(size_t i)
{
	return transports[i]->name;
}

static const char *conv_name(size_t i)
{
	return ipc_conv_name((enum ipc_conv)i);
}

static int check_mechs(const char *list)
{
	return check_names(list, "--mech", mech_name, NTRANSPORTS);
}

static int check_convs(const char *list)
{
	return check_names(list, "--conv", conv_name, IPC_NCONV);
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
	const char *cpus = NULL, *sizes = NULL, *stages = NULL, *rates = NULL;
	long time_ms = -1;

	memset(o, 0, sizeof(*o));
	for (int k = 0; k < IPC_NCONV; k++)
		o->conv_on[k] = true;
	o->pace_ns = 50000;
	o->wait_on[0] = o->wait_on[1] = true;
	o->spin_ns = 50000;
	o->corrupt_at = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--wide")) {
			wide_tables = true;
		} else if (!strcmp(a, "--quick")) {
			o->quick = true;
			takes = false;
		} else if (!v) {
			fprintf(stderr, "shmlog-bench ipc: %s needs a value "
					"(or is unknown); see --help\n", a);
			return -1;
		} else if (!strcmp(a, "--json")) {
			o->json = v;
		} else if (!strcmp(a, "--cpus")) {
			cpus = v;
		} else if (!strcmp(a, "--mech")) {
			if (parse_list(v, o->mech_filter,
				       sizeof(o->mech_filter)))
				return -1;
		} else if (!strcmp(a, "--conv")) {
			char list[128];
			snprintf(list, sizeof(list), ",%s,", v);
			if (check_convs(list))
				return -1;
			for (int k = 0; k < IPC_NCONV; k++) {
				char key[32];
				snprintf(key, sizeof(key), ",%s,",
					 ipc_conv_name(k));
				o->conv_on[k] = strstr(list, key) != NULL;
			}
		} else if (!strcmp(a, "--sizes")) {
			sizes = v;
		} else if (!strcmp(a, "--wait")) {
			o->wait_on[0] =
			    !strcmp(v, "block") || !strcmp(v, "both");
			o->wait_on[1] =
			    !strcmp(v, "spin") || !strcmp(v, "both");
			if (!o->wait_on[0] && !o->wait_on[1]) {
				fprintf(stderr, "shmlog-bench ipc: --wait "
						"takes block, spin or both\n");
				return -1;
			}
		} else if (!strcmp(a, "--pace-us")) {
			o->pace_ns = strtoull(v, NULL, 10) * 1000u;
			if (o->pace_ns >= 1000000000u) {
				fprintf(stderr, "shmlog-bench ipc: --pace-us "
						"takes 0..999999\n");
				return -1;
			}
		} else if (!strcmp(a, "--rates")) {
			rates = v;
		} else if (!strcmp(a, "--spin-us")) {
			o->spin_ns = strtoull(v, NULL, 10) * 1000u;
		} else if (!strcmp(a, "--time-ms")) {
			time_ms = strtol(v, NULL, 10);
			if (time_ms < 1 || time_ms > 60000) {
				fprintf(stderr, "shmlog-bench ipc: --time-ms "
						"takes 1..60000\n");
				return -1;
			}
		} else if (!strcmp(a, "--stages")) {
			stages = v;
		} else if (!strcmp(a, "--reps")) {
			o->reps = (int)strtol(v, NULL, 10);
			if (o->reps < 1 || o->reps > MAX_REPS) {
				fprintf(stderr, "shmlog-bench ipc: --reps "
						"takes 1..%d\n", MAX_REPS);
				return -1;
			}
		} else if (!strcmp(a, "--corrupt-at")) {
			o->corrupt_at = strtol(v, NULL, 10);
		} else {
			fprintf(stderr, "shmlog-bench ipc: unknown option "
					"'%s'; see --help\n", a);
			return -1;
		}
		if (takes)
			i++;
	}
	if (sizes && parse_sizes(o, sizes)) {
		fprintf(stderr, "shmlog-bench ipc: bad --sizes '%s' (e.g. "
				"4,16,1K,1M; 1 B to 64 MiB)\n", sizes);
		return -1;
	}
	if (rates && parse_rates(o, rates)) {
		fprintf(stderr, "shmlog-bench ipc: bad --rates '%s' (e.g. "
				"500k,1M,5M; 1 to 100M events per second)\n",
			rates);
		return -1;
	}
	if (!rates) { /* --quick: the goal's rate only */
		size_t n = sizeof(rates_default) / sizeof(rates_default[0]);
		size_t from = o->quick ? n - 1 : 0;
		memcpy(o->rates, rates_default + from,
		       (n - from) * sizeof(rates_default[0]));
		o->nrates = (int)(n - from);
	}
	if (!sizes) {
		const size_t *s = o->quick ? sizes_quick : sizes_full;
		int n = o->quick ? (int)(sizeof(sizes_quick) / sizeof(*s))
				 : (int)(sizeof(sizes_full) / sizeof(*s));
		memcpy(o->sizes, s, (size_t)n * sizeof(*s));
		o->nsizes = n;
	}
	if (o->mech_filter[0] && check_mechs(o->mech_filter))
		return -1;
	if (!cpus)
		cpus = sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? "different"
							   : "same";
	if (parse_cpus(o, cpus)) {
		fprintf(stderr, "shmlog-bench ipc: bad --cpus '%s': "
				"different, same, none or C,S with CPUs this "
				"machine has\n", cpus);
		return -1;
	}
	if (!stages)
		stages = o->quick ? "shm" : "all";
	o->stages = strcmp(stages, "none") != 0;
	o->stages_all = !strcmp(stages, "all");
	o->stage_reps = o->quick ? 1 : 5;
	if (!o->reps)
		o->reps = o->quick ? 1 : 5;
	o->run_ns = (uint64_t)(time_ms > 0 ? time_ms : o->quick ? 30 : 100) *
		    1000000u;
	o->warm_ns = o->run_ns / 4;
	return 0;
}

/* ---- output ---- */

static const char *wait_name(enum ipc_wait w)
{
	return w == IPC_WAIT_SPIN ? "spin+block" : "block";
}


static void fmt_size(char *b, size_t n, size_t size)
{
	if (size >= 1048576 && size % 1048576 == 0)
		snprintf(b, n, "%zu MiB", size >> 20);
	else if (size >= 1024 && size % 1024 == 0)
		snprintf(b, n, "%zu KiB", size >> 10);
	else
		snprintf(b, n, "%zu B", size);
}

static void print_block_header(enum ipc_conv conv, size_t size,
			       uint64_t rate)
{
	char sz[32], rt[24];
	fmt_size(sz, sizeof(sz), size);
	bench_eng(rt, sizeof(rt), (double)rate, "");
	switch (conv) {
	case IPC_CONV_REQUEST:
		printf("\n== synchronous request: client asks, server replies "
		       "%s; latency = round trip ==\n", sz);
		break;
	case IPC_CONV_SEND:
		printf("\n== synchronous send: client sends %s, server "
		       "replies a status; latency = round trip ==\n", sz);
		break;
	case IPC_CONV_NOTIFY:
		printf("\n== asynchronous notification: %s events, no "
		       "acknowledgement, as fast as the sender\n   can; latency "
		       "= one-way delivery ==\n", sz);
		break;
	case IPC_CONV_PACED:
		printf("\n== paced notification: %s events, the sender sleeps "
		       "between them; latency =\n   one-way delivery to a "
		       "sleeping receiver ==\n", sz);
		break;
	case IPC_CONV_RATE:
		printf("\n== notification at %s/s: %s events, the sender "
		       "busy-waits between them;\n   latency = one-way "
		       "delivery (Msgs/s below the rate: the sender was held "
		       "up) ==\n", rt, sz);
		break;
	case IPC_NCONV:
		break;
	}
	printf("%-12s %-10s %7s %4s %8s %8s %8s %8s %8s %9s", "mechanism",
	       "wait", "Msgs/s", "+-%", "p50", "p99", "p99.9", "CPU cli",
	       "CPU srv", "csw c+s");
	if (wide_tables)
		printf(" %6s %10s %8s %8s %11s", "secs", "payload", "p90", "max",
		       "minflt c+s");
	printf("%s\n", ipc_conv_oneway(conv) ? "    lost" : "");
}

static const char *row_wait(const struct row *r)
{
	if (r->wait == IPC_WAIT_BLOCK && r->wait_note)
		return "block*";
	return wait_name(r->wait);
}

static void print_row(const struct row *r)
{
	if (r->status) {
		/* a long reason goes on a line of its own: 100 columns */
		bool own_line = strlen(r->why) > 70;
		printf("%-12s %-10s  n/a:%s%s\n", r->mech, row_wait(r),
		       own_line ? "\n    " : " ", r->why);
		return;
	}
	char l[8][24];
	char spread[16] = "-";
	if (r->reps > 1 && r->mps > 0)
		snprintf(spread, sizeof(spread), "%.0f",
			 50.0 * (r->mps_max - r->mps_min) / r->mps);
	printf("%-12s %-10s %7s %4s %8s %8s %8s %8s %8s %4.2f+%4.2f",
	       r->mech, row_wait(r), bench_eng(l[0], 24, r->mps, ""), spread,
	       bench_dur(l[1], 24, (double)r->p50),
	       bench_dur(l[2], 24, (double)r->p99),
	       bench_dur(l[3], 24, (double)r->p999),
	       bench_dur(l[4], 24, r->cpu_cli), bench_dur(l[5], 24, r->cpu_srv),
	       r->csw_cli, r->csw_srv);
	if (wide_tables)
		printf(" %6.2f %10s %8s %8s %5.2f+%5.2f", r->secs,
		       bench_eng(l[6], 24, r->kps * 1024, "B/s"),
		       bench_dur(l[7], 24, (double)r->p90),
		       bench_dur(l[0], 24, (double)r->max), r->flt_cli,
		       r->flt_srv);
	if (ipc_conv_oneway(r->conv))
		printf(" %7s", bench_eng(l[6], 24, (double)r->lost, ""));
	printf("\n");
	if (r->wait_note && r->wait == IPC_WAIT_BLOCK)
		printf("%-13s * %s\n", "", r->wait_note);
	fflush(stdout);
}

static double per(double v, uint64_t n)
{
	return n ? v / (double)n : NAN;
}

static struct row *row_add(void)
{
	if (nrows == caprows) {
		size_t n = caprows ? 2 * caprows : 256;
		struct row *p = realloc(rows, n * sizeof(*p));
		if (!p) {
			fprintf(stderr, "shmlog-bench ipc: out of memory\n");
			exit(1);
		}
		rows = p;
		caprows = n;
	}
	memset(&rows[nrows], 0, sizeof(rows[0]));
	return &rows[nrows++];
}

static void row_fill(struct row *r, const struct ipc_run_cfg *cfg,
		     const struct ipc_result *res)
{
	r->mech = cfg->t->name;
	r->wait_note = cfg->t->caps & IPC_CAP_POLLS_FIRST ? cfg->t->wait_note
							    : NULL;
	r->conv = cfg->conv;
	r->size = cfg->size;
	r->rate = cfg->conv == IPC_CONV_RATE ? cfg->rate_per_s : 0;
	r->wait = cfg->wait;
	r->instrumented = cfg->stages;
	r->status = res->status;
	snprintf(r->why, sizeof(r->why), "%s", res->why);
	if (res->status)
		return;
	r->msgs = res->msgs;
	r->sent = res->sent;
	r->lost = res->lost;
	r->secs = res->secs;
	r->mps = res->msgs_per_s;
	r->kps = res->kib_per_s;
	r->p50 = bench_hist_quantile(&res->lat, 0.5);
	r->p90 = bench_hist_quantile(&res->lat, 0.9);
	r->p99 = bench_hist_quantile(&res->lat, 0.99);
	r->p999 = bench_hist_quantile(&res->lat, 0.999);
	r->max = res->lat.count ? res->lat.max : 0;
	r->mean = bench_hist_mean(&res->lat);
	r->cpu_cli = per((res->cli.user_s + res->cli.sys_s) * 1e9, r->sent);
	r->cpu_srv = per((res->srv.user_s + res->srv.sys_s) * 1e9, r->msgs);
	r->csw_cli = per((double)(res->cli.nvcsw + res->cli.nivcsw), r->sent);
	r->csw_srv = per((double)(res->srv.nvcsw + res->srv.nivcsw), r->msgs);
	r->flt_cli = per((double)res->cli.minflt, r->sent);
	r->flt_srv = per((double)res->srv.minflt, r->msgs);
	r->steal_ms = res->steal_ms;
	r->have_stages = res->have_stages;
	for (int k = 0; k < 3 && res->have_stages; k++) {
		r->st_p50[k] = bench_hist_quantile(&res->stage[k], 0.5);
		r->st_p99[k] = bench_hist_quantile(&res->stage[k], 0.99);
	}
}

/* ---- the matrix ---- */

static struct ipc_result result; /* large: histograms */

/* Run one point; a verification failure ends the benchmark here. */
static struct row *run_once(const struct opts *o,
			    const struct ipc_transport *t, enum ipc_conv conv,
			    size_t size, uint64_t rate, enum ipc_wait wait,
			    enum ipc_stamps stages, const char *series)
{
	struct ipc_run_cfg cfg = {
		.t = t,
		.conv = conv,
		.size = size,
		.wait = wait,
		.spin_ns = o->spin_ns,
		.cpu_client = o->cpu_client,
		.cpu_server = o->cpu_server,
		.warm_ns = o->warm_ns,
		.run_ns = o->run_ns,
		.pace_ns = o->pace_ns,
		.rate_per_s = rate,
		.stages = stages,
		.timeout_ns = 60ull * 1000000000u,
		.corrupt_at = o->corrupt_at,
	};
	int r = ipc_run(&cfg, &result);
	struct row *row = row_add();
	row_fill(row, &cfg, &result);
	row->series = series;
	row->reps = 1;
	row->mps_min = row->mps_max = row->mps;
	if (r == -EBADMSG) {
		fprintf(stderr,
			"shmlog-bench ipc: FAILED: %s %s %zu B (%s): %s\n"
			"A frame was lost, reordered or corrupted, or a side "
			"died: this is a bug in the mechanism's transport or "
			"in the system, not a slow result.\n",
			t->name, ipc_conv_name(conv), size, wait_name(wait),
			result.why);
		exit(1);
	}
	return row;
}

static int cmp_row_mps(const void *a, const void *b)
{
	double x = ((const struct row *)a)->mps, y = ((const struct row *)b)->mps;
	return (x > y) - (x < y);
}

/*
 * One point of the matrix, run o->reps times: the machine is often shared,
 * and a burst of someone else's work spoils one short run, not the median
 * of three. The run with the median Msgs/s is kept, whole (its latencies
 * and costs belong together); the spread of Msgs/s over the repetitions is
 * kept next to it to show how steady the machine was.
 */
static struct row *run_point(const struct opts *o,
			     const struct ipc_transport *t, enum ipc_conv conv,
			     size_t size, uint64_t rate, enum ipc_wait wait,
			     enum ipc_stamps stages, const char *series)
{
	struct row rep[MAX_REPS];
	int n = 0;

	for (int i = 0; i < o->reps; i++) {
		struct row *r = run_once(o, t, conv, size, rate, wait, stages,
					 series);
		rep[n] = *r;
		nrows--; /* keep only the chosen one below */
		if (r->status) /* unsupported: no point repeating */
			return &rows[nrows++];
		n++;
	}
	qsort(rep, (size_t)n, sizeof(rep[0]), cmp_row_mps);
	struct row *keep = row_add();
	*keep = rep[n / 2];
	keep->reps = n;
	keep->mps_min = rep[0].mps;
	keep->mps_max = rep[n - 1].mps;
	return keep;
}

static bool wants_stages(const struct opts *o, const struct ipc_transport *t)
{
	return o->stages && (t->caps & IPC_CAP_SYNC) &&
	       (o->stages_all || (t->caps & IPC_CAP_SHM));
}

static void run_conversation(const struct opts *o, enum ipc_conv conv,
			     size_t size, uint64_t rate)
{
	print_block_header(conv, size, rate);
	for (size_t i = 0; i < NTRANSPORTS; i++) {
		const struct ipc_transport *t = transports[i];
		unsigned need = ipc_conv_oneway(conv) ? IPC_CAP_NOTIFY
							: IPC_CAP_SYNC;
		if (!(t->caps & need) || !mech_selected(o, t->name))
			continue;
		for (int w = 0; w < 2; w++) {
			if (!o->wait_on[w] ||
			    (w == IPC_WAIT_SPIN && !(t->caps & IPC_CAP_SPIN)))
				continue;
			print_row(run_point(o, t, conv, size, rate, w,
					    IPC_STAMPS_NONE, "matrix"));
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static uint64_t median_u64(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/*
 * The binder study's table: where the time of a round trip goes, and what
 * the stamps themselves cost, kept out of band and carried in band (in the
 * message, as that study did). Plain, out-of-band and in-band runs
 * alternate, back to back, stage_reps times; each cost is the difference
 * of the medians of their p50s, so slow drift of the machine cancels out.
 */
static void stage_one(const struct opts *o, const struct ipc_transport *t,
		      enum ipc_wait w, size_t size)
{
	uint64_t plain[8], instr[8], inb[8], stage[3][8];
	struct row p, r, b; /* copies: run_once() may move the rows array */
	int n = 0;

	for (int i = 0; i < o->stage_reps && i < 8; i++) {
		p = *run_once(o, t, IPC_CONV_REQUEST, size, 0, w, IPC_STAMPS_NONE,
			      "stages");
		r = *run_once(o, t, IPC_CONV_REQUEST, size, 0, w, IPC_STAMPS_OOB,
			      "stages");
		b = *run_once(o, t, IPC_CONV_REQUEST, size, 0, w,
			      IPC_STAMPS_INBAND, "stages");
		if (p.status || r.status || b.status || !r.have_stages) {
			printf("%-13s %-10s   n/a: %s\n", t->name,
			       wait_name(w),
			       p.status ? p.why : r.status ? r.why : b.why);
			return;
		}
		plain[n] = p.p50;
		inb[n] = b.p50;
		for (int k = 0; k < 3; k++)
			stage[k][n] = r.st_p50[k];
		instr[n++] = r.p50;
	}
	if (!n)
		return;
	/* Medians over the repetitions, stage by stage, like the round
	 * trips: one disturbed run does not make the table. */
	uint64_t mp = median_u64(plain, n), mi = median_u64(instr, n),
		 mb = median_u64(inb, n);
	uint64_t ms[3];
	for (int k = 0; k < 3; k++)
		ms[k] = median_u64(stage[k], n);
	printf("%-13s %-10s %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f %+6.2f "
	       "%+6.2f\n",
	       t->name, wait_name(w), (double)ms[0] / 1e3,
	       (double)ms[1] / 1e3, (double)ms[2] / 1e3, (double)mp / 1e3,
	       (double)mi / 1e3, (double)mb / 1e3,
	       ((double)mi - (double)mp) / 1e3,
	       ((double)mb - (double)mp) / 1e3);
	fflush(stdout);
}

static void run_stages(const struct opts *o, size_t size)
{
	char sz[32];
	fmt_size(sz, sizeof(sz), size);
	printf("\n== stage timestamps: synchronous request, reply %s; in us: "
	       "each stage from the previous\nstamp (out of band); round "
	       "trips plain, with stamps out of band (oob) and carried in\n"
	       "the messages (in-band, as the binder study did); each the "
	       "median of %d p50s ==\n", sz, o->stage_reps);
	printf("%-13s %-10s %7s %7s %7s | %7s %7s %7s %6s %6s\n", "mechanism",
	       "wait", "S_RECV", "S_REPLY", "C_RECV", "plain", "oob",
	       "in-band", "+oob", "+inb");
	for (size_t i = 0; i < NTRANSPORTS; i++) {
		const struct ipc_transport *t = transports[i];
		if (!wants_stages(o, t) || !mech_selected(o, t->name))
			continue;
		for (int w = 0; w < 2; w++) {
			if (!o->wait_on[w] ||
			    (w == IPC_WAIT_SPIN && !(t->caps & IPC_CAP_SPIN)))
				continue;
			stage_one(o, t, w, size);
		}
	}
}

/* The machine is often shared: say how busy it was. */
static double loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static double load_start, load_end, steal_start, steal_end;

static void print_conditions(const struct opts *o,
			     const struct bench_machine *m)
{
	printf("# shmlog-bench ipc%s\n", o->quick ? " --quick" : "");
	bench_machine_print(stdout, m, "# ");
	printf("# cpus: %s (client on %d, server on %d); spin-then-block "
	       "spins %.0f us;\n# %.0f ms measured per run after %.0f ms "
	       "warm-up; each row is the median (by Msgs/s) of %d run%s\n",
	       o->cpus, o->cpu_client, o->cpu_server, (double)o->spin_ns / 1e3,
	       (double)o->run_ns / 1e6, (double)o->warm_ns / 1e6, o->reps,
	       o->reps > 1 ? "s" : "");
	load_start = loadavg();
	steal_start = ipc_steal_ms();
	printf("# load average (1 min) at start: %.2f; other processes "
	       "running on these CPUs\n# distort every figure\n",
	       load_start);
	printf("# clock read: %.1f ns (two per round trip are inside every "
	       "latency)\n", bench_timer_cost_ns());

	/* The checksum both sides compute on every frame, outside the
	 * latency interval but inside Msgs/s. */
	static const size_t probe[] = {4, 1024, 1048576};
	printf("# frame = %zu B header (seq, len, op, checksum, timestamp) + "
	       "payload;\n# checksum cost, each side, outside the latency:",
	       IPC_HDR);
	for (size_t i = 0; i < 3; i++) {
		size_t n = IPC_HDR + probe[i];
		unsigned char *b = calloc(1, n);
		if (!b)
			break;
		int reps = probe[i] > 65536 ? 20 : 20000;
		uint32_t x = 0;
		uint64_t t0 = bench_now_ns();
		for (int k = 0; k < reps; k++) {
			b[0] = (unsigned char)k;
			x += ipc_frame_sum(b, n);
		}
		uint64_t t1 = bench_now_ns();
		char sz[32], d[24];
		fmt_size(sz, sizeof(sz), probe[i]);
		checksum_ns[i] = (double)(t1 - t0) / reps + (x & 0);
		printf(" %s %s%s", sz, bench_dur(d, sizeof(d), checksum_ns[i]),
		       i < 2 ? "," : "\n");
		free(b);
	}
	printf("# columns: Msgs/s of payload (the study's unit); +-%% = half "
	       "the spread of Msgs/s over\n# the repetitions, in %% of the "
	       "median; latency percentiles; CPU time per message,\n# client "
	       "and server; csw = context switches per message, client + "
	       "server; --wide adds\n# the run's seconds, payload bytes/s, "
	       "p90, max and minor faults per message\n");
	printf("# wait: 'block' sleeps in the kernel; 'spin+block' polls for "
	       "the spin budget first\n# (burns a CPU: never compare it with "
	       "a blocking row as if they were alike)\n");
}

/* ---- JSON ---- */

static void json_row(struct jsonw *j, const struct row *r)
{
	jsonw_begin_obj(j);
	jsonw_str(j, "mechanism", r->mech);
	jsonw_str(j, "conversation", ipc_conv_name(r->conv));
	jsonw_int(j, "size", (long long)r->size);
	if (r->conv == IPC_CONV_RATE)
		jsonw_num(j, "rate_per_s", (double)r->rate);
	jsonw_str(j, "wait", r->wait == IPC_WAIT_SPIN ? "spin" : "block");
	if (r->wait_note)
		jsonw_str(j, "wait_note", r->wait_note);
	jsonw_int(j, "instrumented", r->instrumented != IPC_STAMPS_NONE);
	jsonw_str(j, "stamps", r->instrumented == IPC_STAMPS_INBAND ? "in-band"
				    : r->instrumented == IPC_STAMPS_OOB  ? "out-of-band"
									  : "none");
	jsonw_str(j, "series", r->series);
	jsonw_int(j, "supported", r->status == 0);
	if (r->status) {
		jsonw_str(j, "why", r->why);
		jsonw_num(j, "msgs_per_s", NAN);
		jsonw_num(j, "kib_per_s", NAN);
		jsonw_num(j, "rtt_p50_ns", NAN);
		jsonw_num(j, "rtt_p99_ns", NAN);
		jsonw_end_obj(j);
		return;
	}
	jsonw_int(j, "reps", r->reps);
	jsonw_num(j, "msgs_per_s_min", r->mps_min);
	jsonw_num(j, "msgs_per_s_max", r->mps_max);
	jsonw_int(j, "msgs", (long long)r->msgs);
	jsonw_int(j, "sent", (long long)r->sent);
	jsonw_num(j, "secs", r->secs);
	jsonw_num(j, "msgs_per_s", r->mps);
	jsonw_num(j, "kib_per_s", r->kps);
	jsonw_str(j, "latency", ipc_conv_oneway(r->conv)
					     ? "one-way delivery"
					     : "round trip");
	jsonw_int(j, "rtt_p50_ns", (long long)r->p50);
	jsonw_int(j, "rtt_p90_ns", (long long)r->p90);
	jsonw_int(j, "rtt_p99_ns", (long long)r->p99);
	jsonw_int(j, "rtt_p999_ns", (long long)r->p999);
	jsonw_int(j, "rtt_max_ns", (long long)r->max);
	jsonw_num(j, "rtt_mean_ns", r->mean);
	jsonw_num(j, "client_cpu_ns_per_msg", r->cpu_cli);
	jsonw_num(j, "server_cpu_ns_per_msg", r->cpu_srv);
	jsonw_num(j, "client_csw_per_msg", r->csw_cli);
	jsonw_num(j, "server_csw_per_msg", r->csw_srv);
	jsonw_num(j, "client_minflt_per_msg", r->flt_cli);
	jsonw_num(j, "server_minflt_per_msg", r->flt_srv);
	jsonw_int(j, "lost", (long long)r->lost);
	jsonw_num(j, "steal_ms", r->steal_ms);
	if (r->have_stages) {
		static const char *const name[3] = {
			"c_send_to_s_recv", "s_recv_to_s_reply",
			"s_reply_to_c_recv"};
		jsonw_key(j, "stages");
		jsonw_begin_obj(j);
		for (int k = 0; k < 3; k++) {
			char key[64];
			snprintf(key, sizeof(key), "%s_p50_ns", name[k]);
			jsonw_int(j, key, (long long)r->st_p50[k]);
			snprintf(key, sizeof(key), "%s_p99_ns", name[k]);
			jsonw_int(j, key, (long long)r->st_p99[k]);
		}
		jsonw_end_obj(j);
	}
	jsonw_end_obj(j);
}

static int write_json(const struct opts *o, const struct bench_machine *m)
{
	struct jsonw j;
	if (!o->json)
		return 0;
	if (!bench_json_open(&j, o->json, "ipc", m)) {
		fprintf(stderr, "shmlog-bench ipc: cannot write %s: %s\n",
			o->json, strerror(errno));
		return -1;
	}
	jsonw_key(&j, "conditions");
	jsonw_begin_obj(&j);
	jsonw_int(&j, "quick", o->quick);
	jsonw_str(&j, "cpus", o->cpus);
	jsonw_int(&j, "cpu_client", o->cpu_client);
	jsonw_int(&j, "cpu_server", o->cpu_server);
	jsonw_num(&j, "spin_ns", (double)o->spin_ns);
	jsonw_num(&j, "run_ns", (double)o->run_ns);
	jsonw_num(&j, "warm_ns", (double)o->warm_ns);
	jsonw_num(&j, "pace_ns", (double)o->pace_ns);
	jsonw_key(&j, "rates_per_s");
	jsonw_begin_arr(&j);
	for (int k = 0; k < o->nrates; k++)
		jsonw_num(&j, NULL, (double)o->rates[k]);
	jsonw_end_arr(&j);
	jsonw_num(&j, "loadavg_start", load_start);
	jsonw_num(&j, "loadavg_end", load_end);
	jsonw_num(&j, "steal_ms", steal_end - steal_start);
	jsonw_int(&j, "frame_header_bytes", (long long)IPC_HDR);
	jsonw_key(&j, "checksum_ns");
	jsonw_begin_obj(&j);
	jsonw_num(&j, "4 B", checksum_ns[0]);
	jsonw_num(&j, "1 KiB", checksum_ns[1]);
	jsonw_num(&j, "1 MiB", checksum_ns[2]);
	jsonw_end_obj(&j);
	jsonw_int(&j, "reps", o->reps);
	jsonw_end_obj(&j);
	jsonw_key(&j, "results");
	jsonw_begin_arr(&j);
	for (size_t i = 0; i < nrows; i++)
		json_row(&j, &rows[i]);
	jsonw_end_arr(&j);
	int r = bench_json_close(&j);
	if (r)
		fprintf(stderr, "shmlog-bench ipc: writing %s failed: %s\n",
			o->json, strerror(-r));
	else
		printf("\n# results written to %s\n", o->json);
	return r;
}

int bench_ipc_main(int argc, char **argv)
{
	struct opts o;
	struct bench_machine m;

	if (parse_opts(&o, argc, argv))
		return 2;
	bench_machine_get(&m);
	print_conditions(&o, &m);
	uint64_t t0 = bench_now_ns();

	for (int conv = 0; conv < IPC_NCONV; conv++) {
		if (!o.conv_on[conv])
			continue;
		if (conv == IPC_CONV_RATE) {
			for (int k = 0; k < o.nrates; k++)
				run_conversation(&o, conv, 4, o.rates[k]);
			continue;
		}
		if (ipc_conv_oneway(conv)) {
			run_conversation(&o, conv, 4, 0);
			continue;
		}
		for (int s = 0; s < o.nsizes; s++)
			run_conversation(&o, conv, o.sizes[s], 0);
	}
	if (o.stages && o.conv_on[IPC_CONV_REQUEST])
		run_stages(&o, o.sizes[0]);

	load_end = loadavg();
	steal_end = ipc_steal_ms();
	double wall = (double)(bench_now_ns() - t0) / 1e9;
	printf("\n# %zu results in %.1f s; load average (1 min) at end: "
	       "%.2f;\n# the hypervisor stole %.2f s of CPU time meanwhile\n",
	       nrows, wall, load_end, (steal_end - steal_start) / 1e3);
	int r = write_json(&o, &m);
	free(rows);
	return r ? 1 : 0;
}
