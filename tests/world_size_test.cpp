// The world size under an external launcher: without --workers, distsgd takes it from the variables mpirun, srun
// and torchrun set (less --servers); with --workers, a count that disagrees stops the run with one line naming both.
// The launchers are played by setting their variables on subprocesses (and mpirun itself when installed).
#include "distsgd/comm/process_env.hpp"
#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/train/process.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

using distsgd::testing::count_of;
using distsgd::testing::read_file;
using distsgd::testing::run_shell;
using distsgd::testing::TempDir;

namespace {

const std::string kWorldSizeSmallRun =
    " train --model mlp --mlp-width 16 --mlp-layers 1 --dataset synthetic --synthetic-train-size 512 "
    "--synthetic-test-size 64 --batch-size 8 --max-steps 10 --threads 1 --no-checkpoint --progress-seconds 1000";

int free_port() { return distsgd::testing::free_tcp_port(); }

// `rank_variable`=r `size_variable`=n for r in 0..n-1, all started at once; the exit codes and output of all.
distsgd::testing::CommandResult run_world(const std::string& rank_variable, const std::string& size_variable,
                                          int processes, const std::string& flags) {
  std::string command = "export MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(free_port()) + "; status=0; ";
  for (int r = 0; r < processes; ++r) {
    command += rank_variable + "=" + std::to_string(r) + " " + size_variable + "=" + std::to_string(processes) + " " +
               DISTSGD_BINARY + kWorldSizeSmallRun + " " + flags + " 2>&1 & pid" + std::to_string(r) + "=$!; ";
  }
  for (int r = 0; r < processes; ++r) command += "wait $pid" + std::to_string(r) + " || status=1; ";
  command += "exit $status";
  return run_shell(command);
}

}  // namespace

TEST(WorldSize, WithoutWorkersTheLaunchersCountLessTheServersIsTaken) {
  distsgd::comm::ProcessEnv env;
  env.world_size = 6;
  env.launcher = "srun";
  env.size_variable = "SLURM_NTASKS";
  distsgd::TrainConfig c;
  c.servers = 2;
  distsgd::train::take_world_size_from_launcher(c, env, false);
  EXPECT_EQ(c.workers, 4);
  c.workers = 5;
  try {
    distsgd::train::take_world_size_from_launcher(c, env, true);
    FAIL() << "a disagreeing count was accepted";
  } catch (const distsgd::Error& e) {
    EXPECT_STREQ(e.what(),
                 "srun started 6 processes (SLURM_NTASKS=6) but --workers 5 --servers 2 make 7 (without --workers, "
                 "the launcher's count less --servers is taken)");
  }
  c.servers = 6;
  EXPECT_THROW(distsgd::train::take_world_size_from_launcher(c, env, false), distsgd::Error);
}

// Each launcher's variables, two processes, no --workers: one run of two workers, one results line.
TEST(WorldSize, TwoProcessesOfEachLauncherMakeOneRunOfTwoWorkers) {
  struct Launcher {
    const char* rank;
    const char* size;
  };
  for (const auto& l : {Launcher{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                        Launcher{"SLURM_PROCID", "SLURM_NTASKS"}, Launcher{"RANK", "WORLD_SIZE"}}) {
    TempDir dir;
    const auto r = run_world(l.rank, l.size, 2, "--algo arsgd --out " + (dir / "run"));
    ASSERT_EQ(r.exit_code, 0) << l.size << "\n" << r.output;
    const auto summary = nlohmann::json::parse(read_file(dir / "run/summary.json"));
    EXPECT_EQ(summary["workers"], 2) << l.size;
    EXPECT_EQ(summary["steps"], 10) << l.size;
    EXPECT_EQ(count_of(r.output, "result "), 1) << l.size << "\n" << r.output;
    EXPECT_EQ(count_of(r.output, "already holds a run"), 0) << r.output;
  }
}

// With servers: three srun tasks and --servers 1 are two workers and one server.
TEST(WorldSize, ServersAreTakenFromTheCount) {
  TempDir dir;
  const auto r = run_world("SLURM_PROCID", "SLURM_NTASKS", 3, "--algo asp --servers 1 --out " + (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_file(dir / "run/summary.json"));
  EXPECT_EQ(summary["workers"], 2);
  EXPECT_EQ(summary["servers"], 1);
}

// A --workers that disagrees with the launcher, even --workers 1 (which used to train alone in every process).
TEST(WorldSize, DisagreeingWorkersStopWithOneLineNamingBothNumbers) {
  for (const std::string workers : {"1", "3"}) {
    TempDir dir;
    const auto r = run_shell("OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 " + std::string(DISTSGD_BINARY) +
                             kWorldSizeSmallRun + " --workers " + workers + " --out " + (dir / "run") + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.output, "distsgd: error: mpirun started 2 processes (OMPI_COMM_WORLD_SIZE=2) but --workers " + workers +
                            " --servers 0 make " + workers +
                            " (without --workers, the launcher's count less --servers is taken)\n");
  }
  const auto r =
      run_shell("RANK=0 WORLD_SIZE=1 " + std::string(DISTSGD_BINARY) + kWorldSizeSmallRun + " --servers 1 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("started 1 process (WORLD_SIZE=1), which leaves no worker beside --servers 1"),
            std::string::npos)
      << r.output;
}

// mpirun itself, without --workers.
TEST(WorldSize, MpirunWithoutWorkers) {
  if (system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun (openmpi-bin) is not installed";
  TempDir dir;
  const std::string command = "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(free_port()) +
                              " mpirun -np 2 --oversubscribe " + (geteuid() == 0 ? "--allow-run-as-root " : "") +
                              "-x MASTER_ADDR -x MASTER_PORT " + DISTSGD_BINARY + kWorldSizeSmallRun + " --out " +
                              (dir / "run") + " 2>&1";
  const auto r = run_shell(command);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_file(dir / "run/summary.json"));
  EXPECT_EQ(summary["workers"], 2);
  EXPECT_EQ(count_of(r.output, "result "), 1) << r.output;
}
