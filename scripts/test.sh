#!/usr/bin/env bash
# The whole test suite (docs/testing.md): installs what it needs
# (scripts/deps.sh, which fails when it cannot), then builds and runs each
# suite: a plain build (with the benchmarks' quick smoke runs), Release and
# Debug builds compiled, ASan+UBSan, TSan for the threaded tests, and the
# fuzz targets with clang. Long runs and the tests that need a quiet
# machine are left out (ctest -L long, ctest -L perf).
#
# Every suite runs, whatever the others did. Each prints its result, and
# the last line counts over all suites, alone on its line:
#   N passed, N failed, N skipped
# read from ctest's line for each test: a test skipped (exit 77: it could
# not run its checks here, and said why) is never counted as passed; a
# configure or build that fails counts as one failed test, a compile-only
# build that succeeds as one passed. Exits 1 if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
passed=0 failed=0 skipped=0 started=$SECONDS
report=() # one line per suite, repeated at the end

tally() { # tally NAME PASSED FAILED SKIPPED DETAIL
	passed=$((passed + $2)) failed=$((failed + $3)) skipped=$((skipped + $4))
	local line
	# not the final line's form, which CI looks for alone on its line
	line=$(printf '%-8s passed %4d, failed %d, skipped %d in %4d s%s' "$1" "$2" "$3" "$4" \
		$((SECONDS - started)) "$5")
	report+=("$line")
	echo "=== $line ==="
}

# configure and build @dir; on failure, say so and count one failure
build() { # build NAME DIR CMAKE_ARGS...
	local name=$1 dir=$2; shift 2
	started=$SECONDS
	echo "=== $name: build ==="
	mkdir -p "$dir"
	if ! cmake -S . -B "$dir" -G Ninja "$@" >"$dir/configure.log" 2>&1; then
		cat "$dir/configure.log"
		tally "$name" 0 1 0 " (cmake failed: $dir/configure.log)"
		return 1
	fi
	if ! cmake --build "$dir" -j "$jobs" >"$dir/build.log" 2>&1; then
		cat "$dir/build.log"
		tally "$name" 0 1 0 " (build failed: $dir/build.log)"
		return 1
	fi
}

suite() { # suite NAME CTEST_ARGS... -- CMAKE_ARGS...
	local name=$1; shift
	local ctest_args=()
	while [ "$1" != "--" ]; do ctest_args+=("$1"); shift; done
	shift
	local dir=build-$name
	build "$name" "$dir" "$@" || return 0
	echo "=== $name: tests ==="
	ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${ctest_args[@]}" 2>&1 |
		tee "$dir/ctest.log"
	local rc=${PIPESTATUS[0]}
	# "  3/96 Test  #3: name ....   Passed    0.10 sec", or ***Failed,
	# ***Skipped, ***Timeout, ***Not Run, ***Exception: ..., and
	# "***Not Run (Disabled)" for a test this build leaves out by design
	local counts
	counts=$(awk '
		/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
			name = $4
			if ($0 ~ /\.\.\. *Passed +[0-9.]+ sec$/) p++
			else if ($0 ~ /\*\*\*Skipped +[0-9.]+ sec$/) { s++; sn = sn " " name }
			else if ($0 ~ /\*\*\*Not Run \(Disabled\)/) { d++; dn = dn " " name }
			else { f++; fn = fn " " name }
		}
		END { printf "%d %d %d %d|%s|%s|%s\n", p, f, s, d, fn, sn, dn }' "$dir/ctest.log")
	local p f s d names fn sn dn
	read -r p f s d <<<"${counts%%|*}"
	names=${counts#*|}
	fn=${names%%|*} names=${names#*|}
	sn=${names%%|*} dn=${names#*|}
	local detail=""
	[ -z "$fn" ] || detail+=" (failed:$fn)"
	[ -z "$sn" ] || detail+=" (skipped:$sn)"
	[ -z "$dn" ] || detail+=" ($d left out of this build:$dn)"
	# ctest failing with no failed test (no tests found, a crash of
	# ctest) is a failure too, and so is a suite that ran nothing
	if [ "$f" -eq 0 ] && { [ "$rc" -ne 0 ] || [ $((p + s)) -eq 0 ]; }; then
		f=1 detail+=" (ctest exited $rc after $((p + s)) tests: $dir/ctest.log)"
	fi
	tally "$name" "$p" "$f" "$s" "$detail"
}

echo "=== deps ==="
if ! bash scripts/deps.sh; then
	echo "=== deps: FAILED: the tests cannot run without those packages ==="
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

# perf: tests whose bounds only a quiet machine meets (docs/testing.md)
# Every suite has zstd (shmlog archive --zstd, and its reading);
# the Debug build shows the library still builds with libc alone.
zstd=-DSHMLOG_ZSTD=ON
suite plain -LE 'long|perf' -- -DCMAKE_BUILD_TYPE=RelWithDebInfo $zstd
# The other build types users pick compile too, benchmarks included
# (Release is what the benchmarks ask for; GCC warns differently at -O0
# and -O3, and every warning is an error).
build Release build-Release -DCMAKE_BUILD_TYPE=Release $zstd &&
	tally Release 1 0 0 " (compiles, warnings as errors)"
build Debug build-Debug -DCMAKE_BUILD_TYPE=Debug -DSHMLOG_ZSTD=OFF &&
	tally Debug 1 0 0 " (compiles without zstd, warnings as errors)"
suite asan -LE 'long|bench|perf' -- -DCMAKE_BUILD_TYPE=Debug $zstd \
	-DSHMLOG_SANITIZE=address,undefined -DSHMLOG_BUILD_BENCH=OFF
suite tsan -L 'unit|stress' -LE 'long|perf' -- -DCMAKE_BUILD_TYPE=RelWithDebInfo $zstd \
	-DSHMLOG_SANITIZE=thread -DSHMLOG_BUILD_BENCH=OFF
# clang is one of the packages deps.sh insists on
suite fuzz -L fuzz -- -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ $zstd \
	-DSHMLOG_FUZZ=ON -DSHMLOG_BUILD_BENCH=OFF

echo
echo "=== suites ==="
printf '%s\n' "${report[@]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
