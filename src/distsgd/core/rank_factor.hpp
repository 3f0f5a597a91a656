// "RANK:FACTOR": one worker made slower (train's and simulate's --slowdown, simulate's --compute-multiplier and
// --link-multiplier, validate's --straggler). One parser, so every flag takes the same texts and says the same.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

namespace distsgd {

// "3:2.5" -> (3, 2.5); throws Error naming `flag` and showing the expected form. Ranges are the caller's.
std::pair<int64_t, double> parse_rank_factor(const std::string& flag, const std::string& text);

}  // namespace distsgd
