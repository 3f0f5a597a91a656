// The simulator's inputs (model profiles, with one clear error per bad field) and its analytical predictions for
// the synchronous algorithms, checked against the closed forms they must reduce to.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/analytical/asynchronous_model.hpp"
#include "distsgd/sim/analytical/decentralized_model.hpp"
#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "sim_test_util.hpp"
#include "test_util.hpp"

namespace distsgd::sim {
namespace {

using distsgd::testing::uniform_link;

nlohmann::json three_tensor_json() {
  return {{"model", "toy"},
          {"batch_size", 32},
          {"data_seconds", 0.001},
          {"update_seconds_per_byte", 1e-10},
          {"tensors",
           {{{"name", "a"}, {"parameters", 1000000}, {"forward_seconds", 0.001}, {"backward_seconds", 0.002}},
            {{"name", "b"}, {"parameters", 500000}, {"forward_seconds", 0.002}, {"backward_seconds", 0.004}},
            {{"name", "c"}, {"parameters", 250000}, {"forward_seconds", 0.003}, {"backward_seconds", 0.006}}}}};
}

std::string error_of_profile(const nlohmann::json& json) {
  return distsgd::testing::error_of_call([&] { model_profile_from_json(json, "p.json"); });
}

TEST(ModelProfile, ReadsAndWritesTheSameProfile) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  EXPECT_EQ(profile.tensors.size(), 3u);
  EXPECT_DOUBLE_EQ(profile.gradient_bytes(), 7e6);
  EXPECT_DOUBLE_EQ(profile.forward_seconds(), 0.006);
  EXPECT_EQ(profile.bytes_per_parameter, 4);
  const auto again = model_profile_from_json(to_json(profile), "again.json");
  EXPECT_EQ(to_json(again), to_json(profile));
  EXPECT_TRUE(profile.input_shape.empty());  // older profiles do not say
  auto with_shape = three_tensor_json();
  with_shape["input_shape"] = {1, 28, 28};
  EXPECT_EQ(model_profile_from_json(with_shape, "p.json").input_shape, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(to_json(model_profile_from_json(with_shape, "p.json"))["input_shape"], with_shape["input_shape"]);
}

TEST(ModelProfile, BadFieldsNameTheFileTheFieldAndWhatWasExpected) {
  auto j = three_tensor_json();
  j["tensors"][1]["backward_seconds"] = "fast";
  EXPECT_EQ(error_of_profile(j), "p.json: tensors[1].backward_seconds: expected a non-negative number, got \"fast\"");
  j = three_tensor_json();
  j["tensors"][2].erase("parameters");
  EXPECT_EQ(error_of_profile(j), "p.json: tensors[2].parameters: missing");
  j = three_tensor_json();
  j["batch_size"] = 0;
  EXPECT_EQ(error_of_profile(j), "p.json: batch_size: expected a positive integer, got 0");
  j = three_tensor_json();
  j["input_shape"] = {28, 28};
  EXPECT_EQ(error_of_profile(j),
            "p.json: input_shape: expected [channels, height, width], positive integers, got [28,28]");
  j = three_tensor_json();
  j["tensors"] = nlohmann::json::array();
  EXPECT_EQ(error_of_profile(j), "p.json: tensors: expected a non-empty array, got []");
  EXPECT_EQ(error_of_profile(nlohmann::json::array()), "p.json: expected an object, got []");
  testing::TempDir dir;
  std::ofstream(dir / "broken.json") << "{\"model\": ";
  try {
    load_model_profile(dir / "broken.json");
    ADD_FAILURE() << "a broken file was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir / "broken.json" + ": not valid JSON (at line 1, column 11)");
  }
}

TEST(SynchronousModel, AllreduceWithoutOverlapIsComputePlusOneRingAllreduce) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  const LinkCost cost{50e-6, 1.0 / 125e6, 0};
  const auto p = predict_allreduce_sgd(profile, 4, cost, {false});
  const double compute = 0.006 + 0.012 + 1e-10 * 7e6;
  EXPECT_DOUBLE_EQ(p.iteration_seconds, compute + ring_allreduce_seconds(cost, 4, 7e6));
  EXPECT_DOUBLE_EQ(p.samples_per_second, 4 * 32 / p.iteration_seconds);
  EXPECT_DOUBLE_EQ(p.scaling_efficiency, compute / p.iteration_seconds);
  // One worker: no communication, efficiency 1.
  EXPECT_DOUBLE_EQ(predict_allreduce_sgd(profile, 1, cost, {false}).scaling_efficiency, 1);
}

TEST(SynchronousModel, WaitFreeBackpropOverBuckets) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  const LinkCost cost{50e-6, 1.0 / 125e6, 0};
  const double compute = 0.006 + 0.012 + 1e-10 * 7e6;
  // One bucket holding everything: reduced after the whole backward pass, as without overlap.
  const auto one = predict_allreduce_sgd(profile, 2, cost, {true, 1e9, 1e9});
  EXPECT_DOUBLE_EQ(one.iteration_seconds, predict_allreduce_sgd(profile, 2, cost, {false}).iteration_seconds);
  // A bucket per tensor: the DAG model's recurrence over the tensors.
  IterationInputs per_tensor = profile.iteration_inputs([&](double b) { return ring_allreduce_seconds(cost, 2, b); });
  const auto each = predict_allreduce_sgd(profile, 2, cost, {true, 0, 0});
  EXPECT_DOUBLE_EQ(each.iteration_seconds, compute + wfbp_exposed_communication_seconds(per_tensor.layers));
  EXPECT_LT(each.iteration_seconds, one.iteration_seconds);
  // Buckets of 3 MB after a first of 1 MB: c (1 MB) alone, then b + a (6 MB) would exceed 3 MB, so b, then a.
  const auto bucketed = predict_allreduce_sgd(profile, 2, cost, {true, 3e6, 1e6});
  EXPECT_DOUBLE_EQ(bucketed.iteration_seconds, each.iteration_seconds);
}

// Tensors a (4 MB; forward 1 ms, backward 2 ms) and b (2 MB; 2 ms, 4 ms), P = 2, alpha 1 ms, 1 GB/s: a reduce-scatter
// or allgather of m takes 1 ms + m/2 / 1 GB/s, so 3 ms for a and 2 ms for b.
// Backward b 0-4, a 4-6; reduce-scatters b 4-6, a 6-9: 3 ms exposed. Update 0.6 ms / 2. Next forward: gathers a 0-3,
// b 3-5; forward a 3-4, b waits for its gather: 5-7, 4 ms beyond the forward's 3. 3 + 4 + 6 + 3 + 0.3 = 16.3 ms.
TEST(SynchronousModel, MultistepOnAHandWorkedExample) {
  auto json = three_tensor_json();
  json["tensors"].erase(2);
  const auto profile = model_profile_from_json(json, "p.json");
  const LinkCost cost{1e-3, 1e-9, 0};
  const auto multistep = predict_allreduce_sgd(profile, 2, cost, allreduce_settings("multistep", 0, 0));
  EXPECT_NEAR(multistep.iteration_seconds, 16.3e-3, 1e-12);
  // Without overlap: 9 ms of compute, a ring allreduce of 6 MB (2 ms + 6 ms), the whole update: 17.6 ms.
  EXPECT_NEAR(predict_allreduce_sgd(profile, 2, cost, allreduce_settings("none", 0, 0)).iteration_seconds, 17.6e-3,
              1e-12);
  // One worker: nothing to exchange, the whole update.
  EXPECT_NEAR(predict_allreduce_sgd(profile, 1, cost, allreduce_settings("multistep", 0, 0)).iteration_seconds, 9.6e-3,
              1e-12);
}

// MG-WFBP over the profile's tensors is the DAG model over the groups it merges; a large alpha merges them all.
TEST(SynchronousModel, MgwfbpMergesTensorsWhenAlphaDominates) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  const double compute = 0.018 + 1e-10 * 7e6;
  const LinkCost latency_bound{0.1, 1e-12, 0};
  const auto merged = predict_allreduce_sgd(profile, 4, latency_bound, allreduce_settings("mgwfbp", 25e6, 1e6));
  // One message of 7 MB after the backward pass: as without overlap.
  EXPECT_DOUBLE_EQ(merged.iteration_seconds, compute + ring_allreduce_seconds(latency_bound, 4, 7e6));
  const auto per_tensor = predict_allreduce_sgd(profile, 4, latency_bound, allreduce_settings("wfbp", 0, 0));
  EXPECT_LT(merged.iteration_seconds, per_tensor.iteration_seconds);
  // Bandwidth-bound and backward-heavy: each tensor's message is done before the next gradient is ready, so MG-WFBP
  // keeps them apart, as wait-free backprop per tensor does.
  const LinkCost fast{1e-6, 1e-12, 0};
  EXPECT_DOUBLE_EQ(predict_allreduce_sgd(profile, 4, fast, allreduce_settings("mgwfbp", 0, 0)).iteration_seconds,
                   predict_allreduce_sgd(profile, 4, fast, allreduce_settings("wfbp", 0, 0)).iteration_seconds);
}

TEST(SynchronousModel, OverlapNamesAndBadOnes) {
  EXPECT_EQ(allreduce_overlap_names(),
            (std::vector<std::string>{"none", "wfbp", "mgwfbp", "merge-optimal", "multistep"}));
  EXPECT_FALSE(allreduce_settings("none", 1, 1).wait_free);
  EXPECT_EQ(allreduce_settings("mgwfbp", 1, 1).schedule, AllreduceSchedule::kMgwfbp);
  EXPECT_EQ(allreduce_settings("merge-optimal", 1, 1).schedule, AllreduceSchedule::kOptimalMerge);
  EXPECT_DOUBLE_EQ(allreduce_settings("multistep", 5, 2).bucket_bytes, 5);
  try {
    allreduce_settings("bucketed", 1, 1);
    ADD_FAILURE() << "an unknown overlap was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--overlap must be none, wfbp, mgwfbp, merge-optimal or multistep (got 'bucketed')");
  }
}

// PS incast: with one server every iteration moves P*m through its NIC twice (push and pull).
TEST(SynchronousModel, BspOnOneServerPaysTheIncastBothWays) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  const double rate = 125e6, m = 7e6;
  const auto one = predict_bsp(profile, 4, 1, uniform_link(rate));
  const double compute = 0.006 + 0.012;
  EXPECT_DOUBLE_EQ(one.iteration_seconds, compute + 2 * 4 * m / rate + 1e-10 * m);
  const auto four = predict_bsp(profile, 4, 4, uniform_link(rate));
  EXPECT_DOUBLE_EQ(four.iteration_seconds, compute + 2 * m / rate + 1e-10 * m / 4);
}

// ASP saturates at S * B_server / m gradients per second however many workers push (spec: "ASP saturation").
TEST(AsynchronousModel, AspSaturatesAtTheServersCapacity) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  const double m = 7e6, rate = 125e6;
  for (const int64_t servers : {1, 2}) {
    const auto p = predict_asp(profile, 64, servers, uniform_link(rate));
    EXPECT_DOUBLE_EQ(p.samples_per_second / 32, servers * rate / m) << servers;
  }
  // Few workers on a fast network: each worker's own cycle (compute and a round trip) sets the pace.
  const auto fast = predict_asp(profile, 2, 1, uniform_link(1e12));
  EXPECT_NEAR(fast.iteration_seconds, 0.018 + 2 * m / 1e12, 1e-12);
}

TEST(AsynchronousModel, SspWithoutStalenessIsBsp) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  const auto c = uniform_link(125e6);
  EXPECT_DOUBLE_EQ(predict_ssp(profile, 4, 1, 0, c).iteration_seconds, predict_bsp(profile, 4, 1, c).iteration_seconds);
  // Pulling less often never makes it slower.
  EXPECT_LE(predict_ssp(profile, 4, 4, 3, c).iteration_seconds, predict_ssp(profile, 4, 4, 1, c).iteration_seconds);
}

TEST(AsynchronousModel, EasgdAndAladdinCommunicateLess) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  const auto c = uniform_link(125e6);
  const double compute = 0.018 + 1e-10 * 7e6;
  // tau large: almost only compute.
  EXPECT_NEAR(predict_easgd(profile, 4, 1, 1000, c).iteration_seconds, compute + 2 * 7e6 / 125e6 / 1000, 1e-12);
  // ALADDIN's workers never wait: their compute or their own uplink, unless the server's inbound link is full.
  EXPECT_DOUBLE_EQ(predict_aladdin(profile, 1, 1, 4, uniform_link(1e12)).iteration_seconds, compute);
  EXPECT_DOUBLE_EQ(predict_aladdin(profile, 4, 1, 4, c).samples_per_second / 32, 125e6 / 7e6);
}

// Decentralized: the model crosses each worker's own link once per exchange; overlap hides it behind compute.
TEST(DecentralizedModel, ExchangesCostTheModelOverTheWorkersLink) {
  const auto profile = model_profile_from_json(three_tensor_json(), "p.json");
  const double compute = 0.018 + 1e-10 * 7e6, transfer = 7e6 / 125e6;
  const auto c = uniform_link(125e6);
  EXPECT_DOUBLE_EQ(predict_gossip(profile, 8, false, c).iteration_seconds, compute + transfer);
  // Gossip's pull runs under forward and backward (0.018 s here, against 0.056 s of transfer); the average with the
  // pulled model and the update pass over 2m after it.
  EXPECT_DOUBLE_EQ(predict_gossip(profile, 8, true, c).iteration_seconds, transfer + 2 * 1e-10 * 7e6);
  EXPECT_DOUBLE_EQ(predict_gossip(profile, 8, true, uniform_link(125e9)).iteration_seconds, 0.018 + 2 * 1e-10 * 7e6);
  EXPECT_DOUBLE_EQ(predict_gosgd(profile, 8, 0.1, c).iteration_seconds, compute + 0.1 * transfer);
  EXPECT_DOUBLE_EQ(predict_sgp(profile, 8, false, c).iteration_seconds, compute + transfer);
  EXPECT_DOUBLE_EQ(predict_sgp(profile, 8, true, c).iteration_seconds, std::max(compute, transfer));
  // AD-PSGD: 4 passive ranks at the compute's pace, 4 active ones waiting for their exchange (the model out and the
  // neighbour's back, two averaging passes), which runs under forward and backward.
  const double active = std::max(0.018, 2 * transfer + 2 * 1e-10 * 7e6) + 1e-10 * 7e6;
  EXPECT_NEAR(predict_adpsgd(profile, 8, c).iteration_seconds, 2 / (1 / compute + 1 / active), 1e-12);
  EXPECT_NEAR(predict_adpsgd(profile, 8, uniform_link(125e9)).iteration_seconds, compute, 1e-12);
  // Alone, nothing to exchange; and the throughput grows with the workers (no server, no collective).
  EXPECT_DOUBLE_EQ(predict_adpsgd(profile, 1, c).scaling_efficiency, 1);
  EXPECT_DOUBLE_EQ(predict_adpsgd(profile, 16, c).samples_per_second,
                   2 * predict_adpsgd(profile, 8, c).samples_per_second);
}

}  // namespace
}  // namespace distsgd::sim
