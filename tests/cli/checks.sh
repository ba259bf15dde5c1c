# The checks the CLI test scripts share (sourced, not run). Each counts in
# $checks and, when it fails, says what it expected on stderr and counts in
# $fail; a check that cannot run here is named with `skip`; the script ends
# with `finish NAME`.
checks=${checks:-0} fail=${fail:-0}
skipped=()

skip() { # skip WHAT AND WHY: a check not run here
	skipped+=("$*")
	echo "SKIP: $*" >&2
}
finish() { # finish NAME: exit 1 if a check failed, else 77 (CTest: skipped) if one was not run, else 0
	echo "$1: $checks checks, $fail failed, ${#skipped[@]} not run"
	[ "$fail" -eq 0 ] || exit 1
	if [ ${#skipped[@]} -gt 0 ]; then
		printf "$1: skipped: %s\n" "${skipped[@]}" >&2
		exit 77
	fi
	exit 0
}

# A copy of CLI $1 and its library that another user can run, in a new
# directory of mode 0755 whose path goes in $other_dir (remove it when
# done): the build tree may sit where only its owner can enter (mktemp -d
# makes directories of mode 0700, and many home directories are). Run it
# as user $2 with `as_other "$other_dir/shmlog" ARGS...`. Returns 1, after
# a skip saying why, if that user cannot run it even so.
other_user_cli() { # other_user_cli SHMLOG UID
	other_uid=$2
	other_dir=$(mktemp -d "${TMPDIR:-/tmp}/shmlog-other.XXXXXX") || {
		skip "the checks as another user: cannot make a directory for a copy of the CLI"
		return 1
	}
	chmod 0755 "$other_dir"
	cp "$1" "$other_dir/shmlog"
	local lib
	lib=$(ldd "$1" 2>/dev/null | awk '$1 ~ /^libshmlog[.]so/ {print $3}')
	[ ! -f "$lib" ] || cp -L "$lib" "$other_dir/$(basename "$lib")"
	chmod -R a+rX "$other_dir"
	if ! out=$(as_other "$other_dir/shmlog" --version 2>&1); then
		skip "the checks as another user: uid $2 cannot run a copy of the CLI in $other_dir ($out)"
		return 1
	fi
}
as_other() { # as_other COMMAND...: run as user $other_uid, no groups
	LD_LIBRARY_PATH=$other_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		setpriv --reuid "$other_uid" --regid "$other_uid" --clear-groups "$@"
}

ok() { # ok DESCRIPTION COMMAND...: must succeed
	local d=$1; shift
	checks=$((checks + 1))
	if ! out=$("$@" 2>&1); then
		echo "FAIL: $d: exit $?: $out" >&2; fail=$((fail + 1))
	fi
}
bad() { # bad DESCRIPTION PATTERN COMMAND...: must fail, stderr matching
	local d=$1 pat=$2; shift 2
	checks=$((checks + 1))
	if out=$("$@" 2>&1); then
		echo "FAIL: $d: succeeded: $out" >&2; fail=$((fail + 1))
	elif ! grep -qiE -- "$pat" <<<"$out"; then
		echo "FAIL: $d: message lacks /$pat/: $out" >&2; fail=$((fail + 1))
	fi
}
has() { # has DESCRIPTION PATTERN TEXT
	checks=$((checks + 1))
	if ! grep -qE -- "$2" <<<"$3"; then
		echo "FAIL: $1: /$2/ not in: $3" >&2; fail=$((fail + 1))
	fi
}
hasnt() { # hasnt DESCRIPTION PATTERN TEXT
	checks=$((checks + 1))
	if grep -qE -- "$2" <<<"$3"; then
		echo "FAIL: $1: /$2/ found in: $3" >&2; fail=$((fail + 1))
	fi
}
same() { # same DESCRIPTION EXPECTED ACTUAL
	checks=$((checks + 1))
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1: expected [$2], got [$3]" >&2; fail=$((fail + 1))
	fi
}
