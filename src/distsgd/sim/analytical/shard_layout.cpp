#include "distsgd/sim/analytical/shard_layout.hpp"

#include <algorithm>
#include <numeric>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

void append(ShardRanges& r, size_t shard, int64_t offset, int64_t numel) {
  auto& segments = r.segments[shard];
  if (!segments.empty() && segments.back().first + segments.back().second == offset) {
    segments.back().second += numel;
  } else {
    segments.emplace_back(offset, numel);
  }
  r.numel[shard] += numel;
}

}  // namespace

ShardRanges shard_ranges(const ModelProfile& profile, int64_t servers, const std::string& sharding) {
  require(servers >= 1, "--servers must be at least 1");
  std::vector<int64_t> offset, numel;
  int64_t total = 0;
  for (const auto& t : profile.tensors) {
    offset.push_back(total);
    numel.push_back(t.parameters);
    total += t.parameters;
  }
  ShardRanges r;
  r.segments.resize(static_cast<size_t>(servers));
  r.numel.assign(static_cast<size_t>(servers), 0);
  if (sharding == "memory") {
    for (int64_t k = 0; k < servers; ++k) {
      const int64_t begin = total * k / servers, end = total * (k + 1) / servers;
      append(r, static_cast<size_t>(k), begin, end - begin);
    }
    return r;
  }
  require(sharding == "layer", "--sharding must be memory or layer (got '" + sharding + "')");
  require(static_cast<int64_t>(numel.size()) >= servers,
          "--sharding layer: the model has " + std::to_string(numel.size()) + " tensors, fewer than --servers " +
              std::to_string(servers) + " (use --sharding memory)");
  // As algo/ps/shard_layout.cpp: largest first (ties: registration order), each to the lightest shard (ties: the lowest
  // index); a shard's tensors in flat order.
  std::vector<size_t> order(numel.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return numel[a] > numel[b]; });
  std::vector<int64_t> load(static_cast<size_t>(servers), 0);
  std::vector<std::vector<size_t>> tensors_of(static_cast<size_t>(servers));
  for (const size_t t : order) {
    const auto lightest = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[lightest] += numel[t];
    tensors_of[lightest].push_back(t);
  }
  for (size_t s = 0; s < tensors_of.size(); ++s) {
    std::sort(tensors_of[s].begin(), tensors_of[s].end());
    for (const size_t t : tensors_of[s]) append(r, s, offset[t], numel[t]);
  }
  return r;
}

double largest_shard_bytes(const ModelProfile& profile, int64_t servers, const std::string& sharding) {
  // Memory sharding's shards differ by at most one element: the analytical models take them as equal.
  if (sharding == "memory") return profile.gradient_bytes() / static_cast<double>(std::max<int64_t>(servers, 1));
  const auto shards = shard_ranges(profile, servers, sharding);
  return static_cast<double>(*std::max_element(shards.numel.begin(), shards.numel.end()) * profile.bytes_per_parameter);
}

}  // namespace distsgd::sim
