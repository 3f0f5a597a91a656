// JSON files written atomically (a temporary file, then a rename): a reader never sees half of one.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>

namespace distsgd {

void write_json_atomically(const std::string& path, const nlohmann::json& value);

}  // namespace distsgd
