#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Records per second of logging.info() through shmlog.Handler, against
logging.FileHandler and logging.NullHandler, in one run: each handler in
turn on the same logger, several rounds, the median round reported.

usage: bench_handler.py [--records N] [--rounds R] [--quick] [--json FILE]
(with the binding importable: pip install ./bindings/python, or
PYTHONPATH=build/bindings/python after the tests have built it)
"""
import argparse
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

# Import the built or installed binding, not the bare sources beside this
# script (they lack the compiled extension).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import shmlog  # noqa: E402


def first_line(path):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return ""


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def hypervisor():
    """As shmlog-bench says it: a guest's figures include its hypervisor."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "")
    except OSError:
        return None
    if " hypervisor" not in flags:
        return None
    cs = first_line("/sys/devices/system/clocksource/clocksource0/"
                    "available_clocksource")
    return "a KVM guest" if "kvm-clock" in cs else "a virtual machine"


def machine():
    """The "machine" member of every shmlog-bench JSON document, so that
    scripts/render-results reads this one as it reads theirs."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=_here,
            capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    u = os.uname()
    m = {"cpu_model": cpu_model(), "cores": os.cpu_count(),
         "kernel": "%s %s" % (u.sysname, u.release),
         "clocksource": first_line("/sys/devices/system/clocksource/"
                                   "clocksource0/current_clocksource"),
         "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "git_commit": commit or "unknown", "hostname": u.nodename}
    if hypervisor():
        m["hypervisor"] = hypervisor()
    return m


# CPU time of this process (user + system, so a FileHandler's write(2)
# counts): on a shared machine, wall time also counts the time other
# processes held the CPU, which varies from one handler's turn to the next.
CLOCK = time.process_time


def run(logger, handler, n):
    logger.handlers[:] = [handler]
    info = logger.info
    t0 = CLOCK()
    for i in range(n):
        info("request %d served in %d us", i, 42)
    t = CLOCK() - t0
    return n / t


def run_handle(handler, n):
    """The handler's own cost: handle() of a ready-made record, without
    the logger's work (caller lookup, record creation)."""
    rec = logging.LogRecord("bench", logging.INFO, __file__, 1,
                            "request %d served in %d us", (7, 42), None)
    handle = handler.handle
    t0 = CLOCK()
    for _ in range(n):
        handle(rec)
    return n / (CLOCK() - t0)


def write_json(a, mach, load_start, rates, own):
    """Every round's rates, and the conditions a reader needs to judge
    them (a loaded machine inflates them all)."""
    doc = {"bench": "handler", "machine": mach,
           "conditions": {"quick": int(a.quick), "records": a.records, "rounds": a.rounds,
                          "clock": "wall" if a.wall else "cpu",
                          "python": platform.python_version(),
                          "loadavg_start": load_start,
                          "loadavg_end": os.getloadavg()[0]},
           "handlers": [{"handler": k,
                         "records_per_s": statistics.median(rates[k]),
                         "handle_per_s": statistics.median(own[k]),
                         "rounds_records_per_s": rates[k],
                         "rounds_handle_per_s": own[k]} for k in rates]}
    tmp = a.json + ".new"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.json)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--json", metavar="FILE",
                    help="write the results into FILE, as shmlog-bench --json does")
    ap.add_argument("--quick", action="store_true",
                    help="2000 records x 3 rounds: to try it, not to quote")
    ap.add_argument("--wall", action="store_true",
                    help="time with the wall clock instead of CPU time")
    a = ap.parse_args()
    if a.quick:
        a.records, a.rounds = 2000, 3
    global CLOCK
    if a.wall:
        CLOCK = time.perf_counter

    mach = machine()
    load_start = os.getloadavg()[0]
    buf = "bench-py-%d" % os.getpid()
    tmp = tempfile.mkdtemp()
    logfile = os.path.join(tmp, "bench.log")
    logger = logging.getLogger("bench")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    shmlog.create(buf, size=64 << 20)
    try:
        handlers = {
            "shmlog.Handler": shmlog.Handler(buffer=buf),
            "logging.FileHandler": logging.FileHandler(logfile),
            "logging.NullHandler": logging.NullHandler(),
        }
        rates = {k: [] for k in handlers}
        own = {k: [] for k in handlers}
        run(logger, logging.NullHandler(), min(a.records, 10000))  # warm up
        for _ in range(a.rounds):
            for k, h in handlers.items():
                rates[k].append(run(logger, h, a.records))
                own[k].append(run_handle(h, a.records))
        for h in handlers.values():
            h.close()
    finally:
        shmlog.remove(buf)
        try:
            os.unlink(logfile)
        finally:
            os.rmdir(tmp)

    med = {k: statistics.median(v) for k, v in rates.items()}
    med_own = {k: statistics.median(v) for k, v in own.items()}
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print("logging.info() through each handler, %d records x %d rounds, median round;"
          " records per %s second" % (a.records, a.rounds, "wall-clock" if a.wall else "CPU"))
    print("%s; Python %s; %s; %d CPUs; Linux %s; load average %.1f" % (
        when, platform.python_version(), cpu_model(), os.cpu_count(), platform.release(),
        os.getloadavg()[0]))
    print()
    print("| handler | logging.info() records/s | us/record | vs FileHandler "
          "| handler alone: us/record | vs FileHandler |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for k, r in med.items():
        o = med_own[k]
        print("| %s | %.0f | %.2f | %.2fx | %.2f | %.2fx |" % (
            k, r, 1e6 / r, r / med["logging.FileHandler"], 1e6 / o,
            o / med_own["logging.FileHandler"]))
    print()
    print("'handler alone' is Handler.handle() of a ready-made record: what the")
    print("handler itself costs, without the logger's own work.")
    if a.json:
        write_json(a, mach, load_start, rates, own)
    return 0


if __name__ == "__main__":
    sys.exit(main())
