#!/usr/bin/env bash
# The reading side of the shmlog CLI: every option of cat and tail, output
# that is safe for terminals and valid for JSON parsers, and the inputs an
# adversarial run found answered wrongly or unclearly. Each check names
# what it covers; every wait is bounded. A check that cannot run here
# (python3 or less missing, not root) is named, and the test then exits 77
# (skipped) after the others.
# usage: test_reader.sh PATH_TO_SHMLOG
set -u
S=${1:?usage: test_reader.sh PATH_TO_SHMLOG}
B=rd-test-$$
fail=0 checks=0
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS PAGER LESS
PY=$(command -v python3 || true)

. "$(dirname "$0")/checks.sh"
[ -n "$PY" ] || skip "python3 missing (Debian package python3, tests/cli/debian-packages.txt):" \
	"the JSON, random bytes, filter generation, damaged lane and pager checks"
# Waits poll, and are bounded: a loaded machine takes longer, never forever.
until_ok() { # until_ok SECONDS COMMAND...: poll COMMAND every 50 ms until it succeeds
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 0.05; done
}
gone() { ! kill -0 "$1" 2>/dev/null; }
has_record() { [ -n "$("$S" cat -b "$1" -v raw -e "$2")" ]; } # has_record BUFFER REGEX
live_writers() { "$S" info -b "$1" | grep -qE "^writers: +$2 live"; } # live_writers BUFFER REGEX
# How often process $1 has slept (its voluntary context switches); for a
# follower, each wake-up is a chance to look at its buffers.
woke() { awk '/^voluntary_ctxt_switches/ {print $2}' /proc/"$1"/status 2>/dev/null; }
wakes_since() { # wakes_since PID COUNT_BEFORE N: N wake-ups since then
	local now; now=$(woke "$1") && [ -n "$now" ] && [ $((now - $2)) -ge "$3" ]
}
cleanup() {
	[ -z "${other_dir:-}" ] || rm -rf "$other_dir"
	for b in $B $B-2 $B-3 $B-4 $B-sq; do
		"$S" rm -b $b >/dev/null 2>&1
		rm -rf /dev/shm/shmlog.$b
	done
	rm -f /tmp/$B.*
}
trap cleanup EXIT
cleanup

"$S" create -b $B --size 256K --clock realtime || exit 1
for p in V D I W E F; do "$S" write -b $B -p $p -t t$p "message $p"; done

# ---- priorities ----
same "-p W: W and above" "message W
message E
message F" "$("$S" cat -b $B -v raw -p W)"
same "-p W..E: a range" "message W
message E" "$("$S" cat -b $B -v raw -p W..E)"
same "-p ..D: up to D" "message V
message D" "$("$S" cat -b $B -v raw -p ..D)"
same "-p error: a name" "message E
message F" "$("$S" cat -b $B -v raw --priority error)"
bad "-p backwards" "bad -p 'E..W'" "$S" cat -b $B -p E..W
bad "-p unknown" "bad -p 'Q'" "$S" cat -b $B -p Q

# ---- grep, max-count, reverse ----
same "-e REGEX" "message D
message F" "$("$S" cat -b $B -v raw -e 'message (D|F)$')"
same "two -e: either" "message V
message F" "$("$S" cat -b $B -v raw -e 'V$' --grep 'F$')"
bad "-e bad regex" "bad -e '\(\['" "$S" cat -b $B -e '(['
same "-m" "message V
message D" "$("$S" cat -b $B -v raw -m 2)"
bad "-m 0" "bad -m '0'" "$S" cat -b $B -m 0
same "-r" "message F
message E
message W
message I
message D
message V" "$("$S" cat -b $B -v raw -r)"
same "-r -n 2" "message F
message E" "$("$S" tail -b $B -v raw -r -n 2)"
same "-r -m 1" "message F" "$("$S" cat -b $B -v raw -r -m 1)"
bad "-r -f" "cannot follow" "$S" cat -b $B -r -f

# ---- since / until ----
t_mid=$("$S" cat -b $B -v epoch,nsec -p I -m 1 | awk '{print $1}')
same "--until" "message V
message D
message I" "$("$S" cat -b $B -v raw --until "@$t_mid")"
same "--since" "message I
message W
message E
message F" "$("$S" cat -b $B -v raw --since "@$t_mid")"
same "--since and --until" "message I" "$("$S" cat -b $B -v raw --since "@$t_mid" --until "@$t_mid")"
bad "--since @1e30" "bad --since '@1e30'" "$S" cat -b $B --since @1e30
bad "--since @nan" "bad --since '@nan'" "$S" cat -b $B --since @nan
bad "--since @inf" "bad --since '@inf'" "$S" cat -b $B --since @inf
bad "--until -1e30d" "bad --until" "$S" cat -b $B --until -1e30d
bad "--until garbage" "bad --until 'soon'" "$S" cat -b $B --until soon

# ---- tail -n: any number ----
same "tail -n 999999999: everything" 6 "$("$S" tail -b $B -n 999999999 | wc -l)"
same "tail -n 2^64+: everything" 6 "$("$S" tail -b $B -n 99999999999999999999 | wc -l)"
same "tail -n 0" "" "$("$S" tail -b $B -n 0)"
bad "tail -n -1" "bad -n '-1'" "$S" tail -b $B -n -1

# ---- several buffers, merged in time order ----
"$S" create -b $B-2 --size 64K --clock realtime
for i in 1 2 3; do
	"$S" write -b $B -t one "first $i"
	"$S" write -b $B-2 -t two "second $i"
done
same "-b twice: merged in time order" "first 1
second 1
first 2
second 2
first 3
second 3" "$("$S" cat -b $B -b $B-2 -v raw -e '(first|second)')"
same "-b twice with tail -n" "second 2
first 3
second 3" "$("$S" tail -b $B -b $B-2 -v raw -n 3)"
# which buffer each merged record came from: the buffer modifier
has "-v buffer: each line starts with its buffer" "^$B-2 +[0-9-]+ [0-9:.]+ +[0-9]+ +[0-9]+ I two +: second 3$" \
	"$("$S" tail -b $B -b $B-2 -v threadtime,buffer -n 1)"
same "-v raw,buffer: the buffer, then the message" "$B first 3
$B-2 second 3" "$("$S" tail -b $B -b $B-2 -v raw,buffer -n 2 | sed 's/  */ /')"

# ---- -v modifiers ----
line=$("$S" cat -b $B -p F)
has "threadtime" '^[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} +[0-9]+ +[0-9]+ F tF      : message F$' "$line"
has "-v usec" '^[0-9]{2}-[0-9]{2} [0-9:]{8}\.[0-9]{6} ' "$("$S" cat -b $B -p F -v usec)"
has "-v nsec" '^[0-9]{2}-[0-9]{2} [0-9:]{8}\.[0-9]{9} ' "$("$S" cat -b $B -p F -v nsec)"
has "-v year" '^20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{8}\.[0-9]{3} ' "$("$S" cat -b $B -p F -v year)"
has "-v zone" '^[0-9-]+ [0-9:.]+ [+-][0-9]{4} ' "$("$S" cat -b $B -p F -v zone)"
has "-v year,utc,usec" '^20[0-9]{2}-[0-9-]+ [0-9:]{8}\.[0-9]{6} ' "$("$S" cat -b $B -p F -v year,utc,usec)"
ep=$("$S" cat -b $B -p F -v epoch | awk '{print $1}')
now=$(date +%s)
checks=$((checks + 1))
if ! [[ $ep =~ ^[0-9]+\.[0-9]{3}$ ]] || [ $((now - ${ep%.*})) -gt 600 ] || [ $((now - ${ep%.*})) -lt -5 ]; then
	echo "FAIL: -v epoch: $ep is not about now ($now)" >&2; fail=$((fail + 1))
fi
mono=$("$S" cat -b $B -p F -v monotonic | awk '{print $1}')
up=$(cut -d' ' -f1 /proc/uptime)
checks=$((checks + 1))
if ! [[ $mono =~ ^[0-9]+\.[0-9]{3}$ ]] || [ $((${up%.*} - ${mono%.*})) -gt 600 ] || [ $((${up%.*} - ${mono%.*})) -lt -5 ]; then
	echo "FAIL: -v monotonic: $mono is not about the uptime $up" >&2; fail=$((fail + 1))
fi
has "-v color" $'^\e\\[1;31m.*message F\e\\[0m$' "$("$S" cat -b $B -p F -v color)"
has "--color=always" $'^\e\\[1;31m' "$("$S" cat -b $B -p F --color=always)"
hasnt "NO_COLOR: no colour" $'\e' "$("$S" cat -b $B -p F)"
# uid: known while the writer lives (`write` from a pipe stays alive)
mkfifo /tmp/$B.fifo
"$S" write -b $B -t live < /tmp/$B.fifo &
wp=$!
exec 7>/tmp/$B.fifo
echo "still here" >&7
until_ok 20 has_record $B '^still here$'
has "-v uid: a live writer's user" "^[0-9-]+ [0-9:.]+ +$(id -un) +$wp +[0-9]+ I live" "$("$S" cat -b $B -v uid -e '^still here$')"
has "-v uid,json" "\"uid\":$(id -u)[,}]" "$("$S" cat -b $B -v uid,json -e '^still here$')"
exec 7>&-
wait $wp
has "-v uid: a gone writer is '-'" "^[0-9-]+ [0-9:.]+ +- +$wp " "$("$S" cat -b $B -v uid -e '^still here$')"
hasnt "-v uid,json: no uid for a gone writer" '"uid"' "$("$S" cat -b $B -v uid,json -e '^still here$')"
same "-v printable" 'caf\xc3\xa9' "$("$S" write -b $B -t pr 'café'; "$S" cat -b $B -v raw,printable -e '^caf')"
same "without printable: UTF-8 shown" 'café' "$("$S" cat -b $B -v raw -e '^caf')"
bad "-v unknown" "unknown format or modifier 'fancy'" "$S" cat -b $B -v usec,fancy

# ---- hostile bytes: terminals and JSON parsers ----
printf 'bad \xff\xfe utf8 \xc3\xa9 c1 \xc2\x9b csi \x9b\x1b[2J end' | "$S" write -b $B -t bin
out=$("$S" cat -b $B -v raw -e '^bad ')
has "invalid bytes escaped" 'bad \\xff\\xfe utf8 é c1 \\u009b csi \\x9b\\x1b\[2J end' "$out"
checks=$((checks + 1))
if LC_ALL=C grep -q $'[\x80-\x9f\x1b]' <<<"$(printf '%s' "$out" | LC_ALL=C sed 's/\xc3\xa9//g')"; then
	echo "FAIL: C1/ESC bytes reached the output raw" >&2; fail=$((fail + 1))
fi
if [ -n "$PY" ]; then
	ok "json: every line parses as UTF-8 JSON" "$PY" -c '
import json, sys
data = sys.stdin.buffer.read()
data.decode("utf-8")  # strict: raises on invalid UTF-8
for l in data.splitlines():
    json.loads(l)
' < <("$S" cat -b $B -v json)
	ok "json: bytes kept exactly in msg_base64" "$PY" -c '
import base64, json, sys
recs = [json.loads(l) for l in sys.stdin if "msg_base64" in l]
want = b"bad \xff\xfe utf8 \xc3\xa9 c1 \xc2\x9b csi \x9b\x1b[2J end"
assert len(recs) == 1, recs
r = recs[0]
assert base64.b64decode(r["msg_base64"]) == want, r
assert r["msg"] == "bad \ufffd\ufffd utf8 \u00e9 c1 \u0080\u009b csi \ufffd\x1b[2J end".replace("\u0080", ""), r["msg"]
' < <("$S" cat -b $B -v json)
	ok "json: time as RFC 3339 with nanoseconds, equal to time_ns" "$PY" -c '
import json, sys, datetime
for l in sys.stdin:
    r = json.loads(l)
    if "time" not in r: continue
    t = r["time"]
    assert len(t) == 30 and t.endswith("Z"), t
    sec = datetime.datetime.strptime(t[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    ns = int(sec.timestamp()) * 10**9 + int(t[20:29])
    assert ns == r["time_ns"], (t, r["time_ns"])
' < <("$S" cat -b $B -v json)
	# a too long line is cut into records between characters (the
	# library's own cut, flagged truncated, is tests/unit/test_utf8_cut)
	long=$("$PY" -c 'print("a" * 3999 + "é" + "b" * 10)')
	"$S" write -b $B -t cut "$long"
	ok "a long line is cut between UTF-8 characters" "$PY" -c '
import json, sys
r = [json.loads(l) for l in sys.stdin][-2:]
assert not any(x.get("truncated") for x in r), r
assert all("msg_base64" not in x and "\ufffd" not in x["msg"] for x in r), r
assert r[0]["msg"] == "a" * 3999, len(r[0]["msg"])
assert r[1]["msg"] == "é" + "b" * 10, r[1]["msg"]
' < <("$S" cat -b $B -v json cut:V '*:S')
fi

# random bytes, every length up to 300: JSON gives each back exactly, text
# output carries no control byte (the escaping fast paths, 8 and 16 bytes
# at a time, against their byte-by-byte fallback)
if [ -n "$PY" ]; then
	"$S" create -b $B-4 --size 1M --lanes 1 --clock realtime
	"$PY" -c '
import random, sys
rnd = random.Random(7)
alphabets = [bytes(range(256)), b"abc \t\"\\\x7f\x1b", "é€😀\u009b\u2028".encode() + b"ab\xff\xc3"]
out = sys.stdout.buffer
for n in range(300):
    a = alphabets[n % 3]
    msg = bytes(rnd.choice(a) for _ in range(n)).replace(b"\n", b"N").replace(b"\0", b"Z")
    out.write(msg + b"\n")
' > /tmp/$B.rand
	"$S" write -b $B-4 -t rand < /tmp/$B.rand
	ok "random bytes: JSON gives back every byte" "$PY" -c '
import base64, json, sys
want = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
data = sys.stdin.buffer.read()
data.decode("utf-8")
got = []
for l in data.splitlines():
    r = json.loads(l)
    got.append(base64.b64decode(r["msg_base64"]) if "msg_base64" in r else r["msg"].encode())
assert len(got) == len(want), (len(got), len(want))
for i, (g, w) in enumerate(zip(got, want)):
    assert g == w, (i, g, w)
' /tmp/$B.rand < <("$S" cat -b $B-4 -v json)
	ok "random bytes: text output has no control byte" "$PY" -c '
import sys
data = sys.stdin.buffer.read()
bad = [b for b in set(data) if (b < 0x20 and b not in (9, 10)) or b == 0x7f]
assert not bad, bad
text = data.decode("utf-8")  # valid UTF-8 only
c1 = [c for c in text if 0x80 <= ord(c) <= 0x9f]
assert not c1, c1
' < <("$S" cat -b $B-4 -v threadtime; "$S" cat -b $B-4 -v long; "$S" cat -b $B-4 -v raw)
	"$S" rm -b $B-4
fi

# ---- errors that say what is wrong ----
bad "-b ''" "empty buffer name" "$S" cat -b ''
bad "-b '' create" "empty buffer name" "$S" create -b ''
bad "64K in 1000 lanes" "at least 4096 bytes: give at most 16 lanes" "$S" create -b $B-3 --size 64K --lanes 1000
bad "--lanes 2^32+1" "bad --lanes '4294967297'" "$S" create -b $B-3 --lanes 4294967297
checks=$((checks + 1)); [ -e /dev/shm/shmlog.$B-3 ] && { echo "FAIL: a refused create left a buffer" >&2; fail=$((fail + 1)); }
bad "unknown option" "Try 'shmlog cat --help'" "$S" cat -b $B --frobnicate
bad "unknown option (tail)" "Try 'shmlog tail --help'" "$S" tail -b $B -Z
bad "unknown option (level)" "Try 'shmlog level --help'" "$S" level -b $B --frob

# filter specs: the token named is one the user wrote, whatever the length
many=$(for i in $(seq 1 400); do printf 'tag%03d:D ' $i; done)
bad "cat: bad token past 4 KiB named" "bad filter token 'ui:Z'" "$S" cat -b $B $many ui:Z
bad "level: bad token past 2 KiB named" "bad filter token 'ui:Z'" "$S" level -b $B $many ui:Z
bad "level: spec too long, with its size" "too long \([0-9]{4} bytes, a buffer holds 2047" "$S" level -b $B $many
longtok=$(printf 'x%.0s' $(seq 1 300)):Q
bad "a long bad token is shortened" "bad filter token 'xxxx.*\.\.\.'" "$S" cat -b $B "$longtok"
ok "cat: a 4 KiB spec of good tokens works" "$S" cat -b $B $many

# squatted names: say what to do, never "run shmlog rm" when rm refuses too
ln -s /etc/passwd /dev/shm/shmlog.$B-sq
bad "symlink: cat" "is a symbolic link, not a buffer.*rm /dev/shm/shmlog.$B-sq" "$S" cat -b $B-sq
bad "symlink: rm" "is a symbolic link.*rm /dev/shm/shmlog.$B-sq" "$S" rm -b $B-sq
out=$("$S" cat -b $B-sq 2>&1; "$S" rm -b $B-sq 2>&1)
hasnt "symlink: no 'shmlog rm' advice" '`shmlog rm' "$out"
rm -f /dev/shm/shmlog.$B-sq
mkfifo /dev/shm/shmlog.$B-sq
bad "fifo: cat" "is a FIFO, not a buffer.*rm /dev/shm" timeout 10 "$S" cat -b $B-sq
bad "fifo: rm" "is a FIFO" "$S" rm -b $B-sq
rm -f /dev/shm/shmlog.$B-sq
mkdir /dev/shm/shmlog.$B-sq
bad "directory: write" "is a directory.*rmdir" "$S" write -b $B-sq x
bad "directory: rm" "is a directory" "$S" rm -b $B-sq
out=$("$S" rm -b $B-sq 2>&1)
hasnt "directory: no 'shmlog rm' advice" '`shmlog rm' "$out"
rmdir /dev/shm/shmlog.$B-sq

# a user who does not own the buffer: rm says EPERM, and whose it is
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	skip "non-owner rm: needs root and setpriv (Debian package util-linux)"
elif other_user_cli "$S" 65534; then
	bad "non-owner rm" "cannot remove.*Operation not permitted.*belongs to user root" \
		as_other "$other_dir/shmlog" rm -b $B
	ok "buffer still there" test -f /dev/shm/shmlog.$B
fi

# a filter generation left odd (a setter died mid-change)
if [ -n "$PY" ]; then
	"$S" create -b $B-4 --size 64K
	gen_off=$("$PY" - "$S" $B-4 <<'EOF'
import subprocess, sys
s, b = sys.argv[1], sys.argv[2]
path = "/dev/shm/shmlog." + b
def words():
    d = open(path, "rb").read(8192)
    return [int.from_bytes(d[i:i+4], "little") for i in range(0, len(d), 4)]
a = words()
subprocess.run([s, "level", "-b", b, "x:D"], check=True)
c = words()
offs = [i * 4 for i in range(len(a)) if c[i] == a[i] + 2 and a[i] % 2 == 0]
print(offs[0] if len(offs) == 1 else -1)
EOF
)
	if [ "$gen_off" -gt 0 ] 2>/dev/null; then
		"$PY" -c '
import sys
path, off = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(off); g = int.from_bytes(f.read(4), "little")
    f.seek(off); f.write((g + 1).to_bytes(4, "little"))
' /dev/shm/shmlog.$B-4 "$gen_off"
		bad "level, generation stuck odd" "being changed right now, or a process died.*set it again" "$S" level -b $B-4
		out=$("$S" level -b $B-4 2>&1)
		hasnt "level, generation stuck odd: no lane blame" "live writer" "$out"
		ok "level set takes a dead setter over" timeout 20 "$S" level -b $B-4 'y:W'
		same "level after take-over" "y:W" "$("$S" level -b $B-4)"
	else
		checks=$((checks + 1)) fail=$((fail + 1))
		echo "FAIL: the filter generation word not found in the buffer's first 8 KiB" >&2
	fi
fi

# ---- SIGINT and SIGTERM end every loop ----
"$S" cat -f -b $B -v raw > /tmp/$B.f1 2>&1 &
fp=$!
until_ok 20 test -s /tmp/$B.f1
kill -INT $fp
until_ok 20 gone $fp
checks=$((checks + 1))
if kill -0 $fp 2>/dev/null; then
	echo "FAIL: cat -f ignored SIGINT" >&2; fail=$((fail + 1)); kill -9 $fp
fi
wait $fp 2>/dev/null
# demo: SIGTERM to the demo alone stops its writers too
"$S" demo -b $B-3 --records 1000000000 --show 0 > /tmp/$B.demo 2>&1 &
dp=$!
until_ok 20 grep -q "following it" /tmp/$B.demo
# its writers at work, so that they must be stopped
checks=$((checks + 1))
until_ok 20 live_writers $B-3 '[1-9][0-9]*' ||
	{ echo "FAIL: demo: no live writer after 20 s" >&2; fail=$((fail + 1)); }
kill -TERM $dp
until_ok 20 gone $dp
checks=$((checks + 1))
if kill -0 $dp 2>/dev/null; then
	echo "FAIL: demo ignored SIGTERM" >&2; fail=$((fail + 1)); kill -9 $dp
fi
wait $dp
same "demo interrupted: exit status" 130 $?
has "demo interrupted: said" "interrupted" "$(cat /tmp/$B.demo)"
until_ok 20 live_writers $B-3 0
has "demo interrupted: its writers stopped" "writers: +0 live" "$("$S" info -b $B-3)"
"$S" rm -b $B-3

# Each command shows it is at work (output, its archive, what it
# logged), then SIGTERM must end it within 20 s.
at_work() { [ -s "$1" ]; }
sigterm_ends() { # sigterm_ends NAME EVIDENCE... -- COMMAND...: evidence, then TERM
	# (its output in /tmp/$B.o1 and .e1, its exit status in $sig_rc)
	local name=$1 ev=() p; shift
	while [ "$1" != -- ]; do ev+=("$1"); shift; done; shift
	rm -f /tmp/$B.o1
	"$@" <&0 >/tmp/$B.o1 2>/tmp/$B.e1 &
	p=$!
	checks=$((checks + 1))
	if ! until_ok 20 "${ev[@]}"; then
		echo "FAIL: $name: not at work after 20 s: $(cat /tmp/$B.e1)" >&2
		fail=$((fail + 1))
	fi
	kill -TERM $p
	until_ok 20 gone $p
	checks=$((checks + 1))
	if kill -0 $p 2>/dev/null; then
		echo "FAIL: $name ignored SIGTERM while at work" >&2
		fail=$((fail + 1)); kill -9 $p
	fi
	wait $p 2>/dev/null
	sig_rc=$?
}

# write: SIGTERM ends it while its input flows without a pause (its
# getline() never sees EINTR); what it logged stays
"$S" create -b $B-3 --size 1M
has_some() { [ "$("$S" info -b $B-3 | awk '/^written:/ {print $2}')" -gt 0 ]; }
sigterm_ends "write" has_some -- "$S" write -b $B-3 -t sig < <(yes "to the end of time")
same "write interrupted: exit status" 130 "$sig_rc"
has "write interrupted: said" "interrupted" "$(cat /tmp/$B.e1)"
same "write interrupted: what it logged stays" "to the end of time" \
	"$("$S" cat --no-pager -b $B-3 -v raw -m 1)"
"$S" rm -b $B-3

# every following command, under a writer that never pauses
"$S" create -b $B-3 --size 4M
yes "a writer that never pauses" | "$S" write -b $B-3 -t sig 2>/dev/null &
wp=$!
A=/tmp/$B.arc
rm -rf "$A" /tmp/$B.o1 /tmp/$B.o2
has_arc() { compgen -G "$A/*.arc" >/dev/null; }
sigterm_ends "cat -f" at_work /tmp/$B.o1 -- "$S" cat -f -b $B-3 -v raw
sigterm_ends "tail -f" at_work /tmp/$B.o1 -- "$S" tail -f -b $B-3
sigterm_ends "archive" has_arc -- "$S" archive -b $B-3 -o "$A" -q
sigterm_ends "cat --archive -f" at_work /tmp/$B.o1 -- \
	"$S" cat --archive "$A" -f -b $B-3 -v raw
sigterm_ends "forward" at_work /tmp/$B.o2 -- \
	"$S" forward -b $B-3 --to jsonl:/tmp/$B.o2
rm -f /tmp/$B.o2
sigterm_ends "forward --archive -f" at_work /tmp/$B.o2 -- \
	"$S" forward --archive "$A" -f -b $B-3 --to jsonl:/tmp/$B.o2
# A dump ends where the buffer ended when it began, however fast the
# writer and however slow the reader (its output drained by a shell
# loop): it once read on for ever behind a writer that never pauses,
# overtaken and skipping ahead, and tail showed nothing.
slow() { while IFS= read -r _; do :; done; }
dump_ends() { # dump_ends NAME COMMAND...: must end by itself within 20 s
	local name=$1 p; shift
	("$@" 2>/dev/null | slow) &
	p=$!
	until_ok 20 gone $p
	checks=$((checks + 1))
	if kill -0 $p 2>/dev/null; then
		echo "FAIL: $name never ended under a writer that never pauses" >&2
		fail=$((fail + 1)); pkill -P $p; kill $p
	fi
	wait $p 2>/dev/null
}
dump_ends "cat" "$S" cat --no-pager -b $B-3 -v raw
dump_ends "cat -v json" "$S" cat --no-pager -b $B-3 -v json
dump_ends "tail -n 1000" "$S" tail -b $B-3 -n 1000
dump_ends "info" "$S" info -b $B-3
dump_ends "top --once" "$S" top -b $B-3 --once
dump_ends "forward --dump" "$S" forward -b $B-3 --dump --to jsonl:/tmp/$B.o2
dump_ends "archive --once" "$S" archive -b $B-3 -o "$A-once" --once -q
# and an archive read while an archiver adds to it faster than the dump
# reads: it ends where the archive ended when it began
"$S" archive -b $B-3 -o "$A-live" -q --max-file-size 8M --max-size 64M &
ap=$!
has_live() { compgen -G "$A-live/*.arc" >/dev/null; }
until_ok 20 has_live
dump_ends "cat --archive" "$S" cat --no-pager --archive "$A-live" -v raw
dump_ends "forward --archive --dump" "$S" forward --archive "$A-live" --dump \
	--to jsonl:/tmp/$B.o2
# two buffers, each under a writer that never pauses: cat -f and tail -f
# show what both held when they began, then follow both (past a hundred
# lines, both writers' tags); SIGTERM ends them
"$S" create -b $B-4 --size 4M
yes "the other writer" | "$S" write -b $B-4 -t sig4 2>/dev/null &
wp4=$!
follows_both() {
	[ "$(wc -l < /tmp/$B.o1)" -gt 100 ] &&
		grep -q "never pauses" /tmp/$B.o1 &&
		grep -q "the other writer" /tmp/$B.o1
}
sigterm_ends "tail -f, two buffers" follows_both -- \
	"$S" tail -f -n 5 -b $B-3 -b $B-4 -v raw
sigterm_ends "cat -f, two buffers" follows_both -- \
	"$S" cat -f -b $B-3 -b $B-4 -v raw
dump_ends "cat, two buffers" "$S" cat --no-pager -b $B-3 -b $B-4
kill $ap $wp $wp4
wait $ap $wp $wp4 2>/dev/null
"$S" rm -b $B-4
rm -rf "$A" "$A-once" "$A-live" /tmp/$B.o1 /tmp/$B.o2
"$S" rm -b $B-3

# a lane whose head is not on a record boundary (hostile): the drains of
# info and tail -n must still obey SIGINT, whatever the library does
if [ -n "$PY" ]; then
	"$S" create -b $B-3 --size 64K --lanes 4
	for i in 1 2 3; do "$S" write -b $B-3 -t x "record $i"; done
	lane=$("$S" cat -b $B-3 -v json -m 1 | sed 's/.*"lane":\([0-9]*\).*/\1/')
	"$PY" -c '
import sys
path, lane = sys.argv[1], int(sys.argv[2])
head = 4096 + lane * 128 + 64 + 16
with open(path, "r+b") as f:
    f.seek(head); h = int.from_bytes(f.read(8), "little")
    f.seek(head); f.write((h - 8).to_bytes(8, "little"))
' /dev/shm/shmlog.$B-3 "$lane"
	for cmd in "info" "tail -n 5" "cat"; do
		start=$(date +%s)
		timeout -k 10 -s INT 2 "$S" $cmd -b $B-3 >/dev/null 2>&1
		rc=$?
		checks=$((checks + 1))
		if [ $rc -eq 137 ]; then
			echo "FAIL: $cmd on a bad lane ignored SIGINT" >&2; fail=$((fail + 1))
		fi
	done
	# and without a signal, info ends by itself and names the damage
	out=$(timeout -k 5 10 "$S" info -b $B-3 2>&1)
	same "info on a bad lane ends by itself" 0 $?
	has "info names the damage" "damaged: +1 " "$out"
	has "info's lane books count it" "DAMAGED" "$out"
	"$S" rm -b $B-3
fi

# ---- cat -f on a removed buffer: said once, a recreated one followed ----
"$S" create -b $B-3 --size 64K
"$S" write -b $B-3 -t f "before removal"
"$S" cat -f -b $B-3 -v raw > /tmp/$B.out 2> /tmp/$B.err &
fp=$!
until_ok 20 grep -q "before removal" /tmp/$B.out
"$S" rm -b $B-3
until_ok 20 grep -q "was removed" /tmp/$B.err
# several looks while it is gone, and the message must stay single: it
# looks every 500 ms, between waits; 1.5 s, and 3 wake-ups at least (a
# loaded machine may give it its CPU less often than that)
w0=$(woke $fp) t0=$(date +%s%N)
looked() { wakes_since $fp "${w0:-0}" 3 && [ $(($(date +%s%N) - t0)) -ge 1500000000 ]; }
checks=$((checks + 1))
until_ok 20 looked ||
	{ echo "FAIL: cat -f did not wake 3 times in 20 s while its buffer was gone" >&2; fail=$((fail + 1)); }
"$S" create -b $B-3 --size 64K
"$S" write -b $B-3 -t f "after recreation"
until_ok 20 grep -q "after recreation" /tmp/$B.out
kill -TERM $fp
until_ok 20 gone $fp
checks=$((checks + 1))
if kill -0 $fp 2>/dev/null; then echo "FAIL: cat -f ignored SIGTERM" >&2; fail=$((fail + 1)); kill -9 $fp; fi
wait $fp 2>/dev/null
same "removed: said once" 1 "$(grep -c "was removed" /tmp/$B.err)"
has "removed: what to expect" "waiting for a buffer to be created" "$(cat /tmp/$B.err)"
has "recreated: followed" "after recreation" "$(cat /tmp/$B.out)"
has "recreated: said" "created again" "$(cat /tmp/$B.err)"

# ---- the pager: on a terminal only ----
same "no pager when not a terminal" "message F" "$(PAGER='sed s/^/PAGED:/' "$S" cat -b $B -v raw -p F)"
if [ -n "$PY" ]; then
	# run a command on a pseudo-terminal, print its output
	cat > /tmp/$B.pty.py <<'EOF'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace").replace("\r", ""))
EOF
	pty_run() { "$PY" /tmp/$B.pty.py "$@"; }
	has "pager on a terminal" "^PAGED:message F" "$(PAGER='sed s/^/PAGED:/' TERM=xterm pty_run "$S" cat -b $B -v raw -p F)"
	same "no pager on a dumb terminal" "message F" "$(PAGER='sed s/^/PAGED:/' TERM=dumb pty_run "$S" cat -b $B -v raw -p F)"
	hasnt "--no-pager" "PAGED" "$(PAGER='sed s/^/PAGED:/' TERM=xterm pty_run "$S" cat -b $B -v raw -p F --no-pager)"
	hasnt "no pager when following" "PAGED" "$(PAGER='sed s/^/PAGED:/' TERM=xterm timeout 20 "$PY" /tmp/$B.pty.py timeout -s INT 1 "$S" cat -f -b $B -v raw -p F 2>&1)"
	if command -v less >/dev/null; then
		has "default pager: less -FRX ends by itself" "message F" "$(env -u PAGER TERM=xterm timeout 20 "$PY" /tmp/$B.pty.py "$S" cat -b $B -v raw -p F 2>&1)"
	else
		skip "the default pager: less missing (Debian package less, tests/cli/debian-packages.txt)"
	fi
fi

# ---- every command's --help describes every option ----
for cmd in cat tail info ls level create rm clear write demo; do
	h=$("$S" $cmd --help 2>&1)
	checks=$((checks + 1))
	[ $? -eq 0 ] || { echo "FAIL: $cmd --help failed" >&2; fail=$((fail + 1)); }
	has "$cmd --help: -b" "-b, --buffer NAME" "$h"
	has "$cmd --help: -h" "-h, --help" "$h"
done
h=$("$S" cat --help)
for o in --follow --lines --max-count --reverse --priority --grep --pid --since --until --format --color --utc --no-pager usec nsec year zone epoch monotonic uid color printable; do
	has "cat --help: $o" "$o" "$h"
done
h=$("$S" create --help)
for o in --size --mode --group --lanes --clock; do has "create --help: $o" "$o" "$h"; done
h=$("$S" write --help)
for o in --priority --tag; do has "write --help: $o" "$o" "$h"; done
h=$("$S" demo --help)
for o in --writers --records --show; do has "demo --help: $o" "$o" "$h"; done

finish test_reader
