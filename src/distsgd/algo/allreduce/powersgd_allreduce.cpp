// AR-SGD with PowerSGD (--algo arsgd --compress powersgd --rank r): after backward the flat gradient goes through
// algo/compression/powersgd.hpp (three allreduces: the uncompressed tensors, every P, every Q) and comes back as the
// workers' mean, PowerSGD's approximation of it from --powersgd-start on; then the same momentum-SGD step as dense
// AR-SGD, so momentum and weight decay act on the decompressed mean, as under DDP with powerSGD_hook. The
// exchanges depend on each other (P before Q), so they run after backward (--overlap none).
#include "distsgd/algo/allreduce/allreduce_worker.hpp"
#include "distsgd/algo/compression/powersgd.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <nlohmann/json.hpp>

namespace distsgd::algo::allreduce {
namespace {

class PowerSgdAllreduce final : public AllreduceWorker {
 public:
  explicit PowerSgdAllreduce(const WorkerSetup& s)
      : AllreduceWorker(s), compressor_(compression::powersgd_compressor(s.model, s.config)) {}

  void after_backward(int64_t step, double lr) override {
    const double waited_before = waiting_.total();
    Stopwatch whole;
    whole.start();
    bytes_sent_ +=
        compressor_.allreduce_mean(flat_.grads(), step, comm_, [this](comm::Work& work, const std::string& what) {
          auto traced_work = traced(std::move(work), what);
          wait(traced_work);
        });
    compress_seconds_ += whole.stop() - (waiting_.total() - waited_before);
    update(flat_.params(), flat_.grads(), lr, 0);  // already the mean
  }

  AlgorithmStats stats() const override {
    auto s = AllreduceWorker::stats();
    s.update_seconds += compress_seconds_;  // compression is optimizer-side work of this worker
    return s;
  }

  void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& server_statistics) override {
    AllreduceWorker::add_to_summary(summary, server_statistics);
    summary["overlap"] = "none";
    const auto& plan = compressor_.plan();
    const auto& o = compressor_.options();
    summary["powersgd"] = {
        {"rank", o.rank},
        {"start_step", o.start_step},
        {"compressed_tensors", plan.compressed.size()},
        {"uncompressed_tensors", plan.uncompressed.size()},
        {"floats_allreduced_per_step", plan.floats_allreduced()},
        {"gradient_floats", plan.total_floats},
        {"compression_ratio", static_cast<double>(plan.total_floats) / static_cast<double>(plan.floats_allreduced())}};
  }

  void save_state(AlgorithmState& state) override {
    AllreduceWorker::save_state(state);
    compressor_.save_state(state);
  }
  void load_state(const AlgorithmState& state) override {
    AllreduceWorker::load_state(state);
    compressor_.load_state(state);
  }

 private:
  compression::PowerSgdCompressor compressor_;
  double compress_seconds_ = 0;
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_powersgd_allreduce(const WorkerSetup& setup) {
  return std::make_unique<PowerSgdAllreduce>(setup);
}

}  // namespace distsgd::algo::allreduce
