// The fused kernels against the ATen chains they replace: bit for bit, since the operations and their order are
// the same, on sizes that are not multiples of any vector width and above the size split across threads.
#include "distsgd/optim/kernels.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

namespace kernels = distsgd::optim::kernels;

namespace {

const std::vector<int64_t> kSizes = {1, 7, 1023, 100003};

float* f(at::Tensor& t) { return t.data_ptr<float>(); }

// Bitwise equality (torch::equal would call -0 and +0 equal).
::testing::AssertionResult same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() != b.numel()) return ::testing::AssertionFailure() << "sizes differ";
  const auto ai = a.contiguous().view(at::kInt), bi = b.contiguous().view(at::kInt);
  const auto differ = ai.ne(bi);
  const int64_t count = differ.sum().item<int64_t>();
  if (count == 0) return ::testing::AssertionSuccess();
  const int64_t first = differ.nonzero()[0][0].item<int64_t>();
  return ::testing::AssertionFailure() << count << " of " << a.numel() << " elements differ, first at " << first << ": "
                                       << a[first].item<float>() << " vs " << b[first].item<float>();
}

at::Tensor random(int64_t n, double scale = 1) { return torch::randn({n}) * scale; }

}  // namespace

TEST(Kernels, MomentumSgdEqualsTheAtenChainBitForBit) {
  torch::manual_seed(1);
  int checked = 0;
  for (int64_t n : kSizes) {
    for (double momentum : {0.0, 0.9}) {
      for (double wd : {0.0, 1e-2}) {
        for (bool nesterov : {false, true}) {
          if (nesterov && momentum == 0) continue;
          for (double divisor : {1.0, 3.0}) {
            for (auto after :
                 {kernels::GradsAfter::kUnchanged, kernels::GradsAfter::kDecayed, kernels::GradsAfter::kZero}) {
              SCOPED_TRACE(::testing::Message()
                           << "n " << n << " momentum " << momentum << " wd " << wd << " nesterov " << nesterov
                           << " divisor " << divisor << " after " << static_cast<int>(after));
              auto p = random(n), g = random(n, 0.1), v = random(n, 0.05);
              auto rp = p.clone(), rg = g.clone(), rv = v.clone();
              const double lr = 0.05;
              // torch.optim.SGD's steps, as ATen calls.
              if (divisor != 1) rg.div_(divisor);
              if (wd != 0) rg.add_(rp, wd);
              auto d = rg;
              if (momentum != 0) {
                rv.mul_(momentum).add_(rg);
                d = nesterov ? rg.add(rv, momentum) : rv;
              }
              rp.add_(d, -lr);
              kernels::MomentumStep step{lr, momentum, wd, nesterov, divisor, after};
              kernels::momentum_sgd(f(p), f(g), f(v), static_cast<size_t>(n), step);
              EXPECT_TRUE(same_bits(p, rp));
              EXPECT_TRUE(same_bits(v, momentum != 0 ? rv : v));
              if (after == kernels::GradsAfter::kDecayed) {
                EXPECT_TRUE(same_bits(g, rg));
              } else if (after == kernels::GradsAfter::kZero) {
                EXPECT_EQ(g.abs().sum().item<float>(), 0.0f);
              }
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 3 * 2 * 2 * 3);
}

TEST(Kernels, UnchangedGradientsAndPlainSgdLeaveTheVelocityAlone) {
  torch::manual_seed(2);
  auto p = random(1023), g = random(1023);
  const auto g_before = g.clone();
  auto rp = p.clone();
  rp.add_(g, -0.1);
  kernels::momentum_sgd(f(p), f(g), nullptr, 1023, {0.1});
  EXPECT_TRUE(same_bits(p, rp));
  EXPECT_TRUE(same_bits(g, g_before));
}

TEST(Kernels, DirectionEqualsTheAtenChain) {
  torch::manual_seed(3);
  for (int64_t n : kSizes) {
    for (double momentum : {0.0, 0.9}) {
      for (double wd : {0.0, 1e-2}) {
        auto p = random(n), g = random(n, 0.1), v = random(n, 0.05);
        auto rg = g.clone(), rv = v.clone();
        if (wd != 0) rg.add_(p, wd);
        if (momentum != 0) rv.mul_(momentum).add_(rg);
        kernels::momentum_direction(f(p), f(g), f(v), static_cast<size_t>(n), momentum, wd);
        EXPECT_TRUE(same_bits(g, rg)) << n << " " << momentum << " " << wd;
        EXPECT_TRUE(same_bits(v, rv)) << n << " " << momentum << " " << wd;
      }
    }
  }
}

TEST(Kernels, MixingKernelsEqualTheAtenChains) {
  torch::manual_seed(4);
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    const auto size = static_cast<size_t>(n);
    auto x = random(n), y = random(n), z = random(n);
    {
      auto a = x.clone(), r = x.clone();
      r.add_(y, -0.05);
      kernels::add_scaled(f(a), f(y), size, -0.05);
      EXPECT_TRUE(same_bits(a, r)) << "add_scaled";
    }
    {
      auto a = x.clone(), r = x.clone();
      r.mul_(0.7).add_(y, 0.3);
      kernels::axpby(f(a), f(y), size, 0.7, 0.3);
      EXPECT_TRUE(same_bits(a, r)) << "axpby";
    }
    {
      auto a = x.clone(), r = x.clone();
      r.add_(y).mul_(0.5);
      kernels::average(f(a), f(y), size);
      EXPECT_TRUE(same_bits(a, r)) << "average";
    }
    {
      auto a = x.clone(), r = x.clone();
      r.add_(z - y, 0.5);
      kernels::add_half_difference(f(a), f(y), f(z), size);
      EXPECT_TRUE(same_bits(a, r)) << "add_half_difference";
    }
    {
      auto tilde = x.clone(), worker = y.clone(), out = torch::empty({n});
      auto r_tilde = x.clone(), r_out = torch::empty({n});
      auto e = (y - r_tilde).mul_(0.225);
      r_tilde.add_(e);
      at::sub_out(r_out, y, e);
      kernels::elastic(f(tilde), f(worker), f(out), size, 0.225);
      EXPECT_TRUE(same_bits(tilde, r_tilde)) << "elastic x~";
      EXPECT_TRUE(same_bits(out, r_out)) << "elastic worker";
      auto in_place = y.clone(), tilde2 = x.clone();
      kernels::elastic(f(tilde2), f(in_place), f(in_place), size, 0.225);
      EXPECT_TRUE(same_bits(in_place, r_out)) << "elastic in place";
    }
    {
      auto a = x.clone(), r = x.clone();
      r.add_(y);
      kernels::accumulate(f(a), f(y), size);
      EXPECT_TRUE(same_bits(a, r)) << "accumulate";
      r.mul_(0.3);
      kernels::scale(f(a), size, 0.3);
      EXPECT_TRUE(same_bits(a, r)) << "scale";
      r.div_(7.0);
      kernels::divide(f(a), size, 7.0);
      EXPECT_TRUE(same_bits(a, r)) << "divide";
      kernels::zero(f(a), size);
      EXPECT_EQ(a.abs().sum().item<float>(), 0.0f);
    }
    for (size_t count : {1, 2, 5}) {
      std::vector<at::Tensor> rows;
      std::vector<const float*> pointers;
      for (size_t r = 0; r < count; ++r) rows.push_back(random(n));
      for (auto& r : rows) pointers.push_back(f(r));
      auto sum = rows[0].clone();
      for (size_t r = 1; r < count; ++r) sum.add_(rows[r]);
      auto out = torch::empty({n});
      kernels::sum_rows(f(out), pointers.data(), count, size);
      EXPECT_TRUE(same_bits(out, sum)) << "sum_rows " << count;
    }
  }
}

TEST(Kernels, DgcAccumulationEqualsTheAtenChain) {
  torch::manual_seed(5);
  for (int64_t n : kSizes) {
    for (double clip : {1.0, 0.37}) {
      auto g = random(n), p = random(n), u = random(n, 0.1), v = random(n, 0.1);
      auto ru = u.clone(), rv = v.clone();
      auto d = g.add(p, 1e-4);
      if (clip != 1) d.mul_(clip);
      ru.mul_(0.9).add_(d);
      rv.add_(ru);
      kernels::dgc_accumulate(f(u), f(v), f(g), f(p), static_cast<size_t>(n), 0.9, 1e-4, clip);
      EXPECT_TRUE(same_bits(u, ru)) << n;
      EXPECT_TRUE(same_bits(v, rv)) << n;
      const double norm = g.add(p, 1e-4).to(at::kDouble).norm().item<double>();
      EXPECT_NEAR(std::sqrt(kernels::dgc_decayed_norm_squared(f(g), f(p), static_cast<size_t>(n), 1e-4)), norm,
                  1e-9 * norm);
    }
  }
}

TEST(Kernels, TriadIsBPlusSC) {
  auto a = torch::empty({1023}), b = random(1023), c = random(1023);
  kernels::triad(f(a), f(b), f(c), 1023, 3.0);
  EXPECT_TRUE(same_bits(a, b.add(c, 3.0)));
}

namespace {

std::set<int64_t> exact_top(const at::Tensor& x, int64_t k) {
  const auto idx = std::get<1>(x.abs().topk(k));
  std::set<int64_t> s;
  for (int64_t i = 0; i < k; ++i) s.insert(idx[i].item<int64_t>());
  return s;
}

std::vector<int64_t> selected(at::Tensor& x, int64_t k, bool* sampled) {
  std::vector<int64_t> out(static_cast<size_t>(k));
  *sampled = kernels::top_magnitudes(f(x), static_cast<size_t>(x.numel()), static_cast<size_t>(k), out.data());
  return out;
}

}  // namespace

TEST(Kernels, TopMagnitudesIsExactTopKWithAndWithoutTheSampledThreshold) {
  torch::manual_seed(6);
  struct Case {
    int64_t n, k;
    bool sampled;
  };
  // Large tensors at low density take the sampled threshold; small or dense ones rank everything.
  for (const auto& c : {Case{1606, 2, false}, Case{100003, 101, true}, Case{1605632, 1606, true},
                        Case{1605632, 16057, true}, Case{50000, 12500, false}, Case{7, 3, false}}) {
    auto x = random(c.n);
    bool sampled = false;
    const auto got = selected(x, c.k, &sampled);
    EXPECT_EQ(sampled, c.sampled) << c.n << " " << c.k;
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
    EXPECT_EQ(std::set<int64_t>(got.begin(), got.end()), exact_top(x, c.k)) << c.n << " " << c.k;
  }
}

TEST(Kernels, TopMagnitudesFallsBackToExactWhenTheSampleMisjudges) {
  const int64_t n = 200000, k = 200;
  // Where top_magnitudes samples: runs of 64 consecutive entries spread evenly, n/256 entries in all.
  std::vector<int64_t> looked_at;
  const int64_t run = 64, runs = n / 256 / run, spacing = n / runs;
  for (int64_t j = 0; j < runs; ++j) {
    for (int64_t i = 0; i < run; ++i) looked_at.push_back(j * spacing + (spacing - run) / 2 + i);
  }
  // The largest entries sit exactly where the sample looks, so its threshold is far too high.
  auto high = torch::rand({n}) * 0.1;
  for (size_t j = 0; j < looked_at.size(); ++j) high[looked_at[j]] = 10.0f + static_cast<float>(j);
  // Here the sample sees only zeros: its threshold is 0, every entry reaches it, too many to collect. Distinct
  // values (a permutation of 1 + i/n), so that the exact top k has no tie at its edge for topk to break otherwise.
  auto low = torch::randperm(n, torch::kFloat) / static_cast<float>(n) + 1;
  for (const int64_t i : looked_at) low[i] = 0.0f;
  for (auto* x : {&high, &low}) {
    bool sampled = true;
    const auto got = selected(*x, k, &sampled);
    EXPECT_FALSE(sampled);
    EXPECT_EQ(std::set<int64_t>(got.begin(), got.end()), exact_top(*x, k));
  }
}

TEST(Kernels, TopMagnitudesBreaksTiesByIndexAndRanksNanFirst) {
  auto x = torch::zeros({20000});
  x[5] = -3.0f;
  x[17] = 3.0f;
  x[9000] = 3.0f;
  x[12000] = std::nanf("");
  bool sampled = false;
  EXPECT_EQ(selected(x, 3, &sampled), (std::vector<int64_t>{5, 17, 12000}));
}

namespace {

// Every entry ranked by sorting: larger magnitude first (NaN as the largest), ties to the lower index.
std::vector<int64_t> ranking(const at::Tensor& x) {
  const float* v = x.data_ptr<float>();
  const auto magnitude = [](float f) { return std::isnan(f) ? std::numeric_limits<float>::infinity() : std::fabs(f); };
  std::vector<int64_t> order(static_cast<size_t>(x.numel()));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return magnitude(v[a]) > magnitude(v[b]); });
  return order;
}

// The first k of a ranking, ascending.
std::vector<int64_t> first_of(const std::vector<int64_t>& ranked, int64_t k) {
  std::vector<int64_t> top(ranked.begin(), ranked.begin() + k);
  std::sort(top.begin(), top.end());
  return top;
}

}  // namespace

TEST(Kernels, TopMagnitudesKeepsTheTieRuleOnTheSampledPath) {
  torch::manual_seed(8);
  // Magnitudes on n/100 levels: wherever k falls, the k-th ties with about 100 others, and the scan (not the
  // fallback) must keep the lowest-indexed of them. NaN, +inf and -inf tie as the largest, one of each in the last
  // 8 entries (the scan's scalar tail: no size is a multiple of 8). k = 3 cuts among those four.
  for (const int64_t n : {16391, 100003, 1000003}) {
    const int64_t levels = n / 100;
    auto x = torch::randint(1, levels + 1, {n}).to(torch::kFloat) / static_cast<float>(levels) *
             (torch::randint(0, 2, {n}).to(torch::kFloat) * 2 - 1);
    x[7] = std::numeric_limits<float>::infinity();
    x[n / 2] = std::nanf("");
    x[n - 3] = -std::numeric_limits<float>::infinity();
    x[n - 1] = std::nanf("");
    const auto ranked = ranking(x);
    for (const int64_t k : {int64_t{1}, int64_t{3}, int64_t{97}, n / 100, n / 16}) {
      bool sampled = false;
      const auto got = selected(x, k, &sampled);
      EXPECT_TRUE(sampled) << n << " " << k;
      EXPECT_EQ(got, first_of(ranked, k)) << n << " " << k;
    }
  }
}

TEST(Kernels, TopMagnitudesEdgeCases) {
  std::vector<int64_t> out(5, -1);
  auto x = torch::randn({5});
  EXPECT_TRUE(kernels::top_magnitudes(f(x), 5, 0, out.data()));  // k = 0 writes nothing
  EXPECT_EQ(out, std::vector<int64_t>(5, -1));
  EXPECT_TRUE(kernels::top_magnitudes(f(x), 5, 5, out.data()));  // k = n: all, in order
  EXPECT_EQ(out, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // All magnitudes equal: the lowest indices, whichever path (here every entry reaches the sampled threshold, too
  // many to collect, and the fallback ranks them).
  for (const int64_t n : {int64_t{7}, int64_t{100003}}) {
    auto same = torch::ones({n}) - 2 * torch::randint(0, 2, {n}).to(torch::kFloat);
    for (const int64_t k : {int64_t{1}, n / 20, n - 1}) {
      bool sampled = true;
      std::vector<int64_t> first(static_cast<size_t>(k));
      std::iota(first.begin(), first.end(), int64_t{0});
      EXPECT_EQ(selected(same, k, &sampled), first) << n << " " << k;
    }
  }
}

TEST(Kernels, SplittingAcrossComputeThreadsGivesTheSameBits) {
  const int threads = at::get_num_threads();
  torch::manual_seed(7);
  const int64_t n = 300007;  // several grains of 65536
  auto p = random(n), g = random(n, 0.1), v = random(n, 0.05);
  auto p2 = p.clone(), g2 = g.clone(), v2 = v.clone();
  const kernels::MomentumStep step{0.05, 0.9, 1e-4, false, 2, kernels::GradsAfter::kDecayed};
  at::set_num_threads(1);
  kernels::momentum_sgd(f(p), f(g), f(v), static_cast<size_t>(n), step);
  at::set_num_threads(2);
  kernels::momentum_sgd(f(p2), f(g2), f(v2), static_cast<size_t>(n), step);
  at::set_num_threads(threads);
  EXPECT_TRUE(same_bits(p, p2));
  EXPECT_TRUE(same_bits(g, g2));
  EXPECT_TRUE(same_bits(v, v2));
}
