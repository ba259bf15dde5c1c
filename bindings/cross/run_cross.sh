#!/usr/bin/env bash
# The cross-language test: builds (or reuses) the Python binding and the
# Rust example writer in OUTDIR, then runs test_cross.py. Skips (77) when
# either toolchain is missing.
# usage: run_cross.sh OUTDIR SHMLOG_CLI
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run_cross.sh OUTDIR SHMLOG_CLI}
cli=${2:?usage: run_cross.sh OUTDIR SHMLOG_CLI}

bash "$here/../python/run_tests.sh" "$out/python" --build-only
rc=$?; [ $rc -eq 0 ] || exit $rc
bash "$here/../rust/run_tests.sh" "$out/rust" --build-only
rc=$?; [ $rc -eq 0 ] || exit $rc
py=$(cat "$out/python/python")
PYTHONPATH="$out/python" exec "$py" "$here/test_cross.py" "$cli" "$out/rust/target/debug/examples/write"
