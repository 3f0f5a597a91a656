#include "distsgd/algo/allreduce/gradient_buckets.hpp"

#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/gradient_hooks.hpp"

#include <torch/torch.h>

namespace distsgd::algo {

std::vector<Bucket> make_buckets(const std::vector<optim::ParameterSlot>& slots, int64_t first_bytes,
                                 int64_t bucket_bytes) {
  std::vector<Bucket> buckets;
  Bucket current;
  for (size_t k = slots.size(); k-- > 0;) {
    const auto& slot = slots[k];
    const int64_t cap = buckets.empty() ? first_bytes : bucket_bytes;
    if (!current.parameters.empty() && (current.numel + slot.numel) * 4 > cap) {
      buckets.push_back(current);
      current = Bucket{};
    }
    current.parameters.push_back(k);
    current.offset = slot.offset;  // descending, so the last one added is the start
    current.numel += slot.numel;
  }
  if (!current.parameters.empty()) buckets.push_back(current);
  return buckets;
}

BucketReadyTracker::BucketReadyTracker(models::Model& model, std::vector<Bucket> buckets,
                                       std::function<void(size_t)> on_ready)
    : buckets_(std::move(buckets)), on_ready_(std::move(on_ready)) {
  auto parameters = model.parameters();
  bucket_of_.assign(parameters.size(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t p : buckets_[b].parameters) bucket_of_[p] = b;
  }
  hooks_ = std::make_unique<optim::GradientHooks>(parameters, [this](size_t p) { parameter_ready(p); });
  arm();
}

BucketReadyTracker::~BucketReadyTracker() = default;

void BucketReadyTracker::arm() {
  pending_.clear();
  for (const auto& b : buckets_) pending_.push_back(static_cast<int64_t>(b.parameters.size()));
  next_to_hand_out_ = 0;
}

void BucketReadyTracker::parameter_ready(size_t parameter) {
  --pending_[bucket_of_[parameter]];
  while (next_to_hand_out_ < buckets_.size() && pending_[next_to_hand_out_] <= 0) {
    on_ready_(next_to_hand_out_++);
  }
}

void BucketReadyTracker::flush() {
  while (next_to_hand_out_ < buckets_.size()) on_ready_(next_to_hand_out_++);
}

}  // namespace distsgd::algo
