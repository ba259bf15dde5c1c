# fish completion for shmlog(1): commands, options, buffer names, tags.
# Installed as share/fish/vendor_completions.d/shmlog.fish. Commands and
# options are read from `shmlog --help` and `shmlog COMMAND --help`;
# buffers from /dev/shm; tags from the buffer named on the line.

# The shmlog being completed, and the -b NAMEs on the line.
function __shmlog_bin
    set -l toks (commandline -opc)
    echo $toks[1]
end

function __shmlog_bufargs
    set -l toks (commandline -opc)
    set -l next 0
    for t in $toks[2..-1]
        if test $next = 1
            echo -b
            echo $t
            set next 0
        else if contains -- $t -b --buffer
            set next 1
        else if string match -q -- '--buffer=*' $t
            echo -b
            string replace -- '--buffer=' '' $t
        end
    end
end

# The command on the line: its first word that is no option (nor -b's).
function __shmlog_cmd
    set -l toks (commandline -opc)
    set -l skip 0
    for t in $toks[2..-1]
        if test $skip = 1
            set skip 0
        else if contains -- $t -b --buffer
            set skip 1
        else if not string match -q -- '-*' $t
            echo $t
            return
        end
    end
end

function __shmlog_needs_cmd
    set -l cmd (__shmlog_cmd)
    test -z "$cmd"
end

function __shmlog_using
    contains -- (__shmlog_cmd) $argv
end

function __shmlog_commands
    set -l s (__shmlog_bin)
    $s --help 2>/dev/null | awk '/^commands:/ {on = 1; next}
        on && /^  [a-z]/ {n = $1; $1 = ""; sub(/^ +/, ""); print n "\t" $0}'
end

function __shmlog_options
    set -l s (__shmlog_bin)
    $s (__shmlog_cmd) --help 2>/dev/null |
        string match -r -- '^ +(?:-[a-zA-Z], )?--?[a-zA-Z][a-zA-Z-]*' |
        string match -ar -- '--?[a-zA-Z][a-zA-Z-]*' | sort -u
end

function __shmlog_buffers
    for f in /dev/shm/shmlog.*
        test -f $f; or continue
        set -l n (string replace -- /dev/shm/shmlog. '' $f)
        string match -q -- '*.tmp-*' $n; or echo $n
    end
end

# TAG: for each tag of the newest records, and *:; after "TAG:", P.
function __shmlog_specs
    set -l cur (commandline -ct)
    if string match -q -- '*:*' $cur
        set -l tag (string replace -r -- ':[^:]*$' '' $cur)
        printf '%s\n' $tag:V $tag:D $tag:I $tag:W $tag:E $tag:F $tag:S
        return
    end
    echo '*:'
    set -l s (__shmlog_bin)
    $s tail -n 2000 (__shmlog_bufargs) -v brief --no-pager 2>/dev/null |
        string replace -rf -- '^[VDIWEF]/([^ (]*) *\(.*' '$1:' | sort -u
end

# forward --to: the URL schemes its --help lists
function __shmlog_schemes
    set -l s (__shmlog_bin)
    $s forward --help 2>/dev/null |
        string match -ar -- '^  [a-z][a-z+-]*:(?://)?|; [a-z][a-z+-]*:(?://)?' |
        string replace -r -- '^[ ;]*' ''
end

complete -c shmlog -f
complete -c shmlog -n __shmlog_needs_cmd -x -a '(__shmlog_commands)'
complete -c shmlog -s b -l buffer -x -a '(__shmlog_buffers)' -d 'buffer'
complete -c shmlog -n 'not __shmlog_needs_cmd; and string match -q -- "-*" (commandline -ct)' \
    -x -a '(__shmlog_options)'
complete -c shmlog -n '__shmlog_using cat tail level forward; and not string match -q -- "-*" (commandline -ct)' \
    -x -a '(__shmlog_specs)'
complete -c shmlog -n '__shmlog_using forward' -l to -x -a '(__shmlog_schemes)'
complete -c shmlog -n '__shmlog_using cat tail run write' -s p -l priority -x \
    -a 'V D I W E F emerg alert crit err warning notice info debug'
complete -c shmlog -n '__shmlog_using top' -s v -l format -x -a 'text json'
complete -c shmlog -n '__shmlog_using top' -l by -x -a 'pid tag prio lane'
complete -c shmlog -n '__shmlog_using top' -s s -l sort -x \
    -a 'records bytes total total-bytes key lost'
complete -c shmlog -n '__shmlog_using cat tail' -s v -l format -x \
    -a 'threadtime brief long raw json usec nsec year zone epoch monotonic uid color printable utc'
complete -c shmlog -n '__shmlog_using run' -x -a '(__fish_complete_subcommand --fcs-skip=2)'
