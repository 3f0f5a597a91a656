// Workers that share links and servers without a barrier (ASP, EASGD) as a closed queueing network: each worker
// computes (a delay no one else lengthens), then goes through legs (a push, the server's processing, a pull), each
// leg held up by the slowest of the stations it crosses at once (its own node's link, a server's link), and every
// station shared by the workers that visit it (processor sharing, as the links share their rate). Solved by
// Bard-Schweitzer approximate mean value analysis (Schweitzer 1979; Bard 1979; Lazowska et al., "Quantitative System
// Performance", 1984, ch. 6): a visitor finds at a station the mean queue of the others, (N - 1) / N of its mean
// length. Between the two bounds the closed forms took before, the workers' own cycle and the busiest station's
// capacity, where neither holds: on a 100 Mbit/s emulated network 4 ASP workers pushing 2.7 MB to one server measured
// 104 samples/s, the capacity said 142, this model 114 (bench/README, "The asynchronous closed forms as a queueing
// network").
#pragma once
#include <cstddef>
#include <vector>

namespace distsgd::sim {

struct QueueingStation {
  double demand = 0;    // seconds a worker's visit takes when it has the station alone
  double visitors = 1;  // workers that visit it each cycle (and share it)
};

struct QueueingLeg {
  std::vector<std::size_t> stations;  // crossed at once: the leg lasts as long as the slowest of them
  double latency = 0;                 // seconds added to the leg (a message's alpha)
};

// One worker's cycle: `think` seconds of its own, then the legs in turn.
double closed_network_cycle_seconds(double think, const std::vector<QueueingStation>& stations,
                                    const std::vector<QueueingLeg>& legs);

}  // namespace distsgd::sim
