/* SPDX-License-Identifier: MIT */
/*
 * `shmlog forward`'s insides, shared by its files: forward.c reads,
 * batches and delivers; forward_cli.c parses the command line and says
 * how it went.
 */
#ifndef SHMLOG_FORWARDER_H
#define SHMLOG_FORWARDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../archive_seam.h"
#include "../cursor.h"
#include "shmlog.h"
#include "sink.h"

#define BUFFERS_MAX 64
#define BATCH_BYTES_MAX (1u << 20)

/* One buffer being forwarded. */
struct source {
	const char *name; /* as the user gave it */
	shmlog_reader_t *rd; /* an archived buffer's: the archive's reader */
	bool archived; /* a buffer the archive holds (name owned) */
	struct archive_seam *seam; /* -f: what the archive held of it */
	size_t cur; /* index of its section in the cursor: the delivered
		     * (acknowledged) position */
	uint64_t *next; /* position including the batch in flight */
	bool *known;
	uint64_t *skipped_seen; /* per lane, hidden by a clear, accounted */
	uint64_t *torn_pending; /* per lane, torn records not yet reported */
	/* --dump: where it ends (cli_dump_end() when the source was
	 * opened); NULL: no end */
	uint64_t *end;
	unsigned end_lanes;
	unsigned lanes;
};

struct stats {
	uint64_t delivered, batches, lost_overwritten, lost_torn, filtered,
		reconnects, failures;
	uint64_t at_risk; /* delivered unacknowledged, on broken connections */
};

struct forwarder {
	struct source src[BUFFERS_MAX];
	size_t nsrc;
	size_t turn; /* which source reads first in the next batch */
	struct sink sink;
	const char *url;
	struct batch batch;
	size_t batch_max;
	shmlog_filter_t *filter;
	struct cursor cursor;
	const char *cursor_file;
	int max_backoff_ms;
	bool dump; /* forward what is there, then exit */
	int give_up_ms; /* --dump: fail after this long without delivering */
	int64_t failing_since; /* ms: the first failure since a delivery */
	int linger_ms; /* nap after a delivery before sleeping on the ring */
	bool napped; /* the last empty read was after a nap */
	struct stats st, st_batch; /* st_batch: counted in the batch */
	/* --archive DIR: its reader until it is read and -f moved on to the
	 * buffers, and the buffers it holds records of */
	const char *archive;
	bool follow;
	shmlog_reader_t *arc;
	struct source *arc_src;
	size_t arc_n;
	/* the event read last, held for the next batch: it is of another
	 * host than the batch's (a batch is of one host). The reader is not
	 * called again before it is taken, so its strings hold. */
	int held_ev; /* 0: none */
	struct shmlog_record held_rec;
	struct shmlog_lost held_lost;
};

/* The command line into @f (zeroed by the caller, defaults set here):
 * -1 to run, else the exit status (after --help, or an error said). */
int forward_parse_args(struct forwarder *f, int argc, char **argv);
/* What was forwarded so far, on stderr (SIGUSR1, and at the end). */
void forward_print_status(const struct forwarder *f, const char *when);
/* A connection without acknowledgements ended: count and say what it
 * may have lost. */
void forward_note_at_risk(struct forwarder *f);

#endif
