#!/usr/bin/env bash
# Install what building, testing and benchmarking shmlog needs, from
# Debian's archive. The library itself needs libc only. Runs apt-get when
# root and something is missing; otherwise says what to install.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(cmake ninja-build gcc g++ python3 clang libclang-rt-dev)
# Packages each part needs (one per line, '#' comments): the benchmarks,
# the tests, the tools and the bindings each keep their own list.
for f in bench/*/debian-packages.txt tests/*/debian-packages.txt \
	tools/debian-packages.txt bindings/*/debian-packages.txt; do
	[ -f "$f" ] || continue
	while read -r p _; do
		[[ -z "$p" || "$p" == \#* ]] || pkgs+=("$p")
	done < "$f"
done

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
	echo "deps.sh: missing packages: ${missing[*]}" >&2
	echo "deps.sh: going on without them; to have everything:" \
		"sudo apt-get install ${missing[*]}" >&2
	exit 0
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Everything beyond a C compiler and CMake is optional (a benchmark peer, the
# fuzzers, plots): if the archive cannot be reached, say so and go on; the
# build and the tests leave out what is missing, and say so too.
if ! apt-get update -qq || ! apt-get install -y -qq --no-install-recommends \
	"${missing[@]}" >/dev/null; then
	echo "deps.sh: warning: could not install ${missing[*]}; going on" >&2
fi
