// SPDX-License-Identifier: MIT
// The printf-style step of breakdown.c compiled as C++: the same call,
// its values' types told by templates (include/shmlog_cxx.h) where C11
// tells them with _Generic, in the same loop (BD_TIMED_LOOP, breakdown.h)
// as breakdown.c's lb_bd_loop_printf_c().
#include "breakdown.h"

double lb_bd_loop_printf_cxx(shmlog_t *h, const struct lb_work *w, long *errs)
{
	BD_TIMED_LOOP(BD_N, w, errs, BD_PRINTF_CALL(e, h, m));
}
