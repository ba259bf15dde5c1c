# The checks the CLI test scripts share (sourced, not run). Each counts in
# $checks and, when it fails, says what it expected on stderr and counts in
# $fail; the script ends with `exit $((fail > 0))` or the like.
checks=${checks:-0} fail=${fail:-0}

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
