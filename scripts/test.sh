#!/usr/bin/env bash
# The whole test suite: installs what it needs, then builds and runs the
# tests three times: a plain build (with the benchmarks' quick smoke runs),
# ASan+UBSan, and TSan for the threaded tests, and the fuzz targets with
# clang; Release and Debug builds are compiled too. Long stress runs are left
# out (ctest -L long runs them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

jobs=$(nproc)
suite() { # suite NAME CTEST_ARGS -- CMAKE_ARGS
	local name=$1; shift
	local ctest_args=()
	while [ "$1" != "--" ]; do ctest_args+=("$1"); shift; done
	shift
	echo "=== $name build ==="
	cmake -S . -B "build-$name" -G Ninja "$@" >/dev/null
	cmake --build "build-$name" -j "$jobs"
	echo "=== $name tests ==="
	ctest --test-dir "build-$name" --output-on-failure -j "$jobs" "${ctest_args[@]}" |
		tee "build-$name/ctest.log"
	local n
	n=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "build-$name/ctest.log")
	total=$((total + ${n:-0}))
}
total=0

suite plain -LE long -- -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The other build types users pick compile too, benchmarks included
# (Release is what the benchmarks ask for; GCC warns differently at -O0
# and -O3, and every warning is an error).
for type in Release Debug; do
	echo "=== $type build (compiles, warnings as errors) ==="
	cmake -S . -B "build-$type" -G Ninja -DCMAKE_BUILD_TYPE=$type >/dev/null
	cmake --build "build-$type" -j "$jobs"
done
suite asan -LE 'long|bench' -- -DCMAKE_BUILD_TYPE=Debug \
	-DSHMLOG_SANITIZE=address,undefined -DSHMLOG_BUILD_BENCH=OFF
suite tsan -L 'unit|stress' -LE long -- -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DSHMLOG_SANITIZE=thread -DSHMLOG_BUILD_BENCH=OFF
if command -v clang >/dev/null; then suite fuzz -L fuzz -- -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSHMLOG_FUZZ=ON -DSHMLOG_BUILD_BENCH=OFF; else echo "=== fuzz: skipped, clang not installed ==="; fi
echo "=== all suites passed ==="
echo "suites: $total passed, 0 failed"
