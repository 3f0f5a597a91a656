// The list of algorithms distsgd knows. Each is defined in its own file.
#include "distsgd/algo/algorithm.hpp"

namespace distsgd::algo {

AlgorithmInfo single_process_sgd_algorithm();
AlgorithmInfo allreduce_sgd_algorithm();
AlgorithmInfo bsp_algorithm();
AlgorithmInfo asp_algorithm();
AlgorithmInfo ssp_algorithm();
AlgorithmInfo easgd_algorithm();
AlgorithmInfo aladdin_algorithm();
AlgorithmInfo gosgd_algorithm();
AlgorithmInfo gossip_algorithm();
AlgorithmInfo adpsgd_algorithm();
AlgorithmInfo sgp_algorithm();
AlgorithmInfo localsgd_algorithm();
AlgorithmInfo slowmo_algorithm();
AlgorithmInfo diloco_algorithm();

const std::vector<AlgorithmInfo>& builtin_algorithms() {
  static const std::vector<AlgorithmInfo> algorithms{
      single_process_sgd_algorithm(),
      allreduce_sgd_algorithm(),
      bsp_algorithm(),
      asp_algorithm(),
      ssp_algorithm(),
      easgd_algorithm(),
      aladdin_algorithm(),
      gosgd_algorithm(),
      gossip_algorithm(),
      adpsgd_algorithm(),
      sgp_algorithm(),
      localsgd_algorithm(),
      slowmo_algorithm(),
      diloco_algorithm(),
  };
  return algorithms;
}

}  // namespace distsgd::algo
