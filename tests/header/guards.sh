#!/usr/bin/env bash
# Every header in the tree has its own include guard: two headers with the
# same guard compile as long as nobody includes both, then one silently
# hides the other (an internal src/reader.h and the public
# shmlog_reader.h did). A guard is an `#ifndef X` whose next line is
# `#define X`.
# usage: guards.sh SOURCE_DIR
src=${1:?usage: guards.sh SOURCE_DIR}
cd "$src" || exit 1
dups=$(find include src tools bench compat common tests bindings \
		-name '*.h' -not -path '*/target/*' 2>/dev/null |
	sort | while read -r f; do
		awk -v f="$f" '
			prev != "" && $1 == "#define" && $2 == prev { print prev, f; exit }
			{ prev = ($1 == "#ifndef") ? $2 : "" }' "$f"
	done | sort | awk '{ n[$1]++; files[$1] = files[$1] " " $2 }
		END { for (g in n) if (n[g] > 1) print g ":" files[g] }')
if [ -n "$dups" ]; then
	echo "FAIL: include guards used by more than one header:" >&2
	echo "$dups" >&2
	exit 1
fi
echo "ok: every header's include guard is its own"
