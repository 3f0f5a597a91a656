// The three pieces of the decentralized algorithms on their own: topology (pure functions of rank, n, t) and
// mixing (in-place tensor rules with their conservation laws).
#include "distsgd/algo/decentralized/mixing.hpp"
#include "distsgd/core/peer_topology.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <set>

using namespace distsgd::algo::decentralized;
using namespace distsgd::topology;

TEST(Topology, RingSendsToTheNextRank) {
  EXPECT_EQ(peer_at(Topology::kRing, 0, 4, 7), 1);
  EXPECT_EQ(peer_at(Topology::kRing, 3, 4, 0), 0);
  EXPECT_EQ(in_neighbors(Topology::kRing, 0, 4), std::vector<int64_t>{3});
}

TEST(Topology, ExponentialCyclesThroughPowersOfTwo) {
  EXPECT_EQ(exponential_hops(2), 1);
  EXPECT_EQ(exponential_hops(4), 2);
  EXPECT_EQ(exponential_hops(5), 3);
  EXPECT_EQ(exponential_hops(8), 3);
  // n = 8: hops 1, 2, 4, 1, ...
  EXPECT_EQ(peer_at(Topology::kExponential, 6, 8, 0), 7);
  EXPECT_EQ(peer_at(Topology::kExponential, 6, 8, 1), 0);
  EXPECT_EQ(peer_at(Topology::kExponential, 6, 8, 2), 2);
  EXPECT_EQ(peer_at(Topology::kExponential, 6, 8, 3), 7);
  EXPECT_EQ(out_neighbors(Topology::kExponential, 0, 4), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(in_neighbors(Topology::kExponential, 0, 4), (std::vector<int64_t>{2, 3}));
  // At every t the graph is a permutation: each rank receives exactly one message (SGP waits for it).
  for (int64_t n : {2, 3, 4, 5, 8}) {
    for (int64_t t = 0; t < 6; ++t) {
      std::multiset<int64_t> receivers;
      for (int64_t i = 0; i < n; ++i) receivers.insert(peer_at(Topology::kExponential, i, n, t));
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(receivers.count(i), 1u) << "n " << n << " t " << t;
    }
  }
}

TEST(Topology, BipartiteJoinsOnlyActiveOddAndPassiveEvenRanks) {
  EXPECT_TRUE(is_active(1));
  EXPECT_FALSE(is_active(0));
  // n = 8, rank 3: offsets +-1, +-3, +-5 -> 4, 2, 6, 0, 0, 6.
  EXPECT_EQ(bipartite_neighbors(3, 8), (std::vector<int64_t>{0, 2, 4, 6}));
  for (int64_t n : {2, 3, 4, 5, 6, 8, 16}) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j : bipartite_neighbors(i, n)) {
        EXPECT_NE(is_active(i), is_active(j)) << i << " - " << j << " of " << n;
        const auto back = bipartite_neighbors(j, n);
        EXPECT_TRUE(std::find(back.begin(), back.end(), i) != back.end()) << "symmetric";
      }
      if (is_active(i)) {
        EXPECT_FALSE(bipartite_neighbors(i, n).empty());
        for (int64_t t = 0; t < 10; ++t) EXPECT_FALSE(is_active(peer_at(Topology::kBipartiteExponential, i, n, t)));
      } else {
        EXPECT_EQ(peer_at(Topology::kBipartiteExponential, i, n, 0), -1) << "passive ranks initiate nothing";
        EXPECT_TRUE(out_neighbors(Topology::kBipartiteExponential, i, n).empty());
      }
    }
  }
  // Active rank 1 of 4 cycles 0, 2, 0, 2.
  EXPECT_EQ(peer_at(Topology::kBipartiteExponential, 1, 4, 0), 0);
  EXPECT_EQ(peer_at(Topology::kBipartiteExponential, 1, 4, 1), 2);
  EXPECT_EQ(in_neighbors(Topology::kBipartiteExponential, 0, 4), (std::vector<int64_t>{1, 3}));
}

TEST(Topology, RandomPeerIsSeededUniformAndNeverSelf) {
  std::map<int64_t, int> counts;
  for (int64_t t = 0; t < 30000; ++t) {
    const int64_t peer = random_peer(42, 2, 4, t);
    ASSERT_NE(peer, 2);
    ASSERT_GE(peer, 0);
    ASSERT_LT(peer, 4);
    ++counts[peer];
    EXPECT_EQ(peer, random_peer(42, 2, 4, t)) << "a pure function";
  }
  for (int64_t j : {0, 1, 3}) EXPECT_NEAR(counts[j], 10000, 400) << j;
  int differ = 0;
  for (int64_t t = 0; t < 100; ++t) differ += random_peer(42, 2, 4, t) != random_peer(43, 2, 4, t);
  EXPECT_GT(differ, 30) << "the seed matters";
  EXPECT_EQ(out_neighbors(Topology::kRandom, 1, 3), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(in_neighbors(Topology::kRandom, 1, 3), (std::vector<int64_t>{0, 2}));
}

TEST(Mixing, PairwiseAveragingConservesTheSum) {
  auto a = torch::tensor({1.0f, 2.0f, 3.0f});
  auto b = torch::tensor({3.0f, 0.0f, -1.0f});
  const auto sum = (a + b).clone();
  // AD-PSGD: the passive averages with what it received; the active with the passive's old model.
  auto a_sent = a.clone();
  auto b_before = b.clone();
  average_into(b, a_sent);
  average_with_sent(a, a_sent, b_before);
  EXPECT_TRUE(torch::allclose(a + b, sum));
  EXPECT_TRUE(torch::allclose(a, b));
  EXPECT_TRUE(torch::allclose(a, torch::tensor({2.0f, 1.0f, 1.0f})));
}

TEST(Mixing, ActiveSideKeepsAnUpdateMadeDuringTheExchange) {
  auto x = torch::tensor({1.0f, 1.0f});
  const auto sent = x.clone();
  x.sub_(0.5);  // a gradient step while the exchange was in flight
  average_with_sent(x, sent, torch::tensor({3.0f, 5.0f}));
  EXPECT_TRUE(torch::allclose(x, torch::tensor({1.5f, 2.5f})));  // (1+3)/2 - 0.5, (1+5)/2 - 0.5
}

TEST(Mixing, PushSumConservesWeightsAndTheWeightedMean) {
  // Three workers with distinct models; random sends and merges; sum w_i = 1 and sum w_i z_i stay constant.
  std::vector<at::Tensor> z{torch::full({4}, 1.0f), torch::full({4}, 4.0f), torch::tensor({0.f, 1.f, 2.f, 3.f})};
  std::vector<double> w(3, 1.0 / 3);
  auto weighted_mean = [&] {
    auto m = torch::zeros({4}, torch::kFloat64);
    for (size_t i = 0; i < 3; ++i) m += z[i].to(torch::kFloat64) * w[i];
    return m;
  };
  const auto expected = weighted_mean();
  for (int round = 0; round < 200; ++round) {
    const size_t from = static_cast<size_t>(round % 3);
    const size_t to = static_cast<size_t>(random_peer(7, static_cast<int64_t>(from), 3, round));
    const double sent = split_weight(w[from]);
    const auto message = z[from].clone();
    weighted_merge(z[to], w[to], message, sent);
    EXPECT_NEAR(w[0] + w[1] + w[2], 1.0, 1e-12);
    EXPECT_TRUE(torch::allclose(weighted_mean(), expected, 1e-5, 1e-5)) << "round " << round;
  }
  EXPECT_EQ(split_weight(w[0]), w[0]) << "the sender keeps what it sends";
}

TEST(Mixing, WeightedMergeIsGoSgdsWeightedAverage) {
  auto z = torch::tensor({2.0f});
  double w = 0.25;
  weighted_merge(z, w, torch::tensor({6.0f}), 0.75);
  EXPECT_FLOAT_EQ(z.item<float>(), 5.0f);  // (0.25*2 + 0.75*6) / 1
  EXPECT_DOUBLE_EQ(w, 1.0);
}
