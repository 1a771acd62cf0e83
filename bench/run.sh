#!/usr/bin/env bash
# Measures what BENCHMARKS.md reports, against the scripted model server at
# zero latency:
#   1. engine overhead per API round trip (go test -bench, median of COUNT runs),
#      with the server in-process and in a separate process;
#   2. a whole `talaria run` of a ten-round tool task: CPU (user+sys, tool
#      processes included) and peak RSS;
#   3. cold start: from starting `talaria run` to the server receiving its
#      first request.
# Knobs (environment): COUNT (benchmark repetitions, default 10), BENCHTIME
# (turns per benchmark run, default 100x), BENCHTIME_LONG and COUNT_LONG (the
# same for the 1,000-message session, default 20x and 3), RUNS (talaria runs
# per API, default 20). Output: a table on stdout; raw data under bench/out/.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-100x}
RUNS=${RUNS:-20}
BENCHTIME_LONG=${BENCHTIME_LONG:-20x}
COUNT_LONG=${COUNT_LONG:-3}
out=bench/out
mkdir -p "$out"

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | xargs || uname -m), $(go version | cut -d' ' -f3)"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"

echo "== build (CGO_ENABLED=0)"
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out/talaria" ./cmd/talaria
go build -o "$out/fakellm-server" ./bench/fakellm-server
go test -c -o "$out/turn.test" ./turn/
ls -l "$out/talaria" | awk '{printf "talaria binary: %.1f MB\n", $5/1048576}'

server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT

. bench/lib.sh # medians

echo
echo "== 1. engine overhead per API round trip (10 tool rounds + answer per turn, SQLite WAL synchronous=normal)"
echo "   go test -run '^\$' -bench 'RoundTrip\$' -benchtime $BENCHTIME -count $COUNT ./turn/   (TALARIA_BENCH_URL=server URL for the second part)"
(cd turn && ../"$out"/turn.test -test.run '^$' -test.bench 'RoundTrip$' -test.benchtime "$BENCHTIME" -test.count "$COUNT") > "$out/roundtrip-inprocess.txt"
echo "-- scripted server in the same process (its CPU counted too)"
echo "ns/roundtrip (wall):";      medians "$out/roundtrip-inprocess.txt" ns/roundtrip
echo "cpu-ns/roundtrip:";         medians "$out/roundtrip-inprocess.txt" cpu-ns/roundtrip

: > "$out/server-url.txt"
"$out/fakellm-server" -script noop > "$out/server-url.txt" &
server_pid=$!
for _ in $(seq 50); do [ -s "$out/server-url.txt" ] && break; sleep 0.1; done
url=$(head -1 "$out/server-url.txt")
echo "-- scripted server in its own process ($url): cpu-ns is the engine and its HTTP client alone"
(cd turn && TALARIA_BENCH_URL="$url" ../"$out"/turn.test -test.run '^$' -test.bench 'RoundTrip$' -test.benchtime "$BENCHTIME" -test.count "$COUNT") > "$out/roundtrip-external.txt"
echo "ns/roundtrip (wall):";      medians "$out/roundtrip-external.txt" ns/roundtrip
echo "cpu-ns/roundtrip:";         medians "$out/roundtrip-external.txt" cpu-ns/roundtrip
echo "-- the same on a session that already holds 1,000 messages (~300 KB requests), server in its own process"
(cd turn && TALARIA_BENCH_URL="$url" ../"$out"/turn.test -test.run '^$' -test.bench 'RoundTripLongSession' -test.benchtime "$BENCHTIME_LONG" -test.count "$COUNT_LONG") > "$out/roundtrip-long.txt"
echo "ns/roundtrip (wall):";      medians "$out/roundtrip-long.txt" ns/roundtrip
echo "cpu-ns/roundtrip:";         medians "$out/roundtrip-long.txt" cpu-ns/roundtrip
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""

echo
echo "== 2+3. whole 'talaria run' of the ten-round tool task (3 shell processes, 2 writes), $RUNS runs per API after 1 warm-up"
home=$(mktemp -d)
for api in openai anthropic; do
  if [ "$api" = openai ]; then base='{openai_url}'; model=gpt-4.1; else base='{anthropic_url}'; model=claude-sonnet-4-5; fi
  echo "-- --api $api"
  echo "   TALARIA_HOME=$home $out/fakellm-server -script task -runs $RUNS -- $out/talaria run --api $api --base-url $base --model $model --workspace {workspace} --yes --quiet 'do the task'"
  TALARIA_HOME="$home" "$out/fakellm-server" -script task -runs "$RUNS" -- \
    "$out/talaria" run --api "$api" --base-url "$base" --model "$model" --workspace '{workspace}' --yes --quiet "do the task" |
    tee "$out/run-$api.txt" | grep -E '^ *(run|median|min|max) '
done

if [ -x /usr/bin/time ]; then
  echo
  echo "-- cross-check with /usr/bin/time -v (one run, openai)"
  : > "$out/server-url.txt"
  "$out/fakellm-server" -script task > "$out/server-url.txt" &
  server_pid=$!
  for _ in $(seq 50); do [ -s "$out/server-url.txt" ] && break; sleep 0.1; done
  url=$(head -1 "$out/server-url.txt")
  ws=$(mktemp -d)
  "$out/fakellm-server" -write-task "$ws"
  TALARIA_HOME="$home" /usr/bin/time -v "$out/talaria" run --api openai --base-url "$url/v1" --model gpt-4.1 \
    --workspace "$ws" --yes --quiet "do the task" 2>&1 >/dev/null |
    grep -E 'User time|System time|Maximum resident|Elapsed' | sed 's/^\t*/   /'
  rm -rf "$ws"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
fi
rm -rf "$home"
echo
echo "== 4. store: Append, writer ceiling, search at 50,000 messages (bench/store.sh; BEFORE=REV compares)"
bench/store.sh

echo
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
