#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A simulated fleet: eight hosts shipping to one collector.

usage: test_fleet.py SHMLOG FWD_WRITER relp|otlp

Each host is a network namespace with its own UTS namespace (its own host
name, fleet-h0 .. fleet-h7), joined to the root namespace by a veth pair on
a private bridge: a /24 of 10.x.y.0 that no route of the machine covers,
no default route in the hosts, no forwarding, so nothing leaves the
machine. Each host has its own buffer (a file in its own directory), its
writers (a steady few records/s, a busier one at 40-320 records/s, bursts
flat out) and a `shmlog forward` with a cursor file to one collector in the
root namespace, bound to the bridge's address: rsyslogd over RELP (relp),
or an OpenTelemetry Collector over OTLP/HTTP JSON (otlp), exporting to a
receiver in this script.

The collector is killed (SIGKILL) and started again twice, while some
hosts write bursts that overrun their rings. Per host, identified by the
host name the collector received (syslog HOSTNAME, OTLP host.name), and
per record by its lane and sequence number (the writer's tag and index in
the message must agree with them):

  delivered (distinct) + lost (the union of the loss messages' ranges)
      = written (the writers' counts; the lanes' WRITTEN in `shmlog info`)

with no record both delivered and counted lost, at most a batch of
duplicates per collector kill, and the forwarder's own status line
counting the same losses. It prints what the collector took: records/s
(the whole run and a flood by all hosts at once), CPU of the collector and
of the forwarders.

Root, ip(8), unshare(1) and the kernel's veth and bridge are needed; else
it exits 77 saying which. Namespaces, links and processes are removed on
any exit, SIGINT and SIGTERM included. Killed with SIGKILL, it takes its
processes along (a parent death signal); the namespaces, links and files
it leaves are removed by the next run.
"""
import ipaddress
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from fwd_helpers import (FAILS, check, free_port, log, otelcol_binary,
                         otelcol_config, otlp_attrs, sd_params,
                         wait_listening, wait_until)

SKIP = 77
SHMLOG, WRITER, KIND = sys.argv[1], sys.argv[2], sys.argv[3]
HOSTS = 8
BATCH = 512          # the forwarder's default --batch
KILLS = 2
STEADY_SECONDS = 40  # how long the steady writers run at their rates
BURST = 20000        # records a bursting host writes flat out, collector down
FLOOD = 8000         # records each host writes flat out, collector up
PREFIX = "shmlog-fleet-"
TAG = "shfl%d" % os.getpid()    # bridge; veths are TAG + "h" + N
TMP = tempfile.mkdtemp(prefix="shmlog-fleet-%d-" % os.getpid())
CHILDREN = []
CLEANED = []


def run(*cmd, check_rc=True):
    p = subprocess.run(list(cmd), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if check_rc and p.returncode:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                               p.stderr.decode().strip()))
    return p


# ---------------------------------------------------------------- network

def ns_name(h, pid=None):
    return "%s%d-h%d" % (PREFIX, pid or os.getpid(), h)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove_netns(ns):
    """Kill what still runs in @ns, then remove it (and its veth, whose
    peer goes with it)."""
    p = run("ip", "netns", "pids", ns, check_rc=False)
    for pid in p.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    run("ip", "netns", "delete", ns, check_rc=False)


def remove_stale():
    """Namespaces and links of fleet runs whose process is gone (a run
    killed by SIGKILL cannot clean up after itself)."""
    out = run("ip", "netns", "list", check_rc=False).stdout.decode()
    for ns in re.findall(r"^(%s(\d+)-h\d+)" % re.escape(PREFIX), out, re.M):
        if not pid_alive(int(ns[1])):
            remove_netns(ns[0])
    out = run("ip", "-o", "link", "show", check_rc=False).stdout.decode()
    for name, pid in re.findall(r"^\d+: (shfl(\d+)[^:@]*)", out, re.M):
        if not pid_alive(int(pid)):
            run("ip", "link", "delete", name, check_rc=False)
    tmp = tempfile.gettempdir()
    for d in os.listdir(tmp):
        m = re.match(r"shmlog-fleet-(\d+)-", d)
        if m and not pid_alive(int(m.group(1))):
            shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)


def pick_subnet():
    """A 10.x.y.0/24 that no address or route of the machine overlaps."""
    used = []
    for cmd in (["ip", "-4", "-o", "route", "show", "table", "all"],
                ["ip", "-4", "-o", "addr", "show"]):
        for m in re.finditer(r"(\d+\.\d+\.\d+\.\d+(?:/\d+)?)",
                             run(*cmd, check_rc=False).stdout.decode()):
            try:
                net = ipaddress.ip_network(m.group(1), strict=False)
            except ValueError:
                continue
            if net.prefixlen > 0:
                used.append(net)
    rng = random.Random(os.getpid())
    for _ in range(200):
        net = ipaddress.ip_network("10.%d.%d.0/24" % (rng.randint(200, 250),
                                                     rng.randint(0, 255)))
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("no free 10.x.y.0/24 for the fleet's bridge")


class Fleet:
    """The bridge in the root namespace and a namespace per host."""

    def __init__(self):
        self.net = pick_subnet()
        hosts = list(self.net.hosts())
        self.addr = str(hosts[0])               # the collector's
        self.host_addr = [str(hosts[10 + h]) for h in range(HOSTS)]
        self.bridge = TAG
        self.made = False

    def create(self):
        plen = self.net.prefixlen
        run("ip", "link", "add", self.bridge, "type", "bridge")
        self.made = True
        run("ip", "addr", "add", "%s/%d" % (self.addr, plen), "dev",
            self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for h in range(HOSTS):
            ns, veth = ns_name(h), "%sh%d" % (TAG, h)
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", veth, "type", "veth", "peer", "name",
                "eth0", "netns", ns)
            run("ip", "link", "set", veth, "master", self.bridge, "up")
            run("ip", "-n", ns, "link", "set", "lo", "up")
            run("ip", "-n", ns, "addr", "add", "%s/%d" % (self.host_addr[h],
                                                         plen), "dev", "eth0")
            run("ip", "-n", ns, "link", "set", "eth0", "up")

    def reachable(self, port):
        """Every host reaches the collector's port (the links are up)."""
        for h in range(HOSTS):
            p = run("ip", "netns", "exec", ns_name(h), sys.executable, "-c",
                    "import socket; socket.create_connection(('%s', %d), 2)"
                    ".close()" % (self.addr, port), check_rc=False)
            if p.returncode:
                return False
        return True

    def remove(self):
        for h in range(HOSTS):
            remove_netns(ns_name(h))
        if self.made:
            run("ip", "link", "delete", self.bridge, check_rc=False)


FLEET = None


def orphan_proof(cmd):
    """@cmd killed when this script dies, even by SIGKILL (the parent
    death signal survives the execs that follow)."""
    return ["setpriv", "--pdeathsig", "KILL", "--"] + cmd


def in_host(h, cmd, hostname=False):
    """@cmd run in host @h's network namespace; with @hostname in a UTS
    namespace of its own named fleet-hH (what gethostname() returns: the
    forwarder's host field). Each exec replaces the last: the pid is the
    command's."""
    pre = orphan_proof(["ip", "netns", "exec", ns_name(h)])
    if hostname:
        pre += ["unshare", "--uts", "sh", "-c",
                'echo "$0" >/proc/sys/kernel/hostname && exec "$@"',
                "fleet-h%d" % h]
    return pre + cmd


# ---------------------------------------------------------------- cleanup

def cleanup():
    if CLEANED:
        return
    CLEANED.append(1)
    for p in CHILDREN:
        if p.poll() is None:
            p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    if FLEET:
        FLEET.remove()
    shutil.rmtree(TMP, ignore_errors=True)


def skip(why):
    log("SKIP:", why)
    cleanup()
    sys.exit(SKIP)


def on_signal(sig, frame):
    log("stopped by signal %d: cleaning up" % sig)
    cleanup()
    sys.exit(1)


def cpu_seconds(pid):
    """User + system CPU time of a live process, in seconds."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- collectors

class Collector:
    """Common part: start, kill, CPU; records parsed incrementally as
    (host, lane, seq, tag, index, buffer) and losses as
    (host, lane, first, last, count)."""

    name = "?"

    def __init__(self):
        self.proc = None
        self.cpu = 0.0       # of the instances killed or stopped
        self.log = os.path.join(TMP, "collector.log")

    def argv(self):
        raise NotImplementedError

    def start(self):
        self.proc = subprocess.Popen(orphan_proof(self.argv()),
                                     stdout=open(self.log, "a"),
                                     stderr=subprocess.STDOUT)
        CHILDREN.append(self.proc)
        wait_listening(self.proc, FLEET.addr, self.port, 90, self.log,
                       "the collector")

    def cpu_now(self):
        return self.cpu + (cpu_seconds(self.proc.pid)
                           if self.proc and self.proc.poll() is None else 0)

    def kill(self):
        self.cpu += cpu_seconds(self.proc.pid)
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self):
        self.cpu += cpu_seconds(self.proc.pid)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class RelpCollector(Collector):
    """rsyslogd with imrelp on the bridge, writing JSON lines with the
    HOSTNAME. The main queue is Direct: a record is in the file before
    imrelp acknowledges it, so a SIGKILL loses nothing acknowledged (with
    rsyslog's default in-memory queue it would lose what the queue held,
    beyond anything a sender can count)."""

    name = "rsyslogd (imrelp)"

    def __init__(self):
        super().__init__()
        if not shutil.which("rsyslogd"):
            skip("rsyslogd not installed (Debian package rsyslog)")
        if not any(os.path.exists(os.path.join(d, "imrelp.so")) for d in
                   ("/usr/lib/x86_64-linux-gnu/rsyslog", "/usr/lib/rsyslog",
                    "/usr/lib/aarch64-linux-gnu/rsyslog")):
            skip("rsyslog's imrelp not installed (Debian package "
                 "rsyslog-relp)")
        self.dir = os.path.join(TMP, "rsyslog")
        os.makedirs(self.dir)
        self.port = free_port(FLEET.addr)
        self.out = os.path.join(self.dir, "out")
        self.offset = 0
        self.conf = os.path.join(self.dir, "rsyslog.conf")
        with open(self.conf, "w") as f:
            f.write("""
global(workDirectory="{d}" maxMessageSize="64k"
       parser.escapeControlCharactersOnReceive="off")
main_queue(queue.type="Direct")
module(load="imrelp")
input(type="imrelp" port="{port}" address="{addr}")
template(name="j" type="list" option.jsonf="on") {{
  property(outname="host" name="hostname" format="jsonf")
  property(outname="app" name="app-name" format="jsonf")
  property(outname="sd" name="structured-data" format="jsonf")
  property(outname="msg" name="msg" format="jsonf")
}}
action(type="omfile" file="{out}" template="j")
""".format(d=self.dir, port=self.port, addr=FLEET.addr, out=self.out))

    def url(self):
        return "relp://%s:%d" % (FLEET.addr, self.port)

    def argv(self):
        return ["rsyslogd", "-n", "-f", self.conf, "-i",
                os.path.join(self.dir, "pid")]

    def take(self):
        """The records and losses written since the last call."""
        try:
            with open(self.out, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return [], []
        end = data.rfind(b"\n") + 1     # a last line may be half written
        self.offset += end
        recs, losses = [], []
        for line in data[:end].splitlines():
            if not line:
                continue
            r = json.loads(line.decode("utf-8", "surrogateescape"))
            sd = sd_params(r["sd"])
            if r["app"] == "shmlog-forward":
                losses.append((r["host"], int(sd["lane"]), int(sd["first"]),
                               int(sd["last"]),
                               int(sd["overwritten"]) + int(sd["torn"])))
                continue
            m = re.match(r"rec (\d+) ", r["msg"])
            recs.append((r["host"], int(sd["lane"]), int(sd["seq"]), r["app"],
                         int(m.group(1)) if m else -1, None))
        return recs, losses


class OtlpSink:
    """The collector's exporter target: keeps the request bodies (parsed
    later, by take()), answers 200. Threaded: the collector exports for
    several forwarders at once over keep-alive connections."""

    def __init__(self):
        import http.server
        self.bodies = []
        self.bytes = 0
        self.lock = threading.Lock()
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers["Content-Length"])
                body = self.rfile.read(n)
                if len(body) != n:
                    # The collector was killed while sending: it never
                    # saw a 200, so its forwarder sends the batch again.
                    self.close_connection = True
                    return
                with sink.lock:
                    sink.bodies.append(body)
                    sink.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a collector killed mid-request resets: expected

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def take(self):
        with self.lock:
            out, self.bodies = self.bodies, []
        return out

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class OtlpCollector(Collector):
    """The OpenTelemetry Collector built for test_forward_otlp_collector:
    its OTLP receiver (HTTP) on the bridge, its OTLP/HTTP exporter without
    a queue into OtlpSink: it answers a forwarder 200 only once the sink
    took the batch, so a SIGKILL loses nothing acknowledged."""

    name = "OpenTelemetry Collector (otlp+json)"

    def __init__(self):
        super().__init__()
        self.binary = otelcol_binary(SHMLOG, skip)
        self.port = free_port(FLEET.addr)
        self.sink = OtlpSink()
        self.conf = os.path.join(TMP, "otelcol.yaml")
        with open(self.conf, "w") as f:
            f.write(otelcol_config(FLEET.addr, self.port, self.sink.port,
                                   retries=True))

    def url(self):
        return "otlp+json://%s:%d" % (FLEET.addr, self.port)

    def argv(self):
        return [self.binary, "--config", self.conf]

    def take(self):
        recs, losses = [], []
        for body in self.sink.take():
            doc = json.loads(body)
            for rl in doc["resourceLogs"]:
                host = otlp_attrs(rl["resource"]["attributes"]).get(
                    "host.name")
                for sl in rl["scopeLogs"]:
                    for lr in sl["logRecords"]:
                        a = otlp_attrs(lr["attributes"])
                        if lr.get("eventName") == "shmlog.lost":
                            losses.append((host, a["shmlog.lane"],
                                           a["shmlog.lost.first_seq"],
                                           a["shmlog.lost.last_seq"],
                                           a["shmlog.lost"]))
                            continue
                        m = re.match(r"rec (\d+) ",
                                     lr["body"].get("stringValue", ""))
                        recs.append((host, a["shmlog.lane"], a["shmlog.seq"],
                                     a["shmlog.tag"],
                                     int(m.group(1)) if m else -1,
                                     a.get("shmlog.buffer")))
        return recs, losses

    def stop(self):
        super().stop()
        self.sink.stop()


# ---------------------------------------------------------------- hosts

class Host:
    def __init__(self, h):
        self.h = h
        self.name = "fleet-h%d" % h
        self.dir = os.path.join(TMP, self.name)
        os.makedirs(self.dir)
        self.buf = os.path.join(self.dir, "app.shmlog")
        self.cursor = os.path.join(self.dir, "app.cursor")
        self.written = {}        # writer tag -> records it writes
        self.writers = []
        self.fwd = None
        self.fwd_cpu = 0.0
        self.status = ""
        self.recs = {}           # (lane, seq) -> copies received
        self.ids = {}            # (lane, seq) -> (tag, index)
        self.idset = set()       # the (tag, index) received
        self.ranges = set()      # (lane, first, last, count)
        self.bad = []
        run(SHMLOG, "create", "-b", self.buf, "--size", "2M", "--lanes", "4",
            "--clock", "realtime")

    def write(self, tag, count, rate):
        tag = "h%d-%s" % (self.h, tag)
        self.written[tag] = count
        p = subprocess.Popen(in_host(self.h, [WRITER, self.buf, tag,
                                              str(count), str(rate)]))
        CHILDREN.append(p)
        self.writers.append(p)
        return tag

    def forward(self, url):
        self.fwd = subprocess.Popen(
            in_host(self.h, [SHMLOG, "forward", "-b", self.buf, "--to", url,
                             "--cursor-file", self.cursor, "--batch",
                             str(BATCH), "--max-backoff", "0.5",
                             "--service", "fleet"], hostname=True),
            stderr=open(os.path.join(self.dir, "forward.err"), "w"))
        CHILDREN.append(self.fwd)

    def stop_forwarder(self):
        self.fwd_cpu = cpu_seconds(self.fwd.pid)
        self.fwd.send_signal(signal.SIGTERM)
        try:
            self.fwd.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.fwd.kill()
            self.fwd.wait()
        with open(os.path.join(self.dir, "forward.err")) as f:
            self.status = f.read()
        check(self.fwd.returncode == 0, "%s: forwarder exit %s: %s"
              % (self.name, self.fwd.returncode, self.status[-500:]))

    def add(self, rec):
        _, lane, seq, tag, index, buf = rec
        key = (lane, seq)
        self.recs[key] = self.recs.get(key, 0) + 1
        ident = (tag, index)
        self.idset.add(ident)
        if self.ids.setdefault(key, ident) != ident or \
                not tag.startswith("h%d-" % self.h) or \
                (buf is not None and buf != self.buf):
            self.bad.append(rec)

    def lanes_written(self):
        """lane -> records written into it, from `shmlog info`."""
        out = run(SHMLOG, "info", "-b", self.buf).stdout.decode()
        lanes = {}
        for m in re.finditer(r"^\s+(\d+)\s+\S+\s+\d+\s+\d+\s+(\d+)\s", out,
                             re.M):
            lanes[int(m.group(1))] = int(m.group(2))
        return lanes

    def has(self, tag, index):
        return (tag, index) in self.idset


def take_all(col, hosts, by_name):
    recs, losses = col.take()
    for r in recs:
        h = by_name.get(r[0])
        if h is None:
            check(False, "a record from an unknown host %r" % (r,))
            continue
        h.add(r)
    for l in losses:
        h = by_name.get(l[0])
        if check(h is not None, "a loss from an unknown host %r" % (l,)):
            h.ranges.add(l[1:])
    return len(recs)


# ---------------------------------------------------------------- the run

def main():
    global FLEET
    if os.geteuid() != 0:
        skip("needs root (network namespaces, veth pairs)")
    for tool in ("ip", "unshare", "setpriv"):
        if not shutil.which(tool):
            skip("%s not installed (Debian package %s)"
                 % (tool, {"ip": "iproute2"}.get(tool, "util-linux")))
    remove_stale()
    FLEET = Fleet()
    try:
        FLEET.create()
    except RuntimeError as e:
        skip("cannot build the fleet's network (network namespaces, veth, "
             "bridge): %s" % e)
    col = RelpCollector() if KIND == "relp" else OtlpCollector()
    col.start()
    check(wait_until(lambda: FLEET.reachable(col.port), 30,
                     "every host to reach the collector"),
          "every host reaches %s:%d" % (FLEET.addr, col.port))
    url = col.url()
    log("fleet: %d hosts on %s, collector %s at %s"
        % (HOSTS, FLEET.net, col.name, url))
    hosts = [Host(h) for h in range(HOSTS)]
    by_name = {h.name: h for h in hosts}
    for h in hosts:
        h.forward(url)

    def comm(pid):
        try:
            with open("/proc/%d/comm" % pid) as f:
                return f.read().strip()
        except OSError:
            return "(gone)"
    # the CPU figures read the forwarders' pids: each must be shmlog's
    # once the execs before it (setpriv, ip, unshare, sh) are done
    check(wait_until(lambda: all(comm(h.fwd.pid) == "shmlog"
                                 for h in hosts), 30, "the forwarders"),
          "every forwarder runs: %s" % [comm(h.fwd.pid) for h in hosts])
    t0 = time.monotonic()
    cpu0 = col.cpu_now()
    got = [0]

    def pump():
        got[0] += take_all(col, hosts, by_name)
        return got[0]
    # steady writers: a quiet one and a busier one, rates per host
    for h in hosts:
        h.write("quiet", 5 * STEADY_SECONDS, 5)
        rate = 40 * (h.h + 1)
        h.write("busy", rate * STEADY_SECONDS, rate)
    kills, restarts, caught_up = [], [], []

    def outage(bursting):
        """SIGKILL the collector; the @bursting hosts overrun their rings
        meanwhile; start it again once their bursts are written."""
        check(wait_until(lambda: pump() > 0 and all(h.recs for h in hosts),
                         90, "records from every host"),
              "every host delivers before kill %d" % (len(kills) + 1))
        col.kill()
        kills.append(time.monotonic())
        tags = [(h, h.write("burst%d" % len(kills), BURST, 0))
                for h in bursting]
        for h, tag in tags:
            h.writers[-1].wait(timeout=120)
        time.sleep(1)  # the outage itself, not a synchronisation
        col.start()
        restarts.append((time.monotonic(), pump()))
        return tags

    def catch_up(bursts):
        """Until the bursts' last records are in: the backlog taken."""
        check(wait_until(lambda: pump() and all(h.has(t, BURST - 1)
                                                for h, t in bursts), 180,
                         "the bursts' last records after the restart"),
              "the bursts' last records arrive after restart %d"
              % len(restarts))
        caught_up.append((time.monotonic(), pump()))

    catch_up(outage(hosts[HOSTS // 2:]))
    # a flood by every host at once, the collector up: what it takes
    n0, c0, w0 = pump(), col.cpu_now(), time.monotonic()
    me0 = sum(os.times()[:2])
    f0 = sum(cpu_seconds(h.fwd.pid) for h in hosts)
    floods = [(h, h.write("flood", FLOOD, 0)) for h in hosts]
    check(wait_until(lambda: pump() and all(h.has(t, FLOOD - 1)
                                            for h, t in floods), 180,
                     "the floods' last records"),
          "the floods' last records arrive")
    flood_s = time.monotonic() - w0
    flood = (pump() - n0, flood_s, col.cpu_now() - c0,
             sum(cpu_seconds(h.fwd.pid) for h in hosts) - f0,
             sum(os.times()[:2]) - me0)
    catch_up(outage(hosts[:HOSTS // 2]))
    for h in hosts:
        for w in h.writers:
            w.wait(timeout=300)
            check(w.returncode == 0, "%s: writer exit %s"
                  % (h.name, w.returncode))
    written_at = time.monotonic()
    lanes = {h.name: h.lanes_written() for h in hosts}

    def accounted():
        pump()
        for h in hosts:
            for lane, n in lanes[h.name].items():
                if (lane, n - 1) not in h.recs:  # the newest is never lost
                    return False
        return True
    check(wait_until(accounted, 240, "every lane's newest record"),
          "every lane's newest record arrives")
    run_s = time.monotonic() - t0
    tail_s = time.monotonic() - written_at
    for h in hosts:
        h.stop_forwarder()
    pump()
    col_cpu = col.cpu_now() - cpu0
    col.stop()
    pump()

    # ---- per host: delivered + lost = written
    log("%-9s %8s %9s %7s %5s %7s %6s  %s" % (
        "host", "written", "delivered", "lost", "dups", "batches", "fwdCPU",
        "forwarder said"))
    total = {"written": 0, "delivered": 0, "lost": 0, "dups": 0}
    for h in hosts:
        written = sum(h.written.values())
        check(sum(lanes[h.name].values()) == written,
              "%s: the lanes hold what the writers wrote (%s vs %d)"
              % (h.name, lanes[h.name], written))
        lost = set()
        for lane, first, last, count in h.ranges:
            check(count <= last - first + 1, "%s: a loss counts within its "
                  "range %s" % (h.name, (lane, first, last, count)))
            lost.update((lane, s) for s in range(first, last + 1))
        every = {(lane, s) for lane, n in lanes[h.name].items()
                 for s in range(n)}
        delivered = set(h.recs)
        dups = sum(v - 1 for v in h.recs.values())
        check(not h.bad, "%s: records that do not name this host, its "
              "buffer or their own writer and index: %s"
              % (h.name, h.bad[:3]))
        check(delivered <= every, "%s: delivered records the lanes never "
              "held: %s" % (h.name, sorted(delivered - every)[:5]))
        check(not delivered & lost, "%s: %d records delivered and counted "
              "lost" % (h.name, len(delivered & lost)))
        check(delivered | lost >= every, "%s: silent losses: %s"
              % (h.name, sorted(every - delivered - lost)[:5]))
        check(len(delivered) + len(lost & every) == written,
              "%s: delivered %d + lost %d = written %d"
              % (h.name, len(delivered), len(lost & every), written))
        check(len(set(h.ids.values())) == len(delivered),
              "%s: each writer's record once by (tag, index)" % h.name)
        check(dups <= KILLS * BATCH, "%s: %d duplicates, over a batch (%d) "
              "per collector kill" % (h.name, dups, BATCH))
        said = re.findall(r"^shmlog forward: .*records delivered.*$",
                          h.status, re.M)
        m = re.search(r"(\d+) records delivered .*; (\d+) lost", said[-1]) \
            if said else None
        check(m and int(m.group(2)) == len(lost),
              "%s: the forwarder counts %s lost, its loss messages %d"
              % (h.name, m.group(2) if m else "?", len(lost)))
        batches = re.search(r" in (\d+) batches", said[-1]) if said else None
        log("%-9s %8d %9d %7d %5d %7s %5.2fs  %s" % (
            h.name, written, len(delivered), len(lost), dups,
            batches.group(1) if batches else "?", h.fwd_cpu,
            said[-1].split(": ", 2)[-1][:90] if said else "(nothing)"))
        total["written"] += written
        total["delivered"] += len(delivered)
        total["lost"] += len(lost)
        total["dups"] += dups
    check(total["lost"] > 0, "the bursts overran rings (test premise)")
    check(len(kills) == KILLS, "the collector was killed %d times"
          % len(kills))

    # ---- what one collector took
    fwd_cpu = sum(h.fwd_cpu for h in hosts)
    received = total["delivered"] + total["dups"]
    n, secs, ccpu, fcpu, mecpu = flood
    log("figures (%s, %d hosts, %d CPUs, load %s):"
        % (KIND, HOSTS, os.cpu_count(),
           " ".join("%.2f" % x for x in os.getloadavg())))
    log("  whole run: %d records received in %.1f s (%.0f/s; the writers "
        "paced, two outages), the last %.1f s after the writers ended"
        % (received, run_s, received / run_s, tail_s))
    if KIND == "otlp":
        log("  OTLP/JSON as the collector exported it: %.0f bytes/record"
            % (col.sink.bytes / received))
    log("  collector CPU %.2f s = %.1f us/record; forwarders %.2f s = "
        "%.1f us/record" % (col_cpu, 1e6 * col_cpu / received, fwd_cpu,
                            1e6 * fwd_cpu / received))
    for k, ((t, n0), (t1, n1)) in enumerate(zip(restarts, caught_up)):
        log("  restart %d: caught up %.1f s after the collector was back, "
            "%d records taken meanwhile (%.0f/s)"
            % (k + 1, t1 - t, n1 - n0, (n1 - n0) / max(t1 - t, 1e-3)))
    log("  flood (every host %d records flat out, collector up): %d "
        "records in %.2f s = %.0f records/s; collector CPU %.2f s (%.0f %% "
        "of one CPU, %.1f us/record), forwarders %.2f s (%.1f us/record); "
        "this script (%s) %.2f s"
        % (FLOOD, n, secs, n / secs, ccpu, 100 * ccpu / secs,
           1e6 * ccpu / n, fcpu, 1e6 * fcpu / n,
           "the collector's export target, parsing" if KIND == "otlp"
           else "parsing rsyslogd's file", mecpu))


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        main()
    except SystemExit:
        cleanup()
        raise
    except Exception as e:  # a crash of the test is a failure, cleaned up
        import traceback
        traceback.print_exc()
        FAILS.append(repr(e))
    cleanup()
    if FAILS:
        log("%d check(s) failed" % len(FAILS))
        sys.exit(1)
    log("PASS fleet", KIND)
    sys.exit(0)
