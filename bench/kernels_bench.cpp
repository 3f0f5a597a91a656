// The fused update kernels (optim/kernels.hpp) against the STREAM triad a = b + s*c in the same binary, on 1M to
// 64M floats: each reports GB/s of the memory it must move (STREAM's convention: every array read or written once
// per element, no write-allocate traffic counted), so "80% of the triad's rate" is a like-for-like comparison.
// Compute threads: DISTSGD_BENCH_THREADS (default 1, as bench/throughput.sh's runs). Run through
// bench/kernels.sh, which prints each kernel's rate next to the triad's.
#include "distsgd/optim/kernels.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace kernels = distsgd::optim::kernels;

namespace {

// Buffers of n floats, written once so that their pages exist before timing.
std::vector<std::vector<float>> buffers(size_t count, size_t n) {
  std::vector<std::vector<float>> b(count);
  for (size_t i = 0; i < count; ++i) b[i].assign(n, 0.001f * static_cast<float>(i + 1));
  return b;
}

// Bytes moved per element: arrays read + arrays written, 4 bytes each.
void report(benchmark::State& state, size_t n, int arrays) {
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(n) * 4.0 * arrays / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

size_t size_of(const benchmark::State& state) { return static_cast<size_t>(state.range(0)); }

void Triad(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(3, n);
  for (auto _ : state) {
    kernels::triad(b[0].data(), b[1].data(), b[2].data(), n, 0.5);
    benchmark::ClobberMemory();
  }
  report(state, n, 3);
}

// MomentumSgd::step as the single-process run makes it: weight decay, momentum, grads left unchanged.
void MomentumSgdStep(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(3, n);
  const kernels::MomentumStep step{1e-9, 0.9, 1e-4};
  for (auto _ : state) {
    kernels::momentum_sgd(b[0].data(), b[1].data(), b[2].data(), n, step);
    benchmark::ClobberMemory();
  }
  report(state, n, 5);  // reads p, g, v; writes p, v
}

// AR-SGD's step: the sum of the workers' gradients divided by n in the same pass.
void MomentumSgdMeanOfSum(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(3, n);
  const kernels::MomentumStep step{1e-9, 0.9, 1e-4, false, 4};
  for (auto _ : state) {
    kernels::momentum_sgd(b[0].data(), b[1].data(), b[2].data(), n, step);
    benchmark::ClobberMemory();
  }
  report(state, n, 5);
}

// ALADDIN's server: average, step, and reset the accumulated sum.
void MomentumSgdAverageAndReset(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(3, n);
  const kernels::MomentumStep step{1e-9, 0.9, 1e-4, false, 4, kernels::GradsAfter::kZero};
  for (auto _ : state) {
    kernels::momentum_sgd(b[0].data(), b[1].data(), b[2].data(), n, step);
    benchmark::ClobberMemory();
  }
  report(state, n, 6);  // reads p, g, v; writes p, g, v
}

// AdamW's step (--optimizer adamw) as the single-process run makes it: decoupled weight decay, both moments.
void AdamWStep(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(4, n);
  kernels::AdamWStep step;
  step.lr = 1e-9;
  step.weight_decay = 0.01;
  step.step = 10;
  for (auto _ : state) {
    kernels::adamw(b[0].data(), b[1].data(), b[2].data(), b[3].data(), n, step);
    benchmark::ClobberMemory();
  }
  report(state, n, 7);  // reads p, g, m, v; writes p, m, v
}

// What the fused kernel replaces: torch::optim::AdamW's chain of ATen calls on the same buffers (its step at t = 10).
void AdamWAtenChain(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(4, n);
  const auto tensor = [n](std::vector<float>& v) {
    return at::from_blob(v.data(), {static_cast<int64_t>(n)}, at::TensorOptions().dtype(at::kFloat));
  };
  auto p = tensor(b[0]), g = tensor(b[1]), m = tensor(b[2]), v = tensor(b[3]);
  const double lr = 1e-9, wd = 0.01, bias1 = 1 - std::pow(0.9, 10), bias2 = 1 - std::pow(0.999, 10);
  for (auto _ : state) {
    p.mul_(1 - lr * wd);
    m.mul_(0.9).add_(g, 1 - 0.9);
    v.mul_(0.999).addcmul_(g, g, 1 - 0.999);
    const auto denominator = (v.sqrt() / std::sqrt(bias2)).add_(1e-8);
    p.addcdiv_(m, denominator, -lr / bias1);
    benchmark::ClobberMemory();
  }
  report(state, n, 7);  // the fused kernel's traffic, for a like-for-like rate
}

void PlainSgd(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(2, n);
  for (auto _ : state) {
    kernels::add_scaled(b[0].data(), b[1].data(), n, -1e-9);
    benchmark::ClobberMemory();
  }
  report(state, n, 3);
}

void Direction(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(3, n);
  for (auto _ : state) {
    kernels::momentum_direction(b[0].data(), b[1].data(), b[2].data(), n, 0.9, 1e-4);
    benchmark::ClobberMemory();
  }
  report(state, n, 5);  // reads p, g, v; writes g, v
}

void Axpby(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(2, n);
  for (auto _ : state) {
    kernels::axpby(b[0].data(), b[1].data(), n, 0.5, 0.5);
    benchmark::ClobberMemory();
  }
  report(state, n, 3);
}

void Average(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(2, n);
  for (auto _ : state) {
    kernels::average(b[0].data(), b[1].data(), n);
    benchmark::ClobberMemory();
  }
  report(state, n, 3);
}

void AddHalfDifference(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(3, n);
  for (auto _ : state) {
    kernels::add_half_difference(b[0].data(), b[1].data(), b[2].data(), n);
    benchmark::ClobberMemory();
  }
  report(state, n, 4);
}

void Elastic(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(3, n);
  for (auto _ : state) {
    kernels::elastic(b[0].data(), b[1].data(), b[2].data(), n, 0.225);
    benchmark::ClobberMemory();
  }
  report(state, n, 4);  // reads x~, x_i; writes x~, out
}

void Accumulate(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(2, n);
  for (auto _ : state) {
    kernels::accumulate(b[0].data(), b[1].data(), n);
    benchmark::ClobberMemory();
  }
  report(state, n, 3);
}

// BSP's server: 4 workers' gradients summed in rank order.
void SumOfFourRows(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(5, n);
  const float* rows[] = {b[1].data(), b[2].data(), b[3].data(), b[4].data()};
  for (auto _ : state) {
    kernels::sum_rows(b[0].data(), rows, 4, n);
    benchmark::ClobberMemory();
  }
  report(state, n, 5);
}

void Scale(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(1, n);
  for (auto _ : state) {
    kernels::scale(b[0].data(), n, 1.0);
    benchmark::ClobberMemory();
  }
  report(state, n, 2);
}

void Zero(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(1, n);
  for (auto _ : state) {
    kernels::zero(b[0].data(), n);
    benchmark::ClobberMemory();
  }
  report(state, n, 1);
}

void DgcAccumulate(benchmark::State& state) {
  const size_t n = size_of(state);
  auto b = buffers(4, n);
  for (auto _ : state) {
    kernels::dgc_accumulate(b[0].data(), b[1].data(), b[2].data(), b[3].data(), n, 0.9, 1e-4, 1);
    benchmark::ClobberMemory();
  }
  report(state, n, 6);  // reads u, v, g, p; writes u, v
}

// DGC's selection at density 0.001 over random magnitudes: one read of the tensor.
void TopMagnitudes(benchmark::State& state) {
  const size_t n = size_of(state);
  std::vector<float> x(n);
  uint64_t s = 88172645463325252ull;
  for (auto& v : x) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    v = static_cast<float>(static_cast<int64_t>(s >> 11) - (int64_t{1} << 52)) / 4.5e15f;
  }
  const size_t k = n / 1000;
  std::vector<int64_t> out(k);
  for (auto _ : state) {
    benchmark::DoNotOptimize(kernels::top_magnitudes(x.data(), n, k, out.data()));
    benchmark::ClobberMemory();
  }
  report(state, n, 1);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n = int64_t{1} << 20; n <= int64_t{1} << 26; n *= 4) b->Arg(n);
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(Triad)->Apply(Sizes);
BENCHMARK(MomentumSgdStep)->Apply(Sizes);
BENCHMARK(MomentumSgdMeanOfSum)->Apply(Sizes);
BENCHMARK(MomentumSgdAverageAndReset)->Apply(Sizes);
BENCHMARK(AdamWStep)->Apply(Sizes);
BENCHMARK(AdamWAtenChain)->Apply(Sizes);
BENCHMARK(PlainSgd)->Apply(Sizes);
BENCHMARK(Direction)->Apply(Sizes);
BENCHMARK(Axpby)->Apply(Sizes);
BENCHMARK(Average)->Apply(Sizes);
BENCHMARK(AddHalfDifference)->Apply(Sizes);
BENCHMARK(Elastic)->Apply(Sizes);
BENCHMARK(Accumulate)->Apply(Sizes);
BENCHMARK(SumOfFourRows)->Apply(Sizes);
BENCHMARK(Scale)->Apply(Sizes);
BENCHMARK(Zero)->Apply(Sizes);
BENCHMARK(DgcAccumulate)->Apply(Sizes);
BENCHMARK(TopMagnitudes)->Apply(Sizes);

}  // namespace

int main(int argc, char** argv) {
  const char* threads = std::getenv("DISTSGD_BENCH_THREADS");
  at::set_num_threads(threads ? std::stoi(threads) : 1);
  benchmark::AddCustomContext("compute_threads", std::to_string(at::get_num_threads()));
  benchmark::AddCustomContext("fused_multiply_add", kernels::uses_fma() ? "yes" : "no");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
