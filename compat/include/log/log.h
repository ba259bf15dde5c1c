/* SPDX-License-Identifier: MIT */
/*
 * Android's <log/log.h> macros over shmlog's liblog (see <android/log.h>):
 * ALOGV..ALOGE with LOG_TAG, their _IF forms, LOG_ALWAYS_FATAL(_IF),
 * LOG_FATAL_IF and ALOG_ASSERT, with Android's conventions: define LOG_TAG
 * before including; ALOGV is compiled out unless LOG_NDEBUG is 0; the
 * assertions are compiled out when LOG_NDEBUG is 1 (the default under
 * NDEBUG, as on Android).
 */
#ifndef SHMLOG_ANDROID_LOG_LOG_H
#define SHMLOG_ANDROID_LOG_LOG_H

#include <android/log.h>

#ifndef LOG_TAG
#define LOG_TAG NULL
#endif

#ifndef LOG_NDEBUG
#ifdef NDEBUG
#define LOG_NDEBUG 1
#else
#define LOG_NDEBUG 0
#endif
#endif

#define ALOG(priority, tag, ...)                                               \
	__android_log_print(ANDROID_##priority, tag, __VA_ARGS__)

#if LOG_NDEBUG
#define ALOGV(...)                                                             \
	do {                                                                   \
		if (0)                                                         \
			__android_log_print(ANDROID_LOG_VERBOSE, LOG_TAG,      \
					    __VA_ARGS__);                      \
	} while (0)
#else
#define ALOGV(...) ((void)ALOG(LOG_VERBOSE, LOG_TAG, __VA_ARGS__))
#endif
#define ALOGD(...) ((void)ALOG(LOG_DEBUG, LOG_TAG, __VA_ARGS__))
#define ALOGI(...) ((void)ALOG(LOG_INFO, LOG_TAG, __VA_ARGS__))
#define ALOGW(...) ((void)ALOG(LOG_WARN, LOG_TAG, __VA_ARGS__))
#define ALOGE(...) ((void)ALOG(LOG_ERROR, LOG_TAG, __VA_ARGS__))

#define ALOGV_IF(cond, ...) ((cond) ? ALOGV(__VA_ARGS__) : (void)0)
#define ALOGD_IF(cond, ...) ((cond) ? ALOGD(__VA_ARGS__) : (void)0)
#define ALOGI_IF(cond, ...) ((cond) ? ALOGI(__VA_ARGS__) : (void)0)
#define ALOGW_IF(cond, ...) ((cond) ? ALOGW(__VA_ARGS__) : (void)0)
#define ALOGE_IF(cond, ...) ((cond) ? ALOGE(__VA_ARGS__) : (void)0)

#define IF_ALOG(priority, tag)                                                 \
	if (__android_log_is_loggable(ANDROID_##priority, tag,                 \
				      ANDROID_LOG_VERBOSE))

/* The message is optional: LOG_ALWAYS_FATAL_IF(x) aborts with "x". */
#define LOG_ALWAYS_FATAL_IF(cond, ...)                                         \
	((cond) ? __android_log_assert(#cond, LOG_TAG, "" __VA_ARGS__)         \
		: (void)0)
#define LOG_ALWAYS_FATAL(...)                                                  \
	__android_log_assert(NULL, LOG_TAG, "" __VA_ARGS__)

#if LOG_NDEBUG
#define LOG_FATAL_IF(cond, ...) ((void)0)
#define LOG_FATAL(...) ((void)0)
#else
#define LOG_FATAL_IF(cond, ...) LOG_ALWAYS_FATAL_IF(cond, __VA_ARGS__)
#define LOG_FATAL(...) LOG_ALWAYS_FATAL(__VA_ARGS__)
#endif
#define ALOG_ASSERT(cond, ...) LOG_FATAL_IF(!(cond), __VA_ARGS__)

#endif /* SHMLOG_ANDROID_LOG_LOG_H */
