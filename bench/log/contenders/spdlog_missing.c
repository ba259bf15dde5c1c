/* SPDX-License-Identifier: MIT */
/* Built instead of spdlog.cpp when CMake found no spdlog. */
#include <stdio.h>

#include "log.h"

static int sp_unavailable(struct lb_ctx *c)
{
	snprintf(c->why, sizeof(c->why),
		 "spdlog was not found when shmlog-bench was built "
		 "(Debian package libspdlog-dev)");
	return -1;
}

const struct lb_contender lb_spdlog = {
    .name = "spdlog-async",
    .what = "spdlog async logger (1 background thread) to a file",
    .setup = sp_unavailable,
};
