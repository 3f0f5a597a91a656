#!/usr/bin/env bash
# Peak memory of one multi-process `distsgd train` run on this host: every 0.1 s, each child of the launcher's
# peak resident set (VmHWM: file pages it maps, shared with others, count in full for each process) and its
# proportional set (Pss: a page shared by k processes counts 1/k), and the sum over the processes, whose peak is
# what the run costs the host.
#   bench/peak_memory.sh [train flags...]     (DISTSGD=path/to/distsgd to measure another build)
set -euo pipefail
cd "$(dirname "$0")/.."
distsgd=${DISTSGD:-build/distsgd}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$distsgd" train "$@" --out "$work/run" > "$work/log" 2>&1 &
launcher=$!
declare -A hwm pss_peak label
peak_sum=0
while kill -0 "$launcher" 2> /dev/null; do
  sum=0
  for pid in $(pgrep -P "$launcher" || true); do
    h=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2> /dev/null || true)
    p=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2> /dev/null || true)
    [ -n "$h" ] && [ -n "$p" ] || continue
    [ -z "${label[$pid]:-}" ] && label[$pid]=$(tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | sed -n 's/^RANK=//p')
    ((h > ${hwm[$pid]:-0})) && hwm[$pid]=$h
    ((p > ${pss_peak[$pid]:-0})) && pss_peak[$pid]=$p
    sum=$((sum + p))
  done
  ((sum > peak_sum)) && peak_sum=$sum
  sleep 0.1
done
wait "$launcher" || { cat "$work/log"; exit 1; }
for pid in "${!hwm[@]}"; do
  echo "rank ${label[$pid]}: peak RSS $((hwm[$pid] / 1024)) MB, peak PSS $((pss_peak[$pid] / 1024)) MB"
done | sort -n -k2
echo "peak of the summed PSS over the processes: $((peak_sum / 1024)) MB"
