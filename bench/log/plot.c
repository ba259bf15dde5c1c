/* SPDX-License-Identifier: MIT */
/* SVG plots of a run: bench/log/plot.py reads the run's JSON. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan.h"

void lb_run_plot(const char *json, const char *dir)
{
	static const char *const pythons[] = {"/usr/bin/python3", "python3"};
	char cmd[2048];
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "plots: cannot make %s: %s\n", dir,
			strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
		snprintf(cmd, sizeof(cmd),
			 "%s -c 'import matplotlib' 2>/dev/null", pythons[i]);
		if (system(cmd) != 0)
			continue;
		snprintf(cmd, sizeof(cmd), "%s '%s' '%.600s' '%.600s'",
			 pythons[i], LB_PLOT_SCRIPT, json, dir);
		if (system(cmd) != 0)
			fprintf(stderr, "plots: %s failed\n", LB_PLOT_SCRIPT);
		return;
	}
	fprintf(stderr, "plots skipped: no python3 with matplotlib "
			"(install the Debian package python3-matplotlib)\n");
}

