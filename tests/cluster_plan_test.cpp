// The emulated cluster's description: links parsed from text, ranks placed on hosts, bad input refused.
#include <gtest/gtest.h>

#include "distsgd/cluster/cluster_plan.hpp"
#include "distsgd/cluster/emulated_cluster.hpp"
#include "distsgd/cluster/link_spec.hpp"
#include "distsgd/core/error.hpp"
#include "test_util.hpp"

namespace distsgd::cluster {
namespace {

using distsgd::testing::error_of_call;

TEST(LinkSpec, ParsesRatesInTcUnits) {
  EXPECT_DOUBLE_EQ(parse_link("--net", "1gbit").rate_bits_per_second, 1e9);
  EXPECT_DOUBLE_EQ(parse_link("--net", "100mbit").rate_bits_per_second, 1e8);
  EXPECT_DOUBLE_EQ(parse_link("--net", "2.5gbit").rate_bits_per_second, 2.5e9);
  EXPECT_DOUBLE_EQ(parse_link("--net", "10mbps").rate_bits_per_second, 8e7);  // bytes per second, as tc
  EXPECT_DOUBLE_EQ(parse_link("--net", "1gbit").rate_bytes_per_second(), 1.25e8);
  EXPECT_DOUBLE_EQ(parse_link("--net", "unshaped").rate_bits_per_second, 0);
}

TEST(LinkSpec, ParsesDelayJitterAndLoss) {
  const auto link = parse_link("--net", "1gbit,delay=0.2ms,jitter=50us,loss=0.5%");
  EXPECT_DOUBLE_EQ(link.impairment.delay_seconds, 0.2e-3);
  EXPECT_DOUBLE_EQ(link.impairment.jitter_seconds, 50e-6);
  EXPECT_DOUBLE_EQ(link.impairment.loss, 0.005);
  EXPECT_TRUE(link.impairment.any());
  EXPECT_FALSE(parse_link("--net", "1gbit").impairment.any());
  const auto delay_only = parse_link("--net", "unshaped,delay=5ms");
  EXPECT_DOUBLE_EQ(delay_only.impairment.delay_seconds, 5e-3);
  // An outage: down 5 s after the start, for 90 s (longer than delays may be).
  const auto outage = parse_link("--link worker1", "down=5s+90s", parse_link("--net", "1gbit"));
  EXPECT_DOUBLE_EQ(outage.impairment.down_after_seconds, 5);
  EXPECT_DOUBLE_EQ(outage.impairment.down_for_seconds, 90);
  EXPECT_DOUBLE_EQ(outage.rate_bits_per_second, 1e9);
  EXPECT_TRUE(outage.impairment.any());
}

TEST(LinkSpec, AnOverrideKeepsWhatItDoesNotSay) {
  const auto base = parse_link("--net", "10gbit,delay=1ms");
  const auto over = parse_link("--link worker3", "loss=1%", base);
  EXPECT_DOUBLE_EQ(over.rate_bits_per_second, 1e10);
  EXPECT_DOUBLE_EQ(over.impairment.delay_seconds, 1e-3);
  EXPECT_DOUBLE_EQ(over.impairment.loss, 0.01);
  EXPECT_DOUBLE_EQ(parse_link("--link server0", "1gbit", base).rate_bits_per_second, 1e9);
}

TEST(LinkSpec, BadInputIsOneClearError) {
  EXPECT_NE(error_of_call([] { parse_link("--net", "1gbits"); }).find("'1gbits' is not a rate"), std::string::npos);
  EXPECT_NE(error_of_call([] { parse_link("--net", "0mbit"); }).find("rate of zero"), std::string::npos);
  EXPECT_NE(error_of_call([] { parse_link("--net", "1gbit,loss=150%"); }).find("above 100%"), std::string::npos);
  EXPECT_NE(error_of_call([] { parse_link("--net", "1gbit,delay=5"); }).find("is not a time"), std::string::npos);
  EXPECT_NE(error_of_call([] { parse_link("--net", "1gbit,delay=-1ms"); }).find("is not a time"), std::string::npos);
  EXPECT_NE(error_of_call([] { parse_link("--net", "1gbit,latency=1ms"); }).find("unknown setting 'latency'"),
            std::string::npos);
  EXPECT_NE(error_of_call([] { parse_link("--net", "1gbit,delay=1ms,jitter=2ms"); }).find("jitter must not exceed"),
            std::string::npos);
  EXPECT_NE(error_of_call([] { parse_link("--net", "delay=1ms,1gbit"); }).find("only the first part may be a rate"),
            std::string::npos);
  EXPECT_NE(error_of_call([] { parse_link("--net", ""); }).find("empty"), std::string::npos);
}

TEST(ClusterPlan, OneHostPerRankByDefault) {
  NetworkRequest request;
  request.net = "1gbit";
  const auto plan = plan_cluster(request, 3, 1);
  ASSERT_EQ(plan.hosts.size(), 4u);
  EXPECT_EQ(plan.host_of_rank, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(plan.hosts[0].address, "10.88.0.1");
  EXPECT_EQ(plan.hosts[3].address, "10.88.0.4");
}

TEST(ClusterPlan, RoundRobinAndBlockPlacement) {
  NetworkRequest request;
  request.net = "1gbit";
  request.hosts = 4;
  auto plan = plan_cluster(request, 8, 2);  // ranks 0-7 workers, 8-9 servers
  EXPECT_EQ(plan.hosts[0].ranks, (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(plan.hosts[1].ranks, (std::vector<int64_t>{1, 5, 9}));
  EXPECT_EQ(plan.hosts[3].ranks, (std::vector<int64_t>{3, 7}));
  request.placement = "block";
  plan = plan_cluster(request, 8, 2);
  EXPECT_EQ(plan.hosts[0].ranks, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(plan.hosts[3].ranks, (std::vector<int64_t>{9}));
}

TEST(ClusterPlan, LinkOverridesNameRanksOrHosts) {
  NetworkRequest request;
  request.net = "10gbit";
  request.links = {"server0=1gbit", "worker3=100mbit,loss=0.5%"};
  const auto plan = plan_cluster(request, 4, 1);
  EXPECT_DOUBLE_EQ(plan.hosts[4].link.rate_bits_per_second, 1e9);
  EXPECT_DOUBLE_EQ(plan.hosts[3].link.rate_bits_per_second, 1e8);
  EXPECT_DOUBLE_EQ(plan.hosts[3].link.impairment.loss, 0.005);
  EXPECT_DOUBLE_EQ(plan.hosts[0].link.rate_bits_per_second, 1e10);
  request.links = {"host1=5mbit", "rank2=6mbit"};
  const auto by_host = plan_cluster(request, 4, 1);
  EXPECT_DOUBLE_EQ(by_host.hosts[1].link.rate_bits_per_second, 5e6);
  EXPECT_DOUBLE_EQ(by_host.hosts[2].link.rate_bits_per_second, 6e6);
}

TEST(ClusterPlan, BadInputIsOneClearError) {
  NetworkRequest request;
  request.net = "1gbit";
  request.hosts = 5;
  EXPECT_NE(
      error_of_call([&] { plan_cluster(request, 3, 1); }).find("--hosts 5 is more hosts than the run's 4 processes"),
      std::string::npos);
  request.hosts = 0;
  request.links = {"worker4=1gbit"};
  EXPECT_NE(error_of_call([&] { plan_cluster(request, 4, 0); }).find("the run has 4 workers"), std::string::npos);
  request.links = {"server0=1gbit"};
  EXPECT_NE(error_of_call([&] { plan_cluster(request, 4, 0); }).find("the run has 0 servers"), std::string::npos);
  request.links = {"gpu1=1gbit"};
  EXPECT_NE(error_of_call([&] { plan_cluster(request, 4, 0); }).find("names no rank or host"), std::string::npos);
  request.links = {"worker1"};
  EXPECT_NE(error_of_call([&] { plan_cluster(request, 4, 0); }).find("TARGET=LINK"), std::string::npos);
  request.links = {"worker0=1gbit", "worker2=2gbit"};
  request.hosts = 2;  // round-robin: workers 0 and 2 share host 0
  EXPECT_NE(error_of_call([&] { plan_cluster(request, 4, 0); }).find("differently"), std::string::npos);
  request.links = {};
  request.hosts = 0;
  request.placement = "random";
  EXPECT_NE(error_of_call([&] { plan_cluster(request, 4, 0); }).find("--placement: unknown 'random'"),
            std::string::npos);
  request.placement = "round-robin";
  EXPECT_NE(error_of_call([&] { plan_cluster(request, 1, 0); }).find("only one"), std::string::npos);
  NetworkRequest no_net;
  no_net.hosts = 2;
  EXPECT_NE(error_of_call([&] { plan_cluster(no_net, 4, 0); }).find("give --net too"), std::string::npos);
}

TEST(EmulatedCluster, TokenBucketIsSmallAndTheQueueDeep) {
  EXPECT_EQ(EmulatedCluster::bucket_bytes(1.25e6), 3 * 1514);      // 10 Mbit/s: three frames
  EXPECT_EQ(EmulatedCluster::bucket_bytes(12.5e6), 12500);         // 100 Mbit/s: 1 ms
  EXPECT_EQ(EmulatedCluster::bucket_bytes(1.25e9), 1250000);       // 10 Gbit/s: 1 ms
  EXPECT_GE(EmulatedCluster::queue_limit_bytes(1.25e8), 6250000);  // 1 Gbit/s: 50 ms of queue
}

}  // namespace
}  // namespace distsgd::cluster
