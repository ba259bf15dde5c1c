#!/usr/bin/env bash
# `shmlog archive` and `shmlog cat --archive`: every record kept across
# SIGKILLs of the archiver (and of writers), losses counted exactly,
# writers dead inside a write counted as `shmlog info` counts them,
# printf-style records kept as stored and shown as live, rotation limits,
# damaged files, a full disk (found by fallocate() or by the writes),
# O_DIRECT and the page cache, and the seam between an archive and its live
# buffer. Every wait is a bounded poll.
# usage: test_archive.sh SHMLOG ARCHIVE_CHECK ARCHIVE_WRITER REFUSING
#        [--kill-writers]
#   --kill-writers: the torture also kills a writer mid-write every third
#   round (test_archive_long)
set -u
usage="usage: test_archive.sh SHMLOG ARCHIVE_CHECK ARCHIVE_WRITER REFUSING"
S=${1:?$usage}
CHECK=${2:?$usage}
AW=${3:?$usage}
REFUSE=${4:?$usage}
kill_writers=; [ "${5:-}" = --kill-writers ] && kill_writers=1
B=arc-test-$$
T=$(mktemp -d /tmp/shmlog-arc.XXXXXX)
fail=0 checks=0
export NO_COLOR=1
unset SHMLOG_BUFFER SHMLOG_TAGS PAGER LESS
. "$(dirname "$0")/../cli/checks.sh"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	mountpoint -q "$T/full" 2>/dev/null && umount "$T/full"
	rmdir /sys/fs/cgroup/blkio/shmlog-test-$$ 2>/dev/null
	for b in $B $B-t $B-r $B-s $B-f $B-p $B-d $B-v $B-c $B-k-tsc $B-k-realtime \
		$B-k-coarse $B-m $B-pc $B-z $B-sf $B-lag $B-race $B-4k $B-bk $B-dg $B-mv; do "$S" rm -b $b >/dev/null 2>&1; done
	rm -rf "$T"
}
trap cleanup EXIT

written() { "$S" info -b "$1" | awk '/^written:/ {print $2}'; }
size_of() { stat -c %s "$@" 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
# poll: until COMMAND succeeds, at most $1 tenths of a second
poll() {
	local n=$1; shift
	while ! "$@"; do
		n=$((n - 1)); [ $n -le 0 ] && return 1
		sleep 0.1
	done
}

# ---- 300,000 records, the archiver SIGKILLed in the middle ----
"$S" create -b $B --size 64M || exit 1
D=$T/a
mkfifo "$T/fifo"
"$S" write -b $B -t seq <"$T/fifo" & wpid=$!
pids+=($wpid)
exec 3>"$T/fifo"
"$S" archive -b $B -o "$D" -q 2>"$T/arch.err" & apid=$!
pids+=($apid)
seq 1 150000 >&3
# about 100,000 records in the archive, as a reader of it counts them
archived_some() {
	[ "$("$S" cat --no-pager --archive "$D" -v raw 2>/dev/null | wc -l)" -ge 100000 ]
}
ok "the archiver keeps up" poll 600 archived_some
kill -KILL $apid; wait $apid 2>/dev/null
seq 150001 300000 >&3
exec 3>&-
wait $wpid
ok "restarted, it drains the rest" "$S" archive -b $B -o "$D" --once -q
total=$(written $B)
same "the writer wrote 300,000" 300000 "$total"
"$S" rm -b $B
out=$("$CHECK" "$D" 300000 --no-loss --msg-seq 2>&1)
same "archive after SIGKILL: all 300,000, in order, none twice" \
	"records 300000 lost 0 corrupt 0" "$out"
n=$("$S" cat --no-pager --archive "$D" -v raw | wc -l)
same "cat --archive shows 300,000 lines" 300000 "$n"
same "cat --archive -r -m 2: the newest first" "300000
299999" "$("$S" cat --no-pager --archive "$D" -v raw -r -m 2)"
same "cat --archive -e and -n" "299990
299991" "$("$S" cat --no-pager --archive "$D" -v raw -e '^2999(90|91)$')"
same "cat --archive -n 1" "300000" "$("$S" cat --no-pager --archive "$D" -v raw -n 1)"
has "cat --archive -v json" '"msg":"1","seq":' \
	"$("$S" cat --no-pager --archive "$D" -v json -m 1)"
hasnt "cat --archive --until before the first: nothing" . \
	"$("$S" cat --no-pager --archive "$D" -v raw --until @1)"

# ---- a writer dead inside a write: archived + lost = written ----
# At each test point of the write path (reserved; tag, message written;
# committed; published, not yet counted) the record is either archived or
# a loss, and `shmlog info` counts it as written either way: before and
# after another writer takes the dead one's lane over.
for point in 1 3 4 5 6; do
	"$S" create -b $B-d --size 1M --lanes 1 >/dev/null || exit 1
	D=$T/d$point
	( "$AW" $B-d die $point 100; exit $? ) 2>/dev/null # and "Killed"
	same "test point $point: the writer died there" 137 $?
	ok "test point $point: archived" "$S" archive -b $B-d -o "$D" --once -q
	ok "test point $point: archived + lost = written ($(written $B-d))" \
		"$CHECK" "$D" "$(written $B-d)"
	seq 1 10 | "$S" write -b $B-d -t after
	ok "test point $point: its lane taken over, archived again" \
		"$S" archive -b $B-d -o "$D" --once -q
	ok "test point $point: then too ($(written $B-d))" \
		"$CHECK" "$D" "$(written $B-d)"
	"$S" rm -b $B-d
done

# ---- printf-style records: kept as stored, shown as the live buffer ----
"$S" create -b $B-p --size 4M || exit 1
D=$T/p
"$AW" $B-p printf 8000 || exit 1
seq 1 3 | "$S" write -b $B-p -t plain
ok "printf-style: archived" "$S" archive -b $B-p -o "$D" --once -q --max-file-size 64K
nofiles=$(ls "$D"/*.arc | wc -l)
checks=$((checks + 1))
[ "$nofiles" -ge 3 ] || { echo "FAIL: printf-style: $nofiles files, want 3 or more" >&2; fail=$((fail + 1)); }
nobuf() { sed 's/"buffer":"[^"]*"//'; }
live=$("$S" cat --no-pager -b $B-p -v json | nobuf)
arc=$("$S" cat --no-pager --archive "$D" -v json | nobuf)
same "printf-style: cat --archive -v json = cat -v json (msg, fmt, args)" "$live" "$arc"
ok "printf-style, --compact: archived" "$S" archive -b $B-p -o "$T/pc" --once -q --compact
same "printf-style, --compact: the same records, times to the ns" "$live" \
	"$("$S" cat --no-pager --archive "$T/pc" -v json | nobuf)"
has "printf-style: records as stored (SPAN entries)" "^span [0-9]" "$("$CHECK" --entries "$D")"
hasnt "printf-style, --compact: no SPAN entry" "^span [0-9]" "$("$CHECK" --entries "$T/pc")"
has "printf-style: the format and the values are there" \
	'"msg":"rec 7999 \\"q\\" -7999 1999.75","fmt":"rec %lu %s %d %.2f","args":\[7999,"\\"q\\"",-7999,1999.75\]' "$arc"
# each file carries the formats its records use: the oldest removed,
# every record left still reads
rm "$(ls "$D"/*.arc | head -n 1)"
hasnt "printf-style: every file reads alone" "no format" \
	"$("$S" cat --no-pager --archive "$D" -v raw)"
"$S" rm -b $B-p
same "printf-style: read with the buffer gone" "$(echo "$arc" | tail -n 4)" \
	"$("$S" cat --no-pager --archive "$D" -v json | nobuf | tail -n 4)"

# ---- every clock: times read back as a reader of the buffer makes them ----
# (records kept as stored carry the piece of the clock's conversion they
# fall in: calibration, anchors, or the wall clock itself)
for c in tsc realtime coarse; do
	"$S" create -b $B-k-$c --size 1M --clock $c 2>/dev/null || {
		echo "note: no $c clock here" >&2; continue; }
	seq 1 3000 | "$S" write -b $B-k-$c -t clk
	ok "clock $c: archived" "$S" archive -b $B-k-$c -o "$T/k-$c" --once -q
	same "clock $c: cat --archive -v json = cat -v json, times to the ns" \
		"$("$S" cat --no-pager -b $B-k-$c -v json | nobuf)" \
		"$("$S" cat --no-pager --archive "$T/k-$c" -v json | nobuf)"
	has "clock $c: records as stored (SPAN entries)" "^span [0-9]" \
		"$("$CHECK" --entries "$T/k-$c")"
	# --compact: RUN entries, their times converted by the reader on
	# the piece of a chunk's copy (reader_raw.c), as a SPAN entry's
	ok "clock $c, --compact: archived" "$S" archive -b $B-k-$c \
		-o "$T/kc-$c" --once -q --compact
	same "clock $c, --compact: times to the ns" \
		"$("$S" cat --no-pager -b $B-k-$c -v json | nobuf)" \
		"$("$S" cat --no-pager --archive "$T/kc-$c" -v json | nobuf)"
done

# ---- a large buffer, many lanes, writer processes at once, followed ----
# Each writer's share of 64 MiB holds all it writes: nothing may be lost,
# however little CPU the archiver gets; lanes interleave, so spans of a
# lane alone and runs of merged records mix (which, depends on timing).
"$S" create -b $B-m --size 64M --lanes 64 || exit 1
D=$T/m
"$S" archive -b $B-m -o "$D" -q 2>"$T/m.err" & apid=$!
pids+=($apid)
wpids=()
for w in $(seq 1 8); do
	seq 1 40000 | sed "s/\$/ from writer $w/" | "$S" write -b $B-m -t w$w & wpids+=($!)
done
pids+=("${wpids[@]}")
wait "${wpids[@]}"
kill -TERM $apid; wait $apid
ok "many writers: the last run drains the rest" "$S" archive -b $B-m -o "$D" --once -q
ok "many writers: archived = written, none lost (320000)" "$CHECK" "$D" 320000 --no-loss
same "many writers: the records, in any order" \
	"$("$S" cat --no-pager -b $B-m -v json | nobuf | sort)" \
	"$("$S" cat --no-pager --archive "$D" -v json | nobuf | sort)"

# ---- the page cache: not used, or written out and dropped ----
# The archiver writes each 1 MiB of blocks with O_DIRECT (or, where the
# filesystem refuses it, writes it out and drops its pages), and drops the
# rest at its end: what it wrote is not left in the page cache (a
# filesystem that keeps every page in memory, as tmpfs does, cannot drop
# them: skipped there). Under strace, it is seen opening the file with
# O_DIRECT and writing whole stages through it, never taking O_DIRECT
# back (as it does when a write says EINVAL: a misaligned stage would).
D=$T/pc
fs=$(stat -f -c %T "$T")
if [ "$fs" = tmpfs ] || ! command -v fincore >/dev/null; then
	skip "page cache: the archive is on $fs, or fincore(1) is missing"
else
	"$S" create -b $B-pc --size 64M || exit 1
	pad=$(printf '%0200d' 0)
	seq 1 150000 | sed "s/\$/ $pad/" | "$S" write -b $B-pc -t pc
	"$S" archive -b $B-pc -o "$D" --once -q
	bytes=$(size_of "$D"/*.arc)
	cached=$(fincore -b -n -o RES "$D"/*.arc | awk '{s += $1} END {print s + 0}')
	ok "page cache: an archive of more than 24 stages ($bytes bytes)" \
		test "$bytes" -gt $((24 << 20))
	ok "page cache: none of it left cached ($cached bytes)" \
		test "$cached" -le $((1 << 20))
	if ! command -v strace >/dev/null; then
		skip "O_DIRECT: strace(1) is missing"
	else
		rm -rf "$D"
		# (LeakSanitizer cannot work under ptrace: off in a sanitizer
		# build, where it would end the run with a fatal error)
		LSAN_OPTIONS=detect_leaks=0 \
			strace -f -o "$T/pc.strace" -e trace=openat,pwrite64,fcntl \
			"$S" archive -b $B-pc -o "$D" --once -q
		ok "O_DIRECT: the archiver under strace: exit 0" test $? = 0
		if grep -q 'O_DIRECT.*= -1 EINVAL' "$T/pc.strace"; then
			skip "O_DIRECT: the filesystem of $T refuses it"
		else
			has "O_DIRECT: the file opened with it" "O_DIRECT" \
				"$(grep '\.arc' "$T/pc.strace" | grep openat)"
			big=$(awk '/pwrite64\(/ && $NF + 0 >= 1048576 && $NF % 4096 == 0 {n += $NF}
				END {print n + 0}' "$T/pc.strace")
			ok "O_DIRECT: whole stages written ($big bytes)" test "$big" -ge $((24 << 20))
			hasnt "O_DIRECT: never taken back" "F_SETFL" \
				"$(grep fcntl "$T/pc.strace")"
		fi
	fi
fi

# ---- stages in 4 KiB pages ----
# Where huge pages are not to be had (madvise refused, as on a kernel
# without them), the stages are the system's pages, faulted one at a time
# as the drain fills them, as they are after a huge page was slow to
# fault: a following archiver keeps the same records.
if ! "$REFUSE" madvise true; then
	skip "stages in 4 KiB pages: no seccomp filter here"
else
	"$S" create -b $B-4k --size 64M || exit 1
	D=$T/4k
	"$REFUSE" madvise "$S" archive -b $B-4k -o "$D" -q 2>"$T/4k.err" & apid=$!
	pids+=($apid)
	pad=$(printf '%0200d' 0)
	# more than 24 stages of records
	seq 1 150000 | sed "s/\$/ $pad/" | "$S" write -b $B-4k -t 4k
	ok "stages in 4 KiB pages: all there" poll 600 "$CHECK" "$D" \
		"$(written $B-4k)" --no-loss --first 0
	huge=$(awk '/^AnonHugePages:/ {print $2}' /proc/$apid/smaps_rollup 2>/dev/null)
	same "stages in 4 KiB pages: no huge page in the archiver" 0 "${huge:-0}"
	kill -TERM $apid; wait $apid
	same "stages in 4 KiB pages: exit 0" 0 $?
	same "stages in 4 KiB pages: the records, in order" \
		"$("$S" cat --no-pager -b $B-4k -v raw | nobuf)" \
		"$("$S" cat --no-pager --archive "$D" -v raw | nobuf)"
	"$S" rm -b $B-4k
fi

# ---- a backlog is drained without a pause ----
# A turn of the drain that found fewer than 1024 records is followed by a
# 1 ms nap (the writers are slower than the archiver: more come with the
# nap), but a turn that a full block ended found as many records as it
# had room for, and more wait. With 100,000 records waiting in the buffer,
# every turn but the last takes 4096 records or fills the block: no nap
# until the backlog is drained. The messages are sized so that a block
# ends a few hundred records into a turn: `seq` with a 4-byte tag as
# stored (56 bytes, 4,681 a block); messages of about 50 bytes with
# --compact, or from two writers at once (their records then coded one
# by one, about 4,500 a block). There the archiver napped once a block,
# and kept a quarter of what a writer at full speed wrote.
if ! command -v strace >/dev/null; then
	skip "a backlog: strace(1) is missing"
else
	pad=$(printf '%045d' 0)
	for how in "--as-stored" "--compact" "two writers"; do
		name="a backlog, $how"
		"$S" rm -b $B-bk >/dev/null 2>&1
		"$S" create -b $B-bk --size 64M || exit 1
		case $how in
		--as-stored)
			seq 1 100000 | "$S" write -b $B-bk -t bklg ;;
		--compact)
			seq 1 100000 | sed "s/\$/ $pad/" | "$S" write -b $B-bk -t bklg ;;
		*)
			# both alive throughout (each holds its lane), their
			# records in turns of 25,000
			rm -f "$T/bk1" "$T/bk2"
			mkfifo "$T/bk1" "$T/bk2"
			"$S" write -b $B-bk -t bklg <"$T/bk1" & w1=$!
			"$S" write -b $B-bk -t bklg <"$T/bk2" & w2=$!
			pids+=($w1 $w2)
			exec 5>"$T/bk1" 6>"$T/bk2"
			for i in 0 25000; do
				seq $((i + 1)) $((i + 25000)) | sed "s/\$/ $pad/" >&5
				seq $((i + 1)) $((i + 25000)) | sed "s/\$/ $pad/" >&6
			done
			exec 5>&- 6>&-
			wait $w1 $w2 ;;
		esac
		copt=; [ "$how" != "two writers" ] && copt=$how
		D=$T/bk
		rm -rf "$D"
		LSAN_OPTIONS=detect_leaks=0 strace -f -o "$T/bk.strace" \
			-e trace=nanosleep,clock_nanosleep \
			"$S" archive -b $B-bk -o "$D" -q $copt & spid=$!
		pids+=($spid)
		ok "$name: all there" poll 600 "$CHECK" "$D" 100000 --no-loss
		apid=$(pgrep -P $spid)
		ok "$name: the archiver under strace" test -n "$apid"
		kill -TERM "${apid:-$spid}" # strace's child, or strace
		wait $spid
		# the drain's naps: its thread is the process's first (a
		# sanitizer's runtime has a thread of its own that naps)
		naps=$(awk -v p="${apid:-x}" '$1 == p && /nanosleep/' "$T/bk.strace" |
			wc -l)
		ok "$name: no nap while records wait ($naps)" test "$naps" -le 2
		entries=$("$CHECK" --entries "$D")
		[ "$how" = "two writers" ] &&
			has "$name: their records coded one by one" "^run [0-9]" \
				"$entries"
		# as stored, whatever the disk does: records in runs only
		# where a chunk of the buffer ends (one each)
		spans=$(echo "$entries" | awk '$1 == "span-records" {print $2}')
		[ "$how" = --as-stored ] &&
			ok "$name: records as stored ($spans)" \
				test "${spans:-0}" -ge 95000
	done
	"$S" rm -b $B-bk
fi

# ---- slow, then fast: the page cache's bytes, then O_DIRECT over them ----
# A slow writer's records reach the file through the page cache (100 ms
# old); the same stage later goes out with O_DIRECT, over those bytes.
"$S" create -b $B-sf --size 16M || exit 1
D=$T/sf
"$S" archive -b $B-sf -o "$D" -q & apid=$!
pids+=($apid)
for i in $(seq 1 8); do
	echo "slow $i" | "$S" write -b $B-sf -t sf
	have_slow() { "$S" cat --no-pager --archive "$D" -v raw 2>/dev/null |
		grep -qx "slow $i"; }
	ok "slow, then fast: slow record $i in the file" poll 300 have_slow
done
pad=$(printf '%0100d' 0)
seq 1 60000 | sed "s/\$/ $pad/" | "$S" write -b $B-sf -t sf
ok "slow, then fast: all there" poll 600 "$CHECK" "$D" "$(written $B-sf)" --no-loss
kill -TERM $apid; wait $apid
same "slow, then fast: the records, in order" \
	"$("$S" cat --no-pager -b $B-sf -v raw | nobuf)" \
	"$("$S" cat --no-pager --archive "$D" -v raw | nobuf)"

# ---- a disk that lags: records coded compactly, stages through the page
# cache, nothing lost ----
# The archiver's O_DIRECT writes throttled to 8 MB/s (a cgroup v1 blkio
# throttle, which holds back direct writes and not the page cache's):
# every stage soon waits for the disk, and the drain goes on through the
# page cache instead of waiting (or losing records to the ring's wrap).
cg=/sys/fs/cgroup/blkio/shmlog-test-$$
dev=$(findmnt -n -o MAJ:MIN -T "$T" 2>/dev/null | tr -d ' ')
if [ "$(id -u)" != 0 ] || [ ! -w /sys/fs/cgroup/blkio ] || [ -z "$dev" ] ||
	! mkdir "$cg" 2>/dev/null; then
	skip "a disk that lags: needs root and a cgroup v1 blkio throttle"
elif ! echo "$dev 8388608" >"$cg/blkio.throttle.write_bps_device" 2>/dev/null; then
	rmdir "$cg"
	skip "a disk that lags: no throttle on $T's device ($dev)"
else
	"$S" create -b $B-lag --size 256M || exit 1
	D=$T/lag
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
		"$S" archive -b $B-lag -o "$D" 2>"$T/lag.err" & apid=$!
	pids+=($apid)
	pad=$(printf '%0100d' 0)
	# twice what the stages hold (STAGES of STAGE_CAP: 64 MiB)
	seq 1 1200000 | sed "s/\$/ $pad/" | "$S" write -b $B-lag -t lag
	ok "a disk that lags: all there" poll 600 "$CHECK" "$D" "$(written $B-lag)" \
		--no-loss --first 0
	kill -TERM $apid; wait $apid
	has "a disk that lags: it said so" "the disk lagged behind" "$(cat "$T/lag.err")"
	# bytes are what is short: records coded as --compact codes them
	has "a disk that lags: records coded compactly meanwhile" \
		"records were coded compactly" "$(cat "$T/lag.err")"
	coded=$("$CHECK" --entries "$D" | awk '$1 == "run-records" {print $2}')
	ok "a disk that lags: most records in RUN entries ($coded)" \
		test "${coded:-0}" -ge 600000
	same "a disk that lags: the records, in order" \
		"$("$S" cat --no-pager -b $B-lag -v raw | nobuf)" \
		"$("$S" cat --no-pager --archive "$D" -v raw | nobuf)"
	rmdir "$cg"
fi

# ---- archivers started while a writer writes ----
# Each accounts for every record the buffer numbered, from its first
# number on: the records before it opened the buffer are lost ones, not
# more or fewer (the first number is the buffer's own, not derived from a
# lane the writer moves meanwhile).
"$S" create -b $B-race --size 4M || exit 1
yes "a writer that does not pause" | "$S" write -b $B-race -t race 2>/dev/null &
wpid=$!
pids+=($wpid)
for i in $(seq 1 12); do
	"$S" archive -b $B-race -o "$T/race$i" --once -q
	ok "started while a writer writes ($i): from the first number" \
		"$CHECK" "$T/race$i" --first 0
	rm -rf "$T/race$i"
done
kill -TERM $wpid; wait $wpid 2>/dev/null

# ---- crash torture: archiver and writers killed at random instants ----
"$S" create -b $B-t --size 64K || exit 1
D=$T/t
"$S" archive -b $B-t -o "$D" --once -q
for round in $(seq 1 12); do
	seq 1 20000 | "$S" write -b $B-t -t a & w1=$!
	# with --kill-writers, every third round a writer is killed too,
	# while it writes
	kw=; [ -n "$kill_writers" ] && [ $((round % 3)) = 0 ] && kw=1
	n=20000; [ -n "$kw" ] && n=2000000
	seq 1 $n | "$S" write -b $B-t -t b & w2=$!
	pids+=($w1 $w2)
	# every other round in files of 64K: killed as a file ends, too
	# (its last bytes, its end, the next one's header and name are the
	# disk thread's, in order)
	fsz=; [ $((round % 2)) = 0 ] && fsz="--max-file-size 64K"
	"$S" archive -b $B-t -o "$D" -q $fsz 2>>"$T/torture.err" & apid=$!
	pids+=($apid)
	sleep "0.0$((RANDOM % 50))" # a random instant, not a synchronisation
	kill -KILL $apid
	[ -n "$kw" ] && kill -KILL $w2 2>/dev/null
	wait $apid $w1 $w2 2>/dev/null
done
ok "the last run drains the rest" "$S" archive -b $B-t -o "$D" --once -q
same "torture: no hidden new file left" "" "$(ls "$D" | grep '\.new$')"
total=$(written $B-t)
out=$("$CHECK" "$D" "$total" 2>&1)
has "torture: archived + lost = written ($total)" "^records [0-9]+ lost [0-9]+ corrupt 0$" "$out"
ok "torture: the checker agrees" "$CHECK" "$D" "$total"
hasnt "torture: no error from the archiver" "cannot|error" "$(grep -v 'torn tail' "$T/torture.err")"
# a new file a SIGKILL left before its name: removed at the next start,
# never read (a copy of the newest file, so that a reader taking it for
# an archive file would count its records twice)
last=$(ls "$D"/*.arc | tail -n 1)
no=$(basename "$last" .arc); no=${no#shmlog-}
cp "$last" "$D/shmlog-$(printf '%016d' $((10#$no + 1))).arc.new"
same "a hidden new file: readers skip it" "$out" "$("$CHECK" "$D" "$total" 2>&1)"
"$S" archive -b $B-t -o "$D" --once -q
same "a hidden new file: removed at the next start" "" "$(ls "$D" | grep '\.new$')"

# ---- a torn tail is cut when the archiver starts again ----
last=$(ls "$D"/*.arc | tail -n 1)
sz=$(stat -c %s "$last")
seq 1 100 | "$S" write -b $B-t -t c
"$S" archive -b $B-t -o "$D" --once -q
sz2=$(stat -c %s "$last")
truncate -s $(((sz + sz2) / 2)) "$last"
err=$("$S" archive -b $B-t -o "$D" --once 2>&1)
has "a torn tail is cut" "cut a torn tail" "$err"
ok "after the cut: archived + lost = written" "$CHECK" "$D" "$(written $B-t)"

# ---- rotation limits ----
"$S" create -b $B-r --size 8M || exit 1
D=$T/r
msg=$(printf 'x%.0s' $(seq 1 200))
seq 1 20000 | sed "s/\$/ $msg/" | "$S" write -b $B-r -t rot
ok "rotation: archive" "$S" archive -b $B-r -o "$D" --once -q --max-file-size 64K --max-files 3
n=$(ls "$D"/*.arc | wc -l)
same "--max-files 3 keeps 3 files" 3 "$n"
big=$(for f in "$D"/*.arc; do [ "$(stat -c %s "$f")" -gt 65536 ] && echo "$f"; done)
same "--max-file-size 64K holds for every file" "" "$big"
out=$("$CHECK" "$D" 2>&1)
has "a pruned archive reads cleanly, newest records last" "^records [0-9]+ lost 0 corrupt 0$" "$out"
same "the newest record survives" "20000 $msg" "$("$S" cat --no-pager --archive "$D" -v raw -n 1)"
D=$T/r2
ok "rotation: --max-size" "$S" archive -b $B-r -o "$D" --once -q --max-file-size 64K --max-size 300K
total=$(size_of "$D"/*.arc)
checks=$((checks + 1))
[ "$total" -le $((300 * 1024)) ] || { echo "FAIL: --max-size 300K: $total bytes" >&2; fail=$((fail + 1)); }
first=$(ls "$D"/*.arc | head -n 1)
touch -d '-2 hours' "$first"
seq 1 10 | "$S" write -b $B-r -t rot
ok "rotation: --max-age" "$S" archive -b $B-r -o "$D" --once -q --max-file-size 64K --max-age 1h
checks=$((checks + 1))
[ ! -e "$first" ] || { echo "FAIL: --max-age 1h kept a file 2 hours old" >&2; fail=$((fail + 1)); }
bad "--max-file-size too small" "too small" "$S" archive -b $B-r -o "$D" --max-file-size 1K
bad "no -o" "give -o DIR" "$S" archive -b $B-r
bad "--compact with --as-stored" "opposite things: give one" \
	"$S" archive -b $B-r -o "$D" --compact --as-stored
bad "a second archiver on the same DIR" "another archiver" \
	bash -c "exec 9>\"$D/.lock\"; flock 9; \"$S\" archive -b $B-r -o \"$D\" --once"

# ---- damaged and hostile files never crash nor hang a reader ----
src=$(ls "$T"/r/*.arc | tail -n 1)
fsz=$(stat -c %s "$src")
mkdir -p "$T/bad"
crashes=0
try_read() { # a file as the archive's only one
	rm -f "$T"/bad/*.arc
	cp "$1" "$T/bad/shmlog-0000000000000001.arc"
	timeout 20 "$S" cat --no-pager --archive "$T/bad" -v json >/dev/null 2>&1
	local rc=$?
	[ $rc -le 1 ] || { echo "FAIL: reading $2: exit $rc" >&2; crashes=$((crashes + 1)); }
	timeout 20 "$CHECK" "$T/bad" >/dev/null 2>&1
	rc=$?
	[ $rc -le 1 ] || { echo "FAIL: checking $2: exit $rc" >&2; crashes=$((crashes + 1)); }
}
for i in $(seq 1 25); do
	cut=$(( (RANDOM * 32768 + RANDOM) % fsz ))
	head -c $cut "$src" >"$T/f"
	try_read "$T/f" "truncated at $cut"
	cp "$src" "$T/f"
	for k in 1 2 3; do
		at=$(( (RANDOM * 32768 + RANDOM) % fsz ))
		printf "\\x$(printf %02x $((RANDOM % 256)))" |
			dd of="$T/f" bs=1 seek=$at conv=notrunc status=none
	done
	try_read "$T/f" "with bytes changed"
done
head -c 100000 /dev/urandom >"$T/f"; try_read "$T/f" "random bytes"
: >"$T/f"; try_read "$T/f" "empty"
head -c 128 "$src" >"$T/f"; try_read "$T/f" "a header alone"
checks=$((checks + 1))
[ $crashes = 0 ] || fail=$((fail + 1))

# ---- cat --archive -f: from the archive into the live buffer ----
"$S" create -b $B-s --size 4M || exit 1
D=$T/s
seq 1 1000 | "$S" write -b $B-s -t s
"$S" archive -b $B-s -o "$D" --once -q
seq 1001 2000 | "$S" write -b $B-s -t s
"$S" cat --no-pager --archive "$D" -b $B-s -f -v raw -m 2001 >"$T/seam" & cpid=$!
pids+=($cpid)
has2000() { [ "$(wc -l <"$T/seam")" -ge 2000 ]; }
ok "the seam: the follower catches up" poll 300 has2000
"$S" write -b $B-s -t s 2001
ended() { ! kill -0 $cpid 2>/dev/null; }
if poll 300 ended; then
	seam_end=ended
else
	seam_end="still running: state $(awk '{print $3}' /proc/$cpid/stat 2>/dev/null), wchan $(cat /proc/$cpid/wchan 2>/dev/null), last lines $(tail -n 2 "$T/seam" | tr '\n' ' ')"
	cat /proc/$cpid/stack >&2 2>/dev/null
fi
same "the seam: a new record ends -m 2001" ended "$seam_end"
wait $cpid
same "the seam: 1..2001, none twice, none missing" "$(seq 1 2001)" "$(cat "$T/seam")"

# ---- SIGTERM ends a following archiver cleanly ----
"$S" archive -b $B-s -o "$D" -q & apid=$!
pids+=($apid)
# running, its handlers set: it has archived records written after it
# started (the folder has files already, from --once above)
seq 2002 2100 | "$S" write -b $B-s -t s
ok "SIGTERM: the follower caught up" poll 300 "$CHECK" "$D" "$(written $B-s)" --no-loss
kill -TERM $apid
stopped() { ! kill -0 $apid 2>/dev/null; }
ok "SIGTERM: it stops" poll 100 stopped
wait $apid; rc=$?
same "SIGTERM: exit 0" 0 $rc
ok "SIGTERM: all there" "$CHECK" "$D" "$(written $B-s)" --no-loss

# ---- a full disk: it keeps going, says so once, counts the losses ----
# full_disk NAME [LAUNCHER]: found by fallocate() before a block is sealed
# (as on ext4 and tmpfs), or with LAUNCHER refusing fallocate, by the
# syncer's O_DIRECT writes (as on a filesystem without fallocate). The
# disk has 24 MiB, 200 KiB of it free; then the archiver holds what it
# read (up to 64 MiB of stages; a few rounds of records here)
# (docs/archive.md, "A full disk"), and space returns for all of it.
full_disk() {
	local name=$1; shift
	"$S" rm -b $B-f >/dev/null 2>&1
	"$S" create -b $B-f --size 64K || exit 1
	D=$T/full/$name
	head -c 24376K /dev/zero >"$T/full/filler"
	"$@" "$S" archive -b $B-f -o "$D" 2>"$T/full.err" & apid=$!
	pids+=($apid)
	said() { grep -q "cannot write" "$T/full.err"; }
	# rounds of records until the archive has filled the disk: however
	# little of each round a starved archiver gets (a busy machine), it
	# gets there; bounded
	for i in $(seq 1 200); do
		seq 1 2000 | sed "s/\$/ $msg/" | "$S" write -b $B-f -t full
		said && break
	done
	ok "$name: said" poll 300 said
	rm -f "$T/full/filler"
	resumed() { grep -q "writing to .* again" "$T/full.err"; }
	seq 1 10 | "$S" write -b $B-f -t full
	ok "$name: resumes when space returns" poll 300 resumed
	kill -TERM $apid; wait $apid
	same "$name: said once" 1 "$(grep -c 'cannot write' "$T/full.err")"
	ok "$name: archived + lost = written" "$CHECK" "$D" "$(written $B-f)"
	out=$("$CHECK" "$D" 2>&1)
	hasnt "$name: something was lost (and counted)" "lost 0 " "$out"
	rm -rf "$D"
}
if [ "$(id -u)" != 0 ] || ! mkdir -p "$T/full" ||
	! mount -t tmpfs -o size=24M tmpfs "$T/full" 2>/dev/null; then
	echo "SKIP: full disk: needs root and a tmpfs mount" >&2
	skipped=1
else
	full_disk "full disk"
	if "$REFUSE" fallocate true; then
		full_disk "full disk, no fallocate" "$REFUSE" fallocate
	else
		echo "SKIP: full disk, no fallocate: no seccomp filter here" >&2
		skipped=1
	fi
fi

# ---- more contexts (pid, tid, tag) than one run holds: a new run ----
"$S" create -b $B-c --size 1M --lanes 4 || exit 1
for t in $(seq 1 260); do echo "m$t" | "$S" write -b $B-c -t "tag$t"; done
D=$T/c
zstd=; "$S" archive --zstd --help >/dev/null 2>&1 && zstd=--zstd
for how in "" --compact $zstd; do
	rm -rf "$D"
	ok "260 contexts${how:+, $how}: archived" "$S" archive -b $B-c -o "$D" --once -q $how
	same "260 contexts${how:+, $how}: cat --archive -v json = cat -v json" \
		"$("$S" cat --no-pager -b $B-c -v json | nobuf)" \
		"$("$S" cat --no-pager --archive "$D" -v json | nobuf)"
done

# ---- an archive of format version 2 (before runs): read, and gone on ----
D=$T/v2
mkdir -p "$D" && cp "$(dirname "$0")/v2/"*.arc "$D/"
same "version 2: its records" "one
two
three" "$("$S" cat --no-pager --archive "$D" -v raw)"
has "version 2: its fields" '"pid":20574,"tid":20574,"prio":"I","tag":"old","msg":"one","seq":0,"lane":2' \
	"$("$S" cat --no-pager --archive "$D" -v json -n 3 -r | tail -n 1)"
"$S" create -b $B-v --size 64K || exit 1
printf 'four\nfive\n' | "$S" write -b $B-v -t new
ok "version 2: archived into" "$S" archive -b $B-v -o "$D" --once -q
same "version 2: the records go on in a new file, version 4" "4" \
	"$(od -An -tu4 -j8 -N4 "$D/shmlog-0000000000000002.arc" | tr -d ' ')"
same "version 2 then 4: every record, in order" "one
two
three
four
five" "$("$S" cat --no-pager --archive "$D" -v raw)"
has "version 4: its fields" '"prio":"I","tag":"new","msg":"five","seq":1,' \
	"$("$S" cat --no-pager --archive "$D" -v json -n 1)"

# ---- --zstd: compressed blocks, read as the buffer ----
if [ -z "$zstd" ]; then
	skip "--zstd: this shmlog was built without zstd (cmake -DSHMLOG_ZSTD=ON)"
else
	D=$T/z
	ok "--zstd: archived" "$S" archive -b $B-m -o "$D" --once -q --zstd
	ok "--zstd: archived = written, none lost (320000)" "$CHECK" "$D" 320000 --no-loss
	has "--zstd: compressed blocks" "zblock" "$("$CHECK" --entries "$D")"
	same "--zstd: the records, as the buffer's" \
		"$("$S" cat --no-pager -b $B-m -v json | nobuf | sort)" \
		"$("$S" cat --no-pager --archive "$D" -v json | nobuf | sort)"
	zs=$(size_of "$D"/*.arc) ps=$(size_of "$T/m"/*.arc)
	ok "--zstd: a third of the size at most ($zs bytes against $ps)" \
		test $((zs * 3)) -le "$ps"
	# plain, then --zstd (a new file, version 5), a torn compressed
	# block cut, then plain again (on in the same file)
	D=$T/zmix
	version() { od -An -tu4 -j8 -N4 "$D/shmlog-000000000000000$1.arc" | tr -d ' '; }
	"$S" create -b $B-z --size 1M || exit 1
	printf 'a\nb\n' | "$S" write -b $B-z -t mix
	ok "plain then --zstd: plain" "$S" archive -b $B-z -o "$D" --once -q
	printf 'c\nd\n' | "$S" write -b $B-z -t mix
	ok "plain then --zstd: --zstd" "$S" archive -b $B-z -o "$D" --once -q --zstd
	same "plain then --zstd: version 4, then a new file of version 5" "4 5" \
		"$(version 1) $(version 2)"
	f2=$D/shmlog-0000000000000002.arc
	truncate -s $(($(stat -c %s "$f2") - 5)) "$f2"
	printf 'e\nf\n' | "$S" write -b $B-z -t mix
	"$S" archive -b $B-z -o "$D" --once --zstd 2>"$T/zmix.err"
	has "a torn compressed block: cut" "cut a torn tail" "$(cat "$T/zmix.err")"
	printf 'g\n' | "$S" write -b $B-z -t mix
	ok "--zstd then plain: plain" "$S" archive -b $B-z -o "$D" --once -q
	same "--zstd then plain: on in the version 5 file" "2" \
		"$(ls "$D"/*.arc | wc -l)"
	same "plain, --zstd, torn, plain: every record once, in order" \
		"a b c d e f g" "$("$S" cat --no-pager --archive "$D" -v raw | tr '\n' ' ' | sed 's/ $//')"
	ok "plain, --zstd, torn, plain: none lost" "$CHECK" "$D" 7 --no-loss
	ok "--zstd=-5: a level" "$S" archive -b $B-z -o "$T/zl" --once -q --zstd=-5
	bad "--zstd=0: refused, the levels said" "bad --zstd level .0.: give -[0-9]* to -1" \
		"$S" archive -b $B-z -o "$T/zl" --once -q --zstd=0
fi

# ---- the directory removed, or made again, under a running archiver ----
# An archiver whose directory was made again must not write beside the
# archiver that holds the new one's lock, nor remove its files past the
# limits: it makes, names and removes files only in the directory it
# opened, and stops at its next look at the path (every 0.5 s, and before
# it makes or removes a file), saying so; run again, it archives into the
# new directory what the buffer still holds.
"$S" create -b $B-dg --size 1M || exit 1
seq 1 1000 | "$S" write -b $B-dg -t dgone
gone() { ! kill -0 "$gpid" 2>/dev/null; }
for how in removed "made again"; do
	D=$T/dg
	rm -rf "$D"
	"$S" archive -b $B-dg -o "$D" -q 2>"$T/dg.err" & gpid=$!
	pids+=($gpid)
	ok "directory $how: the archiver started" poll 300 "$CHECK" "$D" 1000 --no-loss
	rm -rf "$D"
	[ "$how" = "made again" ] && mkdir "$D"
	# one that does not stop is killed: the test ends either way
	stopped=yes
	poll 300 gone || { stopped=no; kill -KILL "$gpid" 2>/dev/null; }
	same "directory $how: the archiver stops" yes "$stopped"
	rc=0
	wait "$gpid" || rc=$?
	if [ $stopped = yes ]; then
		same "directory $how: exit 1" 1 "$rc"
		has "directory $how: it says why" \
			"was removed or replaced while it archived" "$(cat "$T/dg.err")"
	fi
	[ "$how" = "made again" ] &&
		same "directory made again: nothing of the old archiver's in it" \
			"" "$(ls -A "$D")"
done
ok "directory made again: archived into anew" "$S" archive -b $B-dg -o "$D" --once -q
ok "directory made again: every record the buffer holds" "$CHECK" "$D" 1000 --no-loss

# ---- a thread's records in order when it moves lanes ----
# 50 waves of 16 threads at once into 8 lanes (7 a thread's own, 1
# shared): those without a lane borrow the shared one for each record,
# and move to a lane once its thread exits. The archiver follows them;
# each thread's records must be archived in the order it wrote them,
# through the merge and through the spans its drain takes of a lane that
# alone holds records. The buffer holds them all: no loss.
"$S" create -b $B-mv --size 64M --lanes 8 || exit 1
D=$T/mv
"$S" write -b $B-mv -t mv "0 1" # ID 0: the archiver is following
"$S" archive -b $B-mv -o "$D" -q & mvpid=$!
pids+=($mvpid)
ok "lane moves: the archiver started" poll 300 "$CHECK" "$D" 1 --no-loss
ok "lane moves: 16 threads x 50 waves wrote" "$AW" $B-mv movers 16 100 50
ok "lane moves: all archived" poll 600 "$CHECK" "$D" 80001 --no-loss
kill -TERM $mvpid; wait $mvpid
ok "lane moves: each thread's records in its order" \
	"$CHECK" "$D" 80001 --no-loss --thread-seq

echo "test_archive: $checks checks, $fail failed"
[ $fail -gt 0 ] && exit 1
# a check that could not run makes the test skipped, never passed
[ -n "${skipped:-}" ] && exit 77
exit 0
