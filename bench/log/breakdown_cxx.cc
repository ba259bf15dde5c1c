// SPDX-License-Identifier: MIT
// The printf-style step of breakdown.c compiled as C++: the same call,
// its values' types told by templates (include/shmlog_cxx.h) where C11
// tells them with _Generic, in the same loop as breakdown.c's
// loop_printf().
#include "breakdown.h"

double lb_bd_loop_printf_cxx(shmlog_t *h, const struct lb_work *w, long *errs)
{
	long bad = 0;
	uint64_t t0 = lb_bd_cpu_now_ns();
	for (int i = 0; i < BD_N; i++) {
		const struct lb_msg *m = &w->m[i % LB_WORK_N];
		int e;
		BD_PRINTF_CALL(e, h, m)
		bad += e != 0;
	}
	double ns = (double)(lb_bd_cpu_now_ns() - t0) / BD_N;
	*errs += bad;
	return ns;
}
