#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Markdown tables from `shmlog-bench ipc --json FILE`, for
docs/ipc-benchmarks.md.

    python3 bench/ipc/report.py bench-ipc.json > tables.md

One table per (conversation, size) of the run matrix, the study's columns
first (Msgs/s, KiB/s), then latency percentiles and the per-message costs,
then the stage breakdown with the instrumentation's own cost.
"""
import json
import statistics
import sys

CONV_TITLE = {
    "request": "Synchronous request: client asks, server replies %s "
               "(latency = round trip)",
    "send": "Synchronous send: client sends %s, server replies a status "
            "(latency = round trip)",
    "notify": "Asynchronous notification: %s events as fast as the sender "
              "can (latency = one-way delivery, queueing included)",
    "notify-paced": "Paced notification: %s events, the sender sleeps "
                    "between them (latency = one-way delivery to a "
                    "sleeping receiver)",
    "notify-rate": "Notification at %s/s: %s events, the sender "
                   "busy-waits between them (latency = one-way delivery; "
                   "Msgs/s below the rate: the sender was held up)",
}


def rate_name(v):
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return "%g %s" % (v / div, unit)
    return "%g" % v


def conv_title(conv, size, rate):
    if conv == "notify-rate":
        return CONV_TITLE[conv] % (rate_name(rate or 0), size_name(size))
    return CONV_TITLE.get(conv, conv) % size_name(size)


def size_name(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%d MiB" % (n >> 20)
    if n >= 1024 and n % 1024 == 0:
        return "%d KiB" % (n >> 10)
    return "%d B" % n


def us(ns):
    v = ns / 1e3
    if v < 100:
        return "%.2f" % v
    return "%.0f" % v


def matrix_tables(rows, out):
    order = []
    for r in rows:
        key = (r["conversation"], r["size"], r.get("rate_per_s"))
        if key not in order:
            order.append(key)
    for conv, size, rate in order:
        out.append("")
        out.append("#### " + conv_title(conv, size, rate))
        out.append("")
        oneway = conv.startswith("notify")
        head = ["mechanism", "wait", "Msgs/s", "+-%", "KiB/s", "p50 us",
                "p90 us",
                "p99 us", "p99.9 us", "max us", "CPU ns/msg c+s",
                "csw/msg c+s"]
        if oneway:
            head.append("lost")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        notes = set()
        for r in rows:
            if (r["conversation"], r["size"],
                    r.get("rate_per_s")) != (conv, size, rate):
                continue
            wait = "spin+block" if r["wait"] == "spin" else "block"
            if r.get("wait_note") and r["wait"] == "block":
                wait = "block*"
                notes.add(r["wait_note"])
            if not r["supported"]:
                out.append("| %s | %s | n/a: %s |%s" % (
                    r["mechanism"], wait, r["why"],
                    " |" * (len(head) - 3)))
                continue
            spread = "-"
            if r.get("reps", 1) > 1 and r["msgs_per_s"] > 0:
                spread = "%.0f" % (50.0 * (r["msgs_per_s_max"] -
                                          r["msgs_per_s_min"]) /
                                   r["msgs_per_s"])
            cells = [r["mechanism"], wait, "%.0f" % r["msgs_per_s"], spread,
                     "%.1f" % r["kib_per_s"], us(r["rtt_p50_ns"]),
                     us(r["rtt_p90_ns"]), us(r["rtt_p99_ns"]),
                     us(r["rtt_p999_ns"]), us(r["rtt_max_ns"]),
                     "%.0f + %.0f" % (r["client_cpu_ns_per_msg"],
                                      r["server_cpu_ns_per_msg"]),
                     "%.2f + %.2f" % (r["client_csw_per_msg"],
                                      r["server_csw_per_msg"])]
            if oneway:
                cells.append(str(r["lost"]))
            out.append("| " + " | ".join(cells) + " |")
        for n in sorted(notes):
            out.append("")
            out.append("\\* " + n + ": not a pure blocking wait.")


# The seven tests of the embedded Linux IPC benchmark and where they are in our matrix.
STUDY_TESTS = [
    ("Large send", "send", 1024), ("Large receive", "request", 1024),
    ("Medium send", "send", 128), ("Medium receive", "request", 128),
    ("Small send", "send", 16), ("Small receive", "request", 16),
    ("Event posting", "notify", 4),
]

# What the study measured in 2011 on an ARM926EJ at ~300 MHz, Linux 2.6.32,
# blocking, Msgs/s, for scale.
STUDY_2011 = {
    "posix-mq": [3870.7, 3858.2, 4019.3, 4386.2, 4021.6, 4426.0, 5918.5],
    "shm-sem": [2453.5, 2447.1, 2503.6, 2494.6, 2519.9, 2515.5, 2540.8],
    "onc-rpc": [1156.8, 1148.4, 1209.0, 1211.2, 1219.2, 1202.1, 7904.5],
}


def study_table(rows, out):
    """The study's shape: one line per mechanism, its seven tests in Msgs/s
    (blocking rows, as the study had no other)."""
    mechs = []
    for r in rows:
        if r["mechanism"] not in mechs:
            mechs.append(r["mechanism"])
    out.append("")
    out.append("#### The study's seven tests, blocking, Msgs/s")
    out.append("")
    out.append("Large = 1024 B, medium = 128 B, small = 16 B; \"send\" is our "
               "synchronous send, \"receive\" our synchronous request, "
               "\"event posting\" our notification. The study's own 2011 "
               "figures (ARM926EJ at ~300 MHz, Linux 2.6.32) are shown in "
               "italics for scale.")
    out.append("")
    out.append("| mechanism | " + " | ".join(t[0] for t in STUDY_TESTS) +
               " |")
    out.append("|---|" + "---|" * len(STUDY_TESTS))
    for mech in mechs:
        cells = []
        for _, conv, size in STUDY_TESTS:
            v = [r for r in rows if r["mechanism"] == mech
                 and r["conversation"] == conv and r["size"] == size
                 and r["wait"] == "block"]
            if not v:
                cells.append("")
            elif not v[0]["supported"]:
                cells.append("n/a")
            else:
                cells.append("%.0f" % v[0]["msgs_per_s"])
        if any(cells):
            out.append("| %s | %s |" % (mech, " | ".join(cells)))
        if mech in STUDY_2011:
            out.append("| *%s, 2011* | %s |" % (mech, " | ".join(
                "*%.0f*" % v for v in STUDY_2011[mech])))


def stamps_of(r):
    """'none', 'out-of-band' or 'in-band'; runs made before in-band stamps
    existed only say whether they were instrumented."""
    return r.get("stamps", "out-of-band" if r["instrumented"] else "none")


def stage_table(rows, out):
    st = [r for r in rows if r.get("series") == "stages" and r["supported"]]
    if not st:
        return
    keys = []
    for r in st:
        k = (r["mechanism"], r["wait"])
        if k not in keys:
            keys.append(k)
    out.append("")
    out.append("#### Stage timestamps (synchronous request, %s reply)"
               % size_name(st[0]["size"]))
    out.append("")
    out.append("Medians in us, each stage measured from the previous stamp "
               "(median over the out-of-band runs of each run's median); "
               "round trips: the median over the paired runs of each run's "
               "p50, plain, with the stamps out of band (each side's own "
               "array) and in band (carried in the messages, as the binder "
               "study did); cost = instrumented minus plain.")
    out.append("")
    out.append("| mechanism | wait | S_RECV | S_REPLY | C_RECV | "
               "rtt plain | rtt out-of-band | rtt in-band | cost "
               "out-of-band | cost in-band |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for mech, wait in keys:
        runs = {k: [r for r in st if (r["mechanism"], r["wait"]) ==
                    (mech, wait) and stamps_of(r) == k]
                for k in ("none", "out-of-band", "in-band")}
        ins, pla, inb = runs["out-of-band"], runs["none"], runs["in-band"]
        if not ins or not pla:
            continue
        med = {k: statistics.median(r["stages"][k] for r in ins)
               for k in ins[0]["stages"]}
        mi = statistics.median(r["rtt_p50_ns"] for r in ins)
        mp = statistics.median(r["rtt_p50_ns"] for r in pla)
        mb = statistics.median(r["rtt_p50_ns"] for r in inb) if inb else None
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %+.2f | %s |"
                   % (mech, "spin+block" if wait == "spin" else "block",
                      us(med["c_send_to_s_recv_p50_ns"]),
                      us(med["s_recv_to_s_reply_p50_ns"]),
                      us(med["s_reply_to_c_recv_p50_ns"]), us(mp), us(mi),
                      us(mb) if mb else "-", (mi - mp) / 1e3,
                      "%+.2f" % ((mb - mp) / 1e3) if mb else "-"))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        doc = json.load(f)
    m, c = doc["machine"], doc["conditions"]
    out = ["Machine: %s, %d cores, %s, clocksource %s; %s, git %s." % (
        m["cpu_model"], m["cores"], m["kernel"], m["clocksource"],
        m["date"], m["git_commit"]),
        "Conditions: cpus %s (client %d, server %d), spin %.0f us, %.0f ms "
        "measured per run after %.0f ms warm-up, median of %d runs per "
        "row (+-%% = half their spread of Msgs/s), paced events every "
        "%.0f us asked; load average %.2f at start, %.2f at end; CPU time "
        "stolen by the hypervisor during the run: %.2f s." % (
            c["cpus"], c["cpu_client"], c["cpu_server"], c["spin_ns"] / 1e3,
            c["run_ns"] / 1e6, c["warm_ns"] / 1e6, c.get("reps", 1),
            c["pace_ns"] / 1e3,
            c.get("loadavg_start", -1), c.get("loadavg_end", -1),
            c.get("steal_ms", 0) / 1e3)]
    rows = doc["results"]
    matrix = [r for r in rows if r.get("series", "matrix") == "matrix"]
    study_table(matrix, out)
    matrix_tables(matrix, out)
    stage_table(rows, out)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
