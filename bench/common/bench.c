/* SPDX-License-Identifier: MIT */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

/* The lowest of 15 means: the timer's cost at full speed. The benchmarks
 * wait for each CPU to be at full speed before a timed run, and a host
 * that slows the CPU for a few ms (a neighbour on its core) while the
 * cost is taken would raise every figure less it: a median of 15 such
 * means once came out above a quick run's median call, timer included,
 * and left the call's own time below zero. */
double bench_timer_cost_ns(void)
{
	double v[15], best;
	for (int r = 0; r < 15; r++) {
		enum { N = 20000 };
		uint64_t t0 = bench_now_ns(), x = 0;
		for (int i = 0; i < N; i++)
			x += bench_now_ns();
		uint64_t t1 = bench_now_ns();
		v[r] = (double)(t1 - t0) / N;
		if (x == 1)
			v[r] += 0; /* keep x alive */
	}
	best = v[0];
	for (int r = 1; r < 15; r++)
		best = v[r] < best ? v[r] : best;
	return best;
}

void bench_hist_init(struct bench_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static unsigned hist_index(uint64_t v)
{
	if (v < BENCH_HIST_SUB)
		return (unsigned)v;
	unsigned p = 63u - (unsigned)__builtin_clzll(v); /* >= 6 */
	unsigned sub = (unsigned)(v >> (p - 6)) & (BENCH_HIST_SUB - 1);
	unsigned idx = (p - 5) * BENCH_HIST_SUB + sub;
	return idx < BENCH_HIST_POW * BENCH_HIST_SUB
		       ? idx
		       : BENCH_HIST_POW * BENCH_HIST_SUB - 1;
}

/* Upper bound of a bucket's range: what a quantile reports. */
static uint64_t hist_value(unsigned idx)
{
	if (idx < BENCH_HIST_SUB)
		return idx;
	unsigned p = idx / BENCH_HIST_SUB + 5, sub = idx % BENCH_HIST_SUB;
	uint64_t lo = ((uint64_t)(BENCH_HIST_SUB + sub)) << (p - 6);
	return lo + ((1ull << (p - 6)) - 1) / 2; /* bucket midpoint */
}

void bench_hist_add(struct bench_hist *h, uint64_t ns)
{
	h->bucket[hist_index(ns)]++;
	h->count++;
	h->sum += (double)ns;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
}

void bench_hist_merge(struct bench_hist *into, const struct bench_hist *from)
{
	for (unsigned i = 0; i < BENCH_HIST_POW * BENCH_HIST_SUB; i++)
		into->bucket[i] += from->bucket[i];
	into->count += from->count;
	into->sum += from->sum;
	if (from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
}

uint64_t bench_hist_quantile(const struct bench_hist *h, double q)
{
	if (!h->count)
		return 0;
	if (q >= 1.0)
		return h->max;
	uint64_t want = (uint64_t)ceil(q * (double)h->count), seen = 0;
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < BENCH_HIST_POW * BENCH_HIST_SUB; i++) {
		seen += h->bucket[i];
		if (seen >= want) {
			uint64_t v = hist_value(i);
			if (v < h->min)
				v = h->min;
			return v > h->max ? h->max : v;
		}
	}
	return h->max;
}

double bench_hist_mean(const struct bench_hist *h)
{
	return h->count ? h->sum / (double)h->count : 0.0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	if (n <= 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

void bench_usage_now(struct bench_usage *u, int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	u->wall_ns = bench_now_ns();
	u->user_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	u->sys_s = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	u->minflt = ru.ru_minflt;
	u->majflt = ru.ru_majflt;
	u->nvcsw = ru.ru_nvcsw;
	u->nivcsw = ru.ru_nivcsw;
}

struct bench_usage bench_usage_diff(const struct bench_usage *a,
				   const struct bench_usage *b)
{
	struct bench_usage d = {
		.wall_ns = b->wall_ns - a->wall_ns,
		.user_s = b->user_s - a->user_s,
		.sys_s = b->sys_s - a->sys_s,
		.minflt = b->minflt - a->minflt,
		.majflt = b->majflt - a->majflt,
		.nvcsw = b->nvcsw - a->nvcsw,
		.nivcsw = b->nivcsw - a->nivcsw,
	};
	return d;
}

long bench_strace_count(char *const argv[])
{
	char out[] = "/tmp/shmlog-bench-strace-XXXXXX";
	int fd = mkstemp(out);
	if (fd < 0)
		return -1;
	close(fd);
	pid_t pid = fork();
	if (pid < 0) {
		unlink(out);
		return -1;
	}
	if (pid == 0) {
		int n = 0;
		while (argv[n])
			n++;
		char **a = calloc((size_t)n + 8, sizeof(*a));
		if (!a)
			_exit(127);
		int k = 0;
		a[k++] = "strace";
		a[k++] = "-f";
		a[k++] = "-c";
		a[k++] = "-o";
		a[k++] = out;
		a[k++] = "--";
		for (int i = 0; i < n; i++)
			a[k++] = argv[i];
		a[k] = NULL;
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execvp("strace", a);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	long total = -1;
	FILE *f = fopen(out, "r");
	if (f && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		char line[512];
		while (fgets(line, sizeof(line), f)) {
			/* "100.00    0.000123   1   1234   5 total" */
			if (strstr(line, " total")) {
				double pct, secs;
				long usecs, calls;
				if (sscanf(line, "%lf %lf %ld %ld", &pct, &secs,
					   &usecs, &calls) == 4)
					total = calls;
				else if (sscanf(line, "%lf %lf %ld", &pct,
						&secs, &calls) == 3)
					total = calls;
			}
		}
	}
	if (f)
		fclose(f);
	unlink(out);
	return total;
}

static void read_first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The CPU flag "hypervisor" is set in every guest; kvm-clock among the
 * clock sources names KVM. */
static void detect_hypervisor(struct bench_machine *m)
{
	char line[4096], cs[256] = "";
	bool guest = false;
	FILE *f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5)) {
			guest = strstr(line, " hypervisor") != NULL;
			break;
		}
	if (f)
		fclose(f);
	if (!guest)
		return;
	read_first_line("/sys/devices/system/clocksource/clocksource0/"
			"available_clocksource",
			cs, sizeof(cs));
	snprintf(m->hypervisor, sizeof(m->hypervisor), "%s",
		 strstr(cs, "kvm-clock") ? "a KVM guest" : "a virtual machine");
}

void bench_machine_get(struct bench_machine *m)
{
	memset(m, 0, sizeof(*m));
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[512];
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "model name", 10)) {
				char *c = strchr(line, ':');
				if (c) {
					c += 2;
					c[strcspn(c, "\n")] = '\0';
					snprintf(m->cpu_model,
						 sizeof(m->cpu_model), "%s", c);
				}
				break;
			}
		}
		fclose(f);
	}
	m->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
	struct utsname u;
	if (uname(&u) == 0) {
		snprintf(m->kernel, sizeof(m->kernel), "%s %s", u.sysname,
			 u.release);
		snprintf(m->hostname, sizeof(m->hostname), "%s", u.nodename);
	}
	read_first_line(
		"/sys/devices/system/cpu/cpu0/../clocksource/clocksource0/"
		"current_clocksource",
		m->clocksource, sizeof(m->clocksource));
	if (!m->clocksource[0])
		read_first_line("/sys/devices/system/clocksource/clocksource0/"
				"current_clocksource",
				m->clocksource, sizeof(m->clocksource));
	detect_hypervisor(m);
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	FILE *g = popen("git rev-parse --short=12 HEAD 2>/dev/null", "r");
	if (g) {
		if (fgets(m->git_commit, sizeof(m->git_commit), g))
			m->git_commit[strcspn(m->git_commit, "\n")] = '\0';
		pclose(g);
	}
	if (!m->git_commit[0])
		snprintf(m->git_commit, sizeof(m->git_commit), "unknown");
}

void bench_machine_print(FILE *f, const struct bench_machine *m,
			 const char *prefix)
{
	fprintf(f, "%smachine: %s, %d %s, %s, clocksource %s%s%s\n", prefix,
		m->cpu_model, m->cores, m->hypervisor[0] ? "vCPUs" : "cores",
		m->kernel, m->clocksource, m->hypervisor[0] ? ", " : "",
		m->hypervisor);
	fprintf(f, "%sdate: %s, git commit %s\n", prefix, m->date,
		m->git_commit);
}

bool bench_json_open(struct jsonw *j, const char *path, const char *bench,
		     const struct bench_machine *m)
{
	FILE *f = path ? fopen(path, "w") : NULL;
	jsonw_init(j, f);
	if (!f)
		return false;
	jsonw_begin_obj(j);
	jsonw_str(j, "bench", bench);
	jsonw_key(j, "machine");
	jsonw_begin_obj(j);
	jsonw_str(j, "cpu_model", m->cpu_model);
	jsonw_int(j, "cores", m->cores);
	jsonw_str(j, "kernel", m->kernel);
	jsonw_str(j, "clocksource", m->clocksource);
	jsonw_str(j, "date", m->date);
	jsonw_str(j, "git_commit", m->git_commit);
	jsonw_str(j, "hostname", m->hostname);
	if (m->hypervisor[0])
		jsonw_str(j, "hypervisor", m->hypervisor);
	jsonw_end_obj(j);
	return true;
}

int bench_json_close(struct jsonw *j)
{
	if (!j->f)
		return 0;
	jsonw_end_obj(j);
	fputc('\n', j->f);
	int err = jsonw_status(j);
	if (fclose(j->f) != 0 && !err)
		err = -errno;
	j->f = NULL;
	return err;
}

int bench_pin_cpu(int cpu)
{
	if (cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

long long bench_parse_size(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	return *end ? -1 : v;
}

const char *bench_eng(char *buf, size_t len, double v, const char *unit)
{
	/* strings, not characters of one: GCC 12's printf checker crashes
	 * at -O0 -Wall on a "%.1s" of &pre[p] */
	static const char *const pre[] = {"", "k", "M", "G", "T", "P"};
	int p = 0;
	if (!(v >= 0)) {
		snprintf(buf, len, "n/a");
		return buf;
	}
	while (v >= 999.5 && p < 5)
		v /= 1000, p++;
	int digits = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
	if (p == 0 && v == (double)(long long)v)
		digits = 0; /* counts below 1000 read as integers */
	snprintf(buf, len, "%.*f%s%s%s", digits, v,
		 p || unit[0] ? " " : "", pre[p], unit);
	return buf;
}

const char *bench_dur(char *buf, size_t len, double ns)
{
	static const struct {
		double div;
		const char *unit;
	} units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
	if (!(ns >= 0)) {
		snprintf(buf, len, "n/a");
		return buf;
	}
	if (ns == 0) {
		snprintf(buf, len, "0");
		return buf;
	}
	size_t i = 0;
	while (i + 1 < sizeof(units) / sizeof(units[0]) &&
	       ns < units[i].div * 0.9995)
		i++;
	double v = ns / units[i].div;
	int digits = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
	if (i + 1 == sizeof(units) / sizeof(units[0]) && v >= 9.995)
		digits = 0; /* whole nanoseconds are as fine as it gets */
	snprintf(buf, len, "%.*f %s", digits, v, units[i].unit);
	return buf;
}
