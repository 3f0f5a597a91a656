// Who this process is in a distributed run: rank, world size and where the rendezvous store lives, read from the
// variables of whichever launcher started it (distsgd's own, mpirun, srun, torchrun).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace distsgd::comm {

struct ProcessEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_world_size = 1;  // processes on this host (to share its cores)
  std::string master_addr = "127.0.0.1";
  int port = 29500;
  std::string launcher;            // "distsgd", "mpirun", "srun" or "env" (torchrun-style RANK/WORLD_SIZE)
  std::string size_variable;       // where world_size came from, e.g. "OMPI_COMM_WORLD_SIZE"
  bool store_is_external = false;  // the store is hosted by the launcher, not by rank 0
};

// The environment's answer, or nullopt when no launcher variables are set (a plain `distsgd train`).
// Throws distsgd::Error for malformed values.
std::optional<ProcessEnv> process_env_from_environment();

}  // namespace distsgd::comm
