#include "distsgd/core/json_file.hpp"

#include "distsgd/core/error.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace distsgd {

void write_json_atomically(const std::string& path, const nlohmann::json& value) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    require(static_cast<bool>(out), "cannot write " + tmp);
    out << value.dump(2) << '\n';
    require(static_cast<bool>(out), "cannot write " + tmp + " (disk full?)");
  }
  std::filesystem::rename(tmp, path);
}

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream file(path);
  require(static_cast<bool>(file), path + ": cannot open the " + what);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  require(!file.bad(), path + ": cannot read the " + what);
  return parse_json_text(text, path);
}

namespace {

// Whether `text` nests arrays and objects deeper than kMaxJsonDepth (brackets inside strings do not count).
bool nested_too_deep(const std::string& text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

template <class Json>
Json parse_checked(const std::string& text, const std::string& path) {
  require(!nested_too_deep(text), path + ": not valid JSON (arrays and objects nested deeper than " +
                                      std::to_string(kMaxJsonDepth) + " levels)");
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond double's range ("1e999"): nlohmann reports it as out_of_range.406 "number overflow parsing".
    const std::string message = e.what();
    const auto what = message.find("] ");
    throw Error(path + ": not valid JSON (" + (what == std::string::npos ? message : message.substr(what + 2)) + ")");
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line L, column C: ..."; keep where.
    const std::string message = e.what();
    const auto at = message.find("at line ");
    const auto colon = message.find(':', at);
    throw Error(
        path + ": not valid JSON" +
        (at != std::string::npos && colon != std::string::npos ? " (" + message.substr(at, colon - at) + ")" : ""));
  }
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& path) {
  return parse_checked<nlohmann::json>(text, path);
}

nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& path) {
  return parse_checked<nlohmann::ordered_json>(text, path);
}

std::optional<nlohmann::json> read_json_file_if_valid(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad() || nested_too_deep(text)) return std::nullopt;
  auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return std::nullopt;
  return json;
}

bool update_json_file(const std::string& path, const std::function<void(nlohmann::json&)>& update) {
  auto value = read_json_file_if_valid(path);
  if (!value) return false;
  update(*value);
  write_json_atomically(path, *value);
  return true;
}

}  // namespace distsgd
