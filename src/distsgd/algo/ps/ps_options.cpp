#include "distsgd/algo/ps/ps_options.hpp"

#include "distsgd/algo/allreduce/allreduce_options.hpp"
#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/catalog/algorithm_options.hpp"

#include <algorithm>

namespace distsgd::algo::ps {

const EnumNames<MomentumAt>& enum_names(MomentumAt) {
  static const EnumNames<MomentumAt> names{{MomentumAt::kWorker, "worker"},
                                           {MomentumAt::kServer, "server"},
                                           {MomentumAt::kBoth, "both"},
                                           {MomentumAt::kAuto, "auto"}};
  return names;
}

const StoredOption<Sharding> kSharding = catalog::options::stored_option(catalog::options::kSharding);
const StoredOption<LocalAggregation> kLocalAggregation =
    catalog::options::stored_option(catalog::options::kLocalAggregation);

const StoredOption<MomentumAt> kMomentumAt{
    "--momentum-at", MomentumAt::kAuto,
    "where momentum lives: worker, server, both (ALADDIN: local steps and global updates), or auto "
    "(ASP/SSP: server, ALADDIN: worker)"};

void check_momentum_placement(const TrainConfig& c, const std::string& algorithm,
                              const std::vector<MomentumAt>& places) {
  const MomentumAt at = kMomentumAt.of(c);
  if (at != MomentumAt::kAuto) {
    std::vector<std::string> names;
    for (auto p : places) names.push_back(name_of(p));
    require(std::find(places.begin(), places.end(), at) != places.end(),
            "--momentum-at " + name_of(at) + " is not a place for " + algorithm + "'s momentum (it takes " +
                join(names) + "; both: workers and servers that take separate steps)");
  }
  require(!compression::dgc_enabled(c) || at != MomentumAt::kServer,
          "--compress dgc keeps momentum on the worker (momentum correction): --momentum-at server contradicts it");
}

bool wait_free_backprop(const TrainConfig& c) {
  return allreduce::kOverlap.of(c) == allreduce::Overlap::kWfbp && !compression::dgc_enabled(c);
}

void check_overlap(const TrainConfig& c, const std::string& algorithm) {
  const auto overlap = allreduce::kOverlap.of(c);
  require(overlap != allreduce::Overlap::kMultistep,
          "--overlap multistep is AR-SGD's (reduce-scatter and allgather): " + algorithm + " takes none or wfbp");
  if (!allreduce::kOverlap.given(c) || overlap != allreduce::Overlap::kWfbp) return;
  require(!compression::dgc_enabled(c), "--compress dgc selects entries of the whole gradient after backward: " +
                                            algorithm + " cannot push during backward (drop --overlap wfbp)");
}

}  // namespace distsgd::algo::ps
