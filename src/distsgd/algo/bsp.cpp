// BSP on the parameter server (spec: "BSP"): every iteration each worker pushes its gradient to every shard and
// blocks; a shard waits for all n gradients, averages them summing in worker-rank order (never arrival order, so
// runs are deterministic), applies momentum SGD with weight decay to its slice of x~, and answers every worker
// with the new slice (ps-lite/MXNet's merge buffer).
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/protocol.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/sgd.hpp"
#include "distsgd/train/timeline.hpp"
#include "distsgd/models/model.hpp"

#include <torch/torch.h>

#include <condition_variable>

namespace distsgd::algo {
namespace {

class BspWorker final : public WorkerAlgorithm {
 public:
  explicit BspWorker(const WorkerSetup& s)
      : flat_(s.flat),
        timeline_(s.timeline),
        client_(*s.comm, ps::shard_layout(s.flat.slots(), s.comm->servers(), s.config.sharding)) {}

  void after_backward(int64_t step, double lr) override {
    train::Timeline::Scope span(timeline_, "push gradient, pull parameters");
    waiting_.start();
    client_.send_to_all({ps::RequestKind::kGradient, step, lr, step}, flat_.grads());
    torch::NoGradGuard no_grad;
    client_.receive_from_all(flat_.params());
    waiting_.stop();
  }

  void finish() override { client_.send_to_all({ps::RequestKind::kDone, 0, 0, 0}, at::Tensor()); }

  AlgorithmStats stats() const override {
    AlgorithmStats s;
    s.communication_wait_seconds = waiting_.total();
    s.bytes_sent = client_.bytes_sent();
    return s;
  }

 private:
  train::FlatParameters& flat_;
  train::Timeline& timeline_;
  ps::PsClient client_;
  Stopwatch waiting_;
};

class BspServer final : public ServerAlgorithm {
 public:
  explicit BspServer(const ServerSetup& s)
      : range_(layout(s)),
        server_(s.comm, s.server_index, range_, s.flat.params()),
        timeline_(s.timeline),
        optimizer_(range_.numel, s.config.momentum, s.config.weight_decay),
        gradients_(static_cast<size_t>(s.comm.workers())),
        arrived_(static_cast<size_t>(s.comm.workers()), false) {}

  void serve() override {
    server_.serve([this](const ps::Request& request, ps::WorkerChannel& channel) {
      require(request.kind == ps::RequestKind::kGradient, "BSP server got an unexpected request");
      auto& gradient = channel.receive_payload();
      {
        std::unique_lock<std::mutex> lock(server_.mutex());
        const int64_t my_round = round_;
        gradients_[channel.worker()] = gradient;
        arrived_[channel.worker()] = true;
        if (++count_ == server_.workers()) {
          aggregate_and_update(request.lr);
        } else {
          round_done_.wait(lock, [&] { return round_ != my_round; });
        }
      }
      // The next update needs this worker's next gradient, which it sends only after this reply: no copy needed.
      channel.reply(server_.parameters());
    });
  }

 private:
  static ps::ShardRange layout(const ServerSetup& s) {
    // The workers cut the same layout from the same model.
    return ps::shard_layout(s.flat.slots(), s.comm.servers(), s.config.sharding).at(s.server_index);
  }

  void aggregate_and_update(double lr) {
    train::Timeline::Scope span(timeline_, "update");
    torch::NoGradGuard no_grad;
    auto sum = gradients_[0].clone();
    for (size_t w = 1; w < gradients_.size(); ++w) sum.add_(gradients_[w]);
    sum.div_(static_cast<double>(gradients_.size()));
    optimizer_.step(server_.parameters(), sum, lr, 0);
    count_ = 0;
    std::fill(arrived_.begin(), arrived_.end(), false);
    ++round_;
    round_done_.notify_all();
  }

  ps::ShardRange range_;
  ps::ShardServer server_;
  train::Timeline& timeline_;
  train::MomentumSgd optimizer_;
  std::vector<at::Tensor> gradients_;  // views of the handlers' payload buffers, one per worker
  std::vector<bool> arrived_;
  int64_t count_ = 0, round_ = 0;
  std::condition_variable round_done_;
};

}  // namespace

AlgorithmInfo bsp_algorithm() {
  AlgorithmInfo info;
  info.name = "bsp";
  info.description = "bulk synchronous parallel on the parameter server (--servers, --sharding)";
  info.needs_servers = true;
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<BspWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<BspServer>(s); };
  return info;
}

}  // namespace distsgd::algo
