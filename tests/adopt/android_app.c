/* SPDX-License-Identifier: MIT */
/* Code as written for Android, unchanged: LOG_TAG, <log/log.h>'s macros and
 * <android/log.h>'s calls. Built against shmlog's liblog. */
#define LOG_TAG "droid"
#include <log/log.h>
#include <android/log.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "assert")) {
		int broken = 1;
		LOG_ALWAYS_FATAL_IF(broken, "broken is %d", broken);
		return 0; /* not reached */
	}
	ALOGV("verbose %d", 1); /* compiled out: LOG_NDEBUG */
	ALOGD("debug %d", 2);
	ALOGI("info %s", "three");
	ALOGW("warn");
	ALOGE_IF(argc > 5, "not logged");
	ALOGE_IF(argc == 1, "error if");
	__android_log_write(ANDROID_LOG_INFO, "raw", "plain write");
	__android_log_print(ANDROID_LOG_FATAL, LOG_TAG, "fatal %d", 7);
	__android_log_buf_write(LOG_ID_MAIN, ANDROID_LOG_WARN, "buf", "to main");
	if (__android_log_buf_write(42, ANDROID_LOG_WARN, "buf", "bad id") >= 0)
		return 2;
	if (__android_log_is_loggable(ANDROID_LOG_DEBUG, "hushed", ANDROID_LOG_VERBOSE))
		return 3; /* the test set "hushed:I" */
	if (!__android_log_is_loggable(ANDROID_LOG_INFO, "hushed", ANDROID_LOG_VERBOSE))
		return 4;
	__android_log_print(ANDROID_LOG_DEBUG, "hushed", "filtered out");
	return 0;
}
