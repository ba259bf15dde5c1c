# SPDX-License-Identifier: MIT
"""bench_handler.py --json writes what scripts/render-results reads: the
figures of docs/bindings.md come from that file and nothing else."""
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def render_results():
    path = os.path.join(ROOT, "scripts", "render-results")
    loader = importlib.machinery.SourceFileLoader("render_results", path)
    spec = importlib.util.spec_from_loader("render_results", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_handler_bench_json_renders(tmp_path):
    out = tmp_path / "handler.json"
    env = dict(os.environ)
    # the package the tests import (run_tests.sh runs pytest from it)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(
        os.path.abspath(__import__("shmlog").__file__)))
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "bindings", "python",
                                      "bench_handler.py"),
         "--records", "300", "--rounds", "1", "--json", str(out)],
        env=env, check=True, timeout=120, stdout=subprocess.DEVNULL)
    doc = json.loads(out.read_text())
    assert doc["bench"] == "handler"
    for key in ("cpu_model", "cores", "kernel", "clocksource", "date",
                "git_commit", "hostname"):
        assert key in doc["machine"], key
    c = doc["conditions"]
    assert (c["records"], c["rounds"], c["quick"]) == (300, 1, 0)
    names = [h["handler"] for h in doc["handlers"]]
    assert names == ["shmlog.Handler", "logging.FileHandler",
                     "logging.NullHandler"]
    for h in doc["handlers"]:
        assert h["records_per_s"] > 0 and h["handle_per_s"] > 0
        assert len(h["rounds_records_per_s"]) == 1

    rr = render_results()
    res = {"this-machine": {"handler": doc}}
    table = rr.r_bindings_handler(res)
    assert any(l.startswith("| `shmlog.Handler` |") for l in table)
    claims = rr.r_bindings_handler_claims(res)
    assert len(claims) == 1 and "target 3x" in claims[0]
    runs = rr.r_bindings_handler_runs(res)
    assert len(runs) == 1 and "Python" in runs[0]
