#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Records per second of logging.info() through shmlog.Handler, against
logging.FileHandler and logging.NullHandler, in one run: each handler in
turn on the same logger, several rounds, the median round reported.

usage: bench_handler.py [--records N] [--rounds R] [--json FILE]
(with the binding importable: pip install ./bindings/python, or
PYTHONPATH=build/bindings/python after the tests have built it)
"""
import argparse
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time

# Import the built or installed binding, not the bare sources beside this
# script (they lack the compiled extension).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import shmlog  # noqa: E402


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--json")
    ap.add_argument("--wall", action="store_true",
                    help="time with the wall clock instead of CPU time")
    a = ap.parse_args()
    global CLOCK
    if a.wall:
        CLOCK = time.perf_counter

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
        with open(a.json, "w") as f:
            json.dump({"when": when, "python": platform.python_version(),
                       "cpu": cpu_model(), "records": a.records, "rounds": a.rounds,
                       "clock": "wall" if a.wall else "cpu", "rates": rates, "median": med,
                       "handler_alone": own, "handler_alone_median": med_own}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
