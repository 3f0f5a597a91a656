#include "distsgd/train/layer_profiler.hpp"

#include <torch/torch.h>

#include <algorithm>

#include "distsgd/core/error.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/threads.hpp"
#include "distsgd/optim/worker_optimizer.hpp"
#include "distsgd/train/loss.hpp"
#include "distsgd/train/process.hpp"

namespace distsgd::train {
namespace {

Spread spread_of(std::vector<double> samples) {
  require(!samples.empty(), "no samples to summarize");
  std::sort(samples.begin(), samples.end());
  auto quantile = [&](double q) {
    const double at = q * static_cast<double>(samples.size() - 1);
    const auto low = static_cast<std::size_t>(at);
    const std::size_t high = std::min(low + 1, samples.size() - 1);
    return samples[low] + (at - static_cast<double>(low)) * (samples[high] - samples[low]);
  };
  return {quantile(0.5), quantile(0.75) - quantile(0.25), samples.front()};
}

// Times of one iteration, per tensor.
struct Sample {
  std::vector<double> forward, backward;
  double data = 0, iteration = 0;
};

}  // namespace

MeasuredProfile measure_profile(const TrainConfig& config, int64_t repeats, int64_t warmup) {
  require(repeats >= 3, "--repeats must be at least 3 (got " + std::to_string(repeats) + ")");
  MeasuredProfile profile;
  profile.threads = configure_threads(config.threads, 1);
  const auto dataset = data::load_dataset(dataset_options(config));
  require(dataset.train.size() >= config.batch_size, "the dataset has fewer samples than --batch-size");
  at::manual_seed(config.seed);
  auto model = models::make_model(model_options(config), input_spec(dataset));
  auto parameters = model->parameters();
  const auto names = model->parameter_names();
  const std::size_t n = parameters.size();
  profile.model = model->name();
  profile.input_shape = {dataset.channels, dataset.height, dataset.width};
  profile.batch_size = config.batch_size;
  profile.repeats = repeats;
  profile.per_block_forward = model->supports_forward_gate();

  // Forward: the gate is called right before each block, with its parameter range.
  std::vector<std::pair<Clock::time_point, std::pair<int64_t, int64_t>>> gates;
  if (profile.per_block_forward) {
    model->set_forward_gate([&](int64_t first, int64_t end) { gates.push_back({Clock::now(), {first, end}}); });
  }
  // Backward: a hook on each parameter fires when its gradient has been computed.
  std::vector<Clock::time_point> ready(n);
  std::vector<unsigned> hooks;
  for (std::size_t i = 0; i < n; ++i) {
    hooks.push_back(parameters[i].register_hook([&ready, i](const at::Tensor& grad) {
      ready[i] = Clock::now();
      return grad;
    }));
  }
  std::vector<Sample> samples;
  int64_t offset = 0;
  for (int64_t k = 0; k < warmup + repeats; ++k) {
    Sample sample;
    sample.forward.assign(n, 0);
    sample.backward.assign(n, 0);
    if (offset + config.batch_size > dataset.train.size()) offset = 0;
    auto start = Clock::now();
    auto images = data::normalize(dataset.train.images.slice(0, offset, offset + config.batch_size), dataset);
    auto labels = dataset.train.labels.slice(0, offset, offset + config.batch_size).clone();
    offset += config.batch_size;
    sample.data = seconds_since(start);

    for (auto& p : parameters) p.mutable_grad() = at::Tensor();
    gates.clear();
    const auto forward_start = Clock::now();
    auto loss = prediction_loss(model->forward(images), labels);
    const auto forward_end = Clock::now();
    for (std::size_t g = 0; g < gates.size(); ++g) {
      const auto block_end = g + 1 < gates.size() ? gates[g + 1].first : forward_end;
      const double block_seconds = std::chrono::duration<double>(block_end - gates[g].first).count();
      const auto [first, end] = gates[g].second;
      int64_t block_parameters = 0;
      for (int64_t i = first; i < end; ++i) block_parameters += parameters[i].numel();
      for (int64_t i = first; i < end; ++i) {
        sample.forward[i] += block_seconds * static_cast<double>(parameters[i].numel()) / block_parameters;
      }
    }
    if (gates.empty()) {  // no gates: the whole forward shared by size
      const double total = std::chrono::duration<double>(forward_end - forward_start).count();
      const double all = static_cast<double>(models::count_parameters(*model));
      for (std::size_t i = 0; i < n; ++i) sample.forward[i] = total * static_cast<double>(parameters[i].numel()) / all;
    } else {
      // Time before the first gate (input reshaping) goes to the first block.
      sample.forward[0] += std::chrono::duration<double>(gates.front().first - forward_start).count();
    }
    const auto backward_start = Clock::now();
    loss.backward();
    sample.iteration = seconds_since(forward_start);
    // In the fixed backward order (last tensor first), each tensor is charged the time from when every later
    // tensor's gradient was ready to when its own was: a stable attribution even where two gradients of one layer
    // (weight and bias) come out of one autograd node in either order.
    auto latest = backward_start;
    for (std::size_t i = n; i-- > 0;) {
      sample.backward[i] = std::max(0.0, std::chrono::duration<double>(ready[i] - latest).count());
      latest = std::max(latest, ready[i]);
    }
    if (k >= warmup) samples.push_back(std::move(sample));
  }
  for (std::size_t i = 0; i < n; ++i) parameters[i].remove_hook(hooks[i]);
  model->set_forward_gate({});

  auto column = [&](auto pick) {
    std::vector<double> values;
    for (const auto& s : samples) values.push_back(pick(s));
    return spread_of(values);
  };
  profile.data = column([](const Sample& s) { return s.data; });
  profile.iteration = column([](const Sample& s) { return s.iteration; });
  for (std::size_t i = 0; i < n; ++i) {
    MeasuredTensor t;
    t.name = i < names.size() ? names[i] : "tensor" + std::to_string(i);
    t.parameters = parameters[i].numel();
    t.shape.assign(parameters[i].sizes().begin(), parameters[i].sizes().end());
    t.forward = column([i](const Sample& s) { return s.forward[i]; });
    t.backward = column([i](const Sample& s) { return s.backward[i]; });
    profile.tensors.push_back(t);
  }

  // The update: the run's --optimizer over one flat buffer of every parameter, as the algorithms run it.
  const int64_t numel = models::count_parameters(*model);
  auto flat_params = torch::randn({numel});
  auto flat_grads = torch::randn({numel});
  const auto optimizer = optim::make_worker_optimizer(config, numel);
  std::vector<double> updates;
  for (int64_t k = 0; k < warmup + repeats; ++k) {
    const auto start = Clock::now();
    optimizer->step(flat_params, flat_grads, 1e-6);
    if (k >= warmup) updates.push_back(seconds_since(start));
  }
  profile.update_seconds_per_byte = spread_of(updates).median / static_cast<double>(numel * 4);

  // PowerSGD's products: M Q on the model's largest matrix (shape[0] x the rest) at rank 4.
  at::Tensor largest;
  for (const auto& p : parameters) {
    if (p.dim() >= 2 && (!largest.defined() || p.numel() > largest.numel())) largest = p;
  }
  if (largest.defined()) {
    const auto matrix = torch::randn({largest.size(0), largest.numel() / largest.size(0)});
    const auto q = torch::randn({matrix.size(1), 4});
    std::vector<double> products;
    for (int64_t k = 0; k < warmup + repeats; ++k) {
      const auto start = Clock::now();
      auto product = torch::mm(matrix, q);
      if (k >= warmup) products.push_back(seconds_since(start));
    }
    const double median = spread_of(products).median;
    if (median > 0) profile.matmul_flops_per_second = 2.0 * static_cast<double>(matrix.numel()) * 4 / median;
  }
  return profile;
}

}  // namespace distsgd::train
