// SlowMo over SGP (Wang et al., ICLR 2020, Algorithm 1 with SGP as the base optimizer; fairscale's
// SlowMoDistributedDataParallel with slowmo_base_algorithm=SGP): every inner step is an SGP iteration (push-sum
// gossip on the directed exponential graph, algo/decentralized/push_gossip.hpp), and every H steps an exact average
// of the workers' models (an allreduce) feeds the slow momentum update (outer_loop.hpp's SlowMo rule).
//
// The exact average and the push-sum messages in flight: SGP runs here synchronously, as in fairscale (whose SGP
// asserts `not self.overlap`): iteration t waits for every message sent to its worker at iteration t and merges it
// before that worker joins the allreduce, and a message sent at a later iteration (a peer ran ahead) waits until
// the worker reaches that iteration (PushGossipOptions::hold_later_messages). So at the averaging point no
// push-sum mass is in flight, and since on the exponential graph every worker receives exactly one message per
// iteration, every push-sum weight is 1/n: the exact average sum_i w_i z_i of the de-biased models z_i is their
// plain mean, what the outer loop's allreduce computes. Afterwards every worker holds the result, with weight 1/n.
// fairscale replaces the averaging step's gossip by the allreduce; here that step gossips too: gossip conserves
// sum_i w_i z_i and sum_i w_i, so the average is the same, for one more message.
#pragma once
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/outer/outer_loop.hpp"

#include <memory>

namespace distsgd::algo::outer {

// settings: the SlowMo rule, H, alpha and beta (the exchange takes the whole model at 32 bits).
std::unique_ptr<WorkerAlgorithm> make_slowmo_over_sgp(const WorkerSetup& setup, OuterSettings settings);

}  // namespace distsgd::algo::outer
