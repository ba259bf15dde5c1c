# SPDX-License-Identifier: MIT
"""Helpers shared by the `shmlog forward` tests (test_forward.py and
test_fleet.py): reporting a check, bounded waits, ports, the receivers'
fields (syslog structured data, OTLP attributes) and the test
OpenTelemetry Collector (its build into the build tree, its
configuration, its start)."""
import os
import re
import socket
import subprocess
import time

# The checks that failed, in order: a test fails if any did.
FAILS = []


def log(*a):
    print(*a, flush=True)


def check(cond, what):
    if not cond:
        FAILS.append(what)
        log("FAIL:", what)
    return cond


def wait_until(pred, limit, what):
    """Poll pred() until true; a bounded wait, never a fixed sleep."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    log("timed out after %ds waiting for %s" % (limit, what))
    return False


def free_port(addr="127.0.0.1"):
    s = socket.socket()
    s.bind((addr, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def sd_params(sd):
    """A syslog STRUCTURED-DATA element's params -> dict (still escaped)."""
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', sd))


def otlp_attrs(kvs):
    """OTLP KeyValue list -> dict of plain values: an intValue as an int,
    an arrayValue as the list of its values' plain values."""
    out = {}
    for kv in kvs:
        (kind, val), = kv["value"].items()
        if kind == "intValue":
            val = int(val)
        elif kind == "arrayValue":
            val = [list(x.values())[0] for x in val.get("values", [])]
        out[kv["key"]] = val
    return out


def otelcol_binary(shmlog, skip):
    """The OpenTelemetry Collector the tests use, built once into the
    build tree of @shmlog (the CLI's path) by otelcol/build-otelcol.sh;
    skip(why) if it cannot be built here."""
    here = os.path.dirname(os.path.abspath(__file__))
    dest = os.path.join(os.path.dirname(os.path.abspath(shmlog)), "..",
                        "otelcol")
    binary = os.path.join(dest, "otelcol-shmlog")
    if not os.path.exists(binary):
        log("building an OpenTelemetry Collector (once) into " + dest)
        try:
            p = subprocess.run(["sh", os.path.join(here, "otelcol",
                                                   "build-otelcol.sh"), dest],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=900)
        except subprocess.TimeoutExpired:
            skip("building the OpenTelemetry Collector took over 15 min")
        if p.returncode or not os.path.exists(binary):
            skip("the OpenTelemetry Collector could not be built here: "
                 + p.stdout.decode(errors="replace")[-500:])
    return binary


def otelcol_config(addr, port, sink_port, retries):
    """The collector's configuration: its OTLP receiver (HTTP) on
    addr:port, its OTLP/HTTP exporter (JSON, no queue: it answers 200 only
    once the export was taken) into a receiver on 127.0.0.1:sink_port,
    with its own retries or (retries False) none, so that it passes a
    refusal on."""
    no_retries = ("" if retries else
                  "    retry_on_failure:\n      enabled: false\n")
    return """receivers:
  otlp:
    protocols:
      http:
        endpoint: %s:%d
exporters:
  otlphttp:
    endpoint: http://127.0.0.1:%d
    encoding: json
    compression: none
    sending_queue:
      enabled: false
%sservice:
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [otlphttp]
""" % (addr, port, sink_port, no_retries)


def wait_listening(proc, addr, port, limit, logpath, what):
    """Wait until @proc accepts connections on addr:port; if it exits
    first or the wait runs out, show the end of its log and stop the test
    (SystemExit)."""
    def up():
        if proc.poll() is not None:
            return True
        try:
            socket.create_connection((addr, port), 1).close()
            return True
        except OSError:
            return False
    if not wait_until(up, limit, what) or proc.poll() is not None:
        log(open(logpath, errors="replace").read()[-3000:])
        raise SystemExit("%s did not start" % what)
