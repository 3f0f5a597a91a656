#include "distsgd/sim/model_profile.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// Reads one field with one clear error: which file, which field, what was expected, what was there.
class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string source, std::string path)
      : object_(object), source_(std::move(source)), path_(std::move(path)) {
    require(object_.is_object(), where("") + "expected an object, got " + object_.dump());
  }

  double non_negative(const std::string& key, bool required = true, double fallback = 0) const {
    const auto* value = find(key, required);
    if (!value) return fallback;
    require(value->is_number() && value->get<double>() >= 0,
            where(key) + "expected a non-negative number, got " + value->dump());
    return value->get<double>();
  }

  int64_t positive_integer(const std::string& key, bool required = true, int64_t fallback = 0) const {
    const auto* value = find(key, required);
    if (!value) return fallback;
    require(value->is_number_integer() && value->get<int64_t>() > 0,
            where(key) + "expected a positive integer, got " + value->dump());
    return value->get<int64_t>();
  }

  std::string text(const std::string& key, bool required = true) const {
    const auto* value = find(key, required);
    if (!value) return "";
    require(value->is_string(), where(key) + "expected a string, got " + value->dump());
    return value->get<std::string>();
  }

  const nlohmann::json& array(const std::string& key) const {
    const auto* value = find(key, true);
    require(value->is_array() && !value->empty(), where(key) + "expected a non-empty array, got " + value->dump());
    return *value;
  }

  std::string where(const std::string& key) const {
    const std::string field = path_.empty() ? key : key.empty() ? path_ : path_ + "." + key;
    return source_ + ": " + (field.empty() ? "" : field + ": ");
  }

 private:
  const nlohmann::json* find(const std::string& key, bool required) const {
    const auto it = object_.find(key);
    if (it == object_.end()) {
      require(!required, where(key) + "missing");
      return nullptr;
    }
    return &*it;
  }

  const nlohmann::json& object_;
  std::string source_;
  std::string path_;
};

}  // namespace

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

ModelProfile model_profile_from_json(const nlohmann::json& json, const std::string& source) {
  const FieldReader top(json, source, "");
  ModelProfile profile;
  profile.model = top.text("model");
  profile.batch_size = top.positive_integer("batch_size");
  profile.data_seconds = top.non_negative("data_seconds", false);
  profile.h2d_seconds = top.non_negative("h2d_seconds", false);
  profile.update_seconds_per_byte = top.non_negative("update_seconds_per_byte", false);
  profile.bytes_per_parameter = top.positive_integer("bytes_per_parameter", false, 4);
  const auto& tensors = top.array("tensors");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const FieldReader tensor(tensors[i], source, "tensors[" + std::to_string(i) + "]");
    TensorProfile t;
    t.name = tensor.text("name", false);
    t.parameters = tensor.positive_integer("parameters");
    t.forward_seconds = tensor.non_negative("forward_seconds");
    t.backward_seconds = tensor.non_negative("backward_seconds");
    profile.tensors.push_back(t);
  }
  return profile;
}

ModelProfile load_model_profile(const std::string& path) {
  std::ifstream file(path);
  require(static_cast<bool>(file), path + ": cannot open the profile");
  const auto json = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  require(!json.is_discarded(), path + ": not valid JSON");
  return model_profile_from_json(json, path);
}

nlohmann::json to_json(const ModelProfile& profile) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : profile.tensors) {
    tensors.push_back({{"name", t.name},
                       {"parameters", t.parameters},
                       {"forward_seconds", t.forward_seconds},
                       {"backward_seconds", t.backward_seconds}});
  }
  return {{"model", profile.model},
          {"batch_size", profile.batch_size},
          {"data_seconds", profile.data_seconds},
          {"h2d_seconds", profile.h2d_seconds},
          {"update_seconds_per_byte", profile.update_seconds_per_byte},
          {"bytes_per_parameter", profile.bytes_per_parameter},
          {"tensors", tensors}};
}

}  // namespace distsgd::sim
