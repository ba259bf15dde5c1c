#!/usr/bin/env bash
# The installed header set (shmlog.h, and the shmlog_reader.h and
# shmlog_macros.h it includes) compiles with -Wall -Wextra -Wshadow
# -pedantic -Werror as C99 (no typed calls: the va_list path), C11, C17
# and C2x (typed calls through _Generic), under each C compiler given that
# exists here; a program that includes shmlog_macros.h or shmlog_reader.h
# on its own is refused with a message. Compile only: the unit tests run
# what the macros do.
# usage: c_standards.sh SOURCE_DIR COMPILER...
set -u
src=$1
shift
fail=0 ran=0
for cc in "$@"; do
	[ -n "$cc" ] && command -v "$cc" >/dev/null || continue
	for std in c99 c11 c17 c2x; do
		# a compiler too old for a standard says so: not a failure
		if ! echo 'int main(void) { return 0; }' |
			"$cc" -std=$std -x c -fsyntax-only - 2>/dev/null; then
			echo "note: $cc has no -std=$std" >&2
			continue
		fi
		ran=$((ran + 1))
		"$cc" -std=$std -fsyntax-only -Wall -Wextra -Wshadow -pedantic \
			-Werror -I"$src/include" "$src/tests/header/header_c.c" ||
			{ echo "FAIL: $cc -std=$std header_c.c" >&2; fail=1; }
	done
	# the machinery and the reader API are not headers of their own
	for part in shmlog_macros.h shmlog_reader.h; do
		out=$(echo "#include \"$part\"" |
			"$cc" -x c -fsyntax-only -I"$src/include" - 2>&1)
		if [ $? = 0 ] || ! grep -q 'include shmlog.h' <<<"$out"; then
			echo "FAIL: $cc accepts $part alone, or says: $out" >&2
			fail=1
		fi
	done
done
[ "$ran" -gt 0 ] || { echo "SKIP: no C compiler among: $*" >&2; exit 77; }
[ "$fail" = 0 ] && echo "ok: $ran compilations"
exit "$fail"
