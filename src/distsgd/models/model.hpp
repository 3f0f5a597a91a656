// A trainable network, whatever it was built from: a C++ module of the registry or a TorchScript file.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace distsgd::models {

// What the dataset dictates about the model. Byte sequences (sequence = true, --dataset text) are shaped
// 1 x 1 x T (T bytes), with classes = 256 values to predict at every position.
struct InputSpec {
  int64_t channels = 1, height = 28, width = 28, classes = 10;
  bool sequence = false;
};

struct ModelOptions {
  std::string name = "lenet5";  // a registry name (see model_names()) or a path to a TorchScript .pt file
  int64_t mlp_width = 2048;     // hidden width of mlp
  int64_t mlp_hidden_layers = 2;
  bool batch_norm = true;  // vgg: with BatchNorm (torchvision's vgg*_bn); false gives the original vgg*
  int64_t gpt_layers = 2;  // gpt-mini: transformer blocks, attention heads, model width
  int64_t gpt_heads = 4;
  int64_t gpt_dim = 64;
};

// Called by a model's forward right before a block (a layer, a residual block, a stem) first uses parameters
// [first_parameter, end_parameter), indices into Model::parameters(). Lets communication that still writes later
// layers' parameters overlap the forward of earlier ones.
using ForwardGate = std::function<void(int64_t first_parameter, int64_t end_parameter)>;

class Model {
 public:
  virtual ~Model() = default;
  // Logits [B, classes] for a float batch [B, C, H, W]; a language model's [B, T, classes] for bytes [B, T].
  virtual at::Tensor forward(const at::Tensor& input) = 0;
  // Trainable tensors in registration order (the order of the flat buffer), with their dotted names.
  virtual std::vector<at::Tensor> parameters() = 0;
  virtual std::vector<std::string> parameter_names() = 0;
  // Non-trainable state that is part of the model (BatchNorm running statistics); may be empty. Not all float:
  // BatchNorm's num_batches_tracked is an int64 scalar.
  virtual std::vector<at::Tensor> buffers() = 0;
  virtual void set_training(bool training) = 0;
  virtual std::string name() const = 0;

  // Whether forward calls a gate set with set_forward_gate. Within one forward, calls come in increasing
  // parameter order, their ranges are disjoint and together cover every parameter.
  virtual bool supports_forward_gate() const { return false; }
  // Installs the gate (an empty function removes it). Ignored by models that do not support gates (TorchScript).
  virtual void set_forward_gate(ForwardGate gate) {}

  // One tensor per parameter, of its shape (views of the flat gradient buffer), into which layers that can
  // (DirectLinear) write their gradients during backward instead of handing autograd fresh ones to add up.
  // Undefined tensors, or an empty list, undo it. Ignored by models without such layers.
  virtual void set_gradient_destinations(const std::vector<at::Tensor>& destinations) {}
};

// Valid registry names.
std::vector<std::string> model_names();

// Builds a model with freshly initialized weights (drawn from torch's global generator: seed it first so
// that every worker starts from the same weights). Throws distsgd::Error listing the valid names for an
// unknown name, or naming the file when a TorchScript file is missing or unreadable.
std::unique_ptr<Model> make_model(const ModelOptions& options, const InputSpec& input);

// Number of trainable scalars.
int64_t count_parameters(Model& model);

}  // namespace distsgd::models
