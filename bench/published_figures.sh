#!/usr/bin/env bash
# The published large-scale figures of spec/simulator.md ("Validation") predicted from analytical GPU profiles:
# `distsgd profile --device` (Paleo-style: FLOPs and bytes counted from the model, times from the device preset's
# peak, bandwidth and calibrated efficiency), then `distsgd simulate` on the seed papers' cluster presets.
# Prints predicted against published scaling efficiency, in points. Nothing here is measured on this machine.
# Usage: bench/published_figures.sh   (env BUILD, default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# ResNet-50 at 3x224x224 on the two calibrated V100 presets, at the batch sizes the figures used.
"$BUILD/distsgd" profile --model resnet50 --device v100-pcie --batch-size 64 --out "$out/v100-pcie.json" >/dev/null
"$BUILD/distsgd" profile --model resnet50 --device v100-sxm2 --batch-size 32 --out "$out/v100-sxm2.json" >/dev/null

# Published figures (images/s): HKBU ddl-benchmarks, results/2020-05-29/README.md (Shi et al., arXiv:2005.13247),
# ResNet-50 batch 64 on V100-PCIe, 4 per node: 1 GPU 253.1; 32 GPUs over 10GbE BSP-A2A 4920.82, MG-WFBP 6883.60;
# over 100 Gb IB BSP-A2A 7126.52, MG-WFBP 7876.46. PyTorch DDP (Li et al., VLDB 2020; spec/simulator.md): ResNet-50
# batch 32 per V100 of DGX nodes, 306 images/s per GPU at 16 GPUs against 329 alone.
# figure | profile | cluster | overlap | workers | published efficiency
rows=(
  "HKBU 10GbE, allreduce|v100-pcie|hkbu-v100-10gbe|none|32|$(awk 'BEGIN{print 4920.82/(32*253.1)}')"
  "HKBU 10GbE, MG-WFBP|v100-pcie|hkbu-v100-10gbe|mgwfbp|32|$(awk 'BEGIN{print 6883.60/(32*253.1)}')"
  "HKBU 100Gb IB, allreduce|v100-pcie|hkbu-v100-100gb-ib|none|32|$(awk 'BEGIN{print 7126.52/(32*253.1)}')"
  "HKBU 100Gb IB, MG-WFBP|v100-pcie|hkbu-v100-100gb-ib|mgwfbp|32|$(awk 'BEGIN{print 7876.46/(32*253.1)}')"
  "PyTorch DDP, DGX V100|v100-sxm2|dgx1-v100|wfbp|16|$(awk 'BEGIN{print 306/329}')"
)

printf '%-26s %-18s %-7s %7s %10s %10s %7s\n' figure cluster overlap workers predicted published points
for row in "${rows[@]}"; do
  IFS='|' read -r figure profile cluster overlap workers published <<<"$row"
  # DDP's buckets: 25 MB, the first 1 MB (torch.nn.parallel.DistributedDataParallel's defaults), as --overlap wfbp.
  "$BUILD/distsgd" simulate --profile "$out/$profile.json" --cluster "$cluster" --algo arsgd --overlap "$overlap" \
    --bucket-mb 25 --first-bucket-mb 1 --workers "$workers" --out "$out/s.json" >/dev/null
  predicted=$(python3 -c "import json;print(json.load(open('$out/s.json'))['predictions'][0]['scaling_efficiency'])")
  awk -v f="$figure" -v c="$cluster" -v o="$overlap" -v w="$workers" -v p="$predicted" -v q="$published" \
    'BEGIN { printf "%-26s %-18s %-7s %7d %9.1f%% %9.1f%% %+7.1f\n", f, c, o, w, 100 * p, 100 * q, 100 * (p - q) }'
done
