#include "distsgd/train/profile_file.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/train/compute_capacity.hpp"

namespace distsgd::train {
namespace {

nlohmann::json spread_json(const Spread& s) { return {{"median", s.median}, {"iqr", s.iqr}, {"min", s.min}}; }

std::string micros(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%10.1f", seconds * 1e6);
  return text;
}

}  // namespace

sim::ModelProfile model_profile_of(const MeasuredProfile& measured) {
  sim::ModelProfile profile;
  profile.model = measured.model;
  profile.input_shape = measured.input_shape;
  profile.batch_size = measured.batch_size;
  profile.data_seconds = measured.data.median;
  profile.update_seconds_per_byte = measured.update_seconds_per_byte;
  profile.matmul_flops_per_second = measured.matmul_flops_per_second;
  for (const auto& t : measured.tensors) {
    profile.tensors.push_back({t.name, t.parameters, t.forward.median, t.backward.median, t.shape});
  }
  return profile;
}

nlohmann::json measured_profile_json(const MeasuredProfile& measured) {
  nlohmann::json json = sim::to_json(model_profile_of(measured));
  json["threads"] = measured.threads;
  json["repeats"] = measured.repeats;
  json["per_block_forward"] = measured.per_block_forward;
  json["data_spread"] = spread_json(measured.data);
  json["iteration_seconds"] = spread_json(measured.iteration);
  for (std::size_t i = 0; i < measured.tensors.size(); ++i) {
    json["tensors"][i]["forward_iqr_seconds"] = measured.tensors[i].forward.iqr;
    json["tensors"][i]["backward_iqr_seconds"] = measured.tensors[i].backward.iqr;
  }
  return json;
}

std::string tensor_table(const sim::ModelProfile& profile) {
  std::ostringstream text;
  text << "  tensor                              parameters   forward  backward\n";
  for (const auto& t : profile.tensors) {
    std::string name = t.name.substr(0, 34);
    name.resize(34, ' ');
    text << "  " << name << std::string(12 - std::min<size_t>(12, std::to_string(t.parameters).size()), ' ')
         << t.parameters << micros(t.forward_seconds) << micros(t.backward_seconds) << "\n";
  }
  return text.str();
}

std::string measured_profile_text(const MeasuredProfile& measured, const std::string& out) {
  const auto profile = model_profile_of(measured);
  std::ostringstream text;
  text << profile.model << ", batch " << profile.batch_size << ", " << measured.threads << " thread(s), "
       << measured.repeats << " repeats (medians, us)\n"
       << tensor_table(profile) << "  sum of tensors: forward" << micros(profile.forward_seconds()) << ", backward"
       << micros(profile.backward_seconds()) << "; whole iteration" << micros(measured.iteration.median) << "; data"
       << micros(profile.data_seconds) << "; update"
       << micros(profile.update_seconds_per_byte * profile.gradient_bytes()) << "\nwrote " << out << "\n";
  return text.str();
}

std::string write_measured_profile(const TrainConfig& config, int64_t repeats, int64_t ranks_at_once,
                                   const std::string& out) {
  require(ranks_at_once == 0 || ranks_at_once >= 2,
          "--ranks-at-once must be at least 2 (got " + std::to_string(ranks_at_once) + ")");
  const auto measured = measure_profile(config, repeats);
  auto json = measured_profile_json(measured);
  std::string capacity_line;
  if (ranks_at_once >= 2) {
    const auto capacity = measure_compute_capacity(config, ranks_at_once, repeats);
    json["compute_capacity"] = compute_capacity_json(capacity);
    capacity_line = compute_capacity_text(capacity);
  }
  write_json_atomically(out, json);
  return measured_profile_text(measured, out) + capacity_line;
}

}  // namespace distsgd::train
