// ALADDIN (spec: "ALADDIN"; Ko et al., CIKM 2021): asymmetric centralized training. Workers send every gradient
// and never wait for the server; each takes local momentum-SGD steps and, after each iteration, checks without
// blocking whether the server pushed a global model, mixing it in as x_i <- (1-alpha) x_i + alpha x~. The server
// updates x~ lazily with the average of the gradients accumulated since its last update, whenever one worker has
// contributed pi of them, and pushes (x~, alpha) to that worker only.
// --aladdin-variant l1: local self-update only (the server updates x~ but never pushes it);
//                   l2: the server applies every gradient at once (no lazy update) and still pushes every pi.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/lazy_averager.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/timeline.hpp"

#include <torch/torch.h>

#include <deque>
#include <mutex>
#include <thread>

namespace distsgd::algo {
namespace {

constexpr bool kMomentumOnWorkerByDefault = true;

class AladdinWorker final : public ps::PsWorker {
 public:
  // One receiver thread per shard blocks on that shard's pushes and queues them; the training thread only
  // looks at the queue, so it never waits for a server.
  explicit AladdinWorker(const WorkerSetup& s)
      : PsWorker(s),
        local_(ps::worker_optimizer(s.config, s.flat.numel(),
                                    ps::momentum_on_worker(s.config, kMomentumOnWorkerByDefault))),
        outgoing_(torch::empty({s.flat.numel()})) {
    for (size_t shard = 0; shard < client_.shards().size(); ++shard) {
      receivers_.emplace_back([this, shard] { receive_pushes(shard); });
    }
  }

  ~AladdinWorker() override {
    for (auto& t : receivers_) {
      if (t.joinable()) t.detach();  // only after an error: the process is ending
    }
  }

  void after_backward(int64_t step, double lr) override {
    auto& flat = setup_.flat;
    // The previous gradient must have left before its buffer is reused (a send, not a round trip).
    wait_for_sends();
    {
      train::Timeline::Scope span(setup_.timeline, "update");
      update_time_.start();
      local_.step(flat.params(), flat.grads(), lr);  // grads now hold g + wd*x: what the server averages
      outgoing_.copy_(flat.grads());
      update_time_.stop();
    }
    sends_ = client_.send_to_all_async({ps::RequestKind::kPushGradient, step, lr, step, version_}, outgoing_);
    mix_arrived_models();
  }

  void finish() override {
    wait_for_sends();
    PsWorker::finish();  // kDone: each shard answers with a goodbye, which ends its receiver
    for (auto& t : receivers_) t.join();
    if (!receiver_error_.empty()) throw Error(receiver_error_);
    mix_arrived_models();
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
        auto header = torch::empty({ps::kReplyHeaderSize}, torch::kFloat64);
        auto values = torch::empty({range.numel});
        auto h = client_.comm().receive(header, server, ps::kPushHeaderTag);
        auto v = client_.comm().receive(values, server, ps::kPushTag);
        h.wait();
        v.wait();
        const auto reply = ps::decode_reply(header);
        if (reply.kind == ps::ReplyKind::kGoodbye) return;
        std::lock_guard<std::mutex> lock(mailbox_mutex_);
        mailbox_.push_back({shard, reply.alpha, reply.version, values});
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mailbox_mutex_);
      receiver_error_ = e.what();
    }
  }

  void wait_for_sends() {
    waiting_.start();
    for (auto& w : sends_) w.wait();
    sends_.clear();
    waiting_.stop();
  }

  // x_i <- (1 - alpha) x_i + alpha x~ for every global model that has arrived, in arrival order.
  void mix_arrived_models() {
    std::deque<Arrival> arrived;
    {
      std::lock_guard<std::mutex> lock(mailbox_mutex_);
      if (!receiver_error_.empty()) throw Error(receiver_error_);
      arrived.swap(mailbox_);
    }
    torch::NoGradGuard no_grad;
    for (const auto& a : arrived) {
      const auto& range = client_.shards()[a.shard];
      setup_.flat.params().narrow(0, range.offset, range.numel).mul_(1 - a.alpha).add_(a.values, a.alpha);
      if (a.shard == 0) version_ = a.version;
    }
  }

  train::MomentumSgd local_;
  at::Tensor outgoing_;
  std::vector<comm::Work> sends_;
  std::vector<std::thread> receivers_;
  std::mutex mailbox_mutex_;
  std::deque<Arrival> mailbox_;
  std::string receiver_error_;
};

class AladdinServer final : public ServerAlgorithm {
 public:
  explicit AladdinServer(const ServerSetup& s)
      : config_(s.config),
        server_(s),
        timeline_(s.timeline),
        averager_(server_.range().numel, s.comm.workers(), s.config.pi),
        optimizer_(ps::server_optimizer(s.config, server_.range().numel, kMomentumOnWorkerByDefault)),
        since_push_(static_cast<size_t>(s.comm.workers()), 0) {}

  void serve() override {
    server_.serve(
        [this](const ps::Request& request, ps::WorkerChannel& channel) {
          require(request.kind == ps::RequestKind::kPushGradient, "ALADDIN server got an unexpected request");
          auto& gradient = channel.receive_payload();
          ps::Reply push;
          bool send = false;
          {
            std::lock_guard<std::mutex> lock(server_.mutex());
            train::Timeline::Scope span(timeline_, "accumulate");
            server_.record_staleness(server_.version() - request.version);
            const int64_t w = channel.worker();
            int64_t averaged = 0;
            if (config_.aladdin_variant == "l2") {
              optimizer_.step(server_.parameters(), gradient, request.lr);
              server_.count_update();
              averaged = ++since_push_[w] >= config_.pi ? config_.pi : 0;
              if (averaged) since_push_[w] = 0;
            } else {
              averaged = averager_.add(w, gradient, server_.parameters(), request.lr, optimizer_);
              if (averaged) server_.count_update();
            }
            if (averaged && config_.aladdin_variant != "l1") {
              push.alpha = ps::aladdin_alpha(config_.aladdin_alpha, server_.workers(), config_.pi, averaged);
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
    ps::ShardServer::publish(server_.comm(), server_.shard(), server_.statistics());
  }

 private:
  const TrainConfig& config_;
  ps::ShardServer server_;
  train::Timeline& timeline_;
  ps::LazyAverager averager_;
  train::MomentumSgd optimizer_;  // of x~: plain SGD unless --momentum-at server|both
  std::vector<int64_t> since_push_;  // l2: gradients of each worker since its last push
};

}  // namespace

AlgorithmInfo aladdin_algorithm() {
  AlgorithmInfo info;
  info.name = "aladdin";
  info.description = "asymmetric centralized training (--pi, --aladdin-alpha, --aladdin-variant)";
  info.needs_servers = true;
  info.independent_workers = true;
  info.momentum_placements = {"worker", "server", "both"};
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<AladdinWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<AladdinServer>(s); };
  return info;
}

}  // namespace distsgd::algo
