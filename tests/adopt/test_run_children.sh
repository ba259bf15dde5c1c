#!/usr/bin/env bash
# `shmlog run` and the program's children: a background job, a daemon
# (double fork and setsid) and anything else that still holds the
# program's output after it exited is read to the end: every line logged,
# no writer killed by SIGPIPE, run's status the program's, and the log
# saying what happened. Also --exit-with-child and SIGTERM, which hand the
# output to a background logger, and a program that closes stdout early.
# Every wait is a bounded poll; the children go on a FIFO handshake.
# usage: test_run_children.sh PATH_TO_SHMLOG
set -u
S=${1:?usage: test_run_children.sh PATH_TO_SHMLOG}
B=runkids-test-$$
fail=0 checks=0
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS SHMLOG_DEBUG

. "$(dirname "$0")/../cli/checks.sh"
T=$(mktemp -d)
N=500 # lines each child writes after the program exited
cleanup() {
	[ -n "${runpid:-}" ] && kill "$runpid" 2>/dev/null
	# release any child still waiting for its go: it ends, and so does
	# the background logger following it
	for f in "$T"/go*; do
		[ -p "$f" ] && timeout 2 bash -c 'echo > "$1"' _ "$f" 2>/dev/null
	done
	"$S" rm -b $B >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
"$S" create -b $B --size 1M || exit 1

# writer.sh GO STATUS WHAT: wait for a line on the FIFO GO, write $N lines
# "WHAT line I" to stdout and "WHAT done" to stderr, and record in STATUS
# how that ended (141: killed by SIGPIPE).
cat >"$T/writer.sh" <<EOF
#!/usr/bin/env bash
( read -r _ < "\$1"; for ((i = 1; i <= $N; i++)); do echo "\$3 line \$i"; done; echo "\$3 done" >&2 )
echo \$? > "\$2"
EOF
chmod +x "$T/writer.sh"
W=$T/writer.sh

dump() { "$S" cat -b $B -v brief; }
# wait_for PATTERN: poll the buffer until PATTERN shows up (20 s bound)
wait_for() {
	for _ in $(seq 400); do
		grep -qE -- "$1" <<<"$(dump)" && return 0
		sleep 0.05
	done
	echo "FAIL: '$1' never logged: $(dump)" >&2; fail=$((fail + 1))
	return 1
}
go() { timeout 20 bash -c 'echo go > "$1"' _ "$1" || {
	echo "FAIL: nobody waits on $1" >&2; fail=$((fail + 1)); }; }
# wait_status FILE: the writer's status once it has ended (20 s bound)
wait_status() {
	for _ in $(seq 400); do
		[ -s "$1" ] && { cat "$1"; return; }
		sleep 0.05
	done
	echo "none"
}
# lines WHAT: are all $N lines of WHAT logged, in order, once each?
lines() {
	same "$1: every line, in order" \
		"$(seq -f "$1 line %g" 1 $N)" \
		"$("$S" cat -b $B -v raw | grep "^$1 line ")"
	has "$1: its stderr" "^W/[^ ]+ .*: $1 done$" "$(dump)"
}

# --- a background job: run waits for it, exits with the program's status
mkfifo "$T/go-job"
timeout 60 "$S" run -b $B -t job -- bash -c '"$0" "$@" & exit 3' "$W" "$T/go-job" "$T/st-job" job &
runpid=$!
wait_for "^W/job .*: exited with status 3; [0-9]+ descendants? still holds? its output: following it until it is closed$"
go "$T/go-job"
wait $runpid
same "background job: run's status is the program's" 3 $?
runpid=
same "background job: not killed by SIGPIPE" 0 "$(wait_status "$T/st-job")"
lines job
has "background job: the end is logged" "^I/job .*: output closed$" "$(dump)"
same "background job: 'output closed' comes last" "output closed" \
	"$("$S" cat -b $B -v raw job:V '*:S' | tail -n1)"

# --- a daemon: double fork, setsid, stdin from /dev/null
"$S" clear -b $B
mkfifo "$T/go-daemon"
timeout 60 "$S" run -b $B -t daemon -- bash -c '( setsid "$0" "$@" </dev/null & ); exit 0' \
	"$W" "$T/go-daemon" "$T/st-daemon" daemon &
runpid=$!
wait_for "^I/daemon .*: exited with status 0; [0-9]+ descendants? still holds? its output: following"
go "$T/go-daemon"
wait $runpid
same "daemon: run's status" 0 $?
runpid=
same "daemon: not killed by SIGPIPE" 0 "$(wait_status "$T/st-daemon")"
lines daemon
has "daemon: the end is logged" "^I/daemon .*: output closed$" "$(dump)"

# --- a program that closes its stdout early, then writes to stderr
"$S" clear -b $B
ok "stdout closed early" timeout 60 "$S" run -b $B -t closer -- bash -c \
	'echo before; exec 1>&-; for ((i = 1; i <= 100; i++)); do echo "err $i" >&2; done; exit 0'
out=$("$S" cat -b $B -v raw)
has "closer: stdout before closing" "^before$" "$out"
same "closer: every stderr line" "$(seq -f "err %g" 1 100)" "$(grep '^err ' <<<"$out")"
same "closer: exit logged last, nothing followed" "exited with status 0" "$(tail -n1 <<<"$out")"

# --- --exit-with-child: run exits at once (even in $(...)); a background
# logger takes the rest
"$S" clear -b $B
mkfifo "$T/go-ewc"
out=$(timeout 30 "$S" run -b $B -t ewc --exit-with-child -- bash -c '"$0" "$@" & exit 5' \
	"$W" "$T/go-ewc" "$T/st-ewc" ewc)
same "--exit-with-child: the program's status, not held by \$(...)" 5 $?
same "--exit-with-child: nothing on run's stdout" "" "$out"
has "--exit-with-child: says what it did" \
	"^W/ewc .*: exited with status 5; [0-9]+ descendants? still holds? its output: --exit-with-child: a background shmlog run follows it" \
	"$(dump)"
go "$T/go-ewc"
same "--exit-with-child: not killed by SIGPIPE" 0 "$(wait_status "$T/st-ewc")"
wait_for "^I/ewc .*: output closed$"
lines ewc

# --- SIGTERM while run follows the descendants: it exits with the
# program's status; the background logger takes the rest
"$S" clear -b $B
mkfifo "$T/go-term"
# --foreground: timeout passes the TERM to run alone, not to its group
timeout --foreground 60 "$S" run -b $B -t term -- bash -c '"$0" "$@" & exit 0' "$W" "$T/go-term" "$T/st-term" term &
runpid=$!
wait_for "^I/term .*: following it until it is closed$"
kill -TERM $runpid
wait $runpid
same "SIGTERM while following: the program's status" 0 $?
runpid=
has "SIGTERM: says what it did" "^I/term .*: asked to stop \(SIGINT/SIGTERM\); [0-9]+ descendants? still holds? its output: a background shmlog run follows it" "$(dump)"
go "$T/go-term"
same "SIGTERM: not killed by SIGPIPE" 0 "$(wait_status "$T/st-term")"
wait_for "^I/term .*: output closed$"
lines term

echo "$checks checks, $fail failed"
exit $((fail > 0))
