#!/usr/bin/env bash
# Times a Host-backend program alone and beside processes that keep cores busy, and prints the
# medians and their ratio. Default program: contention_bench (this folder).
#
#   benchmarks/contention/run.sh [--threads T] [--reps R] [--busy K] [--cpus LIST|all]
#                                [--bin PATH] [-- COMMAND ARGS...]
#
#   --threads T   OMP_NUM_THREADS of the timed runs (default 2)
#   --reps R      runs per case, the median is reported (default 5)
#   --busy K      number of busy processes (spinning shell loops) in the contended case (default 1)
#   --cpus LIST   CPUs (taskset list) that the program and the busy processes share; default: the
#                 first T CPUs of this process's set, so that a machine with more cores behaves
#                 like a T-core one; `all`: no restriction (then K should be >= the core count)
#   --bin PATH    contention_bench binary (default: build/benchmarks/contention/contention_bench)
#   -- COMMAND    time this command instead, e.g.
#                 -- build/examples/sph/cellint_sph --resolution 30 --t-end 2.6 --steps 1000
#
# Cases: T threads idle, T threads with K busy processes, 1 thread idle, 1 thread with K busy.
# The busy processes are killed on exit (also on Ctrl-C). Runtime: about 20 x one run.
set -euo pipefail

threads=2 reps=5 busy=1 cpus="" bin="" cmd=()
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --) shift; cmd=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
if [ ${#cmd[@]} -eq 0 ]; then
  here=$(cd "$(dirname "$0")/../.." && pwd)
  bin=${bin:-$here/build/benchmarks/contention/contention_bench}
  [ -x "$bin" ] || { echo "run.sh: $bin not found; build the target contention_bench or pass --bin" >&2; exit 2; }
  cmd=("$bin" --steps 1000)
fi

# the CPU set: the first T CPUs this process may use, unless told otherwise
pin=()
if [ "$cpus" != "all" ] && command -v taskset > /dev/null; then
  if [ -z "$cpus" ]; then
    mine=$(taskset -pc $$ | sed 's/.*: //')
    cpus=$(python3 - "$mine" "$threads" <<'PY' 2>/dev/null || echo ""
import sys
out = []
for part in sys.argv[1].split(','):
    a, _, b = part.partition('-')
    out += range(int(a), int(b or a) + 1)
print(','.join(map(str, out[:int(sys.argv[2])])))
PY
)
  fi
  [ -n "$cpus" ] && pin=(taskset -c "$cpus")
fi

busy_pids=()
stop_busy() {
  for p in "${busy_pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2> /dev/null || true; done
  for p in "${busy_pids[@]:-}"; do [ -n "$p" ] && wait "$p" 2> /dev/null || true; done
  busy_pids=()
}
trap stop_busy EXIT
trap 'stop_busy; exit 130' INT TERM
start_busy() {
  local k
  for ((k = 0; k < busy; ++k)); do
    "${pin[@]}" bash -c 'while :; do :; done' &
    busy_pids+=($!)
  done
  sleep 0.2
}

# one timed run: wall seconds (the program's own output goes to the log)
log=$(mktemp)
timed() {  # threads
  local t0 t1
  t0=$(date +%s.%N)
  if ! OMP_NUM_THREADS=$1 timeout 120 "${pin[@]}" "${cmd[@]}" > "$log" 2>&1; then
    echo "run.sh: the command failed or took over 120 s; its output:" >&2; tail -5 "$log" >&2; exit 1
  fi
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

echo "command: ${cmd[*]}"
echo "cpus: ${cpus:-all}; busy processes in the contended case: $busy; $reps runs per case (median)"
declare -a idle_t idle_1 busy_t busy_1
for ((r = 0; r < reps; ++r)); do  # the cases interleaved, so that drifting load hits all alike
  idle_t+=("$(timed "$threads")")
  idle_1+=("$(timed 1)")
  start_busy
  busy_t+=("$(timed "$threads")")
  busy_1+=("$(timed 1)")
  stop_busy
done
mi=$(median "${idle_t[@]}") m1=$(median "${idle_1[@]}") mb=$(median "${busy_t[@]}") mb1=$(median "${busy_1[@]}")
printf '%-34s %8s s   (%s)\n' "$threads threads, idle" "$mi" "${idle_t[*]}"
printf '%-34s %8s s   (%s)\n' "$threads threads, $busy busy process(es)" "$mb" "${busy_t[*]}"
printf '%-34s %8s s   (%s)\n' "1 thread, idle" "$m1" "${idle_1[*]}"
printf '%-34s %8s s   (%s)\n' "1 thread, $busy busy process(es)" "$mb1" "${busy_1[*]}"
awk -v a="$mb" -v b="$mi" -v c="$m1" -v t="$threads" 'BEGIN {
  printf "contended / idle (%d threads): %.2fx   contended (%d threads) / idle (1 thread): %.2fx\n", t, a / b, t, a / c }'
rm -f "$log"
