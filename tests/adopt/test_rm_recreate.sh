#!/usr/bin/env bash
# A buffer removed under a running writer (`shmlog rm --force`) and
# created again: `shmlog run` and `shmlog write` (lines on stdin) go on
# logging into the new buffer, and say on stderr what happened, once.
# A writer that prints without pause and one that prints a line every
# 100 ms into a buffer of 16 KiB chunks (which it would take minutes to
# fill: the library alone says -ESTALE only once the chunk is used up)
# both move within a bounded time. Every wait is a bounded poll; the
# writers are bounded loops that also stop when told.
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
# poll_for PATTERN [SECS]: until the buffer holds a record matching it
# (20 s unless SECS)
poll_for() {
	local end=$((SECONDS + ${2:-20}))
	while [ $SECONDS -lt $end ]; do
		"$S" cat -b $B -v raw 2>/dev/null | grep -qE -- "$1" && return 0
		sleep 0.05
	done
	return 1
}
# The lines a writer prints: "PREFIX N" for N from 0, until told to stop.
LOOP='i=0; while [ ! -e "$1" ] && [ $i -lt 5000000 ]; do echo "$2 $i"; i=$((i + 1)); done'
# The same, a line every 100 ms (the pace of the workload, not a wait).
SLOW='i=0; while [ ! -e "$1" ] && [ $i -lt 3000 ]; do echo "$2 $i"; i=$((i + 1)); sleep 0.1; done'

# one_writer KIND PACE: KIND is run or write, PACE fast (LOOP, a 64 KiB
# buffer) or slow (SLOW, a 1 MiB one: 16 KiB chunks)
one_writer() {
	local kind=$1 pace=$2 size=64K loop=$LOOP bound=20
	if [ "$pace" = slow ]; then
		size=1M loop=$SLOW bound=10
	fi
	local what="$kind, $pace"
	rm -f "$T/stop" "$T/err"
	"$S" rm -b $B --force >/dev/null 2>&1
	"$S" create -b $B --size $size || exit 1
	if [ "$kind" = run ]; then
		"$S" run -b $B -t loop -- sh -c "$loop" _ "$T/stop" line 2>"$T/err" &
	else
		sh -c "$loop" _ "$T/stop" line | "$S" write -b $B -t loop 2>"$T/err" &
	fi
	wpid=$!
	checks=$((checks + 1))
	poll_for '^line [0-9]+$' || { echo "FAIL: $what: no record before rm" >&2; fail=$((fail + 1)); }

	out=$("$S" rm -b $B 2>&1)
	eq "$what: rm without --force refused" 1 $?
	has "$what: rm says why" "live writer.*--force" "$out"
	out=$("$S" rm -b $B --force 2>&1)
	eq "$what: rm --force" 0 $?
	has "$what: rm --force says what writers do" "warning: removed buffer '$B' with 1 live writer.*within 100 ms" "$out"
	"$S" create -b $B --size $size
	eq "$what: created again" 0 $?
	checks=$((checks + 1))
	poll_for '^line [0-9]+$' $bound ||
		{ echo "FAIL: $what: nothing in the new buffer within ${bound}s" >&2; fail=$((fail + 1)); }
	touch "$T/stop"
	for _ in $(seq 400); do kill -0 $wpid 2>/dev/null || break; sleep 0.05; done
	wait $wpid
	rc=$?
	# run exits with the program's status; write with 1, as lines may
	# have been lost while the buffer was missing
	want=0
	[ $kind = write ] && want=1
	eq "$what: the writer's exit" $want $rc
	wpid=
	err=$(cat "$T/err")
	# it looked before the buffer was back ("was removed", then "was
	# created again") or after ("was removed and created again"): either
	# way it says it moved, once
	has "$what: said the buffer was removed" "^shmlog $kind: buffer '$B' was removed" "$err"
	has "$what: said it was created again" "^shmlog $kind: buffer '$B' was (removed and )?created again: logging" "$err"
	eq "$what: said it once" 1 "$(grep -c 'created again: logging' <<<"$err")"
	eq "$what: said the removal once" 1 "$(grep -c "buffer '$B' was removed" <<<"$err")"
	# the new buffer's lines come after the removal: numbers past the
	# first ones, in order, each once
	nums=$("$S" cat -b $B -v raw | sed -n 's/^line \([0-9]*\)$/\1/p')
	first=$(head -n1 <<<"$nums")
	checks=$((checks + 1))
	[ -n "$first" ] && [ "$first" -gt 0 ] ||
		{ echo "FAIL: $what: first line after re-creation: '$first'" >&2; fail=$((fail + 1)); }
	eq "$what: lines in order, none twice" "$nums" "$(sort -n -u <<<"$nums")"
}

one_writer run fast
one_writer write fast
one_writer run slow
one_writer write slow

echo "$checks checks, $fail failed"
[ $fail -eq 0 ]
