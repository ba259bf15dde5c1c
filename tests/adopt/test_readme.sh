#!/usr/bin/env bash
# The README's API sample compiles as shown, with -Wall -Werror, and runs.
# usage: test_readme.sh README INCLUDE_DIR LIBRARY C_COMPILER
set -u
readme=$1 inc=$2 lib=$3 cc=${4:-cc}
tmp=$(mktemp -d /tmp/shmlog-readme.XXXXXX)
B=test-readme-$$
trap 'rm -rf "$tmp"; rm -f /dev/shm/shmlog.$B /dev/shm/shmlog.$B-app' EXIT
# the first ```c block after the "## The API" heading
awk '/^## The API/ {api=1} api && /^```c$/ {on=1; next} on && /^```$/ {exit} on' \
	"$readme" >"$tmp/sample.c"
[ -s "$tmp/sample.c" ] || { echo "FAIL: no C sample under '## The API' in $readme" >&2; exit 1; }
"$cc" -Wall -Wextra -Werror -I"$inc" "$tmp/sample.c" -o "$tmp/sample" "$lib" \
	-Wl,-rpath,"$(dirname "$lib")" -pthread ||
	{ echo "FAIL: the README's sample does not compile as shown:" >&2; cat -n "$tmp/sample.c" >&2; exit 1; }
# run it on buffers of its own (its "app" renamed, so as not to touch a
# buffer of that name other people may use)
sed "s/\"app\"/\"$B-app\"/" "$tmp/sample.c" >"$tmp/run.c"
"$cc" -Wall -Werror -I"$inc" "$tmp/run.c" -o "$tmp/run" "$lib" -Wl,-rpath,"$(dirname "$lib")" -pthread ||
	{ echo "FAIL: the renamed sample does not compile" >&2; exit 1; }
SHMLOG_BUFFER=$B "$tmp/run" || { echo "FAIL: the sample exits $?" >&2; exit 1; }
echo "ok: the README's sample ($(wc -l <"$tmp/sample.c") lines) compiles with -Wall -Wextra -Werror and runs"
