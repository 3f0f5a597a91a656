// The parameter-server protocol on its own: a worker (PsClient) and a shard (ShardServer) as two ranks in this
// process (one thread each, Gloo over loopback).
#include "distsgd/algo/ps/protocol.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "loopback_ranks.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

using namespace distsgd::algo::ps;

namespace {

constexpr int64_t kNumel = 100;

ShardRange whole_vector() {
  ShardRange range;
  range.segments = {Segment{0, kNumel, 0}};
  range.numel = kNumel;
  return range;
}

}  // namespace

// A shard's handler gives up on a worker it heard nothing from for the timeout (and would end the server's process).
// A worker whose training thread sends nothing for two and a half timeouts (a long wait: the survivors' new group
// after a loss, a long evaluation) still keeps its shard serving: the client's own thread sends the keep-alives.
// Before they ran on that thread, only inside agreement waits, and the shard timed out.
TEST(PsProtocol, AWorkerSilentForLongerThanTheTimeoutKeepsItsShardServing) {
  // Long enough that a keep-alive thread late by a second on a loaded host still comes in time.
  const auto timeout = std::chrono::milliseconds(4000);
  std::atomic<bool> served_to_the_end{false};
  const std::string failure = distsgd::testing::run_loopback_ranks(
      2, /*workers=*/1, timeout, [&](int64_t rank, distsgd::comm::Communicator& comm) {
        const auto initial = torch::arange(kNumel, torch::kFloat);
        if (rank == 1) {
          ShardServer server(comm, 0, whole_vector(), initial);
          server.serve([](const Request&, WorkerChannel& channel) { channel.reply_with_parameters(); });
          served_to_the_end = true;  // serve() returned: the worker's kDone came, no handler timed out
          return;
        }
        PsClient client(comm, {whole_vector()});
        auto flat = torch::zeros({kNumel});
        client.pull_all(flat);
        EXPECT_TRUE(torch::equal(flat, initial));
        std::this_thread::sleep_for(2.5 * timeout);
        flat.zero_();
        client.pull_all(flat);
        EXPECT_TRUE(torch::equal(flat, initial)) << "the shard still serves after 2.5 timeouts of silence";
        client.finish();
      });
  EXPECT_TRUE(failure.empty()) << failure;
  EXPECT_TRUE(served_to_the_end);
}
