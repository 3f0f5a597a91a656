#include "distsgd/optim/kernels.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

// DGC's top-k selection, shared by both builds of the loops (the scan for candidates is one of them).
namespace distsgd::optim::kernels::selection {
// NaN ranks above everything (a diverging run should send it, not hide it); the comparison is a strict weak order.
inline float magnitude(float x) { return std::isnan(x) ? std::numeric_limits<float>::infinity() : std::fabs(x); }

// A candidate with its magnitude beside it, so that ranking reads a small contiguous array and never x again.
struct Ranked {
  float magnitude;
  uint32_t index;
};
}  // namespace distsgd::optim::kernels::selection

// The loops, twice: for any x86-64 (two roundings where ATen's default kernels round twice) and for AVX2 + FMA
// (one fused multiply-add where ATen's vectorized kernels use vec::fmadd). Chosen once at run time.
namespace distsgd::optim::kernels::plain {
#define DISTSGD_KERNELS_FMA 0
#include "distsgd/optim/kernels_loops.inc"
#undef DISTSGD_KERNELS_FMA
}  // namespace distsgd::optim::kernels::plain

#if defined(__x86_64__) && defined(__GNUC__)
#define DISTSGD_KERNELS_HAVE_FMA 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace distsgd::optim::kernels::fused {
#define DISTSGD_KERNELS_FMA 1
#include "distsgd/optim/kernels_loops.inc"
#undef DISTSGD_KERNELS_FMA
}  // namespace distsgd::optim::kernels::fused
#pragma GCC pop_options
#else
#define DISTSGD_KERNELS_HAVE_FMA 0
#endif

namespace distsgd::optim::kernels {

namespace {

bool detect_fma() {
#if DISTSGD_KERNELS_HAVE_FMA
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

const bool kFma = detect_fma();

// Elements below which a kernel stays on the calling thread (256 KB of floats: a thread's start costs more).
constexpr int64_t kGrain = 1 << 16;

// Runs f(offset, count) over [0, n), split across the compute threads for large n (this file is compiled with
// -fopenmp, so at::parallel_for uses ATen's own OpenMP runtime and thread count).
template <class F>
void split(size_t n, const F& f) {
  if (n == 0) return;
  if (static_cast<int64_t>(n) <= kGrain || at::get_num_threads() <= 1) {
    f(size_t{0}, n);
    return;
  }
  at::parallel_for(0, static_cast<int64_t>(n), kGrain, [&](int64_t begin, int64_t end) {
    f(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  });
}

// Calls the FMA or the plain build of a loop with the same arguments.
#if DISTSGD_KERNELS_HAVE_FMA
#define DISTSGD_DISPATCH(name, ...) (kFma ? fused::name(__VA_ARGS__) : plain::name(__VA_ARGS__))
#else
#define DISTSGD_DISPATCH(name, ...) plain::name(__VA_ARGS__)
#endif

}  // namespace

bool uses_fma() { return kFma; }

void momentum_sgd(float* p, float* g, float* v, size_t n, const MomentumStep& step) {
  const plain::Scalars s{static_cast<float>(-step.lr), static_cast<float>(step.momentum),
                         static_cast<float>(step.weight_decay), static_cast<float>(step.divisor)};
  const bool divide = step.divisor != 1, decay = step.weight_decay != 0, momentum = step.momentum != 0;
  const int grads_after = static_cast<int>(step.grads_after);
  split(n, [&](size_t o, size_t m) {
#if DISTSGD_KERNELS_HAVE_FMA
    if (kFma) {
      const fused::Scalars fs{s.neg_lr, s.momentum, s.weight_decay, s.divisor};
      fused::momentum_sgd(p + o, g + o, momentum ? v + o : nullptr, m, fs, divide, decay, momentum, step.nesterov,
                          grads_after);
      return;
    }
#endif
    plain::momentum_sgd(p + o, g + o, momentum ? v + o : nullptr, m, s, divide, decay, momentum, step.nesterov,
                        grads_after);
  });
}

void momentum_direction(const float* p, float* g, float* v, size_t n, double momentum, double weight_decay) {
  const auto mu = static_cast<float>(momentum), wd = static_cast<float>(weight_decay);
  const bool decay = weight_decay != 0, with_momentum = momentum != 0;
  split(n, [&](size_t o, size_t m) {
    DISTSGD_DISPATCH(momentum_direction, p + o, g + o, with_momentum ? v + o : nullptr, m, mu, wd, decay,
                     with_momentum);
  });
}

void add_scaled(float* x, const float* y, size_t n, double alpha) {
  const auto a = static_cast<float>(alpha);
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(add_scaled, x + o, y + o, m, a); });
}

void axpby(float* x, const float* y, size_t n, double a, double b) {
  const auto fa = static_cast<float>(a), fb = static_cast<float>(b);
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(axpby, x + o, y + o, m, fa, fb); });
}

void average(float* x, const float* y, size_t n) {
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(average, x + o, y + o, m); });
}

void add_half_difference(float* x, const float* sent, const float* peer, size_t n) {
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(add_half_difference, x + o, sent + o, peer + o, m); });
}

void elastic(float* x_tilde, const float* x_worker, float* worker_out, size_t n, double alpha) {
  const auto a = static_cast<float>(alpha);
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(elastic, x_tilde + o, x_worker + o, worker_out + o, m, a); });
}

void accumulate(float* sum, const float* g, size_t n) {
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(accumulate, sum + o, g + o, m); });
}

void sum_rows(float* out, const float* const* rows, size_t count, size_t n) {
  split(n, [&](size_t o, size_t m) {
    std::vector<const float*> shifted(rows, rows + count);
    for (auto& r : shifted) r += o;
    DISTSGD_DISPATCH(sum_rows, out + o, shifted.data(), count, m);
  });
}

void scale(float* x, size_t n, double s) {
  const auto f = static_cast<float>(s);
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(scale, x + o, m, f); });
}

void divide(float* x, size_t n, double d) {
  const auto f = static_cast<float>(d);
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(divide, x + o, m, f); });
}

void zero(float* x, size_t n) {
  split(n, [&](size_t o, size_t m) { std::memset(x + o, 0, m * sizeof(float)); });
}

double dgc_decayed_norm_squared(const float* g, const float* p, size_t n, double weight_decay) {
  // One thread: a sum whose order does not depend on the thread count.
  const auto wd = static_cast<float>(weight_decay);
  return DISTSGD_DISPATCH(dgc_decayed_norm_squared, g, p, n, wd);
}

void dgc_accumulate(float* u, float* v, const float* g, const float* p, size_t n, double momentum, double weight_decay,
                    double clip) {
  const auto mu = static_cast<float>(momentum), wd = static_cast<float>(weight_decay), c = static_cast<float>(clip);
  const bool clipping = clip != 1;
  split(n, [&](size_t o, size_t m) {
    DISTSGD_DISPATCH(dgc_accumulate, u + o, v + o, g + o, p + o, m, mu, wd, clipping, c);
  });
}

void triad(float* a, const float* b, const float* c, size_t n, double s) {
  const auto f = static_cast<float>(s);
  split(n, [&](size_t o, size_t m) { DISTSGD_DISPATCH(triad, a + o, b + o, c + o, m, f); });
}

// --- top-k by magnitude -----------------------------------------------------------------------------------------

namespace {

using selection::magnitude;
using selection::Ranked;

// The k best of `candidates` (larger magnitude first, then lower index), written ascending by index.
void keep_best(std::vector<Ranked>& candidates, size_t k, int64_t* indices) {
  const auto better = [](const Ranked& a, const Ranked& b) {
    return a.magnitude > b.magnitude || (a.magnitude == b.magnitude && a.index < b.index);
  };
  const auto kth = candidates.begin() + static_cast<std::ptrdiff_t>(k);
  if (candidates.size() > k) std::nth_element(candidates.begin(), kth, candidates.end(), better);
  std::sort(candidates.begin(), kth, [](const Ranked& a, const Ranked& b) { return a.index < b.index; });
  for (size_t j = 0; j < k; ++j) indices[j] = candidates[j].index;
}

// Below this size, or above this density, ranking everything is as cheap as sampling.
constexpr size_t kMinSampled = 1 << 14;
constexpr size_t kMaxDensityDivisor = 16;  // k <= n / 16
constexpr size_t kMinSample = 512;
constexpr size_t kScanBlock = 32;  // collect_at_least's block (kernels_loops.inc): what it may push past its cap

}  // namespace

bool top_magnitudes(const float* x, size_t n, size_t k, int64_t* indices) {
  if (k == 0) return true;
  if (k >= n) {
    std::iota(indices, indices + n, int64_t{0});
    return true;
  }
  if (n > std::numeric_limits<uint32_t>::max()) throw std::invalid_argument("top_magnitudes: 2^32 entries or more");
  if (n >= kMinSampled && k <= n / kMaxDensityDivisor) {
    // A sample of 1/256 (0.4%): its r-th largest magnitude, r about twice the k-th's expected rank in it, is a
    // threshold that about 2k + 2048 entries reach, so that the k largest are very likely all among them. Taken as
    // runs of 64 consecutive entries spread evenly over x: one entry every 256 costs a cache miss each (at 64M
    // floats the sample took longer than the scan), a run of 64 is four lines the prefetcher streams.
    constexpr size_t kRun = 64;
    const size_t samples = std::min(n, std::max(kMinSample, n / 256)) / kRun * kRun;
    const size_t runs = samples / kRun, spacing = n / runs;
    std::vector<float> sample(samples);
    for (size_t j = 0; j < runs; ++j) {
      const float* run = x + j * spacing + (spacing - kRun) / 2;
      for (size_t i = 0; i < kRun; ++i) sample[j * kRun + i] = magnitude(run[i]);
    }
    const size_t expected = (k * samples + n - 1) / n;
    const size_t r = std::min(samples, 2 * expected + 8);
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(r - 1), sample.end(),
                     std::greater<float>());
    const float threshold = sample[r - 1];
    const size_t cap = 4 * k + 4096;
    std::vector<Ranked> candidates;
    candidates.reserve(cap + kScanBlock);
    // At least k reach the threshold: then the k largest all do, and the k largest candidates are the exact top k.
    if (DISTSGD_DISPATCH(collect_at_least, x, n, threshold, cap, candidates) && candidates.size() >= k) {
      keep_best(candidates, k, indices);
      return true;
    }
  }
  std::vector<Ranked> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = {magnitude(x[i]), static_cast<uint32_t>(i)};
  keep_best(all, k, indices);
  return false;
}

}  // namespace distsgd::optim::kernels
