#include "distsgd/core/option.hpp"

#include <algorithm>
#include <cmath>

namespace distsgd {

std::string key_of_flag(const std::string& flag) {
  std::string key = flag.substr(flag.find_first_not_of('-'));
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

namespace {
template <class T, class Convert>
T parse_number(const std::string& flag, const std::string& text, const char* what, Convert convert) {
  try {
    size_t used = 0;
    const T value = convert(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw Error(flag + ": '" + text + "' is not " + what);
}
}  // namespace

int64_t parse_int(const std::string& flag, const std::string& text) {
  return parse_number<int64_t>(flag, text, "an integer",
                               [](const std::string& t, size_t* used) { return std::stoll(t, used); });
}

uint64_t parse_unsigned(const std::string& flag, const std::string& text) {
  require(text.empty() || text[0] != '-', flag + ": '" + text + "' is not a non-negative integer");
  return parse_number<uint64_t>(flag, text, "a non-negative integer",
                                [](const std::string& t, size_t* used) { return std::stoull(t, used); });
}

double parse_double(const std::string& flag, const std::string& text) {
  const double value = parse_number<double>(flag, text, "a number",
                                            [](const std::string& t, size_t* used) { return std::stod(t, used); });
  // std::stod reads "inf" and "nan"; no flag means either (an infinite --lr trained NaNs, a NaN passes no rule).
  require(std::isfinite(value), flag + ": '" + text + "' is not a finite number");
  return value;
}

}  // namespace distsgd
