// The cluster a prediction is for (spec/simulator.md, "Inputs"): link rates, latency, reduction cost, nodes. Read
// from a JSON file or taken from a preset; every preset names its source (`distsgd simulate --list-clusters`).
//   {"name": "10gbe", "source": "...", "worker_bytes_per_second": 1.17e9, "server_bytes_per_second": 1.17e9,
//    "alpha_seconds": 3e-5, "gamma_seconds_per_byte": 0,
//    "workers_per_node": 4, "intra_node_bytes_per_second": 12e9, "intra_node_alpha_seconds": 1e-5,
//    "allreduce_fit": {"processes": 2, "alpha_seconds": 2e-4, "seconds_per_byte": 1e-9},
//    "allreduce_latency": "ring"}
// Topology: workers fill nodes in rank order (block placement), `workers_per_node` to a node. The workers of one node
// share its network link (`worker_bytes_per_second` is the node's NIC, each direction) and talk to each other over
// the intra-node link (PCIe, NVLink); parameter servers each have a link of their own.
// `allreduce_fit` (optional) is a measured allreduce (distsgd commbench --cluster-out): the spec prefers measured
// collective fits, whose alpha holds the software overhead the link figures lack.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "distsgd/core/enum_names.hpp"
#include "distsgd/sim/analytical/collective_costs.hpp"

namespace distsgd::sim {

// t(m) = alpha + beta*m for one allreduce of m bytes over `processes` ranks.
struct AllreduceFit {
  int64_t processes = 0;  // 0: none measured
  double alpha_seconds = 0;
  double seconds_per_byte = 0;
};

struct ClusterDescription {
  std::string name;
  std::string source;                      // where the figures come from
  double worker_bytes_per_second = 0;      // each node's link (a node of one worker: the worker's)
  double server_bytes_per_second = 0;      // each parameter server's link
  double alpha_seconds = 0;                // per message over the network (collective steps, point to point)
  double gamma_seconds_per_byte = 0;       // reduction
  int64_t workers_per_node = 1;            // ranks sharing one node's link
  double intra_node_bytes_per_second = 0;  // between workers of one node; 0: as the node's link
  double intra_node_alpha_seconds = 0;     // used with intra_node_bytes_per_second
  // Every rank of the run (workers and servers) shares this many cores, as on the one host where distsgd validate
  // and the emulated cluster run: compute slows down when more ranks compute than there are cores (the DES shares
  // them fairly). 0: each rank has a processor of its own, as on a real cluster. A measured capacity may be
  // fractional: `distsgd profile --ranks-at-once K` (what K ranks computing at once get of the host; validate's).
  double shared_cores = 0;
  // On a host where ranks compute on every core, a message also waits for its receiver to be scheduled: the extra
  // one-way delay's distribution, measured by `distsgd commbench --busy-delivery` as quantiles (both increasing;
  // empty: not measured) on a host of `busy_delivery_cores` cores. It applies to a run of at least that many ranks
  // (a rank's communication threads compete with its own compute too: commbench measured a median of 1.6 ms with 2
  // ranks on 2 cores), whatever shared_cores says of compute (validate's diagnostics turn the sharing of compute off,
  // not the delay), while the ranks computing take every core (the condition it was measured under; with a core
  // free a message is delivered at once): the discrete-event simulator adds a draw from it to each step of a ring
  // collective and the later of two to a point-to-point exchange (a header and a payload) that arrives then, the
  // analytical models its mean to every message's alpha, weighted by the chance that the cores are all computing
  // (busy_delivery_share).
  struct DelayQuantile {
    double q = 0, seconds = 0;
  };
  std::vector<DelayQuantile> busy_delivery;
  int64_t busy_delivery_cores = 0;
  // The delay at probability u in [0, 1]: linear between the quantiles, flat beyond them; 0 when not measured.
  double busy_delivery_seconds(double u) const;
  double busy_delivery_mean_seconds() const;  // of that same piecewise-linear distribution
  // Whether a run of `ranks` ranks on this cluster meets the delay.
  bool delays_busy_deliveries(int64_t ranks) const {
    return !busy_delivery.empty() && ranks >= 2 && ranks >= busy_delivery_cores;
  }
  // On a host whose cores the ranks share, each step of a collective wakes every rank taking part, and with more
  // ranks than cores they wait their turn: a step costs more the more ranks there are, with nobody computing too.
  // Measured by commbench's allreduce at several process counts on that host (validate: one fit per worker count of
  // its grid) as the start-up per ring step beyond that of the fewest processes measured (so 0 there): points
  // increasing in ranks (empty: not measured). Every step of a collective among `ranks` ranks pays
  // collective_handover_seconds(ranks) beside its alpha, in both fidelities and the virtual cluster.
  struct HandoverPoint {
    int64_t ranks = 0;
    double seconds = 0;
  };
  std::vector<HandoverPoint> collective_handover;
  // Linear in the ranks between the points, flat beyond them; 0 when not measured.
  double collective_handover_seconds(int64_t ranks) const;
  // Where the parameter servers run. kOwnLinks: each behind a link of its own (server_bytes_per_second), as distsgd's
  // own servers are ranks of their own. kWorkerNodes: on the workers' nodes, as TensorFlow's distributed runs and
  // BytePS place them (server s on node s mod nodes): a server's traffic crosses its node's link (each direction
  // shared with that node's workers) and a worker reaches a server of its own node without the network, over its
  // intra-node link (a node of one worker: a link at intra_node_rate()); server_bytes_per_second is then unused.
  enum class ServerPlacement { kOwnLinks, kWorkerNodes };
  ServerPlacement server_placement = ServerPlacement::kOwnLinks;
  // How a node's (or a server's) NIC sends the messages its ranks hand it at once. kFair: they share it, each at its
  // fair rate (a per-flow fair queue, Linux's fq and fq_codel). kFifo: one message after another in the order they
  // were sent (a FIFO queue: distsgd's emulated links are tbf, whose queue is one FIFO; pfifo_fast). A BSP server's
  // replies to 8 workers over --net 1gbit reach them one by one, ~2 ms apart (the runs' traces, bench/README,
  // session 40), so the first workers compute while the last wait; shared fairly they would all arrive at the end.
  enum class EgressQueue { kFair, kFifo };
  EgressQueue egress_queue = EgressQueue::kFair;
  bool servers_on_worker_nodes() const { return server_placement == ServerPlacement::kWorkerNodes; }
  // The nodes a run of `workers` fills, and the one server s of it runs on (kWorkerNodes).
  int64_t nodes(int64_t workers) const { return (workers + workers_per_node - 1) / workers_per_node; }
  int64_t node_of_server(int64_t server, int64_t workers) const { return server % nodes(workers); }
  AllreduceFit allreduce_fit;
  // How the start-ups of one allreduce over P processes grow with P: a ring's 2(P-1) steps (Gloo, NCCL's ring), or a
  // tree's 2 log2(P) (NCCL >= 2.4 reduces small messages up and broadcasts them down double binary trees, Sanders,
  // Speck and Traeff 2009, moving the bytes a ring moves). The allreduce only: reduce-scatter, allgather and alltoall
  // stay rings and pairwise steps. Both fidelities keep the ring's steps and bytes and scale each step's start-up (its
  // alpha and interference) by allreduce_alpha_scale. Measured points at a few workers rarely tell the two apart (the
  // start-ups hide behind backward); it is the user's statement of what their library does ("allreduce_latency").
  enum class AllreduceLatency { kRing, kTree };
  AllreduceLatency allreduce_latency = AllreduceLatency::kRing;
  double allreduce_startups(int64_t processes) const;
  // allreduce_startups over a ring's 2(P-1): 1 for a ring, log2(P)/(P-1) for a tree.
  double allreduce_alpha_scale(int64_t processes) const;
  // What a calibration (distsgd calibrate) finds beyond the links; the neutral values change no prediction.
  // Compute runs this much slower than the profile says (interference of communication threads, another framework);
  // and every iteration costs this much more, outside any overlap (the framework's own per-step work).
  double compute_scale = 1;
  double iteration_overhead_seconds = 0;
  // Each step of a collective across nodes that runs while its worker computes (wait-free backprop's buckets during
  // backward, multistep's gathers during the next forward) costs this much more than alpha: computing and
  // communicating at once slow each other (NCCL's kernels share the GPU with the backward's; over TCP the socket
  // threads share the host with the framework's). Published figures show it as exposed communication that grows with
  // the ring's 2(P-1) steps under overlap while a plain allreduce's does not (bench/README, "Calibration").
  double interference_alpha_seconds = 0;
  // A parameter server's processing: per request it handles (a push or a pull) and per byte it takes in.
  double server_seconds_per_request = 0;
  double server_seconds_per_byte = 0;
  // Where the ranks share the host's cores (shared_cores > 0), moving a byte costs those cores this much too (the
  // kernel copies loopback's TCP, Gloo's and the algorithm's threads handle the messages): charged to each worker's
  // compute for every byte it sends and receives. Elsewhere communication runs on cores the compute does not use.
  double communication_cpu_seconds_per_byte = 0;
  // Where the ranks share the host's cores and more workers compute than there are cores: the cores' seconds a
  // worker's compute takes, over the profile's compute (0: compute_scale). Measured from runs (their training threads'
  // CPU per iteration), not fitted: a compute_scale fitted at few workers also holds their waits, which take no core
  // (bench/README, "Calibration: the cores' share from the runs' CPU").
  double compute_cpu_scale = 0;

  int64_t node_of(int64_t worker) const { return worker / workers_per_node; }
  double intra_node_rate() const {
    return intra_node_bytes_per_second > 0 ? intra_node_bytes_per_second : worker_bytes_per_second;
  }
  double intra_node_alpha() const { return intra_node_bytes_per_second > 0 ? intra_node_alpha_seconds : alpha_seconds; }
  // The interference per step of a ring over `workers`: none within one node.
  double interference_alpha(int64_t workers) const {
    return workers >= 2 && node_of(workers - 1) > 0 ? interference_alpha_seconds : 0;
  }

  // Workers on the fullest node when `workers` fill nodes in rank order: the ones sharing its link.
  int64_t workers_on_fullest_node(int64_t workers) const;
  // One worker's share of its node's link while every worker of the fullest node sends at once.
  double worker_share_bytes_per_second(int64_t workers) const;

  // The per-step cost of AR-SGD's ring over `workers` (block placement). All on one node: the intra-node link.
  // Across nodes: each node's link carries the ring once per direction (one chunk in, one out per step), as does
  // every intra-node hop, so a step lasts as long as the slower of the two links and the larger alpha. A measured
  // allreduce_fit replaces these figures for rings on the same side of the node boundary as the one measured. Per ring
  // step: an allreduce's alpha is scaled by allreduce_alpha_scale (whole_allreduce_cost).
  LinkCost allreduce_cost(int64_t workers) const;
  // The same with alpha scaled by allreduce_alpha_scale: what ring_allreduce_seconds takes for an allreduce.
  LinkCost whole_allreduce_cost(int64_t workers) const;
  // A ring across nodes (with one worker per node, the only kind there is).
  LinkCost allreduce_cost() const { return allreduce_cost(workers_per_node + 1); }
  // Gloo's alltoall over `workers` (AR-SGD multistep's reduce-scatter), per pairwise_alltoall_seconds: point-to-point
  // messages, so the link figures (never the allreduce fit). Across nodes, a node of k workers sends k*(P-k) of the
  // slices (m/P each) through its link, where a ring would send P-1: beta grows by k*(P-k)/(P-1).
  LinkCost alltoall_cost(int64_t workers) const;
};

// collective_handover from allreduce fits at several process counts on one host (commbench's, a ring's start-ups):
// each count's alpha per step beyond the fewest processes' (so 0 there), never below 0 (the fits' noise). Fewer than
// two counts: empty.
std::vector<ClusterDescription::HandoverPoint> collective_handover_from_fits(std::vector<AllreduceFit> fits);

// The analytical models' form of busy_delivery for a run of `ranks`: its mean times `busy_share` (the share of
// messages delivered while the ranks computing take every core: busy_delivery_share) added to every message's alpha
// (each ring step's, and the whole measured allreduce's 2(P-1) steps), the distribution itself removed. The cluster
// as it is where the delay does not apply (delays_busy_deliveries).
ClusterDescription with_busy_delivery_in_alpha(const ClusterDescription& cluster, int64_t ranks,
                                               double busy_share = 1.0);

// The chance that at least `cores` of `workers` compute at a random moment, each computing a share `computing` of its
// time independently of the others (binomial): the analytical models' estimate of the share of messages a busy host
// delivers late (they have no timeline; the DES and the virtual cluster look at who computes as each message arrives).
double busy_delivery_share(int64_t workers, int64_t cores, double computing);

std::vector<ClusterDescription> cluster_presets();
std::vector<std::string> cluster_preset_names();
// One line per preset: name, nodes and links, source (distsgd simulate --list-clusters).
std::string describe_cluster_presets();
// "4 workers per node over 12 GB/s (alpha 10 us); node link 1.17 GB/s (alpha 30 us); servers 1.17 GB/s".
std::string describe_links(const ClusterDescription& cluster);

// A preset by name, or a JSON file by path; throws Error naming the file, the field and what was expected, or
// listing the presets.
ClusterDescription load_cluster(const std::string& name_or_path);
// A calibrated cluster file's clusters that fit its points within their noise (distsgd calibrate --noise: its
// "calibration" "consistent_clusters"); none for a preset or a file without them.
std::vector<ClusterDescription> load_consistent_clusters(const std::string& name_or_path);
// The names in a cluster file (and on the command line) of allreduce_latency, "ring" and "tree", and of
// server_placement, "own_links" and "worker_nodes" (core/enum_names.hpp: distsgd::name_of, enum_name_list).
const EnumNames<ClusterDescription::AllreduceLatency>& enum_names(ClusterDescription::AllreduceLatency);
const EnumNames<ClusterDescription::ServerPlacement>& enum_names(ClusterDescription::ServerPlacement);
const EnumNames<ClusterDescription::EgressQueue>& enum_names(ClusterDescription::EgressQueue);
// From a name; throws Error starting with `what` and listing the choices otherwise.
ClusterDescription::AllreduceLatency allreduce_latency_named(const std::string& name, const std::string& what);
ClusterDescription::ServerPlacement server_placement_named(const std::string& name, const std::string& what);
ClusterDescription cluster_from_json(const nlohmann::json& json, const std::string& source);
// A cluster file's "busy_delivery" field: {"cores": C, "quantiles": [...], "seconds": [...]}.
nlohmann::json busy_delivery_json(const std::vector<ClusterDescription::DelayQuantile>& quantiles, int64_t cores);
nlohmann::json to_json(const ClusterDescription& cluster);

}  // namespace distsgd::sim
