# bash completion for shmlog(1): commands, options, buffer names, tags.
# Installed as share/bash-completion/completions/shmlog. Commands and
# options (and forward's URL schemes) are read from `shmlog --help` and
# `shmlog COMMAND --help`, so they never go stale; buffers from /dev/shm; tags from the records of the
# buffer named on the line (its last 2000).

# The buffers in /dev/shm, by name.
_shmlog_buffers()
{
	local f
	for f in /dev/shm/shmlog.*; do
		[ -f "$f" ] || continue
		f=${f#/dev/shm/shmlog.}
		case $f in *.tmp-*) continue ;; esac
		printf '%s\n' "$f"
	done
}

# _shmlog_tags SHMLOG [-b NAME]...: the tags of the newest records.
_shmlog_tags()
{
	local s=$1
	shift
	"$s" tail -n 2000 "$@" -v brief --no-pager 2>/dev/null |
		sed -n 's|^[VDIWEF]/\([^ (]*\) *(.*|\1|p' | sort -u
}

# _shmlog_schemes SHMLOG: the URL schemes `shmlog forward --to` takes, as
# its --help lists them (at the start of a line, or after "; ").
_shmlog_schemes()
{
	"$1" forward --help 2>/dev/null |
		grep -oE '^  [a-z][a-z+-]*:(//)?|; [a-z][a-z+-]*:(//)?' |
		sed 's/^[ ;]*//'
}

# _shmlog_reply CUR WORD...: COMPREPLY from the WORDs CUR begins, with
# what bash took as an earlier word (up to a ':') left off.
_shmlog_reply()
{
	local cur=$1 w
	shift
	COMPREPLY=()
	for w in "$@"; do
		[[ $w == "$cur"* ]] && COMPREPLY+=("$w")
	done
	if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
		local pre=${cur%"${cur##*:}"} i
		for i in "${!COMPREPLY[@]}"; do
			COMPREPLY[i]=${COMPREPLY[i]#"$pre"}
		done
	fi
}

_shmlog()
{
	local s=${COMP_WORDS[0]} line=${COMP_LINE:0:COMP_POINT}
	local cur=${line##*[[:space:]]} prev cmd="" i
	local -a bufs=() words
	# the words before the one completed, as the shell split them
	read -r -a words <<<"$line"
	[ -z "$cur" ] || unset 'words[${#words[@]}-1]'
	prev=${words[${#words[@]} - 1]}
	for ((i = 1; i < ${#words[@]}; i++)); do
		case ${words[i]} in
		-b | --buffer)
			((i + 1 < ${#words[@]})) && bufs+=(-b "${words[i + 1]}")
			((++i)) ;;
		--buffer=*) bufs+=(-b "${words[i]#--buffer=}") ;;
		-*) ;;
		*) [ -n "$cmd" ] || cmd=${words[i]} ;;
		esac
	done
	case $prev in
	-b | --buffer)
		_shmlog_reply "$cur" $(_shmlog_buffers)
		return ;;
	-v | --format)
		if [ "$cmd" = top ]; then
			_shmlog_reply "$cur" text json
		else
			_shmlog_reply "$cur" threadtime brief long raw json usec \
				nsec year zone epoch monotonic uid color printable utc
		fi
		return ;;
	--by)
		[ "$cmd" = top ] && _shmlog_reply "$cur" pid tag prio lane
		return ;;
	-s | --sort)
		if [ "$cmd" = top ]; then
			_shmlog_reply "$cur" records bytes total total-bytes key lost
			return
		fi ;;
	-p | --priority | --stderr-priority)
		_shmlog_reply "$cur" V D I W E F emerg alert crit err warning \
			notice info debug
		return ;;
	--archive | -o | --output) # an archive's directory
		[ "$prev" != -o ] || [ "$cmd" = archive ] || return
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	-c | --clock)
		[ "$cmd" = create ] && _shmlog_reply "$cur" tsc realtime coarse
		return ;;
	--color)
		_shmlog_reply "$cur" auto always never
		return ;;
	--to)
		_shmlog_reply "$cur" $(_shmlog_schemes "$s")
		compopt -o nospace 2>/dev/null
		return ;;
	esac
	if [ -z "$cmd" ]; then
		_shmlog_reply "$cur" $("$s" --help 2>/dev/null |
			awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}') \
			-b --buffer --help --version
		return
	fi
	if [[ $cur == -* ]]; then
		_shmlog_reply "$cur" $("$s" "$cmd" --help 2>/dev/null |
			grep -oE -- '^ +(-[a-zA-Z], )?--?[a-zA-Z][a-zA-Z-]*' |
			grep -oE -- '--?[a-zA-Z][a-zA-Z-]*' | sort -u)
		return
	fi
	case $cmd in
	cat | tail | level | forward)
		if [[ $cur == *:* ]]; then # TAG:P
			local tag=${cur%:*}
			_shmlog_reply "$cur" "$tag:V" "$tag:D" "$tag:I" "$tag:W" \
				"$tag:E" "$tag:F" "$tag:S"
		else
			local t
			local -a specs=("*:")
			for t in $(_shmlog_tags "$s" "${bufs[@]}"); do
				specs+=("$t:")
			done
			_shmlog_reply "$cur" "${specs[@]}"
			compopt -o nospace 2>/dev/null
		fi ;;
	run)
		COMPREPLY=($(compgen -c -- "$cur")) ;;
	esac
}
complete -F _shmlog shmlog
