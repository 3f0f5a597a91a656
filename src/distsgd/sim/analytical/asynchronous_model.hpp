// Analytical predictions for the parameter-server algorithms without a barrier (spec/simulator.md, "Per-algorithm
// models"): each worker runs its own cycle, and the servers' links cap the total rate of gradients, as do the
// nodes' links, each shared by its node's workers. Homogeneous workers, steady state. The largest shard (the
// layout's sharding) sets the servers' capacity; local aggregation is BSP's alone.
#pragma once
#include <cstdint>

#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// ASP: push the gradient, wait for the parameters (a round trip of m), compute again. Throughput is the smaller of
// P workers' own cycles and the servers' capacity S * B_server / m gradients per second (each gradient crosses a
// server link in and its reply out, in both directions at once).
Prediction predict_asp(const ModelProfile& profile, int64_t workers, int64_t servers, const ClusterDescription& c,
                       const PsLayout& layout = {});

// SSP with staleness s: an unanswered push every iteration (hidden under compute unless the uplink is the slower),
// and a blocking pull, behind that push, every s + 1 iterations and once more in between for all but the slowest
// worker (the bound, told the slowest clock one behind); s = 0 is BSP.
Prediction predict_ssp(const ModelProfile& profile, int64_t workers, int64_t servers, int64_t staleness,
                       const ClusterDescription& c, const PsLayout& layout = {});

// EASGD: local steps, and every tau iterations a round trip of m with the center.
Prediction predict_easgd(const ModelProfile& profile, int64_t workers, int64_t servers, int64_t tau,
                         const ClusterDescription& c, const PsLayout& layout = {});

// ALADDIN: a non-blocking push of m every iteration, the server's model back every pi gradients; no worker waits,
// so the worker's own uplink and the servers' inbound links are the only limits.
Prediction predict_aladdin(const ModelProfile& profile, int64_t workers, int64_t servers, int64_t pi,
                           const ClusterDescription& c, const PsLayout& layout = {});

}  // namespace distsgd::sim
