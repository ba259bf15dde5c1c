/* SPDX-License-Identifier: MIT */
/* The header's struct layouts, as the C compiler sees them, for the Rust
 * declarations' layout test (shmlog-sys/src/lib.rs). */
#include <stddef.h>

#include <shmlog.h>

#define L(x) ((size_t)(x))
static const size_t layout[] = {
	L(sizeof(struct shmlog_record)),
	L(offsetof(struct shmlog_record, seq)),
	L(offsetof(struct shmlog_record, time_ns)),
	L(offsetof(struct shmlog_record, raw_time)),
	L(offsetof(struct shmlog_record, pid)),
	L(offsetof(struct shmlog_record, tid)),
	L(offsetof(struct shmlog_record, prio)),
	L(offsetof(struct shmlog_record, flags)),
	L(offsetof(struct shmlog_record, lane)),
	L(offsetof(struct shmlog_record, tag)),
	L(offsetof(struct shmlog_record, tag_len)),
	L(offsetof(struct shmlog_record, msg)),
	L(offsetof(struct shmlog_record, msg_len)),
	L(sizeof(struct shmlog_lost)),
	L(offsetof(struct shmlog_lost, lane)),
	L(offsetof(struct shmlog_lost, overwritten)),
	L(offsetof(struct shmlog_lost, torn)),
	L(sizeof(struct shmlog_create_opts)),
	L(offsetof(struct shmlog_create_opts, size)),
	L(offsetof(struct shmlog_create_opts, lanes)),
	L(offsetof(struct shmlog_create_opts, mode)),
	L(offsetof(struct shmlog_create_opts, gid)),
	L(offsetof(struct shmlog_create_opts, clock)),
	L(offsetof(struct shmlog_create_opts, initial_seq)),
	L(offsetof(struct shmlog_create_opts, initial_pos)),
	L(sizeof(struct shmlog_info)),
	L(offsetof(struct shmlog_info, written)),
	L(offsetof(struct shmlog_info, mode)),
	L(SHMLOG_VERBOSE),
	L(SHMLOG_FATAL),
	L(SHMLOG_SILENT),
	L(SHMLOG_OPEN_CREATE),
	L(SHMLOG_READ_TAIL),
	L(SHMLOG_READ_DUMP),
	L(SHMLOG_REC_TRUNCATED),
	L(SHMLOG_EV_RECORD),
	L(SHMLOG_EV_LOST),
	L(SHMLOG_WAIT_ANY_MAX),
};

const size_t *shmlog_sys_layout(size_t *n);
const size_t *shmlog_sys_layout(size_t *n)
{
	*n = sizeof(layout) / sizeof(layout[0]);
	return layout;
}
