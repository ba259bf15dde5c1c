/* SPDX-License-Identifier: MIT */
/*
 * Writers and the readers that follow them: what a follower costs a
 * writer (its pacing is reader_cursor.c's), and waking readers that sleep.
 *
 * ===================================================================
 * Following writers (reader_cursor.c, reader_wait.c)
 * ===================================================================
 *
 * What a follower (a reader that waits, shmlog_reader_wait()) costs a
 * writer is cache lines. A line the follower still holds when the writer
 * comes back to write it, a lap of the lane later, is a line the writer
 * must take back from the follower's core: a miss on every line written,
 * most of a full-speed writer's rate. So a follower
 *   - flushes (x86 CLFLUSHOPT) the lines of each record it copied and
 *     found whole, but the line the next record starts in: the writer's
 *     next write there misses to memory, which its prefetcher sees coming;
 *   - loads the head of a lane being written (which takes the writer's
 *     head line, and reading up to it the line the writer's next record
 *     starts in) only if its last look at that lane is 4 us old (16 us
 *     for a lane that moved more than 2 bytes a nanosecond: a writer at
 *     full speed), in shmlog_reader_next() and in its wait, which looks
 *     every 1 us and returns as soon as a look finds a record: two misses
 *     for the writer every 4 us, a record seen within about 5 us by a
 *     follower that keeps up; a lane that did not move at the last look
 *     is looked at freely (LMM(ring:F) either way: it reads up to a head
 *     loaded with acquire, whoever loaded it);
 *   - when the writer took the chunk it was reading (it fell a history
 *     behind), goes on at the chunk holding the lane's newest half, not at
 *     the lane's oldest one, which the writer takes next: the skipped
 *     records count as overwritten, by the gap in sequence numbers;
 *   - overtaken by a writer at full speed, leaves the lane alone three
 *     times as long as it read (cursor_rest()): every line it reads is a
 *     miss for the writer a lap later, and one that cannot keep up would
 *     read as many as it can.
 *
 * ===================================================================
 * Waking readers
 * ===================================================================
 *
 * A follower whose looks found nothing for 20 us (and that neither rests
 * nor saw a lane written at full speed in the last 10 ms: then it naps,
 * polling, so that such a writer pays no wake-up) sets notify.sleepers,
 * issues membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), loads every lane's
 * head once more and only then sleeps on notify.futex (a follower that keeps up
 * with a steady writer never sleeps: no membarrier, no wake-up). A writer,
 * after storing head, reads notify.sleepers (a line written only when
 * readers go to sleep, so it stays shared in every writer's cache) and,
 * only if set, clears it, bumps the futex word and calls FUTEX_WAKE. The
 * membarrier gives the reader's side the full barrier that Dekker's
 * pattern needs, so the writer needs only a compiler barrier: either the
 * writer sees the flag, or the reader sees the new head (LMM(ring:W) pairs with
 * the reader's membarrier). Where membarrier is not available, writers
 * issue a full fence instead. A woken follower loads every head before it
 * returns and reads at once. A reader killed while asleep leaves the flag
 * set: the next writer clears it with one futex call, and that is the
 * whole cost.
 *
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* The readers' side of Dekker's pattern ("Waking readers"), and the
 * registration that makes the expedited command usable. */
bool shmlog__membarrier_register(void)
{
	return syscall(SYS_membarrier,
		       MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

int shmlog__membarrier(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) ==
			       0
		       ? 0
		       : -errno;
}

void shmlog__ring_wake(struct shmlog__hdr *hdr)
{
	if (!atomic_exchange_explicit(&hdr->notify.sleepers, 0,
				      memory_order_relaxed))
		return;
	/* LMM(ring:V) pairs with LMM(ring:U) */
	atomic_fetch_add_explicit(&hdr->notify.futex, 1, memory_order_release);
	syscall(SYS_futex, &hdr->notify.futex, FUTEX_WAKE, INT_MAX, NULL, NULL,
		0);
}
