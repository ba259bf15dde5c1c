/* SPDX-License-Identifier: MIT */
/*
 * zstd for the archive's compressed blocks (archive_format.h, ZBLK):
 * packed by `shmlog archive --zstd`, unpacked by every reader of an
 * archive. Built with libzstd only when configured so (cmake
 * -DSHMLOG_ZSTD=ON): the library depends on libc alone otherwise, and
 * these say -EPROTONOSUPPORT. Exported by the shared library for the CLI
 * (libshmlog.map), not part of the API.
 */
#ifndef SHMLOG_ARCHIVE_ZSTD_H
#define SHMLOG_ARCHIVE_ZSTD_H
#include <stdbool.h>
#include <stddef.h>

/* Whether this build has zstd. */
bool shmlog__zstd_available(void);
/* The most bytes shmlog__zstd_pack() makes of @n bytes. */
size_t shmlog__zstd_bound(size_t n);
/* @n bytes at @src into one zstd frame (its content size in its header)
 * at @dst (@cap bytes, at least shmlog__zstd_bound(@n)), at @level: its
 * size, or -ENOMEM, -EINVAL (a level zstd refuses), -EPROTONOSUPPORT.
 * *@ctx: the compressor kept between calls (NULL at first), freed by
 * shmlog__zstd_free(). */
long shmlog__zstd_pack(void **ctx, int level, const void *src, size_t n,
		       void *dst, size_t cap);
void shmlog__zstd_free(void *ctx);
/* The content size a frame of @n bytes at @src says it holds: at most
 * @max, else (or a frame that is not one, or says no size) -EIO. */
long shmlog__zstd_size(const void *src, size_t n, size_t max);
/* The frame of @n bytes at @src into @dst (@cap bytes): its content's
 * size, or -EIO (damaged, or more than @cap bytes), -EPROTONOSUPPORT.
 * Hostile input: zstd checks what it reads. */
long shmlog__zstd_unpack(const void *src, size_t n, void *dst, size_t cap);
/* The levels shmlog__zstd_pack() takes. */
void shmlog__zstd_levels(int *min, int *max);
#endif
