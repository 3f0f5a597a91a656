// The flags of gradient compression (--compress and DGC's settings), taken by the algorithms whose uplink carries
// gradients: AR-SGD, BSP, ASP, SSP.
#pragma once
#include "distsgd/core/option.hpp"

namespace distsgd::algo::compression {

enum class Compression { kNone, kDgc };
const EnumNames<Compression>& enum_names(Compression);

extern const StoredOption<Compression> kCompress;
extern const StoredOption<double> kDensity;
extern const StoredOption<double> kDgcClipNorm;
extern const StoredOption<double> kDgcWarmupEpochs;

// --compress dgc: the workers send DGC's sparse selections (momentum on the worker, plain SGD at the server).
bool dgc_enabled(const TrainConfig& config);

// The compression flags, for an algorithm's AlgorithmInfo::options.
std::vector<const OptionSpec*> compression_options();

}  // namespace distsgd::algo::compression
