#!/usr/bin/env bash
# The report page in a real browser: a small study on synthetic data (two algorithms, one and two workers, with and
# without a slow worker: every plot has data), `distsgd report`, then report/browser_test.mjs in Debian's Chromium,
# headless. Fails on any console error, any request, or a plot without marks; the page and its screenshot stay in
# WORK_DIR. Skips (status 77), saying why, where node, the npm packages or Chromium are absent.
# Usage: tests/report_browser_test.sh DISTSGD_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
binary=$1
source=$2
work=$3

command -v node > /dev/null || { echo "SKIP: node is not installed (scripts/setup.sh installs it)"; exit 77; }
[ -d "$source/report/node_modules/puppeteer-core" ] ||
  { echo "SKIP: the npm packages are not installed (scripts/setup.sh runs npm ci in report/)"; exit 77; }
if [ -z "${CHROMIUM:-}" ]; then
  CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
  [ -n "$CHROMIUM" ] || { echo "SKIP: Chromium is not installed (scripts/setup.sh installs Debian's chromium)"; exit 77; }
  export CHROMIUM
fi

rm -rf "$work"
mkdir -p "$work"
cat > "$work/spec.json" <<'JSON'
{"name": "browser-test",
 "description": "report_browser_test.sh: synthetic data, every plot of the report",
 "base": {"--model": "lenet5", "--dataset": "synthetic", "--synthetic-train-size": 256, "--synthetic-test-size": 64,
          "--batch-size": 32, "--epochs": 2, "--threads": 1, "--no-checkpoint": true},
 "axes": {"--algo": ["arsgd", "gossip"], "--workers": [1, 2], "--slowdown": [null, "0:3"]},
 "exclude": [{"--algo": "gossip", "--workers": "1"}],
 "simulate_workers": [4],
 "simulate": {"clusters": {"": "10gbe"}, "profile_repeats": 3}}
JSON
"$binary" study "$work/spec.json" --out "$work/study"
"$binary" report "$work/study"
# Every plot the page draws is exported as SVG too (node, started as every child of distsgd is).
for spec in "$work"/study/plots/*.vl.json; do
  svg="${spec%.vl.json}.svg"
  [ -s "$svg" ] && grep -q "<svg" "$svg" || { echo "FAIL: no SVG export of $spec"; exit 1; }
done
node "$source/report/browser_test.mjs" "$work/study/report.html" "$work/report.png"
