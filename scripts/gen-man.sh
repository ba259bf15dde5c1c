#!/usr/bin/env bash
# Regenerate the committed man pages (docs/man/*.1, *.3) from their scdoc
# sources, so that `cmake --install` installs them where scdoc is missing.
# Run it after editing a docs/man/*.scd; the test man_pages_current fails
# until the pages match their sources. The page's date is its source's last
# commit (SOURCE_DATE_EPOCH), so regenerating an unchanged page changes
# nothing.
# usage: scripts/gen-man.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v scdoc >/dev/null || {
	echo "gen-man: scdoc is missing (Debian package scdoc)" >&2
	exit 1
}
for src in docs/man/*.scd; do
	page=${src%.scd}
	when=$(git log -1 --format=%ct -- "$src" 2>/dev/null || true)
	SOURCE_DATE_EPOCH=${when:-$(date +%s)} scdoc <"$src" >"$page.tmp"
	mv "$page.tmp" "$page"
	echo "gen-man: $page"
done
