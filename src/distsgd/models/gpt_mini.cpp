// gpt-mini: a small decoder-only transformer over bytes (Radford et al. 2019, GPT-2's layout; Karpathy's nanoGPT is
// the usual small rendition): token and learned position embeddings, N pre-norm blocks x += attn(ln1(x)),
// x += mlp(ln2(x)) of causal multi-head self-attention and a GELU MLP (4x wide), a final LayerNorm and a linear head
// over the 256 byte values. Weights drawn as GPT-2's: N(0, 0.02), the residual projections N(0, 0.02/sqrt(2N)),
// biases 0, LayerNorm 1 and 0.
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/models/builders.hpp"
#include "distsgd/models/module_model.hpp"

namespace distsgd::models {
namespace {

constexpr double kInitStd = 0.02;

void init_linear(torch::nn::Linear& linear, double stddev) {
  torch::NoGradGuard no_grad;
  linear->weight.normal_(0, stddev);
  linear->bias.zero_();
}

// Causal multi-head self-attention: position t attends to positions 0..t only.
class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(int64_t dim, int64_t heads, double projection_std)
      : heads_(heads), qkv_(dim, 3 * dim), projection_(dim, dim) {
    register_module("qkv", qkv_);
    register_module("projection", projection_);
    init_linear(qkv_, kInitStd);
    init_linear(projection_, projection_std);
  }

  // x [B, T, D] -> [B, T, D].
  at::Tensor forward(const at::Tensor& x) {
    const int64_t batch = x.size(0), time = x.size(1), dim = x.size(2), head_dim = dim / heads_;
    // [B, T, 3, H, hd] -> three [B, H, T, hd]
    auto qkv = qkv_->forward(x).view({batch, time, 3, heads_, head_dim}).permute({2, 0, 3, 1, 4});
    auto q = qkv[0], k = qkv[1], v = qkv[2];
    auto scores = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
    // Future positions (above the diagonal) get -inf before the softmax: weight 0.
    const auto future = torch::ones({time, time}, torch::kBool).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    auto y = torch::matmul(torch::softmax(scores, -1), v);  // [B, H, T, hd]
    return projection_->forward(y.transpose(1, 2).reshape({batch, time, dim}));
  }

 private:
  int64_t heads_;
  torch::nn::Linear qkv_, projection_;
};
TORCH_MODULE(CausalSelfAttention);

class TransformerBlockImpl : public torch::nn::Module {
 public:
  TransformerBlockImpl(int64_t dim, int64_t heads, double projection_std)
      : ln1_(torch::nn::LayerNormOptions({dim})),
        attention_(dim, heads, projection_std),
        ln2_(torch::nn::LayerNormOptions({dim})),
        expand_(dim, 4 * dim),
        contract_(4 * dim, dim) {
    register_module("ln1", ln1_);
    register_module("attention", attention_);
    register_module("ln2", ln2_);
    register_module("expand", expand_);
    register_module("contract", contract_);
    init_linear(expand_, kInitStd);
    init_linear(contract_, projection_std);
  }

  at::Tensor forward(at::Tensor x) {
    x = x + attention_->forward(ln1_->forward(x));
    return x + contract_->forward(torch::gelu(expand_->forward(ln2_->forward(x))));
  }

 private:
  torch::nn::LayerNorm ln1_;
  CausalSelfAttention attention_;
  torch::nn::LayerNorm ln2_;
  torch::nn::Linear expand_, contract_;
};
TORCH_MODULE(TransformerBlock);

class GptMiniImpl : public torch::nn::Module {
 public:
  GptMiniImpl(int64_t vocabulary, int64_t context, int64_t layers, int64_t heads, int64_t dim)
      : context_(context),
        tokens_(vocabulary, dim),
        positions_(context, dim),
        ln_final_(torch::nn::LayerNormOptions({dim})),
        head_(dim, vocabulary) {
    register_module("tokens", tokens_);
    register_module("positions", positions_);
    const double projection_std = kInitStd / std::sqrt(2.0 * static_cast<double>(layers));
    for (int64_t i = 0; i < layers; ++i) {
      blocks_.push_back(register_module("block" + std::to_string(i), TransformerBlock(dim, heads, projection_std)));
    }
    register_module("ln_final", ln_final_);
    register_module("head", head_);
    torch::NoGradGuard no_grad;
    tokens_->weight.normal_(0, kInitStd);
    positions_->weight.normal_(0, kInitStd);
    init_linear(head_, kInitStd);
  }

  // Bytes [B, T] (or [B, 1, 1, T], as the operation counter's batch of zeros is shaped; any dtype holding byte
  // values) -> logits [B, T, vocabulary]; position t sees bytes 0..t only.
  at::Tensor forward(const at::Tensor& input) {
    const auto bytes = input.reshape({input.size(0), -1}).to(torch::kLong);
    const int64_t time = bytes.size(1);
    require(time <= context_, "gpt-mini: a sequence of " + std::to_string(time) + " bytes is longer than its context " +
                                  std::to_string(context_));
    forward_gate(*tokens_);
    auto x = tokens_->forward(bytes);
    forward_gate(*positions_);
    x = x + positions_->weight.narrow(0, 0, time);
    for (auto& block : blocks_) {
      forward_gate(*block);
      x = block->forward(x);
    }
    forward_gate(*ln_final_);
    x = ln_final_->forward(x);
    forward_gate(*head_);
    return head_->forward(x);
  }

  BlockGate forward_gate;

 private:
  int64_t context_;
  torch::nn::Embedding tokens_, positions_;
  std::vector<TransformerBlock> blocks_;
  torch::nn::LayerNorm ln_final_;
  torch::nn::Linear head_;
};
TORCH_MODULE(GptMini);

}  // namespace

std::unique_ptr<Model> make_gpt_mini(const ModelOptions& options, const InputSpec& input) {
  require(input.sequence, "gpt-mini is a language model over bytes: train it with --dataset text");
  require(options.gpt_layers >= 1, "--gpt-layers must be at least 1 (got " + std::to_string(options.gpt_layers) + ")");
  require(options.gpt_heads >= 1 && options.gpt_dim >= 1 && options.gpt_dim % options.gpt_heads == 0,
          "--gpt-dim (" + std::to_string(options.gpt_dim) + ") must be a positive multiple of --gpt-heads (" +
              std::to_string(options.gpt_heads) + ")");
  const int64_t context = input.width;  // the dataset's sequence length (--context)
  return std::make_unique<ModuleModel<GptMini>>(
      GptMini(input.classes, context, options.gpt_layers, options.gpt_heads, options.gpt_dim), "gpt-mini");
}

}  // namespace distsgd::models
