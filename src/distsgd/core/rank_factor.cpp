#include "distsgd/core/rank_factor.hpp"

#include <stdexcept>

#include "distsgd/core/error.hpp"

namespace distsgd {

std::pair<int64_t, double> parse_rank_factor(const std::string& flag, const std::string& text) {
  const std::string message = flag + ": '" + text + "' is not of the form RANK:FACTOR (e.g. 3:10)";
  const auto colon = text.find(':');
  require(colon != std::string::npos && colon > 0 && colon + 1 < text.size(), message);
  try {
    size_t used_rank = 0, used_factor = 0;
    const int64_t rank = std::stoll(text.substr(0, colon), &used_rank);
    const double factor = std::stod(text.substr(colon + 1), &used_factor);
    require(used_rank == colon && used_factor == text.size() - colon - 1, message);
    return {rank, factor};
  } catch (const std::logic_error&) {
    throw Error(message);
  }
}

}  // namespace distsgd
