// SPDX-License-Identifier: MIT
// shmlog from C++ (C++11 or later): the printf-style macros store each
// call's values by their types, as from C, with no va_list; any reader
// formats the text. Logs into buffer "app" (created if missing) and the
// default buffer ($SHMLOG_BUFFER or "main"); read them with
// `shmlog cat -b app`.
#include <shmlog.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdint>
#include <string>

enum class link_state : std::uint8_t { down, up };

int main()
{
	shmlog_t *h = nullptr;
	int err = shmlog_open("app", SHMLOG_OPEN_CREATE, &h);
	if (err) {
		fprintf(stderr, "hello_cxx: %s\n", shmlog_strerror(err));
		return 1;
	}
	std::string ifname = "eth0";
	const double ms = 12.5;
	// a std::string is passed as its c_str(); a scoped enum as its
	// underlying type (-Wformat wants the cast: ... does not promote it)
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "net", "link %s is %u after %.1f ms",
		      ifname.c_str(), static_cast<unsigned>(link_state::up), ms);
	for (long i = 0; i < 3; i++)
		SHMLOG_LOG_TO(h, SHMLOG_DEBUG, "hello", "tick %ld of pid %ld", i,
			      static_cast<long>(getpid()));
	shmlog_close(h);

	SHMLOG_W("hello", "done, %zu bytes of name", ifname.size());
	return 0;
}
