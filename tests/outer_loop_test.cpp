// The low-communication family (spec: "The low-communication family"): the outer loop's schedule and rules against
// torchft's DiLoCo regression cases and hand-computed sequences, the quantised exchange, and the algorithms end to
// end: localsgd with H = 1 is AR-SGD without overlap, DiLoCo with outer lr 1 and no momentum is localsgd, SlowMo
// over SGP with H = 1 is SlowMo over local SGD.
#include "distsgd/algo/outer/outer_loop.hpp"
#include "distsgd/algo/outer/quantized_allreduce.hpp"
#include "distsgd/sim/analytical/collective_costs.hpp"
#include "distsgd/sim/analytical/outer_model.hpp"
#include "distsgd/sim/des/discrete_event_simulator.hpp"
#include "distsgd/sim/engine/actor_scheduler.hpp"
#include "distsgd/sim/engine/event_queue.hpp"
#include "distsgd/vcluster/virtual_communicator.hpp"
#include "sim_test_util.hpp"
#include "test_util.hpp"
#include "trained_parameters.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

using distsgd::algo::outer::Fragment;
using distsgd::algo::outer::OuterLoop;
using distsgd::algo::outer::OuterRule;
using distsgd::algo::outer::OuterSettings;
using distsgd::testing::error_of_call;
using distsgd::testing::parameters_of;
using distsgd::testing::run_distsgd;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

namespace {

// Runs body(rank, comm) on `workers` ranks as actors over an in-process fabric with zero-time messages.
void on_workers(int64_t workers, const std::function<void(int64_t, distsgd::comm::Communicator&)>& body) {
  distsgd::sim::EventQueue queue;
  distsgd::sim::ActorScheduler scheduler(queue);
  auto fabric = distsgd::vcluster::Fabric::ideal(scheduler, workers, 0);
  for (int64_t rank = 0; rank < workers; ++rank) {
    scheduler.start("rank " + std::to_string(rank), [&, rank] {
      distsgd::vcluster::VirtualCommunicator comm(*fabric, rank);
      body(rank, comm);
    });
  }
  scheduler.run();
}

// torchft's diloco_regression_test (DiLoCoMockedUpdateTest): two replicas, a model of two fragments of one weight
// each starting at 1, every gradient 2, inner SGD lr 1, outer SGD lr 2 without momentum, sync every 6. The
// expected history follows that test's own check (_validate_parameter_updates), restated: fragment i is merged at
// steps (i + 1) * 3 + 6k from the pseudo-gradient taken `delay` steps earlier.
std::vector<std::vector<double>> torchft_expected(int64_t delay, double alpha, int64_t steps) {
  constexpr int64_t kSyncEvery = 6, kPerFragment = 3;
  std::vector<std::vector<double>> history{{1.0, 1.0}};
  std::map<int64_t, std::vector<double>> global{{0, {1.0, 1.0}}};  // after each merge step
  std::vector<double> last_global{1.0, 1.0};
  for (int64_t step = 1; step <= steps; ++step) {
    auto params = history.back();
    for (auto& p : params) p -= 2;  // the inner step
    for (int fragment = 0; fragment < 2; ++fragment) {
      const int64_t first = (fragment + 1) * kPerFragment;
      if (step < first || (step - first) % kSyncEvery != 0) continue;
      const double prepared = history[static_cast<size_t>(step - delay - 1)][static_cast<size_t>(fragment)] - 2;
      const double previous = last_global[static_cast<size_t>(fragment)];
      const double updated = previous - 2 * (previous - prepared);
      last_global[static_cast<size_t>(fragment)] = updated;
      params[static_cast<size_t>(fragment)] = alpha * params[static_cast<size_t>(fragment)] + (1 - alpha) * updated;
    }
    history.push_back(params);
  }
  return history;
}

std::vector<std::vector<double>> run_torchft_case(int64_t delay, double alpha, int64_t steps) {
  std::vector<std::vector<double>> history;
  on_workers(2, [&](int64_t rank, distsgd::comm::Communicator& comm) {
    auto params = torch::ones({2});
    OuterSettings settings;
    settings.rule = OuterRule::kNesterov;
    settings.lr = 2;
    settings.momentum = 0;
    settings.sync_every = 6;
    settings.fragments = {{0, 1}, {1, 1}};
    settings.delay = delay;
    settings.alpha = alpha;
    OuterLoop loop(&comm, params, settings);
    std::vector<std::vector<double>> mine{{1.0, 1.0}};
    for (int64_t step = 1; step <= steps; ++step) {
      params.sub_(2.0);  // inner lr 1, gradient 2
      loop.after_inner_step(1.0);
      mine.push_back({params[0].item<double>(), params[1].item<double>()});
    }
    if (rank == 0) history = mine;
  });
  return history;
}

}  // namespace

TEST(OuterLoop, FollowsTorchftsStreamingDiLoCoRegressionCases) {
  for (int64_t delay : {0, 1}) {
    for (double alpha : {0.0, 0.5, 1.0}) {
      const auto got = run_torchft_case(delay, alpha, 15);
      const auto expected = torchft_expected(delay, alpha, 15);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t step = 0; step < got.size(); ++step) {
        for (size_t f = 0; f < 2; ++f) {
          EXPECT_NEAR(got[step][f], expected[step][f], 1e-5)
              << "delay " << delay << ", alpha " << alpha << ", step " << step << ", fragment " << f;
        }
      }
    }
  }
  // By hand, delay 0 and alpha 0: fragment 0 merged at step 3 (1 - 2 * (1 - -5) = -11), fragment 1 at step 6
  // (1 - 2 * (1 - -11) = -23), fragment 0 again at step 9 (-11 - 2 * (-11 - -23) = -35).
  const auto plain = run_torchft_case(0, 0, 9);
  EXPECT_EQ(plain[3], (std::vector<double>{-11, -5}));
  EXPECT_EQ(plain[6], (std::vector<double>{-17, -23}));
  EXPECT_EQ(plain[9], (std::vector<double>{-35, -29}));
  // Delay 1: fragment 0's pseudo-gradient is taken after step 2 (x = -3): global 1 - 2 * 4 = -7; alpha 0.5 keeps
  // half of the local -5: -6.
  EXPECT_EQ(run_torchft_case(1, 0, 3)[3], (std::vector<double>{-7, -5}));
  EXPECT_EQ(run_torchft_case(1, 0.5, 3)[3], (std::vector<double>{-6, -5}));
}

TEST(OuterLoop, LocalSgdAveragesTheWorkersModelsEveryHSteps) {
  std::vector<at::Tensor> results(3);
  on_workers(3, [&](int64_t rank, distsgd::comm::Communicator& comm) {
    auto params = torch::zeros({4});
    OuterSettings settings;
    settings.rule = OuterRule::kAverage;
    settings.sync_every = 2;
    OuterLoop loop(&comm, params, settings);
    params.add_(static_cast<float>(rank + 1));  // step 1: worker r at r + 1
    loop.after_inner_step(0.1);
    EXPECT_EQ(params[0].item<float>(), static_cast<float>(rank + 1)) << "no exchange before H steps";
    params.add_(1.0f);  // step 2: r + 2, then the mean of 2, 3, 4
    loop.after_inner_step(0.1);
    results[static_cast<size_t>(rank)] = params.clone();
    EXPECT_EQ(loop.exchanges(), 1);
    EXPECT_EQ(loop.bytes_sent(), 2 * 2 * 4 * 4 / 3);  // a ring allreduce of 4 floats: 2 (W-1)/W of 16 bytes
  });
  for (const auto& r : results) EXPECT_TRUE(r.equal(torch::full({4}, 3.0f))) << r;
}

TEST(OuterLoop, SlowMoAppliesSlowMomentumToTheExactAverage) {
  // One worker: x_avg = x. u = beta u + (x_prev - x) / gamma; x = x_prev - alpha gamma u.
  auto params = torch::zeros({1});
  OuterSettings settings;
  settings.rule = OuterRule::kSlowMo;
  settings.sync_every = 1;
  settings.lr = 2;          // alpha
  settings.momentum = 0.5;  // beta
  OuterLoop loop(nullptr, params, settings);
  const double gamma = 0.1;
  double x_prev = 0, u = 0;
  for (int step = 0; step < 4; ++step) {
    params.sub_(0.3);  // the inner step moved x by -0.3
    const double x = x_prev - 0.3;
    u = 0.5 * u + (x_prev - x) / gamma;
    x_prev = x_prev - 2 * gamma * u;
    loop.after_inner_step(gamma);
    EXPECT_NEAR(params[0].item<double>(), x_prev, 1e-5) << "step " << step;
  }
  EXPECT_LT(x_prev, -0.3 * 4 * 2) << "the slow momentum amplifies a steady direction";
}

TEST(OuterLoop, FragmentsHoldWholeParametersAndCoverTheVector) {
  const std::vector<Fragment> parameters{{0, 150}, {150, 6}, {156, 2400}, {2556, 16}, {2572, 48000}, {50572, 120}};
  for (int64_t count = 1; count <= 6; ++count) {
    const auto fragments = distsgd::algo::outer::fragments_of(parameters, count);
    ASSERT_EQ(static_cast<int64_t>(fragments.size()), count);
    int64_t next = 0;
    for (const auto& f : fragments) {
      EXPECT_EQ(f.offset, next);
      EXPECT_GT(f.numel, 0);
      next += f.numel;
    }
    EXPECT_EQ(next, 50692);
  }
  const auto two = distsgd::algo::outer::fragments_of(parameters, 2);
  EXPECT_EQ(two[1].offset, 2572) << "the large layer alone in the second half";
  const std::string error = distsgd::testing::error_of_call([&] { distsgd::algo::outer::fragments_of(parameters, 7); });
  EXPECT_NE(error.find("only 6 parameter tensors"), std::string::npos) << error;
}

TEST(QuantizedExchange, RoundTripIsWithinHalfAStepAndConstantBlocksAreExact) {
  torch::manual_seed(3);
  auto values = torch::randn({4 * distsgd::algo::outer::kBlock});
  values.narrow(0, 0, distsgd::algo::outer::kBlock).fill_(0.25f);
  for (int64_t bits : {4, 8, 16}) {
    auto bytes = torch::empty({distsgd::algo::outer::quantized_bytes(values.numel(), bits)}, torch::kUInt8);
    EXPECT_EQ(bytes.numel(), 4 * (8 + distsgd::algo::outer::kBlock * bits / 8));
    distsgd::algo::outer::quantize(values, bytes, bits);
    auto decoded = torch::empty_like(values);
    distsgd::algo::outer::dequantize(bytes, decoded, bits);
    EXPECT_TRUE(decoded.narrow(0, 0, distsgd::algo::outer::kBlock).equal(torch::full({64}, 0.25f)));
    for (int64_t b = 1; b < 4; ++b) {
      auto block = values.narrow(0, b * 64, 64);
      const double step = (block.max() - block.min()).item<double>() / ((1 << bits) - 1);
      const double error = (decoded.narrow(0, b * 64, 64) - block).abs().max().item<double>();
      EXPECT_LE(error, step / 2 * 1.001 + 1e-7) << bits << " bits, block " << b;
    }
  }
}

TEST(QuantizedExchange, SumsOverTheWorkersWithinTheQuantisationBound) {
  constexpr int64_t kWorkers = 3, kValues = 1000;  // not a multiple of the blocks: padded
  torch::manual_seed(4);
  std::vector<at::Tensor> inputs;
  for (int64_t r = 0; r < kWorkers; ++r) inputs.push_back(torch::rand({kValues}) * (r + 1));
  const auto exact = inputs[0] + inputs[1] + inputs[2];
  for (int64_t bits : {4, 8, 16}) {
    std::vector<at::Tensor> sums(kWorkers);
    std::vector<int64_t> sent(kWorkers);
    on_workers(kWorkers, [&](int64_t rank, distsgd::comm::Communicator& comm) {
      auto t = inputs[static_cast<size_t>(rank)].clone();
      distsgd::algo::outer::QuantizedAllreduce exchange(comm, t, bits);
      exchange.start();
      exchange.reduce();
      exchange.finish();
      sums[static_cast<size_t>(rank)] = t;
      sent[static_cast<size_t>(rank)] = exchange.bytes_sent();
    });
    // Each value went through two quantisations: every worker's part (range <= 3) and the sum (range <= 6).
    const double bound = (3.0 * 3 / 2 + 6.0 / 2) / ((1 << bits) - 1) + 1e-5;
    for (int64_t r = 0; r < kWorkers; ++r) {
      EXPECT_TRUE(sums[static_cast<size_t>(r)].equal(sums[0])) << "every worker decodes the same sum";
      EXPECT_LE((sums[static_cast<size_t>(r)] - exact).abs().max().item<double>(), bound) << bits << " bits";
    }
    // Slices of 384 values (6 blocks), 2 of 3 sent in each phase.
    EXPECT_EQ(sent[0], 2 * 2 * distsgd::algo::outer::quantized_bytes(384, bits));
  }
}

namespace {

const std::string kSmallRun =
    " --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-train-size 1920 "
    "--synthetic-test-size 64 --max-steps 12 --epochs 1 --seed 5 --threads 1 --no-checkpoint "
    "--progress-seconds 1000 --workers 2 --batch-size 16 --lr 0.05";

// kSmallRun on 4 workers (SGP's exponential graph has two hops there).
const std::string kFourWorkers =
    " --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-train-size 1920 "
    "--synthetic-test-size 64 --max-steps 12 --epochs 1 --seed 5 --threads 1 --no-checkpoint "
    "--progress-seconds 1000 --workers 4 --batch-size 8 --lr 0.05";

// The equivalences below are of the algorithms' math, so they run on the virtual cluster: the algorithms' own code
// on in-process workers, in one process, deterministic and beside other tests (a third of the multi-process runs'
// time). The multi-process path of the family is the other tests' (bytes, resume, DiLoCo with PowerSGD).
at::Tensor trained(const std::string& flags, const std::string& run = kSmallRun) {
  TempDir dir;
  auto r =
      run_distsgd("train" + run + distsgd::testing::kVirtualLenet5Timing + " " + flags + " --out " + (dir / "run"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? parameters_of(dir / "run") : torch::zeros({1});
}

double relative_error(const at::Tensor& a, const at::Tensor& b) { return ((a - b).norm() / b.norm()).item<double>(); }

}  // namespace

TEST(OuterLoopEquivalence, LocalSgdWithHOneIsArSgdWithoutOverlap) {
  // Momentum SGD is linear in the gradient, so averaging the models after every step is averaging the gradients.
  const auto arsgd = trained("--algo arsgd --overlap none");
  const auto local = trained("--algo localsgd --sync-every 1");
  const auto spaced = trained("--algo localsgd --sync-every 4");
  EXPECT_LT(relative_error(local, arsgd), 1e-5);
  EXPECT_GT(relative_error(spaced, arsgd), 1e-4) << "H = 4 is a different run";
}

// SlowMo over SGP (algo/outer/slowmo_over_sgp.hpp), 4 workers on the exponential graph. With H = 1 every step
// ends with the exact average of the models just gossiped, which gossip does not change (it conserves the push-sum
// mass), and the next gradients are taken at that average (a message from a peer that ran ahead waits): slowmo over
// SGP is slowmo over local SGD, and with alpha 1 and beta 0 it is AR-SGD without overlap.
TEST(OuterLoopEquivalence, SlowMoOverSgpWithHOneIsSlowMoOverLocalSgd) {
  const auto arsgd = trained("--algo arsgd --overlap none", kFourWorkers);
  const auto plain = trained("--algo slowmo --base sgp --sync-every 1 --slow-lr 1 --slow-momentum 0", kFourWorkers);
  EXPECT_LT(relative_error(plain, arsgd), 1e-5);
  const auto over_local = trained("--algo slowmo --base localsgd --sync-every 1", kFourWorkers);
  const auto over_sgp = trained("--algo slowmo --base sgp --sync-every 1", kFourWorkers);
  EXPECT_LT(relative_error(over_sgp, over_local), 1e-5);
  EXPECT_GT(relative_error(over_sgp, arsgd), 1e-4) << "the slow momentum changes the run";
  const auto spaced_local = trained("--algo slowmo --base localsgd --sync-every 4", kFourWorkers);
  const auto spaced_sgp = trained("--algo slowmo --base sgp --sync-every 4", kFourWorkers);
  EXPECT_GT(relative_error(spaced_sgp, spaced_local), 1e-4) << "between the averages, SGP's gossip mixes the models";
}

TEST(OuterLoopEquivalence, DiLoCoWithOuterLrOneAndNoMomentumIsLocalSgd) {
  const auto local = trained("--algo localsgd --sync-every 4");
  const auto diloco = trained("--algo diloco --sync-every 4 --outer-lr 1 --outer-momentum 0");
  const auto nesterov = trained("--algo diloco --sync-every 4");
  EXPECT_LT(relative_error(diloco, local), 1e-5);
  EXPECT_GT(relative_error(nesterov, local), 1e-4) << "the outer momentum changes the run";
}

TEST(LowCommunication, ExchangesEveryHStepsAndSendsAFractionOfArSgdsBytes) {
  TempDir dir;
  auto r = run_distsgd("train" + kSmallRun + " --algo diloco --sync-every 4 --fragments 2 --fragment-delay 1 " +
                       "--outer-bits 8 --out " + (dir / "diloco"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto arsgd = run_distsgd("train" + kSmallRun + " --algo arsgd --out " + (dir / "arsgd"));
  ASSERT_EQ(arsgd.exit_code, 0) << arsgd.output;
  const auto summary = summary_of(dir / "diloco");
  EXPECT_EQ(summary["outer_exchanges"], 6) << "12 steps, a fragment every 2";
  const double ratio =
      summary["bytes_sent_per_worker"].get<double>() / summary_of(dir / "arsgd")["bytes_sent_per_worker"].get<double>();
  // Every 4 steps the whole model in 8 bits (plus 8 bytes per 64 values): about 1/4 * (1/4 + 1/32) of AR-SGD.
  EXPECT_GT(ratio, 0.05);
  EXPECT_LT(ratio, 0.09);
}

TEST(LowCommunication, BadSettingsAreRefusedWithOneLine) {
  const std::string base = "train --model mlp --dataset synthetic --workers 2 --max-steps 1 --no-checkpoint ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--algo localsgd --sync-every 0", "--sync-every"},
      {"--algo diloco --sync-every 16 --fragments 3", "is not a multiple of --fragments 3"},
      {"--algo diloco --sync-every 16 --fragments 2 --fragment-delay 8", "must be below --sync-every / --fragments"},
      {"--algo diloco --outer-bits 5", "must be 4, 8, 16 or 32"},
      {"--algo localsgd --fragments 2", "--fragments"},
      {"--algo diloco --fragments 64 --sync-every 64", "only"},
      {"--algo slowmo --slow-momentum 1", "--slow-momentum"},
      {"--algo slowmo --base sgd", "--base"},
      {"--algo slowmo --base sgp --sgp-overlap 1", "--sgp-overlap applies to sgp only"},
      {"--algo localsgd --base sgp", "--base applies to slowmo only"},
  };
  for (const auto& [flags, expected] : cases) {
    auto r = run_distsgd(base + flags);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_NE(r.output.find(expected), std::string::npos) << flags << "\n" << r.output;
  }
}

// The simulator's models of the family (sim/analytical/outer_model.hpp, sim/des/outer_workload.cpp).
namespace {

distsgd::sim::ModelProfile toy_profile() {  // sim_des_agreement_test's: 7 MB of gradients, 18 ms of compute
  distsgd::sim::ModelProfile p;
  p.model = "toy";
  p.batch_size = 32;
  p.data_seconds = 0.001;
  p.update_seconds_per_byte = 1e-10;
  p.tensors = {{"a", 1000000, 0.001, 0.002}, {"b", 500000, 0.002, 0.004}, {"c", 250000, 0.003, 0.006}};
  return p;
}

// The toy profile with shapes, for PowerSGD: two matrices it compresses and a vector it does not.
distsgd::sim::ModelProfile toy_profile_with_shapes() {
  auto p = toy_profile();
  p.tensors[0].shape = {1000, 1000};
  p.tensors[1].shape = {500, 1000};
  p.tensors[2].shape = {250000};
  p.matmul_flops_per_second = 1e10;
  return p;
}

double des_iteration(const std::string& algorithm, int64_t workers, const distsgd::sim::ClusterDescription& c,
                     const distsgd::sim::OuterLoopSettings& o, int64_t powersgd_start = 0) {
  distsgd::sim::DesSettings s;
  s.algorithm = algorithm;
  s.workers = workers;
  s.iterations = 48;
  s.warmup = 16;
  s.sync_every = o.sync_every;
  s.fragments = o.fragments;
  s.fragment_delay = o.delay;
  s.outer_bits = o.bits;
  s.powersgd_rank = o.powersgd_rank;
  s.powersgd_start = powersgd_start;
  if (o.sgp_base) s.slowmo_base = "sgp";
  return distsgd::sim::simulate_discrete_events(toy_profile_with_shapes(), c, s).iteration_seconds;
}

}  // namespace

TEST(OuterLoopModel, ClosedFormsOfTrafficAndTime) {
  using distsgd::sim::OuterLoopSettings;
  const auto p = toy_profile();
  const auto link = distsgd::testing::uniform_link(1e8, 3e-5);  // 100 MB/s: the exchange is 10x a step's compute
  const double m = p.gradient_bytes(), compute = distsgd::sim::compute_seconds(p);
  const auto ring = link.allreduce_cost(4);
  // H steps per exchange of the whole model: compute + (allreduce + outer update) / H.
  const double h8 = distsgd::sim::predict_outer_loop(p, 4, link, {8}).iteration_seconds;
  EXPECT_NEAR(h8, compute + (distsgd::sim::ring_allreduce_seconds(ring, 4, m) + 1e-10 * m) / 8, 1e-9);
  // Traffic per step: 1/H of AR-SGD's 2 (W-1)/W m; at 8 bits a quarter of that plus 8 bytes per 64 values.
  EXPECT_DOUBLE_EQ(distsgd::sim::outer_bytes_per_step(p, 4, {8}), 2 * 0.75 * m / 8);
  EXPECT_NEAR(distsgd::sim::outer_bytes_per_step(p, 4, {8, 1, 0, 8}), 2 * 0.75 * (m / 4 + m / 4 / 64 * 8) / 8, 64);
  // Fragments: a quarter of the model every 2 steps moves the same bytes per step...
  EXPECT_NEAR(distsgd::sim::outer_bytes_per_step(p, 4, {8, 4}), distsgd::sim::outer_bytes_per_step(p, 4, {8}), 1);
  // ...and a delay hides up to `delay` steps of compute behind each fragment's exchange.
  const double fragments = distsgd::sim::predict_outer_loop(p, 4, link, {8, 4, 0}).iteration_seconds;
  const double delayed = distsgd::sim::predict_outer_loop(p, 4, link, {8, 4, 1}).iteration_seconds;
  const double fragment_exchange = distsgd::sim::ring_allreduce_seconds(ring, 4, m / 4);
  EXPECT_NEAR(fragments - delayed, compute / 2, 1e-9) << "one step of compute hidden per exchange, every 2 steps";
  EXPECT_GT(fragment_exchange, compute) << "the case is communication-bound";
  EXPECT_EQ(distsgd::sim::predict_outer_loop(p, 1, link, {8}).iteration_seconds, compute + 1e-10 * m / 8);
}

// DiLoCo with --compress powersgd: every H steps AR-SGD's PowerSGD step over the pseudo-gradient
// (sim/analytical/powersgd_model.hpp): the error feedback and three products, then allreduces of the uncompressed
// tensors and of (m + n) r per matrix.
TEST(OuterLoopModel, ClosedFormsWithPowerSgd) {
  using distsgd::sim::OuterLoopSettings;
  const auto p = toy_profile_with_shapes();
  const auto link = distsgd::testing::uniform_link(1e8, 3e-5);
  const auto ring = link.allreduce_cost(4);
  const double m = p.gradient_bytes(), compute = distsgd::sim::compute_seconds(p);
  // Rank 4: a (1000 x 1000) sends P and Q of 1000 x 4 floats, b (500 x 1000) 500 x 4 and 1000 x 4; c goes whole.
  const double p_bytes = 4.0 * (1000 * 4 + 500 * 4), q_bytes = 4.0 * (1000 * 4 + 1000 * 4), plain = 4.0 * 250000;
  const double products = 3 * 2 * 4.0 * (1000.0 * 1000 + 500.0 * 1000) / 1e10;  // P = M Q, Q = M^T P, P Q^T
  const double exchange = 1e-10 * m + products + distsgd::sim::ring_allreduce_seconds(ring, 4, plain) +
                          distsgd::sim::ring_allreduce_seconds(ring, 4, p_bytes) +
                          distsgd::sim::ring_allreduce_seconds(ring, 4, q_bytes);
  const OuterLoopSettings compressed{8, 1, 0, 32, 4};
  EXPECT_NEAR(distsgd::sim::predict_outer_loop(p, 4, link, compressed).iteration_seconds,
              compute + (exchange + 1e-10 * m) / 8, 1e-9);
  EXPECT_DOUBLE_EQ(distsgd::sim::outer_bytes_per_step(p, 4, compressed), 2 * 0.75 * (plain + p_bytes + q_bytes) / 8);
  EXPECT_LT(distsgd::sim::outer_bytes_per_step(p, 4, compressed), distsgd::sim::outer_bytes_per_step(p, 4, {8}) / 6);
  // One worker compresses too and sends nothing.
  EXPECT_NEAR(distsgd::sim::predict_outer_loop(p, 1, link, compressed).iteration_seconds,
              compute + (1e-10 * m + products + 1e-10 * m) / 8, 1e-12);
  // The discrete-event simulation runs the same sequence; before --powersgd-start it is plain DiLoCo.
  for (int64_t workers : {2, 8}) {
    EXPECT_NEAR(des_iteration("diloco", workers, link, compressed) /
                    distsgd::sim::predict_outer_loop(p, workers, link, compressed).iteration_seconds,
                1, 0.05)
        << workers << " workers";
  }
  EXPECT_DOUBLE_EQ(des_iteration("diloco", 4, link, compressed, 1000), des_iteration("diloco", 4, link, {8}));
  // Settings distsgd train refuses, refused by both fidelities with the same line.
  const std::string refused = "--compress powersgd with diloco compresses the whole pseudo-gradient";
  for (const OuterLoopSettings& bad : {OuterLoopSettings{8, 2, 0, 32, 4}, OuterLoopSettings{8, 1, 0, 8, 4}}) {
    EXPECT_NE(error_of_call([&] { distsgd::sim::predict_outer_loop(p, 4, link, bad); }).find(refused),
              std::string::npos);
    EXPECT_NE(error_of_call([&] { des_iteration("diloco", 4, link, bad); }).find(refused), std::string::npos);
  }
}

TEST(OuterLoopModel, DiscreteEventSimulationAgreesWithTheClosedForms) {
  const auto p = toy_profile();
  for (const auto& link : {distsgd::testing::uniform_link(1e8, 3e-5), distsgd::testing::uniform_link(1e10, 3e-5)}) {
    for (const distsgd::sim::OuterLoopSettings& o :
         {distsgd::sim::OuterLoopSettings{8}, distsgd::sim::OuterLoopSettings{8, 4, 0, 32},
          distsgd::sim::OuterLoopSettings{8, 2, 1, 32}, distsgd::sim::OuterLoopSettings{8, 2, 0, 8},
          distsgd::sim::OuterLoopSettings{16, 2, 3, 4}}) {
      for (int64_t workers : {2, 8}) {
        const double analytical = distsgd::sim::predict_outer_loop(p, workers, link, o).iteration_seconds;
        const double simulated = des_iteration("diloco", workers, link, o);
        EXPECT_NEAR(simulated / analytical, 1, 0.05)
            << workers << " workers, H " << o.sync_every << ", F " << o.fragments << ", delay " << o.delay << ", "
            << o.bits << " bits, link " << link.worker_bytes_per_second;
      }
    }
  }
  // localsgd and slowmo take H alone.
  const auto slow = distsgd::testing::uniform_link(1e8, 3e-5);
  EXPECT_NEAR(
      des_iteration("localsgd", 4, slow, {8}) / distsgd::sim::predict_outer_loop(p, 4, slow, {8}).iteration_seconds, 1,
      0.05);
}

// SlowMo over SGP (--base sgp): every inner step is SGP's without overlap (a push of the model to the exponential
// graph's peer, waited for, and the merge of the one that arrives), every H steps the exact average as over local SGD.
TEST(OuterLoopModel, SlowMoOverSgpPaysAPushEveryStep) {
  using distsgd::sim::OuterLoopSettings;
  const auto p = toy_profile();
  const double m = p.gradient_bytes();
  const OuterLoopSettings over_sgp{8, 1, 0, 32, 0, true}, over_local_sgd{8};
  for (const auto& link : {distsgd::testing::uniform_link(1e8, 3e-5), distsgd::testing::uniform_link(1e10, 3e-5)}) {
    const double push = distsgd::sim::model_transfer_seconds(p, link);
    EXPECT_NEAR(distsgd::sim::predict_outer_loop(p, 4, link, over_sgp).iteration_seconds,
                distsgd::sim::predict_outer_loop(p, 4, link, over_local_sgd).iteration_seconds + push + 1e-10 * m,
                1e-12);
    for (int64_t workers : {2, 8}) {
      const double analytical = distsgd::sim::predict_outer_loop(p, workers, link, over_sgp).iteration_seconds;
      EXPECT_NEAR(des_iteration("slowmo", workers, link, over_sgp) / analytical, 1, 0.05)
          << workers << " workers, link " << link.worker_bytes_per_second;
    }
  }
  const auto slow = distsgd::testing::uniform_link(1e8, 3e-5);
  EXPECT_GT(des_iteration("slowmo", 4, slow, over_sgp), 1.5 * des_iteration("slowmo", 4, slow, over_local_sgd))
      << "a push of the whole model every step on a slow link";
  // Traffic: the model every step besides the exact average's 1/H of AR-SGD's; one worker pushes nothing.
  EXPECT_DOUBLE_EQ(distsgd::sim::outer_bytes_per_step(p, 4, over_sgp),
                   m + distsgd::sim::outer_bytes_per_step(p, 4, over_local_sgd));
  EXPECT_EQ(distsgd::sim::predict_outer_loop(p, 1, slow, over_sgp).iteration_seconds,
            distsgd::sim::predict_outer_loop(p, 1, slow, over_local_sgd).iteration_seconds);
  // What distsgd train refuses, both fidelities refuse.
  EXPECT_NE(error_of_call([&] {
              distsgd::sim::predict_outer_loop(p, 4, slow, OuterLoopSettings{8, 2, 0, 32, 0, true});
            }).find("--base sgp is slowmo's"),
            std::string::npos);
  EXPECT_NE(
      error_of_call([&] { des_iteration("diloco", 4, slow, over_sgp); }).find("--base sgp applies to slowmo only"),
      std::string::npos);
}

// A checkpoint after step 5 holds the outer loop's state, and with a fragment delay an exchange in flight: the
// resumed run's next steps are the uninterrupted run's, bit for bit.
TEST(LowCommunication, ResumesBitForBitWithAnExchangeInFlight) {
  const std::string run =
      " --dataset synthetic --synthetic-shape 1x28x28 --synthetic-classes 4 --synthetic-train-size 256 "
      "--synthetic-test-size 64 --model lenet5 --batch-size 16 --threads 1 --seed 3 --progress-seconds 1000 "
      "--epochs 3 --timeout 60 --workers 2 --algo diloco --sync-every 4 --fragments 2 --fragment-delay 1 --outer-bits "
      "8";
  TempDir dir;
  auto r = run_distsgd("train" + run + " --max-steps 12 --no-checkpoint --out " + (dir / "reference"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Step 5 is the first of a round of H/F = 2: fragment 0's exchange started and merges at step 6.
  r = run_distsgd("train" + run + " --max-steps 5 --checkpoint-every-steps 5 --no-checkpoint --out " +
                  (dir / "resumed"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_distsgd("train" + run + " --max-steps 12 --resume " + (dir / "resumed"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(at::equal(parameters_of(dir / "reference"), parameters_of(dir / "resumed")));
  EXPECT_EQ(summary_of(dir / "reference")["test_loss"], summary_of(dir / "resumed")["test_loss"]);
}

// DiLoCo's pseudo-gradients through PowerSGD (the compressor AR-SGD uses): fewer bytes, the run trains; it takes the
// whole model at 32 bits without a delay.
TEST(LowCommunication, DiLoCoCompressesItsPseudoGradientsWithPowerSgd) {
  TempDir dir;
  auto plain = run_distsgd("train" + kSmallRun + " --algo diloco --sync-every 4 --out " + (dir / "plain"));
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  auto compressed = run_distsgd("train" + kSmallRun +
                                " --algo diloco --sync-every 4 --compress powersgd --rank 2 --powersgd-start 1 --out " +
                                (dir / "powersgd"));
  ASSERT_EQ(compressed.exit_code, 0) << compressed.output;
  const double ratio = summary_of(dir / "powersgd")["bytes_sent_per_worker"].get<double>() /
                       summary_of(dir / "plain")["bytes_sent_per_worker"].get<double>();
  // 3 exchanges, the first plain: (1 + 2 x compressed share) / 3, the compressed share well below 1.
  EXPECT_LT(ratio, 0.6);
  EXPECT_GT(ratio, 1.0 / 3);
  EXPECT_GT(relative_error(parameters_of(dir / "powersgd"), parameters_of(dir / "plain")), 1e-4);
  auto refused = run_distsgd("train" + kSmallRun + " --algo diloco --compress powersgd --fragments 2 --sync-every 4");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("--compress powersgd with diloco"), std::string::npos) << refused.output;
}
