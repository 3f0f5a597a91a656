// The flags of gradient compression (--compress, DGC's and PowerSGD's settings), taken by the algorithms whose uplink
// carries gradients: AR-SGD, BSP, ASP, SSP (DGC); AR-SGD alone (PowerSGD, whose factors are summed by allreduce).
#pragma once
#include "distsgd/catalog/algorithm_choices.hpp"
#include "distsgd/core/option.hpp"

namespace distsgd::algo::compression {

using Compression = catalog::choices::Compression;

extern const StoredOption<Compression> kCompress;
extern const StoredOption<double> kDensity;
extern const StoredOption<double> kDgcClipNorm;
extern const StoredOption<double> kDgcWarmupEpochs;
extern const StoredOption<int64_t> kPowerSgdRank;
extern const StoredOption<int64_t> kPowerSgdStart;

// --compress dgc: the workers send DGC's sparse selections (momentum on the worker, plain SGD at the server).
bool dgc_enabled(const TrainConfig& config);

// --compress powersgd: low-rank approximations of the gradients, summed by allreduce (algo/compression/powersgd.hpp).
bool powersgd_enabled(const TrainConfig& config);

// The compression flags, for an algorithm's AlgorithmInfo::options: those of --compress and DGC, and PowerSGD's
// (--rank, --powersgd-start) for the algorithms that average gradients by allreduce.
std::vector<const OptionSpec*> compression_options();
std::vector<const OptionSpec*> powersgd_option_specs();

// For the algorithms that push gradients to parameter servers: --compress powersgd needs an allreduce.
void refuse_powersgd(const TrainConfig& config, const std::string& algorithm);

}  // namespace distsgd::algo::compression
