#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots for `shmlog-bench log --json FILE`.

usage: plot.py BENCH-LOG.json OUTDIR [svg|png]

Writes SVG (or PNG) files into OUTDIR:
  log-throughput.svg  records/s per contender, single writer (log scale)
  log-latency-cdf.svg time per call, CDF of batch means (log scale)
  log-sweep.svg       payload bytes/s against message size
  log-scaling.svg     aggregate records/s against writers, threads and processes
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from plot_units import dur, size  # noqa: E402

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter, FixedLocator, FuncFormatter
except ImportError:
    print("plot.py: matplotlib is missing (Debian package python3-matplotlib); "
          "no plots drawn", file=sys.stderr)
    sys.exit(0)

EXT = "svg"
SHMLOG_COLOR = "#1f77b4"
PEER_COLOR = "#9a9a9a"
SEED_COLOR = "#d62728"


def color_of(name):
    if name.startswith("shmlog"):
        return SHMLOG_COLOR
    if name.startswith("rfc") or name.startswith("seed"):
        return SEED_COLOR
    return PEER_COLOR


# One color per contender, the same in every plot.
PALETTE = {}


def line_color(name):
    if name not in PALETTE:
        cmap = plt.get_cmap("tab20")
        i = len(PALETTE) % 20  # dark shades first: neighbours differ
        PALETTE[name] = cmap(2 * i if i < 10 else 2 * (i - 10) + 1)
    return PALETTE[name]


def line_style(name):
    """shmlog's variants bold, the 2012 RFC's design solid, the peers dashed."""
    if name.startswith("shmlog"):
        return {"linewidth": 2.4, "linestyle": "-"}
    if name.startswith("rfc") or name.startswith("seed"):
        return {"linewidth": 1.6, "linestyle": "-"}
    return {"linewidth": 1.2, "linestyle": "--"}


def eng(v, unit=""):
    """23033800 -> '23.0 M', (1.31e9, 'B/s') -> '1.31 GB/s'."""
    for p, pre in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= p * 0.9995:
            return "%.3g %s%s" % (v / p, pre, unit)
    return "%.3g%s" % (v, " " + unit if unit else "")


DUR = FuncFormatter(dur)
SIZE = FuncFormatter(size)


def subtitle(doc):
    m = doc["machine"]
    return "%s, %d %s, %s, clocksource %s\n%s, commit %s" % (
        m["cpu_model"], m["cores"],
        "vCPUs (%s)" % m["hypervisor"] if m.get("hypervisor") else "cores",
        m["kernel"], m["clocksource"], m["date"], m["git_commit"][:7])


def measured(doc):
    return [c for c in doc["contenders"]
            if not c["skipped"] and c.get("records_per_s")]


def throughput(doc, out):
    cs = sorted(measured(doc), key=lambda c: c["records_per_s"])
    fig, (ax, cpu) = plt.subplots(1, 2, figsize=(13, 0.42 * len(cs) + 1.8),
                                  sharey=True)
    names = [c["contender"] for c in cs]
    vals = [c["records_per_s"] for c in cs]
    colors = [color_of(n) for n in names]
    ax.barh(names, vals, color=colors)
    for i, c in enumerate(cs):
        ax.text(vals[i] * 1.05, i, "%s, %s" %
                (eng(vals[i]) + " records/s", eng(c["mb_per_s"] * 1e6, "B/s")),
                va="center", fontsize=8)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(EngFormatter())
    ax.set_xlim(min(vals) / 2, max(vals) * 30)
    ax.set_xlabel("records per second, one writer (log scale)")
    # CPU per record, writer and daemon: what a record costs, whatever
    # share of the machine the run got.
    cpus = [c.get("cpu_ns_per_rec") or 0 for c in cs]
    daemon = [c.get("daemon_cpu_ns_per_rec") or 0 for c in cs]
    cpu.barh(names, [a - b for a, b in zip(cpus, daemon)], color=colors,
             label="writer")
    cpu.barh(names, daemon, left=[a - b for a, b in zip(cpus, daemon)],
             color="#f2b134", label="daemon / collector")
    for i, v in enumerate(cpus):
        cpu.text(v * 1.05, i, dur(v), va="center", fontsize=8)
    cpu.set_xscale("log")
    cpu.xaxis.set_major_formatter(DUR)
    cpu.set_xlim(min(v for v in cpus if v > 0) / 2, max(cpus) * 8)
    cpu.set_xlabel("CPU time per record, writer + daemon (log scale)")
    cpu.legend(fontsize=8, loc="upper right")
    fig.suptitle("shmlog-bench log: the 2012 RFC's sample messages, %.0f B average\n%s"
                 % (doc["config"]["avg_msg_bytes"], subtitle(doc)), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "log-throughput." + EXT))
    plt.close(fig)


def latency_cdf(doc, out):
    fig, (ax, tail) = plt.subplots(1, 2, figsize=(12, 5.5))
    for c in measured(doc):
        pts = [(ns, q) for q, ns in c["cdf"] if ns and ns > 0]
        if not pts:
            continue
        xs, ys = zip(*pts)
        name = c["contender"]
        ax.step(xs, ys, where="post", label=name, color=line_color(name),
                **line_style(name))
        # The tail: fraction of batches slower than x, log scale.
        tpts = [(x, 1 - y) for x, y in pts if y < 1 and y >= 0.5]
        if tpts:
            txs, tys = zip(*tpts)
            tail.step(txs, tys, where="post", label=name,
                      color=line_color(name), **line_style(name))
    for a in (ax, tail):
        a.set_xscale("log")
        a.xaxis.set_major_formatter(DUR)
        a.grid(True, which="both", alpha=0.3)
        a.set_xlabel("time per call (mean of a batch of %d calls; timer %s)"
                     % (doc["config"]["batch"],
                        dur(doc["config"]["timer_cost_ns"])))
    ax.set_ylabel("fraction of batches at or below")
    tail.set_yscale("log")
    tail.set_ylabel("fraction of batches above (tail)")
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.suptitle("Latency per call, single writer\n" + subtitle(doc), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "log-latency-cdf." + EXT))
    plt.close(fig)


def sweep(doc, out):
    fig, ax = plt.subplots(figsize=(9, 5.5))
    drawn = False
    for c in measured(doc):
        pts = [(s["size"], s["mb_per_s"] * 1e6) for s in c.get("sweep", [])]
        if not pts:
            continue
        xs, ys = zip(*pts)
        ax.plot(xs, ys, marker="o", label=c["contender"],
                color=line_color(c["contender"]), **line_style(c["contender"]))
        drawn = True
    if not drawn:
        plt.close(fig)
        return
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator([16, 64, 256, 1024, 4096]))
    ax.xaxis.set_major_formatter(SIZE)
    ax.yaxis.set_major_formatter(EngFormatter(unit="B/s"))
    ax.set_xlabel("message size")
    ax.set_ylabel("message payload per second, one writer")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Message-size sweep\n" + subtitle(doc), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "log-sweep." + EXT))
    plt.close(fig)


def scaling(doc, out):
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharey=True)
    drawn = False
    for ax, mode in zip(axes, ("threads", "processes")):
        for c in measured(doc):
            pts = [(s["writers"], s["records_per_s"])
                   for s in c.get("scaling", []) if s["mode"] == mode]
            if not pts:
                continue
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o", label=c["contender"],
                    color=line_color(c["contender"]),
                    **line_style(c["contender"]))
            drawn = True
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator([1, 2, 4, 8]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%g" % v))
        ax.yaxis.set_major_formatter(EngFormatter())
        ax.set_xlabel("writers (%s)" % mode)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(mode, fontsize=9)
    if not drawn:
        plt.close(fig)
        return
    axes[0].set_ylabel("aggregate records per second")
    axes[1].legend(fontsize=7, ncol=2)
    fig.suptitle("Scaling with writers (%d cores)\n%s"
                 % (doc["machine"]["cores"], subtitle(doc)), fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "log-scaling." + EXT))
    plt.close(fig)


def main():
    global EXT
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    if len(sys.argv) == 4:
        EXT = sys.argv[3]
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    throughput(doc, out)
    latency_cdf(doc, out)
    sweep(doc, out)
    scaling(doc, out)
    print("plots written to %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
