#!/usr/bin/env bash
# A buffer removed under a running writer (`shmlog rm --force`) and
# created again: `shmlog run` and `shmlog write` (lines on stdin) go on
# logging into the new buffer from their next chunk, and say on stderr
# what happened. Every wait is a bounded poll; the writers are bounded
# loops that also stop when told.
# usage: test_rm_recreate.sh SHMLOG
set -u
S=$(realpath "$1")
B=rmre-test-$$
fail=0 checks=0
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS SHMLOG_DEBUG
has() { # has DESCRIPTION PATTERN TEXT
	checks=$((checks + 1))
	if ! grep -qE -- "$2" <<<"$3"; then
		echo "FAIL: $1: /$2/ not in: $3" >&2; fail=$((fail + 1))
	fi
}
eq() {
	checks=$((checks + 1))
	[ "$2" = "$3" ] || { echo "FAIL: $1: want '$2', got '$3'" >&2; fail=$((fail + 1)); }
}
T=$(mktemp -d)
wpid=
cleanup() {
	touch "$T/stop"
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null
	"$S" rm -b $B --force >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# poll_for PATTERN: until the buffer holds a record matching it (20 s)
poll_for() {
	for _ in $(seq 400); do
		"$S" cat -b $B -v raw 2>/dev/null | grep -qE -- "$1" && return 0
		sleep 0.05
	done
	return 1
}
# The lines a writer prints: "PREFIX N" for N from 0, until told to stop.
LOOP='i=0; while [ ! -e "$1" ] && [ $i -lt 5000000 ]; do echo "$2 $i"; i=$((i + 1)); done'

# one_writer KIND: KIND is run or write
one_writer() {
	local kind=$1
	rm -f "$T/stop" "$T/err"
	"$S" rm -b $B --force >/dev/null 2>&1
	"$S" create -b $B --size 64K || exit 1
	if [ "$kind" = run ]; then
		"$S" run -b $B -t loop -- sh -c "$LOOP" _ "$T/stop" line 2>"$T/err" &
	else
		sh -c "$LOOP" _ "$T/stop" line | "$S" write -b $B -t loop 2>"$T/err" &
	fi
	wpid=$!
	checks=$((checks + 1))
	poll_for '^line [0-9]+$' || { echo "FAIL: $kind: no record before rm" >&2; fail=$((fail + 1)); }

	out=$("$S" rm -b $B 2>&1)
	eq "$kind: rm without --force refused" 1 $?
	has "$kind: rm says why" "live writer.*--force" "$out"
	out=$("$S" rm -b $B --force 2>&1)
	eq "$kind: rm --force" 0 $?
	has "$kind: rm --force says what writers do" "warning: removed buffer '$B' with 1 live writer.*next chunk" "$out"
	"$S" create -b $B --size 64K
	eq "$kind: created again" 0 $?
	checks=$((checks + 1))
	poll_for '^line [0-9]+$' || { echo "FAIL: $kind: nothing in the new buffer" >&2; fail=$((fail + 1)); }
	touch "$T/stop"
	for _ in $(seq 400); do kill -0 $wpid 2>/dev/null || break; sleep 0.05; done
	wait $wpid
	rc=$?
	# run exits with the program's status; write with 1, as lines were
	# dropped while the buffer was missing
	want=0
	[ $kind = write ] && want=1
	eq "$kind: the writer's exit" $want $rc
	wpid=
	err=$(cat "$T/err")
	has "$kind: said when the buffer was removed" "^shmlog $kind: buffer '$B' was removed" "$err"
	has "$kind: said when it was created again" "^shmlog $kind: buffer '$B' was created again" "$err"
	# the new buffer's lines come after the removal: numbers past the
	# first chunk, in order, each once
	nums=$("$S" cat -b $B -v raw | sed -n 's/^line \([0-9]*\)$/\1/p')
	first=$(head -n1 <<<"$nums")
	checks=$((checks + 1))
	[ -n "$first" ] && [ "$first" -gt 0 ] ||
		{ echo "FAIL: $kind: first line after re-creation: '$first'" >&2; fail=$((fail + 1)); }
	eq "$kind: lines in order, none twice" "$nums" "$(sort -n -u <<<"$nums")"
}

one_writer run
one_writer write

echo "$checks checks, $fail failed"
[ $fail -eq 0 ]
