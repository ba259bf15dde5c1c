#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Records written from Python, Rust and C into one buffer come out of
`shmlog cat` merged in time order.

Each round, Python writes a record in this process, then the Rust example
writer and the C command-line writer (`shmlog write`) each write one in
their own process, one after the other, so the true order is known; every
writer lands in its own lane, and `shmlog cat` must merge the lanes back
into that order.

usage: test_cross.py SHMLOG_CLI RUST_WRITER   (with the shmlog package importable)
"""
import json
import os
import subprocess
import sys

import shmlog

ROUNDS = 5


def main():
    cli, rust_writer = sys.argv[1], sys.argv[2]
    name = "test-cross-%d" % os.getpid()
    shmlog.create(name)
    try:
        expected = []
        with shmlog.open(name) as buf:
            for i in range(ROUNDS):
                buf.write(shmlog.INFO, "py", "py %d" % i)
                expected.append(("py", "py %d" % i))
                subprocess.run([rust_writer, name, "rs", "rs %d" % i], check=True, timeout=60)
                expected.append(("rs", "rs %d" % i))
                subprocess.run([cli, "write", "-b", name, "-t", "c", "-p", "W", "c %d" % i],
                               check=True, timeout=60)
                expected.append(("c", "c %d" % i))
        out = subprocess.run([cli, "cat", "-b", name, "-v", "json"], check=True, timeout=60,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout
        recs = [json.loads(line) for line in out.splitlines()]
        got = [(r["tag"], r["msg"]) for r in recs]
        if got != expected:
            print("FAIL: shmlog cat gave\n  %s\nexpected\n  %s" % (got, expected))
            return 1
        times = [r["time_ns"] for r in recs]
        if times != sorted(times):
            print("FAIL: times out of order: %s" % times)
            return 1
        pids = {tag: {r["pid"] for r in recs if r["tag"] == tag} for tag in ("py", "rs", "c")}
        if pids["py"] != {os.getpid()} or len(pids["rs"]) != ROUNDS or len(pids["c"]) != ROUNDS:
            print("FAIL: writers' pids are not as expected: %s" % pids)
            return 1
        lanes = {r["lane"] for r in recs}
        prios = {tag: {r["prio"] for r in recs if r["tag"] == tag} for tag in ("py", "rs", "c")}
        if prios != {"py": {"I"}, "rs": {"I"}, "c": {"W"}}:
            print("FAIL: priorities: %s" % prios)
            return 1
        print("ok: %d records from Python, Rust and C, in time order across %d lanes"
              % (len(recs), len(lanes)))
        return 0
    finally:
        shmlog.remove(name)


if __name__ == "__main__":
    sys.exit(main())
