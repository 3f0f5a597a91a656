// A device an analytical profile is made for (Paleo: Qi, Sparks and Talwalkar, "Paleo: A Performance Model for
// Deep Neural Networks", ICLR 2017): peak fp32 FLOP/s and memory bandwidth from the vendor's datasheet, and one
// efficiency factor, the share of both that real kernels reach, calibrated so that a model's whole training
// iteration takes as long as a published throughput says. Read from a JSON file or taken from a preset; every
// preset cites its datasheet and its calibration figure (`distsgd profile --list-devices`).
//   {"name": "my-gpu", "peak_flops": 14e12, "memory_bytes_per_second": 900e9, "efficiency": 0.5,
//    "host_to_device_bytes_per_second": 12e9, "kernel_seconds": 5e-6, "source": "...",
//    "calibration": {"model": "resnet50", "batch_size": 64, "samples_per_second": 253.1, "source": "..."}}
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace distsgd::sim {

// The published single-device throughput an efficiency was fitted to (sim/platform/analytical_profile.hpp's
// calibrated_efficiency). Empty model: the efficiency was not fitted on this device.
struct Calibration {
  std::string model;  // a registry name, at ImageNet's 3x224x224 input and 1000 classes
  int64_t batch_size = 0;
  double samples_per_second = 0;
  std::string source;
};

// NVIDIA, "Getting Started with CUDA Graphs" (A. Gray, 2019): short kernels launched back to back on a V100 took
// 3.8 us each, 2.9 us of it the kernel; an eager framework's dispatch of each operation adds to that. 5 us is the
// round figure every preset uses; a device file may give its own.
constexpr double kDefaultKernelSeconds = 5e-6;

struct DeviceDescription {
  std::string name;
  std::string source;                          // where peak, bandwidth and the host link come from
  double peak_flops = 0;                       // fp32, FLOP/s (a multiply-add is 2 FLOPs)
  double memory_bytes_per_second = 0;          // device memory
  double efficiency = 0;                       // (0, 1]: the share of peak and bandwidth kernels reach
  double host_to_device_bytes_per_second = 0;  // the input batch's copy (PCIe)
  Calibration calibration;                     // what `efficiency` was fitted to
  std::string efficiency_note;                 // how efficiency was set, e.g. "uncalibrated: efficiency from V100"
  // The least time one operation takes however small: its kernel's launch and the framework's dispatch. Without
  // it a small model on a fast device costs microseconds per iteration (lenet5 on a TITAN V: 25 us) and every
  // algorithm looks communication-bound.
  double kernel_seconds = kDefaultKernelSeconds;

  bool calibrated() const { return !calibration.model.empty(); }
};

std::vector<std::string> device_preset_names();
const std::vector<DeviceDescription>& device_presets();
// A preset by name, or a JSON file by path; throws Error naming the file, the field and what was expected, or
// listing the presets.
DeviceDescription load_device(const std::string& name_or_path);
DeviceDescription device_from_json(const nlohmann::json& json, const std::string& source);
nlohmann::json to_json(const DeviceDescription& device);

}  // namespace distsgd::sim
