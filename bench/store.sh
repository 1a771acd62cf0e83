#!/usr/bin/env bash
# Measures the store figures of BENCHMARKS.md §7 (issue 18):
#   1. SQLite Append latency (median, p99) and the writer ceiling: commits/s
#      with 1, 10 and 100 writers on one Store;
#   2. `talaria sessions search WORD` at 50,000 messages, whole process, for
#      a common word ("the", in half the rows) and a rare one ("kumquat"),
#      plus the same searches inside one process (BenchmarkSearch50k, which
#      also runs the old snippet-every-match query for comparison).
# With BEFORE=REV (a commit or branch, e.g. the merge base) the same is
# measured for that revision too, built in a temporary worktree, in the same
# run. Knobs: COUNT (benchmark repetitions, default 5), RUNS (process runs
# per search, default 21). Raw output under bench/out/store/.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${COUNT:-5}
RUNS=${RUNS:-21}
BEFORE=${BEFORE:-}
out=bench/out/store
mkdir -p "$out"
tmp=$(mktemp -d)
cleanup() {
  if [ -n "$BEFORE" ] && [ -d "$tmp/before" ]; then git worktree remove --force "$tmp/before" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"

. bench/lib.sh # medians

# timeit N cmd...: median and min wall time of N runs, in ms.
timeit() {
  local n=$1; shift
  for _ in $(seq "$n"); do
    local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 ))
  done | sort -n | awk '{ a[NR] = $1 } END { printf "median %6.1f ms  min %6.1f ms  (%d runs)\n", a[int((NR+1)/2)]/1000, a[1]/1000, NR }'
}

# trees to measure: this one, and BEFORE's when given
trees=(".")
names=("this tree")
if [ -n "$BEFORE" ]; then
  git worktree add --detach "$tmp/before" "$BEFORE" >/dev/null
  # The generator and the benchmarks are new; the old tree gets copies (they
  # use only the store's public API), so both trees run the same code.
  mkdir -p "$tmp/before/bench/gendb" "$tmp/before/bench/internal/benchmain" && cp bench/gendb/main.go "$tmp/before/bench/gendb/"
  cp bench/internal/benchmain/*.go "$tmp/before/bench/internal/benchmain/"
  cp store/sqlite/bench_test.go "$tmp/before/store/sqlite/bench_test.go"
  mkdir -p "$tmp/before/internal/testing/transcriptgen" && cp internal/testing/transcriptgen/*.go "$tmp/before/internal/testing/transcriptgen/"
  trees+=("$tmp/before")
  names+=("$BEFORE")
fi

for i in "${!trees[@]}"; do
  t=${trees[$i]}
  tag=$([ "$i" = 0 ] && echo after || echo before)
  echo
  echo "==== ${names[$i]}"
  (cd "$t" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$tmp/talaria-$tag" ./cmd/talaria)
  (cd "$t" && go test -c -o "$tmp/sqlite-$tag.test" ./store/sqlite/)
  (cd "$t" && go run ./bench/gendb -out "$tmp/50k-$tag.db" -messages 50000)

  echo "-- 1. Append, one row with a fence check, WAL synchronous=normal"
  echo "   go test -run '^\$' -bench 'Append\$|AppendLatency|WriterCeiling' -benchtime 5000x -count $COUNT ./store/sqlite/"
  (cd "$t/store/sqlite" && "$tmp/sqlite-$tag.test" -test.run '^$' -test.bench 'Append$|AppendLatency|WriterCeiling' \
    -test.benchtime 5000x -test.count "$COUNT") > "$out/append-$tag.txt"
  echo " p50-ns:";      medians "$out/append-$tag.txt" p50-ns
  echo " p99-ns:";      medians "$out/append-$tag.txt" p99-ns
  echo " ns/op (mean):"; medians "$out/append-$tag.txt" ns/op
  echo " cpu-ns/op:";   medians "$out/append-$tag.txt" cpu-ns/op
  echo " commits/s:";   medians "$out/append-$tag.txt" commits/s

  echo "-- 2. talaria sessions search WORD --database 50k.db (whole process; 50,000 messages in 50 sessions)"
  home="$tmp/home-$tag"; mkdir -p "$home"
  TALARIA_HOME="$home" "$tmp/talaria-$tag" sessions search --database "$tmp/50k-$tag.db" warmup >/dev/null # indexes the backlog
  for w in the kumquat; do
    printf "  %-8s " "$w"; TALARIA_HOME="$home" timeit "$RUNS" "$tmp/talaria-$tag" sessions search --database "$tmp/50k-$tag.db" "$w"
  done
  printf "  %-8s " "(version)"; timeit "$RUNS" "$tmp/talaria-$tag" version
  echo "-- in one process: go test -run '^\$' -bench Search50k -count $COUNT ./store/sqlite/"
  (cd "$t/store/sqlite" && "$tmp/sqlite-$tag.test" -test.run '^$' -test.bench 'Search50k' -test.count "$COUNT") > "$out/search-$tag.txt"
  echo " ns/op:";     medians "$out/search-$tag.txt" ns/op
  echo " cpu-ns/op:"; medians "$out/search-$tag.txt" cpu-ns/op
done
echo
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
