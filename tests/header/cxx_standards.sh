#!/usr/bin/env bash
# The header's C++ part (include/shmlog_cxx.h) and the C++ sources that
# use it compile with -Wall -Wextra -Wshadow -pedantic -Werror (and
# -Wold-style-cast, but for the unit test's own casts) at every
# C++ standard from C++11 (the oldest the header supports) on, under each
# C++ compiler given that exists here (the build's, and clang++ if
# installed). Compile-only: test_fmt_cxx runs what they do.
# usage: cxx_standards.sh SOURCE_DIR COMPILER...
set -u
src=$1
shift
files=(tests/header/header_cxx.cc tests/unit/test_fmt_cxx.cc examples/hello_cxx.cc)
fail=0 ran=0
for cxx in "$@"; do
	[ -n "$cxx" ] && command -v "$cxx" >/dev/null || continue
	for std in c++11 c++14 c++17 c++20; do
		# a compiler too old for a standard says so: not a failure
		if ! echo 'int main() {}' | "$cxx" -std=$std -x c++ -fsyntax-only - 2>/dev/null; then
			echo "note: $cxx has no -std=$std" >&2
			continue
		fi
		for f in "${files[@]}"; do
			# what the macros expand to has no C-style cast: a
			# program built with -Wold-style-cast may use them
			extra=()
			[[ $f == tests/unit/* ]] || extra=(-Wold-style-cast)
			ran=$((ran + 1))
			"$cxx" -std=$std -fsyntax-only -Wall -Wextra -Wshadow \
				-pedantic -Werror -D_GNU_SOURCE "${extra[@]}" \
				-I"$src/include" "$src/$f" ||
				{ echo "FAIL: $cxx -std=$std $f" >&2; fail=1; }
		done
	done
done
[ "$ran" -gt 0 ] || { echo "SKIP: no C++ compiler among: $*" >&2; exit 77; }
[ "$fail" = 0 ] && echo "ok: $ran compilations"
exit "$fail"
