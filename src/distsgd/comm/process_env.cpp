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
    for (const char* local : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
      if (auto v = variable(local)) {
        env.local_world_size = std::max<int64_t>(1, integer(local, *v));
        break;
      }
    }
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
