#include "distsgd/train/evaluate.hpp"

#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/train/loss.hpp"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace distsgd::train {

double bits_per_byte(double loss_nats) { return loss_nats / std::log(2.0); }

void add_test_figures(nlohmann::json& record, const Evaluation& e, bool text, const std::string& suffix) {
  record["test_loss" + suffix] = e.loss;
  if (text) {
    record["test_bits_per_byte" + suffix] = bits_per_byte(e.loss);
  } else {
    record["test_accuracy" + suffix] = e.accuracy;
  }
}

const char* target_reached(const TrainConfig& c, const Evaluation& e) {
  if (c.target_accuracy > 0 && e.accuracy >= c.target_accuracy) return "target_accuracy";
  if (c.target_loss > 0 && e.samples > 0 && e.loss <= c.target_loss) return "target_loss";
  return nullptr;
}

Evaluation evaluate(models::Model& model, const data::Dataset& dataset, const data::Split& split, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  model.set_training(false);
  double loss_sum = 0;
  int64_t correct = 0, predictions = 0;
  const int64_t n = split.size();
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t count = std::min(batch_size, n - start);
    auto images = data::normalize(split.images.narrow(0, start, count), dataset);
    auto labels = split.labels.narrow(0, start, count);
    const auto sums = prediction_sums(model.forward(images), labels);
    loss_sum += sums.loss;
    correct += sums.correct;
    predictions += sums.predictions;
  }
  model.set_training(true);
  Evaluation e;
  e.samples = n;
  if (predictions > 0) {
    e.loss = loss_sum / static_cast<double>(predictions);
    e.accuracy = static_cast<double>(correct) / static_cast<double>(predictions);
  }
  return e;
}

}  // namespace distsgd::train
