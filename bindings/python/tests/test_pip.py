# SPDX-License-Identifier: MIT
"""`pip install ./bindings/python` from a clone: build the wheel the way
pip does (PEP 517, from a copy of the tree) and import the result."""
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def test_pip_builds_a_working_wheel(tmp_path):
    for mod in ("pip", "setuptools", "cffi"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip("%s is not installed for %s: cannot build the wheel" % (mod, sys.executable))
    # setuptools before 70.1 builds wheels with the separate `wheel` package
    st = tuple(int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
    if importlib.util.find_spec("wheel") is None and st < (70, 1):
        pytest.skip("neither `wheel` nor a setuptools with bdist_wheel is installed for %s: "
                    "cannot build the wheel offline" % sys.executable)
    tree = tmp_path / "shmlog"
    shutil.copytree(os.path.join(ROOT, "src"), str(tree / "src"))
    shutil.copytree(os.path.join(ROOT, "include"), str(tree / "include"))
    shutil.copytree(os.path.join(ROOT, "bindings", "python"), str(tree / "bindings" / "python"),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    wheels = tmp_path / "wheels"
    # no build isolation: build with the cffi and setuptools installed here
    # (the tests must not need the network)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(wheels),
                        str(tree / "bindings" / "python")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=600)
    assert r.returncode == 0, r.stdout
    (whl,) = list(wheels.glob("shmlog-*.whl"))
    site = tmp_path / "site"
    zipfile.ZipFile(str(whl)).extractall(str(site))
    name = "test-pip-%d" % os.getpid()
    code = ("import shmlog, sys; assert shmlog.__file__.startswith(sys.argv[1]), shmlog.__file__; "
            "b = shmlog.open(sys.argv[2], create=True); b.write(shmlog.INFO, 't', 'wheel'); "
            "print([r.message for r in shmlog.Reader(sys.argv[2])]); shmlog.remove(sys.argv[2])")
    env = dict(os.environ, PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, "-c", code, str(site), name], env=env, cwd=str(tmp_path),
                         stdout=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "['wheel']", out.stdout
