// Fused one-pass kernels over flat float buffers: every update, mix and merge of the engine reads and writes each
// buffer once instead of once per ATen call of a chain (issue 15: the momentum step was 4 passes, 7 reads and 4
// writes of the whole model; fused it is 3 reads and 2 writes).
//
// Each kernel computes, element by element, exactly what the ATen chain named beside it computes in float32, in the
// same order of operations: ATen's add with alpha is one fused multiply-add on CPUs with FMA (its AVX2/AVX512
// kernels), so these kernels use FMA there too (chosen at run time, as ATen does) and two roundings elsewhere.
// Scalars are rounded to float first, as ATen does. Buffers of a call must not overlap unless said otherwise.
// Large buffers are split across the process's compute threads (at::get_num_threads()); results do not depend on
// the split.
#pragma once
#include <cstddef>
#include <cstdint>

namespace distsgd::optim::kernels {

// What a momentum step leaves in the gradient buffer.
enum class GradsAfter {
  kUnchanged,  // read only: 3 reads and 2 writes per element
  kDecayed,    // g / divisor + wd * p, the direction before momentum (ALADDIN sends it)
  kZero,       // reset for the next accumulation (ALADDIN's server)
};

struct MomentumStep {
  double lr = 0;
  double momentum = 0;  // 0: plain SGD, the velocity is neither read nor written
  double weight_decay = 0;
  bool nesterov = false;
  double divisor = 1;  // the gradient is divided by it first (a sum of n gradients -> their mean); 1: not
  GradsAfter grads_after = GradsAfter::kUnchanged;
};

// torch.optim.SGD's step (dampening 0), ATen chain: g.div_(divisor); g.add_(p, wd); v.mul_(mu).add_(g);
// [nesterov: d = g.add(v, mu)]; p.add_(d or v, -lr). `v` may be null when momentum is 0.
void momentum_sgd(float* p, float* g, float* v, size_t n, const MomentumStep& step);

struct AdamWStep {
  double lr = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0;  // decoupled: p is scaled by 1 - lr * wd before the step
  int64_t step = 1;         // this step's number t >= 1, for the bias corrections 1 - beta^t
  double divisor = 1;       // the gradient is divided by it first (a sum of n gradients -> their mean); 1: not
};

// torch::optim::AdamW's step (libtorch 1.13, amsgrad false), ATen chain: [g = g.div(divisor)];
// p.mul_(1 - lr*wd) (when wd != 0); m.mul_(b1).add_(g, 1 - b1); v.mul_(b2).addcmul_(g, g, 1 - b2);
// d = (v.sqrt() / sqrt(1 - b2^t)).add_(eps); p.addcdiv_(m, d, -lr / (1 - b1^t)). The scalars are computed in double
// as there and rounded to float; g is read only. Replaces the chain's 9 passes over memory (3 of them through
// temporaries) with one: 4 reads and 3 writes per element.
void adamw(float* p, const float* g, float* m, float* v, size_t n, const AdamWStep& step);

// The direction without applying it: g.add_(p, wd) (written back); v.mul_(mu).add_(g) when momentum != 0.
void momentum_direction(const float* p, float* g, float* v, size_t n, double momentum, double weight_decay);

// x.add_(y, alpha): x += alpha * y (plain SGD with alpha = -lr).
void add_scaled(float* x, const float* y, size_t n, double alpha);

// x.mul_(a).add_(y, b): x = a x + b y (ALADDIN's and push-sum's mixing).
void axpby(float* x, const float* y, size_t n, double a, double b);

// x.add_(y).mul_(0.5): pairwise averaging (gossip pull, AD-PSGD's passive side). x and y may be the same.
void average(float* x, const float* y, size_t n);

// x.add_(peer - sent, 0.5): AD-PSGD's active side.
void add_half_difference(float* x, const float* sent, const float* peer, size_t n);

// EASGD: e = (x_worker - x_tilde) * alpha; x_tilde += e; worker_out = x_worker - e. worker_out may be x_worker.
void elastic(float* x_tilde, const float* x_worker, float* worker_out, size_t n, double alpha);

// sum.add_(g).
void accumulate(float* sum, const float* g, size_t n);

// out = ((rows[0] + rows[1]) + rows[2]) + ...: a sum in a fixed order (rank order), count >= 1.
void sum_rows(float* out, const float* const* rows, size_t count, size_t n);

// x.mul_(s), x.div_(d), x.zero_().
void scale(float* x, size_t n, double s);
void divide(float* x, size_t n, double d);
void zero(float* x, size_t n);

// Deep Gradient Compression's accumulation: d = g + wd*p (g.add(p, wd)), the sum of d*d in double (for clipping).
double dgc_decayed_norm_squared(const float* g, const float* p, size_t n, double weight_decay);
// d = g.add(p, wd) [.mul_(clip) when clip != 1]; u.mul_(mu).add_(d); v.add_(u).
void dgc_accumulate(float* u, float* v, const float* g, const float* p, size_t n, double momentum, double weight_decay,
                    double clip);

// The indices (ascending) of the k entries of largest magnitude of x[0, n), ties to the lower index, NaN as the
// largest. Exact: a threshold is estimated from a sample of 1/256 of x in runs of 64 (Lin et al.: 0.1-1%),
// the entries at or above it are collected in one pass and the k largest of them kept; when the sample misjudged
// (fewer than k at or above it, or too many) every entry is ranked instead. n < 2^32. Writes k indices; returns whether
// the sampled threshold sufficed (for tests and statistics).
bool top_magnitudes(const float* x, size_t n, size_t k, int64_t* indices);

// a = b + s * c, the STREAM triad (b.add(c, s)): the memory-speed yardstick of bench/kernels_bench.cpp.
void triad(float* a, const float* b, const float* c, size_t n, double s);

// Whether the kernels use fused multiply-adds on this CPU (as ATen's vectorized kernels do).
bool uses_fma();

}  // namespace distsgd::optim::kernels
