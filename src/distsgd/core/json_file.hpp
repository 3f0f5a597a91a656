// JSON files written atomically (a temporary file, then a rename): a reader never sees half of one.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <optional>
#include <string>

namespace distsgd {

// The deepest nesting of arrays and objects a JSON text may have. nlohmann parses any depth, but copying, comparing,
// printing and destroying a value recurse once per level: 100,000 levels overflowed the stack. A text nested deeper
// is refused before it is parsed.
constexpr int kMaxJsonDepth = 256;

// The JSON in `path`; throws Error "PATH: cannot open the WHAT" or "PATH: not valid JSON (...)".
nlohmann::json read_json_file(const std::string& path, const std::string& what);
// The JSON in `path`, or nothing when the file is missing or not JSON (a run that ended before writing it).
std::optional<nlohmann::json> read_json_file_if_valid(const std::string& path);
// The JSON in `text`, read from `path`; throws Error "PATH: not valid JSON (...)", also when it nests deeper than
// kMaxJsonDepth.
nlohmann::json parse_json_text(const std::string& text, const std::string& path);
// The same, keeping the objects' keys in the order of the text.
nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& path);

void write_json_atomically(const std::string& path, const nlohmann::json& value);

// Reads the JSON in `path`, lets `update` change it, and writes it back atomically. Does nothing, and returns false,
// when the file is missing or not JSON (say, a run that ended before writing it).
bool update_json_file(const std::string& path, const std::function<void(nlohmann::json&)>& update);

}  // namespace distsgd
