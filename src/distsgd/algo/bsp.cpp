// BSP on the parameter server (spec: "BSP"): every iteration each worker pushes its gradient to every shard and
// blocks; a shard waits for all n gradients, averages them summing in worker-rank order (never arrival order, so
// runs are deterministic), applies momentum SGD with weight decay to its slice of x~, and answers every worker
// with the new slice (ps-lite/MXNet's merge buffer).
// --overlap wfbp (default): each shard's gradient arrives in pieces pushed during backward (ps/gradient_push.hpp);
// a shard averages and updates each piece as soon as every worker has pushed it, and answers with that piece, so
// the replies of the last layers land while backward goes on. The sums are the same element by element, so the
// parameters are the same as without overlap.
// --local-aggregation host: the workers of one host sum their gradients in rank order and the lowest-ranked of them
// pushes the sum, saying how many gradients it holds; the shard's round ends when the contributions reach n. With
// --overlap wfbp the sum is pipelined with backward, bucket by bucket (ps/host_bucket_sums.hpp).
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/allreduce/allreduce_options.hpp"
#include "distsgd/algo/ps/host_bucket_sums.hpp"
#include "distsgd/algo/ps/host_groups.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"
#include "distsgd/optim/sgd.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <nlohmann/json.hpp>

namespace distsgd::algo {
namespace {

class BspWorker final : public ps::PsWorker {
 public:
  explicit BspWorker(const WorkerSetup& s) : PsWorker(s) {
    if (ps::kLocalAggregation.of(s.config) == ps::LocalAggregation::kHost) {
      group_ = ps::exchange_host_group(*s.comm);
    } else {
      group_.members = {s.comm->rank()};
    }
    const bool summing = group_.size() > 1, wfbp = ps::wait_free_backprop(s.config);
    if (summing && leads()) host_sum_ = at::empty({s.flat.numel()});
    if (summing && !leads() && wfbp) {
      bucket_sends_ =
          std::make_unique<ps::HostBucketSends>(*s.comm, s.model, wfbp_buckets(), group_.leader(), s.flat.grads());
    } else if (summing && leads() && !wfbp) {
      for (int64_t k = 1; k < group_.size(); ++k) member_gradients_.push_back(at::empty({s.flat.numel()}));
    }
    if (compressing() || !leads()) return;
    enable_push({wfbp, true, 4, summing}, [this, summing](int64_t offset, int64_t numel) {
      return (summing ? host_sum_ : setup_.flat.grads()).narrow(0, offset, numel);
    });
    if (summing && wfbp) {
      bucket_sums_ = std::make_unique<ps::HostBucketSums>(
          *s.comm, s.model, wfbp_buckets(), group_, s.flat.grads(), host_sum_,
          [this](size_t bucket) { gradient_push().push_bucket(bucket); }, s.timeline);
    }
  }

  ps::Request gradient_request(int64_t step, double lr) const override {
    ps::Request request{ps::RequestKind::kGradient, step, lr, step, version_};
    request.contributions = group_.size();
    return request;
  }

  void before_backward(int64_t step, double lr) override {
    PsWorker::before_backward(step, lr);
    if (bucket_sums_) bucket_sums_->start();
    if (bucket_sends_) bucket_sends_->start();
    // The host's leader has its receives posted before the members can send.
    for (size_t k = 0; k < member_gradients_.size(); ++k) {
      host_receives_.push_back(
          client_.comm().receive(member_gradients_[k], group_.members[k + 1], ps::kHostGradientTag));
    }
  }

  void after_backward(int64_t step, double lr) override {
    if (compressing()) {
      push_and_receive({ps::RequestKind::kGradient, step, lr, step, version_}, compress_gradient(step),
                       setup_.flat.params());
      return;
    }
    if (!leads()) {
      exchange_with_leader();
      return;
    }
    if (bucket_sums_) {
      TimedPhase phase(setup_.timeline, "wait for the host's buckets", waiting_);
      bucket_sums_->finish();
    } else if (group_.size() > 1) {
      sum_host_gradients();
    }
    gradient_push().push_rest();
    version_ = gradient_push().finish().version;
    if (group_.size() > 1) hand_parameters_to_members();
  }

  void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& shards) override {
    PsWorker::add_to_summary(summary, shards);
    summary["local_aggregation"] = name_of(ps::kLocalAggregation.of(setup_.config));
    if (ps::kLocalAggregation.of(setup_.config) == ps::LocalAggregation::kHost) summary["hosts"] = group_.hosts;
  }

 private:
  bool leads() const { return group_.leader() == setup_.comm->rank(); }

  // The gradients of the host in rank order (the leader ranks first): the sum the shards would have made.
  void sum_host_gradients() {
    {
      TimedPhase phase(setup_.timeline, "wait for the host's gradients", waiting_);
      for (auto& w : host_receives_) w.wait();
      host_receives_.clear();
    }
    TimedPhase phase(setup_.timeline, "sum the host's gradients", update_time_);
    at::NoGradGuard no_grad;
    std::vector<const float*> rows{optim::floats(setup_.flat.grads())};
    for (const auto& g : member_gradients_) rows.push_back(optim::floats(g));
    optim::kernels::sum_rows(optim::floats(host_sum_), rows.data(), rows.size(), optim::length(host_sum_));
  }

  void hand_parameters_to_members() {
    TimedPhase phase(setup_.timeline, "send parameters to the host", waiting_);
    std::vector<comm::Work> sends;
    for (size_t k = 1; k < group_.members.size(); ++k) {
      sends.push_back(client_.comm().send(setup_.flat.params(), group_.members[k], ps::kHostParametersTag));
      sends.push_back(client_.comm().send(encode_version(), group_.members[k], ps::kHostParametersTag));
    }
    for (auto& w : sends) w.wait();
  }

  void exchange_with_leader() {
    TimedPhase phase(
        setup_.timeline,
        bucket_sends_ ? "wait for the host's parameters" : "push to the host's leader, wait for parameters", waiting_);
    auto& comm = client_.comm();
    comm::Work sent;
    if (bucket_sends_) {
      bucket_sends_->finish();  // the buckets went during backward
    } else {
      sent = comm.send(setup_.flat.grads(), group_.leader(), ps::kHostGradientTag);
    }
    auto version = at::empty({1}, at::kLong);
    auto parameters = comm.receive(setup_.flat.params(), group_.leader(), ps::kHostParametersTag);
    auto version_received = comm.receive(version, group_.leader(), ps::kHostParametersTag);
    if (!bucket_sends_) sent.wait();
    parameters.wait();
    version_received.wait();
    version_ = version.item<int64_t>();
  }

  at::Tensor encode_version() const { return at::full({1}, version_, at::kLong); }

  ps::HostGroup group_;
  at::Tensor host_sum_;
  std::vector<at::Tensor> member_gradients_;  // the leader's copies of its members' gradients, in rank order
  std::vector<comm::Work> host_receives_;
  std::unique_ptr<ps::HostBucketSums> bucket_sums_;    // the leader's, under wfbp
  std::unique_ptr<ps::HostBucketSends> bucket_sends_;  // a member's, under wfbp
};

class BspServer final : public ServerAlgorithm {
 public:
  explicit BspServer(const ServerSetup& s)
      : server_(s),
        timeline_(s.timeline),
        // Momentum and weight decay at the PS (spec), unless DGC's momentum correction did them on the workers.
        optimizer_(ps::server_optimizer(s.config, server_.range().numel, false)),
        gradients_(static_cast<size_t>(s.comm.workers())),
        pushed_(static_cast<size_t>(s.comm.workers()), false) {}

  nlohmann::json serve() override {
    server_.serve([this](const ps::Request& request, ps::WorkerChannel& channel) {
      require(request.kind == ps::RequestKind::kGradient, "BSP server got an unexpected request");
      const at::Tensor gradient = channel.receive_gradient(request, ps::WorkerChannel::Processing::kByAlgorithm);
      const int64_t offset = request.offset;  // 0 for a whole shard or a compressed gradient
      ps::Reply reply;
      {
        std::unique_lock<std::mutex> lock(server_.mutex());
        const int64_t my_round = round_;
        if (count_ == 0) {
          piece_offset_ = offset;
          piece_numel_ = gradient.numel();
        }
        require(offset == piece_offset_ && gradient.numel() == piece_numel_,
                "BSP: worker " + std::to_string(channel.worker()) + " pushed a different piece than the others");
        gradients_[channel.worker()] = gradient;
        pushed_[channel.worker()] = true;
        count_ += request.contributions;
        require(count_ <= server_.workers(), "BSP: more gradients than workers in one round");
        if (count_ == server_.workers()) {
          const int64_t numel = piece_numel_;
          aggregate_and_update(request.lr);
          // The update's device time (a virtual cluster's; none in a real run) passes before anyone is answered,
          // outside the lock: spending it yields to the other actors of the run.
          lock.unlock();
          server_.spend_update(numel);
          lock.lock();
          ++rounds_answered_;
          round_done_.notify_all();
        } else {
          round_done_.wait(
              lock, [&] { return rounds_answered_ > my_round; }, "the round's other gradients");
        }
        reply.version = server_.version();
      }
      // The next update of this piece needs this worker's next gradient, which it sends only after this reply:
      // no copy needed.
      channel.reply(server_.parameters().narrow(0, offset, gradient.numel()), reply);
    });
    return server_.statistics();
  }

  // Worker 0 asks at a step boundary and waits: no round of the next step can complete without it.
  void save_state(AlgorithmState& state) override {
    std::lock_guard<std::mutex> lock(server_.mutex());
    server_.save_state(state, &optimizer_);
  }
  void load_state(const AlgorithmState& state) override { server_.load_state(state, &optimizer_); }

 private:
  void aggregate_and_update(double lr) {
    Timeline::Scope span(timeline_, "update");
    at::NoGradGuard no_grad;
    // Two passes in all: the sum in worker-rank order into one buffer, then the averaged momentum step.
    std::vector<const float*> rows;
    for (size_t w = 0; w < gradients_.size(); ++w) {
      if (!pushed_[w]) continue;
      rows.push_back(optim::floats(gradients_[w]));
      pushed_[w] = false;
    }
    if (!sum_.defined()) sum_ = at::empty({server_.range().numel});
    auto sum = sum_.narrow(0, 0, piece_numel_);
    optim::kernels::sum_rows(optim::floats(sum), rows.data(), rows.size(), optim::length(sum));
    optimizer_.step(server_.parameters().narrow(0, piece_offset_, piece_numel_), sum, lr, piece_offset_,
                    {static_cast<double>(server_.workers())});
    updated_ += piece_numel_;
    if (updated_ == server_.range().numel) {  // the last piece of this iteration
      server_.count_update();
      updated_ = 0;
    }
    count_ = 0;
    ++round_;
  }

  ps::ShardServer server_;
  Timeline& timeline_;
  optim::MomentumSgd optimizer_;
  std::vector<at::Tensor> gradients_;  // views of the handlers' payload buffers, one per worker
  at::Tensor sum_;                     // the round's sum (the largest piece is the shard)
  std::vector<bool> pushed_;           // which workers pushed in this round (local aggregation: the leaders)
  int64_t count_ = 0, round_ = 0;      // gradients this round holds; rounds (pieces) done
  int64_t rounds_answered_ = 0;        // rounds whose update's time has passed: their pushers may be answered
  int64_t piece_offset_ = 0, piece_numel_ = 0, updated_ = 0;
  runtime::Condition round_done_;
};

}  // namespace

AlgorithmInfo bsp_algorithm() {
  AlgorithmInfo info;
  info.name = "bsp";
  info.description = "bulk synchronous parallel on the parameter server (--servers, --sharding, --overlap)";
  info.needs_servers = true;
  info.options = {&ps::kSharding.spec(), &allreduce::kOverlap.spec(), &allreduce::kBucketMb.spec(),
                  &allreduce::kFirstBucketMb.spec(), &ps::kLocalAggregation.spec()};
  for (const auto* o : compression::compression_options()) info.options.push_back(o);
  info.validate = [](const TrainConfig& c) {
    ps::check_overlap(c, "bsp");
    compression::refuse_powersgd(c, "bsp");
    require(!compression::dgc_enabled(c) || ps::kLocalAggregation.of(c) == ps::LocalAggregation::kNone,
            "--local-aggregation host sums dense gradients: it does not combine with --compress dgc");
  };
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<BspWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<BspServer>(s); };
  return info;
}

}  // namespace distsgd::algo
