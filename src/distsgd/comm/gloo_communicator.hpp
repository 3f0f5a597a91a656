// The c10d/Gloo transport: one Gloo process group over the world (workers and servers, for point-to-point
// parameter-server traffic) and one over the workers only (for collectives), rendezvous through a TCPStore. Nothing
// outside comm/ includes c10d, so moving to another libtorch touches this folder only.
#pragma once
#include "distsgd/comm/communicator.hpp"
#include "distsgd/comm/process_env.hpp"

namespace c10d {
class Work;
}

namespace distsgd::comm {

class GlooCommunicator final : public Communicator {
 public:
  // Connects to the rendezvous store (hosting it when this is rank 0 and no launcher does) and creates the
  // process groups. Ranks [0, workers) are workers, the rest servers. Every operation is bounded by `timeout`.
  GlooCommunicator(const ProcessEnv& env, int64_t workers, std::chrono::milliseconds timeout);
  ~GlooCommunicator() override;

  Work allreduce_sum(at::Tensor tensor) override;
  Work alltoall(at::Tensor output, at::Tensor input) override;
  Work allgather(std::vector<at::Tensor> outputs, at::Tensor input) override;
  Work broadcast(at::Tensor tensor, int64_t root) override;
  void barrier_workers() override;
  Work send(at::Tensor tensor, int64_t destination, int64_t tag) override;
  Work receive(at::Tensor tensor, int64_t source, int64_t tag) override;
  void barrier_world() override;
  void store_set(const std::string& key, const std::string& value) override;
  std::string store_get(const std::string& key) override;
  bool store_has(const std::string& key) override;
  void start_liveness(LivenessOptions options) override;
  Liveness* liveness() override { return liveness_.get(); }

 private:
  void agree_now() override;
  using Clock = std::chrono::steady_clock;
  bool wait_for_key(const std::string& key, Clock::time_point started, Clock::duration extra,
                    const std::function<bool()>& given_up, const std::string& stuck);
  bool key_or_loss(const std::string& key, int64_t worker, Clock::time_point started);
  std::string published_by_worker_0(const std::string& key);
  Work point_to_point(at::Tensor tensor, int64_t peer, int64_t tag, bool sending);
  Work among_survivors(at::Tensor tensor, const std::string& what,
                       const std::function<c10::intrusive_ptr<c10d::Work>(std::vector<at::Tensor>&)>& start);
  struct Groups;
  std::unique_ptr<Groups> groups_;
  ProcessEnv env_;
  std::unique_ptr<Liveness> liveness_;
  int64_t agreements_ = 0;
};

}  // namespace distsgd::comm
