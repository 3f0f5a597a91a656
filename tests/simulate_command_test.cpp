// `distsgd simulate`: predictions from a profile file and a cluster (preset or file), as a table and JSON, and one
// clear error for bad files and flags.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>

#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

const char* kSimulateProfile = R"({"model": "toy", "batch_size": 32, "update_seconds_per_byte": 1e-10, "tensors": [
  {"name": "a", "parameters": 1000000, "forward_seconds": 0.001, "backward_seconds": 0.002},
  {"name": "b", "parameters": 500000, "forward_seconds": 0.002, "backward_seconds": 0.004}]})";

TEST(SimulateCommand, PredictsEachWorkerCountAsTheModelDoes) {
  TempDir dir;
  std::ofstream(dir / "p.json") << kSimulateProfile;
  auto r =
      run_distsgd("simulate --profile " + (dir / "p.json") +
                  " --cluster emulated-1gbit --algo arsgd --overlap none --workers 1,2,4 --out " + (dir / "s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto json = nlohmann::json::parse(read_file(dir / "s.json"));
  ASSERT_EQ(json["predictions"].size(), 3u);
  const auto profile = sim::load_model_profile(dir / "p.json");
  const auto cluster = sim::load_cluster("emulated-1gbit");
  for (const auto& row : json["predictions"]) {
    const auto p =
        sim::predict_allreduce_sgd(profile, row["workers"].get<int64_t>(), cluster.allreduce_cost(), {false});
    EXPECT_DOUBLE_EQ(row["iteration_seconds"].get<double>(), p.iteration_seconds);
  }
  EXPECT_DOUBLE_EQ(json["predictions"][0]["scaling_efficiency"].get<double>(), 1);
  EXPECT_LT(json["predictions"][2]["scaling_efficiency"].get<double>(), 1);
  EXPECT_NE(r.output.find("efficiency"), std::string::npos);
}

// --server-placement states where the measured system's servers ran, over the cluster's own figure; calibrate keeps it
// in the file it writes, which simulate then reads so.
TEST(SimulateCommand, ServerPlacementOverridesTheClustersAndCalibrateKeepsIt) {
  TempDir dir;
  std::ofstream(dir / "p.json") << kSimulateProfile;
  const std::string bsp = "simulate --profile " + (dir / "p.json") +
                          " --cluster hkbu-v100-10gbe --algo bsp --servers 2 --local-aggregation host --workers 8";
  std::map<std::string, double> rates;
  for (const std::string placement : {"own_links", "worker_nodes"}) {
    auto r = run_distsgd(bsp + " --server-placement " + placement + " --out " + (dir / (placement + ".json")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    rates[placement] =
        nlohmann::json::parse(read_file(dir / (placement + ".json")))["predictions"][0]["samples_per_second"];
    auto cluster = sim::load_cluster("hkbu-v100-10gbe");
    cluster.server_placement = sim::server_placement_named(placement, "");
    sim::PsLayout layout;
    layout.local_aggregation = true;
    layout.wait_free = true;  // simulate's --overlap wfbp
    const double expected =
        sim::predict_bsp(sim::load_model_profile(dir / "p.json"), 8, 2, cluster, layout).samples_per_second;
    EXPECT_NEAR(rates[placement] / expected, 1, 1e-9) << placement;
  }
  EXPECT_GT(rates["worker_nodes"], rates["own_links"]);  // a node's own server's half stays off the network
  std::ofstream(dir / "points.csv") << "algorithm,workers,samples_per_second,flags\nbsp,4,900,--servers 1\n"
                                       "bsp,8,1200,--servers 2\n";
  auto r = run_distsgd("calibrate --points " + (dir / "points.csv") + " --profile " + (dir / "p.json") +
                       " --cluster hkbu-v100-10gbe --server-placement worker_nodes --fit compute_scale --out " +
                       (dir / "c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "c.json"))["server_placement"], "worker_nodes");
  EXPECT_TRUE(sim::load_cluster(dir / "c.json").servers_on_worker_nodes());
  r = run_distsgd(bsp + " --server-placement near");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--server-placement must be cluster, own_links or worker_nodes (got 'near')"),
            std::string::npos)
      << r.output;
}

TEST(SimulateCommand, BadFilesAndFlagsAreOneClearError) {
  TempDir dir;
  std::ofstream(dir / "p.json") << kSimulateProfile;
  std::ofstream(dir / "c.json") << R"({"worker_bytes_per_second": -1})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--profile " + (dir / "missing.json"), "missing.json: cannot open the profile"},
      {"--profile " + (dir / "p.json") + " --cluster c2", "--cluster: 'c2' is neither a preset"},
      {"--profile " + (dir / "p.json") + " --cluster " + (dir / "c.json"),
       "c.json: worker_bytes_per_second: expected a positive number, got -1"},
      {"--profile " + (dir / "p.json") + " --algo dgc", "--algo must be arsgd, bsp"},
      {"--profile " + (dir / "p.json") + " --workers 0",
       "--workers must be one or more worker counts, each at least 1"},
  };
  for (const auto& [flags, message] : cases) {
    auto r = run_distsgd("simulate " + flags);
    EXPECT_EQ(r.exit_code, 1) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find("distsgd: error: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
  }
}

}  // namespace
}  // namespace distsgd::testing
