/* SPDX-License-Identifier: MIT */
/*
 * The workload: the sixteen sample messages of the 2012 LKML
 * shared-memory logger RFC (57 B on average, the
 * trailing newline included, as the RFC counted them), each given an
 * Android-style tag and priority; and messages of one exact size for the
 * sweep from 16 B to 4 KiB.
 */
#include <string.h>

#include "log.h"
#include "sample_messages.h"

/* The RFC's messages with our tags and priorities: shared with `shmlog
 * demo` (common/sample_messages.h). */
#define seed16 seed_messages

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
	strcpy(w->name, "rfc16");
}

/* Sixteen different texts per size, so that no contender can profit from
 * repeating one message (rsyslog's "last message repeated" would). The
 * text is the RFC's messages run together; each message ends in '\n'. */
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
