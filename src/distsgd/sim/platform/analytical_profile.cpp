#include "distsgd/sim/platform/analytical_profile.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

double batch_flops(const OperationCost& op, int64_t batch_size) {
  return static_cast<double>(batch_size) * op.flops_per_sample;
}

double batch_bytes(const OperationCost& op, int64_t batch_size) {
  return static_cast<double>(batch_size) * op.bytes_per_sample + op.fixed_bytes;
}

// The backward rule of backward_seconds: forward-sized passes, one per gradient computed.
int gradient_passes(const OperationCost& op) { return (op.input_needs_gradient ? 1 : 0) + (op.has_parameters ? 1 : 0); }

void check(const DeviceDescription& device, int64_t batch_size) {
  require(device.peak_flops > 0 && device.memory_bytes_per_second > 0,
          "device " + device.name + ": peak_flops and memory_bytes_per_second must be positive");
  require(device.efficiency > 0 && device.efficiency <= 1, "device " + device.name + ": efficiency must be in (0, 1]");
  require(batch_size >= 1,
          "an analytical profile needs a batch size of at least 1 (got " + std::to_string(batch_size) + ")");
}

// The update's operations on one parameter tensor (kUpdatePassesPerGradientByte: 3 + 2 + 3 + 3 passes), each at
// least a kernel's time. The profile spreads the sum over the gradient's bytes (its update_seconds_per_byte), so a
// model of many small tensors pays for its launches.
double update_seconds(const ModelCost& cost, const DeviceDescription& device) {
  constexpr double kPassesPerOperation[] = {3, 2, 3, 3};
  const double bandwidth = device.memory_bytes_per_second * device.efficiency;
  double seconds = 0;
  for (const auto& t : cost.tensors) {
    const double bytes = 4.0 * static_cast<double>(t.parameters);  // fp32
    for (const double passes : kPassesPerOperation)
      seconds += std::max(passes * bytes / bandwidth, device.kernel_seconds);
  }
  return seconds;
}

}  // namespace

double ModelCost::input_bytes_per_sample() const {
  double elements = 1;
  for (const int64_t d : input_shape) elements *= static_cast<double>(d);
  return elements * static_cast<double>(bytes_per_input_element);
}

double ModelCost::forward_flops_per_sample() const {
  double flops = 0;
  for (const auto& t : tensors) {
    for (const auto& op : t.operations) flops += op.flops_per_sample;
  }
  return flops;
}

double device_seconds(double flops, double bytes, const DeviceDescription& device) {
  return std::max(flops / (device.peak_flops * device.efficiency),
                  bytes / (device.memory_bytes_per_second * device.efficiency));
}

double forward_seconds(const OperationCost& op, int64_t batch_size, const DeviceDescription& device) {
  return std::max(device_seconds(batch_flops(op, batch_size), batch_bytes(op, batch_size), device),
                  op.share * device.kernel_seconds);
}

double backward_seconds(const OperationCost& op, int64_t batch_size, const DeviceDescription& device) {
  return gradient_passes(op) * forward_seconds(op, batch_size, device);
}

ModelProfile analytical_profile(const ModelCost& cost, const DeviceDescription& device, int64_t batch_size,
                                double data_seconds) {
  check(device, batch_size);
  require(!cost.tensors.empty(), cost.model + ": no parameter tensors to profile");
  require(data_seconds >= 0, "the data time must not be negative");
  ModelProfile profile;
  profile.model = cost.model;
  profile.batch_size = batch_size;
  profile.data_seconds = data_seconds;
  profile.bytes_per_parameter = 4;  // fp32, as the peak figures
  for (const auto& t : cost.tensors) {
    TensorProfile p{t.name, t.parameters, 0, 0, t.shape};
    for (const auto& op : t.operations) {
      p.forward_seconds += forward_seconds(op, batch_size, device);
      p.backward_seconds += backward_seconds(op, batch_size, device);
    }
    profile.tensors.push_back(p);
  }
  profile.update_seconds_per_byte = update_seconds(cost, device) / profile.gradient_bytes();
  profile.matmul_flops_per_second = device.peak_flops * device.efficiency;
  if (device.host_to_device_bytes_per_second > 0) {
    profile.h2d_seconds =
        static_cast<double>(batch_size) * cost.input_bytes_per_sample() / device.host_to_device_bytes_per_second;
  }
  return profile;
}

double analytical_iteration_seconds(const ModelCost& cost, const DeviceDescription& device, int64_t batch_size) {
  const auto profile = analytical_profile(cost, device, batch_size);
  return profile.forward_seconds() + profile.backward_seconds() +
         profile.update_seconds_per_byte * profile.gradient_bytes();
}

double calibrated_efficiency(const ModelCost& cost, DeviceDescription device, int64_t batch_size,
                             double samples_per_second) {
  require(samples_per_second > 0, "a calibration needs a positive throughput");
  device.efficiency = 1;
  const double roofline = analytical_iteration_seconds(cost, device, batch_size);
  const double published = static_cast<double>(batch_size) / samples_per_second;
  if (roofline > published) {
    std::ostringstream message;
    message << "device " << device.name << ": " << samples_per_second << " samples/s of " << cost.model << " at batch "
            << batch_size << " is faster than its roofline allows (" << batch_size / roofline
            << " samples/s at efficiency 1): check the peak figures";
    throw Error(message.str());
  }
  // Every term but the kernel floor scales with 1/efficiency, so the iteration time falls as efficiency rises:
  // bisect for the efficiency that gives the published time.
  double low = 0, high = 1;
  for (int i = 0; i < 200 && high - low > 1e-15; ++i) {
    device.efficiency = 0.5 * (low + high);
    (analytical_iteration_seconds(cost, device, batch_size) > published ? low : high) = device.efficiency;
  }
  return 0.5 * (low + high);
}

nlohmann::json cost_json(const ModelCost& cost, int64_t batch_size) {
  nlohmann::json tensors = nlohmann::json::array();
  double forward_flops = 0, backward_flops = 0;
  for (const auto& t : cost.tensors) {
    double ff = 0, fb = 0, bf = 0, bb = 0;
    for (const auto& op : t.operations) {
      const int passes = gradient_passes(op);
      ff += batch_flops(op, batch_size);
      fb += batch_bytes(op, batch_size);
      bf += passes * batch_flops(op, batch_size);
      bb += passes * batch_bytes(op, batch_size);
    }
    forward_flops += ff;
    backward_flops += bf;
    tensors.push_back({{"name", t.name},
                       {"forward_flops", ff},
                       {"forward_bytes", fb},
                       {"backward_flops", bf},
                       {"backward_bytes", bb},
                       {"operations", t.operations.size()}});
  }
  return {{"input_shape", cost.input_shape},
          {"forward_flops", forward_flops},
          {"backward_flops", backward_flops},
          {"generic_ops", cost.generic_ops},
          {"tensors", tensors}};
}

}  // namespace distsgd::sim
