#include "distsgd/comm/process_env.hpp"

#include "distsgd/core/error.hpp"

#include <algorithm>
#include <cstdlib>

namespace distsgd::comm {
namespace {

std::optional<std::string> variable(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

int64_t integer(const char* name, const std::string& text) {
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw Error(std::string("environment variable ") + name + "='" + text + "' is not a non-negative integer");
}

// Slurm's count of tasks per node, "2(x3),1" (two tasks on each of three nodes, then one), at node `node`.
int64_t slurm_tasks_on_node(const char* name, const std::string& text, int64_t node) {
  const auto bad = [&] {
    return Error(
        std::string("environment variable ") + name + "='" + text +
        "' is not Slurm's tasks per node (e.g. 2(x3),1) with a count for SLURM_NODEID=" + std::to_string(node));
  };
  int64_t first_node = 0;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const size_t paren = item.find("(x");
    int64_t tasks = 0, nodes = 1;
    try {
      if (paren == std::string::npos) {
        tasks = integer(name, item);
      } else {
        if (item.back() != ')') throw bad();
        tasks = integer(name, item.substr(0, paren));
        nodes = integer(name, item.substr(paren + 2, item.size() - paren - 3));
      }
    } catch (const Error&) {
      throw bad();
    }
    if (node < first_node + nodes) return std::max<int64_t>(1, tasks);
    first_node += nodes;
    at = end + 1;
  }
  throw bad();
}

// Processes on this host, from the launcher's own variable: mpirun, torchrun and MPICH say it; Slurm gives the tasks
// of each node of the step, and this node's index.
int64_t local_world_size_from_environment(const std::string& launcher) {
  for (const char* local : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (auto v = variable(local)) return std::max<int64_t>(1, integer(local, *v));
  }
  if (launcher == "srun") {
    const auto node = variable("SLURM_NODEID");
    const int64_t node_id = node ? integer("SLURM_NODEID", *node) : 0;
    for (const char* per_node : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
      if (auto v = variable(per_node)) return slurm_tasks_on_node(per_node, *v, node_id);
    }
  }
  return 1;
}

}  // namespace

std::optional<ProcessEnv> process_env_from_environment() {
  // Rank/size variable pairs in order of precedence; the first complete pair wins.
  struct Source {
    const char* rank;
    const char* size;
    const char* launcher;
  };
  const Source sources[] = {{"RANK", "WORLD_SIZE", "env"},
                            {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpirun"},
                            {"PMI_RANK", "PMI_SIZE", "mpirun"},
                            {"SLURM_PROCID", "SLURM_NTASKS", "srun"}};
  for (const auto& source : sources) {
    auto rank = variable(source.rank);
    auto size = variable(source.size);
    if (!rank || !size) continue;
    ProcessEnv env;
    env.rank = integer(source.rank, *rank);
    env.world_size = integer(source.size, *size);
    require(env.world_size >= 1 && env.rank < env.world_size,
            std::string(source.rank) + "=" + *rank + " is not below " + source.size + "=" + *size);
    env.launcher = variable("DISTSGD_LAUNCHED") ? "distsgd" : source.launcher;
    env.size_variable = source.size;
    // Our launcher (on one host) and torchrun's agent host the store themselves; otherwise rank 0 does.
    env.store_is_external =
        variable("DISTSGD_STORE_EXTERNAL") == "1" || variable("TORCHELASTIC_USE_AGENT_STORE") == "True";
    env.local_world_size = local_world_size_from_environment(source.launcher);
    if (auto addr = variable("MASTER_ADDR")) env.master_addr = *addr;
    if (auto port = variable("MASTER_PORT")) {
      const int64_t p = integer("MASTER_PORT", *port);
      require(p > 0 && p < 65536, "MASTER_PORT=" + *port + " is not a TCP port");
      env.port = static_cast<int>(p);
    }
    return env;
  }
  return std::nullopt;
}

}  // namespace distsgd::comm
