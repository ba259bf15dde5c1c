/* SPDX-License-Identifier: MIT */
/*
 * The 16 sample messages of the 2012 LKML RFC "Android Logger vs. Shared
 * Memory FIGHT!" (a shared-memory logger for Android), 57 bytes on
 * average: the workload of `shmlog demo` (tools/) and of `shmlog-bench log`
 * (bench/), so that their figures compare with the RFC's. It sits in
 * common/ so that neither folder reaches into the other.
 */
#ifndef SHMLOG_SAMPLE_MESSAGES_H
#define SHMLOG_SAMPLE_MESSAGES_H

struct seed_message {
	int prio;
	const char *tag;
	const char *msg;
};

/* The messages are the RFC's, trailing newline included as the RFC
 * counted them (readers show one line per record all the same); tags and
 * priorities are ours, picked the way vold and its helpers would log them
 * on a phone. */
static const struct seed_message seed_messages[16] = {
	{4, "Vold",
	 "New MMC card '00000' (serial 2029453699) added @ "
	 "/devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001\n"},
	{4, "Vold", "Disk (blkdev 179:0), 7954432 secs (3884 MB) 1 partitions\n"},
	{3, "Vold",
	 "New blkdev 179.0 on media 00000, media path "
	 "/devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001, Dpp 1\n"},
	{4, "Vold", "Partition (blkdev 179:1), 7946240 secs (3880 MB) type 0xb\n"},
	{3, "Vold",
	 "New blkdev 179.1 on media 00000, media path "
	 "/devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001, Dpp 0\n"},
	{3, "Vold",
	 "Evaluating dev "
	 "'/devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001/block/mmcblk0' "
	 "for mountable filesystems for '/sdcard'\n"},
	{5, "Vold", "handle_switch_event(): Ignoring switch 'No Device'\n"},
	{4, "Vold", "Bootstrapping complete\n"},
	{4, "dosfsck", "dosfsck 3.0.1 (23 Nov 2008)\n"},
	{4, "akmd", "akmd 1.6.4 START \n"},
	{3, "akmd", "library version: 1.2.1.1129\n"},
	{4, "dosfsck", "dosfsck 3.0.1, 23 Nov 2008, FAT32, LFN\n"},
	{5, "dosfsck", "Logical sector size is zero.\n"},
	{6, "logwrapper", "/system/bin/dosfsck terminated by exit(8)\n"},
	{6, "Vold", "Filesystem check failed (not a FAT filesystem)\n"},
	{6, "Vold", "vfat filesystem check failed on 179:1 (No data available)\n"},
};

#endif
