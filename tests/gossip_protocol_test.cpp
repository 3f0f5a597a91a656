// The gossip protocol on its own: three ranks in this process (one thread each, Gloo over loopback) push, pull and
// exchange through GossipEndpoint with handlers written for the test, then finish without anyone hanging.
#include "distsgd/algo/decentralized/inbox.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/comm/gloo_communicator.hpp"
#include "loopback_ranks.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

using namespace distsgd::algo::decentralized;

namespace {

constexpr int64_t kRanks = 3;
constexpr int64_t kNumel = 1000;

// Runs body(rank, communicator) on kRanks threads, each with its own communicator; fails on the first failure.
void run_ranks(const std::function<void(int64_t, distsgd::comm::Communicator&)>& body,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
  const std::string failure = distsgd::testing::run_loopback_ranks(kRanks, kRanks, timeout, body);
  ASSERT_TRUE(failure.empty()) << failure;
}

std::vector<int64_t> others(int64_t rank) {
  std::vector<int64_t> v;
  for (int64_t j = 0; j < kRanks; ++j) {
    if (j != rank) v.push_back(j);
  }
  return v;
}

EndpointOptions all_to_all(int64_t rank) {
  EndpointOptions o;
  o.numel = kNumel;
  o.contacts = others(rank);
  o.listeners = others(rank);
  o.test_delay_ms = 1;
  o.seed = static_cast<uint64_t>(rank);
  o.max_pushes_in_flight = 2;
  return o;
}

// The tests of keep-alives: a timeout short enough to wait out 2.5 times, long enough that a keep-alive thread late
// by a second on a loaded host (a liveness beat was seen 2 s late under load 14) still comes in time.
constexpr std::chrono::milliseconds kShortTimeout{4000};
constexpr std::chrono::milliseconds kTwoAndAHalfTimeouts{10000};

}  // namespace

constexpr int64_t kPushes = 50;

TEST(GossipProtocol, PushesArriveInOrderAndAllBeforeFinishReturns) {
  run_ranks([](int64_t rank, distsgd::comm::Communicator& comm) {
    auto inbox = std::make_shared<Inbox>();
    GossipHandlers h;
    h.on_push = [inbox](PushMessage m) { inbox->put(std::move(m)); };
    GossipEndpoint endpoint(comm, all_to_all(rank), h);
    for (int64_t i = 0; i < kPushes; ++i) {
      const int64_t peer = (rank + 1 + i % 2) % kRanks;
      endpoint.push(peer, i, 0.25 * static_cast<double>(rank),
                    torch::full({kNumel}, static_cast<float>(100 * rank + i)));
    }
    endpoint.finish();
    auto messages = inbox->take_all();
    ASSERT_EQ(static_cast<int64_t>(messages.size()), kPushes) << "every push delivered before finish returned";
    std::vector<int64_t> last_step(kRanks, -1);
    for (const auto& m : messages) {
      EXPECT_GT(m.step, last_step[m.sender]) << "in order per sender";
      last_step[m.sender] = m.step;
      EXPECT_DOUBLE_EQ(m.weight, 0.25 * static_cast<double>(m.sender));
      EXPECT_TRUE(torch::equal(m.values, torch::full({kNumel}, static_cast<float>(100 * m.sender + m.step))));
    }
    constexpr int64_t kHeader = distsgd::algo::decentralized::kGossipHeaderSize * 8;
    EXPECT_EQ(endpoint.bytes_sent(), kPushes * (kNumel * 4 + kHeader) + 2 * kHeader)
        << "payloads, headers and two dones";
  });
}

// A receiving thread gives up on a peer it heard nothing from for the timeout. Workers whose training threads send
// nothing and call nothing for two and a half timeouts (a long wait: for a verdict on a lost peer, for the
// survivors' new group) still hear from each other: the endpoint's own thread sends the keep-alives.
TEST(GossipProtocol, EndpointsWhoseWorkersWaitLongerThanTheTimeoutKeepEachOtherAlive) {
  run_ranks(
      [](int64_t rank, distsgd::comm::Communicator& comm) {
        GossipHandlers h;
        h.on_push = [](PushMessage) {};
        GossipEndpoint endpoint(comm, all_to_all(rank), h);
        std::this_thread::sleep_for(kTwoAndAHalfTimeouts);
        endpoint.check();
        endpoint.finish();
        constexpr int64_t kHeader = distsgd::algo::decentralized::kGossipHeaderSize * 8;
        // One to each of the two contacts every quarter to three eighths of the timeout: 6-10 each.
        EXPECT_GE(endpoint.bytes_sent(), 2 * 3 * kHeader + 2 * kHeader) << "keep-alives and two dones";
        EXPECT_EQ(endpoint.messages_sent(), 0) << "keep-alives are not gossip";
      },
      kShortTimeout);
}

// With the processes watched (liveness), the keep-alives last while anyone in the run trains, and stop once nobody
// trained for the timeout: a worker whose training thread is stuck must not keep its peers waiting forever, and the
// peers' timed-out receives are what end such a run with an error.
TEST(GossipProtocol, KeepAlivesLastWhileAnyoneTrainsAndStopWhenNobodyDoes) {
  for (const bool anyone_trains : {true, false}) {
    std::atomic<int> failed{0};
    run_ranks(
        [&](int64_t rank, distsgd::comm::Communicator& comm) {
          distsgd::comm::LivenessOptions watch;
          // Every rank beats, so nobody is lost (train's shortest limit: a beat thread was seen 2 s late under
          // load); a failed receive asks for about this long who was.
          watch.silence_seconds = 4;
          comm.start_liveness(watch);
          GossipHandlers h;
          h.on_push = [](PushMessage) {};
          GossipEndpoint endpoint(comm, all_to_all(rank), h);
          if (anyone_trains) {
            // Rank 1 trains (an iteration every 100 ms) for 2.5 timeouts; the others only wait.
            for (int i = 0; i < kTwoAndAHalfTimeouts.count() / 100; ++i) {
              if (rank == 1) comm.liveness()->note_progress();
              std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
            endpoint.check();
            endpoint.finish();
            return;
          }
          // Nobody trains: after two timeouts the receives give up, and the failure is an error once the liveness
          // found nobody lost (bounded here at 60 s).
          std::string error;
          for (int i = 0; i < 600 && error.empty(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            error = distsgd::testing::error_of_call([&] { endpoint.check(); });
          }
          EXPECT_NE(error.find("serving rank"), std::string::npos) << "rank " << rank << ": " << error;
          if (!error.empty()) ++failed;
        },
        kShortTimeout);
    if (!anyone_trains) EXPECT_EQ(failed.load(), kRanks) << "every rank's receives gave up";
  }
}

TEST(GossipProtocol, PullsAreServedWhilePeersKeepPulling) {
  run_ranks([](int64_t rank, distsgd::comm::Communicator& comm) {
    GossipHandlers h;
    h.on_pull = [rank](int64_t) { return torch::full({kNumel}, static_cast<float>(rank)); };
    GossipEndpoint endpoint(comm, all_to_all(rank), h);
    auto into = torch::empty({kNumel});
    for (int64_t i = 0; i < 100; ++i) {
      const int64_t peer = others(rank)[static_cast<size_t>(i % 2)];
      endpoint.pull(peer, i, into).wait();
      ASSERT_TRUE(torch::equal(into, torch::full({kNumel}, static_cast<float>(peer))));
    }
    endpoint.finish();
    EXPECT_EQ(endpoint.requests_served(), 100) << "each of the two others pulled 50 times";
  });
}

TEST(GossipProtocol, PairwiseExchangesConserveTheSum) {
  // Rank 1 is active and exchanges with 0 and 2 in turn; they average atomically and reply with their old model.
  std::vector<at::Tensor> finals(kRanks);
  run_ranks([&finals](int64_t rank, distsgd::comm::Communicator& comm) {
    auto mutex = std::make_shared<std::mutex>();
    auto x = torch::full({kNumel}, static_cast<float>(10 * rank));
    GossipHandlers h;
    h.on_exchange = [mutex, x](int64_t, const at::Tensor& values) mutable {
      std::lock_guard<std::mutex> lock(*mutex);
      auto before = x.clone();
      x.add_(values).mul_(0.5);
      return before;
    };
    EndpointOptions o = all_to_all(rank);
    o.contacts = rank == 1 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{};
    o.listeners = rank == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{1};
    GossipEndpoint endpoint(comm, o, h);
    if (rank == 1) {
      auto reply = torch::empty({kNumel});
      for (int64_t i = 0; i < 40; ++i) {
        auto sent = x.clone();
        endpoint.exchange(i % 2 == 0 ? 0 : 2, i, sent, reply).wait();
        x.add_(reply - sent, 0.5);
      }
    }
    endpoint.finish();
    std::lock_guard<std::mutex> lock(*mutex);
    finals[static_cast<size_t>(rank)] = x.clone();
  });
  const auto sum = finals[0] + finals[1] + finals[2];
  EXPECT_TRUE(torch::allclose(sum, torch::full({kNumel}, 30.0f), 1e-5, 1e-4)) << sum[0].item<float>();
  EXPECT_LT((finals[0] - finals[2]).abs().max().item<float>(), 0.1) << "40 exchanges bring the three together";
}
