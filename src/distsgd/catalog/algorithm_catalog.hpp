// What distsgd knows about each built-in algorithm apart from its code: its name, its family and the capabilities
// that the simulator, the harness and the report ask about. Torch-free, so that sim/ and experiment/ read it as
// algo/ does; algo/'s registry (the code) says the same, and tests/catalog_test.cpp checks that it does.
#pragma once
#include <deque>
#include <string>
#include <vector>

namespace distsgd::catalog {

enum class Family {
  kSingleProcess,  // the reference: one process
  kSynchronous,    // every step (or, for the outer loop, every H steps) waits for every worker
  kAsynchronous,   // parameter-server algorithms whose workers wait for nobody
  kDecentralized,  // peers only, no server and no collective while training
};

struct AlgorithmEntry {
  std::string name;  // --algo of train and simulate
  Family family;
  bool needs_servers = false;        // parameter-server algorithms
  bool models_differ = false;        // the workers' models differ between exchanges (gossip, the outer loop)
  bool independent_workers = false;  // no training step waits for another worker (algo/algorithm.hpp says more)
  bool workers_update = true;        // a worker runs an optimizer pass each step (BSP's and ASP's servers do it)
  bool outer_loop = false;           // local steps, then an exchange every H steps (algo/outer/)
  bool simulated = true;             // distsgd simulate predicts it (both fidelities; not the single process)
};

// Every algorithm: the built-ins in the README's order, then those an extension registered (a deque, so that the
// pointers find() returns stay valid).
const std::deque<AlgorithmEntry>& algorithms();
// An extension's algorithm (examples/extension/): its entry, registered before any command runs, beside its code
// (algo::register_algorithm), its simulator models (sim::register_algorithm_model) and its recipe
// (experiment::register_recipe). A name already taken is refused.
void register_algorithm(AlgorithmEntry entry);
// The entry of `name`, or null for a name the catalogue does not hold.
const AlgorithmEntry* find(const std::string& name);
// "synchronous", "asynchronous", "decentralized", "single-process": in tables and validate's report.
std::string family_name(Family family);

// The names of the algorithms distsgd simulate predicts, in the catalogue's order.
std::vector<std::string> simulated_algorithms();

bool needs_servers(const std::string& name);
// Gossip, SGP, AD-PSGD: they exchange with peers only, so a run needs two workers.
bool peers_only(const std::string& name);

}  // namespace distsgd::catalog
