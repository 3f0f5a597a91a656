// EASGD (spec: "EASGD"; Zhang et al. 2015): every iteration a local momentum-SGD step; every tau iterations the
// worker sends x_i, the shard moves x~ toward it by the elastic difference and returns the worker's new x_i.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/elastic.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/timeline.hpp"

#include <torch/torch.h>

namespace distsgd::algo {
namespace {

double moving_rate(const TrainConfig& c) { return c.moving_rate > 0 ? c.moving_rate : 0.9 / c.workers; }

class EasgdWorker final : public ps::PsWorker {
 public:
  // The local steps carry momentum and weight decay (the server only averages elastically).
  explicit EasgdWorker(const WorkerSetup& s)
      : PsWorker(s), local_(s.flat.numel(), s.config.momentum, s.config.weight_decay) {}

  void after_backward(int64_t step, double lr) override {
    auto& flat = setup_.flat;
    {
      train::Timeline::Scope span(setup_.timeline, "update");
      update_time_.start();
      local_.step(flat.params(), flat.grads(), lr);
      update_time_.stop();
    }
    if (++clock_ % setup_.config.tau == 0) {
      push_and_receive({ps::RequestKind::kParameters, step, lr, clock_, version_}, flat.params(), flat.params());
    }
  }

 private:
  train::MomentumSgd local_;
  int64_t clock_ = 0;
};

class EasgdServer final : public ServerAlgorithm {
 public:
  explicit EasgdServer(const ServerSetup& s)
      : alpha_(moving_rate(s.config)),
        server_(s),
        timeline_(s.timeline) {}

  void serve() override {
    server_.serve([this](const ps::Request& request, ps::WorkerChannel& channel) {
      require(request.kind == ps::RequestKind::kParameters, "EASGD server got an unexpected request");
      auto& x_worker = channel.receive_payload();
      ps::Reply reply;
      {
        std::lock_guard<std::mutex> lock(server_.mutex());
        train::Timeline::Scope span(timeline_, "elastic update");
        ps::elastic_exchange(server_.parameters(), x_worker, alpha_, channel.reply_buffer());
        server_.count_update();
        reply.version = server_.version();
      }
      channel.reply(channel.reply_buffer(), reply);
    });
    ps::ShardServer::publish(server_.comm(), server_.shard(), server_.statistics());
  }

 private:
  double alpha_;
  ps::ShardServer server_;
  train::Timeline& timeline_;
};

}  // namespace

AlgorithmInfo easgd_algorithm() {
  AlgorithmInfo info;
  info.name = "easgd";
  info.description = "elastic averaging SGD on the parameter server (--tau, --moving-rate)";
  info.needs_servers = true;
  info.independent_workers = true;
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<EasgdWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<EasgdServer>(s); };
  return info;
}

}  // namespace distsgd::algo
