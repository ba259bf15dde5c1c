/* SPDX-License-Identifier: MIT */
/*
 * Surviving a file truncated under us (SIGBUS).
 *
 * Whoever may write a buffer's file may also ftruncate(2) it, and touching
 * a page of a shared mapping past the new end of the file raises SIGBUS.
 * Every library function that reads or writes a mapping outside the
 * steady-state write path (readers, shmlog_stat(), the filter calls, a
 * writer's claim of a lane) runs with a thread-local jump buffer armed:
 *
 *	struct shmlog__guard g;
 *	if (sigsetjmp(g.env, 0) == 0) {
 *		shmlog__guard_arm(&g, seg);
 *		...touch the mapping...
 *		shmlog__guard_disarm();
 *	} else {
 *		shmlog__guard_recovered();
 *		...it faulted: the file was truncated: -EIO...
 *	}
 *
 * (sigsetjmp() must run in the frame that stays live while the mapping is
 * touched, hence no wrapper function.) The handler jumps back only for a
 * fault inside the armed segment's mappings, and gives every other SIGBUS
 * to the disposition it replaced, so an application's own SIGBUS handling
 * is untouched. The steady-state write path is not guarded (it would cost
 * every record); a writer trusts its buffer's owner (docs/SECURITY.md).
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "internal.h"

/* The guard armed on this thread, if any. Set before and cleared after
 * every access to a mapping; the signal fences keep the compiler from
 * moving those accesses out of the armed window. Initial-exec: a reader
 * arms it for every record, and in the shared library the default model
 * calls __tls_get_addr() each time; one pointer fits the static TLS that
 * glibc keeps for libraries loaded with dlopen(3). */
static __thread struct shmlog__guard *volatile guard_armed
	__attribute__((tls_model("initial-exec")));
static struct sigaction guard_prev; /* the disposition we replaced */
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static bool guard_covers(const struct shmlog__guard *g, const void *addr)
{
	const unsigned char *a = addr;
	return (a >= g->lo && a < g->hi) ||
	       (g->hdr && a >= g->hdr && a < g->hdr + SHMLOG__PAGE);
}

static void guard_handler(int sig, siginfo_t *si, void *ctx)
{
	struct shmlog__guard *g = guard_armed;
	for (; g; g = g->prev) {
		if (!si || si->si_code <= 0 || !guard_covers(g, si->si_addr))
			continue;
		guard_armed = g->prev;
		siglongjmp(g->env, 1);
	}
	/* Not ours: behave as if we had never been installed. */
	if (guard_prev.sa_flags & SA_SIGINFO) {
		guard_prev.sa_sigaction(sig, si, ctx);
		return;
	}
	if (guard_prev.sa_handler != SIG_DFL &&
	    guard_prev.sa_handler != SIG_IGN) {
		guard_prev.sa_handler(sig);
		return;
	}
	/* Default action: die of this very signal. A fault would recur on
	 * return anyway; raise() covers a SIGBUS sent with kill(2). */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGBUS, &dfl, NULL);
	raise(SIGBUS);
}

static void guard_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	sigemptyset(&sa.sa_mask);
	/* SA_NODEFER: we leave the handler with siglongjmp without restoring
	 * the signal mask (sigsetjmp(.., 0) costs no syscall), so SIGBUS must
	 * not be blocked while it runs. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigaction(SIGBUS, &sa, &guard_prev);
}

void shmlog__guard_arm(struct shmlog__guard *g, const struct shmlog__seg *s)
{
	pthread_once(&guard_once, guard_install);
	g->lo = s->base;
	g->hi = s->base + s->size;
	g->hdr = s->hdr_map;
	g->prev = guard_armed; /* a signal handler may log while we read */
	guard_armed = g;
	atomic_signal_fence(memory_order_seq_cst);
}

void shmlog__guard_disarm(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	struct shmlog__guard *g = guard_armed;
	guard_armed = g ? g->prev : NULL;
}

void shmlog__guard_recovered(void)
{
	/* SA_NODEFER kept SIGBUS unblocked, unless something between the
	 * kernel and us (a sanitizer's wrapper handler) blocked it anyway.
	 * Unblock it, or the next fault would kill. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGBUS);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}
