// Gradient buckets for overlapping communication with backward (wait-free backprop, DDP's Reducer idea):
// parameters are grouped in reverse registration order (the order backward produces their gradients) into
// contiguous ranges of the flat buffer, the first bucket small so communication starts early, the rest up to a
// cap (merging small tensors, the MG-WFBP idea, so no tensor is sent alone). A tracker fires when a bucket's
// gradients are all accumulated, and hands buckets out strictly in index order: every rank launches the same
// collectives in the same order, whatever order gradients become ready in.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace distsgd::models {
class Model;
}
namespace distsgd::optim {
struct ParameterSlot;
class GradientHooks;
}  // namespace distsgd::optim

namespace distsgd::algo {

struct Bucket {
  int64_t offset = 0;  // elements into the flat buffer
  int64_t numel = 0;
  std::vector<size_t> parameters;  // indices into Model::parameters()
};

// Bucket layout for the given slots: bucket 0 holds the last parameters, at most first_bytes (but at least one
// tensor), the others at most bucket_bytes each.
std::vector<Bucket> make_buckets(const std::vector<optim::ParameterSlot>& slots, int64_t first_bytes,
                                 int64_t bucket_bytes);

class BucketReadyTracker {
 public:
  // on_ready(b) is called on the backward thread for b = 0, 1, 2, ... in order, as soon as bucket b and all
  // before it have their gradients. Hooks stay installed for the tracker's lifetime.
  BucketReadyTracker(models::Model& model, std::vector<Bucket> buckets, std::function<void(size_t)> on_ready);
  ~BucketReadyTracker();

  // Before each backward.
  void arm();
  // After backward: hands out the buckets not yet handed out (parameters that got no gradient).
  void flush();
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  void parameter_ready(size_t parameter);

  std::unique_ptr<optim::GradientHooks> hooks_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<int64_t> pending_;
  size_t next_to_hand_out_ = 0;
  std::function<void(size_t)> on_ready_;
};

}  // namespace distsgd::algo
