/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: shmlog__fixed_validate() on arbitrary bytes.
 *
 * Input: a struct shmlog__fixed of format 2 (chunks; zero-padded if
 * short), then 8 bytes of file size (default: the header's own
 * file_size), then a flags byte: bit 0 set means "fix the checksum up" so
 * that the fuzzer gets past it and explores the checks behind it.
 * Whatever validate accepts must satisfy every property the reader and
 * the writers rely on; a violated property aborts (a finding).
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
	/* chunks: a power of two of at least a page, at least two of them */
	PROPERTY(f.chunk_size >= SHMLOG__PAGE && f.chunk_size <= (1u << 20));
	PROPERTY((f.chunk_size & (f.chunk_size - 1)) == 0);
	PROPERTY(f.chunk_count >= 2 && f.chunk_count < CHUNK_NONE);
	/* a descriptor word can name every lane, and only them */
	PROPERTY(chunk_lane(chunk_word(1, f.lane_count - 1, CHUNK_OPEN)) ==
		 f.lane_count - 1);
	PROPERTY(chunk_valid(&f, chunk_word(CHUNK_INC_MASK, f.lane_count - 1,
					    CHUNK_LIVE)));
	PROPERTY(!chunk_valid(&f, chunk_word(1, f.lane_count, CHUNK_LIVE)));
	/* the largest record fits a chunk several times over, in a u16 len */
	PROPERTY(f.max_record >= REC_HDR + SHMLOG_TAG_MAX + REC_ALIGN &&
		 f.max_record % REC_ALIGN == 0);
	PROPERTY((uint64_t)f.max_record * 3 <= f.chunk_size);
	PROPERTY(f.max_record <= REC_MAX_LEN);
	/* records start 8-aligned in every incarnation, at any position */
	PROPERTY(f.initial_pos % REC_ALIGN == 0);
	PROPERTY(chunk_base(&f, chunk_word(CHUNK_INC_MASK, 0, CHUNK_LIVE)) %
			 REC_ALIGN ==
		 0);
	/* page 0, lanes, space line and descriptors, chunks: in this order,
	 * not overlapping, aligned for their atomics */
	PROPERTY(f.lanes_off >= sizeof(struct shmlog__hdr));
	PROPERTY(f.lanes_off % SHMLOG__CACHELINE == 0);
	PROPERTY(f.lanes_off + (uint64_t)f.lane_count *
				       sizeof(struct shmlog__lane) <=
		 f.chunks_off);
	PROPERTY(f.chunks_off % SHMLOG__CACHELINE == 0);
	PROPERTY(f.chunks_off + sizeof(struct shmlog__space) +
			 (uint64_t)f.chunk_count * 8 <=
		 f.data_off);
	PROPERTY(f.data_off % SHMLOG__PAGE == 0 && f.data_off >= SHMLOG__PAGE);
	PROPERTY(f.data_off + (uint64_t)f.chunk_count * f.chunk_size ==
		 file_size);
	PROPERTY(f.file_size == file_size);
	PROPERTY(f.clock >= SHMLOG_CLOCK_TSC && f.clock <= SHMLOG_CLOCK_COARSE);
	/* the last descriptor word and the last byte of the last chunk are
	 * inside the file, computed without wrapping */
	uint64_t last_desc = f.chunks_off + sizeof(struct shmlog__space) +
			     (uint64_t)(f.chunk_count - 1) * 8;
	PROPERTY(last_desc > f.chunks_off && last_desc + 8 <= file_size);
	uint64_t last = f.data_off + (uint64_t)(f.chunk_count - 1) * f.chunk_size +
			(f.chunk_size - 1);
	PROPERTY(last > f.data_off && last < file_size);
	PROPERTY(f.cal_shift <= 63);
	/* converting any raw time must not be undefined behaviour (UBSan) */
	volatile int64_t t = shmlog__clock_to_ns(&f, (uint64_t)data[0] << 56,
						 0, 0);
	t = shmlog__clock_to_ns(&f, ~(uint64_t)0, 1, INT64_MAX);
	(void)t;
	return 0;
}
