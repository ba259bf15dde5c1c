#!/usr/bin/env bash
# Existing programs log into shmlog unchanged: a C program calling
# syslog(3) and Python's syslog module, under the LD_PRELOAD shim (by
# `shmlog run --syslog` and by hand), and a program written for Android's
# liblog.
# usage: test_compat.sh SHMLOG SYSLOG_PROG SHIM ANDROID_APP
set -u
S=$1 PROG=$2 SHIM=$3 APP=$4
B=compat-test-$$
fail=0 checks=0
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS SHMLOG_DEBUG SHMLOG_SYSLOG_TAG
has() { # has DESCRIPTION PATTERN TEXT
	checks=$((checks + 1))
	if ! grep -qE -- "$2" <<<"$3"; then
		echo "FAIL: $1: /$2/ not in: $3" >&2; fail=$((fail + 1))
	fi
}
hasnt() {
	checks=$((checks + 1))
	if grep -qE -- "$2" <<<"$3"; then
		echo "FAIL: $1: /$2/ found in: $3" >&2; fail=$((fail + 1))
	fi
}
eq() {
	checks=$((checks + 1))
	[ "$2" = "$3" ] || { echo "FAIL: $1: want '$2', got '$3'" >&2; fail=$((fail + 1)); }
}
dump() { "$S" cat -b $B -v brief; }
cleanup() { "$S" rm -b $B >/dev/null 2>&1; }
trap cleanup EXIT
cleanup
"$S" create -b $B || exit 1

# --- a C program, through `shmlog run --syslog`
checks=$((checks + 1))
nm -D "$PROG" 2>/dev/null | grep -q __syslog_chk ||
	echo "note: $PROG does not call __syslog_chk (no fortify): the plain calls are tested"
err=$("$S" run -b $B --syslog -- "$PROG" 2>&1 >/dev/null)
eq "run --syslog exit" 0 $?
out=$(dump)
pid=$(sed -n 's/^E\/sysprog *( *\([0-9]*\)).*/\1/p' <<<"$out" | head -n1)
has "ident is the tag, LOG_ERR is E, %m expanded" "^E/sysprog *\( *$pid\): open failed: No such file or directory \(100% sure\)$" "$out"
has "LOG_CRIT is F" "^F/sysprog .*: critical 2$" "$out"
has "LOG_NOTICE is I" "^I/sysprog .*: a notice$" "$out"
has "LOG_DEBUG is D" "^D/sysprog .*: a debug$" "$out"
hasnt "setlogmask drops" "masked info" "$out"
has "setlogmask keeps" "^W/sysprog .*: kept warning$" "$out"
has "after closelog: the program's name" "^I/$(basename "$PROG") *\( *$pid\): after closelog$" "$out"
eq "LOG_PERROR's copy is not captured twice" "" "$err$(grep 'sysprog\[' <<<"$out")"

# --- by hand: LD_PRELOAD and $SHMLOG_BUFFER; `shmlog level` applies
"$S" clear -b $B
"$S" level -b $B 'sysprog:W'
err=$(SHMLOG_BUFFER=$B LD_PRELOAD=$SHIM "$PROG" 2>&1)
pid=$("$S" cat -b $B -v json | sed -n 's/.*"pid":\([0-9]*\).*/\1/p' | head -n1)
out=$(dump)
has "LOG_PERROR copies to stderr, with [pid] for LOG_PID" "^sysprog\[$pid\]: open failed: No such file or directory \(100% sure\)$" "$err"
has "LOG_PERROR copies what the mask lets through" "^sysprog\[$pid\]: kept warning$" "$err"
has "preloaded by hand" "^E/sysprog .*: open failed" "$out"
hasnt "the buffer's filter applies" "a notice" "$out"
"$S" level -b $B ''

# --- -t overrides the ident
"$S" clear -b $B
"$S" run -b $B -t forced --syslog -- "$PROG" 2>/dev/null
has "-t overrides the ident" "^E/forced .*: open failed" "$(dump)"

# --- a daemon under `run --syslog --exit-with-child`: run has exited when
# it logs; the shim it inherited logs its syslog(3) calls, the background
# logger its stdout. The daemon waits on a FIFO (no sleeps).
"$S" clear -b $B
T=$(mktemp -d)
mkfifo "$T/go"
"$S" run -b $B -t kid --syslog --exit-with-child -- sh -c \
	'( setsid sh -c "read -r _ < \"\$1\"; echo daemon stdout; exec \"\$2\"" _ "$1" "$2" </dev/null & ); exit 0' \
	_ "$T/go" "$PROG" 2>/dev/null
eq "run --syslog --exit-with-child: the program's status" 0 $?
timeout 20 sh -c 'echo go > "$1"' _ "$T/go"
for _ in $(seq 400); do
	out=$(dump)
	grep -q "output closed" <<<"$out" && grep -q "after closelog" <<<"$out" && break
	sleep 0.05
done
has "the daemon's syslog(3) after run exited" "^E/kid .*: open failed" "$out"
has "its stdout, by the background logger" "^I/kid .*: daemon stdout$" "$out"
has "until it closed it" "^I/kid .*: output closed$" "$out"
rm -rf "$T"

# --- Python's syslog module, the real interpreter
py=$(command -v python3)
if [ -n "$py" ] && "$py" -c 'import syslog' 2>/dev/null; then
	"$S" clear -b $B
	"$S" run -b $B --syslog -- "$py" -c '
import syslog
syslog.openlog("pyapp", syslog.LOG_PID, syslog.LOG_LOCAL0)
syslog.syslog(syslog.LOG_ERR, "from python %d%%")
syslog.syslog("default priority")
syslog.setlogmask(syslog.LOG_UPTO(syslog.LOG_ERR))
syslog.syslog(syslog.LOG_WARNING, "masked")
print("stdout too")
'
	eq "python exit" 0 $?
	out=$(dump)
	has "python: LOG_ERR, ident" "^E/pyapp *\( *[0-9]+\): from python %d%%$" "$out"
	has "python: default priority is INFO" "^I/pyapp .*: default priority$" "$out"
	hasnt "python: setlogmask" "masked" "$out"
	has "python: stdout captured too" "^I/python.*: stdout too$" "$out"
else
	echo "FAIL: python3 with its syslog module is needed (Debian package python3)" >&2
	fail=$((fail + 1))
fi

# --- a program written for Android's liblog
"$S" clear -b $B
"$S" level -b $B 'hushed:I'
SHMLOG_BUFFER=$B "$APP"
eq "android app exit" 0 $?
out=$(dump)
hasnt "ALOGV compiled out (LOG_NDEBUG=1)" "verbose 1" "$out"
has "ALOGD" "^D/droid .*: debug 2$" "$out"
has "ALOGI" "^I/droid .*: info three$" "$out"
has "ALOGW" "^W/droid .*: warn$" "$out"
has "ALOGE_IF" "^E/droid .*: error if$" "$out"
hasnt "ALOGE_IF false" "not logged" "$out"
has "__android_log_write" "^I/raw .*: plain write$" "$out"
has "__android_log_print FATAL" "^F/droid .*: fatal 7$" "$out"
has "__android_log_buf_write main" "^W/buf .*: to main$" "$out"
hasnt "filtered by shmlog level" "filtered out" "$out"
"$S" clear -b $B
SHMLOG_BUFFER=$B "$APP" assert 2>/dev/null
st=$?
eq "LOG_ALWAYS_FATAL_IF aborts (SIGABRT)" 134 $st
has "the assertion is logged at F" "^F/droid .*: broken is 1$" "$(dump)"
"$S" level -b $B ''

echo "test_compat: $checks checks, $fail failed"
[ $fail = 0 ]
