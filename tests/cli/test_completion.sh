#!/usr/bin/env bash
# The shell completions (tools/completion) offer shmlog's commands, each
# command's options, buffer names, tags of the buffer named on the line,
# TAG:P levels and forward's URL schemes: bash's through its completion
# function, fish's through `complete -C`, zsh's with compadd and compset
# stubbed (it needs no terminal then). A shell that is not installed is left out, and said so.
# usage: test_completion.sh PATH_TO_SHMLOG
set -u
S=$(cd "$(dirname "${1:?usage: test_completion.sh PATH_TO_SHMLOG}")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
comp=$here/../../tools/completion
B=comp-test-$$
fail=0 checks=0
unset SHMLOG_BUFFER SHMLOG_TAGS
. "$here/checks.sh"
bin=$(mktemp -d)
cleanup() { "$S" rm -b $B >/dev/null 2>&1; rm -rf "$bin"; }
trap cleanup EXIT
ln -s "$S" "$bin/shmlog"
ok "create" "$S" create -b $B --size 64K
ok "write net" "$S" write -b $B -t net "link down"
ok "write disk" "$S" write -b $B -t disk "full"

# each shell's answer for a command line, as one line of words
bash_comp() {
	# bash splits words at ':' too (COMP_WORDBREAKS): after "net:" the
	# word completed is what follows the ':'
	PATH=$bin:$PATH bash -c '
		COMP_WORDBREAKS=" \t\n\"'"'"'><=;|&(:"
		source "$1/shmlog.bash"
		COMP_LINE=$2 COMP_POINT=${#2} COMP_WORDS=(shmlog) COMP_CWORD=1
		_shmlog
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$1" | sort | tr '\n' ' '
}
fish_comp() {
	PATH=$bin:$PATH fish -c 'source $argv[1]; complete -C $argv[2]' "$comp/shmlog.fish" "$1" |
		cut -f1 | sort | tr '\n' ' '
}
zsh_comp() {
	PATH=$bin:$PATH zsh -c '
		compadd() {
			local -a out; local arr=0 suffix=
			while [[ $1 == -* ]]; do
				case $1 in (-a) arr=1 ;; (-S) suffix=$2; shift ;; (--) shift; break ;; esac
				shift
			done
			if (( arr )); then out=(${(P)1}); else out=("$@"); fi
			# zsh keeps what the word begins with; so does this stub
			local w; for w in "${out[@]}"; do
				[[ $PREFIX$w == $words[CURRENT]* ]] && print -r -- "$PREFIX$w$suffix"
			done
		}
		compset() { [[ $words[CURRENT] == *:* ]] && PREFIX=${words[CURRENT]%:*}:; }
		PREFIX=
		words=(${(z)2}); [[ $2 == *" " ]] && words+=("")
		CURRENT=${#words}
		source $1/_shmlog' _ "$comp" "$1" | sort | tr '\n' ' '
}

check_shell() { # check_shell NAME FUNCTION LEVELS_AFTER_net:
	local n=$1 f=$2 levels=$3
	has "$n: commands" "(^| )cat( |$)" "$($f 'shmlog ca')"
	hasnt "$n: only what the word begins" "(^| )write( |$)" "$($f 'shmlog ca')"
	has "$n: a command's long options" "--follow .*--format" "$($f 'shmlog cat --fo')"
	has "$n: rm --force" "--force" "$($f 'shmlog rm --f')"
	has "$n: buffer names" "(^| )$B( |$)" "$($f "shmlog cat -b ${B%-*}")"
	has "$n: tags of the buffer" "disk: .*net:" "$($f "shmlog cat -b $B ")"
	has "$n: tags with -b before the command" "disk: .*net:" "$($f "shmlog -b $B tail ")"
	same "$n: TAG:P" "$levels" "$($f "shmlog cat -b $B net:")"
	has "$n: priorities" "(^| )err( |$)" "$($f 'shmlog write -p e')"
	same "$n: forward --to, the URL schemes" "otlp+json:// otlp:// " \
		"$($f "shmlog forward -b $B --to o")"
	hasnt "$n: no tags after --to" "net:" "$($f "shmlog forward -b $B --to ")"
	has "$n: forward --archive, -f" "--archive .*--follow" "$($f 'shmlog forward --')"
	has "$n: top" "(^| )top( |$)" "$($f 'shmlog to')"
	has "$n: top --by" "(^| )lane( |$)" "$($f 'shmlog top --by l')"
	has "$n: top -s" "(^| )total-bytes( |$)" "$($f 'shmlog top -s total-')"
	same "$n: top -v" "json " "$($f 'shmlog top -v j')"
}

check_shell bash bash_comp "D E F I S V W "
for sh in fish zsh; do
	if command -v $sh >/dev/null; then
		check_shell $sh ${sh}_comp "net:D net:E net:F net:I net:S net:V net:W "
	else
		echo "note: $sh missing (Debian package $sh): its completion was not checked" >&2
	fi
done
echo "test_completion: $checks checks, $fail failed"
exit $((fail > 0))
