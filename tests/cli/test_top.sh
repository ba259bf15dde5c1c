#!/usr/bin/env bash
# `shmlog top` and `shmlog info` name writers, counted exactly: writers
# with known names (a link to the CLI under that name: the process name
# is the file's), tags, priorities and record counts; two exit, one is
# killed holding its lane, one stays. top --once (text and JSON) must show
# every figure exactly, the exited ones by name; info must say "exited"
# with the pid they had, not pid 0. Bad options give clear errors; the
# live mode ends after -n tables and on SIGTERM. Without python3 the JSON
# checks are skipped (exit 77).
# usage: test_top.sh PATH_TO_SHMLOG
set -u
S=${1:?usage: test_top.sh PATH_TO_SHMLOG}
S=$(cd "$(dirname "$S")" && pwd)/$(basename "$S")
B=top-test-$$
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS
. "$(dirname "$0")/checks.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/shmlog-top.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	"$S" rm -b $B --force >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT
for n in alpha gamma beta delta eps zeta; do ln -s "$S" "$dir/$n"; done

# wait_for DESCRIPTION COMMAND...: poll COMMAND until it succeeds, 20 s at most
wait_for() {
	local d=$1; shift
	for _ in $(seq 400); do
		"$@" && return 0
		sleep 0.05 # a poll's period, not a wait for an event
	done
	echo "FAIL: $d: still not so after 20 s" >&2
	fail=$((fail + 1))
	return 1
}
count_tag() { # records of tag $1 in the buffer
	"$S" cat -b $B -v brief -s "$1" 2>/dev/null | wc -l
}
has_n() { [ "$(count_tag "$1")" -eq "$2" ]; }

ok "create" "$S" create -b $B --size 1M --lanes 16
# start NAME TAG PRIO: a writer that logs the lines written to it and
# keeps its lane while its standard input is open (its pid in $NAME_pid);
# feed NAME N: give it N lines, and keep its input open in $NAME_fd.
# Every writer starts before any input is opened, so none inherits
# another's: each ends when its own is closed.
start() {
	local name=$1 tag=$2 prio=$3
	mkfifo "$dir/$name.in"
	"$dir/$name" write -b $B -t "$tag" -p "$prio" <"$dir/$name.in" &
	eval "${name}_pid=$!"
	pids+=($!)
}
feed() {
	local name=$1 n=$2 fd
	exec {fd}>"$dir/$name.in"
	eval "${name}_fd=$fd"
	for i in $(seq "$n"); do echo "$name $i" >&"$fd"; done
}
# all four hold a lane at once, so each keeps its own
start alpha net I
start gamma disk E
start beta net W
start delta cpu D
feed alpha 3
feed gamma 2
feed beta 4
feed delta 1
wait_for "alpha's records" has_n net 7
wait_for "gamma's records" has_n disk 2
wait_for "delta's records" has_n cpu 1
# alpha and gamma exit (they give their lanes back); delta is killed
# holding its lane; beta stays
exec {alpha_fd}>&-
wait "$alpha_pid"
exec {gamma_fd}>&-
wait "$gamma_pid"
{ kill -KILL "$delta_pid"; wait "$delta_pid"; } 2>/dev/null

# two one-shot writers, one after the other: they take turns in one lane
# (gamma's, given back last), whose ident keeps only the second; the
# buffer's last claims name them all
ok "eps writes" "$dir/eps" write -b $B -t once -p I "eps 1"
pid_of() { "$S" cat -b $B -v json -s once | sed -n 's/.*"pid":\([0-9]*\).*"msg":"'"$1"'".*/\1/p'; }
eps_pid=$(pid_of "eps 1")
ok "zeta writes" "$dir/zeta" write -b $B -t once -p I "zeta 1"
zeta_pid=$(pid_of "zeta 1")

# the pid view, as a table: PID NAME STATE RECS BYTES ALL_RECS ALL_BYTES
out=$("$S" top -b $B --once)
# a record: 40-byte header, tag, message, padded to 8: "alpha 1" under
# "net" is 40+3+7 -> 56
row() { awk -v p="$1" '$1 == p {print $2, $3, $4, $5, $6, $7}' <<<"$out"; }
same "alpha: named after it exited" "alpha exited 0 0 3 168" "$(row "$alpha_pid")"
same "gamma: named after it exited" "gamma exited 0 0 2 112" "$(row "$gamma_pid")"
same "beta: live" "beta live 0 0 4 224" "$(row "$beta_pid")"
same "delta: died holding its lane" "delta dead 0 0 1 56" "$(row "$delta_pid")"
same "eps: named after its turn" "eps exited 0 0 1 56" "$(row "$eps_pid")"
same "zeta: named after its turn" "zeta exited 0 0 1 56" "$(row "$zeta_pid")"
has "the period is said" "since [0-9-]+ [0-9:]+,$" "$out"
has "the period is said" "^the oldest record the buffer held when top started" "$out"
same "most records first" "$beta_pid" "$(awk 'NR == 7 {print $1}' <<<"$out")"

# per tag and per priority
out=$("$S" top -b $B --once --by tag -s key)
same "per tag" "cpu 1 56|disk 2 112|net 7 392|once 2 112" \
	"$(awk 'NR > 6 {printf "%s%s %s %s", (NR > 7 ? "|" : ""), $1, $4, $5}' <<<"$out")"
out=$("$S" top -b $B --once --by prio -s key)
same "per priority" "D 1|I 5|W 4|E 2" \
	"$(awk 'NR > 6 {printf "%s%s %s", (NR > 7 ? "|" : ""), $1, $4}' <<<"$out")"
# per lane: every writer's books since creation
out=$("$S" top -b $B --once --by lane -s lost)
same "per lane" "alpha exited 3 0 0|beta live 4 0 0|delta dead 1 0 0|zeta exited 4 0 0" \
	"$(awk 'NR > 6 {print $3, $4, $9, $10, $11}' <<<"$out" | sort | paste -sd '|')"

# info: the lane of an exited writer has its pid and name, not pid 0
out=$("$S" info -b $B)
has "info: exited writer" "^ +[0-9]+ +exited +$alpha_pid +$alpha_pid .* alpha$" "$out"
has "info: dead writer" "^ +[0-9]+ +dead +$delta_pid +$delta_pid .* delta$" "$out"
has "info: live writer" "^ +[0-9]+ +live +$beta_pid +$beta_pid .* beta$" "$out"

if command -v python3 >/dev/null; then
	json=$("$S" top -b $B --once -v json)
	ok "json: exact" python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
want = {int(sys.argv[1]): ("alpha", "exited", 3, 168),
        int(sys.argv[2]): ("gamma", "exited", 2, 112),
        int(sys.argv[3]): ("beta", "live", 4, 224),
        int(sys.argv[4]): ("delta", "dead", 1, 56),
        int(sys.argv[5]): ("eps", "exited", 1, 56),
        int(sys.argv[6]): ("zeta", "exited", 1, 56)}
got = {r["pid"]: (r["name"], r["state"], r["all_records"], r["all_bytes"])
       for r in d["rows"]}
assert got == want, (got, want)
assert all(r["records"] == 0 and r["bytes"] == 0 for r in d["rows"])
assert d["by"] == "pid" and d["written"] == 12 and d["interval_s"] == 0
assert [r["pid"] for r in d["rows"]][0] == int(sys.argv[3])  # most first
' "$alpha_pid" "$gamma_pid" "$beta_pid" "$delta_pid" "$eps_pid" "$zeta_pid" <<<"$json"
	json=$("$S" top -b $B --once -v json --by lane)
	ok "json: lanes" python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
got = sorted((r["name"], r["state"], r["written"], r["overwritten"], r["torn"],
              r["all_records"]) for r in d["rows"])
assert got == [("alpha", "exited", 3, 0, 0, 3), ("beta", "live", 4, 0, 0, 4),
               ("delta", "dead", 1, 0, 0, 1), ("zeta", "exited", 4, 0, 0, 4)], got
' <<<"$json"
else
	skip "python3 missing (Debian package python3): the JSON checks"
fi

# the live mode: -n tables, then exit; the interval counts what came in it
out=$(timeout 20 "$S" top -b $B -n 2 -d 0.1)
same "-n 2: two tables" 2 "$(grep -c '^shmlog top - ' <<<"$out")"
"$S" top -b $B --once -d 5 --by tag -v json >"$dir/late.json" &
top_pid=$!
pids+=($top_pid)
# once its reader maps the buffer, what it reads from the backlog is done
# within the interval's first moments; the late records may still land
# in the backlog, so only the total is exact
wait_for "top maps the buffer" grep -q "shmlog.$B" "/proc/$top_pid/maps"
ok "late records" "$S" write -b $B -t late -p I "l1"
ok "late records" "$S" write -b $B -t late -p I "l2"
wait "$top_pid"
if command -v python3 >/dev/null; then
	ok "json: the interval" python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
late = [r for r in d["rows"] if r["tag"] == "late"][0]
assert late["all_records"] == 2 and late["records"] <= 2, late
assert 4.5 < d["interval_s"] < 30, d["interval_s"]
' <"$dir/late.json"
fi
# SIGTERM ends the live mode (bounded wait)
"$S" top -b $B -d 3600 >/dev/null &
top_pid=$!
pids+=($top_pid)
wait_for "top maps the buffer" grep -q "shmlog.$B" "/proc/$top_pid/maps"
kill -TERM "$top_pid"
gone() { ! kill -0 "$top_pid" 2>/dev/null; }
wait_for "top ends on SIGTERM" gone
wait "$top_pid"
same "SIGTERM: exit 0" 0 $?

# a tag is anyone's bytes: no escape sequence reaches the terminal
ok "escape tag" "$S" write -b $B -t $'e\x1b[2Jx' "esc"
out=$("$S" top -b $B --once --by tag)
hasnt "no ESC in text" $'\x1b' "$out"
has "escaped tag shown" '^e\?\[2Jx ' "$out"

# bad options say what was wrong and what to do
bad "bad --by" "bad --by 'lan'.*did you mean 'lane'" "$S" top -b $B --by lan
bad "bad -s" "bad -s 'rec'.*did you mean 'records'" "$S" top -b $B -s rec
bad "lost by pid" "-s lost sorts the writers' lanes.*--by lane" "$S" top -b $B -s lost
bad "bad -d" "bad -d '0'.*0.1 to 3600" "$S" top -b $B -d 0
bad "bad -d text" "bad -d 'soon'" "$S" top -b $B -d soon
bad "bad -n" "bad -n '0'" "$S" top -b $B -n 0
bad "--once -n" "--once prints one table" "$S" top -b $B --once -n 2
bad "bad -v" "bad -v 'xml'" "$S" top -b $B -v xml
bad "extra argument" "unexpected argument 'foo'" "$S" top -b $B foo
bad "missing buffer" "does not exist" "$S" top -b $B-none --once
bad "unknown option" "^shmlog top: (unrecognized|invalid)" "$S" top -b $B --frob

exec {beta_fd}>&-
wait "$beta_pid"
finish test_top
