#include "distsgd/core/config.hpp"

namespace distsgd {

double TrainConfig::slowdown_of(int64_t worker) const {
  double factor = 1;
  for (const auto& [rank, f] : slowdowns) {
    if (rank == worker) factor = f;
  }
  return factor;
}

}  // namespace distsgd
