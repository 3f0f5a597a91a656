// The ranks of one distributed run as threads of the test process, each with its own Gloo communicator over loopback
// (as Gloo's own tests run ranks: gloo/test/base_test.h), for tests of a protocol on its own.
#pragma once
#include "distsgd/comm/gloo_communicator.hpp"
#include "test_util.hpp"

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace distsgd::testing {

// Runs body(rank, communicator) on `world_size` threads: ranks [0, workers) are workers, the rest servers. Each
// worker meets the others afterwards (barrier_workers), so that nobody tears down its groups while a peer still
// talks to it. Returns the first failure as "rank R: what" ("" when none).
inline std::string run_loopback_ranks(int64_t world_size, int64_t workers, std::chrono::milliseconds timeout,
                                      const std::function<void(int64_t, comm::Communicator&)>& body) {
  const int port = free_tcp_port();
  std::mutex mutex;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < world_size; ++r) {
    threads.emplace_back([&, r] {
      try {
        comm::ProcessEnv env;
        env.rank = r;
        env.world_size = world_size;
        env.port = port;
        comm::GlooCommunicator comm(env, workers, timeout);
        body(r, comm);
        if (comm.is_worker()) comm.barrier_workers();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (first_error.empty()) first_error = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return first_error;
}

}  // namespace distsgd::testing
