#!/usr/bin/env bash
# The fused update kernels against the triad a = b + s*c in one run of build/distsgd_kernels_bench (Google
# Benchmark), 1M-64M floats: each kernel's GB/s and its ratio to the triad's at the same size.
# Usage: bench/kernels.sh [benchmark flags...]  env: BUILD (default build), DISTSGD_BENCH_THREADS (default 1),
# REPETITIONS (default 5: the median of each is reported; the repetitions of all kernels are interleaved in random
# order, so that a busy moment of a shared machine hits every kernel alike)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$BUILD/distsgd_kernels_bench" --benchmark_repetitions="${REPETITIONS:-5}" --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 --benchmark_format=json "$@" > "$out"
python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
ctx = data["context"]
print(f"threads {ctx.get('compute_threads')}, fused multiply-add {ctx.get('fused_multiply_add')}, "
      f"{ctx.get('num_cpus')} cpus at {ctx.get('mhz_per_cpu')} MHz")
rates = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name, size = b["run_name"].split("/")[:2]
    rates.setdefault(name, {})[int(size)] = b["GB/s"]
sizes = sorted(rates["Triad"])
print(f"{'kernel':28s}" + "".join(f"{str(s >> 20) + 'M floats':>22s}" for s in sizes))
for name, by_size in rates.items():
    cells = []
    for s in sizes:
        r, t = by_size.get(s), rates["Triad"][s]
        cells.append(f"{r:8.2f} GB/s ({r / t:4.2f}x)" if r else "")
    print(f"{name:28s}" + "".join(f"{c:>22s}" for c in cells))
PY
