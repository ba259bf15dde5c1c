/* SPDX-License-Identifier: MIT */
/* An ordinary syslog(3) program, built with nothing of shmlog's: the test
 * runs it under the shim and reads what it logged. Built with
 * _FORTIFY_SOURCE, so glibc routes its calls through __syslog_chk. */
#include <errno.h>
#include <stddef.h>
#include <syslog.h>

int main(void)
{
	openlog("sysprog", LOG_PID | LOG_PERROR, LOG_DAEMON);
	errno = ENOENT;
	syslog(LOG_ERR, "open failed: %m (100%% sure)");
	syslog(LOG_USER | LOG_CRIT, "critical %d", 2);
	syslog(LOG_NOTICE, "a notice");
	syslog(LOG_DEBUG, "a debug");
	int old = setlogmask(LOG_UPTO(LOG_WARNING));
	syslog(LOG_INFO, "masked info");
	syslog(LOG_WARNING, "kept warning");
	setlogmask(old);
	closelog();
	openlog(NULL, 0, LOG_USER); /* the program's name again */
	syslog(LOG_INFO, "after closelog");
	closelog();
	return 0;
}
