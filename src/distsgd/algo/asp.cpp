// ASP (spec: "ASP"; Hogwild/Downpour style): each worker sends its gradient, the shard applies it at once and
// alone with the full learning rate, and replies with its current slice of x~ to that worker only; the worker
// continues from x~. No barrier across workers, so a gradient is about n-1 updates stale.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace distsgd::algo {
namespace {

constexpr bool kMomentumOnWorkerByDefault = false;  // momentum at the PS (spec)

class AspWorker final : public ps::PsWorker {
 public:
  explicit AspWorker(const WorkerSetup& s)
      : PsWorker(s),
        on_worker_(ps::momentum_on_worker(s.config, kMomentumOnWorkerByDefault)),
        local_(ps::worker_optimizer(s.config, s.flat.numel(), on_worker_)) {}

  void after_backward(int64_t step, double lr) override {
    auto& flat = setup_.flat;
    const ps::Request request{ps::RequestKind::kGradient, step, lr, step, version_};
    if (compressing()) {
      push_and_receive(request, compress_gradient(step), flat.params());
      return;
    }
    at::Tensor sent = on_worker_ ? local_.direction(flat.params(), flat.grads()) : flat.grads();
    push_and_receive(request, sent, flat.params());
  }

 private:
  bool on_worker_;
  optim::MomentumSgd local_;
};

class AspServer final : public ServerAlgorithm {
 public:
  explicit AspServer(const ServerSetup& s)
      : server_(s),
        timeline_(s.timeline),
        optimizer_(ps::server_optimizer(s.config, server_.range().numel, kMomentumOnWorkerByDefault)) {}

  nlohmann::json serve() override {
    server_.serve([this](const ps::Request& request, ps::WorkerChannel& channel) {
      require(request.kind == ps::RequestKind::kGradient, "ASP server got an unexpected request");
      auto& gradient = channel.receive_gradient(request);
      ps::Reply reply;
      {
        std::lock_guard<std::mutex> lock(server_.mutex());
        Timeline::Scope span(timeline_, "update");
        server_.record_staleness(server_.version() - request.version);
        optimizer_.step(server_.parameters(), gradient, request.lr, 0);
        server_.count_update();
        channel.reply_buffer().copy_(server_.parameters());
        reply.version = server_.version();
      }
      channel.reply(channel.reply_buffer(), reply);
    });
    return server_.statistics();
  }

 private:
  ps::ShardServer server_;
  Timeline& timeline_;
  optim::MomentumSgd optimizer_;
};

}  // namespace

AlgorithmInfo asp_algorithm() {
  AlgorithmInfo info;
  info.name = "asp";
  info.description = "asynchronous parallel on the parameter server: each gradient applied at once";
  info.needs_servers = true;
  info.independent_workers = true;
  info.options = {&ps::kSharding.spec(), &ps::kMomentumAt.spec()};
  for (const auto* o : compression::compression_options()) info.options.push_back(o);
  info.validate = [](const TrainConfig& c) {
    ps::check_momentum_placement(c, "asp", {ps::MomentumAt::kWorker, ps::MomentumAt::kServer});
    compression::check_compression(c);
  };
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<AspWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<AspServer>(s); };
  return info;
}

}  // namespace distsgd::algo
