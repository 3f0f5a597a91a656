#include "distsgd/train/model_cost.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/data/text.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/models/operation_costs.hpp"
#include "distsgd/train/process.hpp"

namespace distsgd::train {

sim::ModelCost count_model_cost(const TrainConfig& config, const std::vector<int64_t>& input_shape, int64_t classes) {
  require(input_shape.size() == 3, "an input shape is C, H, W");
  // A language model's sample is one sequence of --context bytes, whatever the image shape says.
  const bool text = config.dataset == "text";
  const models::InputSpec input = text ? models::InputSpec{1, 1, config.context, data::kByteValues, true}
                                       : models::InputSpec{input_shape[0], input_shape[1], input_shape[2], classes};
  auto model = models::make_model(train::model_options(config), input);
  const auto counted = models::count_operations(*model, input);
  sim::ModelCost cost;
  cost.model = counted.model;
  cost.input_shape = counted.input_shape;
  cost.generic_ops = counted.generic_ops;
  const auto parameters = model->parameters();
  for (const auto& t : counted.tensors) {
    sim::TensorCost tensor{t.name, t.parameters, {}, {}};
    const auto i = cost.tensors.size();
    if (i < parameters.size() && parameters[i].numel() == t.parameters) {
      tensor.shape.assign(parameters[i].sizes().begin(), parameters[i].sizes().end());
    }
    for (const auto& op : t.operations) {
      tensor.operations.push_back({op.op, op.flops_per_sample, op.bytes_per_sample, op.fixed_bytes, op.has_parameters,
                                   op.input_needs_gradient, op.share});
    }
    cost.tensors.push_back(std::move(tensor));
  }
  return cost;
}

}  // namespace distsgd::train
