/* SPDX-License-Identifier: MIT */
/*
 * The workload: seed 000's sixteen sample messages (57 B on average, the
 * trailing newline included, as the seed counted them), each given an
 * Android-style tag and priority; and messages of one exact size for the
 * sweep from 16 B to 4 KiB.
 */
#include <string.h>

#include "log.h"

/* The messages are the seed's; tags and priorities are ours, picked the way
 * vold and its helpers would log them on a phone. */
static const struct {
	int prio;
	const char *tag, *msg;
} seed16[LB_WORK_N] = {
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
     "'/devices/platform/msm_sdcc.2/mmc_host/mmc1/mmc1:0001/block/mmcblk0' for "
     "mountable filesystems for '/sdcard'\n"},
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

void lb_work_seed(struct lb_work *w)
{
	double sum = 0;
	for (int i = 0; i < LB_WORK_N; i++) {
		w->m[i] = (struct lb_msg){
		    .prio = seed16[i].prio,
		    .tag = seed16[i].tag,
		    .tag_len = strlen(seed16[i].tag),
		    .msg = seed16[i].msg,
		    .len = strlen(seed16[i].msg),
		};
		sum += (double)w->m[i].len;
	}
	w->avg_len = sum / LB_WORK_N;
	strcpy(w->name, "seed16");
}

/* Sixteen different texts per size, so that no contender can profit from
 * repeating one message (rsyslog's "last message repeated" would). The
 * text is the seed's messages run together; each message ends in '\n'. */
static char sized_text[LB_WORK_N][LB_MSG_MAX + 1];

void lb_work_sized(struct lb_work *w, size_t size)
{
	if (size < 2)
		size = 2;
	if (size > LB_MSG_MAX)
		size = LB_MSG_MAX;
	for (int i = 0; i < LB_WORK_N; i++) {
		char *t = sized_text[i];
		size_t n = 0;
		for (int k = i; n < size; k = (k + 1) % LB_WORK_N) {
			const char *s = seed16[k].msg;
			size_t l = strlen(s);
			if (l > size - n)
				l = size - n;
			memcpy(t + n, s, l);
			n += l;
		}
		t[size - 1] = '\n';
		t[size] = '\0';
		w->m[i] = (struct lb_msg){
		    .prio = 4,
		    .tag = "bench",
		    .tag_len = 5,
		    .msg = t,
		    .len = size,
		};
	}
	w->avg_len = (double)size;
	snprintf(w->name, sizeof(w->name), "size=%zu", size);
}
