/* SPDX-License-Identifier: MIT */
/*
 * The archive's CRC32C (archive_format.h): the check value of
 * "123456789", and each fast path equal to the byte-at-a-time table over
 * random bytes, lengths around the stream size and the fold's 256 bytes,
 * offsets, and seeds: the three streams joined (where the CPU has the
 * crc32 instruction) and the wide folding (where it has VPCLMULQDQ and
 * AVX-512; said when not), whichever shmlog__crc32c() takes. The wide
 * folding's constants are checked against the polynomial, on any CPU.
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

/* x^@e modulo the CRC32C polynomial, bit-reflected (as the constants) */
static uint32_t xpow_rev(unsigned e)
{
	uint32_t r = 1;
	for (unsigned i = 0; i < e; i++)
		r = r & 0x80000000u ? (r << 1) ^ 0x1edc6f41u : r << 1;
	uint32_t v = 0;
	for (int i = 0; i < 32; i++)
		if (r >> i & 1)
			v |= 1u << (31 - i);
	return v;
}

#ifdef SHMLOG__CRC_WIDE
#define K(name) {name}
#else
#define K(name) {0, 0}
#endif

/* Each fold's constants are {x^(D+31), x^(D-33)} mod P (archive_format.h) */
static int constants(void)
{
	static const struct {
		unsigned d;
		uint32_t k[2];
	} want[] = {
	    {2048, K(SHMLOG__CRC_K2048)}, {512, K(SHMLOG__CRC_K512)},
	    {384, K(SHMLOG__CRC_K384)},   {256, K(SHMLOG__CRC_K256)},
	    {128, K(SHMLOG__CRC_K128)},
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint32_t lo = xpow_rev(want[i].d + 31),
			 hi = xpow_rev(want[i].d - 33);
#ifdef SHMLOG__CRC_WIDE
		if (lo != want[i].k[0] || hi != want[i].k[1]) {
			fprintf(stderr, "archive_crc: fold by %u: %08x %08x, "
					"want %08x %08x\n", want[i].d,
				want[i].k[0], want[i].k[1], lo, hi);
			bad++;
		}
#else
		(void)lo;
		(void)hi;
#endif
	}
	return bad;
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
	bad += constants();
	int path = shmlog__crc32c_path(), cases = 0;
	for (int k = 0; k < 900; k++) {
		size_t off = (size_t)rand() % 64;
		/* lengths near multiples of the three streams' 12 KiB, near
		 * the fold's 256 bytes, and any */
		size_t n = k < 300   ? (size_t)(k / 10) * 4096 + (size_t)(k % 10) * 3
			   : k < 600 ? (size_t)(k - 300) / 3 * 256 + (size_t)(k % 3) * 255 / 2
				     : (size_t)rand() % (sizeof(buf) - 64);
		uint32_t seed = k % 3 ? (uint32_t)rand() : 0;
		uint32_t want = by_table(seed, buf + off, n);
		uint32_t got[3] = {shmlog__crc32c(seed, buf + off, n), want,
				   want};
#if defined(__x86_64__) && defined(__GNUC__)
		if (path >= 1)
			got[1] = ~shmlog__crc32c_hw(~seed, buf + off, n);
#ifdef SHMLOG__CRC_WIDE
		if (path == 2 && n >= 256)
			got[2] = ~shmlog__crc32c_wide(~seed, buf + off, n);
#endif
#endif
		for (int w = 0; w < 3; w++) {
			cases++;
			if (got[w] != want) {
				fprintf(stderr, "archive_crc: path %d, %zu bytes "
						"at %zu: %08x, want %08x\n",
					w, n, off, got[w], want);
				bad++;
			}
		}
	}
	printf("archive_crc: %d of %d wrong (this CPU: %s)\n", bad, cases + 6,
	       path == 2   ? "crc32 and the wide folding both checked"
	       : path == 1 ? "crc32 checked; no VPCLMULQDQ with AVX-512: the "
			     "wide folding skipped"
			   : "no crc32 instruction: the table alone");
	return bad != 0;
}
