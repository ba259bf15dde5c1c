/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: shmlog__fixed_validate() on arbitrary bytes.
 *
 * Input: a struct shmlog__fixed (zero-padded if short), then 8 bytes of
 * file size (default: the header's own file_size), then a flags byte: bit 0
 * set means "fix the checksum up" so that the fuzzer gets past it and
 * explores the checks behind it. Whatever validate accepts must satisfy
 * every property the reader and the writers rely on; a violated property
 * aborts (a finding).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PROPERTY(c)                                                            \
	do {                                                                   \
		if (!(c))                                                      \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shmlog__fixed f;
	memset(&f, 0, sizeof(f));
	memcpy(&f, data, size < sizeof(f) ? size : sizeof(f));
	uint64_t file_size = f.file_size;
	if (size >= sizeof(f) + 8)
		memcpy(&file_size, data + sizeof(f), 8);
	if (size >= sizeof(f) + 9 && (data[sizeof(f) + 8] & 1))
		f.checksum = shmlog__fnv1a(
			&f, offsetof(struct shmlog__fixed, checksum));
	if (shmlog__fixed_validate(&f, file_size) != 0)
		return 0;
	/* accepted: everything the protocol computes must stay in bounds */
	PROPERTY(f.lane_count >= 1 && f.lane_count <= SHMLOG_LANES_MAX);
	PROPERTY(f.lane_size >= 1024 && f.lane_size % REC_ALIGN == 0);
	PROPERTY(f.max_record >= REC_HDR + 8 && f.max_record <= f.lane_size);
	PROPERTY(f.max_record <= REC_MAX_LEN);
	PROPERTY(f.lanes_off >= sizeof(struct shmlog__hdr));
	PROPERTY(f.lanes_off + (uint64_t)f.lane_count *
				       sizeof(struct shmlog__lane) <=
		 f.data_off);
	PROPERTY(f.data_off + (uint64_t)f.lane_count * f.lane_size ==
		 file_size);
	PROPERTY(f.data_off % SHMLOG__PAGE == 0);
	PROPERTY(f.lanes_off % 8 == 0); /* atomics in the lane table */
	PROPERTY(f.clock >= SHMLOG_CLOCK_TSC && f.clock <= SHMLOG_CLOCK_COARSE);
	/* the last byte of the last lane is inside the file */
	uint64_t last = f.data_off + (uint64_t)(f.lane_count - 1) * f.lane_size +
			seg_off(&f, f.initial_pos - 1);
	PROPERTY(last < file_size);
	/* converting any raw time must not be undefined behaviour (UBSan) */
	volatile int64_t t = shmlog__clock_to_ns(&f, (uint64_t)data[0] << 56,
						 0, 0);
	t = shmlog__clock_to_ns(&f, ~(uint64_t)0, 1, INT64_MAX);
	(void)t;
	return 0;
}
