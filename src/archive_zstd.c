/* SPDX-License-Identifier: MIT */
/* zstd for the archive's compressed blocks (archive_zstd.h). */
#include <errno.h>

#include "archive_zstd.h"

#ifdef SHMLOG_HAVE_ZSTD
#include <zstd.h>

bool shmlog__zstd_available(void)
{
	return true;
}

size_t shmlog__zstd_bound(size_t n)
{
	return ZSTD_compressBound(n);
}

long shmlog__zstd_pack(void **ctx, int level, const void *src, size_t n,
		       void *dst, size_t cap)
{
	if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
		return -EINVAL;
	if (!*ctx && !(*ctx = ZSTD_createCCtx()))
		return -ENOMEM;
	size_t k = ZSTD_compressCCtx(*ctx, dst, cap, src, n, level);
	return ZSTD_isError(k) ? -ENOMEM : (long)k;
}

void shmlog__zstd_free(void *ctx)
{
	ZSTD_freeCCtx(ctx);
}

long shmlog__zstd_size(const void *src, size_t n, size_t max)
{
	unsigned long long k = ZSTD_getFrameContentSize(src, n);
	if (k == ZSTD_CONTENTSIZE_UNKNOWN || k == ZSTD_CONTENTSIZE_ERROR ||
	    k > max)
		return -EIO;
	return (long)k;
}

long shmlog__zstd_unpack(const void *src, size_t n, void *dst, size_t cap)
{
	size_t k = ZSTD_decompress(dst, cap, src, n);
	return ZSTD_isError(k) ? -EIO : (long)k;
}

void shmlog__zstd_levels(int *min, int *max)
{
	*min = ZSTD_minCLevel();
	*max = ZSTD_maxCLevel();
}

#else /* built without zstd */

bool shmlog__zstd_available(void)
{
	return false;
}

size_t shmlog__zstd_bound(size_t n)
{
	return n;
}

long shmlog__zstd_pack(void **ctx, int level, const void *src, size_t n,
		       void *dst, size_t cap)
{
	(void)ctx, (void)level, (void)src, (void)n, (void)dst, (void)cap;
	return -EPROTONOSUPPORT;
}

void shmlog__zstd_free(void *ctx)
{
	(void)ctx;
}

long shmlog__zstd_size(const void *src, size_t n, size_t max)
{
	(void)src, (void)n, (void)max;
	return -EPROTONOSUPPORT;
}

long shmlog__zstd_unpack(const void *src, size_t n, void *dst, size_t cap)
{
	(void)src, (void)n, (void)dst, (void)cap;
	return -EPROTONOSUPPORT;
}

void shmlog__zstd_levels(int *min, int *max)
{
	*min = *max = 0;
}
#endif
