// Test-set evaluation.
#pragma once
#include "distsgd/core/config.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

namespace distsgd::data {
struct Dataset;
struct Split;
}  // namespace distsgd::data
namespace distsgd::models {
class Model;
}

namespace distsgd::train {

// Over every prediction: one per sample of a classifier, one per byte of a language model's sequences.
struct Evaluation {
  double loss = 0;      // mean cross-entropy, nats
  double accuracy = 0;  // fraction of correct top-1 predictions
  int64_t samples = 0;
};

// Bits per byte of a language model: its mean cross-entropy in nats / ln 2.
double bits_per_byte(double loss_nats);

// An evaluation's figures as metrics.jsonl and summary.json record them: test_loss, and test_accuracy for a
// classifier or test_bits_per_byte for a language model (`text`); `suffix` names another model's (e.g. "_worker0").
void add_test_figures(nlohmann::json& record, const Evaluation& e, bool text, const std::string& suffix = "");

// The stop reason when `e` reaches the run's --target-accuracy ("target_accuracy") or --target-loss
// ("target_loss"), else null.
const char* target_reached(const TrainConfig& c, const Evaluation& e);

// Evaluates in inference mode (BatchNorm running statistics, no gradients) and restores training mode.
Evaluation evaluate(models::Model& model, const data::Dataset& dataset, const data::Split& split, int64_t batch_size);

}  // namespace distsgd::train
