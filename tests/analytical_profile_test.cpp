// Analytical profiles (Paleo): FLOPs counted from the model definition against hand counts and published totals,
// the roofline and backward rule, the device presets against the throughputs they were calibrated on, and
// `distsgd profile --device`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>

#include "distsgd/cli/profile_command.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/models/operation_costs.hpp"
#include "distsgd/sim/platform/analytical_profile.hpp"
#include "distsgd/sim/platform/device_description.hpp"
#include "distsgd/train/model_cost.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

// Per layer (weight and bias together): forward FLOPs of every operation charged to it.
std::map<std::string, double> layer_flops(const models::CountedModel& counted) {
  std::map<std::string, double> layers;
  for (const auto& t : counted.tensors) {
    const std::string layer = t.name.substr(0, t.name.rfind('.'));
    for (const auto& op : t.operations) layers[layer] += op.flops_per_sample;
  }
  return layers;
}

sim::ModelCost imagenet_cost(const std::string& model) {
  TrainConfig config;
  config.model = model;
  return distsgd::train::count_model_cost(config, {3, 224, 224}, 1000);
}

TEST(AnalyticalProfile, LeNet5FlopsMatchTheHandCountExactly) {
  auto model = models::make_model({"lenet5"}, {1, 28, 28, 10});
  const auto counted = models::count_operations(*model, {1, 28, 28, 10});
  // Multiply-adds: conv1 6x28x28 outputs x 1x5x5, conv2 16x10x10 x 6x5x5, fc1 400x120, fc2 120x84, fc3 84x10.
  EXPECT_EQ(counted.multiply_adds_per_sample, 117600.0 + 240000 + 48000 + 10080 + 840);
  const auto layers = layer_flops(counted);
  // conv: 2 x multiply-adds + bias per output; ReLU 1 per element; 2x2 max pool 4 per output element.
  const std::map<std::string, double> expected = {
      {"conv1", 2 * 117600.0 + 4704 + 4704 + 1176 * 4},
      {"conv2", 2 * 240000.0 + 1600 + 1600 + 400 * 4},
      {"fc1", 2 * 48000.0 + 120 + 120},
      {"fc2", 2 * 10080.0 + 84 + 84},
      {"fc3", 2 * 840.0 + 10},
  };
  ASSERT_EQ(layers.size(), expected.size());
  for (const auto& [layer, flops] : expected) EXPECT_NEAR(layers.at(layer), flops, 1e-9 * flops) << layer;
  EXPECT_TRUE(counted.generic_ops.empty());

  // conv1 reads the batch itself: no input gradient; conv2 reads conv1's output.
  const auto& conv1 = counted.tensors[0].operations.front();
  EXPECT_EQ(conv1.op, "aten::conv2d");
  EXPECT_FALSE(conv1.input_needs_gradient);
  EXPECT_TRUE(conv1.has_parameters);
  EXPECT_TRUE(counted.tensors[2].operations.front().input_needs_gradient);
  // conv1's bytes: input 784 + output 4704 elements per sample, weight 150 + bias 6 per batch, 4 bytes each.
  double bytes = 0, fixed = 0;
  for (const int i : {0, 1}) {
    bytes += counted.tensors[i].operations.front().bytes_per_sample;
    fixed += counted.tensors[i].operations.front().fixed_bytes;
  }
  EXPECT_NEAR(bytes, (784 + 4704) * 4.0, 1e-9);
  EXPECT_NEAR(fixed, 156 * 4.0, 1e-9);
}

TEST(AnalyticalProfile, MlpFlopsMatchTheHandCountExactly) {
  models::ModelOptions options;
  options.name = "mlp";
  options.mlp_width = 32;
  options.mlp_hidden_layers = 1;
  auto model = models::make_model(options, {1, 28, 28, 10});
  const auto counted = models::count_operations(*model, {1, 28, 28, 10});
  EXPECT_EQ(counted.multiply_adds_per_sample, 784.0 * 32 + 32 * 10);
  const auto layers = layer_flops(counted);
  EXPECT_NEAR(layers.at("layers.0"), 2 * 784.0 * 32 + 32 + 32, 1e-9);  // linear, its bias, the ReLU after it
  EXPECT_NEAR(layers.at("layers.2"), 2 * 32.0 * 10 + 10, 1e-9);
}

// torchvision's model documentation gives "GFLOPS" 4.09 for ResNet-50, 7.80 for ResNet-101, 11.51 for ResNet-152 and
// 15.47 for VGG-16(-BN) at 224x224, counted as multiply-adds (pytorch.org/vision/stable/models: ResNet50_Weights.
// IMAGENET1K_V1 and the others, VGG16_BN_Weights); He et al. (CVPR 2016) give 3.8e9 for ResNet-50 v1, whose stride
// sits on the 1x1 convolution.
TEST(AnalyticalProfile, ResNetsAndVgg16MatchThePublishedMultiplyAdds) {
  for (const auto& [name, published] : std::map<std::string, double>{
           {"resnet50", 4.09e9}, {"resnet101", 7.80e9}, {"resnet152", 11.51e9}, {"vgg16", 15.47e9}}) {
    auto model = models::make_model({name}, {3, 224, 224, 1000});
    const auto counted = models::count_operations(*model, {3, 224, 224, 1000});
    EXPECT_NEAR(counted.multiply_adds_per_sample, published, 0.005 * published) << name;
    EXPECT_TRUE(counted.generic_ops.empty()) << name << ": " << counted.generic_ops.front();
  }
}

TEST(AnalyticalProfile, PresetsReproduceTheThroughputTheyWereCalibratedOn) {
  const auto resnet50 = imagenet_cost("resnet50");
  int calibrated = 0;
  for (const auto& device : sim::device_presets()) {
    EXPECT_GT(device.efficiency, 0) << device.name;
    EXPECT_LE(device.efficiency, 1) << device.name;
    EXPECT_FALSE(device.source.empty()) << device.name;
    if (!device.calibrated()) {
      EXPECT_EQ(device.efficiency_note.rfind("uncalibrated: efficiency from V100", 0), 0u) << device.name;
      EXPECT_EQ(device.efficiency, sim::load_device("v100-pcie").efficiency) << device.name;
      continue;
    }
    ++calibrated;
    ASSERT_EQ(device.calibration.model, "resnet50") << device.name;
    EXPECT_FALSE(device.calibration.source.empty()) << device.name;
    const int64_t batch = device.calibration.batch_size;
    const double predicted = static_cast<double>(batch) / sim::analytical_iteration_seconds(resnet50, device, batch);
    EXPECT_NEAR(predicted, device.calibration.samples_per_second, 0.005 * device.calibration.samples_per_second)
        << device.name << ": refit with distsgd profile --model resnet50 --batch-size " << batch << " --device "
        << device.name << " --calibrate " << device.calibration.samples_per_second;
  }
  EXPECT_EQ(calibrated, 6);  // V100 PCIe and SXM2, K80, P100, TITAN V, RTX 2080 Ti; the P40 borrows the V100's
}

// 1 TFLOP/s and 100 GB/s at efficiency 0.5, with the given floor per kernel.
sim::DeviceDescription toy_device(double kernel_seconds) {
  sim::DeviceDescription device;
  device.name = "toy";
  device.peak_flops = 1e12;
  device.memory_bytes_per_second = 1e11;
  device.efficiency = 0.5;
  device.kernel_seconds = kernel_seconds;
  return device;
}

TEST(AnalyticalProfile, PaleoRooflineBackwardRuleAndUpdate) {
  auto device = toy_device(0);  // the roofline alone; EveryOperationAndUpdateStepCostsAtLeastAKernel adds the floor
  device.host_to_device_bytes_per_second = 1e10;
  // Compute-bound: 1e9 FLOPs per sample at batch 2 -> 2e9 / 5e11 = 4 ms; its 1e6 bytes take 20 us.
  const sim::OperationCost conv{"aten::conv2d", 1e9, 0.5e6, 0, true, true};
  // Memory-bound: 2e7 bytes per sample + 1e7 fixed -> 5e7 / 5e10 = 1 ms.
  const sim::OperationCost relu{"aten::relu", 1e6, 2e7, 1e7, false, true};
  const sim::OperationCost first{"aten::conv2d", 1e9, 0.5e6, 0, true, false};
  EXPECT_DOUBLE_EQ(sim::forward_seconds(conv, 2, device), 4e-3);
  EXPECT_DOUBLE_EQ(sim::forward_seconds(relu, 2, device), 1e-3);
  EXPECT_DOUBLE_EQ(sim::backward_seconds(conv, 2, device), 8e-3);   // input and weight gradients
  EXPECT_DOUBLE_EQ(sim::backward_seconds(first, 2, device), 4e-3);  // weight gradient only
  EXPECT_DOUBLE_EQ(sim::backward_seconds(relu, 2, device), 1e-3);   // input gradient only

  sim::ModelCost cost;
  cost.model = "toy";
  cost.input_shape = {3, 10, 10};
  cost.tensors = {{"conv.weight", 1000, {first, relu}}, {"conv2.weight", 3000, {conv}}};
  const auto profile = sim::analytical_profile(cost, device, 2, 0.25);
  ASSERT_EQ(profile.tensors.size(), 2u);
  EXPECT_DOUBLE_EQ(profile.tensors[0].forward_seconds, 5e-3);
  EXPECT_DOUBLE_EQ(profile.tensors[0].backward_seconds, 5e-3);
  EXPECT_DOUBLE_EQ(profile.tensors[1].backward_seconds, 8e-3);
  EXPECT_DOUBLE_EQ(profile.update_seconds_per_byte, sim::kUpdatePassesPerGradientByte / 5e10);
  EXPECT_DOUBLE_EQ(profile.h2d_seconds, 2 * 300 * 4 / 1e10);
  EXPECT_DOUBLE_EQ(profile.data_seconds, 0.25);
  EXPECT_DOUBLE_EQ(profile.gradient_bytes(), 16000);

  // Calibration inverts the iteration time: a throughput from efficiency 0.5 gives back 0.5.
  const double iteration = sim::analytical_iteration_seconds(cost, device, 2);
  EXPECT_NEAR(sim::calibrated_efficiency(cost, device, 2, 2 / iteration), 0.5, 1e-12);
  EXPECT_THROW(sim::calibrated_efficiency(cost, device, 2, 2 / (0.1 * iteration)), Error);  // faster than peak
}

// A small model on a fast device: without a floor lenet5's iteration on a TITAN V would take 25 us, less than
// launching its kernels does.
TEST(AnalyticalProfile, EveryOperationAndUpdateStepCostsAtLeastAKernel) {
  auto device = toy_device(5e-6);
  const sim::OperationCost tiny{"aten::relu", 10, 100, 0, false, true};      // 2 ns on the roofline
  const sim::OperationCost conv{"aten::conv2d", 1e9, 0.5e6, 0, true, true};  // 4 ms
  EXPECT_DOUBLE_EQ(sim::forward_seconds(tiny, 2, device), 5e-6);
  EXPECT_DOUBLE_EQ(sim::backward_seconds(tiny, 2, device), 5e-6);
  EXPECT_DOUBLE_EQ(sim::forward_seconds(conv, 2, device), 4e-3);  // far above the floor: unchanged
  // A bias's quarter of a convolution pays a quarter of its kernel: the floor is not counted once per tensor.
  sim::OperationCost quarter = tiny;
  quarter.share = 0.25;
  EXPECT_DOUBLE_EQ(sim::forward_seconds(quarter, 2, device), 1.25e-6);
  sim::ModelCost cost;
  cost.model = "toy";
  cost.input_shape = {1, 2, 2};
  cost.tensors = {{"a", 10, {tiny}}, {"b", 10, {tiny}}};
  const auto profile = sim::analytical_profile(cost, device, 2);
  // Two tensors of 10 parameters, four update operations each, every one a kernel.
  EXPECT_DOUBLE_EQ(profile.update_seconds_per_byte * profile.gradient_bytes(), 2 * 4 * 5e-6);
  EXPECT_DOUBLE_EQ(sim::load_device("titan-v").kernel_seconds, sim::kDefaultKernelSeconds);
  // Calibration still inverts the iteration time where the floor holds part of it.
  cost.tensors.push_back({"c", 3000, {conv}});
  device.efficiency = 0.3;
  const double iteration = sim::analytical_iteration_seconds(cost, device, 2);
  EXPECT_NEAR(sim::calibrated_efficiency(cost, device, 2, 2 / iteration), 0.3, 1e-9);
}

TEST(AnalyticalProfile, DeviceFilesGiveOneClearErrorPerBadField) {
  const nlohmann::json good = {
      {"name", "mine"}, {"peak_flops", 1e13}, {"memory_bytes_per_second", 5e11}, {"efficiency", 0.6}};
  const auto device = sim::device_from_json(good, "gpu.json");
  EXPECT_EQ(device.name, "mine");
  EXPECT_DOUBLE_EQ(device.host_to_device_bytes_per_second, 12e9);
  EXPECT_FALSE(device.calibrated());
  auto expect_error = [](nlohmann::json json, const std::string& fragment) {
    try {
      sim::device_from_json(json, "gpu.json");
      ADD_FAILURE() << "no error for " << json.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  auto bad = good;
  bad["efficiency"] = 1.5;
  expect_error(bad, "gpu.json: efficiency: expected a number in (0, 1]");
  bad = good;
  bad["kernel_seconds"] = -1;
  expect_error(bad, "gpu.json: kernel_seconds:");
  bad = good;
  bad.erase("peak_flops");
  expect_error(bad, "gpu.json: peak_flops: missing");
  bad = good;
  bad["peak_flop"] = 1;
  expect_error(bad, "gpu.json: peak_flop: unknown field");
  try {
    sim::load_device("v99");
    ADD_FAILURE() << "no error for an unknown device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("v100-pcie"), std::string::npos) << e.what();
  }
}

TEST(AnalyticalProfile, ProfileCommandWritesAnAnalyticalProfileTheSimulatorReads) {
  TempDir dir;
  auto r = run_distsgd(
      "profile --model lenet5 --device v100-pcie --input-shape 1x28x28 --classes 10 --batch-size 32 "
      "--out " +
      (dir / "p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto profile = sim::load_model_profile(dir / "p.json");
  ASSERT_EQ(profile.tensors.size(), 10u);
  EXPECT_EQ(profile.batch_size, 32);
  EXPECT_EQ(profile.data_seconds, 0);  // read ahead unless asked
  EXPECT_GT(profile.h2d_seconds, 0);
  EXPECT_GT(profile.forward_seconds(), 0);
  const auto json = nlohmann::json::parse(read_file(dir / "p.json"));
  EXPECT_EQ(json["analytical"]["device"]["name"], "v100-pcie");
  EXPECT_NEAR(json["analytical"]["costs"]["forward_flops"].get<double>(),
              32 * (249312.0 + 484800 + 96240 + 20328 + 1690), 1e-6);

  r = run_distsgd("profile --list-devices");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& name : sim::device_preset_names()) EXPECT_NE(r.output.find(name), std::string::npos) << name;

  r = run_distsgd("profile --model lenet5 --efficiency 0.5 --out " + (dir / "q.json"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--device"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace distsgd::testing
