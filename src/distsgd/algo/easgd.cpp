// EASGD (spec: "EASGD"; Zhang et al. 2015): every iteration a local momentum-SGD step; every tau iterations the
// worker sends x_i, the shard moves x~ toward it by the elastic difference and returns the worker's new x_i.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/elastic.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_options.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/catalog/algorithm_options.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace distsgd::algo {
namespace {

const StoredOption<int64_t> kTau = catalog::options::stored_option(catalog::options::kTau);
const StoredOption<double> kMovingRate{"--moving-rate", 0, "EASGD: moving rate alpha (0: 0.9 / workers)",
                                       within<double>(0, 1)};

double moving_rate(const TrainConfig& c) {
  const double alpha = kMovingRate.of(c);
  return alpha > 0 ? alpha : 0.9 / static_cast<double>(c.workers);
}

class EasgdWorker final : public ps::PsWorker {
 public:
  at::Tensor optimizer_state() override { return local_.momentum_buffer(); }
  // The local steps carry momentum and weight decay (the server only averages elastically).
  explicit EasgdWorker(const WorkerSetup& s)
      : PsWorker(s), local_(s.flat.numel(), s.config.momentum, s.config.weight_decay) {}

  void after_backward(int64_t step, double lr) override {
    auto& flat = setup_.flat;
    {
      TimedPhase phase(setup_.timeline, "update", update_time_);
      local_.step(flat.params(), flat.grads(), lr);
    }
    if (++clock_ % kTau.of(setup_.config) == 0) {
      push_and_receive({ps::RequestKind::kParameters, step, lr, clock_, version_}, flat.params(), flat.params());
    }
  }

 private:
  optim::MomentumSgd local_;
  int64_t clock_ = 0;
};

class EasgdServer final : public ServerAlgorithm {
 public:
  explicit EasgdServer(const ServerSetup& s) : alpha_(moving_rate(s.config)), server_(s), timeline_(s.timeline) {}

  nlohmann::json serve() override {
    server_.serve([this](const ps::Request& request, ps::WorkerChannel& channel) {
      require(request.kind == ps::RequestKind::kParameters, "EASGD server got an unexpected request");
      auto& x_worker = channel.receive_payload();
      ps::Reply reply;
      {
        std::lock_guard<std::mutex> lock(server_.mutex());
        Timeline::Scope span(timeline_, "elastic update");
        ps::elastic_exchange(server_.parameters(), x_worker, alpha_, channel.reply_buffer());
        server_.count_update();
        reply.version = server_.version();
      }
      channel.reply(channel.reply_buffer(), reply);
    });
    return server_.statistics();
  }

  void save_state(AlgorithmState& state) override {
    std::lock_guard<std::mutex> lock(server_.mutex());
    server_.save_state(state);
  }
  void load_state(const AlgorithmState& state) override { server_.load_state(state); }

 private:
  double alpha_;
  ps::ShardServer server_;
  Timeline& timeline_;
};

}  // namespace

AlgorithmInfo easgd_algorithm() {
  AlgorithmInfo info;
  info.name = "easgd";
  info.description = "elastic averaging SGD on the parameter server (--tau, --moving-rate)";
  info.needs_servers = true;
  info.independent_workers = true;
  info.survives_worker_loss = true;
  info.options = {&kTau.spec(), &kMovingRate.spec(), &ps::kSharding.spec()};
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<EasgdWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<EasgdServer>(s); };
  return info;
}

}  // namespace distsgd::algo
