// The public header from C++: it must compile, link and log.
#include "shmlog.h"

int main()
{
	shmlog_t *h = nullptr;
	if (shmlog_open(nullptr, SHMLOG_OPEN_CREATE, &h) == 0) {
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "through %s %d", "h", 1);
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "none");
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "%d%d%d%d%d%d%d%d%d", 1,
			      2, 3, 4, 5, 6, 7, 8, 9);
		shmlog_close(h);
	}
	SHMLOG_W("hdr", "from C++ %d", 42);
	return shmlog_remove(nullptr) == 0 ? 0 : 1; /* it made the buffer */
}
