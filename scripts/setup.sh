#!/usr/bin/env bash
# Installs the Debian packages distsgd needs, only those that are missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  clang-format            # the code style, checked by the tests (make format applies it)
  libtorch-dev            # libtorch 1.13: tensors, autograd, c10d
  libgloo-dev             # Gloo headers, needed by c10d's ProcessGroupGloo.hpp
  libopenblas0-openmp     # fast BLAS for linear layers (the reference BLAS is ~14x slower)
  libcli11-dev nlohmann-json3-dev zlib1g-dev
  googletest libgtest-dev libbenchmark-dev
  dataset-fashion-mnist   # real data at /usr/share/datasets/fashion-mnist
  python3-torch python3-numpy  # PyTorch 1.13, the peer in side-by-side benchmarks and the TorchScript test
  openmpi-bin             # mpirun, for the launcher tests
  libnl-route-3-dev       # the emulated cluster: links, addresses and tbf through netlink
  libnetfilter-queue-dev iptables  # the emulated cluster: link delay, jitter and loss (the NFQUEUE delay line)
  iproute2                # ip/tc, used only by tests to look at the emulated hosts
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
