// Analytical predictions for the decentralized algorithms (spec/simulator.md, "Per-algorithm models"): no server,
// each worker exchanges the model (m bytes) with one peer at a time over its own link. Homogeneous workers, a
// uniform choice of peers (the hot spots of several workers picking one peer need the discrete-event fidelity).
#pragma once
#include <cstdint>

#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// GoSGD: after each step, with probability p, a push of m to a random peer (the sender waits for the send).
Prediction predict_gosgd(const ModelProfile& profile, int64_t workers, double probability, const ClusterDescription& c);

// Gossiping SGD, one exchange of m with one peer per iteration. Pull (the default, as algo/decentralized/
// pull_gossip.cpp runs it): the request (a header) goes out before the forward pass and the reply is waited for after
// the backward, so the pull (2 alpha + m/B) runs under forward and backward; then the average with the pulled model
// and the update, a pass over 2m. Push: in the iteration's critical path, as GoSGD's with p = 1.
Prediction predict_gossip(const ModelProfile& profile, int64_t workers, bool pull, const ClusterDescription& c);

// SGP: one push of m per iteration; with overlap the push of iteration k runs under the compute of k + 1.
Prediction predict_sgp(const ModelProfile& profile, int64_t workers, bool overlap, const ClusterDescription& c);

// AD-PSGD (algo/decentralized/adpsgd.cpp): the odd ranks are active, the even passive. An active rank's
// communication thread sends its model to a passive neighbour, which averages it in and replies with its own, which
// the active rank averages in: 2 (alpha + m/B) + two passes over m, under the next step's forward and backward; the
// active rank waits for it before its update. A passive rank never waits. The throughput is the sum of both kinds'.
Prediction predict_adpsgd(const ModelProfile& profile, int64_t workers, const ClusterDescription& c);

}  // namespace distsgd::sim
