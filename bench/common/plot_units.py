# SPDX-License-Identifier: MIT
"""Axis labels as a reader writes them, shared by the benchmarks' plots."""


def dur(ns, _pos=None):
    """A duration in ns: '42 ns', '1.2 us', '3 ms', '2 s'."""
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if ns >= div * 0.9995:
            return "%.3g %s" % (ns / div, unit)
    return "%.3g ns" % ns


def size(b, _pos=None):
    """Bytes: '64 B', '1 KiB', '4 MiB'."""
    for div, unit in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= div:
            return "%g %s" % (b / div, unit)
    return "%g B" % b
