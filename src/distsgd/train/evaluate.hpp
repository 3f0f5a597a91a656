// Test-set evaluation.
#pragma once
#include <cstdint>

namespace distsgd::data {
struct Dataset;
struct Split;
}  // namespace distsgd::data
namespace distsgd::models {
class Model;
}

namespace distsgd::train {

struct Evaluation {
  double loss = 0;      // mean cross-entropy
  double accuracy = 0;  // fraction of correct top-1 predictions
  int64_t samples = 0;
};

// Evaluates in inference mode (BatchNorm running statistics, no gradients) and restores training mode.
Evaluation evaluate(models::Model& model, const data::Dataset& dataset, const data::Split& split, int64_t batch_size);

}  // namespace distsgd::train
