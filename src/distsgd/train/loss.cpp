#include "distsgd/train/loss.hpp"

#include <torch/torch.h>

namespace distsgd::train {
namespace {

// [B, T, V] and [B, T] -> [B*T, V] and [B*T]: every position is one prediction (torch's cross_entropy takes the
// classes in dimension 1).
std::pair<at::Tensor, at::Tensor> predictions(const at::Tensor& logits, const at::Tensor& labels) {
  if (logits.dim() == 3) return {logits.reshape({-1, logits.size(2)}), labels.reshape({-1})};
  return {logits, labels};
}

}  // namespace

at::Tensor prediction_loss(const at::Tensor& logits, const at::Tensor& labels) {
  const auto [flat_logits, flat_labels] = predictions(logits, labels);
  return torch::nn::functional::cross_entropy(flat_logits, flat_labels);
}

PredictionSums prediction_sums(const at::Tensor& logits, const at::Tensor& labels) {
  const auto [flat_logits, flat_labels] = predictions(logits, labels);
  PredictionSums sums;
  sums.loss = torch::nn::functional::cross_entropy(
                  flat_logits, flat_labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                  .item<double>();
  sums.correct = flat_logits.argmax(1).eq(flat_labels).sum().item<int64_t>();
  sums.predictions = flat_labels.numel();
  return sums;
}

}  // namespace distsgd::train
