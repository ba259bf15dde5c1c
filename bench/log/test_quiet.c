/* SPDX-License-Identifier: MIT */
/*
 * quiet.c sees a helper that runs: a child spinning through a 0.3 s
 * interval makes it NOT ALONE, the same child named as the one measured
 * leaves it alone, and a stopped child adds nothing.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plan.h"

static struct lb_quiet_mark a, b;

static void interval(void)
{
	struct timespec t = {0, 300000000};
	lb_quiet_mark(&a);
	while (nanosleep(&t, &t) < 0)
		;
	lb_quiet_mark(&b);
}

int main(void)
{
	int fails = 0;
	pid_t p = fork();
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			;
	}
	if (p < 0)
		return 1;
	struct lb_quiet busy = {0}, skipped = {0}, stopped = {0};
	interval();
	lb_quiet_add(&busy, &a, &b, NULL, 0);
	lb_quiet_add(&skipped, &a, &b, &p, 1);
	kill(p, SIGSTOP);
	interval();
	lb_quiet_add(&stopped, &a, &b, NULL, 0);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	lb_quiet_print(stdout, "a spinning child", &busy);
	lb_quiet_print(stdout, "the same, measured", &skipped);
	lb_quiet_print(stdout, "the child stopped", &stopped);
	if (lb_quiet_alone(&busy) || busy.others_s <= 0) {
		printf("FAIL: a spinning child was not seen\n");
		fails++;
	}
	if (!lb_quiet_alone(&skipped) || skipped.others_s != 0) {
		printf("FAIL: the measured child counted as another\n");
		fails++;
	}
	if (!lb_quiet_alone(&stopped)) {
		printf("FAIL: a stopped child used CPU\n");
		fails++;
	}
	return fails != 0;
}
