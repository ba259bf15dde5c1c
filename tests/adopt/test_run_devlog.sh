#!/usr/bin/env bash
# `shmlog run --syslog` catches programs that send to /dev/log themselves,
# with no syslog daemon: the real logger(1) in each of its formats and
# Python's logging.handlers.SysLogHandler, as root and as an unprivileged
# user (a user namespace), and says why when it cannot.
# Exits 77 when this machine gives us no mount namespace.
# usage: test_run_devlog.sh SHMLOG
set -u
S=$(realpath "$1")
B=devlog-test-$$
fail=0 checks=0
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS SHMLOG_DEBUG SHMLOG_SYSLOG_TAG XDG_RUNTIME_DIR
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
for p in logger python3; do
	command -v $p >/dev/null || { echo "SKIP: $p not installed" >&2; exit 77; }
done
T=$(mktemp -d)
chmod 0755 "$T"
export TMPDIR=$T/tmp
mkdir -m 1777 "$TMPDIR"
dump() { "$S" cat -b $B -v brief; }
cleanup() { "$S" rm -b $B >/dev/null 2>&1; rm -rf "$T"; }
trap cleanup EXIT
"$S" rm -b $B >/dev/null 2>&1
"$S" create -b $B || exit 1

# --- logger(1) as an administrator types it; the records carry logger's pid
err=$(timeout 60 "$S" run -b $B --syslog -- logger -t mylogger -p user.err hello 2>&1)
rc=$?
if grep -q "cannot give the program a /dev/log" <<<"$err"; then
	echo "SKIP: no mount namespace here: $err" >&2
	exit 77
fi
eq "run --syslog -- logger: exit" 0 $rc
eq "run --syslog -- logger: nothing on stderr" "" "$err"
out=$(dump)
pid=$(sed -n 's/^I\/logger *( *\([0-9]*\)): exited with status 0$/\1/p' <<<"$out")
has "logger's message, tag and priority, with logger's pid" "^E/mylogger *\( *$pid\): hello$" "$out"
eq "the socket's directory is removed" "" "$(ls -A "$TMPDIR")"

# --- logger's formats; -t of run overrides the tags
"$S" clear -b $B
timeout 60 "$S" run -b $B --syslog -- sh -c '
	logger --rfc5424 -t five -p local0.warning "in 5424"
	logger --rfc3164 -t three -p daemon.debug "in 3164, with the host name"
	logger -i -t withpid -p user.crit "with [pid]"
	logger -t multi "line one
line two"
	logger -p user.info "no tag given"
	' 2>&1
out=$(dump)
has "RFC 5424: APP-NAME is the tag, warning is W" "^W/five *\( *[0-9]+\): in 5424$" "$out"
has "RFC 3164 with a host name: host dropped, debug is D" "^D/three *\( *[0-9]+\): in 3164, with the host name$" "$out"
has "TAG[PID]: the tag without the pid, crit is F" "^F/withpid *\( *[0-9]+\): with \[pid\]$" "$out"
has "logger sends each line of its message on its own" "^I/multi .*: line two$" "$out"
has "logger's default tag is its user's name" "^I/$(id -un) *\( *[0-9]+\): no tag given$" "$out"
"$S" clear -b $B
timeout 60 "$S" run -b $B -t forced --syslog -- logger -t mine overridden 2>&1
has "-t overrides the datagram's tag" "^I/forced .*: overridden$" "$(dump)"

# --- Python's SysLogHandler: "<PRI>message\0", no tag unless given one
"$S" clear -b $B
timeout 60 "$S" run -b $B --syslog -- python3 -c '
import logging, logging.handlers
plain = logging.getLogger("plain")
plain.addHandler(logging.handlers.SysLogHandler(address="/dev/log"))
plain.warning("from python")
plain.error("5 files left")
named = logging.getLogger("named")
h = logging.handlers.SysLogHandler(address="/dev/log",
	facility=logging.handlers.SysLogHandler.LOG_LOCAL3)
h.ident = "pyapp: "
named.addHandler(h)
named.critical("with an ident")
' 2>&1
out=$(dump)
has "SysLogHandler: run's tag, WARNING is W" "^W/python3 *\( *[0-9]+\): from python$" "$out"
has "a message that starts with a number is not RFC 5424" "^E/python3 .*: 5 files left$" "$out"
has "SysLogHandler with an ident: it is the tag" "^F/pyapp *\( *[0-9]+\): with an ident$" "$out"
hasnt "no NUL or PRI left in the text" "<[0-9]+>" "$out"

# --- a burst sent just before the program exits: every datagram is logged
"$S" clear -b $B
timeout 60 "$S" run -b $B --syslog -- python3 -c '
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.connect("/dev/log")
for i in range(2000):
	s.send(b"<14>burst: n %d" % i)
' 2>&1
eq "a burst of 2000 at exit, all logged" 2000 "$("$S" cat -b $B -v brief | grep -c '^I/burst .*: n [0-9]*$')"

# --- a system with a /dev/log socket (made here in a private /dev, as
# root): run's socket is mounted over it, the system's gets nothing
if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
	"$S" clear -b $B
	mkdir "$T/realdev" "$T/sys"
	out=$(timeout 60 unshare -m --propagation private sh -c '
		set -e
		mount --rbind /dev "$1/realdev"
		mount -t tmpfs none /dev
		mkdir /dev/shm; mount --rbind "$1/realdev/shm" /dev/shm
		touch /dev/null; mount --bind "$1/realdev/null" /dev/null
		python3 -c "import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(\"/dev/log\")"
		"$2" run -b "$3" --syslog -- sh -c "logger -t overbind hello; grep -c \" /dev/log \" /proc/self/mountinfo"
		' _ "$T" "$S" $B 2>&1)
	eq "existing /dev/log: nothing said" "" "$out"
	out=$(dump)
	has "existing /dev/log: logger captured" "^I/overbind *\( *[0-9]+\): hello$" "$out"
	has "existing /dev/log: run's socket is mounted over it" "^I/sh .*: 1$" "$out"
fi

# --- unprivileged: a user namespace of its own, the same uid in it
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	NB=devlog-nobody-$$
	nobody() {
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			env HOME="$T" TMPDIR="$TMPDIR" "$@"
	}
	nobody "$S" rm -b $NB >/dev/null 2>&1
	err=$(cd "$T" && nobody timeout 60 "$S" run -b $NB --create --syslog -- sh -c '
		logger -t unpriv "as nobody"
		echo "uid $(id -u)"
		echo x > /dev/null && echo "/dev/null works"' 2>&1)
	out=$(nobody "$S" cat -b $NB -v brief)
	nobody "$S" rm -b $NB >/dev/null 2>&1
	if grep -q "cannot give the program a /dev/log" <<<"$err"; then
		echo "note: no user namespace for an unprivileged user here: $err" >&2
	else
		has "unprivileged: logger captured" "^I/unpriv .*: as nobody$" "$out"
		has "unprivileged: the program keeps its uid" "^I/sh .*: uid 65534$" "$out"
		has "unprivileged: devices still work" "^I/sh .*: /dev/null works$" "$out"
	fi
fi

# --- no namespace to be had: said on stderr and in the log, and the
# program runs (a user namespace of ours that allows no more of them,
# without CAP_SYS_ADMIN)
"$S" clear -b $B
if unshare -U -r true 2>/dev/null && command -v setpriv >/dev/null; then
	err=$(timeout 60 unshare -U -r sh -c '
		echo 0 > /proc/sys/user/max_user_namespaces &&
		exec setpriv --bounding-set -sys_admin "$1" run -b "$2" --syslog -- echo ran' \
		_ "$S" $B 2>&1)
	out=$(dump)
	has "without a namespace: said on stderr" "^shmlog run: --syslog: cannot give the program a /dev/log of its own \(unshare.*\): what it sends to /dev/log itself .* is not logged, its syslog\(3\) calls are" "$err"
	has "without a namespace: said in the log" "^W/echo .*: --syslog: cannot give the program a /dev/log" "$out"
	has "without a namespace: the program runs" "^I/echo .*: ran$" "$out"
else
	echo "note: cannot make a namespace without namespaces here; that case is not checked" >&2
fi

echo "$checks checks, $fail failed"
[ $fail -eq 0 ]
