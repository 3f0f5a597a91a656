// Which processes of a distributed run are still alive, under every launcher (distsgd's own, mpirun, srun, env),
// including those where no launcher watches the processes. Each process runs a beat thread with its own
// rendezvous-store connection, so a blocking store call elsewhere never delays a beat. On every beat it adds 1 to
// its own counter and reads the others' counters. A process whose counter has not moved for the silence limit is
// lost, unless it said it finished:
//  - If the run can go on without it (LivenessOptions::survivable), the leader (rank 0) declares it lost and
//    records when. Every process learns of the declaration at its next beat and runs its on_lost callbacks there.
//    Under distsgd's launcher the leader also tells the launcher, which kills the lost process (it may be stopped
//    or hung, not dead: comm/launcher_notice.hpp).
//  - Any other loss ends the process that notices it at once, with one line naming the lost process.
// Each beat also adds the iterations this process trained since the last one (note_progress) to the run's total, and
// reads that total: a wait for a worker that has not arrived (an agreement of workers that train independently, a
// straggler far behind) lasts while the run still progresses, and fails only when nobody trained for the timeout.
// A process that finds itself declared lost (it was stopped, or cut off from the store, and came back) ends with a
// line saying so. The leader's own loss is never survivable: it writes the run directory and decides who is lost.
// The leader is the last to finish: it waits until every live process has finished, so that the store it may host
// stays up while any of them still uses it.
#pragma once
#include "distsgd/comm/process_env.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace distsgd::comm {

struct LostProcess {
  int64_t rank = 0;
  double seconds = 0;  // when the leader declared it lost, in seconds after its beat thread started (connected)
};

struct LivenessOptions {
  double silence_seconds = 10;  // a counter that has not moved for this long: the process is lost
  double beat_seconds = 0.2;
  std::function<bool(int64_t rank)> survivable;    // may the run go on without this rank? null: never
  std::function<std::string(int64_t rank)> label;  // "worker 3"; null: "rank 3"
};

class Liveness {
 public:
  Liveness(const ProcessEnv& env, int64_t world_size, LivenessOptions options);
  ~Liveness();  // finish()es
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // This process ends normally: the others stop watching it. The leader first waits until every process that is
  // not lost has finished (bounded by `timeout`). Afterwards nothing is checked any more.
  void finish(std::chrono::milliseconds timeout);

  bool is_lost(int64_t rank) const;
  // One more training iteration of this process (a relaxed atomic add: cheap enough for every step).
  void note_progress();
  // Since when the run's total of iterations has not moved, as this process's beats saw it.
  std::chrono::steady_clock::time_point last_progress() const;
  std::vector<LostProcess> lost() const;  // in the order they were declared
  // Runs `callback(rank)` on the beat thread for every rank declared lost from now on.
  void on_lost(std::function<void(int64_t rank)> callback);
  // After a failed operation with `rank`: waits until it is declared lost, at most the silence limit and a few
  // beats more. True: it was (the caller may go on without it); false: it is alive, the failure is real.
  bool wait_until_lost(int64_t rank) const;
  // After an operation failed (a peer closed its connections or timed out): waits until some process is judged
  // lost, at most the silence limit and a few beats. A loss the run cannot survive ends this process on the beat
  // thread, with the line naming the lost process; a survivable one is returned as " (worker 2 (rank 2) was lost)";
  // none (the failure has another cause): "".
  // `peer`: the one rank the operation involved, if it was point to point (already lost: no wait).
  std::string explain_failure(int64_t peer = -1) const;
  std::string label(int64_t rank) const;
  bool survivable(int64_t rank) const;  // may the run go on without it?
  double silence_seconds() const;

  struct State;

 private:
  std::shared_ptr<State> state_;  // shared with the beat thread
};

}  // namespace distsgd::comm
