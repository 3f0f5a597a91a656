#!/usr/bin/env bash
# The sources follow .clang-format (make format applies it). Usage: format_test.sh SOURCE_DIR
set -uo pipefail
cd "$1"
if ! command -v clang-format >/dev/null; then
  echo "SKIP: clang-format is not installed (scripts/setup.sh installs it)"
  exit 77
fi
files=$(git ls-files 'src/*.cpp' 'src/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'examples/*.cpp' 2>/dev/null || find src tests examples -name '*.[ch]pp')
clang-format --dry-run --Werror $files 2>&1 | head -40
exit "${PIPESTATUS[0]}"
