/* The public header alone, compiled as strict C11 (-pedantic -Werror). */
#include "shmlog.h"

int main(void)
{
	shmlog_t *h = NULL;
	struct shmlog_record rec;
	(void)rec;
	(void)h;
	SHMLOG_I("hdr", "%d", 1);
	if (h) { /* never: compiled, not run */
		struct opaque *op = NULL;
		long double ld = 1;
		const int ci = 3;
		char buf[8] = "buf";
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "%s %d", "to", 2);
		/* typed: no value, eight; untyped: nine, a long double, a
		 * wide string */
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "none");
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "%d %u %ld %f %s %p %c %s",
			      ci, 2u, 3L, 4.0f, buf, (void *)buf, 'c', "8");
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "%d%d%d%d%d%d%d%d%d", 1, 2,
			      3, 4, 5, 6, 7, 8, 9);
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "%Lf %p", ld, (void *)op);
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "%ls", L"wide");
	}
	return 0;
}
