// Synthetic data for throughput runs and tests: any shape, deterministic from a seed.
#pragma once
#include "distsgd/data/dataset.hpp"

namespace distsgd::data {

// Random uint8 images whose labels are learnable: each class adds its own fixed block pattern to uniform noise.
// Classes are balanced (every class appears when a split has at least `classes` samples). Throws distsgd::Error
// when the shape, class count or sizes are invalid.
Dataset make_synthetic(const DatasetOptions& options);

}  // namespace distsgd::data
