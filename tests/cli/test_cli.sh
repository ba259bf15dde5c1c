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
bad "unknown option" "^shmlog cat: (unrecognized|invalid)" "$S" cat -b $B --frob
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
# priorities as logger(1) names and numbers them, mapped to V..F
for p in 0:F 2:F 3:E 4:W 5:I 6:I 7:D emerg:F crit:F err:E warning:W \
	notice:I debug:D user.err:E local0.notice:I daemon.warning:W W:W; do
	ok "write -p ${p%:*}" "$S" write -b $B-2 --create -t prio -p "${p%:*}" "as ${p#*:}"
done
same "priorities as logger(1)" "FF FF EE WW II II DD FF FF EE WW II DD EE II WW WW" \
	"$("$S" cat -b $B-2 -v brief | sed -n 's|^\(.\)/prio .*: as \(.\)$|\1\2|p' | tr '\n' ' ' | sed 's/ $//')"
bad "number past syslog's" "syslog.*0 \(emerg\) to 7 \(debug\).*Android" "$S" write -b $B -p 8 msg
bad "unknown facility" "facility.level" "$S" write -b $B -p mall.err msg
bad "run: bad priority" "syslog" "$S" run -b $B -p 9 -- true
same "cat -p syslog range" "E W E W E W W" \
	"$("$S" cat -b $B-2 -p 4..3 -v brief | awk '{printf "%s%s", (NR > 1 ? " " : ""), substr($0, 1, 1)}')"
same "cat -p err" "F F E F F E E" \
	"$("$S" cat -b $B-2 -p err -v brief | awk '{printf "%s%s", (NR > 1 ? " " : ""), substr($0, 1, 1)}')"
bad "cat: bad -p" "range.*syslog" "$S" cat -b $B-2 -p 9
ok "rm prio buffer" "$S" rm -b $B-2
out=$("$S" cat -b $B)
has "threadtime layout" "^[0-9]{2}-[0-9]{2} [0-9:.]{12} +[0-9]+ +[0-9]+ W net     : link down$" "$out"
has "stdin lines" "D in      : two" "$out"

# formats
has "brief" "^W/net     \( *[0-9]+\): link down$" "$("$S" cat -b $B -v brief)"
has "long" "^\[ [0-9-]+ [0-9:.]+ +[0-9]+: *[0-9]+ W/net \]$" "$("$S" cat -b $B -v long)"
has "raw" "^link down$" "$("$S" cat -b $B -v raw)"
json=$("$S" cat -b $B -v json | head -1)
has "json" '^\{"time":"[0-9T:.-]+Z","time_ns":[0-9]+,"pid":[0-9]+,"tid":[0-9]+,"prio":"W","tag":"net","msg":"link down","seq":0,"lane":[0-9]+,"buffer":"'"$B"'"\}$' "$json"
if command -v python3 >/dev/null; then
	ok "json parses" python3 -c "import json,sys; [json.loads(l) for l in sys.stdin]" <<<"$("$S" cat -b $B -v json)"
fi
bad "bad format" "unknown format" "$S" cat -b $B -v fancy

# long lines: `write` and `run` both cut a line longer than a record
# (4000 bytes) into records, between UTF-8 characters, losing nothing
lengths() { LC_ALL=C awk '{printf "%s%d", (NR > 1 ? " " : ""), length($0)}'; }
long=$(head -c 5000 /dev/zero | tr '\0' B)
err=$(printf '%s\n' "$long" | "$S" write -b $B -t long 2>&1)
same "long line: nothing said" "" "$err"
same "long line: pieces" "4000 1000" \
	"$("$S" cat -b $B -v raw long:V '*:S' | lengths)"
same "long line: all bytes" "$long" "$("$S" cat -b $B -v raw long:V '*:S' | tr -d '\n')"
ok "long argument" "$S" write -b $B -t longarg "$long"
same "long argument: all bytes" "$long" "$("$S" cat -b $B -v raw longarg:V '*:S' | tr -d '\n')"
wide=$(printf 'x%.0s' 1 2 3; for i in $(seq 2500); do printf '\xc3\xa9'; done)
ok "long utf-8 line" "$S" write -b $B -t wide "$wide"
same "long utf-8: cut between characters" "$wide" \
	"$("$S" cat -b $B -v raw wide:V '*:S' | tr -d '\n')"
same "long utf-8: pieces" "3999 1004" \
	"$("$S" cat -b $B -v raw wide:V '*:S' | lengths)"
ok "run: long line" "$S" run -b $B -t runlong -- bash -c "printf '%s\n' '$long'"
same "run: same pieces as write" "4000 1000" \
	"$("$S" cat -b $B -v raw runlong:V '*:S' | grep B | lengths)"
hasnt "not marked truncated" "truncated" "$("$S" cat -b $B long:V longarg:V wide:V '*:S')"
# what the writer cut (here a tag over 64 bytes) is marked in every format
ok "cut tag" "$S" write -b $B -t "$(head -c 100 /dev/zero | tr '\0' t)" "cut"
for v in threadtime brief long raw; do
	has "truncated marker ($v)" "cut \[truncated\]" "$("$S" cat -b $B -v $v)"
done
has "truncated in json" '"msg":"cut".*"truncated":true' "$("$S" cat -b $B -v json)"
hasnt "marker only where cut" "link down \[truncated\]" "$("$S" cat -b $B)"

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

# logcat's habits: -s, -t, -T, -d, -c; -b before the command
ok "logcat buffer" "$S" create -b $B-2 --size 64K
for i in 1 2 3 4 5; do "$S" write -b $B-2 -t "t$((i % 2))" "m$i"; done
same "cat -s TAG" "m1 m3 m5" "$("$S" cat -b $B-2 -v raw -s t1 | tr '\n' ' ' | sed 's/ $//')"
same "cat -s TAG:W" "" "$("$S" cat -b $B-2 -v raw -s t1:W)"
same "cat -t N" "m4 m5" "$("$S" cat -b $B-2 -v raw -t 2 | tr '\n' ' ' | sed 's/ $//')"
same "cat -t TIME" "m1 m2 m3 m4 m5" "$("$S" cat -b $B-2 -v raw -t @1 | tr '\n' ' ' | sed 's/ $//')"
same "cat -d" "5" "$("$S" cat -b $B-2 -d | wc -l)"
same "-b before the command" "m5" "$("$S" -b $B-2 cat -v raw -t 1)"
same "--buffer= before the command" "m5" "$("$S" --buffer=$B-2 tail -v raw -n 1)"
bad "-t does not follow" "-t.*exits.*-T" "$S" cat -b $B-2 -t 1 -f
bad "bad -t" "bad -t.*number of records, or a time" "$S" cat -b $B-2 -t 10:99
bad "other option before the command" "only -b NAME may come before" "$S" -f cat -b $B-2
"$S" cat -b $B-2 -v raw -T 1 > /tmp/$B.follow 2>&1 &
fpid=$!
for _ in $(seq 1 200); do grep -q "m5" /tmp/$B.follow 2>/dev/null && break; sleep 0.05; done
"$S" write -b $B-2 -t live "m6"
for _ in $(seq 1 200); do grep -q "m6" /tmp/$B.follow && break; sleep 0.05; done
kill $fpid; wait $fpid 2>/dev/null
same "cat -T N: the last N, then follow" "m5 m6" "$(tr '\n' ' ' </tmp/$B.follow | sed 's/ $//')"
rm -f /tmp/$B.follow
ok "cat -c" "$S" cat -b $B-2 -c
same "cat -c cleared" "" "$("$S" cat -b $B-2)"
ok "rm logcat buffer" "$S" rm -b $B-2
# did you mean, and one prefix for errors
bad "command typo" "unknown command 'cta': did you mean 'cat'" "$S" cta
bad "option typo" "^shmlog cat: did you mean '--follow'" "$S" cat -b $B --folow
bad "forward: option typo" "^shmlog forward: did you mean '--to'" "$S" forward -b $B --too jsonl:
bad "forward: sink typo" "^shmlog forward: unknown sink 'syslog\+tpc://h:1' \(did you mean 'syslog\+tcp:'\?\)" "$S" forward -b $B --to syslog+tpc://h:1
bad "forward: sink without its colon" "did you mean 'jsonl:'" "$S" forward -b $B --to jsonl
bad "getopt's messages say shmlog CMD" "^shmlog write: invalid option" "$S" write -b $B -Z x
bad "missing buffer: shmlog CMD prefix" "^shmlog info: buffer" "$S" info -b $B-none

# level
has "level default" '^\*:V$' "$("$S" level -b $B)"
ok "level set" "$S" level -b $B 'net:D' '*:W'
has "level get" '^net:D \*:W$' "$("$S" level -b $B)"
bad "level bad" "bad filter token 'ui:Z'" "$S" level -b $B 'net:D ui:Z'
has "level kept" '^net:D \*:W$' "$("$S" level -b $B)"
ok "level reset" "$S" level -b $B ''

bad_env=$(SHMLOG_TAGS='net:D ui:Q' "$S" level -b $B 2>&1 >/dev/null)
has "bad SHMLOG_TAGS named" "SHMLOG_TAGS is ignored: bad token 'ui:Q'" "$bad_env"
# malformed tokens are refused wherever a spec is read
bad "level: net=D refused" "bad filter token 'net=D'" "$S" level -b $B 'net=D *:W'
bad "level: wildcard refused" "bad filter token 'net\*:D'" "$S" level -b $B 'net*:D'
bad "cat: net=D refused" "bad filter token 'net=D'" "$S" cat -b $B 'net=D'
has "refused spec not stored" '^\*:V$' "$("$S" level -b $B)"
bad_env=$(SHMLOG_TAGS='net=D' "$S" write -b $B -t envtag "env" 2>&1 >/dev/null)
same "bad SHMLOG_TAGS: said once" 1 "$(grep -c 'SHMLOG_TAGS' <<<"$bad_env")"
has "bad SHMLOG_TAGS: net=D named" "bad token 'net=D'" "$bad_env"
bad_env=$(SHMLOG_DEBUG=1 SHMLOG_TAGS='net=D' "$S" write -b $B -t envtag "env" 2>&1 >/dev/null)
has "SHMLOG_DEBUG: the library says it too" "SHMLOG_TAGS has a bad token 'net=D'.*said once" "$bad_env"
has "bad SHMLOG_TAGS ignored as a whole" "envtag.*env" "$("$S" cat -b $B envtag:V '*:S')"

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
# rm refuses a buffer with live writers (they would log into the removed
# file) unless --force, and says who they are
bad "rm with a live writer" "1 live writer \(pid $hold_pid\).*--force" "$S" rm -b $B
has "rm refused: still there" "^$B " "$("$S" ls)"
ok "second holder's buffer" "$S" create -b $B-2 --size 64K
rm -f /tmp/$B.fifo2; mkfifo /tmp/$B.fifo2
"$S" write -b $B-2 -t hold < /tmp/$B.fifo2 &
hold2_pid=$!
exec 8>/tmp/$B.fifo2; echo held >&8
for _ in $(seq 1 200); do "$S" info -b $B-2 2>/dev/null | grep -q "writers: *1 live" && break; sleep 0.05; done
forced=$("$S" rm -b $B-2 --force 2>&1)
has "rm --force warns" "warning: removed buffer '$B-2' with 1 live writer \(pid $hold2_pid\)" "$forced"
hasnt "rm --force removed it" "^$B-2 " "$("$S" ls)"
kill -KILL "$hold_pid" "$hold2_pid"; wait "$hold_pid" "$hold2_pid" 2>/dev/null
exec 7>&- 8>&-; rm -f /tmp/$B.fifo /tmp/$B.fifo2
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
