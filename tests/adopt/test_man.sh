#!/usr/bin/env bash
# shmlog(1) documents every command and every long option the CLI accepts
# (read from the option tables in tools/*.c), and the pages build.
# Exits 77 (skipped) after its other checks when scdoc is missing.
# usage: test_man.sh SOURCE_DIR SHMLOG
set -u
src=$1 S=$2
page=$src/docs/man/shmlog.1.scd
fail=0 n=0
for cmd in $("$S" --help | awk '/^commands:/ {on=1; next} on && /^  [a-z]/ {print $1}'); do
	n=$((n + 1))
	grep -q "^## shmlog $cmd\b" "$page" || { echo "FAIL: shmlog(1) lacks the command '$cmd'" >&2; fail=1; }
done
for opt in $(grep -ho '{"[a-z][a-z-]*", *[a-z_]*argument' "$src"/tools/*.c | sed 's/{"\([^"]*\)".*/\1/' | sort -u); do
	n=$((n + 1))
	grep -q -- "--$opt\b" "$page" || { echo "FAIL: shmlog(1) lacks the option --$opt (document it in docs/man/shmlog.1.scd)" >&2; fail=1; }
done
if command -v scdoc >/dev/null; then
	for p in "$src"/docs/man/*.scd; do
		scdoc <"$p" >/dev/null || { echo "FAIL: scdoc rejects $p" >&2; fail=1; }
	done
fi
[ $fail = 0 ] || exit 1
echo "ok: shmlog(1) has the $n commands and options the CLI takes"
if ! command -v scdoc >/dev/null; then
	echo "test_man: skipped: scdoc missing (Debian package scdoc, tools/debian-packages.txt): the pages were not built" >&2
	exit 77
fi
