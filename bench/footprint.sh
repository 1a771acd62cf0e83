#!/usr/bin/env bash
# Footprint of two talaria binaries side by side (issue 30), interleaved
# round by round so machine load hits both alike; medians printed.
#
#   bench/footprint.sh BEFORE_BINARY [AFTER_BINARY]
#
# AFTER_BINARY defaults to a stripped static build of this tree. Measured per
# binary: stripped size, `talaria version` peak RSS and wall (/usr/bin/time),
# and the ten-round tool task (`fakellm-server -script task`): process start
# to the first request, CPU, peak RSS. ROUNDS (default 7) rounds of VERSIONS
# (default 10) `version` runs and one task run each. CODEX=path/to/codex adds
# `codex --version` as a baseline (after the rounds, so not interleaved).
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench/footprint.sh BEFORE_BINARY [AFTER_BINARY]}
out=bench/out/footprint
mkdir -p "$out"
after=${2:-}
if [ -z "$after" ]; then
  after=$out/talaria
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$after" ./cmd/talaria
fi
go build -o "$out/fakellm-server" ./bench/fakellm-server
ROUNDS=${ROUNDS:-7}
VERSIONS=${VERSIONS:-10}
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT

echo "== machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for b in before after; do
  eval "bin=\$$b"
  printf '%-6s %s: %.1f MiB\n' "$b" "$bin" "$(stat -c %s "$bin" | awk '{print $1/1048576}')"
  : > "$out/$b-version.txt" ; : > "$out/$b-task.txt"
done
for r in $(seq "$ROUNDS"); do
  for b in before after; do
    eval "bin=\$$b"
    for _ in $(seq "$VERSIONS"); do
      rss=$(/usr/bin/time -f '%M' "$bin" version 2>&1 >/dev/null | tail -1)
      wall=$( { TIMEFORMAT=%3R; time "$bin" version >/dev/null; } 2>&1 )
      echo "$rss $wall" >> "$out/$b-version.txt"
    done
    TALARIA_HOME="$home" "$out/fakellm-server" -script task -warmup 0 -runs 1 -- \
      "$bin" run --api openai --base-url '{openai_url}' --model gpt-4.1 --workspace '{workspace}' --yes --quiet "do the task" |
      awk '$1=="1"{print $2, $6, $7}' >> "$out/$b-task.txt"
  done
done
med() { sort -n | awk '{v[NR]=$1} END{ if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'; }
echo
printf '%-6s %18s %18s %22s %14s %20s\n' "" "version RSS MiB" "version wall ms" "task start→1st req ms" "task CPU ms" "task peak RSS MiB"
for b in before after; do
  vr=$(awk '{print $1/1024}' "$out/$b-version.txt" | med)
  vw=$(awk '{print $2*1000}' "$out/$b-version.txt" | med)
  tc=$(awk '{print $1}' "$out/$b-task.txt" | med)
  tu=$(awk '{print $2}' "$out/$b-task.txt" | med)
  tr=$(awk '{print $3}' "$out/$b-task.txt" | med)
  printf '%-6s %18.1f %18.0f %22.1f %14.0f %20.1f\n' "$b" "$vr" "$vw" "$tc" "$tu" "$tr"
done
if [ -n "${CODEX:-}" ]; then
  # A peer's native binary (npm install @openai/codex ships one) as a
  # baseline for the idle footprint: `codex --version`.
  : > "$out/codex-version.txt"
  for _ in $(seq $((ROUNDS*VERSIONS))); do
    rss=$(/usr/bin/time -f '%M' "$CODEX" --version 2>&1 >/dev/null | tail -1)
    wall=$( { TIMEFORMAT=%3R; time "$CODEX" --version >/dev/null; } 2>&1 )
    echo "$rss $wall" >> "$out/codex-version.txt"
  done
  printf '%-6s %18.1f %18.0f   (codex --version, %s)\n' codex "$(awk '{print $1/1024}' "$out/codex-version.txt" | med)" \
    "$(awk '{print $2*1000}' "$out/codex-version.txt" | med)" "$CODEX"
fi
echo "(medians of $((ROUNDS*VERSIONS)) version runs and $ROUNDS task runs per binary; raw data in $out/)"
