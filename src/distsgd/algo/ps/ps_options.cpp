#include "distsgd/algo/ps/ps_options.hpp"

#include "distsgd/algo/compression/compression_options.hpp"

#include <algorithm>

namespace distsgd::algo::ps {

const EnumNames<Sharding>& enum_names(Sharding) {
  static const EnumNames<Sharding> names{{Sharding::kMemory, "memory"}, {Sharding::kLayer, "layer"}};
  return names;
}

const EnumNames<MomentumAt>& enum_names(MomentumAt) {
  static const EnumNames<MomentumAt> names{{MomentumAt::kWorker, "worker"},
                                           {MomentumAt::kServer, "server"},
                                           {MomentumAt::kBoth, "both"},
                                           {MomentumAt::kAuto, "auto"}};
  return names;
}

const StoredOption<Sharding> kSharding{"--sharding", Sharding::kMemory,
                                       "parameter server: memory (equal contiguous ranges) or layer (whole tensors)"};

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

}  // namespace distsgd::algo::ps
