#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of `shmlog forward` against the real receivers.

usage: test_forward.py SHMLOG FWD_WRITER CASE

Each case starts its own receiver (rsyslogd with a private configuration on
127.0.0.1 or a Unix socket in a temporary directory, systemd-journal-remote
writing a journal file) and checks what it received field by field against
what the writers wrote. Exit 0: pass, 1: fail, 77: a receiver is missing.
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from fwd_helpers import (FAILS, check, free_port, log, otelcol_binary,
                         otelcol_config, otlp_attrs, sd_params,
                         wait_listening, wait_until)

SKIP = 77
SHMLOG, WRITER, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
TMP = tempfile.mkdtemp(prefix="shmlog-fwd-")
BUF = "test-fwd-%s-%d" % (CASE, os.getpid())
CHILDREN = []


def cleanup():
    for p in CHILDREN:
        if p.poll() is None:
            p.kill()
            p.wait()
    subprocess.run([SHMLOG, "rm", "-b", BUF], stderr=subprocess.DEVNULL)
    shutil.rmtree(TMP, ignore_errors=True)


def finish():
    cleanup()
    if FAILS:
        log("%d check(s) failed" % len(FAILS))
        sys.exit(1)
    log("PASS", CASE)
    sys.exit(0)


def skip(why):
    log("SKIP:", why)
    cleanup()
    sys.exit(SKIP)


# ---------------------------------------------------------------- writers

def expected_message(i):
    return (b'rec %d "quoted" back\\slash ]bracket\ttab\nline2 '
            b'\xff\xfe\x80 caf\xc3\xa9 end' % i)


def severity(prio):
    return {2: 7, 3: 7, 4: 6, 5: 4, 6: 3, 7: 2}[prio]


def create_buffer(size="4M", lanes=4):
    cmd = [SHMLOG, "create", "-b", BUF, "--size", size, "--clock", "realtime"]
    if lanes:
        cmd += ["--lanes", str(lanes)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def start_writers(n, count, rate=0, prefix="w", printf=False):
    procs = []
    for k in range(n):
        p = subprocess.Popen([WRITER, BUF, "%s%d" % (prefix, k), str(count),
                              str(rate)] + (["printf"] if printf else []))
        CHILDREN.append(p)
        procs.append(p)
    return procs


def wait_writers(procs, limit=60):
    end = time.monotonic() + limit
    for p in procs:
        p.wait(timeout=max(1, end - time.monotonic()))
        check(p.returncode == 0, "writer exit %s" % p.returncode)


def reference():
    """(lane, seq) -> record, as the library's reader sees the buffer."""
    out = subprocess.run([SHMLOG, "cat", "-b", BUF, "-v", "json"],
                         check=True, stdout=subprocess.PIPE).stdout
    ref = {}
    for line in out.splitlines():
        r = json.loads(line.decode("utf-8", "surrogateescape"))
        if "lost" in r:
            continue
        ref[(r["lane"], r["seq"])] = r
    return ref


def lane_stats():
    """lane -> (written, overwritten, torn) from `shmlog info`."""
    out = subprocess.run([SHMLOG, "info", "-b", BUF], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    return out


# ---------------------------------------------------------------- rsyslogd

class Rsyslog:
    def __init__(self, relp=False, ordered=False):
        """ordered: one worker on the main queue, so that the output keeps
        the order the messages came in (several may reorder them)."""
        if not shutil.which("rsyslogd"):
            skip("rsyslogd not installed (Debian package rsyslog)")
        self.dir = os.path.join(TMP, "rsyslog")
        os.makedirs(self.dir, exist_ok=True)
        self.tcp = free_port()
        self.relp = free_port() if relp else None
        self.sock = os.path.join(self.dir, "sock")
        self.out = os.path.join(self.dir, "out")
        self.proc = None
        modules = "/usr/lib/x86_64-linux-gnu/rsyslog"
        if relp and not any(os.path.exists(os.path.join(d, "imrelp.so"))
                            for d in (modules, "/usr/lib/rsyslog")):
            skip("rsyslog's imrelp not installed (Debian package "
                 "rsyslog-relp)")
        conf = """
global(workDirectory="{d}" maxMessageSize="64k"
       parser.escapeControlCharactersOnReceive="off")
{queue}
module(load="imptcp")
input(type="imptcp" port="{tcp}" address="127.0.0.1")
input(type="imptcp" path="{sock}" unlink="on")
{relp}
template(name="j" type="list" option.jsonf="on") {{
  property(outname="pri" name="pri" format="jsonf")
  property(outname="app" name="app-name" format="jsonf")
  property(outname="procid" name="procid" format="jsonf")
  property(outname="msgid" name="msgid" format="jsonf")
  property(outname="time" name="timereported" dateFormat="rfc3339"
           format="jsonf")
  property(outname="sd" name="structured-data" format="jsonf")
  property(outname="msg" name="msg" format="jsonf")
}}
action(type="omfile" file="{out}" template="j")
""".format(d=self.dir, tcp=self.tcp, sock=self.sock, out=self.out,
           queue='main_queue(queue.workerThreads="1")' if ordered else "",
           relp=('module(load="imrelp")\ninput(type="imrelp" port="%d" '
                 'address="127.0.0.1")' % self.relp) if relp else "")
        self.conf = os.path.join(self.dir, "rsyslog.conf")
        with open(self.conf, "w") as f:
            f.write(conf)

    def start(self):
        self.proc = subprocess.Popen(
            ["rsyslogd", "-n", "-f", self.conf, "-i",
             os.path.join(self.dir, "pid")],
            stdout=open(os.path.join(self.dir, "log"), "a"),
            stderr=subprocess.STDOUT)
        CHILDREN.append(self.proc)
        ports = [self.tcp] + ([self.relp] if self.relp else [])

        def up():
            if self.proc.poll() is not None:
                return True
            for p in ports:
                try:
                    socket.create_connection(("127.0.0.1", p), 1).close()
                except OSError:
                    return False
            return os.path.exists(self.sock)
        ok = wait_until(up, 20, "rsyslogd to listen")
        if not ok or self.proc.poll() is not None:
            log(open(os.path.join(self.dir, "log")).read())
            raise SystemExit("rsyslogd did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=20)

    def lines(self):
        try:
            with open(self.out, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")[:-1]  # the last may be half written
        return [json.loads(l.decode("utf-8", "surrogateescape"))
                for l in lines if l]

    def wait_lines(self, n, limit=60):
        return wait_until(lambda: len(self.lines()) >= n, limit,
                          "%d lines from rsyslogd" % n)


def check_syslog_line(line, ref):
    """One rsyslogd output line against the reader's record."""
    sd = sd_params(line["sd"])
    key = (int(sd["lane"]), int(sd["seq"]))
    r = ref.get(key)
    if not check(r is not None, "record %s not in the buffer" % (key,)):
        return key
    msg = line["msg"].encode("utf-8", "surrogateescape")
    i = int(re.match(rb"rec (\d+) ", msg).group(1))
    prio = "VDIWEF".index(r["prio"]) + 2
    check(msg == expected_message(i), "message bytes %r" % msg)
    check(prio == 2 + i % 6, "priority of record %d" % i)
    check(int(line["pri"]) == 8 + severity(prio), "PRI %s" % line["pri"])
    check(line["app"] == r["tag"], "APP-NAME %s" % line["app"])
    check(int(line["procid"]) == r["pid"], "PROCID %s" % line["procid"])
    check(int(sd["tid"]) == r["tid"], "tid %s" % sd["tid"])
    usec = iso_usec(line["time"])
    check(usec == r["time_ns"] // 1000,
          "time %s vs %d ns" % (line["time"], r["time_ns"]))
    return key


def iso_usec(s):
    m = re.match(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d{6})(Z|[+-]00:00)$",
                 s)
    if not m:
        check(False, "timestamp %r" % s)
        return -1
    import calendar
    y, mo, d, h, mi, se = (int(m.group(k)) for k in range(1, 7))
    return calendar.timegm((y, mo, d, h, mi, se)) * 1000000 + int(m.group(7))


def forward(url, *args, check_rc=True, timeout=120):
    p = subprocess.run([SHMLOG, "forward", "-b", BUF, "--to", url,
                        "--dump"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    if check_rc:
        check(p.returncode == 0, "forward %s exit %d: %s" %
              (url, p.returncode, p.stderr.decode()))
    return p


# ---------------------------------------------------------------- cases

def case_syslog():
    """TCP, Unix socket and RELP into rsyslogd: every field of every
    record, from several writers."""
    rs = Rsyslog(relp=True)
    rs.start()
    create_buffer()
    n, writers = 1500, 3
    wait_writers(start_writers(writers, n))
    ref = reference()
    check(len(ref) == n * writers, "reference holds %d" % len(ref))
    urls = ["syslog+tcp://127.0.0.1:%d" % rs.tcp, "syslog+unix://" + rs.sock,
            "relp://127.0.0.1:%d" % rs.relp]
    total = 0
    for url in urls:
        forward(url)
        total += len(ref)
        if not check(rs.wait_lines(total), "%s: all lines arrive" % url):
            break
        got = {}
        for line in rs.lines()[total - len(ref):]:
            key = check_syslog_line(line, ref)
            got[key] = got.get(key, 0) + 1
        check(set(got) == set(ref), "%s: every record arrives" % url)
        check(all(v == 1 for v in got.values()), "%s: exactly once" % url)
        log("%s: %d records checked" % (url, len(got)))
    rs.stop()


def case_jsonl():
    """JSON lines to a file, resumed with a cursor: nothing twice; each
    line is what `shmlog cat -v json` prints (printf-style records' fmt
    and args included) plus the host."""
    create_buffer()
    wait_writers(start_writers(2, 500))
    wait_writers(start_writers(1, 50, prefix="pf", printf=True))
    out = os.path.join(TMP, "out.jsonl")
    cur = os.path.join(TMP, "cursor")
    forward("jsonl:" + out, "--cursor-file", cur)
    wait_writers(start_writers(2, 300, prefix="later"))

    def cat_after(opt):
        p = subprocess.run([SHMLOG, "cat", "-b", BUF, opt, cur, "-v",
                            "json"], stdout=subprocess.PIPE, check=True)
        return [json.loads(l.decode("utf-8", "surrogateescape"))
                for l in p.stdout.splitlines()]
    # `shmlog cat` reads the forwarder's cursor: only the later records
    later = cat_after("--after-cursor")
    check(len(later) == 600 and all(r["tag"].startswith("later")
                                    for r in later),
          "cat --after-cursor: the 600 later records (%d)" % len(later))
    forward("jsonl:" + out, "--cursor-file", cur)
    check(cat_after("--after-cursor") == [], "cat: nothing after the "
          "forwarder's new cursor")
    wait_writers(start_writers(1, 7, prefix="cat"))
    check(len(cat_after("--cursor-file")) == 7, "cat --cursor-file")
    check(cat_after("--cursor-file") == [], "cat --cursor-file saved")
    ref = reference()
    seen = {}
    host = socket.gethostname()
    printf_seen = 0
    with open(out, "rb") as f:
        for line in f:
            r = json.loads(line.decode("utf-8", "surrogateescape"))
            check(r.pop("host", None) == host, "host %s" % host)
            check(r.get("buffer") == BUF, "buffer %s" % r.get("buffer"))
            key = (r["lane"], r["seq"])
            if r["tag"] == "pf0":
                i = int(r["msg"].split()[1])
                printf_seen += check(
                    r.get("fmt") == 'rec %lu "quoted" %s %d %.2f' and
                    r.get("args") == [i, "caf\u00e9 \ufffd", -i, i / 4.0],
                    "printf-style record's fmt and args: %r" % r)
            seen[key] = seen.get(key, 0) + 1
            check(r == ref.get(key), "record %s as `shmlog cat` shows it"
                  % (key,))
    check(printf_seen == 50, "50 printf-style records (%d)" % printf_seen)
    check(len(ref) == 1657 and set(seen) | {k for k in ref if
                                            ref[k]["tag"] == "cat0"}
          == set(ref), "all records")
    check(all(v == 1 for v in seen.values()), "each once across a restart")


def case_multi():
    """Two buffers into one sink with one cursor file, a filter spec, and
    the status line on SIGUSR1."""
    global BUF
    first, second = BUF, BUF + "-b"
    create_buffer()
    wait_writers(start_writers(2, 100, prefix="one"))
    BUF = second
    try:
        create_buffer()
        wait_writers(start_writers(1, 50, prefix="two"))
        out = os.path.join(TMP, "out.jsonl")
        cur = os.path.join(TMP, "cursor")
        cmd = [SHMLOG, "forward", "-b", first, "-b", second, "--to",
               "jsonl:" + out, "--cursor-file", cur]

        def tags():
            with open(out, "rb") as f:
                return [json.loads(l.decode("utf-8", "surrogateescape"))
                        ["tag"] for l in f]
        p = subprocess.run(cmd + ["--dump"], stderr=subprocess.PIPE)
        check(p.returncode == 0, "two buffers: exit 0")
        t = tags()
        check(len(t) == 250 and t.count("two0") == 50, "both buffers (%d)"
              % len(t))
        with open(out, "rb") as f:
            came = {(r["tag"][:3], r["buffer"]) for r in
                    (json.loads(l.decode("utf-8", "surrogateescape"))
                     for l in f)}
        check(came == {("one", first), ("two", second)},
              "jsonl: each record names its buffer: %s" % came)
        # `shmlog cat` merging both says where each record came from
        for view, pick in (("json", lambda l: (json.loads(l)["tag"][:3],
                                               json.loads(l)["buffer"])),
                           ("brief,buffer", lambda l: (l.split()[1][2:5],
                                                       l.split()[0]))):
            p = subprocess.run([SHMLOG, "cat", "-b", first, "-b", second,
                                "-v", view], stdout=subprocess.PIPE,
                               check=True)
            lines = p.stdout.decode("utf-8", "replace").splitlines()
            came = {pick(l) for l in lines if l.split()[0] != "line2"}
            check(came == {("one", first), ("two", second)},
                  "cat -v %s: each record's buffer: %s" % (view, came))
        with open(cur) as f:
            check(f.read().count("buffer ") == 2, "one cursor, two sections")
        # more records in each; a filter keeps warnings and above of one0
        wait_writers(start_writers(1, 60, prefix="two"))
        BUF = first
        wait_writers(start_writers(1, 60, prefix="one"))
        p = subprocess.run(cmd + ["--dump", "one0:W", "*:S"],
                           stderr=subprocess.PIPE)
        st = p.stderr.decode()
        t = tags()[250:]
        # priorities cycle V D I W E F: W, E, F are 30 of every 60
        check(len(t) == 30 and set(t) == {"one0"},
              "filter spec: %d records %s" % (len(t), set(t)))
        check("30 records delivered" in st and "90 filtered out" in st,
              "status counts filtered records: %s" % st)
        # SIGUSR1 while following
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE)
        CHILDREN.append(p)
        # it is running (its handlers set) once it forwarded a new record
        wait_writers(start_writers(1, 1, prefix="ping"))
        wait_until(lambda: len(tags()) == 281, 20, "the forwarder to run")
        p.send_signal(signal.SIGUSR1)
        line = p.stderr.readline().decode()
        check(line.startswith("shmlog forward: status:"), "SIGUSR1: %r"
              % line)
        stop_forwarder(p)
        check(len(tags()) == 281, "nothing sent twice after the restarts")
    finally:
        subprocess.run([SHMLOG, "rm", "-b", second],
                       stderr=subprocess.DEVNULL)
        BUF = first


def parse_export(data):
    """systemd Journal Export Format -> list of {field: bytes}."""
    entries, cur, i = [], {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if not line:
            entries.append(cur)
            cur = {}
            i = nl + 1
            continue
        if b"=" in line:
            k, v = line.split(b"=", 1)
            cur[k.decode()] = v
            i = nl + 1
        else:
            size = int.from_bytes(data[nl + 1:nl + 9], "little")
            cur[line.decode()] = data[nl + 9:nl + 9 + size]
            i = nl + 9 + size + 1
    if cur:
        entries.append(cur)
    return entries


def case_journal():
    """Journal Export Format into systemd-journal-remote, read back with
    journalctl --file."""
    remote = next((p for p in ("/lib/systemd/systemd-journal-remote",
                               "/usr/lib/systemd/systemd-journal-remote")
                   if os.path.exists(p)), None)
    if not remote:
        skip("systemd-journal-remote not installed (Debian package "
             "systemd-journal-remote)")
    if not shutil.which("journalctl"):
        skip("journalctl not installed")
    create_buffer()
    wait_writers(start_writers(3, 700))
    ref = reference()
    jfile = os.path.join(TMP, "remote.journal")
    fwd = subprocess.Popen([SHMLOG, "forward", "-b", BUF, "--to",
                            "journal-export:", "--dump"],
                           stdout=subprocess.PIPE)
    CHILDREN.append(fwd)
    rem = subprocess.run([remote, "-o", jfile, "-"], stdin=fwd.stdout,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=120)
    fwd.wait(timeout=60)
    check(fwd.returncode == 0, "forward exit %d" % fwd.returncode)
    check(rem.returncode == 0, "journal-remote: %s" % rem.stderr.decode())
    data = subprocess.run(["journalctl", "--file", jfile, "-o", "export"],
                          stdout=subprocess.PIPE, check=True).stdout
    got = {}
    for e in parse_export(data):
        key = (int(e["SHMLOG_LANE"]), int(e["SHMLOG_SEQ"]))
        r = ref.get(key)
        if not check(r is not None, "entry %s in the buffer" % (key,)):
            continue
        got[key] = got.get(key, 0) + 1
        msg = e["MESSAGE"]
        i = int(re.match(rb"rec (\d+) ", msg).group(1))
        check(msg == expected_message(i), "MESSAGE %r" % msg)
        prio = 2 + i % 6
        check(e["PRIORITY"] == b"%d" % severity(prio), "PRIORITY")
        check(e["SHMLOG_PRIORITY"].decode() == r["prio"], "SHMLOG_PRIORITY")
        check(e["SYSLOG_IDENTIFIER"].decode() == r["tag"], "identifier")
        check(int(e["_PID"]) == r["pid"] == int(e["SYSLOG_PID"]), "_PID")
        check(int(e["_TID"]) == r["tid"], "_TID")
        check(int(e["__REALTIME_TIMESTAMP"]) == r["time_ns"] // 1000,
              "__REALTIME_TIMESTAMP")
        check(iso_usec(e["SYSLOG_TIMESTAMP"].decode()) == r["time_ns"] // 1000,
              "SYSLOG_TIMESTAMP")
    check(set(got) == set(ref), "every record in the journal (%d of %d)"
          % (len(got), len(ref)))
    check(all(v == 1 for v in got.values()), "each once")


def relp_keys(rs):
    """(lane, seq) -> count of shmlog records in rsyslogd's output, and the
    loss messages' counts per lane."""
    got, lost = {}, {}
    for line in rs.lines():
        sd = sd_params(line["sd"])
        if line["app"] == "shmlog-forward":
            lane = int(sd["lane"])
            lost[lane] = lost.get(lane, 0) + int(sd["overwritten"]) + \
                int(sd["torn"])
            continue
        key = (int(sd["lane"]), int(sd["seq"]))
        got[key] = got.get(key, 0) + 1
    return got, lost


def start_forwarder(url, cursor, *extra):
    p = subprocess.Popen([SHMLOG, "forward", "-b", BUF, "--to", url,
                          "--cursor-file", cursor, "--max-backoff", "0.5"]
                         + list(extra), stderr=subprocess.PIPE)
    CHILDREN.append(p)
    return p


def stop_forwarder(p):
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=30)[1].decode()
    check(p.returncode == 0, "forwarder exits 0 on SIGTERM (%d): %s"
          % (p.returncode, err))
    return err


def case_resume():
    """RELP: SIGKILL the forwarder at random points while writers write;
    every record arrives at least once; after a clean stop, exactly once."""
    seed = int(os.environ.get("SHMLOG_TEST_SEED", time.time()))
    rng = random.Random(seed)
    log("seed", seed)
    rs = Rsyslog(relp=True)
    rs.start()
    create_buffer("32M", lanes=8)
    url = "relp://127.0.0.1:%d" % rs.relp
    cur = os.path.join(TMP, "cursor")
    writers = start_writers(3, 6000, rate=4000)
    kills = 0
    while any(w.poll() is None for w in writers) and kills < 12:
        p = start_forwarder(url, cur, "--batch", str(rng.choice([1, 7, 64,
                                                                 512])))
        time.sleep(rng.uniform(0.05, 0.4))  # a random point, not a sync
        p.kill()
        p.wait()
        kills += 1
    wait_writers(writers)
    p = start_forwarder(url, cur)
    ref = reference()
    check(rs.wait_lines(len(ref)), "records arrive after %d kills" % kills)
    wait_until(lambda: set(relp_keys(rs)[0]) >= set(ref), 60,
               "every record")
    stop_forwarder(p)
    got, lost = relp_keys(rs)
    missing = set(ref) - set(got)
    dups = sum(v - 1 for v in got.values())
    log("after %d kills: %d records, %d distinct delivered, %d duplicates, "
        "%d missing" % (kills, len(ref), len(got), dups, len(missing)))
    check(not missing, "at least once: %d missing" % len(missing))
    check(not lost, "no loss reported when the ring lost nothing: %s" % lost)
    # exactly once after a clean stop
    mark = len(rs.lines())
    wait_writers(start_writers(2, 2000, prefix="after"))
    p = start_forwarder(url, cur)
    ref2 = reference()
    new = set(ref2) - set(ref)
    check(rs.wait_lines(mark + len(new)), "records after a clean stop")
    stop_forwarder(p)
    after = {}
    for line in rs.lines()[mark:]:
        sd = sd_params(line["sd"])
        key = (int(sd["lane"]), int(sd["seq"]))
        after[key] = after.get(key, 0) + 1
    check(set(after) == new, "after a clean stop: only the new records "
          "(%d, expected %d)" % (len(after), len(new)))
    check(all(v == 1 for v in after.values()), "after a clean stop: once")
    rs.stop()


def case_resume_losses():
    """RELP into a small ring: SIGKILL the forwarder at random points while
    writers overwrite what it has not read; no record goes missing without
    a loss message whose range covers it."""
    seed = int(os.environ.get("SHMLOG_TEST_SEED", time.time()))
    rng = random.Random(seed)
    log("seed", seed)
    rs = Rsyslog(relp=True)
    rs.start()
    create_buffer("64K", lanes=4)
    url = "relp://127.0.0.1:%d" % rs.relp
    cur = os.path.join(TMP, "cursor")
    writers = start_writers(3, 5000, rate=5000)
    kills = 0
    while any(w.poll() is None for w in writers) and kills < 20:
        p = start_forwarder(url, cur, "--batch", str(rng.choice([1, 16, 256])))
        time.sleep(rng.uniform(0.02, 0.2))  # a random point, not a sync
        p.kill()
        p.wait()
        kills += 1
        time.sleep(rng.uniform(0, 0.1))  # away: the ring overwrites
    wait_writers(writers)
    p = forward(url, "--cursor-file", cur)
    last_line = p.stderr.decode().strip().splitlines()[-1]
    # rsyslogd writes asynchronously: wait for the last record of each lane
    info = subprocess.run([SHMLOG, "cat", "-b", BUF, "-v", "json"],
                          stdout=subprocess.PIPE).stdout
    newest = {}
    for line in info.splitlines():
        r = json.loads(line.decode("utf-8", "surrogateescape"))
        if "seq" in r:
            newest[r["lane"]] = max(newest.get(r["lane"], 0), r["seq"])
    wait_until(lambda: all(any(k == (l, q) for k in relp_keys(rs)[0])
                           for l, q in newest.items()), 60, "newest records")
    got, ranges = {}, {}
    for line in rs.lines():
        sd = sd_params(line["sd"])
        lane = int(sd["lane"])
        if line["app"] == "shmlog-forward":
            key = (lane, int(sd["first"]), int(sd["last"]))
            ranges[key] = int(sd["overwritten"]) + int(sd["torn"])
            continue
        k = (lane, int(sd["seq"]))
        got[k] = got.get(k, 0) + 1
    silent = 0
    silent_seqs = {}
    for lane, top in newest.items():
        for seq in range(top + 1):
            if (lane, seq) in got:
                continue
            if not any(l == lane and a <= seq <= b for l, a, b in ranges):
                silent += 1
                silent_seqs.setdefault(lane, []).append(seq)
    for lane, seqs in silent_seqs.items():
        log("lane %d: silent %d..%d (%d), delivered from %s" %
            (lane, seqs[0], seqs[-1], len(seqs),
             min((q for l, q in got if l == lane), default=None)))
    missing = sum(1 for lane, top in newest.items() for q in range(top + 1)
                  if (lane, q) not in got)
    log("after %d kills: %d delivered, %d duplicates, %d missing, %d loss "
        "messages counting %d, %d missing without a loss message; last "
        "run: %s" % (kills, len(got), sum(v - 1 for v in got.values()),
                     missing, len(ranges), sum(ranges.values()), silent,
                     last_line))
    check(kills > 0 and missing > 0, "the test premise: the ring overwrote")
    check(silent == 0, "no silent loss: %d records" % silent)
    check(sum(ranges.values()) >= missing,
          "the loss messages count every missing record")
    rs.stop()


def case_losses():
    """A ring that overwrites while the forwarder is away: loss messages
    downstream account exactly for every record that never arrived."""
    rs = Rsyslog(relp=True)
    rs.start()
    create_buffer("64K", lanes=4)
    url = "relp://127.0.0.1:%d" % rs.relp
    cur = os.path.join(TMP, "cursor")
    wait_writers(start_writers(2, 50))
    forward(url, "--cursor-file", cur)
    wait_writers(start_writers(2, 3000, prefix="flood"))  # overwrites
    p = forward(url, "--cursor-file", cur)
    status = p.stderr.decode()
    log(status.strip())
    ref = reference()
    wait_until(lambda: set(relp_keys(rs)[0]) >= set(ref), 60, "records")
    got, lost = relp_keys(rs)
    # per lane, every sequence number from the buffer's first (0) to the
    # last is delivered or counted in a loss message
    lanes = {}
    for lane, seq in got:
        lanes.setdefault(lane, []).append(seq)
    total_lost = 0
    for lane, seqs in lanes.items():
        span = max(seqs) + 1
        missing = span - len(set(seqs))
        total_lost += lost.get(lane, 0)
        check(missing == lost.get(lane, 0),
              "lane %d: %d missing, loss messages say %d" %
              (lane, missing, lost.get(lane, 0)))
    check(total_lost > 0, "the flood overwrote records (test premise)")
    m = re.search(r"(\d+) lost \((\d+) overwritten", status)
    check(m and int(m.group(1)) == total_lost,
          "status line counts the losses: %s" % status)
    # a first forwarder, with no cursor, on this ring: what the ring had
    # overwritten before it came is reported too, lane by lane (before
    # the oldest record a lane holds, and between: a departed writer's
    # last chunk is kept while the lane's later ones are recycled)
    out = os.path.join(TMP, "first.jsonl")
    forward("jsonl:" + out)
    lost, seqs = {}, {}
    with open(out, "rb") as f:
        for line in f:
            r = json.loads(line.decode("utf-8", "surrogateescape"))
            if "lost" in r:
                lost[r["lane"]] = lost.get(r["lane"], 0) + r["lost"]
            else:
                seqs.setdefault(r["lane"], set()).add(r["seq"])
    missing = {l: max(q) + 1 - len(q) for l, q in seqs.items()
               if max(q) + 1 > len(q)}
    check(lost == missing,
          "first run: losses reported %s, missing %s" % (lost, missing))
    rs.stop()


def case_receiver_restart():
    """RELP: rsyslogd stops for two seconds mid-stream and starts again:
    no record the ring still held is lost."""
    rs = Rsyslog(relp=True)
    rs.start()
    create_buffer("32M", lanes=8)
    url = "relp://127.0.0.1:%d" % rs.relp
    cur = os.path.join(TMP, "cursor")
    p = start_forwarder(url, cur)
    writers = start_writers(3, 8000, rate=3000)
    wait_until(lambda: len(rs.lines()) > 1000, 30, "some records")
    rs.stop()
    time.sleep(2)  # the outage itself, not a synchronisation
    rs.start()
    wait_writers(writers)
    ref = reference()
    wait_until(lambda: set(relp_keys(rs)[0]) >= set(ref), 90,
               "every record after the restart")
    err = stop_forwarder(p)
    got, lost = relp_keys(rs)
    missing = set(ref) - set(got)
    log("receiver restart: %d records, %d missing, %d duplicates; "
        "forwarder said: %s" % (len(ref), len(missing),
                                sum(v - 1 for v in got.values()),
                                err.strip().splitlines()[-1]))
    check(not missing, "RELP loses nothing across a receiver restart")
    check(not lost, "no loss messages")
    check("reconnects" in err and not re.search(r" 0 reconnects", err),
          "the forwarder reconnected")


def at_risk(err):
    """The status line's "up to N of them may have been lost"."""
    m = re.findall(r"up to (\d+) of them may have been lost", err)
    return int(m[-1]) if m else None


def case_tcp_restart():
    """TCP: rsyslogd stops mid-stream and starts again. TCP acknowledges
    nothing a receiver stored: the summary says so, and the records that
    went missing are at most the ones it says may have been lost. Then a
    receiver that stops reading and closes with our bytes unread: records
    are lost for sure, and within the count."""
    rs = Rsyslog()
    rs.start()
    create_buffer("32M", lanes=8)
    url = "syslog+tcp://127.0.0.1:%d" % rs.tcp
    cur = os.path.join(TMP, "cursor")
    p = start_forwarder(url, cur, "--batch", "16")
    writers = start_writers(3, 3000, rate=1000)
    wait_until(lambda: len(rs.lines()) > 1000, 30, "some records")
    rs.stop()
    time.sleep(1)  # the outage itself, not a synchronisation
    rs.start()
    wait_writers(writers)
    ref = reference()
    wait_until(lambda: len(rs.lines()) >= len(ref) - 2000, 60,
               "the records after the restart")
    err = stop_forwarder(p)
    risk = at_risk(err)
    # rsyslogd writes what it read in its own time: poll, bounded, until
    # what is missing is within the count
    wait_until(lambda: risk is not None and
               len(set(ref) - set(relp_keys(rs)[0])) <= risk, 30,
               "rsyslogd to write what it read")
    got, _ = relp_keys(rs)
    missing = set(ref) - set(got)
    log("TCP restart: %d records, %d missing, at risk %s; said: %s"
        % (len(ref), len(missing), risk, err.strip().splitlines()[-1]))
    check(risk is not None and "acknowledges nothing" in err,
          "the summary says TCP is not acknowledged: %s" % err)
    check(risk is not None and risk > 0,
          "a broken connection counts what it may have lost: %s" % risk)
    check(not re.search(r" 0 reconnects", err), "it reconnected")
    # Not asserted: missing <= at risk. Records rsyslogd read into its
    # queues and dropped as it stopped are beyond what the wire tells
    # (docs/forwarding.md); in about 1 run of 15 on a loaded machine they
    # exceed the count. The receiver below has no queue: there it holds.
    rs.stop()

    # a receiver that reads nothing, then closes with the bytes unread
    # (the kernel resets the connection: they are gone)
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(1)
    port = lsn.getsockname()[1]
    subprocess.run([SHMLOG, "clear", "-b", BUF], check=True)
    wait_writers(start_writers(1, 200))
    p = start_forwarder("syslog+tcp://127.0.0.1:%d" % port,
                        os.path.join(TMP, "cursor2"), "--batch", "50")
    conn, _ = lsn.accept()
    conn.settimeout(0.05)
    # wait until all 200 records sit in the connection, unread
    got = []

    def queued():
        n = bytearray(4)
        import fcntl
        import termios
        fcntl.ioctl(conn.fileno(), termios.FIONREAD, n)
        got[:] = [int.from_bytes(n, "little")]
        return got[0] > 200 * 100
    check(wait_until(queued, 20, "the records in the socket"),
          "the records reach the receiver's socket (%s bytes)" % got)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                    b"\x01\x00\x00\x00\x00\x00\x00\x00")
    conn.close()  # unread: reset
    lsn.close()
    time.sleep(0.5)  # let the forwarder see the reset on its next look
    wait_writers(start_writers(1, 1, prefix="poke"))
    err = stop_forwarder(p)
    risk = at_risk(err)
    sent = int(re.findall(r"(\d+) records delivered", err)[-1])
    # every record it wrote went unread: all of them are counted
    check(sent > 0 and risk is not None and risk >= sent,
          "%d records unread by a receiver that reset: at risk %s (%s)"
          % (sent, risk, err.strip().splitlines()[-1]))


def pb_varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def pb_fields(buf):
    """(field, wire type, value) of one protobuf message: a varint's
    number, or the bytes of a LEN, I64 or I32 field."""
    i = 0
    while i < len(buf):
        tag, i = pb_varint(buf, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = pb_varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = pb_varint(buf, i)
            v, i = buf[i:i + n], i + n
            if i > len(buf):
                raise ValueError("a field runs past its message")
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def pb_str(v):
    return v.decode("utf-8")  # strict: proto3 strings are UTF-8


def pb_any(buf):
    """An AnyValue, as the OTLP JSON mapping writes it."""
    import base64
    import struct
    for f, wt, v in pb_fields(buf):
        if f == 1:
            return {"stringValue": pb_str(v)}
        if f == 2:
            return {"boolValue": bool(v)}
        if f == 3:
            return {"intValue": str(v - (1 << 64) if v >> 63 else v)}
        if f == 4:
            return {"doubleValue": struct.unpack("<d", v)[0]}
        if f == 5:
            return {"arrayValue": {"values": [pb_any(x) for g, _, x in
                                              pb_fields(v) if g == 1]}}
        if f == 7:
            return {"bytesValue": base64.b64encode(v).decode()}
    return {}


def pb_kv(buf):
    kv = {}
    for f, wt, v in pb_fields(buf):
        if f == 1:
            kv["key"] = pb_str(v)
        elif f == 2:
            kv["value"] = pb_any(v)
    return kv


def pb_logrecord(buf):
    lr = {"attributes": []}
    for f, wt, v in pb_fields(buf):
        if f in (1, 11):
            name = "timeUnixNano" if f == 1 else "observedTimeUnixNano"
            lr[name] = str(int.from_bytes(v, "little"))
        elif f == 2:
            lr["severityNumber"] = v
        elif f == 3:
            lr["severityText"] = pb_str(v)
        elif f == 5:
            lr["body"] = pb_any(v)
        elif f == 6:
            lr["attributes"].append(pb_kv(v))
        elif f == 12:
            lr["eventName"] = pb_str(v)
    return lr


def pb_logs_request(buf):
    """An ExportLogsServiceRequest (opentelemetry-proto, collector/logs/v1)
    as the OTLP JSON mapping writes it: a decoder written from the .proto
    files' field numbers, apart from the forwarder's encoder (the real
    Collector is the other check, in test_forward_otlp_collector_proto)."""
    doc = {"resourceLogs": []}
    for f, wt, rl in pb_fields(buf):
        check(f == 1 and wt == 2, "ExportLogsServiceRequest field %d" % f)
        out = {"resource": {"attributes": []}, "scopeLogs": []}
        for g, _, v in pb_fields(rl):
            if g == 1:
                out["resource"]["attributes"] = [
                    pb_kv(a) for h, _, a in pb_fields(v) if h == 1]
            elif g == 2:
                sl = {"scope": {}, "logRecords": []}
                for h, _, x in pb_fields(v):
                    if h == 1:
                        sl["scope"] = {"name": pb_str(y) for k, _, y in
                                       pb_fields(x) if k == 1}
                    elif h == 2:
                        sl["logRecords"].append(pb_logrecord(x))
                out["scopeLogs"].append(sl)
        doc["resourceLogs"].append(out)
    return doc


class OtlpReceiver:
    """An OTLP/HTTP logs receiver (POST /v1/logs; JSON or protobuf, plain
    or gzip) that checks the payload's structure and keeps the LogRecords;
    it answers the first requests with @refusals, a list of (status,
    Retry-After or None), and stores nothing of those. @encoding, if
    given, is the Content-Type and Content-Encoding every request must
    have."""

    def __init__(self, refusals=(), encoding=None):
        import gzip
        import http.server
        import threading
        self.refusals = list(refusals)
        self.encoding = encoding
        self.records, self.resources, self.answers = [], [], []
        self.requests = []  # (resource, its LogRecords) of each taken
        self.bytes_in = self.bytes_plain = 0
        recv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def answer(self, status, ctype, msg, retry=None):
                self.send_response(status)
                if retry is not None:
                    self.send_header("Retry-After", str(retry))
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)

            def do_POST(self):
                n = int(self.headers["Content-Length"])
                body = self.rfile.read(n)
                now = time.monotonic()
                ctype = self.headers["Content-Type"]
                enc = self.headers["Content-Encoding"]
                pb = ctype == "application/x-protobuf"
                if recv.refusals:
                    status, retry = recv.refusals.pop(0)
                    recv.answers.append((now, status, retry))
                    if pb:  # google.rpc.Status{code 14, message}
                        msg = b"\x08\x0e\x12\x0dbusy, go away"
                    else:
                        msg = b'{"code":14,"message":"busy, go away"}'
                    self.answer(status, ctype, msg, retry)
                    return
                recv.answers.append((now, 200, None))
                check(self.path == "/v1/logs", "POST %s" % self.path)
                if recv.encoding:
                    check((ctype, enc) == recv.encoding,
                          "Content-Type %s, Content-Encoding %s" %
                          (ctype, enc))
                check(ctype in ("application/json",
                                "application/x-protobuf"),
                      "Content-Type %s" % ctype)
                recv.bytes_in += len(body)
                if enc == "gzip":
                    body = gzip.decompress(body)
                recv.bytes_plain += len(body)
                doc = pb_logs_request(body) if pb else json.loads(body)
                for rl in doc["resourceLogs"]:
                    recv.resources.append(rl["resource"])
                    taken = []
                    for sl in rl["scopeLogs"]:
                        check(sl["scope"]["name"] == "shmlog", "scope")
                        taken.extend(sl["logRecords"])
                    recv.records.extend(taken)
                    recv.requests.append((rl["resource"], taken))
                if pb:  # ExportLogsServiceResponse{}
                    self.answer(200, ctype, b"")
                else:
                    self.answer(200, "application/json", b"{}")

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def check_otlp_records(records, ref):
    """Every LogRecord against the reader's record; returns the keys."""
    sev = {"V": (1, "VERBOSE"), "D": (5, "DEBUG"), "I": (9, "INFO"),
           "W": (13, "WARN"), "E": (17, "ERROR"), "F": (21, "FATAL")}
    got = {}
    for lr in records:
        a = otlp_attrs(lr["attributes"])
        if lr.get("eventName") == "shmlog.lost":
            continue
        key = (a["shmlog.lane"], a["shmlog.seq"])
        got[key] = got.get(key, 0) + 1
        r = ref.get(key)
        if not check(r is not None, "OTLP record %s in the buffer" % (key,)):
            continue
        check(lr["timeUnixNano"] == str(r["time_ns"]), "timeUnixNano")
        check(int(lr["observedTimeUnixNano"]) >= r["time_ns"],
              "observedTimeUnixNano after the record's time")
        check((lr["severityNumber"], lr["severityText"]) == sev[r["prio"]],
              "severity of %s: %r" % (r["prio"], lr))
        check(lr["body"]["stringValue"] == r["msg"], "body %r" % lr["body"])
        check(a["process.pid"] == r["pid"] and a["thread.id"] == r["tid"]
              and a["shmlog.tag"] == r["tag"] and a["shmlog.buffer"] == BUF,
              "attributes %r" % a)
        if "msg_base64" in r:
            check(a.get("shmlog.msg_bytes") == r["msg_base64"],
                  "exact bytes of a message that is not UTF-8")
        if "fmt" in r:
            check(a.get("shmlog.format") == r["fmt"] and
                  [float(x) if isinstance(x, str) and
                   x.lstrip("-").isdigit() else x
                   for x in a.get("shmlog.args", [])] ==
                  [float(x) if isinstance(x, int) else x
                   for x in r["args"]],
                  "printf-style format and values: %r vs %r" % (a, r))
    return got


def otlp_case(scheme, query, encoding):
    """OTLP/HTTP into a test receiver that checks every field, and
    answers 503 and 429 (with and without Retry-After) for a while:
    nothing lost, nothing twice, Retry-After honoured; a 400 stops the
    forwarder with the cursor before the batch."""
    create_buffer()
    wait_writers(start_writers(2, 400))
    wait_writers(start_writers(1, 100, prefix="pf", printf=True))
    ref = reference()
    rcv = OtlpReceiver([(503, 1), (429, None), (503, None), (429, 1)],
                       encoding)
    cur = os.path.join(TMP, "cursor")
    url = "%s://127.0.0.1:%d%s" % (scheme, rcv.port, query)
    p = forward(url, "--cursor-file", cur, "--batch", "128", "--service",
                "checkout")
    err = p.stderr.decode()
    got = check_otlp_records(rcv.records, ref)
    check(set(got) == set(ref), "every record arrives (%d of %d)"
          % (len(got), len(ref)))
    check(all(v == 1 for v in got.values()), "each once")
    for res in rcv.resources:
        a = otlp_attrs(res["attributes"])
        check(a == {"host.name": socket.gethostname(),
                    "service.name": "checkout"}, "resource %r" % a)
    # protobuf answers carry a google.rpc.Status: its message is shown
    said = "HTTP 503: busy" if scheme == "otlp" else "HTTP 503"
    check(said in err and "busy, go away" in err and "HTTP 429" in err and
          "4 failed deliveries" in err, "retries said: %s" % err)
    # Retry-After: 1 s is waited before the next try (a lower bound)
    ans = rcv.answers
    for i, (t, status, retry) in enumerate(ans[:-1]):
        if retry:
            check(ans[i + 1][0] - t >= 0.9, "Retry-After %d honoured "
                  "(%.2f s)" % (retry, ans[i + 1][0] - t))
    # nothing new: nothing sent
    n = len(rcv.records)
    forward(url, "--cursor-file", cur)
    check(len(rcv.records) == n, "the cursor moved past what was taken")
    # a refusal for good: exit 1, and the records are sent next time
    wait_writers(start_writers(1, 10, prefix="late"))
    rcv.refusals = [(400, None)]
    p = forward(url, "--cursor-file", cur, check_rc=False)
    check(p.returncode == 1 and b"refuses this batch" in p.stderr and
          b"HTTP 400" in p.stderr and b"busy, go away" in p.stderr,
          "HTTP 400: exit 1 (%d %r)" % (p.returncode, p.stderr))
    forward(url, "--cursor-file", cur)
    late = [lr for lr in rcv.records[n:]
            if otlp_attrs(lr["attributes"]).get("shmlog.tag") == "late0"]
    check(len(late) == 10, "after the 400, the 10 records (%d)" % len(late))
    rcv.stop()
    return rcv


def case_otlp():
    otlp_case("otlp+json", "", ("application/json", None))


def has_gzip():
    """Was this shmlog built with zlib? A build without says so when it
    reads the URL (before it looks for the buffer)."""
    p = subprocess.run([SHMLOG, "forward", "-b", BUF, "--to",
                        "otlp://127.0.0.1:1?compression=gzip", "--dump",
                        "--give-up", "0.1"], stderr=subprocess.PIPE,
                       stdout=subprocess.DEVNULL, timeout=60)
    if b"built without zlib" in p.stderr:
        check(p.returncode == 2, "without zlib, gzip: exit 2 (%d)"
              % p.returncode)
        log("NOTE: this shmlog was built without zlib: gzip not checked")
        return False
    return True


def case_otlp_proto():
    """The same in protobuf, gzipped; then plain protobuf, and JSON
    gzipped; the URL's parameter checked."""
    gz = has_gzip()
    rcv = otlp_case("otlp", "?compression=gzip" if gz else "",
                    ("application/x-protobuf", "gzip" if gz else None))
    if gz:
        log("gzip: %d bytes on the wire for %d of protobuf (%.1fx)"
            % (rcv.bytes_in, rcv.bytes_plain,
               rcv.bytes_plain / rcv.bytes_in))
        check(rcv.bytes_in * 3 < rcv.bytes_plain, "gzip compresses")
    plain = OtlpReceiver(encoding=("application/x-protobuf", None))
    forward("otlp://127.0.0.1:%d/v1/logs?compression=none" % plain.port)
    check(len(check_otlp_records(plain.records, reference())) ==
          len(reference()), "plain protobuf: every record")
    plain.stop()
    if gz:
        js = OtlpReceiver(encoding=("application/json", "gzip"))
        forward("otlp+json://127.0.0.1:%d?compression=gzip" % js.port)
        check(len(check_otlp_records(js.records, reference())) ==
              len(reference()), "JSON, gzipped: every record")
        js.stop()
    for url, what in (("otlp://127.0.0.1:1?compress=gzip",
                       b"not a parameter"),
                      ("otlp://127.0.0.1:1?compression=zstd",
                       b"?compression=gzip"),
                      ("otlp://127.0.0.1/v1/logs", b"HOST:PORT")):
        p = forward(url, check_rc=False)
        check(p.returncode == 2 and what in p.stderr,
              "bad URL %s: exit 2 (%d %r)" % (url, p.returncode, p.stderr))


class Otelcol:
    """The collector: its OTLP receiver (HTTP), its OTLP/HTTP exporter
    (JSON, no queue and no retries of its own: it answers 200 only once
    the export was taken, and passes a refusal on) into a test receiver,
    which checks the payload's structure."""

    def __init__(self):
        self.binary = otelcol_binary(SHMLOG, skip)
        self.port = free_port()
        self.sink = OtlpReceiver()
        self.conf = os.path.join(TMP, "otelcol.yaml")
        with open(self.conf, "w") as f:
            f.write(otelcol_config("127.0.0.1", self.port, self.sink.port,
                                   retries=False))
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "--config", self.conf],
            stdout=open(os.path.join(TMP, "otelcol.log"), "a"),
            stderr=subprocess.STDOUT)
        CHILDREN.append(self.proc)
        wait_listening(self.proc, "127.0.0.1", self.port, 60,
                       os.path.join(TMP, "otelcol.log"), "the collector")

    def stop(self, kill=False):
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        self.proc.wait(timeout=30)

    def records(self):
        return list(self.sink.records)


def collector_case(scheme, query, refuse):
    """A real OpenTelemetry Collector, stopped (SIGTERM) and killed
    (SIGKILL) and started again while a forwarder follows, and (@refuse)
    the collector's own destination
    answering 503 for a while, which the collector passes on: every record
    arrives with its fields, duplicates only within a batch in flight."""
    col = Otelcol()
    col.start()
    create_buffer("32M", lanes=8)
    url = "%s://127.0.0.1:%d%s" % (scheme, col.port, query)
    batch = 64
    p = start_forwarder(url, os.path.join(TMP, "cursor"), "--batch",
                        str(batch))
    writers = start_writers(2, 3000, rate=1500)
    writers += start_writers(1, 500, rate=300, prefix="pf", printf=True)
    for k in range(2):
        wait_until(lambda: len(col.records()) > 1000 * (k + 1), 60,
                   "records in the collector")
        col.stop(kill=k == 1)
        time.sleep(1)  # the outage itself, not a synchronisation
        col.start()
    if refuse:
        n = len(col.records())
        col.sink.refusals = [(503, None)] * 30
        check(wait_until(lambda: not col.sink.refusals, 60,
                         "30 refusals passed on"), "the refusals were met")
        check(len(col.records()) == n, "nothing taken while refusing")
    wait_writers(writers)
    ref = reference()

    def arrived():  # distinct records: duplicates do not count
        keys = set()
        for lr in col.records():
            a = otlp_attrs(lr["attributes"])
            keys.add((a.get("shmlog.lane"), a.get("shmlog.seq")))
        return len(set(ref) - keys) == 0
    wait_until(arrived, 90, "every record in the collector")
    err = stop_forwarder(p)
    col.stop()
    got = check_otlp_records(col.records(), ref)
    missing = set(ref) - set(got)
    dups = sum(v - 1 for v in got.values())
    log("collector: %d records, %d missing, %d duplicates; %s"
        % (len(ref), len(missing), dups, err.strip().splitlines()[-1]))
    check(not missing, "nothing lost across two collector restarts")
    check(dups <= 2 * batch, "duplicates within a batch per restart")
    check(not re.search(r" 0 reconnects", err), "it reconnected")
    if refuse:
        check("HTTP 503" in err, "the collector passed the 503 on: %s"
              % err[-500:])


def case_otlp_collector():
    collector_case("otlp+json", "", False)


def case_otlp_collector_proto():
    """Protobuf, gzipped, into the collector, which decodes it with the
    code generated from the official .proto files: the independent check
    of the forwarder's encoding."""
    gz = has_gzip()
    collector_case("otlp", "?compression=gzip" if gz else "", True)


def case_bad_input():
    """Malformed URLs, an unreachable port, damaged and foreign cursors, a
    cursor from before a clear: clear messages, defined resume points."""
    create_buffer()
    for url in ["nope://x", "syslog+tcp://127.0.0.1", "syslog+tcp://:1",
                "syslog+tcp://h:99999", "relp://[::1", "syslog+unix://rel",
                "syslog+tcp://127.0.0.1:x"]:
        p = forward(url, check_rc=False)
        check(p.returncode == 2 and b"forward" in p.stderr,
              "bad URL %s: exit 2 with a message (%d %r)"
              % (url, p.returncode, p.stderr))
    p = subprocess.run([SHMLOG, "forward", "-b", BUF], stderr=subprocess.PIPE)
    check(p.returncode == 2 and b"--to" in p.stderr, "no --to")
    p = forward("jsonl:/dev/null", "-b", "/dev/shm/shmlog." + BUF,
                check_rc=False)
    check(p.returncode == 2 and b"given twice" in p.stderr,
          "the same buffer twice: %r" % p.stderr)
    for opt in (["--batch", "0"], ["--timeout", "x"], ["--linger", "-1"],
                ["--facility", "24"], ["--cursor-file", TMP]):
        p = forward("jsonl:/dev/null", *opt, check_rc=False)
        check(p.returncode in (1, 2) and p.stderr, "bad %s: %r"
              % (opt, p.stderr))
    # unreachable: retries, says why, stops cleanly on SIGTERM
    wait_writers(start_writers(1, 10))
    cur = os.path.join(TMP, "cursor")
    p = start_forwarder("syslog+tcp://127.0.0.1:%d" % free_port(), cur)
    line = p.stderr.readline().decode()
    check("cannot connect" in line and "retrying" in line,
          "unreachable: %r" % line)
    stop_forwarder(p)
    # --dump gives up after --give-up seconds without a delivery: exit 1
    for url in ("syslog+tcp://127.0.0.1:%d" % free_port(),
                "relp://127.0.0.1:%d" % free_port(),
                "otlp://127.0.0.1:%d" % free_port()):
        t0 = time.monotonic()
        p = forward(url, "--cursor-file", cur, "--give-up", "1.5",
                    check_rc=False, timeout=60)
        took = time.monotonic() - t0
        check(p.returncode == 1 and b"giving up" in p.stderr
              and b"--give-up" in p.stderr,
              "--dump, unreachable: gives up, exit 1 (%d %r)"
              % (p.returncode, p.stderr[-300:]))
        # bounded: the backoff wakes up to give up on time (1.5 s; the
        # margin is for a busy machine, not a measurement)
        check(took < 1.5 + 20, "gave up in %.1f s" % took)
    out = os.path.join(TMP, "out.jsonl")

    def count():
        with open(out, "rb") as f:
            return len(f.readlines())
    # nothing was delivered: the cursor sends everything next time
    forward("jsonl:" + out, "--cursor-file", cur)
    check(count() == 10, "after an unreachable sink, all 10 records")
    # damaged cursor: kept aside, start at the oldest record
    with open(cur, "r+b") as f:
        f.seek(30)
        f.write(b"X")
    p = forward("jsonl:" + out, "--cursor-file", cur)
    check(b"damaged" in p.stderr and os.path.exists(cur + ".corrupt"),
          "damaged cursor: %r" % p.stderr)
    check(count() == 20, "damaged cursor: resume at the oldest record")
    with open(cur, "wb") as f:
        f.write(b"\x00garbage")
    p = forward("jsonl:" + out, "--cursor-file", cur)
    check(b"damaged" in p.stderr and count() == 30, "garbage cursor")
    # from another buffer of the same name
    forward("jsonl:" + out, "--cursor-file", cur)
    check(count() == 30, "up to date: nothing sent")
    subprocess.run([SHMLOG, "rm", "-b", BUF], check=True)
    create_buffer()
    wait_writers(start_writers(1, 5))
    p = forward("jsonl:" + out, "--cursor-file", cur)
    check(b"another buffer" in p.stderr and count() == 35,
          "foreign cursor: %r" % p.stderr)
    # from before a clear: records hidden by the clear are not losses
    wait_writers(start_writers(1, 5, prefix="x"))
    subprocess.run([SHMLOG, "clear", "-b", BUF], check=True)
    wait_writers(start_writers(1, 7, prefix="y"))
    p = forward("jsonl:" + out, "--cursor-file", cur)
    st = p.stderr.decode()
    # the reader hides all 10 records written before the clear (5 of them
    # delivered before): none of them is sent, none is counted as lost
    check(count() == 42 and " 0 lost" in st and "10 hidden by a clear" in st,
          "cursor from before a clear: %s" % st)
    # a reader of stdout that stops reading: SIGTERM still ends it at once
    import fcntl
    import termios
    wait_writers(start_writers(1, 3000, prefix="stuck"))
    p = subprocess.Popen([SHMLOG, "forward", "-b", BUF, "--to", "jsonl:"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    CHILDREN.append(p)

    def pipe_full():
        n = bytearray(4)
        fcntl.ioctl(p.stdout.fileno(), termios.FIONREAD, n)
        return int.from_bytes(n, "little") >= 60000
    check(wait_until(pipe_full, 20, "a full pipe"), "the pipe fills")
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    check(p.returncode == 0 and time.monotonic() - t0 < 15,
          "stuck stdout: exit %s after %.1f s" % (p.returncode,
                                                   time.monotonic() - t0))
    p.stdout.close()
    p.stderr.close()
    # hostile cursor files: random damage never crashes a reader of them
    with open(cur, "rb") as f:
        good = f.read()
    rng = random.Random(int(os.environ.get("SHMLOG_TEST_SEED", "1")))
    crashes = 0
    for i in range(150):
        data = bytearray(good)
        for _ in range(rng.randint(1, 8)):
            op = rng.randint(0, 3)
            pos = rng.randrange(len(data)) if data else 0
            if op == 0 and data:
                data[pos] = rng.randrange(256)
            elif op == 1:
                data[pos:pos] = rng.choice([b"\n", b" ", b"9" * 30, b"-1",
                                            b"buffer ", b"\x00"])
            elif op == 2 and data:
                del data[pos:pos + rng.randint(1, 20)]
            else:
                data = data[:pos]
        if i % 2:  # half of them with a valid checksum: the parser sees it
            body = bytes(data).rsplit(b"checksum ", 1)[0]
            h = 0xcbf29ce484222325
            for c in body:
                h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
            data = body + b"checksum %016x\n" % h
        bad_cur = os.path.join(TMP, "fuzz-cursor")
        with open(bad_cur, "wb") as f:
            f.write(bytes(data))
        p = subprocess.run([SHMLOG, "cat", "-b", BUF, "--after-cursor",
                            bad_cur], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=30)
        crashes += p.returncode not in (0, 1)
    check(crashes == 0, "damaged cursor files: %d crashes" % crashes)
    # a cursor file that cannot be written
    p = forward("jsonl:" + out, "--cursor-file", "/proc/nope/cursor",
                check_rc=False)
    check(p.returncode in (0, 1), "unwritable cursor: no crash (%d)"
          % p.returncode)


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def rewrite_cursor(path, shift):
    """Move every lane of a cursor file @shift records on, checksum and
    all, as if it had been taken from a buffer further along."""
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    body = []
    for line in lines[:-1]:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            line = b"%s %d\n" % (parts[0], int(parts[1]) + shift)
        body.append(line)
    text = b"".join(body)
    with open(path, "wb") as f:
        f.write(text + b"checksum %016x\n" % fnv1a(text))


def cat_follow_losses(view):
    """`shmlog cat -f` stopped (SIGSTOP) while a flood overwrites the
    ring, then continued: its loss lines and the records around them."""
    p = subprocess.Popen([SHMLOG, "cat", "-b", BUF, "-f", "-v", view],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    CHILDREN.append(p)
    os.set_blocking(p.stdout.fileno(), False)
    got = []

    def read_until(text):
        end = time.monotonic() + 30
        buf = b""
        while time.monotonic() < end:
            chunk = p.stdout.read()
            if chunk:
                buf += chunk
                if text in buf:
                    got.extend(buf.decode("utf-8", "replace").splitlines())
                    return True
            else:
                time.sleep(0.02)
        got.extend(buf.decode("utf-8", "replace").splitlines())
        return False
    wait_writers(start_writers(1, 10, prefix="before"))
    check(read_until(b"rec 9 "), "%s: cat -f shows the first records" % view)
    p.send_signal(signal.SIGSTOP)
    wait_until(lambda: open("/proc/%d/stat" % p.pid).read().split(") ")[1]
               .startswith("T"), 10, "cat stopped")
    wait_writers(start_writers(1, 4000, prefix="flood"))
    p.send_signal(signal.SIGCONT)
    wait_writers(start_writers(1, 1, prefix="end"))
    check(read_until(b"end0"), "%s: cat -f goes on after the flood" % view)
    p.terminate()
    p.wait(timeout=30)
    return got


def case_cursors():
    """Cursor files: a FIFO, a device, a link refused at once; a cursor
    ahead of its buffer said and read from the oldest record; loss lines
    of `shmlog cat` carrying their range of sequence numbers; after
    SIGKILLs, every record delivered or inside a loss range, the count
    over by no more than the batches in flight."""
    create_buffer("64K", lanes=1)
    wait_writers(start_writers(1, 20))
    out = os.path.join(TMP, "out.jsonl")
    fifo = os.path.join(TMP, "fifo")
    os.mkfifo(fifo)
    link = os.path.join(TMP, "link")
    os.symlink(os.path.join(TMP, "cursor-real"), link)
    for path, what in ((fifo, "a FIFO"), ("/dev/zero", "a device"),
                       (TMP, "a directory"), (link, "a symbolic link")):
        for cmd in (["forward", "-b", BUF, "--to", "jsonl:" + out, "--dump",
                     "--cursor-file", path],
                    ["cat", "-b", BUF, "--after-cursor", path],
                    ["cat", "-b", BUF, "--cursor-file", path]):
            try:
                p = subprocess.run([SHMLOG] + cmd, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=20)
            except subprocess.TimeoutExpired:
                check(False, "%s: %s hangs" % (cmd[0], what))
                continue
            err = p.stderr.decode()
            check(p.returncode == 1 and "cannot use cursor file" in err and
                  what in err and not p.stdout,
                  "%s %s: refused, nothing shown (%d): %s"
                  % (cmd[0], what, p.returncode, err))
    check(not os.path.exists(out) or os.path.getsize(out) == 0,
          "nothing forwarded with a refused cursor")

    # a cursor ahead of the buffer: said, and read from the oldest record
    cur = os.path.join(TMP, "cursor")
    forward("jsonl:" + out, "--cursor-file", cur)
    rewrite_cursor(cur, 1000)
    p = forward("jsonl:" + out, "--cursor-file", cur)
    err = p.stderr.decode()
    check("is ahead of" in err and "resumes at seq 1020" in err and
          "next record will be seq 20" in err,
          "forward: a cursor ahead is said: %s" % err)
    with open(out, "rb") as f:
        recs = [json.loads(l) for l in f]
    check(len(recs) == 40 and [r["seq"] for r in recs[20:]] == list(range(20)),
          "forward: from the oldest record again (%d records)" % len(recs))
    rewrite_cursor(cur, 1000)
    p = subprocess.run([SHMLOG, "cat", "-b", BUF, "--after-cursor", cur, "-v",
                        "raw"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(b"is ahead of" in p.stderr and len(p.stdout.splitlines()) == 20,
          "cat --after-cursor: a cursor ahead is said, all shown: %r"
          % p.stderr)

    # loss lines with their range, json and text
    lines = cat_follow_losses("json")
    prev, after, losses = None, None, []
    for line in lines:
        r = json.loads(line)
        if "lost" in r:
            losses.append((r, prev))
            after = None
            continue
        if losses and after is None:
            after = r["seq"]
            r0, p0 = losses[-1]
            check(r0["first_seq"] == p0 + 1 and r0["last_seq"] == after - 1
                  and r0["last_seq"] - r0["first_seq"] + 1 == r0["lost"],
                  "json loss %s between seq %d and %d" % (r0, p0, after))
        prev = r["seq"]
    check(len(losses) >= 1, "the flood made a loss (test premise)")
    lines = cat_follow_losses("brief")
    m = [re.match(r"^--- (\d+) records lost \(lane 0: (\d+) overwritten; "
                  r"seq (\d+)-(\d+)\) ---$", l) for l in lines]
    m = [x for x in m if x]
    check(m and all(int(x.group(1)) == int(x.group(4)) - int(x.group(3)) + 1
                    for x in m),
          "text loss lines carry the range: %s" % [l for l in lines
                                                   if "lost" in l])

    # SIGKILL at random points, the ring overwriting meanwhile: every
    # record is delivered or inside a loss range. A loss reported again
    # after a restart carries an overlapping range: merged (their union),
    # the ranges hold exactly the missing records, and besides them only
    # records delivered but not yet saved in the cursor when a kill came
    # (at most a batch a kill): the upper bound docs/forwarding.md states
    seed = int(os.environ.get("SHMLOG_TEST_SEED", time.time()))
    rng = random.Random(seed)
    log("seed", seed)
    subprocess.run([SHMLOG, "rm", "-b", BUF], check=True)
    create_buffer("64K", lanes=1)
    out = os.path.join(TMP, "kill.jsonl")
    cur = os.path.join(TMP, "kill-cursor")
    batch = 16
    writers = start_writers(1, 20000, rate=20000)
    kills = 0
    while writers[0].poll() is None and kills < 15:
        p = subprocess.Popen([SHMLOG, "forward", "-b", BUF, "--to",
                              "jsonl:" + out, "--cursor-file", cur,
                              "--batch", str(batch)],
                             stderr=subprocess.DEVNULL)
        CHILDREN.append(p)
        time.sleep(rng.uniform(0.02, 0.2))  # a random point, not a sync
        p.kill()
        p.wait()
        kills += 1
        time.sleep(rng.uniform(0, 0.05))  # away: the ring overwrites
    wait_writers(writers)
    forward("jsonl:" + out, "--cursor-file", cur, "--batch", str(batch))
    seqs, ranges = set(), {}
    torn = 0
    with open(out, "rb") as f:
        for line in f:
            # a forwarder killed mid-write leaves a torn line, ended by
            # the next one; its records come again whole after it
            try:
                r = json.loads(line)
            except ValueError:
                torn += 1
                continue
            if "lost" in r:
                ranges[(r["first_seq"], r["last_seq"])] = r["lost"]
            else:
                seqs.add(r["seq"])
    top = max(seqs)
    missing = {q for q in range(top + 1) if q not in seqs}
    union = set()
    for a, b in ranges:
        union.update(range(a, b + 1))
    over = union & seqs
    log("%d kills: %d missing, %d in the union of %d loss ranges (%d "
        "delivered), counts summing to %d"
        % (kills, len(missing), len(union), len(ranges), len(over),
           sum(ranges.values())))
    check(kills > 0 and missing, "the test premise: kills, overwrites")
    check(missing <= union, "no silent loss: %s"
          % sorted(missing - union)[:10])
    check(len(over) <= kills * batch,
          "ranges over by at most a batch a kill: %d delivered in them, "
          "%d kills" % (len(over), kills))
    # every range says its own size: the count in it never exceeds it
    check(all(n <= b - a + 1 for (a, b), n in ranges.items()),
          "counts within their ranges")


# ---------------------------------------------------------------- archives

def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff


def set_archive_host(path, host):
    """Rewrite the host in archive file @path's header (bytes 32..95,
    NUL-padded), and its CRC32C (of bytes 0..123, at 124), as if an
    archiver on @host had made it."""
    with open(path, "r+b") as f:
        h = bytearray(f.read(128))
        h[32:96] = host.encode().ljust(64, b"\0")
        h[124:128] = crc32c(bytes(h[:124])).to_bytes(4, "little")
        f.seek(0)
        f.write(h)


def archive(d, *extra):
    subprocess.run([SHMLOG, "archive", "-b", BUF, "-o", d, "--once", "-q"]
                   + list(extra), check=True)


def archive_events(d):
    """What `shmlog cat --archive D -v json` shows: records and losses, in
    the archive's order."""
    out = subprocess.run([SHMLOG, "cat", "--archive", d, "-v", "json"],
                         check=True, stdout=subprocess.PIPE).stdout
    return [json.loads(l.decode("utf-8", "surrogateescape"))
            for l in out.splitlines()]


def jsonl_events(path):
    with open(path, "rb") as f:
        return [json.loads(l.decode("utf-8", "surrogateescape"))
                for l in f.read().splitlines()]


def replay(d, url, *args, timeout=300):
    p = subprocess.run([SHMLOG, "forward", "--archive", d, "--to", url,
                        "--dump"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    check(p.returncode == 0, "forward --archive %s exit %d: %s" %
          (url, p.returncode, p.stderr.decode()))
    return p


def index_of(msg):
    return int(re.match(rb"rec (\d+) ", msg).group(1))


def check_writer_order(pairs, what):
    """(tag, message index) in arrival order: each writer's records come
    in the order it wrote them."""
    last = {}
    bad = 0
    for tag, i in pairs:
        bad += i <= last.get(tag, -1)
        last[tag] = i
    check(bad == 0, "%s: each writer's records in order (%d out of order)"
          % (what, bad))


def case_archive():
    """300,000 archived records replayed to a JSON lines file and over
    RELP into rsyslogd: every record once, in order, as archived."""
    rs = Rsyslog(relp=True, ordered=True)
    rs.start()
    create_buffer("64M", lanes=4)
    wait_writers(start_writers(2, 150000), limit=120)
    d = os.path.join(TMP, "arc")
    archive(d)
    ref = [e for e in archive_events(d) if "lost" not in e]
    check(len(ref) == 300000, "the archive holds 300,000 records (%d)"
          % len(ref))
    out = os.path.join(TMP, "replay.jsonl")
    replay(d, "jsonl:" + out)
    got = jsonl_events(out)
    key = lambda e: (e["lane"], e["seq"], e["tag"], e["msg"], e["time_ns"],
                     e["pid"], e["tid"], e["prio"])
    check(len(got) == len(ref), "jsonl: %d lines for %d records"
          % (len(got), len(ref)))
    check([key(e) for e in got] == [key(e) for e in ref],
          "jsonl: the archive's records, once each, in its order")
    check(all(e["buffer"] == BUF for e in got),
          "jsonl: the buffer named as -b names it")
    url = "relp://127.0.0.1:%d" % rs.relp
    replay(d, url, "--batch", "1000")
    check(rs.wait_lines(len(ref), limit=240), "rsyslogd: every record")
    lines = rs.lines()
    byref = {(e["lane"], e["seq"]): e for e in ref}
    seen = {}
    for line in lines:
        k = check_syslog_line(line, byref)
        seen[k] = seen.get(k, 0) + 1
        if len(FAILS) > 20:
            break
    check(set(seen) == set(byref) and all(v == 1 for v in seen.values()),
          "rsyslogd: each record once (%d distinct of %d lines)"
          % (len(seen), len(lines)))
    check_writer_order(((l["app"], index_of(l["msg"].encode(
        "utf-8", "surrogateescape"))) for l in lines), "rsyslogd")
    rs.stop()


def case_archive_resume():
    """RELP: the replay of an archive SIGKILLed at random points and
    restarted with its cursor: no record missing, duplicates only from
    the batch in flight at each kill."""
    seed = int(os.environ.get("SHMLOG_TEST_SEED", time.time()))
    rng = random.Random(seed)
    log("seed", seed)
    rs = Rsyslog(relp=True)
    rs.start()
    create_buffer("64M", lanes=4)
    wait_writers(start_writers(2, 150000), limit=120)
    d = os.path.join(TMP, "arc")
    archive(d)
    url = "relp://127.0.0.1:%d" % rs.relp
    cur = os.path.join(TMP, "cursor")
    batch = 256
    kills = 0
    while kills < 8:
        p = subprocess.Popen([SHMLOG, "forward", "--archive", d, "--to", url,
                              "--cursor-file", cur, "--batch", str(batch),
                              "--max-backoff", "0.5"],
                             stderr=subprocess.DEVNULL)
        CHILDREN.append(p)
        # a random point of the replay, not a synchronisation
        time.sleep(rng.uniform(0.05, 0.5))
        p.kill()
        p.wait()
        kills += 1
    mid = len(rs.lines())
    log("after %d kills rsyslogd has %d records" % (kills, mid))
    replay(d, url, "--cursor-file", cur, "--batch", str(batch))
    check(rs.wait_lines(300000, limit=240), "every record arrives")
    # rsyslogd writes what it took in its own time: poll, bounded
    wait_until(lambda: len(relp_keys(rs)[0]) >= 300000, 60, "rsyslogd")
    got, lost = relp_keys(rs)
    dups = sum(v - 1 for v in got.values())
    log("%d kills: %d distinct, %d duplicates" % (kills, len(got), dups))
    check(len(got) == 300000, "no record missing (%d of 300000)"
          % len(got))
    check(0 < mid < 300000, "the test premise: killed mid-replay (%d)" % mid)
    check(dups <= kills * batch, "duplicates only from the batch in flight: "
          "%d after %d kills of batches of %d" % (dups, kills, batch))
    check(not lost, "no loss reported: %s" % lost)
    # a clean restart with the cursor sends nothing again
    n = len(rs.lines())
    replay(d, url, "--cursor-file", cur)
    check(len(rs.lines()) == n, "nothing sent again after the last replay")
    rs.stop()


def case_archive_follow():
    """An archive that starts with a loss (the ring overwrote records
    before the archiver came), replayed with -f into the live buffer and
    on: every record once, losses as the archive says them, no gap and
    no duplicate at the seam; SIGTERM and a restart with the cursor go
    on from there."""
    create_buffer("1M", lanes=2)
    wait_writers(start_writers(1, 20000))  # the ring keeps a part
    d = os.path.join(TMP, "arc")
    archive(d)
    arc = archive_events(d)
    losses = [e for e in arc if "lost" in e]
    check(losses, "the test premise: the archive starts with a loss")
    wait_writers(start_writers(1, 300, prefix="live"))  # not archived
    out = os.path.join(TMP, "out.jsonl")
    cur = os.path.join(TMP, "cursor")

    def start():
        p = subprocess.Popen([SHMLOG, "forward", "--archive", d, "-f", "-b",
                              BUF, "--to", "jsonl:" + out, "--cursor-file",
                              cur], stderr=subprocess.PIPE)
        CHILDREN.append(p)
        return p

    def records():
        try:
            return [e for e in jsonl_events(out) if "lost" not in e]
        except (FileNotFoundError, ValueError):
            return []
    total = 20300
    p = start()
    want = total - sum(e["lost"] for e in losses)
    check(wait_until(lambda: len(records()) >= want, 60, "the replay and "
                     "the live records"), "replay, then the buffer")
    wait_writers(start_writers(1, 200, prefix="later"))
    check(wait_until(lambda: len(records()) >= want + 200, 60,
                     "records written while following"), "following")
    stop_forwarder(p)
    wait_writers(start_writers(1, 100, prefix="after"))
    p = start()
    check(wait_until(lambda: len(records()) >= want + 300, 60,
                     "records after a restart"), "after a restart")
    stop_forwarder(p)
    events = jsonl_events(out)
    got = [(e["lane"], e["seq"]) for e in events if "lost" not in e]
    check(len(got) == len(set(got)), "each record once (%d, %d distinct)"
          % (len(got), len(set(got))))
    fwd_losses = [(e["lane"], e["first_seq"], e["last_seq"], e["lost"])
                  for e in events if "lost" in e]
    check(fwd_losses == [(e["lane"], e["first_seq"], e["last_seq"],
                          e["lost"]) for e in losses],
          "the archive's losses forwarded as they are: %s" % fwd_losses)
    covered = set(got)
    for lane, a, b, _ in fwd_losses:
        covered.update((lane, q) for q in range(a, b + 1))
    check(len(covered) == total + 300,
          "records + losses = written (%d of %d)" % (len(covered),
                                                      total + 300))
    check_writer_order(((e["tag"], index_of(e["msg"].encode(
        "utf-8", "surrogateescape"))) for e in events if "lost" not in e),
        "jsonl")
    check([e["seq"] for e in events if "lost" not in e and
           e["tag"] == "w0"][-1] < [e["seq"] for e in events
                                    if e.get("tag") == "live0"][0],
          "the archive, then the buffer")


def case_archive_multi():
    """An archive of two buffers, one of them removed and created again:
    the replay sends each record under its buffer's name, once; with the
    cursor a later replay sends only what was archived since."""
    other = BUF + "-2"
    d = os.path.join(TMP, "arc")
    out = os.path.join(TMP, "out.jsonl")
    cur = os.path.join(TMP, "cursor")

    def run_writer(buf, tag, n):
        p = subprocess.run([WRITER, buf, tag, str(n), "0"])
        check(p.returncode == 0, "writer %s exit %d" % (tag, p.returncode))

    def archive_both():
        subprocess.run([SHMLOG, "archive", "-b", BUF, "-b", other, "-o", d,
                        "--once", "-q", "--max-file-size", "64K"], check=True)
    try:
        create_buffer("4M", lanes=2)
        subprocess.run([SHMLOG, "create", "-b", other, "--size", "4M",
                        "--lanes", "2"], check=True, stdout=subprocess.DEVNULL)
        run_writer(BUF, "one", 3000)
        run_writer(other, "two", 2000)
        archive_both()
        replay(d, "jsonl:" + out, "--cursor-file", cur, "--batch", "7")
        # the second buffer removed and created again, then both written
        subprocess.run([SHMLOG, "rm", "-b", other], check=True)
        subprocess.run([SHMLOG, "create", "-b", other, "--size", "4M",
                        "--lanes", "2"], check=True, stdout=subprocess.DEVNULL)
        run_writer(BUF, "one-later", 500)
        run_writer(other, "two-again", 400)
        archive_both()
        replay(d, "jsonl:" + out, "--cursor-file", cur, "--batch", "7")
    finally:
        subprocess.run([SHMLOG, "rm", "-b", other], stderr=subprocess.DEVNULL)
    got = jsonl_events(out)
    check(not any("lost" in e for e in got), "no loss where none was")
    count = {}
    for e in got:
        k = (e["buffer"], e["tag"])
        count[k] = count.get(k, 0) + 1
    want = {(BUF, "one"): 3000, (other, "two"): 2000,
            (BUF, "one-later"): 500, (other, "two-again"): 400}
    check(count == want, "each record once, under its buffer: %s" % count)
    keys = [(e["buffer"], e["tag"], e["lane"], e["seq"]) for e in got]
    check(len(keys) == len(set(keys)), "nothing twice")
    check_writer_order(((e["buffer"] + "/" + e["tag"], index_of(e["msg"].encode(
        "utf-8", "surrogateescape"))) for e in got), "jsonl")
    check(all(e["host"] == socket.gethostname() for e in got),
          "archived here: the records carry this host")
    archive_hosts(d, want)


def archive_hosts(d, want):
    """The archive's files rewritten as if archived on two other hosts,
    one file of each in turn (the second's name with a space, which a
    syslog HOSTNAME cannot carry): a replay sends each record and loss as
    of its file's host, in JSON lines and in OTLP's host.name, an OTLP
    request per host."""
    files = sorted(f for f in os.listdir(d) if f.endswith(".arc"))
    check(len(files) >= 2, "the test premise: several files (%d)"
          % len(files))
    hosts = ["arc-host-one", "arc host two"]
    sent_as = {"arc-host-one": "arc-host-one", "arc host two": "arc_host_two"}
    host_of = {}  # (tag, message) -> the host its file names
    for i, name in enumerate(files):
        set_archive_host(os.path.join(d, name), hosts[i % 2])
        alone = os.path.join(TMP, "alone%d" % i)
        os.mkdir(alone)
        shutil.copy(os.path.join(d, name), alone)
        for e in archive_events(alone):
            if "lost" not in e:
                host_of[(e["tag"], e["msg"])] = sent_as[hosts[i % 2]]
    check(len(host_of) == sum(want.values()),
          "the files hold every record once (%d)" % len(host_of))
    out = os.path.join(TMP, "hosts.jsonl")
    replay(d, "jsonl:" + out, "--batch", "7")
    got = jsonl_events(out)
    check(len(got) == len(host_of), "jsonl: every record (%d of %d)"
          % (len(got), len(host_of)))
    bad = [e for e in got if "lost" not in e and
           e["host"] != host_of.get((e["tag"], e["msg"]))]
    check(not bad, "jsonl: each record as of its file's host (%d not: %s)"
          % (len(bad), bad[:2]))
    for scheme in ("otlp", "otlp+json"):
        rcv = OtlpReceiver()
        replay(d, "%s://127.0.0.1:%d" % (scheme, rcv.port), "--batch", "7")
        rcv.stop()
        n, bad = 0, 0
        for res, recs in rcv.requests:
            host = otlp_attrs(res["attributes"])["host.name"]
            for lr in recs:
                a = otlp_attrs(lr["attributes"])
                n += 1
                bad += host != host_of.get((a["shmlog.tag"],
                                            lr["body"]["stringValue"]))
        check(n == len(host_of) and not bad,
              "%s: every record (%d of %d) in a request of its file's "
              "host (%d not)" % (scheme, n, len(host_of), bad))
        check(len({otlp_attrs(r["attributes"])["host.name"]
                   for r, _ in rcv.requests}) == 2,
              "%s: requests of both hosts" % scheme)


CASES = {"syslog": case_syslog, "jsonl": case_jsonl, "journal": case_journal,
         "multi": case_multi,
         "resume": case_resume, "losses": case_losses,
         "resume_losses": case_resume_losses,
         "receiver_restart": case_receiver_restart,
         "tcp_restart": case_tcp_restart, "otlp": case_otlp,
         "otlp_collector": case_otlp_collector,
         "otlp_proto": case_otlp_proto,
         "otlp_collector_proto": case_otlp_collector_proto,
         "bad_input": case_bad_input, "cursors": case_cursors,
         "archive": case_archive, "archive_resume": case_archive_resume,
         "archive_follow": case_archive_follow,
         "archive_multi": case_archive_multi}

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *a: (cleanup(), sys.exit(1)))
    try:
        CASES[CASE]()
    except SystemExit:
        raise
    except Exception as e:  # a crash of the test is a failure, cleaned up
        import traceback
        traceback.print_exc()
        FAILS.append(repr(e))
    finish()
