#include "distsgd/sim/platform/model_profile.hpp"

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/sim/platform/json_fields.hpp"

namespace distsgd::sim {
double ModelProfile::gradient_bytes() const {
  double bytes = 0;
  for (const auto& t : tensors) bytes += static_cast<double>(t.parameters * bytes_per_parameter);
  return bytes;
}

double ModelProfile::forward_seconds() const {
  double seconds = 0;
  for (const auto& t : tensors) seconds += t.forward_seconds;
  return seconds;
}

double ModelProfile::backward_seconds() const {
  double seconds = 0;
  for (const auto& t : tensors) seconds += t.backward_seconds;
  return seconds;
}

namespace {

// A tensor's optional "shape": positive sizes whose product is its parameter count; empty when absent.
std::vector<int64_t> shape_of(const nlohmann::json& tensor, const JsonFields& fields, int64_t parameters) {
  if (!fields.has("shape")) return {};
  const auto& value = tensor.at("shape");
  std::vector<int64_t> shape;
  int64_t product = 1;
  bool valid = value.is_array() && !value.empty();
  for (const auto& size : valid ? value : nlohmann::json::array()) {
    valid = valid && size.is_number_integer() && size.get<int64_t>() >= 1;
    if (!valid) break;
    shape.push_back(size.get<int64_t>());
    product *= shape.back();
  }
  require(valid && product == parameters, fields.where("shape") + "expected positive sizes whose product is " +
                                              std::to_string(parameters) + ", got " + value.dump());
  return shape;
}

}  // namespace

ModelProfile model_profile_from_json(const nlohmann::json& json, const std::string& source) {
  const JsonFields top(json, source, "");
  ModelProfile profile;
  profile.model = top.text("model");
  profile.batch_size = top.integer_at_least("batch_size", 1);
  if (json.contains("input_shape")) {
    const auto& shape = json["input_shape"];
    const bool valid =
        shape.is_array() && shape.size() == 3 && std::all_of(shape.begin(), shape.end(), [](const nlohmann::json& v) {
          return v.is_number_integer() && v.get<int64_t>() > 0;
        });
    require(valid,
            top.where("input_shape") + "expected [channels, height, width], positive integers, got " + shape.dump());
    profile.input_shape = shape.get<std::vector<int64_t>>();
  }
  profile.data_seconds = top.non_negative_number("data_seconds", false);
  profile.h2d_seconds = top.non_negative_number("h2d_seconds", false);
  profile.update_seconds_per_byte = top.non_negative_number("update_seconds_per_byte", false);
  profile.bytes_per_parameter = top.integer_at_least("bytes_per_parameter", 1, false, 4);
  profile.matmul_flops_per_second = top.non_negative_number("matmul_flops_per_second", false);
  const auto& tensors = top.array("tensors");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const JsonFields tensor(tensors[i], source, "tensors[" + std::to_string(i) + "]");
    TensorProfile t;
    t.name = tensor.text("name", false);
    t.parameters = tensor.integer_at_least("parameters", 1);
    t.forward_seconds = tensor.non_negative_number("forward_seconds");
    t.backward_seconds = tensor.non_negative_number("backward_seconds");
    t.shape = shape_of(tensors[i], tensor, t.parameters);
    profile.tensors.push_back(t);
  }
  return profile;
}

ModelProfile load_model_profile(const std::string& path) {
  return model_profile_from_json(read_json_file(path, "profile"), path);
}

nlohmann::json to_json(const ModelProfile& profile) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : profile.tensors) {
    tensors.push_back({{"name", t.name},
                       {"parameters", t.parameters},
                       {"forward_seconds", t.forward_seconds},
                       {"backward_seconds", t.backward_seconds}});
    if (!t.shape.empty()) tensors.back()["shape"] = t.shape;
  }
  nlohmann::json json{{"model", profile.model},
                      {"batch_size", profile.batch_size},
                      {"data_seconds", profile.data_seconds},
                      {"h2d_seconds", profile.h2d_seconds},
                      {"update_seconds_per_byte", profile.update_seconds_per_byte},
                      {"bytes_per_parameter", profile.bytes_per_parameter},
                      {"tensors", tensors}};
  if (profile.matmul_flops_per_second > 0) json["matmul_flops_per_second"] = profile.matmul_flops_per_second;
  if (!profile.input_shape.empty()) json["input_shape"] = profile.input_shape;
  return json;
}

}  // namespace distsgd::sim
