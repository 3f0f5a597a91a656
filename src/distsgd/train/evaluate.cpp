#include "distsgd/train/evaluate.hpp"

#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"

#include <torch/torch.h>

namespace distsgd::train {

Evaluation evaluate(models::Model& model, const data::Dataset& dataset, const data::Split& split, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  model.set_training(false);
  double loss_sum = 0;
  int64_t correct = 0;
  const int64_t n = split.size();
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t count = std::min(batch_size, n - start);
    auto images = data::normalize(split.images.narrow(0, start, count), dataset);
    auto labels = split.labels.narrow(0, start, count);
    auto logits = model.forward(images);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    correct += logits.argmax(1).eq(labels).sum().item<int64_t>();
  }
  model.set_training(true);
  Evaluation e;
  e.samples = n;
  if (n > 0) {
    e.loss = loss_sum / static_cast<double>(n);
    e.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  }
  return e;
}

}  // namespace distsgd::train
