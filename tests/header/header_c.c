/* The public header alone, compiled as strict C11 (-pedantic -Werror). */
#include "shmlog.h"

int main(void)
{
	shmlog_t *h = NULL;
	struct shmlog_record rec;
	(void)rec;
	(void)h;
	SHMLOG_I("hdr", "%d", 1);
	if (h) /* never: compiled, not run */
		SHMLOG_LOG_TO(h, SHMLOG_INFO, "hdr", "%s %d", "to", 2);
	return 0;
}
