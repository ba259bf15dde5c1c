/* SPDX-License-Identifier: MIT */
/*
 * `shmlog forward`: what it is told (the command line, into struct
 * forwarder) and what it tells (the status on SIGUSR1 and at the end,
 * records a connection may have lost). Every error says what was wrong
 * and what to do.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "forwarder.h"

/* Records this run's readers skipped because `shmlog clear` hid them
 * (the reader's own count; some may have been delivered before). */
static uint64_t hidden_by_clear(const struct forwarder *f)
{
	uint64_t n = 0;
	for (size_t i = 0; i < f->nsrc; i++) {
		const struct source *s = &f->src[i];
		for (unsigned l = 0; s->rd && l < s->lanes; l++) {
			struct shmlog_lane_stats ls;
			if (!shmlog_reader_lane_stats(s->rd, l, &ls))
				n += ls.skipped;
		}
	}
	return n;
}

void forward_print_status(const struct forwarder *f, const char *when)
{
	const struct stats *s = &f->st;
	char unacked[256] = "";
	if (f->sink.kind == SINK_OTLP && f->sink.rejected)
		snprintf(unacked, sizeof(unacked),
			 " (of which the receiver said it rejected %" PRIu64
			 ")",
			 f->sink.rejected);
	if (sink_unacknowledged(&f->sink))
		snprintf(unacked, sizeof(unacked),
			 " (written to the socket: its receiver acknowledges "
			 "nothing; up to %" PRIu64 " of them may have been "
			 "lost when connections broke)",
			 s->at_risk);
	fprintf(stderr,
		"shmlog forward: %s: %" PRIu64 " records delivered to %s%s in "
		"%" PRIu64 " batches; %" PRIu64 " lost (%" PRIu64
		" overwritten before they were read, %" PRIu64 " torn); %" PRIu64
		" hidden by a clear; %" PRIu64 " filtered out; %" PRIu64
		" failed deliveries, %" PRIu64 " reconnects%s%s\n",
		when, s->delivered, f->url, unacked, s->batches,
		s->lost_overwritten + s->lost_torn, s->lost_overwritten,
		s->lost_torn, hidden_by_clear(f), s->filtered, s->failures,
		s->reconnects, f->cursor_file ? "; cursor in " : "",
		f->cursor_file ? f->cursor_file : "");
}

/* A connection without acknowledgements ended: count and say what it may
 * have lost. */
void forward_note_at_risk(struct forwarder *f)
{
	uint64_t n = sink_take_at_risk(&f->sink);
	if (!n)
		return;
	f->st.at_risk += n;
	fprintf(stderr,
		"shmlog forward: %s: the connection ended with up to %" PRIu64
		" records sent that its receiver may not have read; they "
		"are not sent again (no acknowledgement says which): use "
		"relp:// where none may be lost\n",
		f->url, n);
}

/* ---- the command ---- */

static int usage(FILE *out)
{
	fprintf(out,
		"usage: shmlog forward [-b NAME]... --to URL [--cursor-file "
		"FILE] [--dump]\n"
		"                      [--batch N] [--timeout SEC] "
		"[--max-backoff SEC]\n"
		"                      [--give-up SEC] [--facility N] "
		"[--linger MS]\n"
		"                      [--service NAME] [FILTERSPEC...]\n"
		"       shmlog forward --archive DIR [-f [-b NAME]...] "
		"--to URL [...]\n"
		"Ship every record of the buffers to URL, resuming after the "
		"last delivered one:\n"
		"  syslog+tcp://HOST:PORT   RFC 5424, octet-counted (rsyslog "
		"imtcp/imptcp)\n"
		"  syslog+unix:///PATH      the same over a Unix stream socket "
		"(imptcp path=)\n"
		"  relp://HOST:PORT         RELP: each record acknowledged "
		"(rsyslog imrelp)\n"
		"  journal-export:[FILE]    systemd Journal Export Format "
		"(systemd-journal-remote)\n"
		"  jsonl:[FILE]             JSON lines, as `shmlog cat -v "
		"json`; jsonl+unix:///PATH\n"
		"  otlp://HOST:PORT[/PATH]  OpenTelemetry logs, OTLP/HTTP "
		"protobuf (POST /v1/logs)\n"
		"  otlp+json://HOST:PORT[/PATH]  the same in JSON; either "
		"takes ?compression=gzip;\n"
		"                           --service NAME: service.name "
		"(default shmlog)\n"
		"      --archive DIR        replay an archive (`shmlog archive "
		"-o DIR`) instead,\n"
		"                           and what is added to it\n"
		"  -f, --follow             with --archive: then the buffers, "
		"from where it ends\n"
		"--cursor-file FILE keeps the position across restarts; "
		"--dump stops\n"
		"when all is sent, or exits 1 after --give-up SEC (60) "
		"without a delivery.\n"
		"syslog+tcp, syslog+unix and jsonl+unix are not acknowledged: "
		"the status says how\nmany records may have been lost when "
		"connections broke.\n"
		"SIGUSR1 prints a status line; SIGTERM/SIGINT deliver what "
		"was read, save the cursor, exit 0.\n"
		"See docs/forwarding.md.\n");
	return out == stdout ? 0 : 2;
}

static int parse_positive(const char *s, double max, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (*end || end == s || !(v > 0) || v > max)
		return -1;
	*out = v;
	return 0;
}

/* The filter specs after the options, as `shmlog cat` takes them. Returns
 * 0, or the exit status of the error it printed. */
static int compile_filter(struct forwarder *f, int argc, char **argv)
{
	if (optind >= argc)
		return 0;
	char *spec = cli_join_args(argc, argv, optind);
	if (!spec)
		return cli_fail("forward", -ENOMEM);
	size_t bad = 0;
	int err = shmlog_filter_new(spec, &bad, &f->filter);
	int rc = err == -EINVAL ? cli_bad_filter("forward", spec, bad)
		 : err		? cli_fail("forward", err)
				: 0;
	free(spec);
	return rc;
}

/* A --timeout, --max-backoff or --give-up (@opt): seconds (fractions
 * allowed, up to an hour) as milliseconds, at least 1. -1 if it is such
 * a number, else the usage error's exit status, said. */
static int parse_seconds_ms(const char *opt, const char *s, int *ms)
{
	double v;
	if (parse_positive(s, 3600, &v)) {
		char msg[64];
		snprintf(msg, sizeof(msg), "bad %s '%%s': give seconds, up to 3600",
			 opt);
		return cli_usage_error("forward", msg, s);
	}
	*ms = (int)(v * 1000) ? (int)(v * 1000) : 1;
	return -1;
}

int forward_parse_args(struct forwarder *f, int argc, char **argv)
{
	static const struct option opts[] = {
		{"buffer", required_argument, 0, 'b'},
		{"to", required_argument, 0, 't'},
		{"cursor-file", required_argument, 0, 'c'},
		{"dump", no_argument, 0, 'd'},
		{"batch", required_argument, 0, 'B'},
		{"timeout", required_argument, 0, 'T'},
		{"max-backoff", required_argument, 0, 'M'},
		{"facility", required_argument, 0, 'F'},
		{"linger", required_argument, 0, 'L'},
		{"give-up", required_argument, 0, 'G'},
		{"service", required_argument, 0, 'S'},
		{"archive", required_argument, 0, 'A'},
		{"follow", no_argument, 0, 'f'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	double v;
	int c, rc, timeout_ms = 10000, facility = 1;
	const char *service = NULL;
	while ((c = cli_getopt(argc, argv, "b:t:c:dfh", opts)) != -1) {
		switch (c) {
		case 'b':
			if (f->nsrc == BUFFERS_MAX)
				return cli_usage_error("forward",
						       "too many buffers (at "
						       "most %s)",
						       "64");
			f->src[f->nsrc++].name = optarg;
			break;
		case 't': f->url = optarg; break;
		case 'c': f->cursor_file = optarg; break;
		case 'd': f->dump = true; break;
		case 'A': f->archive = optarg; break;
		case 'f': f->follow = true; break;
		case 'B':
			if (parse_positive(optarg, 100000, &v))
				return cli_usage_error("forward",
						       "bad --batch '%s': give "
						       "1 to 100000 records",
						       optarg);
			f->batch_max = (size_t)v;
			break;
		case 'T':
			if ((rc = parse_seconds_ms("--timeout", optarg,
						     &timeout_ms)) >= 0)
				return rc;
			break;
		case 'M':
			if ((rc = parse_seconds_ms("--max-backoff", optarg,
						     &f->max_backoff_ms)) >= 0)
				return rc;
			break;
		case 'F':
			if (parse_positive(optarg, 23, &v) && strcmp(optarg, "0"))
				return cli_usage_error("forward",
						       "bad --facility '%s': "
						       "give 0 to 23 (1 is "
						       "user, 16-23 local0-7)",
						       optarg);
			facility = atoi(optarg);
			break;
		case 'L':
			if (parse_positive(optarg, 10000, &v) && strcmp(optarg, "0"))
				return cli_usage_error("forward",
						       "bad --linger '%s': give "
						       "milliseconds, 0 to "
						       "10000",
						       optarg);
			f->linger_ms = atoi(optarg);
			break;
		case 'G':
			if ((rc = parse_seconds_ms("--give-up", optarg,
						     &f->give_up_ms)) >= 0)
				return rc;
			break;
		case 'S':
			if (!optarg[0] || strlen(optarg) >= sizeof(f->sink.service))
				return cli_usage_error("forward",
						       "bad --service '%s': give "
						       "a name of 1 to 127 bytes",
						       optarg);
			service = optarg;
			break;
		case 'h': return usage(stdout) - 1; /* -1: exit 0 */
		default: return cli_bad_option("forward");
		}
	}
	if (!f->url)
		return cli_usage_error("forward", "%s",
				       "say where to send records with --to URL");
	char why[512];
	if (sink_parse(f->url, &f->sink, why, sizeof(why)))
		return cli_usage_error("forward", "%s", why);
	f->sink.timeout_ms = timeout_ms;
	f->sink.facility = facility;
	if (service)
		snprintf(f->sink.service, sizeof(f->sink.service), "%s",
			 service);
	if (f->follow && !f->archive)
		return cli_usage_error("forward", "%s",
				       "-f follows the buffers after an "
				       "archive: give --archive DIR (without "
				       "it forward follows the buffers "
				       "anyway)");
	if (f->archive && !f->follow && f->nsrc)
		return cli_usage_error("forward", "%s",
				       "-b with --archive names the buffers to "
				       "follow after the archive: add -f");
	if (!f->nsrc && (!f->archive || f->follow))
		f->src[f->nsrc++].name = cli_buffer_name();
	return compile_filter(f, argc, argv);
}

/* -f: start @s's lanes the cursor knows nothing of (or less than the
 * archive) at the archive's position in them. */
