#include "distsgd/sim/platform/device_description.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/sim/platform/json_fields.hpp"

namespace distsgd::sim {
namespace {

// PCIe 3 x16, spec/simulator.md's link presets ("PCIe 3 x16 ~12 GB/s"): how the batch reaches every device here.
constexpr double kPcie3 = 12e9;

// The efficiencies are calibrated_efficiency (sim/platform/analytical_profile.hpp) of distsgd's resnet50 at 3x224x224
// and 1000 classes for the calibration figure beside each (`distsgd profile --model resnet50 --batch-size B --device D
// --calibrate SAMPLES_PER_SECOND` prints it); tests/analytical_profile_test.cpp checks that each still reproduces its
// figure.
std::vector<DeviceDescription> make_presets() {
  const char* v100 = "NVIDIA Tesla V100 datasheet (2018): PCIe 14 TFLOPS fp32, SXM2 15.7; HBM2 900 GB/s";
  const char* lambda =
      "Lambda, \"RTX 2080 Ti Deep Learning Benchmarks with TensorFlow\" (lambdalabs.com/blog/"
      "2080-ti-deep-learning-benchmarks, 2019): ResNet-50 fp32 training, synthetic ImageNet, TensorFlow 1.12, "
      "CUDA 10.0, cuDNN 7.4.1; batch 64 for 11-12 GB cards (lambda-tensorflow-benchmark's settings)";
  std::vector<DeviceDescription> presets = {
      {"v100-pcie",
       v100,
       14e12,
       900e9,
       0.646,
       kPcie3,
       {"resnet50", 64, 253.1,
        "HKBU ddl-benchmarks (Shi et al., arXiv:2005.13247), results/2020-05-29: ResNet-50 batch 64 on one "
        "V100-PCIe-32GB, PyTorch 1.4, fake ImageNet: 253.1 images/s"},
       "calibrated"},
      {"v100-sxm2",
       v100,
       15.7e12,
       900e9,
       0.798,
       kPcie3,
       {"resnet50", 32, 329,
        "PyTorch DDP (Li et al., VLDB 2020) as spec/simulator.md cites it: ResNet-50 batch 32 on one DGX V100 GPU "
        "alone: 329 images/s"},
       "calibrated"},
      {"p100",
       "NVIDIA Tesla P100 datasheet (2016): SXM2 (NVLink) 10.6 TFLOPS fp32, HBM2 732 GB/s",
       10.6e12,
       732e9,
       0.7215,
       kPcie3,
       {"resnet50", 64, 219,
        "TensorFlow performance benchmarks (tensorflow.org/performance/benchmarks, 2017): ResNet-50 batch 64 on one "
        "P100 of an NVIDIA DGX-1, synthetic data: 219 images/s"},
       "calibrated"},
      {"k80",
       "NVIDIA Tesla K80 datasheet (2014): two GK210 GPUs a board, 4992 CUDA cores at 875 MHz boost, 8.74 TFLOPS "
       "fp32, GDDR5 480 GB/s; here one GK210, half of each (as cloud instances count K80 GPUs)",
       4.37e12,
       240e9,
       0.4402,
       kPcie3,
       {"resnet50", 64, 51.5,
        "TensorFlow performance benchmarks (tensorflow.org/performance/benchmarks, 2017; tensorflow/docs "
        "site/en/r1/guide/performance/benchmarks.md): ResNet-50 batch 64 on one K80 GPU of an Amazon EC2 "
        "p2.8xlarge, synthetic data: 51.5 images/s"},
       "calibrated"},
      {"p40",
       "NVIDIA Tesla P40 datasheet (2016): 12 TFLOPS fp32, GDDR5 346 GB/s",
       12e12,
       346e9,
       0,  // v100-pcie's, below
       kPcie3,
       {},
       "uncalibrated: efficiency from V100 (v100-pcie); no published P40 ResNet-50 training throughput found"},
      {"titan-v",
       "NVIDIA TITAN V (2017): 5120 CUDA cores at 1455 MHz boost, 14.9 TFLOPS fp32 (spec/simulator.md, Ko et al.); "
       "HBM2 3072-bit at 1.7 Gb/s, 652.8 GB/s",
       14.9e12,
       652.8e9,
       0.827,
       kPcie3,
       {"resnet50", 64, 300, lambda + std::string(": TITAN V 300 images/s")},
       "calibrated"},
      {"rtx-2080-ti",
       "NVIDIA GeForce RTX 2080 Ti (2018): 4352 CUDA cores at 1545 MHz reference boost, 13.4 TFLOPS fp32; GDDR6 "
       "352-bit at 14 Gb/s, 616 GB/s",
       13.4e12,
       616e9,
       0.884,
       kPcie3,
       {"resnet50", 64, 294, lambda + std::string(": RTX 2080 Ti 294 images/s")},
       "calibrated"},
  };
  double v100_efficiency = 0;
  for (const auto& p : presets) {
    if (p.name == "v100-pcie") v100_efficiency = p.efficiency;
  }
  for (auto& p : presets) {
    if (!p.calibrated()) {
      p.efficiency = v100_efficiency;
    } else {
      p.efficiency_note = "calibrated on " + p.calibration.model + " batch " +
                          std::to_string(p.calibration.batch_size) + ": " + p.calibration.source;
    }
  }
  return presets;
}

}  // namespace

const std::vector<DeviceDescription>& device_presets() {
  static const std::vector<DeviceDescription> presets = make_presets();
  return presets;
}

std::vector<std::string> device_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : device_presets()) names.push_back(p.name);
  return names;
}

DeviceDescription device_from_json(const nlohmann::json& json, const std::string& source) {
  const JsonFields fields(json, source);
  fields.reject_unknown({"name", "source", "peak_flops", "memory_bytes_per_second", "efficiency",
                         "host_to_device_bytes_per_second", "kernel_seconds", "calibration", "efficiency_note"});
  DeviceDescription d;
  d.name = fields.text("name", false, source);
  d.source = fields.text("source", false, source);
  d.peak_flops = fields.positive_number("peak_flops");
  d.memory_bytes_per_second = fields.positive_number("memory_bytes_per_second");
  d.efficiency = fields.positive_number("efficiency");
  require(d.efficiency <= 1,
          fields.where("efficiency") + "expected a number in (0, 1], got " + std::to_string(d.efficiency));
  d.host_to_device_bytes_per_second = fields.non_negative_number("host_to_device_bytes_per_second", false, kPcie3);
  d.kernel_seconds = fields.non_negative_number("kernel_seconds", false, kDefaultKernelSeconds);
  d.efficiency_note = fields.text("efficiency_note", false, "given in " + source);
  if (fields.has("calibration")) {
    const auto c = fields.object("calibration");
    c.reject_unknown({"model", "batch_size", "samples_per_second", "source"});
    d.calibration.model = c.text("model");
    d.calibration.batch_size = c.integer_at_least("batch_size", 1);
    d.calibration.samples_per_second = c.positive_number("samples_per_second");
    d.calibration.source = c.text("source", false, source);
  }
  return d;
}

DeviceDescription load_device(const std::string& name_or_path) {
  for (const auto& p : device_presets()) {
    if (p.name == name_or_path) return p;
  }
  require(std::filesystem::exists(name_or_path),
          "--device: '" + name_or_path + "' is neither a preset (" + join(device_preset_names()) + ") nor a file");
  return device_from_json(read_json_file(name_or_path, "device file"), name_or_path);
}

nlohmann::json to_json(const DeviceDescription& d) {
  nlohmann::json json = {{"name", d.name},
                         {"source", d.source},
                         {"peak_flops", d.peak_flops},
                         {"memory_bytes_per_second", d.memory_bytes_per_second},
                         {"efficiency", d.efficiency},
                         {"host_to_device_bytes_per_second", d.host_to_device_bytes_per_second},
                         {"kernel_seconds", d.kernel_seconds},
                         {"efficiency_note", d.efficiency_note}};
  if (d.calibrated()) {
    json["calibration"] = {{"model", d.calibration.model},
                           {"batch_size", d.calibration.batch_size},
                           {"samples_per_second", d.calibration.samples_per_second},
                           {"source", d.calibration.source}};
  }
  return json;
}

}  // namespace distsgd::sim
