/* SPDX-License-Identifier: MIT */
/*
 * Lanes: who owns one and whether its owner is alive (OFD locks), who
 * wrote there last (the ident), and claiming, repairing and giving back
 * a lane (shmlog__lane_claim, shmlog__lane_release, shmlog__reap_dead).
 *
 * ===================================================================
 * Who owns a lane, and is its owner alive?
 * ===================================================================
 *
 * A lane is owned by the open file description (OFD) through which a
 * writer's handle opened the buffer: the writer holds an OFD lock
 * (fcntl(F_OFD_SETLK), Linux 3.15) on one byte per lane, at an offset far
 * beyond the file's end (a lock there takes no space). The kernel drops
 * the lock when the last file descriptor of the description is closed,
 * which is at the latest when the process dies, however it dies and in
 * whatever pid namespace it lives. Nothing about it depends on pids, so
 * neither namespaces nor pid reuse can make a dead owner look alive or a
 * live one look dead, and the lock attempt itself serialises claimers of
 * different processes.
 *
 * Threads of one process share their handle's description, so the lock
 * cannot tell them apart: within a process, the handle's own table
 * (struct shmlog::holder, one thread id per lane) says which thread holds
 * a lane, and a thread id is checked with tgkill() in our own namespace,
 * where it means what it says.
 *
 * The lane's owner word (pid << 32 | tid, as the writer sees them) only
 * says that the lane is taken and by whom, for people (`shmlog info`);
 * liveness is never judged from it.
 *
 * Why not a robust futex (the kernel's death notification behind robust
 * process-shared mutexes)? Each thread has exactly one robust list,
 * registered by glibc (set_robust_list) for its own mutexes: a library
 * cannot register a list of its own beside it. And a robust pthread mutex
 * placed in the segment would put glibc's list pointers in memory that
 * anybody who may write the file controls: at thread exit, glibc and the
 * kernel follow and unlink those pointers, so a hostile writer could steer
 * stores in the writer's address space. An OFD lock lives in the kernel,
 * where no writer of the file can reach it.
 *
 * Shared lanes, lent for one record at a time, would cost two fcntl()
 * calls per record that way, many times the rest of a borrowed write.
 * So each handle holds one lock for the whole
 * of its life instead, a "slot" byte at 2^62 + 2^32 + slot, and a borrower
 * stores a word naming its slot: BORROWED | slot << 48 | nonce << 22 | tid.
 * A claimer finding such a word asks the kernel whether the slot is still
 * locked (F_OFD_GETLK): if not, the borrower's process is dead. A slot is
 * reused by a later process; its random 26-bit nonce (new at every slot
 * acquisition) keeps the new owner's words from ever equalling a dead
 * predecessor's, so a stale "dead" verdict cannot land on a live borrower
 * (but for a 1 in 2^26 coincidence, in a window of nanoseconds). A word of
 * our own slot and nonce is a thread of ours: tgkill(), in our namespace.
 *
 * The lane's ident (struct shmlog__ident, format 2.2) keeps who claimed
 * it last, pid, tid and process name, after the owner word is cleared:
 * `shmlog info` and `shmlog top` name a writer that has exited. Written at
 * the claim of a lane to keep (never for a borrowed record, never on the
 * write path) under a sequence word, as the filter's generation: odd
 * while written, so a reader copies, re-checks and retries a bounded
 * number of times. The claimer holds the lane's lock: one writer at a
 * time. The same ident goes into one of the recent writers' slots in page
 * 0 (struct shmlog__recent), so that writers taking turns in one lane
 * stay named; there a CAS of the sequence word decides who writes.
 *
 * Costs: a claim is one fcntl() (two on a lane left by a dead owner), a
 * release one, opening a handle one or a few (its slot); the write path
 * makes none, a borrowed record none (docs/DESIGN.md).
 *
 * ===================================================================
 * Dead writers
 * ===================================================================
 *
 * A writer killed at any instruction leaves its lane's owner word naming a
 * dead thread, and its OPEN chunk OPEN. Nobody waits for it: other writers
 * have lanes and chunks of their own, and take LIVE chunks only.
 *
 * Whether an owner is alive is never judged from the pid and tid in its
 * word: a lane is held by the open file description that holds the lane's
 * OFD lock, one byte at 2^62 + lane in the buffer's file, which the kernel
 * drops when the owner's process dies. All of it is in this file and
 * docs/DESIGN.md ("Lane ownership").
 *
 * The next writer to claim the lane (shmlog__lane_claim; also a writer
 * that reaps dead lanes, shmlog__reap_dead, when it claims its own) finds
 * the lane's OPEN chunk, if any, and then one of:
 *   - head inside it: walk the chain [base, head) for the newest sequence
 *     number (next_seq lags by one if the writer died between steps 4
 *     and 5); reserve == head: nothing else to do; reserve != head: the
 *     writer died in steps 1-4: a record whose word says COMMITTED (or
 *     TORN: a claimer died repairing it) with the next seq is published
 *     as it is; anything else is marked TORN over [head, reserve) with
 *     the next seq and the lane's torn counter is bumped, once;
 *   - head outside it: the writer died in chunk_switch between d and f:
 *     head = the chunk's base, and the same repair from there;
 *   - no OPEN chunk: the writer died between b and d, or released the
 *     lane cleanly: the newest LIVE chunk of the lane is made OPEN again
 *     (CAS) if head is inside it, else the next record takes a chunk.
 * A chain that does not make sense (damage) gives its chunk up (LIVE) and
 * the lane starts in a new chunk, numbering on after its newest record.
 * A dead lane reaped is released: its chunks become nobody's share.
 *
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef F_OFD_GETLK
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#endif

/* The lock byte of lane @lane: far beyond any file's end (2^62 with a
 * 64-bit off_t), where the kernel keeps locks without storing anything. */
static off_t lock_offset(unsigned lane)
{
	return ((off_t)1 << (sizeof(off_t) * 8 - 2)) + (off_t)lane;
}

/* Borrower slots: one lock byte per handle, above every lane's. */
#define SLOTS (1u << 15)
#define SLOT_PROBES 64
#define BORROW_BIT (1ull << 63)
#define NONCE_MASK ((1u << 26) - 1)
#define TID_MASK ((1u << 22) - 1) /* PID_MAX_LIMIT is 2^22 */

static unsigned slot_lane(unsigned slot)
{
	/* as a "lane" number for lock_offset(): past every lane (< 2^16) */
	return (1u << 20) + slot;
}

static int ofd_lock(int fd, int cmd, short type, unsigned lane,
		    struct flock *out)
{
	struct flock fl = {0};
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = lock_offset(lane);
	fl.l_len = 1;
	fl.l_pid = 0; /* required for OFD locks */
	int r = fcntl(fd, cmd, &fl);
	if (out)
		*out = fl;
	return r < 0 ? -errno : 0;
}

uint64_t shmlog__owner_word(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

/* Is thread @tid of this process alive? In our own namespace, so right. */
static bool own_thread_alive(uint32_t tid)
{
	return syscall(SYS_tgkill, getpid(), (pid_t)tid, 0) == 0 ||
	       errno == EPERM;
}

static unsigned word_slot(uint64_t owner)
{
	return (unsigned)(owner >> 48) & (SLOTS - 1);
}

static uint32_t word_nonce(uint64_t owner)
{
	return (uint32_t)(owner >> 22) & NONCE_MASK;
}

uint64_t shmlog__borrow_word(const struct shmlog *h, uint32_t tid)
{
	return BORROW_BIT | (uint64_t)h->slot << 48 |
	       (uint64_t)h->slot_nonce << 22 | (tid & TID_MASK);
}

bool shmlog__is_borrow_word(uint64_t owner)
{
	return owner & BORROW_BIT;
}

/* Is byte @lane's lock held through any description but @fd's? */
static int locked_elsewhere(int fd, unsigned lane)
{
	struct flock fl;
	int err = ofd_lock(fd, F_OFD_GETLK, F_WRLCK, lane, &fl);
	if (err)
		return err; /* EINVAL: a kernel older than 3.15 */
	return fl.l_type != F_UNLCK;
}

int shmlog__owner_alive(const struct shmlog__seg *s, unsigned lane,
			uint64_t owner)
{
	if (shmlog__is_borrow_word(owner))
		return locked_elsewhere(s->fd, slot_lane(word_slot(owner)));
	return locked_elsewhere(s->fd, lane);
}

bool shmlog__borrower_dead(const struct shmlog *h, uint64_t owner)
{
	if (!shmlog__is_borrow_word(owner))
		return true; /* no borrower writes that: junk */
	if (h->slot >= 0 && word_slot(owner) == (unsigned)h->slot)
		/* our slot: a thread of ours, or a dead predecessor's */
		return word_nonce(owner) != h->slot_nonce ||
		       !own_thread_alive((uint32_t)owner & TID_MASK);
	/* another process's slot: dead once its lock is gone */
	return locked_elsewhere(h->lock_fd, slot_lane(word_slot(owner))) == 0;
}

/* A nonce for a new slot: unlike any a dead predecessor used, but for
 * chance. Async-signal-safe (the atfork child takes a slot too). */
static uint32_t new_nonce(const struct shmlog *h)
{
	uint32_t n = 0;
	if (syscall(SYS_getrandom, &n, sizeof(n), 1 /* GRND_NONBLOCK */) !=
	    (long)sizeof(n)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		n = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() * 2654435761u ^
		    (uint32_t)(uintptr_t)h;
	}
	return n & NONCE_MASK;
}

void shmlog__slot_take(struct shmlog *h)
{
	h->slot = -1;
	if (h->lock_fd < 0 || h->no_ofd)
		return;
	h->slot_nonce = new_nonce(h);
	unsigned start = (h->slot_nonce * 2654435761u) % SLOTS;
	for (unsigned i = 0; i < SLOT_PROBES; i++) {
		unsigned slot = (start + i) % SLOTS;
		int err = ofd_lock(h->lock_fd, F_OFD_SETLK, F_WRLCK,
				   slot_lane(slot), NULL);
		if (!err) {
			h->slot = (int)slot;
			return;
		}
		if (err == -EINVAL || err == -ENOLCK || err == -EOPNOTSUPP)
			return; /* no OFD locks: nothing to borrow with */
	}
}

bool shmlog__lane_lock(struct shmlog *h, unsigned lane, uint32_t tid)
{
	if (h->claims_refused)
		return false;
	_Atomic uint32_t *holder = &h->holder[lane];
	uint32_t cur = 0;
	/* First among the threads of this process (same description)... */
	if (!atomic_compare_exchange_strong(holder, &cur, tid)) {
		/* a thread of ours that ended without giving it back (it
		 * exited by a raw syscall): the lane is ours to take over */
		if (cur == tid || own_thread_alive(cur) ||
		    !atomic_compare_exchange_strong(holder, &cur, tid))
			return false;
		return true; /* the description holds the lock already */
	}
	/* ...then among processes: the kernel decides. */
	int err = ofd_lock(h->lock_fd, F_OFD_SETLK, F_WRLCK, lane, NULL);
	if (err == -EINVAL || err == -ENOLCK || err == -EOPNOTSUPP) {
		/* no OFD locks (Linux < 3.15, or a filesystem without locks):
		 * the owner word's CAS still serialises claimers, but a dead
		 * owner's lane is never taken over (shmlog__lane_claim), and
		 * threads without a lane cannot borrow (no slot). Written
		 * only there. */
		h->no_ofd = true;
		err = 0;
	}
	if (err) {
		atomic_store(holder, 0);
		return false;
	}
	return true;
}

void shmlog__lane_unlock(struct shmlog *h, unsigned lane)
{
	if (lane >= shmlog__lanes_exclusive(&h->seg.fixed))
		return; /* a shared lane: the borrower's slot says it all */
	/* The lock first, then our own table: a thread of ours that claims
	 * the lane once the table says free takes the lock afresh. */
	if (!h->no_ofd)
		ofd_lock(h->lock_fd, F_OFD_SETLK, F_UNLCK, lane, NULL);
	atomic_store(&h->holder[lane], 0);
}

/* A new open file description of the file @fd refers to: through
 * /proc/self/fd (immune to renames), else @path; checked to be the same
 * file. Async-signal-safe (it runs in the atfork child). */
static int reopen_file(int fd, const char *path)
{
	char proc[40] = "/proc/self/fd/", digits[16];
	size_t at = 14;
	int n = 0;
	for (int v = fd; n == 0 || v; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	while (n)
		proc[at++] = digits[--n];
	proc[at] = '\0';
	int flags = O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	int nfd = open(proc, flags);
	if (nfd < 0 && path)
		nfd = open(path, flags | O_NOFOLLOW);
	if (nfd < 0)
		return -errno;
	struct stat a, b;
	if (fstat(nfd, &a) < 0 || fstat(fd, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		close(nfd);
		return -EPERM; /* the name leads elsewhere now */
	}
	return nfd;
}

int shmlog__owner_open(struct shmlog *h, const char *path)
{
	/* The locks go on a description of their own that is never mapped:
	 * a mapping holds its description too, and a fork child inherits
	 * the parent's mappings, so locks on the mapped one would outlive
	 * a dead parent for as long as a child of it lives. */
	h->lock_path = strdup(path);
	if (!h->lock_path)
		return -ENOMEM;
	h->lock_fd = reopen_file(h->seg.fd, path);
	return h->lock_fd < 0 ? h->lock_fd : 0;
}

void shmlog__owner_close(struct shmlog *h)
{
	if (h->lock_fd >= 0)
		close(h->lock_fd); /* drops every lock held through @h */
	h->lock_fd = -1;
	free(h->lock_path);
	h->lock_path = NULL;
}

int shmlog__owner_reopen(struct shmlog *h)
{
	/* After fork(): the child shares the parent's lock description, so
	 * its locks would be the parent's, and its copy would keep them
	 * after the parent's death. A description of its own replaces it
	 * under the same number. */
	for (unsigned i = 0; i < h->seg.fixed.lane_count; i++)
		atomic_store(&h->holder[i], 0);
	int nfd = reopen_file(h->seg.fd, h->lock_path);
	if (nfd >= 0 && dup3(nfd, h->lock_fd, O_CLOEXEC) < 0) {
		int err = -errno;
		close(nfd);
		nfd = err;
	}
	if (nfd >= 0) {
		close(nfd);
		shmlog__slot_take(h); /* the new description has no lock */
		return 0;
	}
	/* Without a description of its own the child must not claim (its
	 * lock attempts would succeed on its parent's live lanes), nor keep
	 * the parent's. */
	close(h->lock_fd);
	h->lock_fd = -1;
	h->slot = -1;
	h->claims_refused = true;
	return nfd;
}

/* The process's name (its main thread's comm) into @out, NUL-padded:
 * /proc/self/comm, else the calling thread's own name. Async-signal-safe
 * (a claim may happen in a signal handler's first write). */
static void process_name(char out[16])
{
	memset(out, 0, 16);
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		ssize_t n = read(fd, out, 16);
		close(fd);
		if (n > 0) {
			for (ssize_t i = 0; i < n; i++)
				if (out[i] == '\n')
					memset(out + i, 0, (size_t)(16 - i));
			if (out[0])
				return;
		}
	}
	char buf[17] = {0}; /* PR_GET_NAME writes up to 16 bytes */
	if (prctl(PR_GET_NAME, buf, 0, 0, 0) == 0)
		memcpy(out, buf, 16);
}

/* Fill @id, whose sequence word the caller turned odd (@odd): fields,
 * then the even word. */
static void ident_fill(struct shmlog__ident *id, uint32_t odd, uint32_t pid,
		       uint32_t tid, uint32_t lane, const uint64_t name[2])
{
	/* LMM(ident:A) the odd word before the fields; pairs with
	 * LMM(ident:D) */
	shmlog__fence_release();
	atomic_store_explicit(&id->pid, pid, memory_order_relaxed);
	atomic_store_explicit(&id->tid, tid, memory_order_relaxed);
	atomic_store_explicit(&id->lane, lane, memory_order_relaxed);
	atomic_store_explicit(&id->name[0], name[0], memory_order_relaxed);
	atomic_store_explicit(&id->name[1], name[1], memory_order_relaxed);
	/* LMM(ident:B) the fields before the even word; pairs with
	 * LMM(ident:C) */
	atomic_store_explicit(&id->gen, odd + 1, memory_order_release);
}

void shmlog__ident_store(const struct shmlog__seg *s, unsigned lane,
			 uint32_t pid, uint32_t tid)
{
	char name[16];
	uint64_t w[2];
	process_name(name);
	memcpy(w, name, sizeof(w));
	/* the lane's own: ours alone while we hold the lane (a word left
	 * odd by a claimer that died writing it is ours to write over) */
	struct shmlog__ident *id = &seg_lane(s, lane)->ident;
	uint32_t g = atomic_load_explicit(&id->gen, memory_order_relaxed);
	uint32_t odd = (g | 1) + 2; /* odd, and never 0 again */
	atomic_store_explicit(&id->gen, odd, memory_order_relaxed);
	ident_fill(id, odd, pid, tid, 0, w);

	/* a recent writers' slot: shared, so taken by a CAS from even to
	 * odd; one left odd by a writer that died there is skipped for
	 * good (the slot is lost, its neighbours serve) */
	if (!s->writable)
		return;
	struct shmlog__recent *rc = hdr_recent(s->hdr);
	uint64_t n = atomic_fetch_add_explicit(&rc->count, 1,
					       memory_order_relaxed);
	for (unsigned k = 0; k < SHMLOG__RECENT; k++) {
		struct shmlog__ident *sl = &rc->slot[(n + k) % SHMLOG__RECENT];
		g = atomic_load_explicit(&sl->gen, memory_order_relaxed);
		if ((g & 1) || !atomic_compare_exchange_strong_explicit(
				       &sl->gen, &g, g + 1,
				       memory_order_relaxed,
				       memory_order_relaxed))
			continue;
		ident_fill(sl, g + 1, pid, tid, lane + 1, w);
		return;
	}
}

void shmlog__ident_died(struct shmlog__lane *ctl)
{
	struct shmlog__ident *id = &ctl->ident;
	uint32_t g = atomic_load_explicit(&id->gen, memory_order_relaxed);
	if (!g)
		return; /* nobody named: nothing to say of them */
	uint32_t odd = (g | 1) + 2;
	atomic_store_explicit(&id->gen, odd, memory_order_relaxed);
	shmlog__fence_release(); /* LMM(ident:A) */
	atomic_fetch_or_explicit(&id->lane, IDENT_DIED, memory_order_relaxed);
	/* LMM(ident:B) */
	atomic_store_explicit(&id->gen, odd + 1, memory_order_release);
}

int shmlog__ident_load(const struct shmlog__ident *id, uint32_t *pid,
		       uint32_t *tid, uint32_t *lane, char name[16])
{
	for (int tries = 0; tries < 8; tries++) {
		/* LMM(ident:C) */
		uint32_t g = atomic_load_explicit(&id->gen,
						  memory_order_acquire);
		if (g == 0)
			return -ENOENT; /* never written */
		if (g & 1)
			continue; /* a claimer is writing it */
		uint32_t p = atomic_load_explicit(&id->pid,
						  memory_order_relaxed);
		uint32_t t = atomic_load_explicit(&id->tid,
						  memory_order_relaxed);
		uint32_t l = atomic_load_explicit(&id->lane,
						  memory_order_relaxed);
		uint64_t w[2] = {
			atomic_load_explicit(&id->name[0], memory_order_relaxed),
			atomic_load_explicit(&id->name[1], memory_order_relaxed),
		};
		/* LMM(ident:D) the fields before the second look */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&id->gen, memory_order_relaxed) != g)
			continue;
		*pid = p;
		*tid = t;
		*lane = l;
		memcpy(name, w, 16);
		return 0;
	}
	return -EAGAIN; /* rewritten all along: a claimer in a loop, or junk */
}

/* Give lane @lane's chunks back: its reserved ones to nobody (never
 * used: they hold no record), and with @open its OPEN ones to its history
 * (LIVE). Its owner releasing it (shmlog__lane_release(), close_lanes()
 * in writer.c), or the claimer of a lane whose owner died (reserved ones
 * only: lane_resume() repairs the OPEN chunk). CASes, not stores: a
 * hostile file may have changed a word. */
void shmlog__lane_give_back(const struct shmlog__seg *s, unsigned lane,
			    bool open)
{
	const struct shmlog__fixed *f = &s->fixed;
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t w = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (!chunk_held(f, w) || chunk_lane(w) != lane)
			continue;
		if (chunk_state(w) == CHUNK_RESV)
			atomic_compare_exchange_strong(seg_chunk(s, i), &w, 0);
		else if (open && chunk_state(w) == CHUNK_OPEN)
			atomic_compare_exchange_strong(
				seg_chunk(s, i), &w, chunk_id(w) | CHUNK_LIVE);
	}
}

/* ---- claiming and repairing a lane ------------------------------------ */

/* The owner died inside a write: publish or mark torn what it left in
 * [head, reserve) of its OPEN chunk. A reservation no writer could have
 * made (damage) is given up, the lane's history kept. Only called with the
 * lane's ownership held. */
static void lane_repair(const struct shmlog__fixed *f, struct shmlog__wlane *w,
			uint64_t reserve)
{
	struct shmlog__lane *ctl = w->ctl;
	uint64_t pos = w->head, len = reserve - pos;
	if (len < REC_HDR || len > f->max_record || len % REC_ALIGN ||
	    len > w->cend - pos) {
		/* nonsense: keep what the lane holds, forget the reservation */
		atomic_store_explicit(&ctl->reserve, pos, memory_order_relaxed);
		return;
	}
	TESTPOINT(8);
	struct shmlog__rec *r = rec_at(w->cdata, pos - w->cbase);
	uint32_t rlen;
	unsigned state = shmlog__rec_check(f, r, pos, w->cend - pos, &rlen);
	if (state && state != REC_PAD && rlen == len && r->seq == w->seq) {
		/* died after the commit: the record is whole; or a claimer
		 * died after marking it torn: counted already */
		w->seq++;
	} else {
		/* the header reads as no writer's (priority 0): a TORN
		 * record flipped to COMMITTED is still not shown; the body
		 * is zeroed too, like a PAD's (pad_write): no word moved
		 * into it frames what an earlier incarnation left there */
		atomic_store_explicit(&r->word, 0, memory_order_relaxed);
		memset((char *)r + sizeof(r->word), 0,
		       (size_t)len - sizeof(r->word));
		r->seq = w->seq++;
		r->len = (uint16_t)len;
		atomic_store_explicit(&r->word, pos | REC_TORN,
				      memory_order_release);
		atomic_fetch_add_explicit(&ctl->torn, 1, memory_order_relaxed);
	}
	TESTPOINT(9);
	w->head = reserve;
	atomic_store_explicit(&ctl->head, reserve, memory_order_release);
	/* LMM(ring:N) with release, as a commit stores it: a reader that
	 * sees this next_seq sees this head too, so it never counts the torn record
	 * both as a gap (cursor_gone()) and as torn */
	atomic_store_explicit(&ctl->next_seq, w->seq, memory_order_release);
}

/* Walk the chain [base, head) of the OPEN chunk of a lane just claimed:
 * the newest record's seq tells where numbering resumes (next_seq may lag
 * by one when the last owner died between its last two stores). false if
 * the chain is broken (corruption). */
static bool lane_last_seq(const struct shmlog__fixed *f,
			  const struct shmlog__wlane *w, uint64_t *last)
{
	uint64_t pos = w->cbase;
	for (uint32_t guard = f->chunk_size / REC_ALIGN + 1; pos != w->head;) {
		struct shmlog__rec *r = rec_at(w->cdata, pos - w->cbase);
		uint32_t len;
		unsigned state = shmlog__rec_check(f, r, pos, w->cend - pos, &len);
		if (!state || state == REC_PAD || !guard-- ||
		    w->head - pos < len)
			return false;
		*last = r->seq;
		pos += len;
	}
	return true;
}

/* Take the lane's place in its chunks after a claim: its OPEN chunk (a
 * dead owner's), or its newest LIVE one made OPEN again if head is inside
 * it (a lane released cleanly); else none, and the first append takes
 * one. Returns the reservation left to repair (== w->head: none). */
static uint64_t lane_resume(const struct shmlog__seg *s,
			    struct shmlog__wlane *w, uint64_t head,
			    uint64_t reserve)
{
	const struct shmlog__fixed *f = &s->fixed;
	unsigned i;
	uint64_t word;
	w->head = head & ~(uint64_t)(REC_ALIGN - 1);
	/* the claim's incarnations come from a block reserved after it; the
	 * survey and its list describe whatever lane came before */
	w->inc_next = w->inc_end = 0;
	if (w->survey)
		shmlog__survey_forget(w->survey);
	w->switches = 0;
	shmlog__lane_give_back(s, w->lane, false); /* a dead owner's reserved */
	chunk_none(w);
	if (shmlog__chunk_newest(s, w->lane, CHUNK_IN_OPEN, &i, &word)) {
		/* other OPEN chunks of ours (damage) go to the history */
		unsigned j;
		uint64_t other;
		uint64_t newest = chunk_base(f, word);
		for (unsigned guard = f->chunk_count;
		     guard && shmlog__chunk_find(s, w->lane,
						 newest - SHMLOG__LANE_REACH,
						 newest - 1, CHUNK_IN_OPEN, &j,
						 &other);
		     guard--) {
			uint64_t live = chunk_id(other) | CHUNK_LIVE;
			atomic_compare_exchange_strong(seg_chunk(s, j), &other,
						       live);
		}
	} else if (!shmlog__chunk_newest(s, w->lane, CHUNK_IN_LIVE, &i, &word) ||
		   head - chunk_base(f, word) > f->chunk_size) {
		return w->head; /* nothing to resume in */
	} else {
		uint64_t open = chunk_id(word) | CHUNK_OPEN;
		if (!atomic_compare_exchange_strong(seg_chunk(s, i), &word,
						    open))
			return w->head; /* taken meanwhile */
		word = open;
	}
	chunk_install(s, w, i, word);
	if (head - w->cbase > f->chunk_size || (head & (REC_ALIGN - 1))) {
		/* died after taking the chunk, before its head moved in */
		w->head = w->cbase;
		atomic_store_explicit(&w->ctl->head, w->head,
				      memory_order_release);
	}
	if (reserve - w->head > w->cend - w->head)
		reserve = w->head; /* not a reservation in this chunk */
	return reserve;
}

bool shmlog__lane_claim(const struct shmlog__seg *s, unsigned lane,
			uint64_t me, bool steal_dead, struct shmlog__wlane *w)
{
	const struct shmlog__fixed *f = &s->fixed;
	struct shmlog__lane *ctl = seg_lane(s, lane);
	uint64_t owner = atomic_load_explicit(&ctl->owner, memory_order_relaxed);

	/* Liveness is a lock (above), never the pid in the owner word. */
	if (owner != 0 && !steal_dead)
		return false;
	if (lane >= shmlog__lanes_exclusive(f)) {
		/* a shared lane, lent for one record: the word names the
		 * borrower's slot, whose lock says whether it lives; the CAS
		 * serialises claimers */
		if (owner != 0 && !shmlog__borrower_dead(w->h, owner))
			return false;
		if (!atomic_compare_exchange_strong_explicit(
			    &ctl->owner, &owner, me, memory_order_acquire,
			    memory_order_relaxed))
			return false;
	} else {
		/* the lane's own lock: taking it serialises claimers, and
		 * succeeds only if no live process holds the lane (nor a live
		 * thread of ours) */
		if (!shmlog__lane_lock(w->h, lane, w->tid))
			return false;
		owner = atomic_load_explicit(&ctl->owner,
					     memory_order_relaxed);
		/* Ours alone now: a non-zero word names a dead owner (or is
		 * junk). Without OFD locks nothing says it is dead. */
		if ((owner != 0 && w->h->no_ofd) ||
		    !atomic_compare_exchange_strong_explicit(
			    &ctl->owner, &owner, me, memory_order_acquire,
			    memory_order_relaxed)) {
			shmlog__lane_unlock(w->h, lane);
			return false;
		}
	}
	atomic_fetch_add_explicit(&ctl->claims, 1, memory_order_relaxed);

	w->ctl = ctl;
	w->lane = lane;
	/* What the lane holds now is a departed writer's: every incarnation
	 * handed out so far is at most the epoch (chunk_inc()), and ours
	 * will be above it (a shared lane, lent for one record, has no
	 * writer of its own to tell apart) */
	w->claim_mark = 0;
	if (lane < shmlog__lanes_exclusive(f)) {
		uint64_t e = atomic_load_explicit(&seg_space(s)->epoch,
						  memory_order_relaxed) + 1;
		w->claim_mark = (e & CHUNK_INC_MASK) << CHUNK_INC_SHIFT | 1;
		atomic_store_explicit(&ctl->claim_mark, w->claim_mark,
				      memory_order_relaxed);
	}
	uint64_t head = atomic_load_explicit(&ctl->head, memory_order_relaxed);
	uint64_t reserve =
		atomic_load_explicit(&ctl->reserve, memory_order_relaxed);
	uint64_t last = atomic_load_explicit(&ctl->next_seq,
					     memory_order_relaxed) - 1;
	reserve = lane_resume(s, w, head, reserve);
	TESTPOINT(7);
	/* A lane given back cleanly resumes from next_seq; one taken from a
	 * dead owner is walked, for next_seq may lag its last record. */
	if (owner && w->chunk != CHUNK_NONE) {
		uint64_t walked = last;
		if (lane_last_seq(f, w, &walked)) {
			if ((int64_t)(walked - last) > 0)
				last = walked;
		} else {
			/* nonsense: the chunk goes to the history as it is
			 * (readers step over its damage) and the lane goes
			 * on in a new one, numbering after the newest seen */
			if ((int64_t)(walked - last) > 0)
				last = walked;
			chunk_close(s, w);
			reserve = w->head;
		}
	}
	w->seq = last + 1;
	if (owner)
		atomic_store_explicit(&ctl->next_seq, w->seq,
				      memory_order_relaxed);
	/* the dead writer stays named, as dead (a writer that keeps the
	 * lane names itself next: shmlog__ident_store()) */
	if (owner && lane < shmlog__lanes_exclusive(f))
		shmlog__ident_died(ctl);
	if (reserve != w->head)
		lane_repair(f, w, reserve);
	else
		atomic_store_explicit(&ctl->reserve, w->head,
				      memory_order_relaxed);
	shmlog__fence_release();
	return true;
}

void shmlog__lane_announce(struct shmlog__hdr *hdr, unsigned lane)
{
	atomic_store_explicit(&hdr->stats.last_released, lane + 1,
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&hdr->stats.releases, 1,
				  memory_order_relaxed);
}

void shmlog__lane_release(struct shmlog__wlane *w, bool announce)
{
	/* The chunk, then the word, then the lock: whoever takes the lock
	 * next finds the lane free, not abandoned. */
	chunk_close(&w->h->seg, w);
	shmlog__lane_give_back(&w->h->seg, w->lane, false);
	if (w->survey)
		shmlog__survey_resv_drop(w->survey);
	atomic_store_explicit(&w->ctl->owner, 0, memory_order_release);
	shmlog__lane_unlock(w->h, w->lane);
	/* threads borrowing lanes watch this to try for one of their own */
	if (announce)
		shmlog__lane_announce(w->h->seg.hdr, w->lane);
}

void shmlog__reap_dead(struct shmlog *h, uint64_t me, uint32_t tid)
{
	const struct shmlog__seg *s = &h->seg;
	const struct shmlog__fixed *f = &s->fixed;
	bool holds[SHMLOG_LANES_MAX];
	memset(holds, 0, f->lane_count * sizeof(holds[0]));
	for (unsigned i = 0; i < f->chunk_count; i++) {
		uint64_t d = atomic_load_explicit(seg_chunk(s, i),
						  memory_order_relaxed);
		if (chunk_held(f, d))
			holds[chunk_lane(d)] = true;
	}
	for (unsigned l = 0; l < f->lane_count; l++) {
		if (!holds[l] || !atomic_load_explicit(&seg_lane(s, l)->owner,
						       memory_order_relaxed))
			continue;
		struct shmlog__wlane tmp;
		memset(&tmp, 0, sizeof(tmp));
		tmp.h = h;
		tmp.tid = tid;
		/* succeeds only if its owner is dead: repairs, then frees */
		if (shmlog__lane_claim(s, l, me, true, &tmp))
			shmlog__lane_release(&tmp, true);
	}
}
