/* SPDX-License-Identifier: MIT */
/*
 * Inspection: shmlog_stat(), shmlog_stat_formats(), shmlog_stat_space().
 * Each attaches the buffer read-only and reads what it reports from the
 * mapping under the SIGBUS guard (anybody who may write the file may
 * truncate it meanwhile), through the same record checks, chunk table and
 * lane locks that readers and writers use: above the segment, the ring,
 * the space policy and lane ownership, below nothing but the API.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* Lane @lane's next sequence number, @next as the lane says it, unless
 * its writer died between publishing its newest record and counting it
 * (ring.c, steps 4 and 5: next_seq lags by one until a claimer walks the
 * chain): then one more, read from the record that ends at @head. Reads
 * the mapping (hostile: the walk is bounded by the chunk and every header
 * checked on a copy): call it guarded. */
static uint64_t dead_lane_next_seq(const struct shmlog__seg *s, unsigned lane,
				   uint64_t head, uint64_t next)
{
	const struct shmlog__fixed *f = &s->fixed;
	unsigned idx;
	uint64_t w;
	if (!shmlog__chunk_find(s, lane, head - 1, head - 1,
				CHUNK_IN_OPEN | CHUNK_IN_LIVE, &idx, &w))
		return next;
	uint64_t base = chunk_base(f, w), pos = base;
	const unsigned char *data = seg_chunk_data(s, idx);
	for (uint32_t guard = f->chunk_size / REC_ALIGN + 1;
	     guard-- && pos_before(pos, head);) {
		struct shmlog__rec r;
		uint64_t room = base + f->chunk_size - pos;
		memset(&r, 0, sizeof(r));
		shmlog__copy_out(&r, data + (pos - base),
				 room < sizeof(r) ? (size_t)room : sizeof(r));
		uint32_t len;
		unsigned st = shmlog__rec_check(f, &r, pos, room, &len);
		if (!st || st == REC_PAD)
			return next;
		pos += len;
		if (pos == head)
			return r.seq + 1 - next == 1 ? r.seq + 1 : next;
	}
	return next;
}

/* The counters of shmlog_stat() that live in the mapping, read with it
 * guarded: anybody who may write the file may truncate it meanwhile.
 * Liveness is each lane's lock (lane.c), asked with our own descriptor.
 * A lane whose writer died inside a write counts that record as written
 * (and torn) as shmlog_reader_lane_stats() does, and one whose writer
 * died right after publishing a record counts that record: written is
 * what a reader that reads everything accounts for. */
static int stat_lanes(const struct shmlog__seg *s, struct shmlog_info *in)
{
	const struct shmlog__fixed *f = &s->fixed;
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) != 0) {
		shmlog__guard_recovered();
		return -EIO;
	}
	shmlog__guard_arm(&g, s);
	in->dropped = atomic_load(&s->hdr->stats.dropped);
	in->used = shmlog__space_used(s, NULL);
	for (unsigned i = 0; i < f->lane_count; i++) {
		struct shmlog__lane *l = seg_lane(s, i);
		uint64_t owner = atomic_load(&l->owner);
		uint64_t seq = atomic_load(&l->next_seq);
		uint64_t head = atomic_load(&l->head);
		uint64_t reserve = atomic_load(&l->reserve);
		int alive = owner ? shmlog__owner_alive(s, i, owner) : 0;
		if (alive > 0 || (alive < 0 && owner))
			in->writers++;
		bool unfinished = reserve != head && alive == 0;
		if (owner && alive == 0 && !unfinished)
			seq = dead_lane_next_seq(s, i, head, seq);
		if (seq - f->initial_seq < (1ull << 62))
			in->written += seq - f->initial_seq + unfinished;
		in->torn += atomic_load(&l->torn) + unfinished;
	}
	shmlog__guard_disarm();
	return 0;
}

int shmlog_stat(const char *name, struct shmlog_info *info)
{
	struct shmlog__seg s;
	int err = shmlog__seg_attach(name, 0, &s);
	if (err)
		return err;
	const struct shmlog__fixed *f = &s.fixed;
	struct shmlog_info in;
	memset(&in, 0, sizeof(in));
	in.file_size = s.size;
	in.capacity = (uint64_t)f->chunk_count * f->chunk_size;
	in.lanes = f->lane_count;
	in.version_major = f->version_major;
	in.version_minor = f->version_minor;
	in.clock = (int)f->clock;
	in.created_ns = f->created_ns;
	in.uid = s.uid;
	in.gid = s.gid;
	in.mode = s.mode;
	err = stat_lanes(&s, &in);
	shmlog__seg_detach(&s);
	if (err)
		return err;
	*info = in;
	return 0;
}

/* The format table's counters, read guarded (as stat_lanes). */
static int stat_formats(const struct shmlog__seg *s,
			struct shmlog_format_stats *out)
{
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) != 0) {
		shmlog__guard_recovered();
		return -EIO;
	}
	shmlog__guard_arm(&g, s);
	const struct shmlog__fmt_table *t =
		(const void *)(s->base + s->fixed.fmt_off);
	uint32_t next = atomic_load(&t->next);
	out->used = next < out->size ? next : out->size;
	out->formats = atomic_load(&t->count);
	out->full = atomic_load(&s->hdr->stats.fmt_full);
	out->refused = atomic_load(&s->hdr->stats.fmt_refused);
	shmlog__guard_disarm();
	return 0;
}

int shmlog_stat_formats(const char *name, struct shmlog_format_stats *st)
{
	struct shmlog__seg s;
	int err = shmlog__seg_attach(name, 0, &s);
	if (err)
		return err;
	struct shmlog_format_stats out;
	memset(&out, 0, sizeof(out));
	out.size = s.fixed.fmt_size;
	err = stat_formats(&s, &out);
	shmlog__seg_detach(&s);
	if (!err)
		*st = out;
	return err;
}

/* The space census, read guarded (as stat_lanes). */
static int stat_space(const struct shmlog__seg *s,
		      struct shmlog_space_stats *out)
{
	struct shmlog__guard g;
	if (sigsetjmp(g.env, 0) != 0) {
		shmlog__guard_recovered();
		return -EIO;
	}
	shmlog__guard_arm(&g, s);
	shmlog__space_census(s, out);
	shmlog__guard_disarm();
	return 0;
}

int shmlog_stat_space(const char *name, struct shmlog_space_stats *st)
{
	struct shmlog__seg s;
	int err = shmlog__seg_attach(name, 0, &s);
	if (err)
		return err;
	struct shmlog_space_stats out;
	memset(&out, 0, sizeof(out));
	err = stat_space(&s, &out);
	shmlog__seg_detach(&s);
	if (!err)
		*st = out;
	return err;
}
