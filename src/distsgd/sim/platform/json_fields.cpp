#include "distsgd/sim/platform/json_fields.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::sim {

JsonFields::JsonFields(const nlohmann::json& object, std::string source, std::string path)
    : object_(object), source_(std::move(source)), path_(std::move(path)) {
  require(object_.is_object(), where("") + "expected an object, got " + object_.dump());
}

bool JsonFields::has(const std::string& key) const { return object_.contains(key); }

double JsonFields::positive_number(const std::string& key, bool required, double fallback) const {
  const auto* value = find(key, required);
  if (!value) return fallback;
  require(value->is_number() && value->get<double>() > 0,
          where(key) + "expected a positive number, got " + value->dump());
  return value->get<double>();
}

double JsonFields::non_negative_number(const std::string& key, bool required, double fallback) const {
  const auto* value = find(key, required);
  if (!value) return fallback;
  require(value->is_number() && value->get<double>() >= 0,
          where(key) + "expected a non-negative number, got " + value->dump());
  return value->get<double>();
}

int64_t JsonFields::integer_at_least(const std::string& key, int64_t minimum, bool required, int64_t fallback) const {
  const auto* value = find(key, required);
  if (!value) return fallback;
  const std::string expected =
      minimum == 1 ? "a positive integer" : "an integer of at least " + std::to_string(minimum);
  require(value->is_number_integer() && value->get<int64_t>() >= minimum,
          where(key) + "expected " + expected + ", got " + value->dump());
  return value->get<int64_t>();
}

std::string JsonFields::text(const std::string& key, bool required, const std::string& fallback) const {
  const auto* value = find(key, required);
  if (!value) return fallback;
  require(value->is_string(), where(key) + "expected a string, got " + value->dump());
  return value->get<std::string>();
}

const nlohmann::json& JsonFields::array(const std::string& key) const {
  const auto* value = find(key, true);
  require(value->is_array() && !value->empty(), where(key) + "expected a non-empty array, got " + value->dump());
  return *value;
}

JsonFields JsonFields::object(const std::string& key) const {
  const auto* value = find(key, true);
  return JsonFields(*value, source_, path_.empty() ? key : path_ + "." + key);
}

void JsonFields::reject_unknown(const std::vector<std::string>& known) const {
  for (const auto& item : object_.items()) {
    require(std::find(known.begin(), known.end(), item.key()) != known.end(),
            where(item.key()) + "unknown field (expected " + join_or(known) + ")");
  }
}

std::string JsonFields::where(const std::string& key) const {
  const std::string field = path_.empty() ? key : key.empty() ? path_ : path_ + "." + key;
  return source_ + ": " + (field.empty() ? "" : field + ": ");
}

const nlohmann::json* JsonFields::find(const std::string& key, bool required) const {
  const auto it = object_.find(key);
  if (it == object_.end()) {
    require(!required, where(key) + "missing");
    return nullptr;
  }
  return &*it;
}

}  // namespace distsgd::sim
