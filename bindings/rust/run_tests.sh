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

# cargo on PATH first (rustup's or Debian's), then rustup's usual homes;
# one that cannot say its version (a rustup proxy without its toolchain
# directory, say with another HOME) is passed over
works() { "$1" --version >/dev/null 2>&1; }
cargo=""
for cand in "${CARGO:-}" cargo "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" /root/.cargo/bin/cargo /usr/bin/cargo; do
	[ -n "$cand" ] && command -v "$cand" >/dev/null || continue
	cand=$(command -v "$cand")
	if works "$cand"; then cargo=$cand; break; fi
	home=$(dirname "$(dirname "$(dirname "$cand")")") # X of X/.cargo/bin/cargo
	if [ -d "$home/.rustup" ] && RUSTUP_HOME=$home/.rustup CARGO_HOME=$home/.cargo works "$cand"; then
		export RUSTUP_HOME=$home/.rustup CARGO_HOME=$home/.cargo
		cargo=$cand
		break
	fi
done
if [ -z "$cargo" ]; then
	echo "SKIP: no working cargo found (on PATH, in ~/.cargo/bin or /usr/bin);" \
		"install one: apt-get install cargo, or rustup"
	exit 77
fi
export PATH="$(dirname "$cargo"):$PATH" # its rustc
export CARGO_TARGET_DIR="$out/target"
mkdir -p "$out"
cd "$here"
echo "rust binding: $("$cargo" --version), $(rustc --version 2>/dev/null || echo 'rustc ?')"
if ! "$cargo" fetch --locked -q; then
	echo "SKIP: cargo could not fetch the crates in Cargo.lock (cc, log) from crates.io;" \
		"check the network or a crates.io mirror, then run again"
	exit 77
fi
if [ "$build_only" = 1 ]; then
	exec "$cargo" build --locked -q --examples
fi
exec "$cargo" test --locked -q "$@"
