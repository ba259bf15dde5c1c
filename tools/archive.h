/* SPDX-License-Identifier: MIT */
/*
 * `shmlog archive`'s parts, one file each:
 *  - archive.c: the command: options, the buffers it reads (sources), the
 *    drain loop;
 *  - archive_block.c: the block being filled: records coded into RUN
 *    entries, the formats they name, losses, buffers' identities;
 *  - archive_file.c: the directory's files: recovery from the newest one,
 *    sealing blocks, new files, rotation;
 *  - archive_disk.c: the way to the disk: stages of sealed blocks written
 *    with O_DIRECT, and the syncer thread that writes and syncs them.
 * The format is src/archive_format.h's; archive.c's opening comment says
 * how it stays exact across crashes.
 */
#ifndef SHMLOG_TOOLS_ARCHIVE_H
#define SHMLOG_TOOLS_ARCHIVE_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive_codec.h"
#include "shmlog.h"

#define CMD "archive"
#define SOURCES_MAX 64
#define BUFS_MAX 256 /* buffer ids in one archive */
#define BLOCK_TARGET (256u << 10) /* a write(2) once a block holds this */
/* The most one record adds to a block: a FORMAT entry, a run's header and
 * the record, or a LOSS entry before it. (A span's records come no longer
 * than the room left and max_record, its FORMAT entries only while they
 * fit: archive_block.c.) */
#define ENTRY_MAX                                                              \
	(sizeof(struct shmlog_arc_format) + SHMLOG_MSG_MAX + 8 +               \
	 sizeof(struct shmlog_arc_run) + SHMLOG_ARC_RUN_REC_MAX +              \
	 sizeof(struct shmlog_arc_loss))
#define OUT_CAP (BLOCK_TARGET + 64 * 1024 + ENTRY_MAX)
/* A file's blocks are reserved this far ahead of its writes (fallocate
 * past its end, its size unchanged), within --max-file-size: with the
 * default size, once a file, when it is new. (A fallocate() while the
 * syncer's O_DIRECT write extends the file waits for that write: in 8 MiB
 * steps it stopped the drain for 4-6 ms each, measured, and a writer paced
 * at 10 M records/s into 16 MiB lost records.) */
#define RESERVE_STEP (64u << 20)
/* A block is sealed when full, when a turn finds nothing new, or once it
 * is this old; what was read reaches the file within about twice that. */
#define BLOCK_MS 100
#define RETRY_MS 200 /* a full disk is tried again this often */
#define SYNC_MS 1000 /* written data is fdatasync'ed this often */
/* Sealed blocks gather in a stage on their way to the disk; each
 * STAGE_STEP bytes of it the syncer writes with O_DIRECT, in whole
 * DIO_ALIGN units (archive_disk.c). A stage is one huge page (STAGE_CAP),
 * its step what leaves room for a block and two units' slack after it. */
#define DIO_ALIGN 4096u
#define STAGE_CAP (2u << 20)
#define STAGE_STEP ((STAGE_CAP - OUT_CAP - 2 * DIO_ALIGN) & ~(DIO_ALIGN - 1))
/* One being filled, the others the syncer's to write: STAGES_FIRST at
 * first, more (up to STAGES) made while the disk lags behind, so that a
 * hiccup of the disk does not stop the drain. Huge pages, unless one
 * took longer than HUGE_SLOW_NS to fault (archive_disk.c, stage_make()). */
#define STAGES 32
#define STAGES_FIRST 2
#define HUGE_SLOW_NS 1000000
#define CHECK_MS 500 /* removed or recreated buffers are looked for */
/* Chores the syncer may hold: a stage's writes (two at a file's end: its
 * whole units, then the rest) and, for each file ended, its end and the
 * next one's name; every file ended holds a stage till written, so at
 * most STAGES wait. Then a sync. A full queue would stop the drain as the
 * disk's pace, not the stages', and the page cache never taken. */
#define SYNC_QUEUE (4 * STAGES + 2)
_Static_assert(STAGE_CAP % DIO_ALIGN == 0 && STAGE_STEP % DIO_ALIGN == 0,
	       "O_DIRECT writes of whole units from aligned stages");

/* A format of a buffer's table that its records named. */
struct fmtent {
	uint32_t id; /* first: the table's key (shmlog__arc_idtab); 0, free */
	uint32_t len; /* 0: the buffer holds no format of that id */
	char *text;
	uint64_t file; /* the file its FORMAT entry went to last */
	uint64_t block; /* the block that named it last (archiver.block_no) */
};
_Static_assert(offsetof(struct fmtent, id) == 0, "an idtab entry");

/* A buffer the archive knows: one being read now, or one named by the
 * newest file (kept so that every new file carries its position). */
struct bufent {
	struct shmlog__arc_idtab fmts; /* of struct fmtent */
	bool used;
	char path[SHMLOG_ARC_PATH_MAX + 1];
	int64_t created_ns;
	uint64_t ino;
	uint64_t initial_seq;
	unsigned lanes;
	uint64_t *next; /* next sequence number to archive, per lane */
	uint64_t *flushed; /* the same, as the file holds it */
	bool written; /* its BUFFER entry is in the current file */
};

/* A buffer being read. */
struct source {
	const char *name; /* as given to -b */
	char path[512];
	shmlog_reader_t *rd;
	struct bufent *b;
	uint16_t id;
	uint64_t *torn; /* torn records reported before the lane's next one */
	uint64_t *snap; /* each lane's next sequence number, seen earlier */
	int ev; /* a peeked event (merging several buffers), or NONE */
	struct shmlog_record rec;
	struct shmlog_lost lost;
	bool waiting; /* not there yet (follow mode): looked for again */
};

/* A context of the RUN entry being filled (archive_format.h). */
struct run_ctx {
	uint64_t word; /* the tag's first 8 bytes, zero-padded */
	uint64_t who; /* pid | tid << 32 */
	uint64_t where; /* (buf << 16 | lane) << 8 | tag_len */
	uint8_t slot; /* its lane's place in run.lane_of */
	char tag[SHMLOG_TAG_MAX];
};

/* The RUN entry being filled: where it starts in the block, and what its
 * next record is coded against. */
struct run {
	size_t off; /* its entry's offset in archiver.out; 0: none open */
	uint32_t count;
	int64_t base_time_ns, time_ns;
	uint64_t base_raw_time, raw_time;
	int last; /* the context of the record before, -1: none */
	unsigned nctx, nlanes;
	struct run_ctx ctx[SHMLOG_ARC_RUN_CTX_MAX];
	uint32_t lane_of[SHMLOG_ARC_RUN_CTX_MAX]; /* buf << 16 | lane */
	uint64_t lane_next[SHMLOG_ARC_RUN_CTX_MAX];
	bool lane_seen[SHMLOG_ARC_RUN_CTX_MAX];
	uint8_t hash[512]; /* a context's number + 1, 0: free */
};

/* A buffer of blocks on their way to the file: the file's bytes from
 * .off on (archive_disk.c). */
struct stage {
	unsigned char *buf; /* STAGE_CAP bytes, DIO_ALIGN-aligned */
	uint64_t off; /* the file offset of buf[0]: a multiple of DIO_ALIGN */
	unsigned busy; /* the syncer's writes of it to do (under syncer.mu) */
};

/* A chore for the syncer: the descriptor is its own, closed when done. */
enum sync_op {
	SYNC_WRITE, /* a stage's bytes off .. off + len written */
	SYNC_DROP, /* bytes off .. off + len written out, their pages dropped */
	SYNC_DATA, /* fdatasync() */
	SYNC_FILE, /* a finished file: cut to .len (its blocks reserved past
		    * that given back), fdatasync(), its pages dropped */
	SYNC_NAME, /* a new file: .data's .len bytes at 0, then renamed from
		    * its hidden name to its own (.names: both) */
};

struct sync_job {
	int fd;
	enum sync_op op;
	struct stage *st; /* SYNC_WRITE: its stage, freed when written */
	uint64_t off, len;
	unsigned char *data; /* SYNC_NAME: its bytes, freed when done */
	char *names; /* SYNC_NAME: the hidden name, '\0', the name */
};

/* The disk's chores off the drain's thread (archive_file.c, "the
 * syncer"), done in the order handed over. */
struct syncer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ready; /* its lock and condition made */
	bool started, stop;
	bool data_queued; /* a SYNC_DATA in the queue or being done */
	unsigned naming; /* SYNC_NAMEs in the queue or being done: the
			  * files before are not whole on disk yet */
	int dir_fd; /* the archive's directory (the archiver's: kept open) */
	int werr; /* errno of a write failing now (tried again), or 0 */
	bool gave_up; /* a write failed for good: the later ones are skipped */
	struct sync_job q[SYNC_QUEUE];
	unsigned head, len; /* the queue; len counts one being done */
};

struct archiver {
	/* options */
	const char *dir;
	bool once, quiet;
	bool compact; /* records in RUN entries, never SPAN entries */
	bool as_stored; /* spans in SPAN entries even while the disk lags */
	bool runs; /* this turn's spans go into RUN entries: compact, or the
		    * disk lags */
	bool zstd; /* blocks compressed (ZBLK), at zstd_level */
	int zstd_level;
	uint64_t max_file_size, max_files, max_size, max_age_s;
	/* state */
	struct source src[SOURCES_MAX];
	int nsrc;
	struct bufent bufs[BUFS_MAX];
	int dir_fd; /* DIR, opened once: every file is made, named and
		     * removed in it, never by path (dir_ours()) */
	int lockfd; /* DIR/.lock, flock()ed: one archiver per DIR */
	bool dir_lost; /* DIR was removed or replaced: stop (dir_ours()) */
	int fd; /* the current file */
	uint64_t file_no, file_size;
	uint64_t total_size; /* of all files, at the last prune() and since */
	uint64_t file_start; /* bytes of the file before its first records */
	int dfd; /* the current file again, O_DIRECT if it takes it */
	struct stage stage[STAGES];
	unsigned nstages; /* made so far */
	bool huge_slow; /* a huge page took long to fault: 4 KiB pages now */
	uint64_t overflows; /* stages that went through the page cache, every
			     * stage waiting for the disk */
	/* A stage was full while the one before still waited for the disk:
	 * records are coded into RUN entries, not copied into SPAN entries,
	 * until one finds the disk done (archive_block.c, take_span()). */
	bool disk_lags;
	uint64_t lag_records; /* records coded so while the disk lagged */
	unsigned cur; /* the stage being filled: its bytes end at file_size */
	uint64_t queued; /* the file's bytes handed to the disk up to here */
	uint64_t queued_ms; /* mono_ms() when the rest began to wait */
	uint64_t reserved; /* its blocks are reserved up to here; 0: none
			    * asked, UINT64_MAX: none to be asked */
	int64_t file_created_ns;
	unsigned char *out; /* the block being filled, in the current stage
			    * after its sealed ones: header, then entries */
	size_t out_len;
	uint32_t out_entries;
	struct run run;
	bool disk_full;
	bool prune_due; /* a limit may be passed: prune_files() once every
			 * file has its name */
	uint64_t block_no; /* blocks written so far: the one filled has it */
	uint64_t block_ms; /* mono_ms() when its first entry went in */
	uint64_t unsynced; /* bytes written since the last fdatasync */
	uint64_t records, losses, lost_records;
	uint64_t last_sync_ms, last_check_ms, last_prune_ms;
	bool gaps_due; /* lanes' positions snapped: close_gaps() when idle */
	uint32_t newer_version; /* the version of a file too new to append to */
	size_t block_target; /* BLOCK_TARGET, less for small files */
	struct syncer sync;
	unsigned char *zout; /* --zstd: the compressed block, its header first */
	size_t zout_cap;
	void *zctx; /* the compressor */
	struct shmlog__arc_run_dec *scan; /* recovery's, while it runs */
	unsigned char *aside; /* a span's copy moved out of the block's way */
	size_t aside_cap;
};

static inline uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static inline int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Cut file @fd to @size bytes, never past what it holds (writes given up
 * at the end left it shorter): the blocks reserved past its end given
 * back. 0, or -1 (a failure costs space, not correctness). */
static inline int file_cut(int fd, uint64_t size)
{
	struct stat st;
	if (fstat(fd, &st))
		return -1;
	if ((uint64_t)st.st_size < size)
		size = (uint64_t)st.st_size;
	return ftruncate(fd, (off_t)size);
}

/* Is @err (negative) the disk having no room (for us)? */
static inline bool disk_full_err(int err)
{
	return err == -ENOSPC || err == -EDQUOT || err == -EFBIG;
}

/* archive_file.c */
void bufent_free(struct bufent *b);
int bufent_set(struct bufent *b, const char *path, size_t path_len,
	       int64_t created_ns, uint64_t ino, uint64_t initial_seq,
	       unsigned lanes);
int recover(struct archiver *a);
bool dir_ours(struct archiver *a);
int new_file(struct archiver *a);
int flush(struct archiver *a);
void prune_files(struct archiver *a);
void release_reserved(struct archiver *a);

/* archive_disk.c */
int stage_init(struct archiver *a);
void stage_release(struct archiver *a);
int stage_begin(struct archiver *a, const char *path);
int stage_next_file(struct archiver *a, int fd, const char *hidden,
		    const char *path, unsigned char *head, size_t len);
int stage_room(struct archiver *a, size_t len);
void stage_add(struct archiver *a, size_t len, uint64_t since_ms);
int stage_write_out(struct archiver *a);
int stage_finish(struct archiver *a);
int stage_wait_ms(const struct archiver *a, int most);
int sync_start(struct archiver *a);
void sync_now(struct archiver *a);
bool sync_naming(struct archiver *a);
void sync_end(struct archiver *a);

/* archive_block.c */
void out_reset(struct archiver *a);
void run_end(struct archiver *a);
void put_buffer(struct archiver *a, unsigned id);
void put_format(struct archiver *a, unsigned id, struct fmtent *f);
size_t format_size(const struct fmtent *f);
void put_loss(struct archiver *a, const struct source *s, unsigned lane,
	      uint64_t first, uint64_t last, uint64_t torn);
void take_record(struct archiver *a, struct source *s,
		 const struct shmlog_record *r);
struct shmlog__span;
void take_span(struct archiver *a, struct source *s,
	       const struct shmlog__span *sp, unsigned *took);
unsigned char *span_room(struct archiver *a, size_t n);

#endif
