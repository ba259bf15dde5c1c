#!/usr/bin/env bash
# cargo test of the Rust binding (shmlog-sys builds the library from this
# tree with the cc crate), with the target directory in OUTDIR. Exits 77
# (CTest: skipped) when no cargo is found, or when the crates (cc, log)
# cannot be fetched from crates.io.
# usage: run_tests.sh OUTDIR [--build-only] [cargo test args...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run_tests.sh OUTDIR [--build-only] [cargo test args...]}
shift
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi

# Which cargo: the first that runs and can fetch the locked crates, trying
# $CARGO, the one on PATH, rustup's usual homes, then Debian's (whose cargo
# may lack the sparse crates.io index and fail to fetch where only that
# is reachable). A rustup proxy that cannot find its toolchains (another
# HOME) is given the RUSTUP_HOME beside it.
runs() { "$1" --version >/dev/null 2>&1; }
pick() { # pick CARGO: 0 if it runs (exporting what it needs)
	local c=$1 home
	runs "$c" && return 0
	home=$(dirname "$(dirname "$(dirname "$c")")") # X of X/.cargo/bin/cargo
	if [ -d "$home/.rustup" ] && RUSTUP_HOME=$home/.rustup CARGO_HOME=$home/.cargo runs "$c"; then
		export RUSTUP_HOME=$home/.rustup CARGO_HOME=$home/.cargo
		return 0
	fi
	return 1
}
cd "$here"
export CARGO_TARGET_DIR="$out/target"
mkdir -p "$out"
cargo="" found="" seen=" "
for cand in "${CARGO:-}" cargo "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" /root/.cargo/bin/cargo /usr/bin/cargo; do
	[ -n "$cand" ] && command -v "$cand" >/dev/null || continue
	cand=$(command -v "$cand")
	case "$seen" in *" $cand "*) continue ;; esac
	seen="$seen$cand "
	(pick "$cand") || continue
	pick "$cand"
	found="$found $cand"
	export PATH="$(dirname "$cand"):$PATH" # its rustc
	if "$cand" fetch --locked -q; then cargo=$cand; break; fi
	echo "rust binding: $cand could not fetch the crates; trying the next cargo"
done
if [ -z "$found" ]; then
	echo "SKIP: no working cargo found (on PATH, in ~/.cargo/bin or /usr/bin);" \
		"install one: apt-get install cargo, or rustup"
	exit 77
fi
if [ -z "$cargo" ]; then
	echo "SKIP: cargo ($found) could not fetch the crates in Cargo.lock (cc, log)" \
		"from crates.io; check the network or a crates.io mirror, then run again"
	exit 77
fi
echo "rust binding: $("$cargo" --version), $(rustc --version 2>/dev/null || echo 'rustc ?')"
if [ "$build_only" = 1 ]; then
	exec "$cargo" build --locked -q --examples
fi
exec "$cargo" test --locked -q "$@"
