/* SPDX-License-Identifier: MIT */
/*
 * The 16 sample messages of seed 000 (the 2012 "Android Logger vs. Shared
 * Memory" RFC), 57 bytes on average: the workload of `shmlog demo` and of
 * `shmlog-bench log`, so that figures compare with the seed's.
 */
#ifndef SHMLOG_SEED_MESSAGES_H
#define SHMLOG_SEED_MESSAGES_H

static const char *const seed_messages[16] = {
	"New MMC card '00000' (serial 2029453699) added @ /devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001",
	"Disk (blkdev 179:0), 7954432 secs (3884 MB) 1 partitions",
	"New blkdev 179.0 on media 00000, media path /devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001, Dpp 1",
	"Partition (blkdev 179:1), 7946240 secs (3880 MB) type 0xb",
	"New blkdev 179.1 on media 00000, media path /devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001, Dpp 0",
	"Evaluating dev '/devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001/block/mmcblk0' for mountable filesystems for '/sdcard'",
	"handle_switch_event(): Ignoring switch 'No Device'",
	"Bootstrapping complete",
	"dosfsck 3.0.1 (23 Nov 2008)",
	"akmd 1.6.4 START ",
	"library version: 1.2.1.1129",
	"dosfsck 3.0.1, 23 Nov 2008, FAT32, LFN",
	"Logical sector size is zero.",
	"/system/bin/dosfsck terminated by exit(8)",
	"Filesystem check failed (not a FAT filesystem)",
	"vfat filesystem check failed on 179:1 (No data available)",
};

/* Tags and priorities to go with them, as vold/akmd would have logged. */
static const char *const seed_tags[16] = {
	"mmc", "vold", "vold", "vold", "vold", "vold", "vold", "vold",
	"fsck", "akmd", "akmd", "fsck", "fsck", "vold", "vold", "vold",
};
static const int seed_prios[16] = {4, 4, 3, 3, 3, 3, 5, 4,
				   4, 4, 3, 4, 6, 6, 5, 5};

#endif
