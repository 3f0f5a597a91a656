#include "distsgd/algo/compression/compression_options.hpp"

namespace distsgd::algo::compression {

const EnumNames<Compression>& enum_names(Compression) {
  static const EnumNames<Compression> names{
      {Compression::kNone, "none"}, {Compression::kDgc, "dgc"}, {Compression::kPowerSgd, "powersgd"}};
  return names;
}

const StoredOption<Compression> kCompress{
    "--compress", Compression::kNone,
    "gradient uplink compression: none, dgc (Deep Gradient Compression: top --density of each tensor with "
    "momentum correction, factor masking, clipping, warm-up), or powersgd (arsgd: rank --rank approximations of "
    "each matrix, with error feedback, as PyTorch's powerSGD_hook)"};
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

const StoredOption<int64_t> kPowerSgdRank{
    "--rank",
    2,
    "PowerSGD: rank r of each matrix's approximation P Q^T (clamped to min(n, m) per matrix; a matrix is compressed "
    "only where (n + m) r is below n m / 2, as powerSGD_hook decides)",
    {at_least<int64_t>(1)}};
const StoredOption<int64_t> kPowerSgdStart{
    "--powersgd-start",
    10,
    "PowerSGD: steps of plain allreduce before compression starts (powerSGD_hook's start_powerSGD_iter)",
    {at_least<int64_t>(0)}};

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
