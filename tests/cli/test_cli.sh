#!/usr/bin/env bash
# The shmlog CLI end to end: every command, and bad input for each, which
# must give a clear error (naming the problem and the fix) and a non-zero
# exit, and lose nothing already logged. Without python3 it runs the rest
# and exits 77 (skipped), naming what it did not check.
# usage: test_cli.sh PATH_TO_SHMLOG
set -u
S=${1:?usage: test_cli.sh PATH_TO_SHMLOG}
B=cli-test-$$
fail=0 checks=0
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS

. "$(dirname "$0")/checks.sh"
command -v python3 >/dev/null ||
	skip "python3 missing (Debian package python3, tests/cli/debian-packages.txt): the JSON and old format checks"
cleanup() { "$S" rm -b $B >/dev/null 2>&1; "$S" rm -b $B-2 >/dev/null 2>&1; rm -f /tmp/$B.buf; }
trap cleanup EXIT
cleanup

# create and its bad input
bad "missing buffer" "does not exist.*shmlog create -b $B" "$S" cat -b $B
bad "bad size" "bad --size" "$S" create -b $B --size 12Q
bad "too small" "bad --size" "$S" create -b $B --size 1K
bad "world-writable" "world-writable" "$S" create -b $B --mode 0666
bad "bad mode" "bad --mode" "$S" create -b $B --mode 999
bad "bad clock" "bad --clock" "$S" create -b $B --clock sundial
bad "bad group" "unknown --group" "$S" create -b $B --group no-such-group-xyz
bad "bad lanes" "bad --lanes" "$S" create -b $B --lanes 0
bad "bad name" "invalid buffer name" "$S" create -b "../etc"
bad "unknown command" "unknown command" "$S" frobnicate
bad "unknown option" "unrecognized|invalid" "$S" cat -b $B --frob
ok "create" "$S" create -b $B --size 256K --clock realtime
bad "exists" "already exists.*shmlog rm" "$S" create -b $B
ok "create by path" "$S" create -b /tmp/$B.buf --size 64K
ok "write by path" "$S" write -b /tmp/$B.buf "on disk"
has "cat by path" "on disk" "$("$S" cat -b /tmp/$B.buf)"

# write
ok "write" "$S" write -b $B -t net -p W "link down"
ok "write stdin" bash -c "printf 'one\ntwo\n' | '$S' write -b $B -t in -p D"
bad "bad prio" "bad priority" "$S" write -b $B -p Q msg
bad "empty tag" "empty tag" "$S" write -b $B -t "" msg
out=$("$S" cat -b $B)
has "threadtime layout" "^[0-9]{2}-[0-9]{2} [0-9:.]{12} +[0-9]+ +[0-9]+ W net     : link down$" "$out"
has "stdin lines" "D in      : two" "$out"

# formats
has "brief" "^W/net     \( *[0-9]+\): link down$" "$("$S" cat -b $B -v brief)"
has "long" "^\[ [0-9-]+ [0-9:.]+ +[0-9]+: *[0-9]+ W/net \]$" "$("$S" cat -b $B -v long)"
has "raw" "^link down$" "$("$S" cat -b $B -v raw)"
json=$("$S" cat -b $B -v json | head -1)
has "json" '^\{"time":"[0-9T:.-]+Z","time_ns":[0-9]+,"pid":[0-9]+,"tid":[0-9]+,"prio":"W","tag":"net","msg":"link down","seq":0,"lane":[0-9]+\}$' "$json"
if command -v python3 >/dev/null; then
	ok "json parses" python3 -c "import json,sys; [json.loads(l) for l in sys.stdin]" <<<"$("$S" cat -b $B -v json)"
fi
bad "bad format" "unknown format" "$S" cat -b $B -v fancy

# hostile content is escaped, never sent to the terminal raw
ok "write escape" "$S" write -b $B -t evil $'\e[2Jclear\x07'
has "escaped" 'evil    : \\x1b\[2Jclear\\x07' "$("$S" cat -b $B evil:V '*:S')"

# filters, pid, since, tail
out=$("$S" cat -b $B 'net:I' '*:S')
has "filter keeps" "link down" "$out"
checks=$((checks + 1)); grep -q "two" <<<"$out" && { echo "FAIL: filter let 'in' through" >&2; fail=$((fail + 1)); }
bad "bad filter" "bad filter token 'net:Q'" "$S" cat -b $B 'net:Q'
wpid=$("$S" cat -b $B -v json | head -1 | sed 's/.*"pid":\([0-9]*\).*/\1/')
has "pid" "link down" "$("$S" cat -b $B --pid "$wpid")"
checks=$((checks + 1)); [ -z "$("$S" cat -b $B --pid 1)" ] || { echo "FAIL: --pid 1 showed records" >&2; fail=$((fail + 1)); }
has "since" "link down" "$("$S" cat -b $B --since -1h)"
checks=$((checks + 1)); [ -z "$("$S" cat -b $B --since @4102444800)" ] || { echo "FAIL: --since future showed records" >&2; fail=$((fail + 1)); }
bad "bad since" "bad --since" "$S" cat -b $B --since yesterday-ish
for i in $(seq 1 30); do echo "line $i"; done | "$S" write -b $B -t seq
out=$("$S" tail -b $B -n 3 -v raw)
checks=$((checks + 1)); [ "$out" = $'line 28\nline 29\nline 30' ] || { echo "FAIL: tail -n 3: $out" >&2; fail=$((fail + 1)); }
bad "bad -n" "bad -n" "$S" tail -b $B -n x

# follow: a record written while `cat -f` runs shows up
"$S" cat -f -b $B -v raw > /tmp/$B.follow 2>&1 &
fpid=$!
for _ in $(seq 1 200); do grep -q "line 30" /tmp/$B.follow 2>/dev/null && break; sleep 0.05; done
"$S" write -b $B -t live "followed record"
for _ in $(seq 1 200); do grep -q "followed record" /tmp/$B.follow && break; sleep 0.05; done
kill $fpid; wait $fpid 2>/dev/null
has "follow" "followed record" "$(cat /tmp/$B.follow)"
rm -f /tmp/$B.follow

# level
has "level default" '^\*:V$' "$("$S" level -b $B)"
ok "level set" "$S" level -b $B 'net:D' '*:W'
has "level get" '^net:D \*:W$' "$("$S" level -b $B)"
bad "level bad" "bad filter token 'ui:Z'" "$S" level -b $B 'net:D ui:Z'
has "level kept" '^net:D \*:W$' "$("$S" level -b $B)"
ok "level reset" "$S" level -b $B ''

bad_env=$(SHMLOG_TAGS='net:D ui:Q' "$S" level -b $B 2>&1 >/dev/null)
has "bad SHMLOG_TAGS named" "SHMLOG_TAGS is ignored: bad token 'ui:Q'" "$bad_env"

# a buffer of another format (version 1, made by an older shmlog): every
# command says so and what to do
if command -v python3 >/dev/null; then
	ok "old format buffer made" "$S" create -b $B-old --size 64K
	python3 - /dev/shm/shmlog.$B-old <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read(152))
struct.pack_into("<H", b, 8, 1)  # version_major 1
h = 0xcbf29ce484222325
for x in b[:144]:
    h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
struct.pack_into("<Q", b, 144, h)
with open(p, "r+b") as f:
    f.write(b)
PY
	bad "old format: cat" "another version of shmlog.*Remove it with .shmlog rm -b $B-old. and create it again" "$S" cat -b $B-old
	bad "old format: write" "another version of shmlog.*create it again" "$S" write -b $B-old -t t hello
	ok "old format: rm" "$S" rm -b $B-old
fi

# info, ls, clear
has "info" "capacity: +256.0K in [0-9]+ lanes" "$("$S" info -b $B)"
has "info clock" "clock: +realtime" "$("$S" info -b $B)"
has "info lane books" "LANE +OWNER +PID +TID +WRITTEN +HELD +BYTES +SHARE +OVERWRITTEN +TORN +CLEARED" "$("$S" info -b $B)"
# a lane's owner: live while its writer's process holds the lane's lock,
# dead once it is killed holding it
rm -f /tmp/$B.fifo; mkfifo /tmp/$B.fifo
"$S" write -b $B -t hold < /tmp/$B.fifo &
hold_pid=$!
exec 7>/tmp/$B.fifo; echo held >&7
for _ in $(seq 1 200); do "$S" info -b $B | grep -qE "^ +[0-9]+ +live " && break; sleep 0.05; done
has "info live owner" "^ +[0-9]+ +live " "$("$S" info -b $B)"
has "info writers" "writers: +1 live" "$("$S" info -b $B)"
has "info share" "share: +[0-9.]+[KM] each for 1 writer holding records" "$("$S" info -b $B)"
has "info a live writer's share" "^ +[0-9]+ +live +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+%" "$("$S" info -b $B)"
kill -KILL "$hold_pid"; wait "$hold_pid" 2>/dev/null
exec 7>&-; rm -f /tmp/$B.fifo
has "info dead owner" "^ +[0-9]+ +dead " "$("$S" info -b $B)"
has "info no writer" "writers: +0 live" "$("$S" info -b $B)"
has "ls" "^$B " "$("$S" ls)"
ok "clear" "$S" clear -b $B
checks=$((checks + 1)); [ -z "$("$S" cat -b $B)" ] || { echo "FAIL: clear left records" >&2; fail=$((fail + 1)); }
ok "write after clear" "$S" write -b $B "after clear"
has "after clear" "after clear" "$("$S" cat -b $B)"

# garbage, symlinks, FIFOs: refused with a clear error
head -c 300000 /dev/urandom > /dev/shm/shmlog.$B-2
bad "garbage" "not a shmlog buffer.*shmlog rm" "$S" cat -b $B-2
bad "garbage write" "not a shmlog buffer" "$S" write -b $B-2 x
rm -f /dev/shm/shmlog.$B-2
ln -s /dev/shm/shmlog.$B /dev/shm/shmlog.$B-2
bad "symlink" "is a symbolic link, not a buffer" "$S" cat -b $B-2
rm -f /dev/shm/shmlog.$B-2
mkfifo /dev/shm/shmlog.$B-2
bad "fifo" "is a FIFO, not a buffer" timeout 5 "$S" cat -b $B-2
rm -f /dev/shm/shmlog.$B-2
has "records survive" "after clear" "$("$S" cat -b $B)"

# demo on a private buffer ends by itself with exact accounting
out=$("$S" demo -b $B-2 --writers 3 --records 3000)
has "demo accounting" "accounting: +written = read" "$out"
has "demo summary" "written: +9000 records by 3 processes" "$out"

# rm
ok "rm" "$S" rm -b $B
bad "rm twice" "does not exist" "$S" rm -b $B
ok "help" "$S" --help
ok "cat help" "$S" cat --help

finish test_cli
