// The loss of a classifier (logits [B, classes], labels [B]) and of a language model (logits [B, T, vocabulary],
// targets [B, T]): the cross-entropy of every prediction, one per sample or one per position.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace distsgd::train {

// Mean cross-entropy (nats) over every prediction: the training loss.
at::Tensor prediction_loss(const at::Tensor& logits, const at::Tensor& labels);

// An evaluation batch's sums over its predictions (B, or B * T for a language model).
struct PredictionSums {
  double loss = 0;  // summed cross-entropy, nats
  int64_t correct = 0;
  int64_t predictions = 0;
};
PredictionSums prediction_sums(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace distsgd::train
