// BSP on the parameter server (spec: "BSP"): every iteration each worker pushes its gradient to every shard and
// blocks; a shard waits for all n gradients, averages them summing in worker-rank order (never arrival order, so
// runs are deterministic), applies momentum SGD with weight decay to its slice of x~, and answers every worker
// with the new slice (ps-lite/MXNet's merge buffer).
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/sgd.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

#include <condition_variable>

namespace distsgd::algo {
namespace {

class BspWorker final : public ps::PsWorker {
 public:
  using PsWorker::PsWorker;

  void after_backward(int64_t step, double lr) override {
    const ps::Request request{ps::RequestKind::kGradient, step, lr, step, version_};
    if (compressing()) {
      push_and_receive(request, compress_gradient(step), setup_.flat.params());
    } else {
      push_and_receive(request, setup_.flat.grads(), setup_.flat.params());
    }
  }
};

class BspServer final : public ServerAlgorithm {
 public:
  explicit BspServer(const ServerSetup& s)
      : server_(s),
        timeline_(s.timeline),
        // Momentum and weight decay at the PS (spec), unless DGC's momentum correction did them on the workers.
        optimizer_(ps::server_optimizer(s.config, server_.range().numel, false)),
        gradients_(static_cast<size_t>(s.comm.workers())) {}

  nlohmann::json serve() override {
    server_.serve([this](const ps::Request& request, ps::WorkerChannel& channel) {
      require(request.kind == ps::RequestKind::kGradient, "BSP server got an unexpected request");
      auto& gradient = channel.receive_gradient(request);
      ps::Reply reply;
      {
        std::unique_lock<std::mutex> lock(server_.mutex());
        const int64_t my_round = round_;
        gradients_[channel.worker()] = gradient;
        if (++count_ == server_.workers()) {
          aggregate_and_update(request.lr);
        } else {
          round_done_.wait(lock, [&] { return round_ != my_round; });
        }
        reply.version = server_.version();
      }
      // The next update needs this worker's next gradient, which it sends only after this reply: no copy needed.
      channel.reply(server_.parameters(), reply);
    });
    return server_.statistics();
  }

 private:
  void aggregate_and_update(double lr) {
    Timeline::Scope span(timeline_, "update");
    at::NoGradGuard no_grad;
    auto sum = gradients_[0].clone();
    for (size_t w = 1; w < gradients_.size(); ++w) sum.add_(gradients_[w]);
    sum.div_(static_cast<double>(gradients_.size()));
    optimizer_.step(server_.parameters(), sum, lr, 0);
    server_.count_update();
    count_ = 0;
    ++round_;
    round_done_.notify_all();
  }

  ps::ShardServer server_;
  Timeline& timeline_;
  optim::MomentumSgd optimizer_;
  std::vector<at::Tensor> gradients_;  // views of the handlers' payload buffers, one per worker
  int64_t count_ = 0, round_ = 0;
  std::condition_variable round_done_;
};

}  // namespace

AlgorithmInfo bsp_algorithm() {
  AlgorithmInfo info;
  info.name = "bsp";
  info.description = "bulk synchronous parallel on the parameter server (--servers, --sharding)";
  info.needs_servers = true;
  info.options = {&ps::kSharding.spec()};
  for (const auto* o : compression::compression_options()) info.options.push_back(o);
  info.validate = compression::check_compression;
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<BspWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<BspServer>(s); };
  return info;
}

}  // namespace distsgd::algo
