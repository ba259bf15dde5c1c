#!/bin/sh
# Build a minimal OpenTelemetry Collector (OTLP receiver, OTLP/HTTP exporter)
# into DIR from the collector's Go modules, once: DIR/otelcol-shmlog.
# usage: build-otelcol.sh DIR. Exit 0 when the binary is there, 1 if it
# could not be built (no go, no network to the module proxy, ...).
set -e
dir=$1
[ -x "$dir/otelcol-shmlog" ] && exit 0
command -v go >/dev/null || { echo "go is not installed" >&2; exit 1; }
mkdir -p "$dir"
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$dir/builder" ] ||
    GOBIN="$dir" go install go.opentelemetry.io/collector/cmd/builder@v0.140.0
sed "s|OUTPUT_PATH|$dir/src|" "$here/manifest.yaml" > "$dir/manifest.yaml"
"$dir/builder" --config "$dir/manifest.yaml"
cp "$dir/src/otelcol-shmlog" "$dir/otelcol-shmlog"
