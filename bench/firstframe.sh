#!/usr/bin/env bash
# Process start → first frame of `talaria chat` in a pty, median of N (20),
# next to `talaria version`'s wall time, interleaved (issue 27 item 8);
# then where a start's time goes: the package inits (GODEBUG=inittrace=1).
#
#   bench/firstframe.sh [TALARIA_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/firstframe
mkdir -p "$out"
bin=${1:-}
if [ -z "$bin" ]; then
  bin=$out/talaria
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$bin" ./cmd/talaria
fi
bin=$(realpath "$bin")
go build -o "$out/firstframe" ./bench/firstframe
echo "== machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$out/firstframe" -bin "$bin" -n "${N:-20}"
# inittrace: one line per package init with its clock time; summed, and
# the five slowest.
GODEBUG=inittrace=1 "$bin" version 2>"$out/inittrace.txt" >/dev/null
awk '/^init /{n++; ms+=$5} END{printf "package inits: %d, %.1f ms of clock in total\n", n, ms}' "$out/inittrace.txt"
echo "slowest inits:"
sort -k5 -n -r "$out/inittrace.txt" | head -5 | awk '{print "  " $2, $5, "ms"}'
