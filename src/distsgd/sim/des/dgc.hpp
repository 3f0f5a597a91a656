// Deep Gradient Compression's message (algo/compression/dgc.hpp): k = ceil(density * numel) entries of each tensor, at
// least one, each an int32 index and a float32 value (pack()).
#pragma once
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

double dgc_message_bytes(const ModelProfile& profile, double density);

}  // namespace distsgd::sim
