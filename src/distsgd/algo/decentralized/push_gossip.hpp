// The push family of decentralized algorithms: each worker keeps a de-biased model z (the flat parameters,
// where gradients are evaluated) and a weight w (double, 1/n at the start); after its local step it may send
// (z, w/2) to one peer, keeping w/2, and it merges what it received with weights (push-sum; for GoSGD the same
// weighted average). Variants differ only in their topology, send probability and how long they wait:
//   GoSGD (--algo gosgd):          random peer, probability --gossip-prob, never waits.
//   gossip push (--gossip-mode push): random peer, every iteration, never waits.
//   SGP (--algo sgp):              directed exponential graph (2^k hops, k cycling), every iteration, and iteration
//                                  t waits for the messages of iterations <= t - --sgp-overlap.
// Momentum: a local momentum-SGD optimizer per worker, over z; momentum buffers are never sent.
// A lost worker (--on-worker-loss continue): the others stop choosing it (live_peer_at) and SGP stops waiting for
// its messages. Its weight, and the weight pushed to it that it never merged, are lost with it: the survivors'
// weights sum to less than 1, and the evaluated average sum_i w_i z_i / sum_i w_i is over what is left.
#pragma once
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/peer_topology.hpp"

#include <functional>

namespace distsgd::algo::decentralized {

struct PushGossipOptions {
  topology::Topology topology = topology::Topology::kRandom;
  double send_probability = 1;
  int64_t wait_lag = -1;  // -1: merge whatever arrived; L >= 0: iteration t waits for t + 1 - L messages
  // Keep a message sent at a later iteration than this worker's until this worker reaches it (merge before the
  // forward pass only what was sent before its iteration, after the step what was sent at it): synchronous SGP,
  // whose models depend on the data alone, not on which peer ran ahead. SlowMo over SGP needs it, so that every
  // worker's gradient after an exact average is taken at that average.
  bool hold_later_messages = false;
};

// SlowMo over SGP (algo/outer/slowmo_over_sgp.hpp): called at the end of every iteration, once its messages are
// merged, with the iteration's learning rate.
using AfterMerge = std::function<void(double lr)>;

std::unique_ptr<WorkerAlgorithm> make_push_gossip(const WorkerSetup& setup, PushGossipOptions options,
                                                  AfterMerge after_merge = {});

}  // namespace distsgd::algo::decentralized
