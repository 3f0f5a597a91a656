// The emulated cluster for real: hosts in network namespaces, links shaped by tbf and the delay line, the ranks
// talking over them exactly as over a real network. Needs CAP_NET_ADMIN (CI runs as root); skips, saying so, without.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace distsgd::testing {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool can_build_namespaces() { return geteuid() == 0; }

#define REQUIRE_NAMESPACES()   \
  if (!can_build_namespaces()) \
  GTEST_SKIP() << "not root: the emulated cluster's tests need CAP_NET_ADMIN (see UnprivilegedUserNamespace)"

nlohmann::json commbench(const TempDir& dir, const std::string& args) {
  auto r = run_distsgd("commbench " + args + " --out " + (dir / "bench.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return nullptr;
  return nlohmann::json::parse(read_file(dir / "bench.json"));
}

// The median (or fastest) time of `primitive` at `bytes` in a commbench report.
double time_at(const nlohmann::json& report, const std::string& primitive, double bytes,
               const std::string& statistic = "median_seconds") {
  const auto& p = report.at(primitive);
  for (size_t i = 0; i < p["sizes_bytes"].size(); ++i) {
    if (p["sizes_bytes"][i].get<double>() == bytes) return p[statistic][i].get<double>();
  }
  ADD_FAILURE() << primitive << " has no size " << bytes;
  return NAN;
}

// A 16 MiB message at 1 Gbit/s takes 16 MiB / 125 MB/s (plus a round trip of latency); a ring allreduce of 16 MiB
// over P hosts 2(P-1)/P of that (spec/simulator.md), each host sending and receiving at the link's rate.
TEST(EmulatedCluster, SendAndAllreduceRunAtTheLinkRate) {
  REQUIRE_NAMESPACES();
  TempDir dir;
  const double bytes = 16 * kMiB, rate = 125e6;
  auto two = commbench(dir, "--processes 2 --net 1gbit --min-kb 4096 --max-mb 16 --repeats 5");
  ASSERT_FALSE(two.is_null());
  // The fastest of the repeats: a busy host only ever adds time to a transfer, so the fastest is the link's own.
  const auto fastest = [](const nlohmann::json& report, const std::string& primitive, double size) {
    return time_at(report, primitive, size, "min_seconds");
  };
  const double one_way = fastest(two, "send_recv", bytes);
  const double small_one_way = fastest(two, "send_recv", 4 * kMiB) - 4 * kMiB / rate;  // the latency left
  EXPECT_NEAR(one_way, bytes / rate + std::max(0.0, small_one_way), 0.10 * bytes / rate) << two.dump(1);
  EXPECT_NEAR(fastest(two, "allreduce", bytes), bytes / rate, 0.15 * bytes / rate) << two.dump(1);
  // The links' counters saw the traffic, and the report says which host had which rank.
  const auto& network = two["network"];
  ASSERT_EQ(network["links"].size(), 2u) << two.dump(1);
  EXPECT_GT(network["links"][0]["bytes_sent"].get<double>(), 5 * bytes);
  EXPECT_EQ(network["links"][1]["address"], "10.88.0.2");

  auto four = commbench(dir, "--processes 4 --net 1gbit --min-kb 4096 --max-mb 16 --repeats 5 --no-send-recv");
  ASSERT_FALSE(four.is_null());
  // Four processes on this host's two cores: never much faster than the links allow, slower when the cores are busy
  // (a CI run beside other tests measured a median of 1.16x; the fastest repeat is asserted).
  EXPECT_GE(fastest(four, "allreduce", bytes), 0.85 * 1.5 * bytes / rate) << four.dump(1);
  EXPECT_LE(fastest(four, "allreduce", bytes), 1.3 * 1.5 * bytes / rate) << four.dump(1);
}

// delay=5ms on every host's link: a small message's round trip crosses two hosts' links, so 10 ms more. Time only
// ever adds to a round trip (a loaded host's scheduling noise), never takes from it, so the delayed run's fastest
// repeat bounds the delay from below on its own; comparing it with the plain run's (which noise can inflate too: a
// CI run's plain 1 KiB one-way was 2 ms) would not. The plain run bounds it from above.
TEST(EmulatedCluster, DelayAddsToTheRoundTrip) {
  REQUIRE_NAMESPACES();
  TempDir dir;
  const std::string small = "--processes 2 --min-kb 1 --max-mb 1 --repeats 9";
  auto plain = commbench(dir, small + " --net 1gbit");
  auto delayed = commbench(dir, small + " --net 1gbit,delay=5ms");
  ASSERT_FALSE(plain.is_null());
  ASSERT_FALSE(delayed.is_null());
  const double delayed_round_trip = 2 * time_at(delayed, "send_recv", 1024, "min_seconds");
  const double plain_round_trip = 2 * time_at(plain, "send_recv", 1024, "min_seconds");
  EXPECT_GT(delayed_round_trip, 0.0099) << delayed.dump(1);
  EXPECT_LT(delayed_round_trip - plain_round_trip, 0.0125) << delayed.dump(1) << plain.dump(1);
}

// Four workers push m bytes each to one server at once: the server's downlink carries 4m, taking 4m/R.
TEST(EmulatedCluster, IncastAtTheServerTakesAllBytesOverItsRate) {
  REQUIRE_NAMESPACES();
  TempDir dir;
  auto report =
      commbench(dir, "--processes 5 --net 1gbit --incast --no-send-recv --min-kb 1024 --max-mb 4 --repeats 5");
  ASSERT_FALSE(report.is_null());
  const double expected = 4 * 4 * kMiB / 125e6;
  // The fastest repeat: a busy host only adds time.
  EXPECT_NEAR(time_at(report, "incast", 4 * kMiB, "min_seconds"), expected, 0.15 * expected) << report.dump(1);
}

const std::string kShortRun =
    " --workers 2 --model lenet5 --dataset synthetic --synthetic-train-size 1920 --synthetic-test-size 256 "
    "--epochs 100 --threads 1 --no-checkpoint --progress-seconds 1000 --seed 3";

nlohmann::json train(const TempDir& dir, const std::string& args) {
  auto r = run_distsgd("train" + kShortRun + " " + args + " --out " + (dir / "run") + " --overwrite");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
  if (r.exit_code != 0) return nullptr;
  return nlohmann::json::parse(read_file(dir / "run/summary.json"));
}

// Every algorithm trains over 1 Gbit/s links as on loopback: the synchronous ones to the same bits as their loopback
// run, the others (whose interleaving depends on timing) to the accuracy every one of them reaches on loopback at these
// settings (1.0 on this synthetic task, in each of two loopback runs per algorithm when this test was written; a
// loopback run per algorithm here would double the test's time and prove no more). summary.json tells the links'
// traffic.
TEST(EmulatedCluster, EveryAlgorithmTrainsAsOnLoopback) {
  REQUIRE_NAMESPACES();
  TempDir dir;
  // Settings where each learns the synthetic task in a few seconds (SSP's default s = 10 does not within 200 steps
  // at this rate, on loopback either; ALADDIN's server mixing needs more steps).
  const std::string run = " --lr 0.01 --max-steps 200";
  const std::vector<std::pair<std::string, bool>> algorithms = {
      {"arsgd" + run, true},
      {"bsp --servers 1" + run, true},
      {"asp --servers 1" + run, false},
      {"ssp --servers 1 --staleness 2" + run, false},
      {"easgd --servers 1" + run, false},
      {"aladdin --servers 1 --lr 0.05 --max-steps 500", false},
      {"gosgd" + run, false},
      {"gossip" + run, false},
      {"adpsgd" + run, false},
      {"sgp" + run, false}};
  for (const auto& [algo, deterministic] : algorithms) {
    auto emulated = train(dir, "--algo " + algo + " --net 1gbit");
    ASSERT_FALSE(emulated.is_null()) << algo;
    const double accuracy = emulated["test_accuracy"].get<double>();
    if (deterministic) {
      auto loopback = train(dir, "--algo " + algo);
      ASSERT_FALSE(loopback.is_null()) << algo;
      EXPECT_EQ(loopback["test_accuracy"].get<double>(), accuracy) << algo;
      EXPECT_FALSE(loopback.contains("network")) << algo;
    } else {
      EXPECT_GE(accuracy, 0.9) << algo;
    }
    ASSERT_TRUE(emulated.contains("network")) << algo;
    const auto& links = emulated["network"]["links"];
    EXPECT_GT(links[0]["bytes_sent"].get<double>(), 0) << algo;
    EXPECT_GT(links[0]["utilisation_sent"].get<double>(), 0) << algo;
  }
}

// 1% of every host's packets lost: TCP retransmits, and the synchronous run ends with exactly the loopback result.
TEST(EmulatedCluster, LossyLinksStillTrainCorrectly) {
  REQUIRE_NAMESPACES();
  TempDir dir;
  auto loopback = train(dir, "--algo arsgd --max-steps 60");
  auto lossy = train(dir, "--algo arsgd --max-steps 60 --net 1gbit,loss=1%");
  ASSERT_FALSE(loopback.is_null() || lossy.is_null());
  EXPECT_EQ(loopback["test_accuracy"], lossy["test_accuracy"]);
  EXPECT_EQ(loopback["test_loss"], lossy["test_loss"]);
  EXPECT_GT(lossy["network"]["links"][0]["delay_line_dropped"].get<double>(), 0) << lossy["network"].dump(1);
}

// A partition: worker 1's link goes down (every packet to or from its host dropped). Shorter than --timeout, TCP
// retransmits through it and the run finishes; longer, the run ends within the timeout with one line that names
// the failed rank and the link that was down.
TEST(EmulatedCluster, LinkDownShorterThanTheTimeoutIsSurvivedLongerEndsTheRun) {
  REQUIRE_NAMESPACES();
  TempDir dir;
  const std::string base =
      "train --algo arsgd --workers 2 --model lenet5 --dataset synthetic --synthetic-train-size 1920 "
      "--synthetic-test-size 64 --epochs 1000 --threads 1 --no-checkpoint --progress-seconds 1000 --net 1gbit "
      "--overwrite --out " +
      (dir / "run");
  auto survived = run_distsgd(base + " --time-budget 15 --timeout 30 --link worker1=down=8s+2s");
  ASSERT_EQ(survived.exit_code, 0) << survived.output;
  const auto summary = nlohmann::json::parse(read_file(dir / "run/summary.json"));
  const auto& links = summary["network"]["links"];
  EXPECT_EQ(links[1]["down_for_seconds"], 2.0) << links[1].dump(1);
  // A link is counted by what its host sends; during the outage either side may be the one that is sending (a
  // worker blocked in a receive sends nothing, not even acknowledgements), so the drops are summed over both.
  double dropped = 0;
  for (const auto& link : links) dropped += link["delay_line_dropped"].get<double>();
  EXPECT_GT(dropped, 0) << "the outage dropped nothing\n" << links.dump(1);

  const auto start = std::chrono::steady_clock::now();
  auto cut = run_distsgd(base + " --time-budget 120 --timeout 5 --link worker1=down=5s+600s");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(cut.exit_code, 1) << cut.output;
  EXPECT_LT(seconds, 60) << "the run did not end within the timeout after the link went down\n" << cut.output;
  const auto last = cut.output.rfind("distsgd: error: ");
  ASSERT_NE(last, std::string::npos) << cut.output;
  const std::string line = cut.output.substr(last);
  EXPECT_NE(line.find("the emulated link of host 10.88.0.2 (rank 1) went down 5 s after the start, for 600 s"),
            std::string::npos)
      << cut.output;
}

// The network namespaces (as "net:[inode]") that processes are in or hold descriptors of.
std::set<std::string> namespaces_in_use() {
  std::set<std::string> in_use;
  for (const auto& process : std::filesystem::directory_iterator("/proc")) {
    const std::string name = process.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    in_use.insert(std::filesystem::read_symlink(process.path() / "ns/net", ec).string());
    for (const auto& fd : std::filesystem::directory_iterator(process.path() / "fd", ec)) {
      const auto target = std::filesystem::read_symlink(fd.path(), ec).string();
      if (target.rfind("net:[", 0) == 0) in_use.insert(target);
    }
  }
  return in_use;
}

// kill -9 of the launcher: its ranks die with it, and every namespace it made (hosts and switch, with their
// interfaces) vanishes, since nothing but those processes held them.
TEST(EmulatedCluster, KilledLauncherLeavesNothingBehind) {
  REQUIRE_NAMESPACES();
  TempDir dir;
  const auto before = namespaces_in_use();
  const std::string command =
      std::string(DISTSGD_BINARY) +
      " train --workers 2 --servers 1 --algo bsp --dataset synthetic --synthetic-train-size 1920 "
      "--epochs 1000 --threads 1 --no-checkpoint --net 100mbit,delay=1ms --hosts 2 --out " +
      (dir / "run") + " > " + (dir / "log") + " 2>&1 & echo $!";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  pid_t launcher = 0;
  ASSERT_EQ(fscanf(pipe, "%d", &launcher), 1);
  pclose(pipe);
  // Wait until the ranks train (the run directory's config.json is written once they all connected).
  for (int i = 0; i < 600 && !std::filesystem::exists(dir / "run/config.json"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(std::filesystem::exists(dir / "run/config.json")) << read_file(dir / "log");
  std::set<std::string> made;
  for (const auto& ns : namespaces_in_use()) {
    if (!before.count(ns)) made.insert(ns);
  }
  EXPECT_EQ(made.size(), 3u) << "expected 2 hosts and the switch";
  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  std::set<std::string> left = made;
  for (int i = 0; i < 100 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto now = namespaces_in_use();
    left.clear();
    for (const auto& ns : made) {
      if (now.count(ns)) left.insert(ns);
    }
  }
  EXPECT_TRUE(left.empty()) << left.size() << " namespaces of the run still in use\n" << read_file(dir / "log");
}

// Without root, the launcher makes itself root of a new user namespace and builds the cluster inside it. Run as
// nobody (setpriv, from a copy of the binary nobody can reach), the links are shaped as they are for root.
TEST(EmulatedCluster, UnprivilegedUserNamespace) {
  TempDir dir;
  std::filesystem::permissions(dir.str(), std::filesystem::perms::all);
  std::filesystem::copy_file(DISTSGD_BINARY, dir / "distsgd");
  std::filesystem::permissions(dir / "distsgd", std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                                    std::filesystem::perms::group_exec |
                                                    std::filesystem::perms::others_read |
                                                    std::filesystem::perms::others_exec);
  const std::string as_user = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const std::string command = "cd " + dir.str() + " && " + as_user + dir / "distsgd" +
                              " commbench --processes 2 --net 1gbit,delay=1ms --min-kb 4096 --max-mb 16 --repeats 3 "
                              "--no-send-recv --out " +
                              dir / "bench.json" + " 2>&1";
  const auto r = run_shell(command);
  if (r.output.find("user namespace could not be made") != std::string::npos) {
    GTEST_SKIP() << "this kernel refuses unprivileged user namespaces: " << r.output;
  }
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto report = nlohmann::json::parse(read_file(dir / "bench.json"));
  const double bytes = 16 * kMiB, rate = 125e6;
  // The fastest of the repeats: never much faster than the link (it is shaped), and within 1.5x of it (shaped at
  // this rate, not another). The median is not asserted: on a host busy with other work it came out 1.35x (a fresh
  // make test beside a study), which says nothing about the namespace.
  const double fastest = time_at(report, "allreduce", bytes, "min_seconds");
  EXPECT_GE(fastest, 0.85 * bytes / rate) << report.dump(1);
  EXPECT_LE(fastest, 1.5 * bytes / rate) << report.dump(1);
  EXPECT_GT(report["network"]["links"][1]["delay_line_packets"].get<double>(), 0) << report.dump(1);
}

// Bad network flags: one line each, non-zero exit, nothing started (no run directory).
TEST(EmulatedCluster, BadNetworkFlagsAreOneClearError) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--net 1gbits", "--net: '1gbits' is not a rate"},
      {"--net 0mbit", "rate of zero"},
      {"--net 1gbit,loss=101%", "above 100%"},
      {"--net 1gbit --link worker5=1mbit", "--link worker5: the run has 2 workers"},
      {"--net 1gbit --hosts 3", "--hosts 3 is more hosts than the run's 2 processes"},
      {"--hosts 2", "give --net too"},
      {"--net 1gbit --placement scatter", "--placement: unknown 'scatter'"},
      {"--net 1gbit,down=5s", "down='5s' is not START+LENGTH"},
      {"--net 1gbit,down=5s+0s", "lasts no time"},
  };
  for (const auto& [flags, message] : cases) {
    auto r = run_distsgd("train --workers 2 --dataset synthetic " + flags + " --out " + (dir / "run"));
    EXPECT_EQ(r.exit_code, 1) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find("distsgd: error: "), std::string::npos) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << flags << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir / "run")) << flags;
  }
}

}  // namespace
}  // namespace distsgd::testing
