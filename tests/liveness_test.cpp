// comm/liveness in one process: three "processes" (Liveness objects with ranks 0-2) share a store. One that stops
// beating without finishing is declared lost by the leader, and everyone learns it; one that finished is not.
#include "distsgd/comm/liveness.hpp"
#include "distsgd/comm/store_host.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace {

using distsgd::comm::Liveness;
using distsgd::comm::LivenessOptions;
using distsgd::comm::ProcessEnv;
using Clock = std::chrono::steady_clock;

std::unique_ptr<Liveness> start(int port, int64_t rank, int64_t world_size) {
  ProcessEnv env;
  env.rank = rank;
  env.world_size = world_size;
  env.port = port;
  env.store_is_external = true;
  LivenessOptions options;
  options.silence_seconds = 1;
  options.beat_seconds = 0.05;
  options.survivable = [](int64_t r) { return r != 0; };
  options.label = [](int64_t r) { return "worker " + std::to_string(r); };
  return std::make_unique<Liveness>(env, world_size, options);
}

TEST(Liveness, ASilentProcessIsDeclaredLostByTheLeaderAndEveryoneLearnsIt) {
  distsgd::comm::StoreHost store;
  auto leader = start(store.port(), 0, 3);
  auto survivor = start(store.port(), 1, 3);
  auto victim = start(store.port(), 2, 3);
  std::atomic<int64_t> told{-1};
  survivor->on_lost([&](int64_t rank) { told = rank; });

  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(survivor->is_lost(2));
  const auto killed = Clock::now();
  victim.reset();  // stops beating without saying it finished: as a process killed with kill -9
  EXPECT_TRUE(survivor->wait_until_lost(2));
  const double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  EXPECT_GE(seconds, 0.9);  // not before the silence limit ...
  EXPECT_LT(seconds, 2.5);  // ... and soon after it
  for (int i = 0; i < 100 && told.load() < 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(told.load(), 2);
  EXPECT_TRUE(leader->is_lost(2));
  ASSERT_EQ(leader->lost().size(), 1u);
  EXPECT_EQ(leader->lost()[0].rank, 2);
  EXPECT_GT(leader->lost()[0].seconds, 0.3);
  EXPECT_EQ(leader->explain_failure(), " (worker 2 (rank 2) was lost)");

  // A process that finished is not lost, however long it stays silent; the leader finishes once everyone has.
  survivor->finish(std::chrono::seconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(leader->is_lost(1));
  const auto finishing = Clock::now();
  leader->finish(std::chrono::seconds(5));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - finishing).count(), 1.0);
}

TEST(Liveness, TheLeaderWaitsForTheOthersToFinish) {
  distsgd::comm::StoreHost store;
  auto leader = start(store.port(), 0, 2);
  auto other = start(store.port(), 1, 2);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    other->finish(std::chrono::seconds(5));
  });
  const auto start_time = Clock::now();
  leader->finish(std::chrono::seconds(5));
  const double seconds = std::chrono::duration<double>(Clock::now() - start_time).count();
  late.join();
  EXPECT_GE(seconds, 0.5);  // it hosted nothing here, but under mpirun it hosts the store the other still uses
  EXPECT_LT(seconds, 3.0);
  EXPECT_FALSE(leader->is_lost(1));
}

// The run's progress (what an agreement's wait watches): the iterations one process notes reach the others at their
// beats; while nobody trains, the time of the last change stands still.
TEST(Liveness, EveryProcessSeesWhenAnyProcessLastTrained) {
  distsgd::comm::StoreHost store;
  auto leader = start(store.port(), 0, 2);
  auto worker = start(store.port(), 1, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // beats of 50 ms have seen the total (0)
  const auto quiet = leader->last_progress();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(leader->last_progress(), quiet);

  const auto trained = Clock::now();
  worker->note_progress();
  for (int i = 0; i < 500 && leader->last_progress() < trained; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(leader->last_progress(), trained);
  EXPECT_GT(worker->last_progress(), trained);
  worker->finish(std::chrono::seconds(5));
  leader->finish(std::chrono::seconds(5));
}

}  // namespace
