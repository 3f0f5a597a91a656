// The cost rules, per operation of the forward pass (FLOPs count a multiply-add as 2; bytes are 4 per fp32
// element, every tensor read or written once unless said otherwise):
// - convolution: 2 * output elements * (input channels / groups * kernel area) multiply-adds, + 1 per output element
//   for the bias; linear, addmm, mm, matmul: 2 * output elements * the inner dimension (+ the bias);
// - normalization (batch, layer, instance, group norm): 5 FLOPs per element (mean, variance, scale, shift); the input
//   is read twice (statistics, then normalizing: training mode's two passes) and the output written once;
// - pooling: output elements * kernel area FLOPs (adaptive pooling and mean: input elements);
// - views (flatten, view, reshape, t, transpose, ...): nothing;
// - anything else (activations, residual adds, dropout, concatenation): 1 FLOP per output element, every input and
//   output moved once (operations without a rule of their own are listed in CountedModel::generic_ops).
// Parameters and buffers an operation reads count once per batch (fixed_bytes), everything else per sample.
#include "distsgd/models/operation_costs.hpp"

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "distsgd/core/error.hpp"

namespace distsgd::models {
namespace {

constexpr double kBytesPerElement = 4;
constexpr double kNormalizationFlopsPerElement = 5;

enum class Role { kActivation, kParameter, kBuffer };

struct TensorSeen {
  std::vector<int64_t> sizes;
  double numel = 0;
  Role role = Role::kActivation;
  int64_t parameter = -1;  // index into Model::parameters() when role is kParameter
  bool requires_grad = false;
};

// One top-level operation as its start callback saw it.
struct OperationSeen {
  std::string name;
  std::vector<TensorSeen> tensors;      // tensor inputs, in argument order
  std::vector<int64_t> first_int_list;  // the first integer-list argument (a pooling's kernel size)
};

struct MemoryRange {
  uintptr_t begin = 0, end = 0;
  int64_t index = 0;
};

std::vector<MemoryRange> ranges_of(const std::vector<at::Tensor>& tensors) {
  std::vector<MemoryRange> ranges;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto begin = reinterpret_cast<uintptr_t>(tensors[i].data_ptr());
    ranges.push_back({begin, begin + static_cast<uintptr_t>(tensors[i].nbytes()), static_cast<int64_t>(i)});
  }
  return ranges;
}

const MemoryRange* find_range(const std::vector<MemoryRange>& ranges, const at::Tensor& tensor) {
  if (!tensor.has_storage() || tensor.numel() == 0) return nullptr;
  const auto at = reinterpret_cast<uintptr_t>(tensor.data_ptr());
  for (const auto& r : ranges) {
    if (at >= r.begin && at < r.end) return &r;
  }
  return nullptr;
}

bool is_view(const std::string& op) {
  static const std::set<std::string> views = {
      "aten::flatten",    "aten::view",         "aten::reshape",   "aten::_reshape_alias", "aten::t",
      "aten::transpose",  "aten::permute",      "aten::expand",    "aten::squeeze",        "aten::unsqueeze",
      "aten::as_strided", "aten::slice",        "aten::select",    "aten::detach",         "aten::alias",
      "aten::contiguous", "aten::_unsafe_view", "aten::unflatten", "aten::numpy_T"};
  return views.count(op) > 0;
}

bool is_convolution(const std::string& op) {
  static const std::set<std::string> convolutions = {"aten::conv1d", "aten::conv2d", "aten::conv3d",
                                                     "aten::convolution", "aten::_convolution"};
  return convolutions.count(op) > 0;
}

bool is_matrix_product(const std::string& op) {
  static const std::set<std::string> products = {"aten::linear", "aten::addmm", "aten::mm", "aten::matmul",
                                                 "aten::bmm"};
  return products.count(op) > 0;
}

bool is_normalization(const std::string& op) {
  static const std::set<std::string> norms = {"aten::batch_norm", "aten::layer_norm", "aten::instance_norm",
                                              "aten::group_norm", "aten::native_batch_norm"};
  return norms.count(op) > 0;
}

bool is_pooling(const std::string& op) {
  static const std::set<std::string> pools = {"aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d",
                                              "aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d"};
  return pools.count(op) > 0;
}

bool is_reduction_pooling(const std::string& op) {
  static const std::set<std::string> pools = {"aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d",
                                              "aten::adaptive_avg_pool3d", "aten::adaptive_max_pool2d", "aten::mean"};
  return pools.count(op) > 0;
}

bool is_known_elementwise(const std::string& op) {
  static const std::set<std::string> elementwise = {
      "aten::relu", "aten::relu_",      "aten::clamp_min", "aten::clamp_min_", "aten::threshold", "aten::sigmoid",
      "aten::tanh", "aten::gelu",       "aten::add",       "aten::add_",       "aten::mul",       "aten::mul_",
      "aten::sub",  "aten::div",        "aten::dropout",   "aten::dropout_",   "aten::hardtanh",  "aten::hardtanh_",
      "aten::cat",  "aten::leaky_relu", "aten::softmax",   "aten::log_softmax"};
  return elementwise.count(op) > 0;
}

// Observes the top-level operations of one forward and turns each into a cost.
class Counter {
 public:
  Counter(Model& model, CountedModel& result)
      : parameters_(model.parameters()),
        parameter_ranges_(ranges_of(parameters_)),
        buffer_ranges_(ranges_of(model.buffers())),
        result_(result) {
    const auto names = model.parameter_names();
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      result_.tensors.push_back(
          {i < names.size() ? names[i] : "tensor" + std::to_string(i), parameters_[i].numel(), {}});
    }
  }

  void start(const at::RecordFunction& fn) {
    if (depth_++ > 0) return;  // inside another operation: its cost is the outer one's
    OperationSeen op;
    op.name = fn.name();
    for (const auto& value : fn.inputs()) {
      if (value.isTensor()) {
        add_tensor(op, value.toTensor());
      } else if (value.isTensorList()) {
        for (const auto& t : value.toTensorVector()) add_tensor(op, t);
      } else if (value.isIntList() && op.first_int_list.empty()) {
        op.first_int_list = value.toIntVector();
      }
    }
    current_ = std::move(op);
  }

  void end(const at::RecordFunction& fn) {
    if (--depth_ > 0) return;
    double output_numel = 0;
    for (const auto& value : fn.outputs()) {
      if (value.isTensor() && value.toTensor().defined()) output_numel += static_cast<double>(value.toTensor().numel());
    }
    charge(cost_of(current_, output_numel));
  }

  // Operations seen before the first one with parameters go to the first tensor.
  void finish() {
    require(!result_.tensors.empty(), result_.model + ": the model has no parameters to charge operations to");
    auto& first = result_.tensors.front().operations;
    first.insert(first.begin(), pending_.begin(), pending_.end());
    pending_.clear();
  }

 private:
  void add_tensor(OperationSeen& op, const at::Tensor& tensor) {
    if (!tensor.defined()) return;
    TensorSeen seen;
    seen.sizes = tensor.sizes().vec();
    seen.numel = static_cast<double>(tensor.numel());
    seen.requires_grad = tensor.requires_grad();
    if (const auto* r = find_range(parameter_ranges_, tensor)) {
      seen.role = Role::kParameter;
      seen.parameter = r->index;
    } else if (find_range(buffer_ranges_, tensor)) {
      seen.role = Role::kBuffer;
    }
    op.tensors.push_back(std::move(seen));
  }

  CountedOperation cost_of(const OperationSeen& op, double output_numel) {
    CountedOperation c;
    c.op = op.name;
    double activation_in = 0;
    bool activation_needs_gradient = false;
    for (const auto& t : op.tensors) {
      if (t.role == Role::kActivation) {
        activation_in += t.numel;
        activation_needs_gradient = activation_needs_gradient || t.requires_grad;
      } else {
        c.fixed_bytes += t.numel * kBytesPerElement;
        c.has_parameters = c.has_parameters || t.role == Role::kParameter;
      }
    }
    c.input_needs_gradient = activation_needs_gradient;
    if (is_view(op.name)) {
      c.fixed_bytes = 0;
      return c;
    }
    c.bytes_per_sample = (activation_in + output_numel) * kBytesPerElement;
    const TensorSeen* input = op.tensors.empty() ? nullptr : &op.tensors.front();
    if (is_convolution(op.name)) {
      const TensorSeen* weight = op.tensors.size() > 1 ? &op.tensors[1] : nullptr;
      require(weight && weight->sizes.size() >= 2, op.name + ": expected (input, weight, ...)");
      const double multiply_adds = output_numel * weight->numel / static_cast<double>(weight->sizes[0]);
      const bool bias = op.tensors.size() > 2;
      c.flops_per_sample = 2 * multiply_adds + (bias ? output_numel : 0);
      result_.multiply_adds_per_sample += multiply_adds;
    } else if (is_matrix_product(op.name)) {
      // linear(input, weight[out, in], bias): inner = in; addmm(bias, mat1[M, K], mat2[K, N]): inner = K;
      // mm / matmul / bmm(a[..., K], b): inner = K.
      const bool addmm = op.name == "aten::addmm";
      const TensorSeen* left = addmm ? (op.tensors.size() > 1 ? &op.tensors[1] : nullptr) : input;
      require(left && !left->sizes.empty(), op.name + ": expected a matrix input");
      const double inner = static_cast<double>(left->sizes.back());
      const double multiply_adds = output_numel * inner;
      const bool bias = addmm || (op.name == "aten::linear" && op.tensors.size() > 2);
      c.flops_per_sample = 2 * multiply_adds + (bias ? output_numel : 0);
      result_.multiply_adds_per_sample += multiply_adds;
    } else if (is_normalization(op.name)) {
      c.flops_per_sample = kNormalizationFlopsPerElement * output_numel;
      c.bytes_per_sample += activation_in * kBytesPerElement;  // the statistics pass reads the input once more
    } else if (is_pooling(op.name)) {
      require(input && input->sizes.size() >= 3 && !op.first_int_list.empty(),
              op.name + ": expected (input, kernel_size, ...)");
      const std::size_t spatial = input->sizes.size() - 2;
      double area = 1;
      for (std::size_t d = 0; d < spatial; ++d) {
        area *= static_cast<double>(op.first_int_list[std::min(d, op.first_int_list.size() - 1)]);
      }
      c.flops_per_sample = output_numel * area;
    } else if (is_reduction_pooling(op.name)) {
      c.flops_per_sample = activation_in;
    } else {
      c.flops_per_sample = output_numel;
      if (!is_known_elementwise(op.name) &&
          std::find(result_.generic_ops.begin(), result_.generic_ops.end(), op.name) == result_.generic_ops.end()) {
        result_.generic_ops.push_back(op.name);
      }
    }
    // The counting batch has one sample: every activation figure is per sample.
    return c;
  }

  // An operation with parameters is shared among the tensors it reads by their sizes and becomes the owner of the
  // parameter-free operations after it.
  void charge(const CountedOperation& c) {
    if (c.flops_per_sample == 0 && c.bytes_per_sample == 0 && c.fixed_bytes == 0) return;  // a view
    std::vector<int64_t> read;
    for (const auto& t : current_.tensors) {
      if (t.role == Role::kParameter && std::find(read.begin(), read.end(), t.parameter) == read.end()) {
        read.push_back(t.parameter);
      }
    }
    if (!read.empty()) {
      owners_ = read;
    }
    if (owners_.empty()) {
      pending_.push_back(c);
      return;
    }
    double total = 0;
    for (const int64_t i : owners_) total += static_cast<double>(parameters_[i].numel());
    for (const int64_t i : owners_) {
      const double share = static_cast<double>(parameters_[i].numel()) / total;
      CountedOperation part = c;
      part.flops_per_sample *= share;
      part.bytes_per_sample *= share;
      part.fixed_bytes *= share;
      part.share *= share;
      result_.tensors[i].operations.push_back(part);
    }
  }

  std::vector<at::Tensor> parameters_;
  std::vector<MemoryRange> parameter_ranges_;
  std::vector<MemoryRange> buffer_ranges_;
  CountedModel& result_;
  int depth_ = 0;
  OperationSeen current_;
  std::vector<int64_t> owners_;            // the tensors of the last operation with parameters
  std::vector<CountedOperation> pending_;  // before any operation with parameters
};

// RecordFunction takes plain function pointers: the counter of this thread's forward.
thread_local Counter* active_counter = nullptr;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (active_counter) active_counter->start(fn);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (active_counter) active_counter->end(fn);
}

// Installs the callbacks for one scope and removes them, even when the forward throws.
class Observation {
 public:
  explicit Observation(Counter& counter) {
    active_counter = &counter;
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(on_start, on_end)
                                             .needsInputs(true)
                                             .needsOutputs(true)
                                             .scopes({at::RecordScope::FUNCTION}));
  }
  ~Observation() {
    at::removeCallback(handle_);
    active_counter = nullptr;
  }
  Observation(const Observation&) = delete;
  Observation& operator=(const Observation&) = delete;

 private:
  at::CallbackHandle handle_;
};

}  // namespace

CountedModel count_operations(Model& model, const InputSpec& input) {
#ifndef NDEBUG
  // RecordFunction::inputs() asserts in builds without NDEBUG (its validity flag exists only there, and the
  // Release libtorch never sets it).
  throw Error(
      "counting FLOPs reads operator inputs, which libtorch allows only in builds with NDEBUG (Release or "
      "RelWithDebInfo); rebuild distsgd with -DCMAKE_BUILD_TYPE=Release");
#endif
  CountedModel result;
  result.model = model.name();
  result.input_shape = {input.channels, input.height, input.width};
  Counter counter(model, result);
  model.set_training(false);  // batch norm at batch 1 cannot compute training statistics of a 1x1 map
  const auto batch = torch::zeros({1, input.channels, input.height, input.width});
  {
    at::RecordFunctionGuard enabled(true);
    Observation observation(counter);
    model.forward(batch);
  }
  model.set_training(true);
  counter.finish();
  return result;
}

}  // namespace distsgd::models
