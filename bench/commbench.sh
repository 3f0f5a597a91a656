#!/usr/bin/env bash
# Allreduce (and send/recv) micro-benchmark of distsgd's own communication layer at P=2 and P=4 on this host:
# runs `distsgd commbench` for each P, prints its tables, then the fits t(m) = alpha + beta*m side by side.
# Usage: bench/commbench.sh [P...]   (default: 2 4); env BUILD (default build), REPEATS (timed repeats per size up to
# 1 MiB, default 50), MAX_MB (default 64), OUT (directory to keep the JSON files in; default: a temporary one)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEATS=${REPEATS:-50}
MAX_MB=${MAX_MB:-64}
PYTHON=${PYTHON:-/usr/bin/python3}
counts=("$@")
[ $# -gt 0 ] || counts=(2 4)
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; out=$OUT; else out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi

for p in "${counts[@]}"; do
  echo "== P=$p"
  "$BUILD/distsgd" commbench --processes "$p" --max-mb "$MAX_MB" --repeats "$REPEATS" --out "$out/commbench-p$p.json"
done

echo "== fits t(m) = alpha + beta*m to the fastest repeat of each size (least squares on relative error, 4 KiB .. $MAX_MB MiB)"
printf '%-4s %-10s %10s %12s\n' P primitive alpha_us 1/beta_GB/s
for p in "${counts[@]}"; do
  "$PYTHON" - "$out/commbench-p$p.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for name in ("allreduce", "send_recv"):
    if name in r:
        f = r[name]
        print(f"{r['processes']:<4} {name:<10} {f['alpha_seconds'] * 1e6:10.1f} {f['bandwidth_gb_per_second']:12.3f}")
PY
done
