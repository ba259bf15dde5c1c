#!/usr/bin/env bash
# Run one libFuzzer target for a bounded time on the committed seeds.
# usage: run_fuzz.sh TARGET SEED_DIR SECONDS MAX_LEN WORK_DIR
# New inputs go to WORK_DIR/corpus (the committed seeds are not touched);
# a crash leaves WORK_DIR/crash-* to copy into the seed directory once
# fixed, so that the replay test keeps checking it.
set -euo pipefail
target=$1 seeds=$2 secs=$3 maxlen=$4 work=$5
mkdir -p "$work/corpus"
exec "$target" -max_total_time="$secs" -max_len="$maxlen" -timeout=60 \
	-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" \
	"$work/corpus" "$seeds"
