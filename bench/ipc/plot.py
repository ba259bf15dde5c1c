#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots for `shmlog-bench ipc --json FILE`.

    python3 bench/ipc/plot.py bench-ipc.json [OUTDIR] [--prefix ipc-]

Writes, into OUTDIR (default: docs/img):
  PREFIXlatency-request.png  round-trip p50 against reply size, log-log
  PREFIXlatency-send.png     round-trip p50 against sent size, log-log
  PREFIXmsgs-4B.png          Msgs/s bars: request, send, notify at 4 B
  PREFIXnotify-latency.png   one-way delivery p50/p99 of paced events

Blocking rows are solid lines, spin-then-block rows dashed: the two are
never drawn as if they were alike. Skips with a message (exit 0) when
matplotlib is missing, so CI need not have it.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plot_units import dur, size  # noqa: E402


def load(path):
    with open(path) as f:
        doc = json.load(f)
    rows = [r for r in doc["results"]
            if r.get("supported") and r.get("series", "matrix") == "matrix"
            and not r.get("instrumented")]
    return doc, rows


def subtitle(doc):
    m, c = doc["machine"], doc.get("conditions", {})
    return "%s, %d cores, %s; cpus %s; %s" % (
        m["cpu_model"], m["cores"], m["kernel"], c.get("cpus", "?"),
        m["date"])


def mechanisms(rows):
    seen = []
    for r in rows:
        if r["mechanism"] not in seen:
            seen.append(r["mechanism"])
    return seen


def colour(plt, i):
    """Distinct colours for up to 20 lines: tab20's dark shades first."""
    i %= 20
    return plt.get_cmap("tab20")(2 * i if i < 10 else 2 * (i - 10) + 1)


def plot_latency(plt, doc, rows, conv, out):
    from matplotlib.ticker import FuncFormatter
    fig, ax = plt.subplots(figsize=(10, 6.5))
    for i, mech in enumerate(mechanisms(rows)):
        for wait, style in (("block", "-"), ("spin", "--")):
            pts = sorted((r["size"], r["rtt_p50_ns"]) for r in rows
                         if r["mechanism"] == mech and r["wait"] == wait
                         and r["conversation"] == conv)
            if len(pts) < 2:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style,
                    marker="o", markersize=3, color=colour(plt, i),
                    label="%s (%s)" % (mech, "spin+block" if wait == "spin"
                                       else "block"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    what = "reply" if conv == "request" else "message sent"
    ax.xaxis.set_major_formatter(FuncFormatter(size))
    ax.yaxis.set_major_formatter(FuncFormatter(dur))
    ax.set_xlabel("%s size (payload)" % what)
    ax.set_ylabel("round trip, median")
    ax.set_title("synchronous %s: round-trip latency against size\n%s"
                 % (conv, subtitle(doc)), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_msgs(plt, doc, rows, out):
    convs = [c for c in ("request", "send", "notify")
             if any(r["conversation"] == c for r in rows)]
    labels = []
    for r in rows:
        if r["size"] != 4 or r["conversation"] not in convs:
            continue
        key = (r["mechanism"], r["wait"])
        if key not in labels:
            labels.append(key)
    if not labels:
        return
    fig, ax = plt.subplots(figsize=(11, 6))
    width = 0.8 / len(convs)
    for k, conv in enumerate(convs):
        vals = []
        for mech, wait in labels:
            v = [r["msgs_per_s"] for r in rows if r["mechanism"] == mech
                 and r["wait"] == wait and r["conversation"] == conv
                 and r["size"] == 4]
            vals.append(v[0] if v else 0)
        xs = [i + (k - (len(convs) - 1) / 2) * width
              for i in range(len(labels))]
        ax.bar(xs, vals, width, label=conv)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(["%s\n%s" % (m, "spin+blk" if w == "spin" else "block")
                        for m, w in labels], rotation=60, fontsize=7,
                       ha="right")
    from matplotlib.ticker import EngFormatter
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(EngFormatter(unit="/s"))
    ax.set_ylabel("messages per second (log)")
    ax.set_title("4-byte messages: Msgs/s per mechanism and conversation\n%s"
                 % subtitle(doc), fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_paced(plt, doc, rows, out):
    pts = [r for r in rows if r["conversation"] == "notify-paced"]
    if not pts:
        return
    fig, ax = plt.subplots(figsize=(10, 5.5))
    names = ["%s\n%s" % (r["mechanism"],
                         "spin+blk" if r["wait"] == "spin" else "block")
             for r in pts]
    xs = range(len(pts))
    from matplotlib.ticker import FuncFormatter
    ax.bar([x - 0.2 for x in xs], [r["rtt_p50_ns"] for r in pts], 0.4,
           label="p50")
    ax.bar([x + 0.2 for x in xs], [r["rtt_p99_ns"] for r in pts], 0.4,
           label="p99")
    ax.yaxis.set_major_formatter(FuncFormatter(dur))
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=60, fontsize=7, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("one-way delivery (log)")
    ax.set_title("paced 4-byte events: delivery latency to a sleeping "
                 "receiver\n%s" % subtitle(doc), fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--prefix")]
    prefix = "ipc-"
    for a in argv[1:]:
        if a.startswith("--prefix="):
            prefix = a.split("=", 1)[1]
    if not args:
        print(__doc__)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed "
              "(Debian: python3-matplotlib); no plots made")
        return 0
    doc, rows = load(args[0])
    outdir = args[1] if len(args) > 1 else "docs/img"
    os.makedirs(outdir, exist_ok=True)
    made = []
    for conv in ("request", "send"):
        if any(r["conversation"] == conv for r in rows):
            out = os.path.join(outdir, "%slatency-%s.png" % (prefix, conv))
            plot_latency(plt, doc, rows, conv, out)
            made.append(out)
    out = os.path.join(outdir, "%smsgs-4B.png" % prefix)
    plot_msgs(plt, doc, rows, out)
    made.append(out)
    out = os.path.join(outdir, "%snotify-latency.png" % prefix)
    plot_paced(plt, doc, rows, out)
    made.append(out)
    for m in made:
        if os.path.exists(m):
            print("wrote", m)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
