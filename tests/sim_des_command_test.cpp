// `distsgd simulate --fidelity des`: the table and JSON of the discrete-event simulator, its Chrome trace in the
// form of a real run's (`distsgd train --trace`: pid = rank, tid 0 compute and 1 communication, the same span
// names), and one clear error for each bad flag.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>

#include "distsgd/core/error.hpp"
#include "distsgd/core/rank_factor.hpp"
#include "distsgd/sim/des/discrete_event_simulator.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

const char* kDesProfile = R"({"model": "toy", "batch_size": 32, "data_seconds": 0.001, "update_seconds_per_byte": 1e-10,
  "tensors": [{"name": "a", "parameters": 1000000, "forward_seconds": 0.001, "backward_seconds": 0.002},
              {"name": "b", "parameters": 500000, "forward_seconds": 0.002, "backward_seconds": 0.004}]})";

struct Profile {
  TempDir dir;
  Profile() { std::ofstream(dir / "p.json") << kDesProfile; }
  std::string flags() const { return "simulate --profile " + (dir / "p.json") + " --fidelity des "; }
};

TEST(SimulateDesCommand, WritesTheSimulatedFiguresOfEachWorkerCount) {
  Profile p;
  auto r = run_distsgd(p.flags() +
                       "--algo bsp --servers 2 --workers 1,4 --iterations 20 --warmup 2 --slowdown 3:2 "
                       "--cluster emulated-1gbit --out " +
                       (p.dir / "s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("discrete-event"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("utilisation: "), std::string::npos) << r.output;
  const auto json = nlohmann::json::parse(read_file(p.dir / "s.json"));
  EXPECT_EQ(json["fidelity"], "des");
  ASSERT_EQ(json["predictions"].size(), 2u);
  // The command runs what the library runs.
  sim::DesSettings s;
  s.algorithm = "bsp";
  s.servers = 2;
  s.workers = 4;
  s.iterations = 20;
  s.warmup = 2;
  s.heterogeneity.slowdowns = {{3, 2.0}};
  const auto direct =
      sim::simulate_discrete_events(sim::load_model_profile(p.dir / "p.json"), sim::load_cluster("emulated-1gbit"), s);
  const auto& row = json["predictions"][1];
  EXPECT_DOUBLE_EQ(row["iteration_seconds"].get<double>(), direct.iteration_seconds);
  EXPECT_EQ(row["des"]["per_worker"].size(), 4u);
  EXPECT_TRUE(row["des"]["utilisation"].contains("server_in"));
  EXPECT_GT(row["des"]["per_worker"][3]["compute_seconds"].get<double>(),
            row["des"]["per_worker"][0]["compute_seconds"].get<double>());  // the slowed worker
}

// The names and lanes algo/ and train/ give their spans (worker_loop.cpp, allreduce_worker.cpp, comm_trace.hpp,
// bsp.cpp), and the rows process.cpp names.
TEST(SimulateDesCommand, TracesTheRunAsARealRunIsTraced) {
  Profile p;
  for (const auto& [algo, expected] : std::vector<std::pair<std::string, std::set<std::string>>>{
           {"arsgd", {"data", "forward", "backward", "wait", "update", "allreduce bucket 0"}},
           {"bsp", {"data", "forward", "backward", "push, wait for reply", "update"}}}) {
    const std::string trace = p.dir / (algo + ".json");
    auto r = run_distsgd(p.flags() + "--algo " + algo + " --workers 2 --iterations 3 --warmup 0 --trace " + trace);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto json = nlohmann::json::parse(read_file(trace));
    std::set<std::string> names, rows;
    for (const auto& e : json["traceEvents"]) {
      if (e["ph"] == "M" && e["name"] == "process_name") rows.insert(e["args"]["name"].get<std::string>());
      if (e["ph"] != "X") continue;
      names.insert(e["name"].get<std::string>());
      const auto& name = e["name"].get<std::string>();
      const bool communication = name.rfind("allreduce", 0) == 0 || name.rfind("push to shard", 0) == 0;
      EXPECT_EQ(e["tid"].get<int>(), communication ? 1 : 0) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0);
    }
    for (const auto& name : expected) EXPECT_TRUE(names.count(name)) << algo << ": no span " << name;
    EXPECT_TRUE(rows.count("worker 1"));
    EXPECT_EQ(rows.count("server 0"), algo == "bsp" ? 1u : 0u);
  }
}

// The settings' checks, without a process each.
TEST(SimulateDesCommand, SettingsOutOfRangeNameTheirFlag) {
  const auto error_of = [](const std::function<void(sim::DesSettings&)>& change) -> std::string {
    sim::DesSettings s;
    change(s);
    try {
      sim::check(s);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of([](auto& s) { s.iterations = 0; }), "--iterations must be at least 1");
  EXPECT_NE(error_of([](auto& s) {
              s.algorithm = "easgd";
              s.density = 0.01;
            }).find("--density: Deep Gradient Compression applies to arsgd, bsp, asp and ssp"),
            std::string::npos);
  EXPECT_EQ(error_of([](auto& s) {
              s.heterogeneity.link_factors = {{1, 0.0}};
            }),
            "--link-multiplier 1:0: the factor must be at least 0.001");
  EXPECT_EQ(error_of([](auto& s) { s.heterogeneity.straggler_probability = 2; }), "--straggler-prob must be in [0, 1]");
  EXPECT_EQ(error_of([](auto& s) { s.algorithm = "dgc"; }).substr(0, 28), "--algo: the simulator runs a");
  EXPECT_THROW(parse_rank_factor("--link-multiplier", "1:x"), Error);
  EXPECT_EQ(parse_rank_factor("--slowdown", "3:2.5"), std::make_pair(int64_t{3}, 2.5));
}

void expect_errors(const Profile& p, const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [flags, message] : cases) {
    auto r = run_distsgd(p.flags() + flags);
    EXPECT_EQ(r.exit_code, 1) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find("distsgd: error: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
  }
}

TEST(SimulateDesCommand, BadFlagsAreOneClearError) {
  Profile p;
  expect_errors(p, {
                       {"--collectives rings", "--collectives must be auto, steps or flows"},
                       {"--workers 2,4 --trace t.json", "--trace: give one --workers count"},
                       {"--algo gossip --workers 1", "--algo gossip is decentralized: simulate 2 or more workers"},
                   });
  auto r = run_distsgd("simulate --profile " + (p.dir / "p.json") + " --fidelity fast");
  EXPECT_NE(r.output.find("--fidelity must be analytical or des (got 'fast')"), std::string::npos) << r.output;
  r = run_distsgd("simulate --profile " + (p.dir / "p.json") + " --slowdown 1:2");
  EXPECT_NE(r.output.find("need --fidelity des"), std::string::npos) << r.output;
}

TEST(SimulateDesCommand, BadHeterogeneityIsOneClearError) {
  Profile p;
  expect_errors(p, {
                       {"--workers 2,4 --slowdown 9:2", "--slowdown 9:2: there is no worker 9"},
                       {"--workers 4 --slowdown three", "--slowdown: 'three' is not of the form RANK:FACTOR"},
                       {"--workers 4 --slowdown 1:0.5", "--slowdown 1:0.5: the factor must be at least 1"},
                       {"--jitter-cv -1", "--jitter-cv must not be negative"},
                   });
  const auto r = run_distsgd("simulate --help");
  for (const char* flag : {"--fidelity", "--iterations", "--warmup", "--seed", "--slowdown", "--compute-multiplier",
                           "--link-multiplier", "--jitter-cv", "--straggler-prob", "--trace", "--collectives"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  }
}

// A cluster whose allreduce start-ups grow as a tree's (allreduce_latency "tree"): both fidelities save the ring's
// extra 2(P-1) - 2 log2 P start-ups of AR-SGD's one allreduce per iteration, and agree.
TEST(SimulateDesCommand, ATreeClusterSavesTheRingsStartUpsInBothFidelities) {
  Profile p;
  auto cluster = sim::to_json(sim::load_cluster("10gbe"));
  cluster["alpha_seconds"] = 1e-3;  // large enough to show beside the gradient's bytes
  std::ofstream(p.dir / "ring.json") << cluster.dump();
  cluster["allreduce_latency"] = "tree";
  std::ofstream(p.dir / "tree.json") << cluster.dump();
  std::map<std::string, double> seconds;
  for (const std::string fidelity : {"analytical", "des"}) {
    for (const std::string latency : {"ring", "tree"}) {
      auto r = run_distsgd("simulate --profile " + (p.dir / "p.json") + " --fidelity " + fidelity +
                           " --algo arsgd --overlap none --workers 16 --iterations 10 --warmup 2 --cluster " +
                           (p.dir / (latency + ".json")) + " --out " + (p.dir / "s.json"));
      ASSERT_EQ(r.exit_code, 0) << r.output;
      const auto json = nlohmann::json::parse(read_file(p.dir / "s.json"));
      seconds[fidelity + " " + latency] = json["predictions"][0]["iteration_seconds"].get<double>();
    }
  }
  const double saved = (2 * 15 - 2 * 4) * 1e-3;
  EXPECT_NEAR(seconds["analytical ring"] - seconds["analytical tree"], saved, 1e-9);
  EXPECT_NEAR(seconds["des ring"] - seconds["des tree"], saved, 0.02 * saved);
  EXPECT_NEAR(seconds["des tree"], seconds["analytical tree"], 0.02 * seconds["analytical tree"]);
}

}  // namespace
}  // namespace distsgd::testing
