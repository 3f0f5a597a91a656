// Reading the simulator's JSON inputs (cluster descriptions, collective fits) one field at a time, each bad field
// one clear error naming the file, the field and what was expected, e.g.
// "cluster.json: workers_per_node: expected a positive integer, got 0".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace distsgd::sim {

class JsonFields {
 public:
  // `path` is the object's place in the file ("" for the top level, "allreduce_fit", "tensors[2]").
  JsonFields(const nlohmann::json& object, std::string source, std::string path = "");

  bool has(const std::string& key) const;
  double positive_number(const std::string& key, bool required = true, double fallback = 0) const;
  double non_negative_number(const std::string& key, bool required = true, double fallback = 0) const;
  int64_t integer_at_least(const std::string& key, int64_t minimum, bool required = true, int64_t fallback = 0) const;
  std::string text(const std::string& key, bool required = true, const std::string& fallback = "") const;
  // A non-empty array.
  const nlohmann::json& array(const std::string& key) const;
  // The fields of a nested object.
  JsonFields object(const std::string& key) const;

  // Throws for any key not in `known` (a misspelt field would otherwise be ignored without a word).
  void reject_unknown(const std::vector<std::string>& known) const;

  // "source: path.key: ", the start of every message about `key`.
  std::string where(const std::string& key) const;

 private:
  const nlohmann::json* find(const std::string& key, bool required) const;

  const nlohmann::json& object_;
  std::string source_;
  std::string path_;
};

}  // namespace distsgd::sim
