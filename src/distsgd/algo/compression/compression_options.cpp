#include "distsgd/algo/compression/compression_options.hpp"

namespace distsgd::algo::compression {

const EnumNames<Compression>& enum_names(Compression) {
  static const EnumNames<Compression> names{{Compression::kNone, "none"}, {Compression::kDgc, "dgc"}};
  return names;
}

const StoredOption<Compression> kCompress{
    "--compress", Compression::kNone,
    "gradient uplink compression: none, or dgc (Deep Gradient Compression: top --density of each tensor with "
    "momentum correction, factor masking, clipping, warm-up)"};
const StoredOption<double> kDensity{"--density",
                                    0.001,
                                    "DGC: fraction of each tensor's entries sent per step after the warm-up",
                                    {[](const double& d) { return d > 0 && d <= 1; }, "must be in (0, 1]"}};
const StoredOption<double> kDgcClipNorm{
    "--dgc-clip-norm", 20,
    "DGC: clip the gradient norm at this threshold / sqrt(workers) before accumulating (0: no clipping)",
    non_negative<double>()};
const StoredOption<double> kDgcWarmupEpochs{
    "--dgc-warmup-epochs", 4, "DGC: epochs over which the density falls 25%, 6.25%, 1.5625%, 0.4%, then --density",
    non_negative<double>()};

bool dgc_enabled(const TrainConfig& c) { return kCompress.of(c) == Compression::kDgc; }

std::vector<const OptionSpec*> compression_options() {
  return {&kCompress.spec(), &kDensity.spec(), &kDgcClipNorm.spec(), &kDgcWarmupEpochs.spec()};
}

}  // namespace distsgd::algo::compression
