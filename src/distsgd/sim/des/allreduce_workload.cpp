// AR-SGD in the discrete-event simulator, as algo/allreduce/ runs it:
//   --overlap none       after backward one allreduce of the whole gradient ("allreduce bucket 0"), then the
//                        update (whole_gradient_allreduce.cpp)
//   --overlap wfbp       each bucket's allreduce starts when backward has produced its gradients, in bucket order;
//                        after backward every reduction is awaited, then the update (bucketed_allreduce.cpp)
//   --overlap mgwfbp     as wfbp, the buckets the groups MG-WFBP's merge picks on the cluster (merge-optimal: the
//                        best merge's), as the analytical model sends them (synchronous_model.hpp, merged_tensors)
//   --overlap multistep  each bucket's reduce-scatter (an alltoall of 1/P slices) starts during backward; after
//                        backward, bucket by bucket, the wait, the local sum and the update of this worker's 1/P slice;
//                        then the allgathers, input-side bucket first, which the next forward waits for bucket by
//                        bucket at its gates (multistep_allreduce.cpp)
//   --compress dgc       compress, an allgather of every worker's selection (8 bytes an entry: int32 index and
//                        float32 value), the update (compression/sparse_allgather_sgd.cpp)
//   --compress powersgd  before --powersgd-start as --overlap none; then compress, the allreduces of the
//                        uncompressed tensors and of P, compress, the allreduce of Q, compress, the update
//                        (allreduce/powersgd_allreduce.cpp; sizes and compute: powersgd_model.hpp)
// One worker runs plain SGD (no collective), as the real code does.
#include <cmath>
#include <string>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/analytical/powersgd_model.hpp"
#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/des/collective_work.hpp"
#include "distsgd/sim/des/dgc.hpp"
#include "distsgd/sim/des/workload.hpp"

namespace distsgd::sim {

namespace {

enum class Variant { kNone, kWfbp, kMultistep, kSparse, kPowerSgd };

class AllreduceWorkload final : public Workload {
 public:
  explicit AllreduceWorkload(DesContext& c)
      : c_(c),
        variant_(variant_of(c)),
        buckets_(layout_of(c)),
        reductions_(static_cast<size_t>(c.workers), std::vector<CollectiveWork>(buckets_.size())),
        gathers_(static_cast<size_t>(c.workers), std::vector<CollectiveWork>(buckets_.size())) {
    if (variant_ == Variant::kPowerSgd) powersgd_ = powersgd_step(c.profile, c.settings.powersgd_rank);
  }

  const BucketLayout* watched_buckets() const override {
    return variant_ == Variant::kWfbp || variant_ == Variant::kMultistep ? &buckets_ : nullptr;
  }
  bool gates_forward() const override { return variant_ == Variant::kMultistep; }

  void forward_gate(int64_t worker, size_t bucket, Next next) override {
    wait(worker, gathers_[static_cast<size_t>(worker)][bucket], std::move(next));
  }

  void bucket_ready(int64_t worker, int64_t, size_t b) override {
    auto& work = reductions_[static_cast<size_t>(worker)][b];
    if (variant_ == Variant::kWfbp) {
      launch(worker, CollectiveKind::kAllreduce, buckets_.bytes[b], "allreduce bucket ", b, work);
    } else {
      launch(worker, CollectiveKind::kAlltoall, buckets_.bytes[b], "reduce-scatter bucket ", b, work);
    }
  }

  void after_backward(int64_t worker, int64_t step, Next next) override {
    const double m = c_.model_bytes();
    auto update = [this, worker, m, next] { c_.run(worker, "update", c_.update_seconds(worker, m), next); };
    const bool plain_step = variant_ == Variant::kPowerSgd && step < c_.settings.powersgd_start;
    switch (plain_step ? Variant::kNone : variant_) {
      case Variant::kPowerSgd:
        return powersgd_exchange(c_, worker, powersgd_, reductions_[static_cast<size_t>(worker)][0], update);
      case Variant::kNone: {
        if (c_.workers == 1) return update();
        auto& work = reductions_[static_cast<size_t>(worker)][0];
        launch(worker, CollectiveKind::kAllreduce, m, "allreduce bucket ", 0, work);
        return wait(worker, work, update);
      }
      case Variant::kWfbp:
        return wait_all(worker, 0, update);
      case Variant::kMultistep:
        return update_slices(worker, 0, std::move(next));
      case Variant::kSparse:
        return c_.run(worker, "compress", c_.update_seconds(worker, m), [this, worker, update] {
          if (c_.workers == 1) return update();
          // Every worker's selection is the same size (k per tensor is a function of the density alone).
          const double block = dgc_message_bytes(c_.profile, c_.settings.density);
          auto& work = reductions_[static_cast<size_t>(worker)][0];
          launch(worker, CollectiveKind::kAllgather, block * static_cast<double>(c_.workers),
                 "allgather sparse gradient", SIZE_MAX, work);
          wait(worker, work, update);
        });
    }
  }

 private:
  // The buckets: train's for wfbp and multistep, the merge's groups for mgwfbp and merge-optimal (backward order,
  // each the range of tensors it holds).
  static BucketLayout layout_of(const DesContext& c) {
    const auto schedule =
        allreduce_settings(c.settings.overlap, c.settings.bucket_bytes, c.settings.first_bucket_bytes).schedule;
    if (schedule != AllreduceSchedule::kMgwfbp && schedule != AllreduceSchedule::kOptimalMerge) {
      return make_bucket_layout(c.profile, c.settings.first_bucket_bytes, c.settings.bucket_bytes);
    }
    const auto merged =
        merged_tensors(c.profile, c.workers, c.cluster.allreduce_cost(c.workers), schedule,
                       c.cluster.interference_alpha(c.workers), c.cluster.allreduce_alpha_scale(c.workers));
    BucketLayout layout;
    for (size_t g = merged.first_layer.size(); g-- > 0;) {
      layout.first.push_back(merged.first_layer[g]);
      layout.last.push_back(g + 1 < merged.first_layer.size() ? merged.first_layer[g + 1] - 1
                                                              : c.profile.tensors.size() - 1);
      layout.bytes.push_back(merged.bytes[g]);
    }
    return layout;
  }

  static Variant variant_of(const DesContext& c) {
    if (c.settings.density > 0) return Variant::kSparse;
    if (c.settings.powersgd_rank > 0) return Variant::kPowerSgd;
    if (c.workers == 1 || c.settings.overlap == "none") return Variant::kNone;
    return c.settings.overlap == "multistep" ? Variant::kMultistep : Variant::kWfbp;
  }

  // Starts a collective, traced from launch to completion on the communication lane (comm_trace.hpp).
  void launch(int64_t worker, CollectiveKind kind, double bytes, const char* name, size_t bucket,
              CollectiveWork& work) {
    launch_collective(c_, worker, kind, bytes, name, work, bucket);
  }

  // AllreduceWorker::wait: nothing when done, else a "wait" span until it is.
  void wait(int64_t worker, CollectiveWork& work, Next next) { wait_for(c_, worker, work, std::move(next)); }

  void wait_all(int64_t worker, size_t b, Next next) {
    if (b == buckets_.size()) return next();
    wait(worker, reductions_[static_cast<size_t>(worker)][b],
         [this, worker, b, next = std::move(next)] { wait_all(worker, b + 1, next); });
  }

  // Multistep: bucket by bucket, wait for its reduce-scatter, sum the P slices received and update this worker's.
  void update_slices(int64_t worker, size_t b, Next next) {
    if (b == buckets_.size()) {
      for (size_t g = buckets_.size(); g-- > 0;) {
        launch(worker, CollectiveKind::kAllgather, buckets_.bytes[g], "allgather bucket ", g,
               gathers_[static_cast<size_t>(worker)][g]);
      }
      return next();
    }
    wait(worker, reductions_[static_cast<size_t>(worker)][b], [this, worker, b, next = std::move(next)] {
      const double p = static_cast<double>(c_.workers), bytes = buckets_.bytes[b];
      const double sum = c_.cluster.gamma_seconds_per_byte * bytes * (p - 1) / p;
      c_.run(worker, "update", sum + c_.update_seconds(worker, bytes / p),
             [this, worker, b, next] { update_slices(worker, b + 1, next); });
    });
  }

  DesContext& c_;
  Variant variant_;
  BucketLayout buckets_;
  std::vector<std::vector<CollectiveWork>> reductions_;  // per worker, per bucket
  std::vector<std::vector<CollectiveWork>> gathers_;     // multistep
  PowerSgdStep powersgd_;                                // --compress powersgd
};

}  // namespace

std::unique_ptr<Workload> make_allreduce_workload(DesContext& context) {
  return std::make_unique<AllreduceWorkload>(context);
}

}  // namespace distsgd::sim
