#!/usr/bin/env bash
# Measures what BENCHMARKS.md reports, against the scripted model server at
# zero latency:
#   1. engine overhead per API round trip (go test -bench, median of COUNT runs),
#      with the server in-process and in a separate process;
#   2. a whole `talaria run` of a ten-round tool task: CPU (user+sys, tool
#      processes included) and peak RSS;
#   3. cold start: from starting `talaria run` to the server receiving its
#      first request;
#   4. long sessions (issue 18): a call's request work by session size (1k,
#      10k, 50k messages), and `talaria run -c` on generated databases of
#      those sizes (CPU, peak RSS, time to the first request);
#   5. 100 concurrent turns at 20 ms per call: new connections per 1,000
#      calls and CPU per turn, the old client pool against the tuned one.
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
echo "== 4. long sessions: one call's request work (project, repair, clean, encode) by session size"
echo "   go test -run '^\$' -bench CallBySessionSize -benchtime 30x ./llm/openai/"
go test -run '^$' -bench CallBySessionSize -benchtime 30x ./llm/openai/ | tee "$out/callbysize.txt" | grep '^Benchmark'
go build -o "$out/gensession" ./bench/gensession
: > "$out/server-url.txt"
"$out/fakellm-server" -script noop > "$out/server-url.txt" &
server_pid=$!
for _ in $(seq 50); do [ -s "$out/server-url.txt" ] && break; sleep 0.1; done
url=$(head -1 "$out/server-url.txt")
for n in 1000 10000 50000; do
  h=$(mktemp -d)
  printf 'compression:\n  disabled: true\n' > "$h/config.yaml" # measure the session as it is
  "$out/gensession" -db "$h/state.db" -messages "$n"
  echo "-- talaria run -c on a $n-message session (11 calls), /usr/bin/time:"
  for _ in 1 2; do
    TALARIA_HOME="$h" /usr/bin/time -f '   %U s user  %S s sys  %M KB peak RSS  %e s wall' "$out/talaria" run -c --api openai \
      --base-url "$url/v1" --model bench-model --yes --quiet "go on" 2>&1 >/dev/null | tail -1
  done
  echo "-- time to the first request (fakellm-server -runs 3)"
  TALARIA_HOME="$h" "$out/fakellm-server" -script noop -warmup 0 -runs 3 -- "$out/talaria" run -c --api openai \
    --base-url '{openai_url}' --model bench-model --yes --quiet "go on" | grep -E '^ *median'
  rm -rf "$h"
done
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""

echo
echo "== 5. 100 concurrent turns, 20 ms per call: connections per 1,000 calls and CPU per turn"
echo "   go test -run '^\$' -bench ConcurrentTurns -benchtime 2x ./turn/"
(cd turn && ../"$out"/turn.test -test.run '^$' -test.bench 'ConcurrentTurns' -test.benchtime 2x) | tee "$out/concurrent.txt" | grep '^Benchmark'

echo
echo "== 4. store: Append, writer ceiling, search at 50,000 messages (bench/store.sh; BEFORE=REV compares)"
bench/store.sh

echo
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
