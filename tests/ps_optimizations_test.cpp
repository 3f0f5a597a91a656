// The parameter-server optimizations of issue 13: the layer sharding's balance, wait-free backprop's pieces (the
// gradient buckets cut at shard boundaries) and its runs, BSP's local aggregation, SSP's exact staleness bound,
// and unanswered pushes that never wait for a slow server.
#include "distsgd/algo/allreduce/gradient_buckets.hpp"
#include "distsgd/algo/ps/host_groups.hpp"
#include "distsgd/algo/ps/shard_layout.hpp"
#include "distsgd/algo/ps/shard_pieces.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/train/checkpoint.hpp"
#include "test_util.hpp"
#include "trained_parameters.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <set>

using distsgd::algo::ps::ShardRange;
using distsgd::optim::ParameterSlot;
using distsgd::testing::parameters_of;
using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::run_shell;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

namespace {

// Tensors of 10, 50, 5, 30 and 20 elements, back to back.
std::vector<ParameterSlot> five_tensors() {
  std::vector<ParameterSlot> slots;
  int64_t offset = 0;
  for (int64_t numel : {10, 50, 5, 30, 20}) {
    slots.push_back({"t" + std::to_string(slots.size()), offset, numel});
    offset += numel;
  }
  return slots;
}

// Which shard holds each flat element (-1: none), checking that no element is held twice.
std::vector<int> owner_of_elements(const std::vector<ShardRange>& shards, int64_t total) {
  std::vector<int> owner(static_cast<size_t>(total), -1);
  for (size_t s = 0; s < shards.size(); ++s) {
    int64_t local = 0;
    for (const auto& segment : shards[s].segments) {
      EXPECT_EQ(segment.local, local) << "segments lie back to back in the shard's buffer";
      for (int64_t i = segment.offset; i < segment.offset + segment.numel; ++i) {
        EXPECT_EQ(owner[static_cast<size_t>(i)], -1) << "element " << i << " in two shards";
        owner[static_cast<size_t>(i)] = static_cast<int>(s);
      }
      local += segment.numel;
    }
    EXPECT_EQ(local, shards[s].numel);
  }
  return owner;
}

const std::string kPsEquivalenceRun =
    " --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-train-size 3840 "
    "--synthetic-test-size 64 --max-steps 20 --epochs 1 --seed 5 --threads 1 --no-checkpoint "
    "--progress-seconds 1000 --workers 3 --batch-size 16 --lr 0.05";
// Tiny buckets: lenet5's gradients span several buckets, pushed during backward.
const std::string kSmallBuckets = " --first-bucket-mb 0.004 --bucket-mb 0.05";
const std::string kAsyncRun =
    " --model lenet5 --dataset synthetic --synthetic-train-size 1920 --synthetic-test-size 64 --epochs 100 "
    "--threads 1 --no-checkpoint --progress-seconds 1000 --seed 9 --lr 0.01";

}  // namespace

// Largest first, each to the lightest shard: 50 -> s0, 30 -> s1, 20 -> s1, 10 -> s0 (tie: lower index), 5 -> s1.
TEST(LayerSharding, BalancesWholeTensorsGreedilyByBytes) {
  const auto slots = five_tensors();
  const auto shards = distsgd::algo::ps::shard_layout(slots, 2, distsgd::algo::ps::Sharding::kLayer);
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].numel, 60);
  EXPECT_EQ(shards[1].numel, 55);
  const auto owner = owner_of_elements(shards, 115);
  for (const auto& slot : slots) {
    for (int64_t i = slot.offset; i < slot.offset + slot.numel; ++i) {
      EXPECT_EQ(owner[static_cast<size_t>(i)], owner[static_cast<size_t>(slot.offset)]) << slot.name << " split";
    }
  }
  EXPECT_EQ(owner[0], 0);   // t0 (10)
  EXPECT_EQ(owner[10], 0);  // t1 (50): adjacent to t0, one merged segment
  EXPECT_EQ(shards[0].segments.size(), 1u);
  EXPECT_EQ(owner[60], 1);  // t2 (5), t3 (30), t4 (20): one segment too
  EXPECT_EQ(shards[1].segments.size(), 1u);

  // Three shards: 50 | 30, 5 | 20, 10 -- and no shard above the mean by more than the largest tensor (LPT).
  const auto three = distsgd::algo::ps::shard_layout(slots, 3, distsgd::algo::ps::Sharding::kLayer);
  std::vector<int64_t> loads;
  for (const auto& shard : three) loads.push_back(shard.numel);
  EXPECT_EQ(loads, (std::vector<int64_t>{50, 35, 30}));
  owner_of_elements(three, 115);
  EXPECT_EQ(three[2].segments.size(), 2u) << "t0 and t4 are not adjacent: two segments";

  EXPECT_THROW(distsgd::algo::ps::shard_layout(slots, 6, distsgd::algo::ps::Sharding::kLayer), distsgd::Error);
  const auto memory = distsgd::algo::ps::shard_layout(slots, 3, distsgd::algo::ps::Sharding::kMemory);
  EXPECT_EQ(memory[0].numel, 38);
  EXPECT_EQ(memory[1].segments[0].offset, 38);
}

TEST(LayerSharding, GatherAndScatterRoundTrip) {
  const auto slots = five_tensors();
  const auto shards = distsgd::algo::ps::shard_layout(slots, 3, distsgd::algo::ps::Sharding::kLayer);
  const auto flat = torch::arange(115, torch::kFloat);
  auto rebuilt = torch::zeros({115});
  for (const auto& shard : shards) {
    const auto local = distsgd::algo::ps::gather_shard(flat, shard);
    ASSERT_EQ(local.numel(), shard.numel);
    EXPECT_EQ(local[0].item<float>(), static_cast<float>(shard.segments[0].offset));
    distsgd::algo::ps::scatter_shard(local, shard, rebuilt);
  }
  EXPECT_TRUE(torch::equal(rebuilt, flat));
}

// Buckets (backward order) cut at the boundaries of scattered shards: every element in exactly one piece, each
// piece one contiguous range of its shard, and the first bucket's pieces cover the last tensors.
TEST(WaitFreeBackpropPieces, CutBucketsAtShardBoundaries) {
  const auto slots = five_tensors();
  for (auto policy : {distsgd::algo::ps::Sharding::kLayer, distsgd::algo::ps::Sharding::kMemory}) {
    const auto shards = distsgd::algo::ps::shard_layout(slots, 3, policy);
    const auto buckets = distsgd::algo::make_buckets(slots, 4 * 20, 4 * 40);  // {t4}, {t3, t2}, {t1}, {t0}
    ASSERT_EQ(buckets.size(), 4u);
    const auto pieces = distsgd::algo::ps::cut_at_shards(buckets, shards);
    ASSERT_EQ(pieces.size(), buckets.size());
    std::vector<std::vector<int>> covered(shards.size());
    for (size_t s = 0; s < shards.size(); ++s) covered[s].assign(static_cast<size_t>(shards[s].numel), 0);
    for (size_t b = 0; b < pieces.size(); ++b) {
      int64_t in_bucket = 0;
      for (const auto& piece : pieces[b]) {
        int64_t local = 0;
        for (const auto& segment : piece.segments) {
          EXPECT_EQ(segment.local, local);
          EXPECT_GE(segment.offset, buckets[b].offset);
          EXPECT_LE(segment.offset + segment.numel, buckets[b].offset + buckets[b].numel);
          local += segment.numel;
        }
        EXPECT_EQ(local, piece.numel);
        for (int64_t i = piece.local_offset; i < piece.local_offset + piece.numel; ++i) {
          ++covered[piece.shard][static_cast<size_t>(i)];
        }
        in_bucket += piece.numel;
      }
      EXPECT_EQ(in_bucket, buckets[b].numel);
    }
    for (const auto& shard : covered) {
      for (int c : shard) EXPECT_EQ(c, 1);
    }
    // Bucket 0 is t4, the last tensor: its piece goes to the shard that holds t4, first.
    ASSERT_EQ(pieces[0].size(), 1u);
    EXPECT_EQ(pieces[0][0].segments.front().offset, 95);
  }
}

TEST(LocalAggregation, WorkersWithTheSameHostKeyFormOneGroup) {
  const std::vector<std::string> keys{"a net:[1]", "b net:[1]", "a net:[1]", "a net:[2]", "b net:[1]"};
  const auto group = distsgd::algo::ps::host_group(keys, 2);
  EXPECT_EQ(group.members, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(group.leader(), 0);
  EXPECT_EQ(group.hosts, 3);
  EXPECT_EQ(distsgd::algo::ps::host_group(keys, 3).members, (std::vector<int64_t>{3}));
  EXPECT_EQ(distsgd::algo::ps::host_group(keys, 4).leader(), 1);
  EXPECT_FALSE(distsgd::algo::ps::this_host_key().empty());
}

// Wait-free backprop changes when the pieces travel, not what the shards sum: BSP's parameters are the same, bit
// for bit, with and without it, for contiguous and for scattered (layer) shards. On the virtual cluster (BSP's own
// workers and shards in one process, beside other tests); TimelineShowsPushesInsideBackward runs wfbp over sockets.
TEST(VirtualBspWaitFreeBackprop, SameParametersAsWithoutOverlap) {
  TempDir dir;
  for (const std::string sharding : {"--servers 2 --sharding memory", "--servers 3 --sharding layer"}) {
    std::map<std::string, at::Tensor> parameters;
    for (const std::string overlap : {"none", "wfbp"}) {
      const std::string out = dir / (overlap + std::to_string(sharding.size()));
      auto r = run_distsgd("train --algo bsp " + sharding + " --overlap " + overlap + kSmallBuckets +
                           kPsEquivalenceRun + distsgd::testing::kVirtualLenet5Timing + " --out " + out);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      parameters[overlap] = parameters_of(out);
      const auto summary = summary_of(out);
      EXPECT_EQ(summary["overlap"], overlap);
      EXPECT_GT(summary["pushes_per_step"].get<int64_t>(), overlap == "wfbp" ? summary["servers"].get<int64_t>() : 0)
          << "wfbp cuts the buckets at the shards: more pushes than shards";
    }
    EXPECT_TRUE(torch::equal(parameters["none"], parameters["wfbp"])) << sharding;
  }
}

// The timeline of a wfbp run shows pushes that start while backward is still running; without overlap none does.
TEST(BspWaitFreeBackprop, TimelineShowsPushesInsideBackward) {
  TempDir dir;
  for (const std::string overlap : {"wfbp", "none"}) {
    const std::string out = dir / overlap;
    auto r = run_distsgd("train --algo bsp --servers 2 --sharding layer --overlap " + overlap + kSmallBuckets +
                         kPsEquivalenceRun + " --trace --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto trace = nlohmann::json::parse(read_file(out + "/trace.json"));
    std::map<int, std::vector<std::pair<int64_t, int64_t>>> backward;  // per worker: [start, end)
    std::map<int, std::vector<int64_t>> push_starts;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] != "X") continue;
      const int pid = e["pid"].get<int>();
      const auto name = e["name"].get<std::string>();
      const int64_t ts = e["ts"].get<int64_t>();
      if (name == "backward") backward[pid].push_back({ts, ts + e["dur"].get<int64_t>()});
      if (name.rfind("push to shard", 0) == 0) push_starts[pid].push_back(ts);
    }
    for (int worker = 0; worker < 3; ++worker) {
      ASSERT_FALSE(push_starts[worker].empty()) << overlap << ": worker " << worker << " traced no push";
      int64_t inside = 0;
      for (int64_t start : push_starts[worker]) {
        for (const auto& [begin, end] : backward[worker]) inside += start >= begin && start < end ? 1 : 0;
      }
      if (overlap == "wfbp") {
        // 20 steps, every one pushing its first buckets before backward ends.
        EXPECT_GE(inside, 20) << "worker " << worker;
      } else {
        EXPECT_EQ(inside, 0) << "worker " << worker;
      }
    }
  }
}

// Workers that share a host sum their gradients and one pushes: BSP sums anyway, so the parameters are the same
// (to float rounding: the sum's order is the host's), and the host pushes one gradient instead of three.
TEST(BspLocalAggregation, SameParametersWithFewerBytesPushed) {
  TempDir dir;
  std::map<std::string, nlohmann::json> summaries;
  std::map<std::string, at::Tensor> parameters;
  for (const std::string aggregation : {"none", "host"}) {
    const std::string out = dir / aggregation;
    auto r = run_distsgd("train --algo bsp --servers 2 --local-aggregation " + aggregation + kPsEquivalenceRun +
                         " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    parameters[aggregation] = parameters_of(out);
    summaries[aggregation] = summary_of(out);
  }
  const double error = ((parameters["host"] - parameters["none"]).norm() / parameters["none"].norm()).item<double>();
  EXPECT_LT(error, 1e-6);
  EXPECT_EQ(summaries["host"]["hosts"], 1) << "every worker of a local launch is on this host";
  EXPECT_EQ(summaries["host"]["local_aggregation"], "host");
  // One push per host instead of one per worker.
  EXPECT_NEAR(summaries["host"]["bytes_sent_per_worker"].get<double>() * 3,
              summaries["none"]["bytes_sent_per_worker"].get<double>(), 1.0);
  EXPECT_EQ(summaries["host"]["per_worker"][1]["bytes_sent"], 0) << "a member pushes nothing to the servers";
  EXPECT_LT(summaries["host"]["parameter_variance"].get<double>(), 1e-12) << "members get the leader's reply";

  auto asp = run_distsgd("train --algo asp --servers 1 --local-aggregation host" + kPsEquivalenceRun + " --out " +
                         (dir / "asp"));
  EXPECT_NE(asp.exit_code, 0);
  EXPECT_NE(asp.output.find("--local-aggregation applies to bsp only"), std::string::npos) << asp.output;
}

// Local aggregation pipelined with backward (--overlap wfbp, the default): the members send each bucket to the leader
// as backward produces it and the leader's aggregating thread sums and pushes it while backward goes on. The sums
// are the whole gradient's, element by element: the same parameters, bit for bit, as summing after backward. On the
// virtual cluster, whose clock makes "while backward goes on" exact: every step has sums and pushes inside the
// leader's backward, and the run is faster.
TEST(VirtualBspLocalAggregation, PipelinedWithBackwardSameParameters) {
  TempDir dir;
  // One node of the three workers (the virtual cluster's hosts are its nodes), its servers behind links of their own.
  std::ofstream(dir / "node.json") << R"({"name": "node", "worker_bytes_per_second": 1.2e9, "alpha_seconds": 3e-5,
      "workers_per_node": 4, "intra_node_bytes_per_second": 1.2e10, "intra_node_alpha_seconds": 1e-5})";
  std::map<std::string, at::Tensor> parameters;
  std::map<std::string, double> rate;
  for (const std::string overlap : {"none", "wfbp"}) {
    const std::string out = dir / overlap;
    auto r = run_distsgd("train --algo bsp --servers 2 --local-aggregation host --overlap " + overlap + kSmallBuckets +
                         kPsEquivalenceRun +
                         " --virtual --profile " DISTSGD_SOURCE_DIR "/tests/fixtures/lenet5-one-core.json --cluster " +
                         (dir / "node.json") + " --trace --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    parameters[overlap] = parameters_of(out);
    rate[overlap] = summary_of(out)["samples_per_second"].get<double>();
    EXPECT_EQ(summary_of(out)["hosts"], 1);
    const auto trace = nlohmann::json::parse(read_file(out + "/trace.json"));
    std::vector<std::pair<int64_t, int64_t>> backward;  // the leader's (worker 0's): [start, end)
    std::vector<int64_t> sums, pushes;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] != "X" || e["pid"].get<int>() != 0) continue;
      const auto name = e["name"].get<std::string>();
      const int64_t ts = e["ts"].get<int64_t>();
      if (name == "backward") backward.push_back({ts, ts + e["dur"].get<int64_t>()});
      if (name == "sum the host's bucket") sums.push_back(ts);
      if (name.rfind("push to shard", 0) == 0) pushes.push_back(ts);
    }
    const auto inside = [&](const std::vector<int64_t>& starts) {
      int64_t n = 0;
      for (const int64_t t : starts) {
        for (const auto& [begin, end] : backward) n += t >= begin && t < end ? 1 : 0;
      }
      return n;
    };
    ASSERT_EQ(backward.size(), 20u);
    if (overlap == "wfbp") {
      EXPECT_GE(inside(sums), 20) << "a bucket summed during backward in every step";
      EXPECT_GE(inside(pushes), 20);
    } else {
      EXPECT_TRUE(sums.empty()) << "without overlap the host's whole gradients are summed after backward";
      EXPECT_EQ(inside(pushes), 0);
    }
  }
  EXPECT_TRUE(torch::equal(parameters["none"], parameters["wfbp"]));
  EXPECT_GT(rate["wfbp"], rate["none"]);
}

// ASP and SSP run with wfbp over scattered shards and count each gradient once. On the virtual cluster (their own
// workers and shards in one process, beside other tests); over sockets, ASP and SSP push in pieces by default in
// EmulatedCluster.EveryAlgorithmTrainsAsOnLoopback.
TEST(VirtualAsyncWaitFreeBackprop, PiecesCountAsOneUpdatePerGradient) {
  TempDir dir;
  for (const std::string algo : {"asp", "ssp --staleness 2", "asp --momentum-at worker"}) {
    const std::string out = dir / "run";
    auto r = run_distsgd("train --algo " + algo + " --workers 3 --servers 2 --sharding layer --max-steps 20" +
                         kSmallBuckets + kAsyncRun + distsgd::testing::kVirtualLenet5Timing + " --out " + out +
                         " --overwrite");
    ASSERT_EQ(r.exit_code, 0) << algo << "\n" << r.output;
    const auto summary = summary_of(out);
    EXPECT_EQ(summary["overlap"], "wfbp") << algo;
    EXPECT_GT(summary["pushes_per_step"].get<int64_t>(), 2) << algo;
    for (const auto& shard : summary["server_statistics"]) EXPECT_EQ(shard["updates"], 3 * 20) << algo;
    EXPECT_TRUE(std::isfinite(summary["test_loss"].get<double>())) << algo;
  }
  auto multistep =
      run_distsgd("train --algo ssp --servers 1 --overlap multistep" + kAsyncRun + " --out " + (dir / "multistep"));
  EXPECT_NE(multistep.exit_code, 0);
  EXPECT_NE(multistep.output.find("takes none or wfbp"), std::string::npos) << multistep.output;
}

// The exact bound: under random slowdowns of several workers, no worker starts an iteration more than s clocks
// ahead of the slowest (recorded by every worker at every iteration, and checked by every shard on every gradient),
// and the workers that would have run further ahead pulled to wait.
TEST(SspExactBound, GapNeverExceedsStalenessUnderRandomSlowdowns) {
  TempDir dir;
  std::mt19937 random(13);
  std::uniform_real_distribution<double> factor(1.5, 5.0);
  for (int s : {1, 3}) {
    std::string slowdowns;
    for (int w = 1; w < 4; ++w) slowdowns += " --slowdown " + std::to_string(w) + ":" + std::to_string(factor(random));
    const std::string out = dir / ("s" + std::to_string(s));
    auto r = run_distsgd("train --algo ssp --workers 4 --servers 2 --staleness " + std::to_string(s) + slowdowns +
                         " --max-steps 36" + kAsyncRun + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto summary = summary_of(out);
    int64_t bound_pulls = 0;
    for (const auto& worker : summary["per_worker"]) {
      EXPECT_LE(worker["ssp_max_clock_gap"].get<double>(), s) << slowdowns << "\n" << worker.dump();
      bound_pulls += static_cast<int64_t>(worker["ssp_bound_pulls"].get<double>());
    }
    EXPECT_GT(bound_pulls, 0) << "the fast worker hit the bound between periodic pulls: " << slowdowns;
    for (const auto& shard : summary["server_statistics"]) {
      EXPECT_LE(shard["ssp_max_push_gap"].get<int64_t>(), s) << shard.dump();
      EXPECT_LE(shard["ssp_max_pull_gap"].get<int64_t>(), s) << shard.dump();
      EXPECT_EQ(shard["ssp_pulls"], 4 * (36 / (s + 1)) + bound_pulls) << "periodic pulls plus the bound's";
    }
  }
}

// Unanswered pushes go from a ring of buffers: with every server taking 20 ms before it posts each receive (and the
// workers' iterations longer than that, so the servers keep up), SSP's and ALADDIN's workers hardly wait, while
// ASP, whose every push is answered, waits about the delay each iteration. (Pushes after backward: --slowdown
// sleeps after backward, and would hide a wfbp push's round trip.)
TEST(AsynchronousSends, SlowServerIsNotExposedToSspAndAladdin) {
  TempDir dir;
  constexpr double kDelay = 0.020;
  const std::string slow_workers = " --slowdown 0:4 --slowdown 1:4 --slowdown 2:4";
  std::map<std::string, double> wait;
  for (const std::string algo : {"ssp --staleness 10 --overlap none", "aladdin", "asp --overlap none"}) {
    const std::string out = dir / "run";
    auto r = run_shell("DISTSGD_SERVER_DELAY_MS=20 " + std::string(DISTSGD_BINARY) + " train --algo " + algo +
                       " --workers 3 --servers 1 --max-steps 22" + slow_workers + kAsyncRun + " --out " + out +
                       " --overwrite 2>&1");
    ASSERT_EQ(r.exit_code, 0) << algo << "\n" << r.output;
    wait[algo.substr(0, algo.find(' '))] = summary_of(out)["seconds_per_iteration"]["communication_wait"].get<double>();
  }
  std::cout << "communication wait per iteration: asp " << wait["asp"] << " s, ssp " << wait["ssp"] << " s, aladdin "
            << wait["aladdin"] << " s" << std::endl;
  EXPECT_GT(wait["asp"], 0.8 * kDelay) << "the delay is there for answered pushes";
  EXPECT_LT(wait["ssp"], 0.3 * kDelay) << "SSP: only the pull every 11 iterations waits";
  EXPECT_LT(wait["aladdin"], 0.15 * kDelay);
}
