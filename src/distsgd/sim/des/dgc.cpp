#include "distsgd/sim/des/dgc.hpp"

#include <algorithm>
#include <cmath>

namespace distsgd::sim {

double dgc_message_bytes(const ModelProfile& profile, double density) {
  constexpr double kBytesPerEntry = 8;  // int32 index + float32 value
  double entries = 0;
  for (const auto& t : profile.tensors) {
    entries += std::max(1.0, std::ceil(density * static_cast<double>(t.parameters)));
  }
  return kBytesPerEntry * entries;
}

}  // namespace distsgd::sim
