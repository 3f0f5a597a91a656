#!/usr/bin/env bash
# Copies the test timings CTest measured in a build tree (after a whole `make test`) to tests/ctest_costs.txt, which
# `make test` gives a fresh build tree so that CTest starts the longest tests first. Only the tests the tree still
# has are kept. Usage: scripts/refresh_test_costs.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
costs="$build/Testing/Temporary/CTestCostData.txt"
[ -f "$costs" ] || { echo "refresh_test_costs: no $costs (run make test first)" >&2; exit 1; }
tests=$(cd "$build" && ctest -N | sed -n 's/^ *Test *#[0-9]*: //p')
# Name, runs, mean seconds; the last run's failures (after "---") are left out.
{ sed '/^---$/,$d' "$costs" | awk 'NR == FNR { keep[$1] = 1; next } $1 in keep' <(echo "$tests") - | sort; echo ---; } \
  > tests/ctest_costs.txt
echo "tests/ctest_costs.txt: $(($(wc -l < tests/ctest_costs.txt) - 1)) tests"
