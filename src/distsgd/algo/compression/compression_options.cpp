#include "distsgd/algo/compression/compression_options.hpp"

#include "distsgd/catalog/algorithm_options.hpp"

namespace distsgd::algo::compression {

const StoredOption<Compression> kCompress = catalog::options::stored_option(catalog::options::kCompress);
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

const StoredOption<int64_t> kPowerSgdRank = catalog::options::stored_option(catalog::options::kPowerSgdRank);
const StoredOption<int64_t> kPowerSgdStart = catalog::options::stored_option(catalog::options::kPowerSgdStart);

bool dgc_enabled(const TrainConfig& c) { return kCompress.of(c) == Compression::kDgc; }

bool powersgd_enabled(const TrainConfig& c) { return kCompress.of(c) == Compression::kPowerSgd; }

std::vector<const OptionSpec*> compression_options() {
  return {&kCompress.spec(), &kDensity.spec(), &kDgcClipNorm.spec(), &kDgcWarmupEpochs.spec()};
}

std::vector<const OptionSpec*> powersgd_option_specs() { return {&kPowerSgdRank.spec(), &kPowerSgdStart.spec()}; }

void refuse_powersgd(const TrainConfig& c, const std::string& algorithm) {
  require(!powersgd_enabled(c), "--compress powersgd sums low-rank factors by allreduce: " + algorithm +
                                    " pushes gradients to parameter servers (use --algo arsgd, or --compress dgc)");
}

}  // namespace distsgd::algo::compression
