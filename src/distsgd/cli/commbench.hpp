// `distsgd commbench`: micro-benchmark of the communication primitives as distsgd itself calls them (Communicator
// over c10d/Gloo), to fit t(m) = alpha + beta*m per primitive and per process count for the simulator
// (spec: simulator.md, "Communication costs").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/cluster/cluster_plan.hpp"

namespace distsgd::cli {

struct CommbenchConfig {
  int64_t processes = 2;
  int64_t min_kb = 4;          // smallest message, KiB
  int64_t max_mb = 64;         // largest message, MiB (sizes go up by x4 from min_kb)
  int64_t repeats = 50;        // timed repeats per size up to 1 MiB; fewer above (see repeats_for)
  double timeout = 120;        // seconds any one operation may take
  bool send_recv = true;       // also ping-pong between ranks 0 and 1
  bool incast = false;         // also every other rank sending to rank 0 at once (a parameter server's push)
  bool busy_delivery = false;  // also the ping-pong while every rank computes (commbench_cluster.hpp)
  // The emulated cluster to measure over (as `distsgd train --net`); empty net: this host's loopback.
  cluster::NetworkRequest network;
  std::string out;  // JSON file written by rank 0 (none when empty)
  // Cluster JSON for `distsgd simulate --cluster` fitted from this run (commbench_cluster.hpp); none when empty.
  std::string cluster_out;
  // With cluster_out: commbench's cluster files of this host at other process counts, whose allreduce fits and this
  // run's give cluster_out its collective_handover (sim::collective_handover_from_fits).
  std::vector<std::string> handover_from;
};

// Throws distsgd::Error naming the first bad flag.
void validate(const CommbenchConfig& c);

// Message sizes in bytes: min_kb KiB, x4, ..., up to max_mb MiB.
std::vector<int64_t> message_sizes(const CommbenchConfig& c);

// Timed repeats for a message of `bytes`: c.repeats up to 1 MiB, then scaled down with the size (at least 5), so a
// whole run stays short while every size keeps a median.
int64_t repeats_for(const CommbenchConfig& c, int64_t bytes);

// Without a launcher: starts c.processes copies of this program (launch_self) and returns their exit status.
// In a launched process: runs this rank's part; rank 0 prints the tables and fits and writes c.out. Returns 0.
int run_commbench(const CommbenchConfig& c, int argc, char** argv);

}  // namespace distsgd::cli
