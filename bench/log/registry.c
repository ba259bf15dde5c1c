/* SPDX-License-Identifier: MIT */
/*
 * The contenders of `shmlog-bench log`, in the order of the tables. The
 * harness (run.c) looks a contender up here by name when it runs as a
 * writer under strace; the run plan (plan.c) walks the whole list.
 */
#include <string.h>

#include "log.h"

const struct lb_contender *const lb_contenders[] = {
    &lb_shmlog_default, &lb_shmlog_realtime, &lb_shmlog_coarse,
    &lb_shmlog_printf,	&lb_shmlog_vsnprintf,
    &lb_seed,		&lb_kmsg,	     &lb_syslog,
    &lb_logd,		&lb_file_write,	     &lb_file_stdio,
    &lb_pipe,		&lb_mqueue,	     &lb_spdlog,
};
const int lb_n_contenders =
    (int)(sizeof(lb_contenders) / sizeof(lb_contenders[0]));

const struct lb_contender *lb_find(const char *name)
{
	for (int i = 0; i < lb_n_contenders; i++)
		if (!strcmp(lb_contenders[i]->name, name))
			return lb_contenders[i];
	return NULL;
}
