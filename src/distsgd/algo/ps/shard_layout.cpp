#include "distsgd/algo/ps/shard_layout.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <numeric>

namespace distsgd::algo::ps {
namespace {

void append(ShardRange& shard, int64_t offset, int64_t numel) {
  if (!shard.segments.empty() && shard.segments.back().offset + shard.segments.back().numel == offset) {
    shard.segments.back().numel += numel;
  } else {
    shard.segments.push_back({offset, numel, shard.numel});
  }
  shard.numel += numel;
}

std::vector<ShardRange> memory_layout(int64_t total, int64_t servers) {
  std::vector<ShardRange> shards(static_cast<size_t>(servers));
  for (int64_t k = 0; k < servers; ++k) {
    const int64_t begin = total * k / servers, end = total * (k + 1) / servers;
    append(shards[static_cast<size_t>(k)], begin, end - begin);
  }
  return shards;
}

std::vector<ShardRange> layer_layout(const std::vector<optim::ParameterSlot>& slots, int64_t servers) {
  require(static_cast<int64_t>(slots.size()) >= servers,
          "--sharding layer: the model has " + std::to_string(slots.size()) + " tensors, fewer than --servers " +
              std::to_string(servers) + " (use --sharding memory)");
  // Largest first (ties: registration order), each to the lightest shard (ties: the lowest index).
  std::vector<size_t> order(slots.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return slots[a].numel > slots[b].numel; });
  std::vector<int64_t> load(static_cast<size_t>(servers), 0);
  std::vector<std::vector<size_t>> tensors_of(static_cast<size_t>(servers));
  for (size_t t : order) {
    const size_t lightest = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[lightest] += slots[t].numel;
    tensors_of[lightest].push_back(t);
  }
  std::vector<ShardRange> shards(static_cast<size_t>(servers));
  for (size_t s = 0; s < shards.size(); ++s) {
    auto& tensors = tensors_of[s];
    std::sort(tensors.begin(), tensors.end(), [&](size_t a, size_t b) { return slots[a].offset < slots[b].offset; });
    for (size_t t : tensors) append(shards[s], slots[t].offset, slots[t].numel);
  }
  return shards;
}

}  // namespace

std::vector<ShardRange> shard_layout(const std::vector<optim::ParameterSlot>& slots, int64_t servers, Sharding policy) {
  require(servers >= 1, "a parameter-server layout needs at least one server");
  if (policy == Sharding::kLayer) return layer_layout(slots, servers);
  int64_t total = 0;
  for (const auto& s : slots) total = std::max(total, s.offset + s.numel);
  return memory_layout(total, servers);
}

at::Tensor gather_shard(const at::Tensor& flat, const ShardRange& shard) {
  if (shard.contiguous()) return flat.narrow(0, shard.segments[0].offset, shard.numel);
  auto local = at::empty({shard.numel}, flat.options());
  gather_shard_into(flat, shard, local);
  return local;
}

void gather_shard_into(const at::Tensor& flat, const ShardRange& shard, at::Tensor local) {
  at::NoGradGuard no_grad;
  for (const auto& s : shard.segments) local.narrow(0, s.local, s.numel).copy_(flat.narrow(0, s.offset, s.numel));
}

void scatter_shard(const at::Tensor& local, const ShardRange& shard, at::Tensor& flat) {
  at::NoGradGuard no_grad;
  for (const auto& s : shard.segments) flat.narrow(0, s.offset, s.numel).copy_(local.narrow(0, s.local, s.numel));
}

}  // namespace distsgd::algo::ps
