#!/usr/bin/env bash
# Installs the Debian packages distsgd needs, only those that are missing, and the report's npm packages.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  clang-format            # the code style, checked by the tests (make format applies it)
  libtorch-dev            # libtorch 1.13: tensors, autograd, c10d
  libgloo-dev             # Gloo headers, needed by c10d's ProcessGroupGloo.hpp
  libopenblas0-openmp     # fast BLAS for linear layers (the reference BLAS is ~14x slower)
  libcli11-dev nlohmann-json3-dev zlib1g-dev
  googletest libgtest-dev libbenchmark-dev
  dataset-fashion-mnist   # real data at /usr/share/datasets/fashion-mnist
  fortunes                # English text for --dataset text: the fortune database at /usr/share/games/fortunes
  python3-torch python3-numpy  # PyTorch 1.13, the peer in side-by-side benchmarks and the TorchScript test
  openmpi-bin             # mpirun, for the launcher tests
  libnl-route-3-dev       # the emulated cluster: links, addresses and tbf through netlink
  libnetfilter-queue-dev iptables  # the emulated cluster: link delay, jitter and loss (the NFQUEUE delay line)
  iproute2                # ip/tc, used only by tests to look at the emulated hosts
  clang libclang-rt-14-dev  # the fuzz targets (make fuzz): clang with libFuzzer and the sanitizers' runtimes
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# distsgd report: node runs the SVG export and the browser test (with npm to install the Vega libraries and
# puppeteer-core), Debian's chromium is the browser the test drives. Checked by command, since node may come from
# elsewhere (nodesource's nodejs brings its own npm). Without them the report's SVG files and the browser test are
# skipped, saying so; the rest of distsgd does not need them.
browser=()
command -v node > /dev/null || browser+=(nodejs)
command -v npm > /dev/null || browser+=(npm)
command -v chromium > /dev/null || command -v chromium-browser > /dev/null || browser+=(chromium)

if [ ${#missing[@]} -gt 0 ] || [ ${#browser[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    if [ ${#browser[@]} -gt 0 ]; then
      echo "setup: for distsgd report's SVG files and browser test: sudo apt-get install ${browser[*]}" >&2
    fi
    if [ ${#missing[@]} -gt 0 ]; then
      echo "setup: missing Debian packages: ${missing[*]}" >&2
      echo "setup: run as root (or: sudo apt-get install ${missing[*]})" >&2
      exit 1
    fi
  else
    echo "setup: installing ${missing[*]} ${browser[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" "${browser[@]}" >&2
  fi
fi

# The Vega libraries distsgd report inlines into its page, and puppeteer-core for the browser test: exactly the
# versions of report/package-lock.json, installed again when the lock file changed.
if command -v npm > /dev/null; then
  if [ ! -f report/node_modules/.package-lock.json ] || [ report/package-lock.json -nt report/node_modules/.package-lock.json ]; then
    echo "setup: npm ci in report/ (vega, vega-lite, vega-embed, puppeteer-core)" >&2
    (cd report && npm ci --no-audit --no-fund --loglevel=error >&2)
  fi
fi
