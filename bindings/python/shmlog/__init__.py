# SPDX-License-Identifier: MIT
"""shmlog for Python: log into a shmlog buffer and read it back.

Writing::

    import shmlog
    buf = shmlog.open("app", create=True)
    buf.write(shmlog.WARN, "net", "link down")

    import logging
    logging.getLogger().addHandler(shmlog.Handler(buffer="app"))

Reading::

    for rec in shmlog.Reader("app", follow=True, timeout=1.0):
        if isinstance(rec, shmlog.Lost):
            print("lost", rec.count)
        else:
            print(rec.time, rec.prio_char, rec.tag, rec.message)

    # an archive (`shmlog archive -b app -o DIR`): the same records
    for rec in shmlog.Reader.open_archive("/var/log/shmlog/app"):
        print(rec)

Errors are raised as shmlog.Error, an OSError subclass carrying the errno
and the library's description of it; NotFoundError, ExistsError and
AccessError also subclass FileNotFoundError, FileExistsError and
PermissionError.
"""
import datetime as _dt
import errno as _errno
import logging as _logging
import threading as _threading
import time as _time

from ._shmlog_cffi import ffi as _ffi, lib as _lib

__all__ = [
    "VERBOSE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "SILENT",
    "CLOCK_DEFAULT", "CLOCK_TSC", "CLOCK_REALTIME", "CLOCK_COARSE",
    "Error", "NotFoundError", "ExistsError", "AccessError", "Buffer", "Handler", "Reader", "Record", "Lost", "Filter",
    "open", "create", "remove", "clear", "set_filter", "get_filter", "wait_any",
    "path", "stat", "prio_char", "prio_parse", "level_to_prio",
]

VERBOSE = _lib.SHMLOG_VERBOSE
DEBUG = _lib.SHMLOG_DEBUG
INFO = _lib.SHMLOG_INFO
WARN = _lib.SHMLOG_WARN
ERROR = _lib.SHMLOG_ERROR
FATAL = _lib.SHMLOG_FATAL
SILENT = _lib.SHMLOG_SILENT

CLOCK_DEFAULT = _lib.SHMLOG_CLOCK_DEFAULT
CLOCK_TSC = _lib.SHMLOG_CLOCK_TSC
CLOCK_REALTIME = _lib.SHMLOG_CLOCK_REALTIME
CLOCK_COARSE = _lib.SHMLOG_CLOCK_COARSE

TAG_MAX = _lib.SHMLOG_TAG_MAX
MSG_MAX = _lib.SHMLOG_MSG_MAX

# ---------------------------------------------------------------------------
# Errors


class Error(OSError):
    """A shmlog library call failed: .errno is the errno value, .strerror
    the library's description (shmlog_strerror), .filename the buffer."""


class NotFoundError(Error, FileNotFoundError):
    """The buffer does not exist (ENOENT)."""


class ExistsError(Error, FileExistsError):
    """The buffer exists already (EEXIST)."""


class AccessError(Error, PermissionError):
    """Not allowed, or a file shmlog will not trust (EACCES, EPERM)."""


_error_classes = {_errno.ENOENT: NotFoundError, _errno.EEXIST: ExistsError,
                  _errno.EACCES: AccessError, _errno.EPERM: AccessError}


def _error(rc, name=None):
    code = -rc
    msg = _ffi.string(_lib.shmlog_strerror(rc)).decode("utf-8", "replace")
    cls = _error_classes.get(code, Error)
    if name is None:
        return cls(code, msg)
    return cls(code, msg, name)


def _check(rc, name=None):
    if rc < 0:
        raise _error(rc, name)
    return rc


def _cstr(s, what="name"):
    """str or bytes to bytes for a C string (None stays NULL)."""
    if s is None:
        return _ffi.NULL
    if isinstance(s, str):
        s = s.encode("utf-8", "surrogateescape")
    elif not isinstance(s, (bytes, bytearray)):
        raise TypeError("%s must be str or bytes, not %s" % (what, type(s).__name__))
    if b"\0" in s:
        raise ValueError("%s contains a NUL byte" % what)
    return bytes(s)


# ---------------------------------------------------------------------------
# Buffers


def path(name=None):
    """The file a buffer name maps to ("app" -> /dev/shm/shmlog.app)."""
    buf = _ffi.new("char[]", 4096)
    n = _check(_lib.shmlog_path(_cstr(name), buf, 4096), name)
    return _ffi.string(buf, n).decode("utf-8", "surrogateescape")


def create(name, size=0, lanes=0, mode=0, gid=-1, clock=CLOCK_DEFAULT):
    """Create a buffer (shmlog_create). Raises Error (FileExistsError if it
    exists)."""
    opts = _ffi.new("struct shmlog_create_opts *")
    _lib.shmlog_create_opts_init(opts)
    opts.size = size
    opts.lanes = lanes
    opts.mode = mode
    if gid != -1:
        opts.gid = gid
    opts.clock = clock
    _check(_lib.shmlog_create(_cstr(name), opts), name)


def remove(name):
    """Remove a buffer's file; mappings in other processes stay valid."""
    _check(_lib.shmlog_remove(_cstr(name)), name)


def clear(name):
    """Hide every record written so far from later readers."""
    _check(_lib.shmlog_clear(_cstr(name)), name)


def _spec_bytes(spec):
    if spec is None:
        return b""
    if not isinstance(spec, (str, bytes)):
        spec = " ".join(spec)  # a list of tokens, as given to `shmlog cat`
    return _cstr(spec, "filter spec")


def set_filter(name, spec):
    """Set a buffer's live filter spec, as `shmlog level` does ("net:D *:W";
    "" logs everything). A bad spec raises Error(EINVAL) naming the token."""
    bad = _ffi.new("size_t *")
    b = _spec_bytes(spec)
    rc = _lib.shmlog_set_filter(_cstr(name), b, bad)
    if rc == -_errno.EINVAL and bad[0] <= len(b):
        raise Error(_errno.EINVAL, "bad filter token at offset %d: %r"
                    % (bad[0], b[bad[0]:].split(b" ")[0].decode("utf-8", "replace")))
    _check(rc, name)


def get_filter(name):
    """A buffer's current filter spec ("" when everything is logged)."""
    buf = _ffi.new("char[]", 8192)
    n = _check(_lib.shmlog_get_filter(_cstr(name), buf, 8192), name)
    return _ffi.string(buf, n).decode("utf-8", "replace")


def stat(name):
    """A dict describing a buffer (shmlog_stat)."""
    info = _ffi.new("struct shmlog_info *")
    _check(_lib.shmlog_stat(_cstr(name), info), name)
    return {f: getattr(info, f) for f in (
        "file_size", "capacity", "used", "lanes", "writers", "version_major",
        "version_minor", "clock", "created_ns", "written", "torn", "dropped",
        "uid", "gid", "mode")}


def prio_char(prio):
    """'V'..'F' (or 'S') for a priority, '?' when out of range."""
    return _lib.shmlog_prio_char(prio).decode("ascii", "replace")


def prio_parse(s):
    """A priority from a letter, name or number ("W", "warn", "5")."""
    rc = _lib.shmlog_prio_parse(_cstr(s, "priority"))
    if rc < 0:
        raise Error(-rc, "not a priority: %r (use V, D, I, W, E, F or S)" % (s,))
    return rc


class Buffer:
    """A buffer opened for writing. write() and enabled() may be called
    from any number of threads at once (they never block: shmlog_write is
    lock-free); close() detaches once no call is running any more."""

    __slots__ = ("name", "_h", "__weakref__")

    def __init__(self, name=None, create=False):
        out = _ffi.new("shmlog_t **")
        flags = _lib.SHMLOG_OPEN_CREATE if create else 0
        _check(_lib.shmlog_open(_cstr(name), flags, out), name)
        self.name = name
        # Closed when the last reference goes: a write running in another
        # thread holds one, so close() never pulls the handle from under it.
        self._h = _ffi.gc(out[0], _lib.shmlog_close)

    def _handle(self):
        h = self._h
        if h is None:
            raise ValueError("write to a closed shmlog.Buffer")
        return h

    def write(self, prio, tag, msg):
        """Write one record. msg is str (encoded UTF-8) or bytes (any bytes,
        NULs included). Too long tags and messages are truncated and
        flagged. Returns False when the record was dropped because every
        shared lane was busy at that instant (the buffer counts it; see
        `shmlog info`), or because the buffer was removed (`shmlog rm
        --force`; from this thread's next chunk on: open it again once it
        is created again), True otherwise."""
        h = self._handle()
        if isinstance(msg, str):
            try:
                msg = msg.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate: write it as '?'
                msg = msg.encode("utf-8", "replace")
        rc = _lib.shmlog_write_n(h, prio, _cstr(tag, "tag"), msg, len(msg))
        if rc == 0:
            return True
        if rc in (-_errno.EAGAIN, -_errno.EBUSY, -_errno.ESTALE):
            return False
        raise _error(rc, self.name)

    def enabled(self, prio, tag):
        """Is a record of prio with tag wanted by the buffer's live filter
        (`shmlog level`, else $SHMLOG_TAGS, else everything)?"""
        return _lib.shmlog_enabled(self._handle(), prio, _cstr(tag, "tag")) > 0

    def removed(self):
        """Was the buffer removed, or replaced by another of its name, since
        it was opened (`shmlog rm`, then `shmlog create`)? Then writes go
        to the removed copy, until its chunk is used up, and nobody reads
        them: open the name again. One lstat(2); call it now and then
        (`shmlog write` does every 100 ms), not per record."""
        return _lib.shmlog_check(self._handle()) == -_errno.ESTALE

    def close(self):
        self._h = None

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<shmlog.Buffer %r%s>" % (self.name, " closed" if self.closed else "")


def open(name=None, create=False):  # noqa: A001 (shadows the builtin on purpose)
    """Open a buffer for writing; create=True creates it with defaults if
    missing. None means $SHMLOG_BUFFER, else "main"."""
    return Buffer(name, create)


# ---------------------------------------------------------------------------
# logging.Handler


def level_to_prio(level):
    """Python logging level -> shmlog priority: DEBUG D, INFO I, WARNING W,
    ERROR E, CRITICAL F; below DEBUG is V; levels in between round down."""
    if level >= _logging.CRITICAL:
        return FATAL
    if level >= _logging.ERROR:
        return ERROR
    if level >= _logging.WARNING:
        return WARN
    if level >= _logging.INFO:
        return INFO
    if level >= _logging.DEBUG:
        return DEBUG
    return VERBOSE


_PRIO_OF_LEVEL = {lv: level_to_prio(lv) for lv in range(0, 60)}

# Logger names encoded once (loggers are few and long-lived; bounded anyway).
_tag_cache = {}


def _tag_bytes(name):
    tag = name.encode("utf-8", "replace").split(b"\0")[0]
    if len(_tag_cache) < 4096:
        _tag_cache[name] = tag
    return tag


_enabled = _lib.shmlog_enabled
_write_n = _lib.shmlog_write_n
_EAGAIN, _EBUSY, _ESTALE = -_errno.EAGAIN, -_errno.EBUSY, -_errno.ESTALE


class Handler(_logging.Handler):
    """A logging.Handler writing each record into a shmlog buffer: the
    logger's name is the tag, the level maps to a priority (level_to_prio),
    the formatted message is the message (by default the bare message plus
    any traceback: the record already carries time, pid and tid).

    Records that the buffer's live filter (`shmlog level`) turns off are
    dropped before they are formatted. A failure never raises into the
    application: it goes to handleError(), as with every logging handler.
    If the buffer cannot be opened, the constructor raises: a buffer named
    here must exist (NotFoundError, which says so) unless create=True, so
    that a mistyped name is an error, not a new buffer, as with `shmlog
    write -b`; the default buffer (buffer=None: $SHMLOG_BUFFER, else
    "main") is created when missing.

    The handler takes no lock: shmlog's write is thread-safe and lock-free.
    """

    def __init__(self, buffer=None, level=_logging.NOTSET, create=False):
        super().__init__(level)
        # a Buffer passed in stays the caller's: close() leaves it open
        self._own = not isinstance(buffer, Buffer)
        if not self._own:
            self.buffer = buffer
            return
        try:
            self.buffer = Buffer(buffer, create or buffer is None)
        except NotFoundError as e:
            raise NotFoundError(
                e.errno, "buffer does not exist: create it (`shmlog create "
                "-b %s`, shmlog.create()) or pass create=True; a name given "
                "to Handler is never created by mistake" % buffer,
                buffer) from None

    def createLock(self):
        self.lock = None  # emit() needs none (see the class comment)

    def acquire(self):
        pass

    def release(self):
        pass

    def handle(self, record):
        rv = self.filter(record)
        if rv:
            if isinstance(rv, _logging.LogRecord):  # Python 3.12+
                record = rv
            self.emit(record)
        return rv

    def emit(self, record):
        try:
            h = self.buffer._h
            if h is None:
                if getattr(self, "_closed", False):
                    return  # this handler was closed: drop quietly
                raise ValueError("the shmlog.Buffer of this Handler was closed")
            lv = record.levelno
            prio = _PRIO_OF_LEVEL.get(lv) or level_to_prio(lv)
            name = record.name
            tag = _tag_cache.get(name)
            if tag is None:
                tag = _tag_bytes(name)
            if _enabled(h, prio, tag) <= 0:
                return
            if self.formatter is None and not record.exc_info and not record.stack_info:
                msg = record.getMessage()
            else:
                msg = self.format(record)
            try:
                msg = msg.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate: log it as '?'
                msg = msg.encode("utf-8", "replace")
            rc = _write_n(h, prio, tag, msg, len(msg))
            # dropped (counted), or the buffer was removed: not an error
            # to report on every record
            if rc < 0 and rc != _EAGAIN and rc != _EBUSY and rc != _ESTALE:
                raise _error(rc, self.buffer.name)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def close(self):
        try:
            if self._own:
                self.buffer.close()
        finally:
            super().close()


# ---------------------------------------------------------------------------
# Reading


class Record:
    """A record read from a buffer.

    time     datetime, timezone-aware (UTC); time_ns: int ns since the Epoch
    pid, tid as the writer reported them (not verified)
    prio     2..7 (VERBOSE..FATAL); prio_char 'V'..'F'
    tag      str (UTF-8, undecodable bytes replaced by U+FFFD); tag_bytes
    message  str (UTF-8, errors='replace'); msg: the exact bytes
    seq, lane, truncated (tag or message cut to fit)
    """

    __slots__ = ("time_ns", "pid", "tid", "prio", "tag_bytes", "msg", "seq",
                 "lane", "flags", "raw_time")

    @property
    def time(self):
        s, ns = divmod(self.time_ns, 1_000_000_000)
        return _dt.datetime.fromtimestamp(s, _dt.timezone.utc).replace(microsecond=ns // 1000)

    @property
    def tag(self):
        return self.tag_bytes.decode("utf-8", "replace")

    @property
    def message(self):
        return self.msg.decode("utf-8", "replace")

    @property
    def prio_char(self):
        return prio_char(self.prio)

    @property
    def truncated(self):
        return bool(self.flags & _lib.SHMLOG_REC_TRUNCATED)

    def __str__(self):
        t = _dt.datetime.fromtimestamp(self.time_ns // 1_000_000_000)
        return "%s.%03d %5d %5d %s %s: %s" % (
            t.strftime("%m-%d %H:%M:%S"), self.time_ns // 1_000_000 % 1000,
            self.pid, self.tid, self.prio_char, self.tag, self.message)

    def __repr__(self):
        return "<shmlog.Record %d %s/%s pid=%d: %r>" % (
            self.time_ns, self.prio_char, self.tag, self.pid, self.message)


class Lost:
    """Records lost just before the next record of lane `lane`:
    `overwritten` by the ring before this reader got them, `torn` (a writer
    died mid-record, or the record failed validation); `count` is both."""

    __slots__ = ("lane", "overwritten", "torn")

    def __init__(self, lane, overwritten, torn):
        self.lane, self.overwritten, self.torn = lane, overwritten, torn

    @property
    def count(self):
        return self.overwritten + self.torn

    def __str__(self):
        return "--- %d records lost (lane %d: %d overwritten, %d torn) ---" % (
            self.count, self.lane, self.overwritten, self.torn)

    __repr__ = __str__


class Filter:
    """A compiled filter spec, as `shmlog cat` takes ("net:I *:S", or a
    list of tokens). wants(prio, tag) is thread-safe."""

    def __init__(self, spec):
        b = _spec_bytes(spec)
        bad = _ffi.new("size_t *")
        out = _ffi.new("shmlog_filter_t **")
        rc = _lib.shmlog_filter_new(b, bad, out)
        if rc == -_errno.EINVAL:
            tok = b[bad[0]:].split(b" ")[0].decode("utf-8", "replace")
            raise Error(_errno.EINVAL, "bad filter token at offset %d: %r "
                        "(use TAG:P or *:P with P one of V D I W E F S)" % (bad[0], tok))
        _check(rc)
        self.spec = b.decode("utf-8", "replace")
        self._f = _ffi.gc(out[0], _lib.shmlog_filter_free)

    def wants(self, prio, tag):
        if isinstance(tag, str):
            tag = tag.encode("utf-8", "surrogateescape")
        return _lib.shmlog_filter_wants(self._f, prio, tag) > 0


# Waits are cut into slices so that a signal (Ctrl-C) is seen promptly
# whatever the platform's restart rules.
_WAIT_SLICE_MS = 200


class Reader:
    """Iterate over a buffer's records, oldest first, merged in time order
    across lanes; loss reports come as Lost objects in the stream.

    follow=False: stop where the buffer ended when the iteration began
    (`shmlog cat`), however fast its writers write on.
    follow=True: wait for new records (`shmlog cat -f`); with timeout=T
    (seconds), stop once T seconds pass with nothing new; timeout=None
    follows until the iteration is abandoned or interrupted.
    tail=True (with follow): start after the newest record.
    filter: a filter spec ("net:I *:S" or a list of tokens); records it
    turns off are skipped (loss reports are always yielded).

    Reader.open_archive(directory, ...) reads an archive instead (the
    directory `shmlog archive -o DIR` writes).

    A Reader is for one thread at a time (the C reader is not thread-safe);
    a second thread iterating at once gets RuntimeError.
    """

    def __init__(self, name=None, follow=False, timeout=None, filter=None, tail=False):
        self._open(_lib.shmlog_reader_open, name, follow, timeout, filter, tail)

    @classmethod
    def open_archive(cls, directory, follow=False, timeout=None, filter=None, tail=False):
        """Read the archive in `directory` (written by `shmlog archive -o
        DIR`): its records and losses in the order they were archived, as
        `shmlog cat --archive DIR` shows them, across every buffer it
        holds. A Lost stands for each span of records the archive does not
        hold. follow=False stops where the archive ended when the
        iteration began; follow=True also waits for records archived later (the
        library looks every 10 ms); the other arguments are Reader()'s.
        printf-style records come with the message formatted when they
        were archived. Raises NotFoundError if there is no such directory.
        """
        self = cls.__new__(cls)
        self._open(_lib.shmlog_reader_open_archive, directory, follow, timeout, filter, tail)
        return self

    def _open(self, opener, name, follow, timeout, filter, tail):
        self.name = name
        self.follow = follow
        self.timeout = timeout
        self.filter = filter if (filter is None or isinstance(filter, Filter)) else Filter(filter)
        out = _ffi.new("shmlog_reader_t **")
        flags = _lib.SHMLOG_READ_TAIL if tail else 0
        if not follow:  # a dump: it ends, behind any writer
            flags |= _lib.SHMLOG_READ_DUMP
        _check(opener(_cstr(name), flags, out), name)
        self._r = _ffi.gc(out[0], _lib.shmlog_reader_close)
        self._rec = _ffi.new("struct shmlog_record *")
        self._lost = _ffi.new("struct shmlog_lost *")
        self._busy = _threading.Lock()

    def close(self):
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("shmlog.Reader closed while another thread reads it")
        try:
            r, self._r = self._r, None
            if r is not None:
                _ffi.release(r)
        finally:
            self._busy.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __iter__(self):
        return self

    def _next_event(self):
        """One record/loss, or None when there is nothing more for now."""
        r, rec, lost, flt = self._r, self._rec, self._lost, self.filter
        if r is None:
            raise ValueError("read from a closed shmlog.Reader")
        while True:
            ev = _lib.shmlog_reader_next(r, rec, lost)
            if ev == _lib.SHMLOG_EV_RECORD:
                tag = _ffi.buffer(rec.tag, rec.tag_len)[:]
                if flt is not None and _lib.shmlog_filter_wants(flt._f, rec.prio, rec.tag) <= 0:
                    continue
                out = Record.__new__(Record)
                out.time_ns = rec.time_ns
                out.raw_time = rec.raw_time
                out.pid = rec.pid
                out.tid = rec.tid
                out.prio = rec.prio
                out.tag_bytes = tag
                out.msg = _ffi.buffer(rec.msg, rec.msg_len)[:]
                out.seq = rec.seq
                out.lane = rec.lane
                out.flags = rec.flags
                return out
            if ev == _lib.SHMLOG_EV_LOST:
                return Lost(lost.lane, lost.overwritten, lost.torn)
            if ev == _lib.SHMLOG_EV_NONE:
                return None
            raise _error(ev, self.name)

    def __next__(self):
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("shmlog.Reader used by two threads at once")
        try:
            return self._next_locked()
        finally:
            self._busy.release()

    def _next_locked(self):
        deadline = None if self.timeout is None else _time.monotonic() + self.timeout
        last_look = False
        while True:
            item = self._next_event()
            if item is not None:
                return item
            if not self.follow:
                raise StopIteration
            if deadline is None:
                ms = _WAIT_SLICE_MS
            else:
                left = deadline - _time.monotonic()
                if left <= 0:
                    # nothing new for that long, unless a wait that only
                    # looks (which ends the follower's rests) finds
                    # records still to come: read those first
                    rc = 1 if last_look else _lib.shmlog_reader_wait(self._r, 0)
                    if rc < 0 and rc not in (-_errno.ETIMEDOUT, -_errno.EINTR):
                        raise _error(rc, self.name)
                    if rc != 0:
                        raise StopIteration
                    last_look = True
                    continue
                ms = max(1, min(_WAIT_SLICE_MS, int(left * 1000 + 0.999)))
            rc = _lib.shmlog_reader_wait(self._r, ms)
            if rc < 0 and rc not in (-_errno.ETIMEDOUT, -_errno.EINTR):
                raise _error(rc, self.name)


def wait_any(readers, timeout=None):
    """Wait until one of `readers` (Reader objects; None entries and
    closed readers are skipped) has something to read, as select() waits
    on several files: its index, or None once `timeout` seconds pass with
    nothing (None: wait until something comes; Ctrl-C still ends it).
    Other readers may be ready too: read them all before waiting again.
    The readers must not be iterated by another thread meanwhile
    (RuntimeError if one is)."""
    held = []
    try:
        ptrs = []
        for r in readers:
            if r is None or r._r is None:
                ptrs.append(_ffi.NULL)
                continue
            if not r._busy.acquire(blocking=False):
                raise RuntimeError("shmlog.wait_any() on a Reader another thread reads")
            held.append(r)
            ptrs.append(r._r)
        arr = _ffi.new("shmlog_reader_t *[]", ptrs)
        deadline = None if timeout is None else _time.monotonic() + timeout
        while True:
            ms = _WAIT_SLICE_MS
            if deadline is not None:
                left = deadline - _time.monotonic()
                if left <= 0:
                    return None
                ms = max(1, min(_WAIT_SLICE_MS, int(left * 1000 + 0.999)))
            rc = _lib.shmlog_reader_wait_any(arr, len(ptrs), ms)
            if rc >= 0:
                return rc
            if rc not in (-_errno.ETIMEDOUT, -_errno.EINTR):
                raise _error(rc)
    finally:
        for r in held:
            r._busy.release()
