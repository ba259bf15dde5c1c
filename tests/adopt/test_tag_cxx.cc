// SPDX-License-Identifier: MIT
// The macros from C++ with tags known only at run time: each call is
// filtered by its own tag (a call site's cache must not keep the first tag
// it saw), and a live filter change reaches them.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "shmlog.h"

static int failures;
#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #c);                                 \
			failures++;                                            \
		}                                                              \
	} while (0)

static void log_as(const char *tag, int i)
{
	SHMLOG_I(tag, "%s %d", tag, i); // one call site, many tags
}

// A constant array on the stack of each call: the site must not keep a
// pointer to the first call's copy.
static void log_local_array(int i)
{
	const char tag[] = "local";
	SHMLOG_I(tag, "local %d", i);
}

static std::string dump(const char *name)
{
	std::string out;
	shmlog_reader_t *r;
	if (shmlog_reader_open(name, 0, &r) != 0)
		return "(cannot read)";
	struct shmlog_record rec;
	while (shmlog_reader_next(r, &rec, nullptr) == SHMLOG_EV_RECORD)
		out += std::string(rec.tag) + ":" + rec.msg + "\n";
	shmlog_reader_close(r);
	return out;
}

int main()
{
	char name[64];
	snprintf(name, sizeof(name), "test-tagcxx-%d", (int)getpid());
	shmlog_remove(name);
	unsetenv("SHMLOG_TAGS");
	if (shmlog_create(name, nullptr) != 0)
		return 1;
	setenv("SHMLOG_BUFFER", name, 1);
	CHECK(shmlog_set_filter(name, "quiet:S", nullptr) == 0);
	log_as("loud", 1);
	log_as("quiet", 2); // the site saw "loud" first: must still filter
	std::string t = "loud";
	log_as(t.c_str(), 3);
	const char lit[] = "quiet";
	SHMLOG_I(lit, "array %d", 4); // a constant array: cached, filtered
	SHMLOG_I("quiet", "literal %d", 5);
	CHECK(shmlog_set_filter(name, "loud:S", nullptr) == 0);
	log_as("loud", 6);
	log_as("quiet", 7);
	log_local_array(8);
	CHECK(shmlog_set_filter(name, "local:S", nullptr) == 0);
	log_local_array(9); // refreshed with this call's array
	CHECK(shmlog_set_filter(name, "local:I", nullptr) == 0);
	log_local_array(10);
	std::string got = dump(name);
	const char *want = "loud:loud 1\nloud:loud 3\nquiet:quiet 7\n"
			   "local:local 8\nlocal:local 10\n";
	if (got != want) {
		fprintf(stderr, "got:\n%swant:\n%s", got.c_str(), want);
		failures++;
	}
	shmlog_remove(name);
	printf("test_tag_cxx: %d failed\n", failures);
	return failures ? 1 : 0;
}
