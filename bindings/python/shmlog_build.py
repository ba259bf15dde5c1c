# SPDX-License-Identifier: MIT
"""cffi builder for shmlog's Python binding (API mode, out of line).

The extension compiles against include/shmlog.h: the declarations below
leave every struct layout and enum value to the C compiler ("...;"), so
nothing about the ABI is guessed. The library's own sources (src/*.c) are
compiled into the extension, which makes `pip install ./bindings/python`
self-contained: no installed libshmlog is needed.

Run directly to build into a directory (what the tests do):
    python3 shmlog_build.py OUTDIR
"""
import glob
import os
import shutil
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
# From a clone, the library is two directories up; SHMLOG_SOURCE_DIR
# points elsewhere (a copy of the tree).
ROOT = os.environ.get("SHMLOG_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", ".."))

CDEF = r"""
typedef int... mode_t;
typedef int... uid_t;
typedef int... gid_t;
enum shmlog_priority {
    SHMLOG_VERBOSE, SHMLOG_DEBUG, SHMLOG_INFO, SHMLOG_WARN, SHMLOG_ERROR,
    SHMLOG_FATAL, SHMLOG_SILENT, ...
};
enum shmlog_clock {
    SHMLOG_CLOCK_DEFAULT, SHMLOG_CLOCK_TSC, SHMLOG_CLOCK_REALTIME,
    SHMLOG_CLOCK_COARSE, ...
};
enum shmlog_event { SHMLOG_EV_NONE, SHMLOG_EV_RECORD, SHMLOG_EV_LOST, ... };

#define SHMLOG_TAG_MAX ...
#define SHMLOG_MSG_MAX ...
#define SHMLOG_SIZE_MIN ...
#define SHMLOG_SIZE_DEFAULT ...
#define SHMLOG_LANES_MAX ...
#define SHMLOG_OPEN_CREATE ...
#define SHMLOG_READ_TAIL ...
#define SHMLOG_READ_DUMP ...
#define SHMLOG_REC_TRUNCATED ...

struct shmlog_create_opts {
    uint64_t size;
    unsigned lanes;
    mode_t mode;
    gid_t gid;
    int clock;
    ...;
};

typedef struct shmlog shmlog_t;
typedef struct shmlog_reader shmlog_reader_t;
typedef struct shmlog__filter shmlog_filter_t;

struct shmlog_record {
    uint64_t seq;
    int64_t time_ns;
    uint64_t raw_time;
    uint32_t pid;
    uint32_t tid;
    int prio;
    unsigned flags;
    unsigned lane;
    const char *tag;
    size_t tag_len;
    const char *msg;
    size_t msg_len;
    ...;
};

struct shmlog_lost {
    unsigned lane;
    uint64_t overwritten;
    uint64_t torn;
    ...;
};

struct shmlog_info {
    uint64_t file_size;
    uint64_t capacity;
    uint64_t used;
    unsigned lanes;
    unsigned writers;
    unsigned version_major;
    unsigned version_minor;
    int clock;
    int64_t created_ns;
    uint64_t written;
    uint64_t torn;
    uint64_t dropped;
    uid_t uid;
    gid_t gid;
    mode_t mode;
    ...;
};

void shmlog_create_opts_init(struct shmlog_create_opts *opts);
int shmlog_path(const char *name, char *buf, size_t buflen);
int shmlog_create(const char *name, const struct shmlog_create_opts *opts);
int shmlog_remove(const char *name);
int shmlog_clear(const char *name);

int shmlog_open(const char *name, int flags, shmlog_t **out);
void shmlog_close(shmlog_t *h);
int shmlog_write_n(shmlog_t *h, int prio, const char *tag, const char *msg,
                   size_t len);
int shmlog_enabled(shmlog_t *h, int prio, const char *tag);
int shmlog_check(shmlog_t *h);

int shmlog_set_filter(const char *name, const char *spec, size_t *bad_offset);
int shmlog_get_filter(const char *name, char *buf, size_t buflen);
int shmlog_parse_filter(const char *spec, size_t *bad_offset);
int shmlog_filter_new(const char *spec, size_t *bad_offset,
                      shmlog_filter_t **out);
int shmlog_filter_wants(const shmlog_filter_t *f, int prio, const char *tag);
void shmlog_filter_free(shmlog_filter_t *f);

int shmlog_reader_open(const char *name, int flags, shmlog_reader_t **out);
void shmlog_reader_close(shmlog_reader_t *r);
int shmlog_reader_next(shmlog_reader_t *r, struct shmlog_record *rec,
                       struct shmlog_lost *lost);
int shmlog_reader_wait(shmlog_reader_t *r, int timeout_ms);
int shmlog_reader_wait_any(shmlog_reader_t *const *r, size_t n,
                           int timeout_ms);
int shmlog_reader_open_archive(const char *dir, int flags,
                               shmlog_reader_t **out);

int shmlog_stat(const char *name, struct shmlog_info *info);
char shmlog_prio_char(int prio);
int shmlog_prio_parse(const char *s);
const char *shmlog_strerror(int err);
"""


def _library_sources():
    srcs = sorted(glob.glob(os.path.join(ROOT, "src", "*.c")))
    if not srcs or not os.path.exists(os.path.join(ROOT, "include", "shmlog.h")):
        raise SystemExit(
            "shmlog_build.py: the shmlog sources are not at %s (src/*.c, "
            "include/shmlog.h); build from a clone of shmlog, or set "
            "SHMLOG_SOURCE_DIR to one" % ROOT)
    if __name__ == "__main__":
        return srcs
    # Under setuptools (pip install): it wants relative paths inside the
    # project, so the sources are copied beside this file first.
    dst = os.path.join(HERE, "build", "shmlog-src")
    os.makedirs(dst, exist_ok=True)
    out = []
    for p in srcs:
        q = os.path.join(dst, os.path.basename(p))
        shutil.copyfile(p, q)
        out.append(os.path.relpath(q, HERE))
    return out


# SHMLOG_ZSTD=1: read archives with zstd-compressed blocks (`shmlog archive
# --zstd`), linking libzstd, as cmake -DSHMLOG_ZSTD=ON builds the library
ZSTD = os.environ.get("SHMLOG_ZSTD") == "1"

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "shmlog._shmlog_cffi",
    "#include <shmlog.h>\n",
    sources=_library_sources(),
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src")],
    define_macros=[("_GNU_SOURCE", None)] +
    ([("SHMLOG_HAVE_ZSTD", "1")] if ZSTD else []),
    libraries=["zstd"] if ZSTD else [],
    extra_compile_args=["-std=gnu11", "-O2"],
    extra_link_args=["-pthread"],
)

if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python3 shmlog_build.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    ffibuilder.compile(tmpdir=out, verbose=False)
