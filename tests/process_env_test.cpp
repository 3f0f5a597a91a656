// Who a process is, read from its launcher's variables: the processes on its host (which share its cores) included.
#include "distsgd/comm/process_env.hpp"
#include "distsgd/core/error.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

// Sets variables for one test and restores the process's environment after it.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(std::vector<std::pair<std::string, std::string>> variables) {
    for (const char* name : kLauncherVariables) unset(name);
    for (const auto& [name, value] : variables) {
      remember(name);
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value.second) {
        ::setenv(name.c_str(), value.first.c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  static constexpr const char* kLauncherVariables[] = {"RANK",
                                                       "WORLD_SIZE",
                                                       "OMPI_COMM_WORLD_RANK",
                                                       "OMPI_COMM_WORLD_SIZE",
                                                       "PMI_RANK",
                                                       "PMI_SIZE",
                                                       "SLURM_PROCID",
                                                       "SLURM_NTASKS",
                                                       "SLURM_NODEID",
                                                       "LOCAL_WORLD_SIZE",
                                                       "OMPI_COMM_WORLD_LOCAL_SIZE",
                                                       "MPI_LOCALNRANKS",
                                                       "DISTSGD_LAUNCHED",
                                                       "SLURM_TASKS_PER_NODE",
                                                       "SLURM_STEP_TASKS_PER_NODE"};
  void remember(const std::string& name) {
    for (const auto& [saved, value] : saved_) {
      if (saved == name) return;
    }
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, std::make_pair(std::string(old ? old : ""), old != nullptr));
  }
  void unset(const std::string& name) {
    remember(name);
    ::unsetenv(name.c_str());
  }
  std::vector<std::pair<std::string, std::pair<std::string, bool>>> saved_;
};

int64_t local_size_under_srun(const std::string& tasks_per_node, const std::string& node_id) {
  ScopedEnvironment env({{"SLURM_PROCID", "0"},
                         {"SLURM_NTASKS", "7"},
                         {"SLURM_STEP_TASKS_PER_NODE", tasks_per_node},
                         {"SLURM_NODEID", node_id}});
  const auto read = distsgd::comm::process_env_from_environment();
  if (!read) throw distsgd::Error("no launcher read");
  EXPECT_EQ(read->launcher, "srun");
  return read->local_world_size;
}

}  // namespace

// srun says how many tasks each node of the step runs ("2(x3),1": two on each of three nodes, then one) and which
// node this is: a task on the fourth node has the host to itself, one on the first shares it with another.
TEST(ProcessEnv, SrunsTasksPerNodeGiveTheProcessesOnThisHost) {
  EXPECT_EQ(local_size_under_srun("2(x3),1", "0"), 2);
  EXPECT_EQ(local_size_under_srun("2(x3),1", "2"), 2);
  EXPECT_EQ(local_size_under_srun("2(x3),1", "3"), 1);
  EXPECT_EQ(local_size_under_srun("4,3", "1"), 3);
  EXPECT_EQ(local_size_under_srun("7", "0"), 7);  // one node: every task on this host
}

TEST(ProcessEnv, MalformedTasksPerNodeNameTheVariable) {
  for (const auto& [text, node] : std::vector<std::pair<std::string, std::string>>{
           {"2(x3", "0"}, {"two", "0"}, {"2(x3),1", "4"}, {"2,", "1"}, {"2(xy)", "0"}}) {
    try {
      local_size_under_srun(text, node);
      ADD_FAILURE() << text << " at node " << node << " was read";
    } catch (const distsgd::Error& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_STEP_TASKS_PER_NODE='" + text + "'"), std::string::npos) << e.what();
    }
  }
}

// The launcher's own local size wins (mpirun under a Slurm allocation sets both), and without any, a process is
// alone on its host.
TEST(ProcessEnv, TheLaunchersLocalSizeWinsAndNoneMeansAlone) {
  {
    ScopedEnvironment env({{"OMPI_COMM_WORLD_RANK", "1"},
                           {"OMPI_COMM_WORLD_SIZE", "4"},
                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                           {"SLURM_STEP_TASKS_PER_NODE", "4"}});
    const auto read = distsgd::comm::process_env_from_environment();
    ASSERT_TRUE(read);
    EXPECT_EQ(read->launcher, "mpirun");
    EXPECT_EQ(read->local_world_size, 2);
  }
  {
    ScopedEnvironment env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}});
    const auto read = distsgd::comm::process_env_from_environment();
    ASSERT_TRUE(read);
    EXPECT_EQ(read->local_world_size, 1);
  }
}
