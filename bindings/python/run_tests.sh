#!/usr/bin/env bash
# Build the Python binding into OUTDIR (the cffi extension, with the
# library's sources compiled in, next to a copy of the package) and run its
# tests with pytest. Exits 77 (CTest: skipped) when no python3 with cffi,
# pytest and the Python headers is found, or when a test skipped itself (a
# module it needs is missing: tests/conftest.py); the others run first.
# usage: run_tests.sh OUTDIR [--build-only] [pytest args...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run_tests.sh OUTDIR [--build-only] [pytest args...]}
shift
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi

# the python3 on PATH (pyenv, venv, ...) first, then Debian's: the first
# that has all the tests need (the wheel's test also needs pip, setuptools
# and wheel, or a setuptools that builds wheels itself), else the first
# that can build and run the others
py="" partial=""
for cand in "${SHMLOG_PYTHON:-}" python3 /usr/bin/python3; do
	[ -n "$cand" ] && command -v "$cand" >/dev/null || continue
	"$cand" - <<'PY' 2>/dev/null
import os, sys, sysconfig
import cffi, pytest
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
PY
	[ $? -eq 0 ] || continue
	[ -n "$partial" ] || partial=$(command -v "$cand")
	if "$cand" - <<'PY' 2>/dev/null; then py=$(command -v "$cand"); break; fi
import importlib.metadata, importlib.util, sys
import setuptools, pip  # setuptools first: it replaces distutils
v = tuple(int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
sys.exit(importlib.util.find_spec("wheel") is None and v < (70, 1))
PY
done
py=${py:-$partial}
if [ -z "$py" ]; then
	echo "SKIP: no python3 with cffi, pytest and the Python headers;" \
		"install them: apt-get install python3-cffi python3-pytest python3-dev"
	exit 77
fi

mkdir -p "$out/shmlog"
# rebuild the extension when the library, the header or the builder changed
# since the last build (or another python3 is used)
so=$(ls "$out"/shmlog/_shmlog_cffi*.so 2>/dev/null | head -n 1 || true)
if [ -z "$so" ] || [ "$(cat "$out/python" 2>/dev/null)" != "$py" ] ||
	[ -n "$(find "$here/shmlog_build.py" "$here/../../src" "$here/../../include" \
		-newer "$so" -print -quit)" ]; then
	echo "python binding: building with $py ($("$py" --version 2>&1))"
	"$py" "$here/shmlog_build.py" "$out"
fi
cp "$here"/shmlog/*.py "$out/shmlog/"
echo "$py" >"$out/python"
[ "$build_only" = 1 ] && exit 0

# from OUTDIR, so that the built package is the one imported
cd "$out"
PYTHONPATH="$out" exec "$py" -m pytest -q -rs -p no:cacheprovider "$here/tests" "$@"
