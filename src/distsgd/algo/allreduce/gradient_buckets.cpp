#include "distsgd/algo/allreduce/gradient_buckets.hpp"

#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
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

struct BucketReadyTracker::Hooks {
  // The gradient accumulators must be kept alive, or autograd makes new ones without our hooks.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::vector<uintptr_t> keys;
};

BucketReadyTracker::BucketReadyTracker(models::Model& model, std::vector<Bucket> buckets,
                                       std::function<void(size_t)> on_ready)
    : hooks_(std::make_unique<Hooks>()), buckets_(std::move(buckets)), on_ready_(std::move(on_ready)) {
  auto parameters = model.parameters();
  bucket_of_.assign(parameters.size(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t p : buckets_[b].parameters) bucket_of_[p] = b;
  }
  for (size_t p = 0; p < parameters.size(); ++p) {
    auto accumulator = torch::autograd::impl::grad_accumulator(parameters[p]);
    auto key = accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, p](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          parameter_ready(p);
          return outputs;
        }));
    hooks_->accumulators.push_back(accumulator);
    hooks_->keys.push_back(key);
  }
  arm();
}

BucketReadyTracker::~BucketReadyTracker() {
  for (size_t i = 0; i < hooks_->accumulators.size(); ++i) hooks_->accumulators[i]->del_post_hook(hooks_->keys[i]);
}

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
