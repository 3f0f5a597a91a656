#!/usr/bin/env bash
# Builds the fuzz targets with clang into build-fuzz/ (its own CMake configuration; the main build is untouched)
# and runs them under libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer, in one of two modes:
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]   exploring (make fuzz; default: $FUZZ_SECONDS or 20 s, every
#       target): random mutations for a bounded time from the seeds in fuzz/seeds/<target>, the inputs of past
#       findings in fuzz/regressions/<target>, and what earlier runs found (build-fuzz/corpus/<target>, where new
#       finds are added). What it tries differs from run to run: that is its purpose.
#   fuzz/run.sh --fixed [TARGET...]                 the fixed, bounded run of make test (Fuzz.ShortRunOfEveryTarget):
#       every seed and regression input, then a fixed number of mutations (FUZZ_RUNS, default per target below)
#       from a fixed -seed (FUZZ_SEED, default 1), with no corpus kept between runs; the same build tries the same
#       inputs every time, so the outcome never depends on chance, and no time limit cuts it short on a busy host.
# Fails on the first crash, sanitizer report or leak; the input that caused it is kept in build-fuzz/artifacts/.
# Exits 77 (skipped) where clang or its libFuzzer runtime is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FUZZ_BUILD:-$root/build-fuzz}"
fixed=0
if [ "${1:-}" = --fixed ]; then
  fixed=1
  shift
  seconds=""
else
  seconds="${1:-${FUZZ_SECONDS:-20}}"
  shift || true
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ps_message gossip_message idx cifar profile cluster points_csv checkpoint)

# --fixed: inputs per target, its seeds and regressions included (FUZZ_RUNS overrides). Each takes at most about
# 30 s on this project's 2 busy cores: the JSON readers run 3,000-10,000 inputs a second there, the checkpoint
# target 100-300 (libtorch opens an archive per input), the decoders and data readers 20,000 or more.
fixed_runs() {
  if [ -n "${FUZZ_RUNS:-}" ]; then
    echo "$FUZZ_RUNS"
  else
    case "$1" in
      checkpoint) echo 4000 ;;
      profile | cluster) echo 50000 ;;
      *) echo 100000 ;;
    esac
  fi
}

if ! command -v clang++ > /dev/null; then
  echo "fuzz: skipped: clang++ is not installed (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
  exit 77
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer,address,undefined -o /dev/null - 2> /dev/null; then
  echo "fuzz: skipped: clang cannot link libFuzzer (install libclang-rt-14-dev)" >&2
  exit 77
fi

start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ > /dev/null
fi
cmake --build "$build" --target $(printf 'fuzz_%s ' "${targets[@]}") >&2
echo "fuzz: built in $(($(date +%s) - start)) s" >&2

mkdir -p "$build/artifacts"
# --fixed: the same mutations every run also needs -reload=0 (no rereading of the corpus directory every second)
# and no address-space randomisation (pointers compared in the targets reach libFuzzer's table of values to insert).
# Where setarch cannot turn it off, the seeds and regressions still decide the same way, the mutations may differ.
runner=()
if [ $fixed = 1 ]; then
  if setarch "$(uname -m)" -R true 2> /dev/null; then
    runner=(setarch "$(uname -m)" -R)
  else
    echo "fuzz: setarch -R is refused here: the mutations may differ from run to run" >&2
  fi
fi
# max_allocation_size_mb: no input of a few KB should make a target ask for a gigabyte; one that does is a finding
# even where the memory is never touched (libtorch reserved 4 GB for a checkpoint record of 58 KB without using it,
# which libFuzzer's -malloc_limit_mb did not catch).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:max_allocation_size_mb=1024}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
for target in "${targets[@]}"; do
  log="$build/$target.log"
  # Inputs: the seeds and the inputs of past findings; exploring, also what earlier runs found (new finds are
  # added to the first directory given, so --fixed gives a fresh one it removes afterwards).
  if [ $fixed = 1 ]; then
    corpus="$(mktemp -d "$build/fixed-corpus-$target.XXXXXX")"
  else
    corpus="$build/corpus/$target"
    mkdir -p "$corpus"
  fi
  inputs=("$corpus" "$root/fuzz/seeds/$target")
  [ -d "$root/fuzz/regressions/$target" ] && inputs+=("$root/fuzz/regressions/$target")
  # -rss_limit_mb: libtorch alone takes a few hundred MB. -timeout: exploring, one input taking 10 s is a finding
  # too; the fixed run allows 60 s, so that a loaded host cannot turn a slow input into a failure.
  if [ $fixed = 1 ]; then
    limits=(-runs="$(fixed_runs "$target")" -seed="${FUZZ_SEED:-1}" -reload=0 -timeout=60)
  else
    limits=(-max_total_time="$seconds" -timeout=10)
  fi
  # libtorch 1.13 leaks a few hundred bytes (miniz's buffers) when its zip reader refuses a damaged archive, once
  # per file read before the process exits with the error: not ours to fix, so the checkpoint target skips leaks.
  leaks=1
  [ "$target" != checkpoint ] || leaks=0
  status=0
  ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=$leaks" "${runner[@]}" "$build/fuzz_$target" "${limits[@]}" \
    -rss_limit_mb=4096 -print_final_stats=1 -detect_leaks=$leaks -artifact_prefix="$build/artifacts/$target-" \
    "${inputs[@]}" > "$log" 2>&1 || status=$?
  [ $fixed = 0 ] || rm -rf "$corpus"
  if [ $status != 0 ]; then
    tail -n 60 "$log" >&2
    echo "fuzz: $target FAILED (log: $log; inputs: $build/artifacts/$target-*)" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | grep -o '[0-9]*' || echo "?")
  if [ $fixed = 1 ]; then
    echo "fuzz: $target: $runs inputs (seed ${FUZZ_SEED:-1}), coverage $cov edges, no crash" >&2
  else
    echo "fuzz: $target: ${seconds} s, $runs inputs, coverage $cov edges, no crash" >&2
  fi
done
echo "fuzz: ${#targets[@]} target(s) ran without a finding in $(($(date +%s) - start)) s" >&2
