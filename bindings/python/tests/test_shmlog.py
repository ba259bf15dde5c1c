# SPDX-License-Identifier: MIT
"""The Python binding end to end: writing, the logging.Handler, reading,
following another process, losses, filters and errors."""
import datetime
import errno
import logging
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import shmlog


def records(name, **kw):
    return [r for r in shmlog.Reader(name, **kw) if isinstance(r, shmlog.Record)]


def test_write_and_read_back(bufname):
    before = time.time_ns()
    with shmlog.open(bufname, create=True) as buf:
        assert buf.write(shmlog.WARN, "net", "link down")
        assert buf.write(shmlog.ERROR, "bin", b"a\x00b\xff")
        assert buf.write(shmlog.INFO, "uni", "grüße ✓")
    after = time.time_ns()
    recs = records(bufname)
    assert [(r.prio, r.tag, r.msg) for r in recs] == [
        (shmlog.WARN, "net", b"link down"),
        (shmlog.ERROR, "bin", b"a\x00b\xff"),
        (shmlog.INFO, "uni", "grüße ✓".encode()),
    ]
    # str view: UTF-8 with errors='replace'
    assert recs[1].message == "a\x00b\ufffd"
    assert recs[2].message == "grüße ✓"
    for r in recs:
        assert r.pid == os.getpid()
        assert r.tid == threading.get_native_id()
        assert before <= r.time_ns <= after
        assert r.time.tzinfo is datetime.timezone.utc
        assert abs(r.time.timestamp() * 1e9 - r.time_ns) < 2e3
        assert not r.truncated
    assert recs[0].prio_char == "W"
    assert recs[0].time_ns <= recs[1].time_ns <= recs[2].time_ns


def test_truncation_is_flagged(bufname):
    with shmlog.open(bufname, create=True) as buf:
        buf.write(shmlog.INFO, "t" * 200, "m" * 10000)
    (r,) = records(bufname)
    assert r.truncated
    assert len(r.tag_bytes) <= shmlog.TAG_MAX
    assert 0 < len(r.msg) <= shmlog.MSG_MAX


def test_closed_buffer(bufname):
    buf = shmlog.open(bufname, create=True)
    buf.close()
    assert buf.closed
    with pytest.raises(ValueError):
        buf.write(shmlog.INFO, "t", "m")


def test_bad_arguments(bufname):
    with shmlog.open(bufname, create=True) as buf:
        with pytest.raises(ValueError):
            buf.write(shmlog.INFO, "a\0b", "m")
        with pytest.raises(TypeError):
            buf.write(shmlog.INFO, 5, "m")


def logger_for(bufname, name, **kw):
    kw.setdefault("create", True)
    h = shmlog.Handler(buffer=bufname, **kw)
    lg = logging.getLogger(name)
    lg.handlers[:] = [h]
    lg.propagate = False
    lg.setLevel(1)
    return lg, h


def test_handler_levels_and_tags(bufname):
    lg, h = logger_for(bufname, "py.levels")
    lg.log(5, "below debug")
    lg.debug("d %d", 1)
    lg.info("i %s", "x")
    lg.warning("w")
    lg.error("e")
    lg.critical("c")
    lg.log(35, "between warning and error")
    try:
        raise ZeroDivisionError("boom")
    except ZeroDivisionError:
        lg.exception("failed")
    h.close()
    recs = records(bufname)
    assert [(r.prio_char, r.tag, r.message.splitlines()[0]) for r in recs] == [
        ("V", "py.levels", "below debug"),
        ("D", "py.levels", "d 1"),
        ("I", "py.levels", "i x"),
        ("W", "py.levels", "w"),
        ("E", "py.levels", "e"),
        ("F", "py.levels", "c"),
        ("W", "py.levels", "between warning and error"),
        ("E", "py.levels", "failed"),
    ]
    assert "ZeroDivisionError: boom" in recs[-1].message
    assert "Traceback" in recs[-1].message


def test_handler_leaves_a_given_buffer_open(bufname):
    buf = shmlog.open(bufname, create=True)
    h = shmlog.Handler(buffer=buf)
    h.close()
    assert not buf.closed and buf.write(shmlog.INFO, "t", "still open")
    h2 = shmlog.Handler(buffer=bufname)
    h2.close()
    assert h2.buffer.closed


def test_handler_odd_text(bufname):
    lg, h = logger_for(bufname, "py.text")
    lg.info("lone \ud800 surrogate")        # not encodable: becomes '?'
    lg.info("escaped \udcff byte")          # surrogateescape: the byte 0xff
    lg.info("%s %r", b"bytes", None)
    assert [r.msg for r in records(bufname)] == [
        b"lone ? surrogate", b"escaped \xff byte", b"b'bytes' None"]


def test_handler_formatter(bufname):
    lg, h = logger_for(bufname, "py.fmt")
    h.setFormatter(logging.Formatter("[%(funcName)s] %(message)s"))
    lg.info("hi")
    (r,) = records(bufname)
    assert r.message == "[test_handler_formatter] hi"


def test_handler_follows_live_level(bufname):
    lg, h = logger_for(bufname, "py.live")
    lg.info("one")
    shmlog.set_filter(bufname, "py.live:W *:V")
    assert shmlog.get_filter(bufname) == "py.live:W *:V"
    lg.info("two: filtered out")
    lg.warning("three")
    logging.getLogger("py.other").handlers[:] = [h]
    logging.getLogger("py.other").propagate = False
    logging.getLogger("py.other").setLevel(1)
    logging.getLogger("py.other").debug("four: other tag, still on")
    shmlog.set_filter(bufname, "")
    lg.info("five")
    assert [r.message for r in records(bufname)] == ["one", "three", "four: other tag, still on", "five"]


def test_handler_never_raises(bufname):
    lg, h = logger_for(bufname, "py.fail")
    seen = []
    h.handleError = lambda record: seen.append(record)

    class Broken(logging.Formatter):
        def format(self, record):
            raise RuntimeError("formatter broke")

    h.setFormatter(Broken())
    lg.info("x")  # must not raise
    assert len(seen) == 1 and seen[0].getMessage() == "x"
    # the default handleError prints and goes on
    del h.handleError
    old = logging.raiseExceptions
    logging.raiseExceptions = False
    try:
        lg.info("y")
    finally:
        logging.raiseExceptions = old
    assert records(bufname) == []
    # a buffer closed under the handler is a logging error too
    buf = shmlog.open(bufname)
    h2 = shmlog.Handler(buffer=buf)
    h2.handleError = lambda record: seen.append(record)
    buf.close()
    h2.handle(logging.LogRecord("py.fail", logging.INFO, __file__, 1, "z", None, None))
    assert [r.getMessage() for r in seen] == ["x", "z"]
    h2.close()


def test_removed_buffer_drops_quietly(bufname):
    """Removed under its writer: the chunk it writes in is filled, then
    writes return False (the library's -ESTALE), and the Handler does not
    report an error per record."""
    shmlog.create(bufname, size=64 * 1024)
    buf = shmlog.open(bufname)
    h = shmlog.Handler(buffer=buf)
    seen = []
    h.handleError = lambda record: seen.append(record)
    assert buf.write(shmlog.INFO, "rm", "before")
    assert not buf.removed()
    shmlog.remove(bufname)
    assert buf.removed()
    # a chunk holds fewer records than a buffer of 64 KiB: the bound
    results = [buf.write(shmlog.INFO, "rm", "x" * 40) for _ in range(2000)]
    assert results[0] is True and results[-1] is False
    assert results.index(False) < 1500 and not any(results[results.index(False):])
    h.handle(logging.LogRecord("rm", logging.INFO, __file__, 1, "y", None, None))
    assert seen == []
    # created again: the old handle still says removed, a new one not
    shmlog.create(bufname, size=64 * 1024)
    assert buf.removed()
    again = shmlog.open(bufname)
    assert not again.removed()
    again.close()
    h.close()
    buf.close()


def test_handler_missing_buffer_raises_at_construction(bufname):
    with pytest.raises(shmlog.NotFoundError):
        shmlog.Handler(buffer=bufname, create=False)
    # a mistyped name is an error by default, not a new buffer
    with pytest.raises(shmlog.NotFoundError) as ei:
        shmlog.Handler(buffer=bufname)
    assert "create=True" in str(ei.value) and ei.value.filename == bufname
    assert not os.path.exists(shmlog.path(bufname))
    h = shmlog.Handler(buffer=bufname, create=True)
    h.close()
    assert os.path.exists(shmlog.path(bufname))


def test_handler_threads(bufname):
    lg, h = logger_for(bufname, "py.threads")
    n, per = 4, 500

    def work(k):
        for i in range(per):
            lg.info("%d %d", k, i)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    got = {}
    for r in records(bufname):
        k, i = map(int, r.message.split())
        got.setdefault(k, []).append(i)
    assert {k: v for k, v in got.items()} == {k: list(range(per)) for k in range(n)}


def test_reader_filter(bufname):
    with shmlog.open(bufname, create=True) as buf:
        buf.write(shmlog.DEBUG, "net", "net debug")
        buf.write(shmlog.INFO, "net", "net info")
        buf.write(shmlog.ERROR, "disk", "disk error")
        buf.write(shmlog.WARN, "disk", "disk warn")
    assert [r.message for r in records(bufname, filter="net:I *:S")] == ["net info"]
    assert [r.message for r in records(bufname, filter=["net:I", "*:E"])] == [
        "net info", "disk error"]
    f = shmlog.Filter("net:D *:S")
    assert f.wants(shmlog.DEBUG, "net") and not f.wants(shmlog.FATAL, "disk")
    with pytest.raises(shmlog.Error) as ei:
        shmlog.Reader(bufname, filter="net:Q")
    assert ei.value.errno == errno.EINVAL and "net:Q" in str(ei.value)
    # a malformed token is refused, never stored as a tag named "net=D"
    for bad in ("net=D", "net*:D"):
        with pytest.raises(shmlog.Error) as ei:
            shmlog.Filter(bad)
        assert ei.value.errno == errno.EINVAL and bad in str(ei.value)
        with pytest.raises(shmlog.Error) as ei:
            shmlog.set_filter(bufname, bad + " *:W")
        assert ei.value.errno == errno.EINVAL
    assert shmlog.get_filter(bufname) == ""


def test_follow_times_out(bufname):
    shmlog.create(bufname)
    t0 = time.monotonic()
    assert list(shmlog.Reader(bufname, follow=True, timeout=0.3)) == []
    took = time.monotonic() - t0
    assert 0.3 <= took < 10


def test_wait_any(bufname):
    names = [bufname + "-a", bufname + "-b"]
    try:
        for n in names:
            shmlog.create(n)
        rs = [shmlog.Reader(n, follow=True) for n in names]
        t0 = time.monotonic()
        assert shmlog.wait_any(rs, timeout=0.2) is None
        assert time.monotonic() - t0 >= 0.2
        shmlog.open(names[1]).write(shmlog.INFO, "py", "to b")
        assert shmlog.wait_any(rs, timeout=10) == 1
        assert next(iter(rs[1])).message == "to b"
        assert shmlog.wait_any([None, rs[1]], timeout=0.05) is None
    finally:
        for n in names:
            shmlog.remove(n)


CHILD = r"""
import sys, shmlog
buf = shmlog.open(sys.argv[1])
for i in range(int(sys.argv[2])):
    buf.write(shmlog.INFO, "child", "record %d" % i)
"""


def test_follow_other_process(bufname):
    # room for every record in one lane, so that none is lost however slow
    # the reader is
    shmlog.create(bufname, size=8 << 20, lanes=4)
    n = 2000
    reader = shmlog.Reader(bufname, follow=True, timeout=20.0, tail=True)
    child = subprocess.Popen([sys.executable, "-c", CHILD, bufname, str(n)])
    try:
        got = []
        for r in reader:
            assert isinstance(r, shmlog.Record), r
            got.append(r)
            if len(got) == n:
                break
    finally:
        assert child.wait(timeout=60) == 0
    assert [r.message for r in got] == ["record %d" % i for i in range(n)]
    assert {r.pid for r in got} == {child.pid}


WRITER = r"""
import sys, shmlog
buf = shmlog.open(sys.argv[1])
while True:
    buf.write(shmlog.INFO, "live", "flat out")
"""


def test_dump_ends_behind_a_writer(bufname):
    # a Reader without follow ends where the buffer ended when the
    # iteration began: without that, behind a writer faster than it, it read on for
    # as long as the writer wrote
    shmlog.create(bufname, size=1 << 20, lanes=4)
    child = subprocess.Popen([sys.executable, "-c", WRITER, bufname])
    try:
        cap = shmlog.stat(bufname)["capacity"]
        deadline = time.monotonic() + 60
        while shmlog.stat(bufname)["written"] < 3 * cap // 48:
            assert time.monotonic() < deadline, "the writer never wrote"
            time.sleep(0.01)
        bound = cap // 48 + 8
        n = events = 0
        for ev in shmlog.Reader(bufname):
            events += 1  # a Lost comes before a record, or at an end
            n += isinstance(ev, shmlog.Record)
            if events % 64 == 0:  # slower than the writer, on purpose
                time.sleep(0.001)
            assert n <= bound and events <= 2 * bound, \
                "the dump did not end behind the writer"
        assert n > 0
    finally:
        child.kill()
        child.wait(timeout=60)


def test_losses_are_reported(bufname):
    shmlog.create(bufname, size=64 * 1024, lanes=1)
    n = 5000
    # a reader that starts before the flood and falls behind: records
    # overwritten before it got them are reported (records gone before a
    # reader starts are not its losses)
    reader = shmlog.Reader(bufname)
    with shmlog.open(bufname) as buf:
        for i in range(n):
            buf.write(shmlog.INFO, "flood", "record %06d %s" % (i, "x" * 100))
    recs, lost = [], []
    for item in reader:
        (lost if isinstance(item, shmlog.Lost) else recs).append(item)
    assert lost and lost[0].overwritten > 0 and lost[0].torn == 0
    assert lost[0].count == lost[0].overwritten
    # exact accounting: what was lost and what was read add up to n
    assert sum(x.count for x in lost) + len(recs) == n
    assert recs[-1].message.startswith("record %06d" % (n - 1))
    assert "lost" in str(lost[0])


def test_errors(bufname):
    with pytest.raises(shmlog.NotFoundError) as ei:
        shmlog.open(bufname)
    e = ei.value
    assert isinstance(e, OSError) and isinstance(e, FileNotFoundError)
    assert e.errno == errno.ENOENT and e.strerror and e.filename == bufname
    with pytest.raises(FileNotFoundError):
        shmlog.Reader(bufname)
    shmlog.create(bufname)
    with pytest.raises(shmlog.ExistsError) as ei:
        shmlog.create(bufname)
    assert ei.value.errno == errno.EEXIST
    with pytest.raises(shmlog.Error) as ei:
        shmlog.open("bad/name")
    assert ei.value.errno == errno.EINVAL
    with pytest.raises(shmlog.Error) as ei:
        shmlog.create(bufname + "-small", size=1)
    assert ei.value.errno == errno.EINVAL
    with pytest.raises(shmlog.Error) as ei:
        shmlog.set_filter(bufname, "a:B:C")
    assert ei.value.errno == errno.EINVAL
    assert shmlog.prio_parse("warn") == shmlog.WARN
    with pytest.raises(shmlog.Error):
        shmlog.prio_parse("loud")


def test_corrupt_buffer_is_an_error(bufname, tmp_path):
    p = tmp_path / "junk.buf"
    p.write_bytes(b"not a shmlog buffer" * 10000)
    os.chmod(p, 0o600)
    with pytest.raises(shmlog.Error) as ei:
        shmlog.Reader(str(p))
    assert ei.value.errno in (errno.EBADMSG, errno.ENODATA, errno.EPROTONOSUPPORT)
    assert ei.value.strerror


def test_path_and_stat(bufname):
    assert shmlog.path(bufname) == "/dev/shm/shmlog." + bufname
    shmlog.create(bufname, size=128 * 1024)
    st = shmlog.stat(bufname)
    assert st["capacity"] >= 128 * 1024 and st["lanes"] >= 1


FOLLOWER = r"""
import sys, shmlog
r = shmlog.Reader(sys.argv[1], follow=True)  # no timeout: follows for ever
print("ready", flush=True)
for rec in r:
    pass
"""


def test_follow_obeys_sigint(bufname):
    shmlog.create(bufname)
    child = subprocess.Popen([sys.executable, "-c", FOLLOWER, bufname],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
    try:
        assert child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0 and "KeyboardInterrupt" in err, err


def test_fork_child_writes_as_itself(bufname):
    """A Buffer (and a Handler) opened before fork() keeps working in the
    child, under the child's pid, as in pre-forking servers."""
    lg, h = logger_for(bufname, "py.fork")
    lg.info("parent before")
    pid = os.fork()
    if pid == 0:
        try:
            lg.info("child")
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0
    lg.info("parent after")
    got = [(r.message, r.pid) for r in records(bufname)]
    me = os.getpid()
    assert got == [("parent before", me), ("child", pid), ("parent after", me)]


# ---- archives: written by the CLI's archiver (`shmlog archive`), which
# CTest names in $SHMLOG_CLI

def _cli():
    cli = os.environ.get("SHMLOG_CLI")
    if not cli or not os.access(cli, os.X_OK):
        pytest.skip("$SHMLOG_CLI does not name the shmlog CLI (CTest sets it)")
    return cli


def _archive(cli, bufname, directory, *opts):
    subprocess.run([cli, "archive", "-b", bufname, "-o", str(directory),
                    "--once", "-q", *opts], check=True, timeout=60)


def _zstd_opts(cli):
    """--zstd where the CLI has it (a build with cmake -DSHMLOG_ZSTD=ON,
    which also builds this binding with it: CTest's SHMLOG_ZSTD=1)."""
    has = subprocess.run([cli, "archive", "--zstd", "--help"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         timeout=60).returncode == 0
    if not has and os.environ.get("SHMLOG_ZSTD") == "1":
        pytest.fail("SHMLOG_ZSTD=1, yet the CLI has no --zstd")
    return ("--zstd",) if has else None


def _cat_archive(cli, directory):
    import json
    out = subprocess.run([cli, "cat", "--archive", str(directory), "-v", "json"],
                         check=True, stdout=subprocess.PIPE, timeout=60).stdout
    return [json.loads(l.decode("utf-8", "surrogateescape")) for l in out.splitlines()]


@pytest.mark.parametrize("compressed", [False, True])
def test_archive_reads_what_cat_shows(bufname, tmp_path, compressed):
    cli = _cli()
    opts = ()
    if compressed:
        opts = _zstd_opts(cli)
        if opts is None:
            pytest.skip("the CLI was built without zstd (cmake -DSHMLOG_ZSTD=ON)")
    # a small ring the writer overruns before the archiver comes: the
    # archive starts with a loss
    shmlog.create(bufname, size=64 * 1024, lanes=1)
    n = 3000
    with shmlog.open(bufname) as buf:
        for i in range(n):
            buf.write(shmlog.INFO + i % 3, "arc%d" % (i % 2),
                      "record %06d caf\u00e9 %s" % (i, "x" * (i % 50)))
    d = tmp_path / "arc"
    _archive(cli, bufname, d, *opts)
    shmlog.remove(bufname)  # the archive outlives its buffer
    want = _cat_archive(cli, d)
    got = list(shmlog.Reader.open_archive(str(d)))
    assert len(got) == len(want) and any(isinstance(x, shmlog.Lost) for x in got)
    for g, w in zip(got, want):
        if "lost" in w:
            assert isinstance(g, shmlog.Lost)
            assert (g.lane, g.count) == (w["lane"], w["lost"])
            continue
        assert isinstance(g, shmlog.Record)
        assert (g.seq, g.lane, g.time_ns, g.pid, g.tid, g.prio_char, g.tag,
                g.message) == (w["seq"], w["lane"], w["time_ns"], w["pid"],
                               w["tid"], w["prio"], w["tag"], w["msg"])
    recs = [x for x in got if isinstance(x, shmlog.Record)]
    assert sum(x.count for x in got if isinstance(x, shmlog.Lost)) + len(recs) == n
    assert recs[-1].message.startswith("record %06d" % (n - 1))
    # a filter, as Reader() takes it
    only = list(shmlog.Reader.open_archive(str(d), filter="arc1:V *:S"))
    assert [x.msg for x in only if isinstance(x, shmlog.Record)] == \
        [x.msg for x in recs if x.tag == "arc1"]


def test_archive_follow_sees_later_records(bufname, tmp_path):
    cli = _cli()
    shmlog.create(bufname, size=1 << 20, lanes=2)
    with shmlog.open(bufname) as buf:
        buf.write(shmlog.INFO, "arc", "first")
        d = tmp_path / "arc"
        _archive(cli, bufname, d)
        with shmlog.Reader.open_archive(str(d), follow=True, timeout=30) as r:
            assert next(r).message == "first"
            buf.write(shmlog.INFO, "arc", "second")
            _archive(cli, bufname, d)
            assert next(r).message == "second"
    # nothing more: a follower with a short timeout stops
    r = shmlog.Reader.open_archive(str(d), follow=True, timeout=0.05, tail=True)
    assert list(r) == []


def test_archive_errors(tmp_path):
    with pytest.raises(shmlog.NotFoundError):
        shmlog.Reader.open_archive(str(tmp_path / "none"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(shmlog.Error) as e:
        shmlog.Reader.open_archive(str(tmp_path / "file"))
    assert e.value.errno == errno.ENOTDIR
