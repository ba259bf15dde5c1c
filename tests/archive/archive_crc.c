/* SPDX-License-Identifier: MIT */
/*
 * The archive's CRC32C (archive_format.h): the check value of
 * "123456789", and the fast path (three streams joined, where the CPU has
 * the crc32 instruction) equal to the byte-at-a-time table over random
 * bytes, lengths around the stream size and offsets, and seeds.
 */
#include <stdio.h>
#include <stdlib.h>

#include "archive_format.h"

static uint32_t by_table(uint32_t crc, const unsigned char *b, size_t n)
{
	const uint32_t *t = shmlog__crc32c_table();
	uint32_t c = ~crc;
	for (size_t i = 0; i < n; i++)
		c = t[(c ^ b[i]) & 0xff] ^ (c >> 8);
	return ~c;
}

int main(void)
{
	static unsigned char buf[200000];
	srand(1);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rand();
	int bad = 0;
	uint32_t check = shmlog__crc32c(0, "123456789", 9);
	if (check != 0xe3069283u) {
		fprintf(stderr, "archive_crc: check value %08x, want e3069283\n",
			check);
		bad++;
	}
	for (int k = 0; k < 600; k++) {
		size_t off = (size_t)rand() % 64;
		/* lengths near multiples of the three streams' 12 KiB, and
		 * any */
		size_t n = k < 300 ? (size_t)(k / 10) * 4096 + (size_t)(k % 10) * 3
				   : (size_t)rand() % (sizeof(buf) - 64);
		uint32_t seed = k % 3 ? (uint32_t)rand() : 0;
		uint32_t a = shmlog__crc32c(seed, buf + off, n);
		uint32_t b = by_table(seed, buf + off, n);
		if (a != b) {
			fprintf(stderr, "archive_crc: %zu bytes at %zu: %08x, "
					"want %08x\n", n, off, a, b);
			bad++;
		}
	}
	printf("archive_crc: %d of 601 wrong\n", bad);
	return bad != 0;
}
