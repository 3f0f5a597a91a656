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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

// DGC's top-k selection, shared by both builds of the loops (the scan for candidates is one of them).
namespace distsgd::optim::kernels::selection {
// NaN ranks above everything (a diverging run should send it, not hide it); the comparison is a strict weak order.
inline float magnitude(float x) { return std::isnan(x) ? std::numeric_limits<float>::infinity() : std::fabs(x); }

// The scan's block: the cap is checked once per block, so the output may run this far past it.
constexpr size_t kSelectionBlock = 8192;

// For each 8-bit mask, the lanes whose bit is set, lowest first, then zeros: the AVX2 scan's left-pack.
struct LeftPack {
  alignas(32) uint32_t lanes[256][8];
};
constexpr LeftPack make_left_pack() {
  LeftPack t{};
  for (uint32_t mask = 0; mask < 256; ++mask) {
    uint32_t n = 0;
    for (uint32_t lane = 0; lane < 8; ++lane) {
      if (mask >> lane & 1) t.lanes[mask][n++] = lane;
    }
  }
  return t;
}
inline constexpr LeftPack kLeftPack = make_left_pack();
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
// The same target for every function of the second copy: GCC's pragma, or clang's attribute on each function.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace distsgd::optim::kernels::fused {
#define DISTSGD_KERNELS_FMA 1
#include "distsgd/optim/kernels_loops.inc"
#undef DISTSGD_KERNELS_FMA
}  // namespace distsgd::optim::kernels::fused
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
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

#if !defined(_OPENMP)
// libgomp's entry points (ATen's OpenMP runtime), declared here: clang compiles this file with -fopenmp-simd only.
extern "C" {
void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
int omp_get_num_threads();
int omp_get_thread_num();
}
#endif

// Runs f(offset, count) over [0, n), split across the compute threads for large n, on ATen's own OpenMP runtime
// (libgomp) and thread count. GCC compiles this file with -fopenmp, so at::parallel_for does it; clang's
// `omp parallel` would call LLVM's runtime instead, so there the region starts through libgomp's GOMP_parallel (what
// GCC emits for it) and is split as at::parallel_for splits it.
template <class F>
void split(size_t n, const F& f) {
  if (n == 0) return;
  if (static_cast<int64_t>(n) <= kGrain || at::get_num_threads() <= 1) {
    f(size_t{0}, n);
    return;
  }
#if defined(_OPENMP)
  at::parallel_for(0, static_cast<int64_t>(n), kGrain, [&](int64_t begin, int64_t end) {
    f(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  });
#else
  struct Region {
    const F* f;
    int64_t n;
  } region{&f, static_cast<int64_t>(n)};
  GOMP_parallel(
      [](void* data) {
        const auto& r = *static_cast<const Region*>(data);
        const int64_t threads = std::min<int64_t>(omp_get_num_threads(), (r.n + kGrain - 1) / kGrain);
        const int64_t chunk = (r.n + threads - 1) / threads;
        const int64_t begin = omp_get_thread_num() * chunk;
        if (begin < r.n) (*r.f)(static_cast<size_t>(begin), static_cast<size_t>(std::min(chunk, r.n - begin)));
      },
      &region, 0, 0);
#endif
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

void adamw(float* p, const float* g, float* m, float* v, size_t n, const AdamWStep& step) {
  // The scalars as torch::optim::AdamW computes them, in double, then rounded to float as ATen does.
  const auto t = static_cast<double>(step.step);
  const double bias_correction1 = 1 - std::pow(step.beta1, t), bias_correction2 = 1 - std::pow(step.beta2, t);
  const plain::AdamWScalars s{static_cast<float>(1 - step.lr * step.weight_decay),
                              static_cast<float>(step.beta1),
                              static_cast<float>(1 - step.beta1),
                              static_cast<float>(step.beta2),
                              static_cast<float>(1 - step.beta2),
                              static_cast<float>(std::sqrt(bias_correction2)),
                              static_cast<float>(step.eps),
                              static_cast<float>(-(step.lr / bias_correction1)),
                              static_cast<float>(step.divisor)};
  const bool divide = step.divisor != 1, decay = step.weight_decay != 0;
  split(n, [&](size_t o, size_t k) {
#if DISTSGD_KERNELS_HAVE_FMA
    if (kFma) {
      const fused::AdamWScalars fs{s.decay,      s.beta1, s.one_minus_beta1, s.beta2,  s.one_minus_beta2,
                                   s.sqrt_bias2, s.eps,   s.neg_step_size,   s.divisor};
      fused::adamw(p + o, g + o, m + o, v + o, k, fs, divide, decay);
      return;
    }
#endif
    plain::adamw(p + o, g + o, m + o, v + o, k, s, divide, decay);
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

inline uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The k-th largest (1 <= k <= count) of v[0, count), which it reorders: non-negative floats without NaN (+inf
// allowed), whose bits order as their values do. A radix selection: count the entries per digit, find the digit of
// the k-th, keep only the entries with it, again on the next digit until few are left. The digit is the 11 bits
// from the highest one in which the entries differ, so that a narrow range (the candidates sit just above the
// threshold) splits as finely as a wide one; at most 3 rounds of about 2 cycles per entry each, where nth_element
// mispredicts most of its comparisons (2 ms for the 256K sample of 64M floats).
float kth_largest(float* v, size_t count, size_t k) {
  constexpr size_t kSmall = 256;  // nth_element is as fast below this
  constexpr int kDigitBits = 11;
  constexpr uint32_t kDigits = (1u << kDigitBits) - 1;
  size_t m = count;
  while (m > kSmall) {
    uint32_t lo = std::numeric_limits<uint32_t>::max(), hi = 0;
    for (size_t j = 0; j < m; ++j) {
      lo = std::min(lo, bits_of(v[j]));
      hi = std::max(hi, bits_of(v[j]));
    }
    if (lo == hi) return v[0];
    const int shift = std::max(0, 31 - __builtin_clz(lo ^ hi) - (kDigitBits - 1));
    // Four tables, so that runs of equal digits do not wait on one counter.
    uint32_t counts[4][kDigits + 1] = {};
    size_t j = 0;
    for (; j + 4 <= m; j += 4) {
      for (size_t t = 0; t < 4; ++t) ++counts[t][bits_of(v[j + t]) >> shift & kDigits];
    }
    for (; j < m; ++j) ++counts[0][bits_of(v[j]) >> shift & kDigits];
    uint32_t digit = kDigits;
    for (size_t above = 0;; --digit) {
      const size_t here = size_t{counts[0][digit]} + counts[1][digit] + counts[2][digit] + counts[3][digit];
      if (above + here >= k) {
        k -= above;
        break;
      }
      above += here;
    }
    size_t kept = 0;
    for (j = 0; j < m; ++j) {
      v[kept] = v[j];
      kept += (bits_of(v[j]) >> shift & kDigits) == digit;
    }
    m = kept;
  }
  std::nth_element(v, v + (k - 1), v + m, std::greater<float>());
  return v[k - 1];
}

// Arrays reused from call to call (DGC selects per layer and step): fresh ones cost a page fault per 4 KB, about 5%
// of a call at 64M floats. One set per thread, each array as large as the largest call asked for.
struct Scratch {
  std::vector<float> sample, mags, ranked;
  std::vector<uint32_t> indices;
};
thread_local Scratch scratch;

template <class T>
T* at_least(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// The k best of `count` candidates (larger magnitude first, then lower index), written ascending by index; mags[j]
// is magnitude() of entry indices[j] (indices null: of entry j), indices ascending. With the k-th largest magnitude
// known, one pass in index order keeps those above it and, of those equal to it, the lowest-indexed ones: the same
// set as ranking by (magnitude, index), without sorting the k selected.
void keep_best(const float* mags, const uint32_t* indices, size_t count, size_t k, int64_t* out) {
  const auto index = [&](size_t j) { return indices ? int64_t{indices[j]} : static_cast<int64_t>(j); };
  if (count == k) {
    for (size_t j = 0; j < k; ++j) out[j] = index(j);
    return;
  }
  float* ranked = at_least(scratch.ranked, count);
  std::copy(mags, mags + count, ranked);
  const float kth = kth_largest(ranked, count, k);
  size_t above = 0;
  for (size_t j = 0; j < count; ++j) above += mags[j] > kth;
  // Of the entries equal to the k-th, the first k - above in index order are kept: up to the one at last_tie.
  size_t last_tie = 0;
  for (size_t j = 0, ties = k - above; ties > 0; ++j) {
    if (mags[j] == kth) {
      last_tie = j;
      --ties;
    }
  }
  // Branch-free on the bits (they order as the magnitudes do): about half the candidates are kept, so a branch on
  // each would be mispredicted half the time.
  const uint32_t kth_bits = bits_of(kth);
  size_t written = 0;
  for (size_t j = 0; j < count && written < k; ++j) {
    const uint32_t b = bits_of(mags[j]);
    out[written] = index(j);
    written += static_cast<size_t>(b > kth_bits) | (static_cast<size_t>(b == kth_bits) & (j <= last_tie));
  }
}

// Below this size, or above this density, ranking everything is as cheap as sampling.
constexpr size_t kMinSampled = 1 << 14;
constexpr size_t kMaxDensityDivisor = 16;  // k <= n / 16
constexpr size_t kMinSample = 512;

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
    float* sample = at_least(scratch.sample, samples);
    for (size_t j = 0; j < runs; ++j) {
      const float* run = x + j * spacing + (spacing - kRun) / 2;
      for (size_t i = 0; i < kRun; ++i) sample[j * kRun + i] = magnitude(run[i]);
    }
    const size_t expected = (k * samples + n - 1) / n;
    const size_t r = std::min(samples, 2 * expected + 8);
    const float threshold = kth_largest(sample, samples, r);
    const size_t cap = 4 * k + 4096;
    float* mags = at_least(scratch.mags, cap + selection::kSelectionBlock);
    uint32_t* candidates = at_least(scratch.indices, cap + selection::kSelectionBlock);
    const size_t found = DISTSGD_DISPATCH(collect_at_least, x, n, threshold, cap, mags, candidates);
    // At least k reach the threshold: then the k largest all do, and the k largest candidates are the exact top k.
    if (found <= cap && found >= k) {
      keep_best(mags, candidates, found, k, indices);
      return true;
    }
  }
  std::vector<float> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = magnitude(x[i]);
  keep_best(all.data(), nullptr, n, k, indices);
  return false;
}

}  // namespace distsgd::optim::kernels
