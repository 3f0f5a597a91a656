#!/usr/bin/env bash
# Issue 25's published-figure target on the parameter-server rows of the HKBU ddl-benchmarks table (BytePS):
# calibrate on 1, 4 and 8 GPUs (4 per node, so 8 is two nodes, the smallest multi-node point) and predict the 16- and
# 32-GPU points the fit did not see, per model and network. Nothing is measured on this machine; the inputs are the
# published table and the repository's launch script.
# Usage: bench/byteps_calibration.sh   (env BUILD; env FIT: the unknowns, calibrate --fit; default
# compute_scale,intra_node_efficiency,link_efficiency: the points are one GPU, a node's 4 over PCIe and two nodes' 8
# over the network, one unknown each)
#
# Inputs taken from the source, HKBU-HPML/ddl-benchmarks results/2020-05-29/README.md (Shi et al., arXiv:2005.13247):
# the BSP-PS rows of ResNet-50 (batch 64 per GPU), BERT-Base (64) and BERT-Large (8) on V100-PCIe, 4 GPUs a node,
# over 10GbE, 100Gb InfiniBand and 100GbE; samples/s at 1, 4, 8, 16 and 32 GPUs. How they ran, from the same
# repository: byteps/launch.sh starts as many servers as worker nodes (nservers = nworkers / 4) on hosts of their own
# ("server start at gpu9"), with BYTEPS_PARTITION_BYTES=4096000 (tensors cut into 4 MB partitions spread over the
# servers); byteps/byteps_distributed_optimizer.py with the fusion threshold of BSP (one group of every gradient)
# pushes once backward is done. A node's GPUs sum their gradients inside the node first (BytePS's NCCL reduce), and
# one worker node talks to no server (our reading of BytePS: with one worker machine it reduces locally only).
#   1 GPU       -> arsgd, one worker (compute only)
#   4 GPUs      -> arsgd --overlap none (the node's own reduction over PCIe)
#   8-32 GPUs   -> bsp --local-aggregation host --overlap none --sharding memory --servers NODES, servers behind links
#                  of their own like the nodes' (server_placement own_links, the presets' own)
# The profiles and presets are those of bench/published_calibration.sh (the analytical v100-pcie ResNet-50,
# bench/bert_profile.py's BERTs; hkbu-v100-*).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh disable=SC1091
source bench/lib.sh
BUILD=${BUILD:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fit_unknowns=${FIT-compute_scale,intra_node_efficiency,link_efficiency}
ps="--local-aggregation host --overlap none --sharding memory"

"$BUILD/distsgd" profile --model resnet50 --device v100-pcie --batch-size 64 --out "$out/resnet50.json" >/dev/null
python3 bench/bert_profile.py base --update-from "$out/resnet50.json" --out "$out/bert-base.json" >/dev/null
python3 bench/bert_profile.py large --update-from "$out/resnet50.json" --out "$out/bert-large.json" >/dev/null

# model|network preset|samples/s at 1 4 8 16 32 GPUs (the table's BSP-PS rows, as published)
tables=(
  "resnet50|hkbu-v100-10gbe|253.1 866.300 1194.440 2361.270 4376.578"
  "resnet50|hkbu-v100-100gb-ib|253.1 862.960 1694.900 3353.225 6587.627"
  "resnet50|hkbu-v100-100gbe|253.1 864.140 1191.650 2353.150 4355.977"
  "bert-base|hkbu-v100-10gbe|212.8 559.260 505.438 1022.375 2028.020"
  "bert-base|hkbu-v100-100gb-ib|212.8 557.920 1040.010 2077.680 4162.205"
  "bert-base|hkbu-v100-100gbe|212.8 557.180 748.780 1688.950 3583.770"
  "bert-large|hkbu-v100-10gbe|49 51.420 28.367 59.220 117.957"
  "bert-large|hkbu-v100-100gb-ib|49 51.380 88.510 168.215 355.690"
  "bert-large|hkbu-v100-100gbe|49 51.460 27.860 59.185 117.853"
)

printf '%-10s %-20s %5s %9s %9s %8s  %-13s %s\n' model network GPUs predicted published error range published
echo "(16 and 32 GPUs held out; calibrated on 1, 4, 8; range: the clusters that fit those points within their noise)"
for entry in "${tables[@]}"; do
  IFS='|' read -r model cluster figures <<<"$entry"
  read -r at1 at4 at8 at16 at32 <<<"$figures"
  fit="$out/$model-$cluster"
  {
    echo "algorithm,workers,samples_per_second,flags"
    echo "arsgd,1,$at1,--overlap none"
    echo "arsgd,4,$at4,--overlap none"
    echo "bsp,8,$at8,--servers 2 $ps"
  } >"$fit.csv"
  calibrate=("$BUILD/distsgd" calibrate --points "$fit.csv" --profile "$out/$model.json" --cluster "$cluster"
    --out "$fit.json")
  if ! "${calibrate[@]}" ${fit_unknowns:+--fit "$fit_unknowns"} >"$fit.fit" 2>&1; then
    # Over InfiniBand the node's link runs at PCIe's rate, and calibrate refuses to tell the two apart: its choice.
    echo "($model, $cluster: $(tail -1 "$fit.fit" | cut -c1-110)...; calibrate's own choice instead)"
    "${calibrate[@]}" >"$fit.fit"
  fi
  for gpus in 16 32; do
    published=$at16
    [[ $gpus == 32 ]] && published=$at32
    # shellcheck disable=SC2086
    "$BUILD/distsgd" simulate --profile "$out/$model.json" --cluster "$fit.json" --algo bsp --servers $((gpus / 4)) \
      $ps --workers "$gpus" --out "$out/s.json" >/dev/null
    held_out_row "$out/table" "$out/s.json" "$published" "$(printf '%-10s %-20s %5s' "$model" "$cluster" "$gpus")"
  done
done
held_out_summary "$out/table" "held out (16 and 32 GPUs)"
echo
echo "fitted (1, 4 and 8 GPUs):"
for entry in "${tables[@]}"; do
  IFS='|' read -r model cluster _ <<<"$entry"
  echo "  $model, $cluster: $(grep -E '^  fitted' "$out/$model-$cluster.fit" | sed -e 's/^ *fitted *//' | cut -c1-40 |
    paste -sd ';' -) $(grep -E 'rms relative' "$out/$model-$cluster.fit" | sed 's/^ *//')"
done
