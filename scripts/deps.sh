#!/usr/bin/env bash
# Install what building, testing and benchmarking shmlog needs, from
# Debian's archive. The library itself needs libc only; the test suite
# (scripts/test.sh) needs every package named here, and this script fails,
# saying what is missing and what to run, when it cannot have them all.
# As root it installs what is missing with apt-get, waiting up to
# DEPS_LOCK_WAIT seconds (default 300) for another package manager's lock.
# The Rust toolchain is not installed from here (bindings/rust/
# debian-packages.txt says why): without one, bindings_rust is skipped, and
# the suite's summary counts it as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

# package -> the list that asks for it
declare -A from
pkgs=()
want() { [ -n "${from[$1]:-}" ] || pkgs+=("$1"); from[$1]=${from[$1]:-$2}; }
for p in cmake ninja-build gcc g++ python3 clang libclang-rt-dev; do
	want "$p" "scripts/deps.sh (build, fuzzers)"
done
# Packages each part needs (one per line, '#' comments): the benchmarks,
# the tests, the tools and the bindings each keep their own list.
for f in bench/*/debian-packages.txt tests/*/debian-packages.txt \
	tools/debian-packages.txt bindings/*/debian-packages.txt; do
	[ -f "$f" ] || continue
	while read -r p _; do
		[[ -z "$p" || "$p" == \#* ]] || want "$p" "$f"
	done <"$f"
done

missing_now() {
	missing=()
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$p")
	done
}

# Say what is missing, whose it is and what to run; exit 1.
give_up() {
	echo "deps.sh: FAILED: $1; the tests need these packages:" >&2
	for p in "${missing[@]}"; do echo "  $p	(${from[$p]})" >&2; done
	echo "deps.sh: install them, then run the tests again:" >&2
	echo "  sudo apt-get update && sudo apt-get install ${missing[*]}" >&2
	exit 1
}

command -v dpkg-query >/dev/null ||
	{ echo "deps.sh: FAILED: not a Debian-like system (no dpkg-query): install by hand what the debian-packages.txt files list" >&2; exit 1; }
missing_now
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] || give_up "not root, cannot install"
command -v apt-get >/dev/null || give_up "no apt-get"

# apt-get, waiting for another package manager (unattended-upgrades, a
# colleague's apt-get) to let go of its lock, DEPS_LOCK_WAIT seconds in
# all: it says whose lock it waits for (read from /proc/locks), and
# apt-get's DPkg::Lock::Timeout and a second try cover the lock taken
# between that look and apt-get's.
lock_wait=${DEPS_LOCK_WAIT:-300}
deadline=$((SECONDS + lock_wait))
lock_holder() { # the pid holding a package manager's lock, or nothing
	local f ino
	for f in /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock \
		/var/lib/apt/lists/lock /var/cache/apt/archives/lock; do
		ino=$(stat -c %i "$f" 2>/dev/null) || continue
		awk -v ino="$ino" '$2 != "->" { n = split($6, d, ":")
			if (d[n] == ino) { print $5; exit } }' /proc/locks
	done | head -n 1
}
wait_for_lock() {
	local pid said=-30
	while pid=$(lock_holder) && [ -n "$pid" ] && [ $SECONDS -lt $deadline ]; do
		if [ $((SECONDS - said)) -ge 30 ]; then
			echo "deps.sh: waiting for the package lock, held by" \
				"process $pid ($(cat /proc/"$pid"/comm 2>/dev/null || echo gone)):" \
				"$((deadline - SECONDS)) s at most" >&2
			said=$SECONDS
		fi
		sleep 1
	done
}
apt_get() {
	local out
	while :; do
		wait_for_lock
		local left=$((deadline - SECONDS))
		[ $left -gt 0 ] || left=1
		if out=$(apt-get -o DPkg::Lock::Timeout="$left" "$@" 2>&1); then
			return 0
		fi
		if grep -qiE "could not get lock|unable to (acquire|lock)|is held by process" <<<"$out" &&
			[ $SECONDS -lt $deadline ]; then
			echo "deps.sh: another package manager holds the lock;" \
				"waiting, $((deadline - SECONDS)) s at most" >&2
			sleep 5
			continue
		fi
		printf '%s\n' "$out" | tail -n 20 >&2
		return 1
	done
}

echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_get update -qq ||
	echo "deps.sh: apt-get update failed; installing from the lists already here" >&2
apt_get install -y -qq --no-install-recommends "${missing[@]}" || true
missing_now
if [ ${#missing[@]} -gt 0 ]; then
	holder=$(lock_holder)
	[ -z "$holder" ] || give_up "the package lock is still held by process $holder after $lock_wait s (DEPS_LOCK_WAIT)"
	give_up "apt-get could not install them (its messages are above)"
fi
echo "deps.sh: installed"
