// ALADDIN (spec: "ALADDIN"; Ko et al., CIKM 2021): asymmetric centralized training. Workers send every gradient
// and never wait for the server; each takes local momentum-SGD steps and, after each iteration, checks without
// blocking whether the server pushed a global model, mixing it in as x_i <- (1-alpha) x_i + alpha x~. The server
// updates x~ lazily with the average of the gradients accumulated since its last update, whenever one worker has
// contributed pi of them, and pushes (x~, alpha) to that worker only.
// Gradients go from a small ring of send buffers and are never waited for (ps/gradient_push.hpp): the worker
// applies its own step while they are in flight, and waits only when the servers are a whole ring behind.
// --aladdin-variant l1: local self-update only (the server updates x~ but never pushes it);
//                   l2: the server applies every gradient at once (no lazy update) and still pushes every pi.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/mailbox.hpp"
#include "distsgd/algo/ps/lazy_averager.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/catalog/algorithm_options.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <nlohmann/json.hpp>

#include <mutex>

namespace distsgd::algo {
namespace {

constexpr bool kMomentumOnWorkerByDefault = true;

// full: the paper's algorithm; l1: local self-update only (no pushes); l2: the server applies every gradient at once.
using Variant = catalog::choices::AladdinVariant;

const StoredOption<int64_t> kPi = catalog::options::stored_option(catalog::options::kPi);
const StoredOption<ps::AlphaRule> kAlpha{
    "--aladdin-alpha", ps::AlphaRule::kText,
    "ALADDIN mixing weight: text (1 - 1/sqrt(n*pi)) or count (1 - 1/sqrt(gradients accumulated))"};
const StoredOption<Variant> kVariant = catalog::options::stored_option(catalog::options::kAladdinVariant);

class AladdinWorker final : public ps::PsWorker {
 public:
  at::Tensor optimizer_state() override { return local_.momentum_buffer(); }
  // One receiver thread per shard blocks on that shard's pushes and queues them; the training thread only
  // looks at the queue, so it never waits for a server.
  explicit AladdinWorker(const WorkerSetup& s)
      : PsWorker(s),
        local_(ps::worker_optimizer(s.config, s.flat.numel(),
                                    ps::momentum_on_worker(s.config, kMomentumOnWorkerByDefault))) {
    // After the local step the gradients hold g + wd*x: what the server averages.
    enable_push({/*wfbp=*/false, /*replies=*/false},
                [this](int64_t offset, int64_t numel) { return setup_.flat.grads().narrow(0, offset, numel); });
    for (size_t shard = 0; shard < client_.shards().size(); ++shard) {
      receivers_.emplace_back("receiver of shard " + std::to_string(shard), [this, shard] { receive_pushes(shard); });
    }
  }

  ~AladdinWorker() override {
    for (auto& t : receivers_) {
      if (t.joinable()) t.detach();  // only after an error: the process is ending
    }
  }

  void after_backward(int64_t step, double lr) override {
    auto& flat = setup_.flat;
    {
      TimedPhase phase(setup_.timeline, "update", update_time_);
      // grads are left holding g + wd*x: what the server averages.
      local_.step(flat.params(), flat.grads(), lr, 0, {1, optim::kernels::GradsAfter::kDecayed});
    }
    gradient_push().push_rest();  // copied into the ring's buffer, sent without waiting
    mix_arrived_models();
  }

  ps::Request gradient_request(int64_t step, double lr) const override {
    return {ps::RequestKind::kPushGradient, step, lr, step, version_};
  }

  void finish() override {
    PsWorker::finish();  // pushes drained, then kDone: each shard answers with a goodbye, which ends its receiver
    for (auto& t : receivers_) t.join();
    mix_arrived_models();  // rethrows a receiver's error
  }

 private:
  struct Arrival {
    size_t shard;
    double alpha;
    int64_t version;
    at::Tensor values;
  };

  void receive_pushes(size_t shard) {
    const auto& range = client_.shards()[shard];
    const int64_t server = client_.server_rank(shard);
    try {
      while (true) {
        auto header = at::empty({ps::kReplyHeaderSize}, at::kDouble);
        auto values = at::empty({range.numel});
        auto h = client_.comm().receive(header, server, ps::kPushHeaderTag);
        auto v = client_.comm().receive(values, server, ps::kPushTag);
        h.wait();
        v.wait();
        const auto reply = ps::decode_reply(header, server);
        if (reply.kind == ps::ReplyKind::kGoodbye) return;
        mailbox_.put({shard, reply.alpha, reply.version, values});
      }
    } catch (const std::exception& e) {
      mailbox_.fail(e.what());
    }
  }

  // x_i <- (1 - alpha) x_i + alpha x~ for every global model that has arrived, in arrival order.
  void mix_arrived_models() {
    const auto arrived = mailbox_.take_all();
    if (arrived.empty()) return;
    at::NoGradGuard no_grad;
    for (const auto& a : arrived) {
      for (const auto& s : client_.shards()[a.shard].segments) {
        // One pass: x.mul_(1 - alpha).add_(x~, alpha).
        optim::kernels::axpby(optim::floats(setup_.flat.params().narrow(0, s.offset, s.numel)),
                              optim::floats(a.values.narrow(0, s.local, s.numel)), static_cast<size_t>(s.numel),
                              1 - a.alpha, a.alpha);
      }
      if (a.shard == 0) version_ = a.version;
    }
  }

  optim::MomentumSgd local_;
  std::vector<runtime::Thread> receivers_;
  Mailbox<Arrival> mailbox_;
};

class AladdinServer final : public ServerAlgorithm {
 public:
  explicit AladdinServer(const ServerSetup& s)
      : pi_(kPi.of(s.config)),
        alpha_rule_(kAlpha.of(s.config)),
        variant_(kVariant.of(s.config)),
        server_(s),
        timeline_(s.timeline),
        averager_(server_.range().numel, s.comm.workers(), pi_),
        optimizer_(ps::server_optimizer(s.config, server_.range().numel, kMomentumOnWorkerByDefault)),
        since_push_(static_cast<size_t>(s.comm.workers()), 0) {}

  nlohmann::json serve() override {
    server_.serve(
        [this](const ps::Request& request, ps::WorkerChannel& channel) {
          require(request.kind == ps::RequestKind::kPushGradient, "ALADDIN server got an unexpected request");
          auto& gradient = channel.receive_payload();
          ps::Reply push;
          bool send = false;
          {
            std::lock_guard<std::mutex> lock(server_.mutex());
            Timeline::Scope span(timeline_, "accumulate");
            server_.record_staleness(server_.version() - request.version);
            const int64_t w = channel.worker();
            int64_t averaged = 0;
            if (variant_ == Variant::kL2) {
              optimizer_.step(server_.parameters(), gradient, request.lr);
              server_.count_update();
              averaged = ++since_push_[w] >= pi_ ? pi_ : 0;
              if (averaged) since_push_[w] = 0;
            } else {
              averaged = averager_.add(w, gradient, server_.parameters(), request.lr, optimizer_);
              if (averaged) server_.count_update();
            }
            if (averaged && variant_ != Variant::kL1) {
              push.alpha = ps::aladdin_alpha(alpha_rule_, server_.workers(), pi_, averaged);
              push.version = server_.version();
              channel.reply_buffer().copy_(server_.parameters());
              send = true;
            }
          }
          if (send) channel.push(channel.reply_buffer(), push);
        },
        [](ps::WorkerChannel& channel) {
          // With a payload, as the worker has a payload receive posted for every header.
          ps::Reply goodbye;
          goodbye.kind = ps::ReplyKind::kGoodbye;
          channel.push(channel.reply_buffer(), goodbye);
        });
    return server_.statistics();
  }

  void save_state(AlgorithmState& state) override {
    std::lock_guard<std::mutex> lock(server_.mutex());
    server_.save_state(state, &optimizer_);
    state.put_integers("since_push", since_push_);
    averager_.save_state(state);
  }
  void load_state(const AlgorithmState& state) override {
    server_.load_state(state, &optimizer_);
    state.copy_integers_to("since_push", since_push_);
    averager_.load_state(state);
  }

 private:
  int64_t pi_;
  ps::AlphaRule alpha_rule_;
  Variant variant_;
  ps::ShardServer server_;
  Timeline& timeline_;
  ps::LazyAverager averager_;
  optim::MomentumSgd optimizer_;     // of x~: plain SGD unless --momentum-at server|both
  std::vector<int64_t> since_push_;  // l2: gradients of each worker since its last push
};

}  // namespace

AlgorithmInfo aladdin_algorithm() {
  AlgorithmInfo info;
  info.name = "aladdin";
  info.description = "asymmetric centralized training (--pi, --aladdin-alpha, --aladdin-variant)";
  info.needs_servers = true;
  info.independent_workers = true;
  info.survives_worker_loss = true;
  info.options = {&kPi.spec(), &kAlpha.spec(), &kVariant.spec(), &ps::kSharding.spec(), &ps::kMomentumAt.spec()};
  info.validate = [](const TrainConfig& c) {
    ps::check_momentum_placement(c, "aladdin",
                                 {ps::MomentumAt::kWorker, ps::MomentumAt::kServer, ps::MomentumAt::kBoth});
  };
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<AladdinWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<AladdinServer>(s); };
  return info;
}

}  // namespace distsgd::algo
