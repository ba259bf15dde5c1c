/* SPDX-License-Identifier: MIT */
/*
 * Where writers' chunks lie in the buffer. Writers that start together
 * take never-used chunks in stretches, each going on into the chunk after
 * its last (the space policy in docs/DESIGN.md), not in turn chunk by
 * chunk: two writers' chunks interleaved one by one cost each of them
 * about a tenth of its rate. Two handles on one buffer, written in turn
 * from one thread, are two writers that start together, call for call.
 */
#include "internal.h"
#include "shmlog.h"
#include "test.h"

/* Per lane of @name: its chunks and its runs of neighbouring chunks. */
static void layout(const char *name, unsigned *chunks, unsigned *runs,
		   unsigned *lanes)
{
	struct shmlog__seg s;
	REQUIRE(shmlog__seg_attach(name, 0, &s) == 0);
	*lanes = s.fixed.lane_count;
	unsigned prev = UINT32_MAX;
	for (unsigned i = 0; i < s.fixed.chunk_count; i++) {
		uint64_t w = atomic_load(seg_chunk(&s, i));
		unsigned l = w ? chunk_lane(w) : UINT32_MAX;
		if (l < *lanes) {
			chunks[l]++;
			runs[l] += l != prev;
		}
		prev = l;
	}
	shmlog__seg_detach(&s);
}

/* @n writers written in turn, a record each, until the buffer has been
 * filled about twice: each holds its share in at most @max_runs runs. */
static void together(unsigned n, unsigned max_runs)
{
	const char *b = test_buffer("layout");
	struct shmlog_create_opts o;
	shmlog_create_opts_init(&o);
	o.size = 1 << 20; /* 64 chunks of 16 KiB */
	o.lanes = 16;
	REQUIRE(shmlog_create(b, &o) == 0);
	shmlog_t *h[8];
	for (unsigned k = 0; k < n; k++)
		REQUIRE(shmlog_open(b, 0, &h[k]) == 0);
	char msg[200];
	memset(msg, 'x', sizeof(msg));
	long recs = 2 * (1 << 20) / 256; /* records of 256 bytes */
	for (long i = 0; i < recs; i++)
		CHECK_EQ(shmlog_write_n(h[i % n], SHMLOG_INFO, "layout", msg,
					sizeof(msg)),
			 0);
	unsigned chunks[SHMLOG_LANES_MAX] = {0}, runs[SHMLOG_LANES_MAX] = {0};
	unsigned lanes, holders = 0;
	layout(b, chunks, runs, &lanes);
	for (unsigned l = 0; l < lanes; l++) {
		if (!chunks[l])
			continue;
		holders++;
		if (runs[l] > max_runs)
			fprintf(stderr, "%u writers: lane %u holds %u chunks in "
					"%u runs, want at most %u\n",
				n, l, chunks[l], runs[l], max_runs);
		CHECK(runs[l] <= max_runs);
		CHECK(chunks[l] >= 64 / n - 2); /* its share, less a chunk or two */
	}
	CHECK_EQ(holders, n);
	for (unsigned k = 0; k < n; k++)
		shmlog_close(h[k]);
	shmlog_remove(b);
}

int main(void)
{
	together(1, 1);
	together(2, 2);
	together(4, 4);
	return test_done("test_layout");
}
