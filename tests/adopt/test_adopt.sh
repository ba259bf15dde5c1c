#!/usr/bin/env bash
# Existing programs log into shmlog unchanged: `shmlog run` (priorities,
# <N> prefixes, pid, exit status, signals, partial and long lines), logger's
# priority names for `shmlog write -p`, and buffers never created by a typo.
# The checks as another user need root and setpriv: without them the test
# runs the rest and exits 77 (skipped).
# usage: test_adopt.sh PATH_TO_SHMLOG
set -u
S=${1:?usage: test_adopt.sh PATH_TO_SHMLOG}
B=adopt-test-$$
fail=0 checks=0
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS SHMLOG_DEBUG

. "$(dirname "$0")/../cli/checks.sh"
dump() { "$S" cat -b $B -v brief; }
reset() { "$S" clear -b $B; }
cleanup() {
	[ -n "${runpid:-}" ] && kill "$runpid" 2>/dev/null
	[ -z "${other_dir:-}" ] || rm -rf "$other_dir"
	"$S" rm -b $B >/dev/null 2>&1; "$S" rm -b $B-typo >/dev/null 2>&1
	"$S" rm -b $B-made >/dev/null 2>&1
}
trap cleanup EXIT
cleanup
ok "create" "$S" create -b $B

# --- buffers are created on purpose only
bad "write -b TYPO" "does not exist.*shmlog create -b $B-typo.*--create" \
	"$S" write -b $B-typo "lost"
[ -e /dev/shm/shmlog.$B-typo ] && { echo "FAIL: write -b TYPO created it" >&2; fail=$((fail + 1)); }
bad "run -b TYPO" "does not exist" "$S" run -b $B-typo -- true
ok "write --create" "$S" write -b $B-made --create "made"
has "--create made it" "made" "$("$S" cat -b $B-made)"

# --- write -p: logcat's letters and numbers, logger's names
for p in "emerg F" "alert F" "crit F" "err E" "error E" "warning W" "warn W" \
	"notice I" "info I" "debug D" "user.err E" "local3.debug D" "daemon.notice I" \
	"3 E" "6 I" "7 D" "0 F" "W W" "verbose V"; do
	set -- $p
	reset
	ok "write -p $1" "$S" write -b $B -p "$1" -t prio "as $1"
	same "write -p $1 gives $2" "$2/prio" "$(dump | cut -d' ' -f1)"
done
bad "bad facility" "bad priority.*facility.level" "$S" write -b $B -p nosuch.err x
bad "bad level" "bad priority" "$S" write -b $B -p user.loud x
has "help says numbers are syslog's" "syslog's numbers 0" "$("$S" write --help)"
bad "Android's numbers refused" "not Android's" "$S" write -b $B -p 8 x
bad "unknown option says try --help" "try .shmlog write --help" "$S" write -b $B --frob

# --- write obeys `shmlog level`, --no-filter bypasses it
reset
ok "level" "$S" level -b $B 'quiet:S'
ok "write filtered" "$S" write -b $B -t quiet "dropped"
ok "write --no-filter" "$S" write -b $B -t quiet --no-filter "kept"
out=$(dump)
hasnt "filtered write dropped" "dropped" "$out"
has "--no-filter kept" "kept" "$out"
ok "level reset" "$S" level -b $B ''

# --- run: stdout at I, stderr at W, <N> prefixes, pid, exit status
reset
"$S" run -b $B -- sh -c 'echo "pid $$"; echo to-err >&2; echo "<3>an error"; echo "<7>a debug"; echo "<9>not a level"; exit 3'
same "run passes the exit status" 3 $?
out=$(dump)
pid=$(sed -n 's/.*: pid \([0-9]*\)$/\1/p' <<<"$out")
has "stdout at I" "^I/sh *\( *$pid\): pid $pid$" "$out"
has "stderr at W" "^W/sh *\( *$pid\): to-err$" "$out"
has "<3> is E" "^E/sh *\( *$pid\): an error$" "$out"
has "<7> is D" "^D/sh *\( *$pid\): a debug$" "$out"
has "<9> stays text" "^I/sh .*: <9>not a level$" "$out"
has "exit logged, with the child's pid" "^W/sh *\( *$pid\): exited with status 3$" "$out"

reset
ok "run -t -p --stderr-priority --no-level-prefix" "$S" run -b $B -t tool -p D --stderr-priority E --no-level-prefix -- sh -c 'echo "<3>o"; echo e >&2'
out=$(dump)
has "-p D" "^D/tool .*: <3>o$" "$out"
has "--stderr-priority E" "^E/tool .*: e$" "$out"
has "exit 0 at I" "^I/tool .*: exited with status 0$" "$out"

# partial last line, long lines split, empty lines kept
reset
long=$(head -c 9000 /dev/zero | tr '\0' 'x')
ok "run long" "$S" run -b $B -t long -- sh -c "printf 'a\n\nb\n%s\nend-without-newline' $long"
out=$("$S" cat -b $B -v raw)
same "records of long output" "a||b|4000|4000|1000|end-without-newline|exited with status 0" \
	"$(awk '{ if (length($0) > 100) printf "%s%d", sep, length($0); else printf "%s%s", sep, $0; sep="|" }' <<<"$out")"

# a signal that kills the program: 128+N, logged as E
reset
"$S" run -b $B -t sig -- sh -c 'kill -SEGV $$'
same "killed: 128+11" 139 $?
has "killed is logged" "^E/sig .*killed by signal 11" "$(dump)"

# signals sent to `shmlog run` reach the program
reset
"$S" run -b $B -t trap -- sh -c 'trap "echo got TERM; exit 7" TERM; echo ready; while :; do sleep 0.05; done' &
runpid=$!
for _ in $(seq 200); do grep -q ready <<<"$(dump)" && break; sleep 0.05; done
kill -TERM $runpid
wait $runpid
same "forwarded TERM: the program's status" 7 $?
runpid=
out=$(dump)
has "the program handled TERM" "got TERM" "$out"
has "and its status is logged" "exited with status 7" "$out"

# a program that cannot run
reset
bad "missing program" "cannot run 'no-such-program-xyz'.*not found" "$S" run -b $B -- no-such-program-xyz
"$S" run -b $B -- no-such-program-xyz 2>/dev/null
same "missing program: 127" 127 $?
has "and it is logged" "cannot run" "$(dump)"
bad "run without command" "no command given" "$S" run -b $B
has "run --help" "--stderr-priority" "$("$S" run --help)"
# options end at the command
reset
ok "run without --" "$S" run -b $B echo -n -e 'x\ty'
has "the command's own options" "x	y" "$(dump)"

# --- as another user: a group not theirs, a buffer not theirs (a copy of
# the CLI that user can reach, wherever the build tree is)
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	skip "the checks as another user: need root and setpriv (Debian package util-linux)"
elif other_user_cli "$S" 54321; then
	O=$other_dir/shmlog
	bad "--group not a member" "not a member of group 54322.*sudo shmlog create" \
		as_other "$O" create -b $B-typo --group 54322
	[ -e /dev/shm/shmlog.$B-typo ] && { echo "FAIL: a refused create left a file" >&2; fail=$((fail + 1)); }
	bad "rm of root's buffer" "cannot remove.*belongs to user root.*sudo shmlog rm" \
		as_other "$O" rm -b $B
	hasnt "rm does not suggest the same rm" "^.*\(\`shmlog rm -b $B\`\)" "$out"
	ok "the user's own buffer" as_other "$O" create -b $B-typo
	ok "removed by its owner" as_other "$O" rm -b $B-typo
fi

finish test_adopt
