/* SPDX-License-Identifier: MIT */
/*
 * shmlog-bench forward's OTLP/HTTP receiver: a child process that takes
 * POSTs of OTLP logs (protobuf or JSON, plain or gzip), counts their
 * LogRecords and answers 200. It stands where an OpenTelemetry Collector
 * would, at a fraction of its cost, so that the forwarder's share of the
 * CPU is what the figures show.
 */
#ifndef SHMLOG_BENCH_OTLP_RECEIVER_H
#define SHMLOG_BENCH_OTLP_RECEIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What the receiver has taken, shared with the benchmark. */
struct otlp_rx_counts {
	volatile int64_t records; /* LogRecords counted */
	volatile int64_t requests;
	volatile int64_t bytes_in; /* request bodies as sent */
	volatile int64_t bytes_plain; /* the same once gunzipped */
	volatile int64_t bad; /* requests it could not read */
};

struct otlp_rx {
	pid_t pid;
	int port;
	struct otlp_rx_counts *c;
};

/* Start the receiver on a free loopback port. false if it cannot. */
bool otlp_rx_start(struct otlp_rx *rx);
void otlp_rx_stop(struct otlp_rx *rx);
/* Can it read gzip (was the benchmark built with zlib)? */
bool otlp_rx_gzip(void);

#endif
