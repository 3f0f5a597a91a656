// The local launcher with /bin/sh children: output forwarding, environment, failure propagation, signals, no orphans.
#include "distsgd/comm/launcher.hpp"
#include "distsgd/comm/forked_main.hpp"
#include "distsgd/comm/line_forwarder.hpp"
#include "distsgd/comm/unique_fd.hpp"

#include "test_util.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

using distsgd::comm::launch_local;
using distsgd::comm::LaunchSpec;
using distsgd::comm::LineForwarder;
using distsgd::testing::count_of;
using distsgd::testing::read_file;
using distsgd::testing::TempDir;
using Clock = std::chrono::steady_clock;

namespace {

LaunchSpec shell_job(int processes, const std::string& script) {
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  for (int i = 0; i < processes; ++i) spec.labels.push_back("worker " + std::to_string(i));
  spec.grace_seconds = 1;
  return spec;
}

struct LaunchOutcome {
  int status = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};

// Runs the launcher in this process with its stdout and stderr captured.
LaunchOutcome launch_captured(const LaunchSpec& spec) {
  LaunchOutcome outcome;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const auto start = Clock::now();
  try {
    outcome.status = launch_local(spec);
  } catch (const std::exception& e) {
    outcome.err = std::string("launch_local threw: ") + e.what() + "\n";
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  outcome.out = ::testing::internal::GetCapturedStdout();
  outcome.err += ::testing::internal::GetCapturedStderr();
  return outcome;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Shell lines that publish a pid atomically (write, then rename), so a reader never sees a half-written file.
std::string publish(const std::string& path, const std::string& pid_expression) {
  return "echo " + pid_expression + " > " + path + ".tmp && mv " + path + ".tmp " + path + "\n";
}

pid_t read_pid(const std::string& path) { return static_cast<pid_t>(std::atol(read_file(path).c_str())); }

bool wait_for_files(const std::vector<std::string>& paths, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (const auto& path : paths) {
    while (!std::filesystem::exists(path)) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return true;
}

// /proc/<pid>/stat fields after the command name: state, ppid, pgrp. Empty when the process is gone.
std::vector<std::string> stat_fields(const std::string& pid) {
  const std::string stat = read_file("/proc/" + pid + "/stat");
  const auto name_end = stat.rfind(')');
  if (name_end == std::string::npos) return {};
  std::istringstream in(stat.substr(name_end + 1));
  std::vector<std::string> fields(3);
  in >> fields[0] >> fields[1] >> fields[2];
  return fields;
}

// A zombie (dead, waiting for a reaper that may be a container's PID 1) counts as gone.
bool is_alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno != ESRCH;
  const auto fields = stat_fields(std::to_string(pid));
  return !fields.empty() && fields[0] != "Z" && fields[0] != "X";
}

std::vector<pid_t> living_members_of_group(pid_t group) {
  std::vector<pid_t> members;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto fields = stat_fields(name);
    if (fields.size() == 3 && fields[2] == std::to_string(group) && fields[0] != "Z" && fields[0] != "X") {
      members.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return members;
}

// SIGKILL takes effect asynchronously: allow the kernel a moment before calling a process a survivor.
void expect_gone(pid_t pid, const std::string& what) {
  ASSERT_GT(pid, 0) << what;
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (is_alive(pid) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(is_alive(pid)) << what << " (pid " << pid << ") survived the launcher";
  if (is_alive(pid)) ::kill(pid, SIGKILL);
}

void expect_group_gone(pid_t group) {
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (!living_members_of_group(group).empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(living_members_of_group(group).empty()) << "process group " << group << " survived the launcher";
}

// Runs the launcher in a forked copy of this test (so signals can be sent to it), output to files.
pid_t launch_in_subprocess(const LaunchSpec& spec, const std::string& out_path, const std::string& err_path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDOUT_FILENO);
    ::dup2(::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDERR_FILENO);
    int status = 99;
    try {
      status = launch_local(spec);
    } catch (...) {
    }
    ::_exit(status);
  }
  return pid;
}

// The wait status of pid, or -1 (and the process killed) when it takes longer than timeout.
int wait_status(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}

}  // namespace

TEST(Launcher, AllSucceedForwardsWholePrefixedStderrLinesAndPlainStdout) {
  // Children start output at staggered times and write many lines at once, so forwarding runs concurrently.
  const auto r = launch_captured(shell_job(
      4,
      "sleep 0.$RANK\n"
      "i=0\n"
      "while [ $i -lt 300 ]; do\n"
      "  echo \"rank $RANK line $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" >&2\n"
      "  echo \"result rank=$RANK line=$i yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"\n"
      "  i=$((i + 1))\n"
      "done\n"
      "printf 'last words of %s' $RANK >&2\n"));
  ASSERT_EQ(r.status, 0) << r.err;

  const std::regex stderr_line(R"(\[worker (\d)\] (rank \1 line \d+ x+|last words of \1))");
  const auto err_lines = lines_of(r.err);
  EXPECT_EQ(err_lines.size(), 4u * 301);
  for (const auto& line : err_lines) ASSERT_TRUE(std::regex_match(line, stderr_line)) << "mangled line: " << line;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string rank_text = std::to_string(rank);
    EXPECT_EQ(count_of(r.err, "[worker " + rank_text + "] rank " + rank_text + " line 299 x"), 1);
    EXPECT_EQ(count_of(r.err, "[worker " + rank_text + "] last words of " + rank_text + "\n"), 1);
  }

  const std::regex stdout_line(R"(result rank=\d line=\d+ y+)");
  const auto out_lines = lines_of(r.out);
  EXPECT_EQ(out_lines.size(), 4u * 300);
  for (const auto& line : out_lines) ASSERT_TRUE(std::regex_match(line, stdout_line)) << "mangled line: " << line;
}

TEST(Launcher, ChildrenSeeRankWorldSizeAndEnvironment) {
  ::setenv("DISTSGD_TEST_INHERITED", "from the launcher", 1);
  ::setenv("RANK", "99", 1);  // a stale rank in the launcher's own environment must not reach the children
  auto spec =
      shell_job(3,
                "echo \"rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE launched=$DISTSGD_LAUNCHED"
                " extra=$DISTSGD_TEST_EXTRA inherited=$DISTSGD_TEST_INHERITED\"\n"
                "echo \"ignored signals $RANK: $(grep SigIgn /proc/$$/status | cut -f2)\"\n");
  spec.env = {{"DISTSGD_TEST_EXTRA", "a b=c"}};
  const auto r = launch_captured(spec);
  ::unsetenv("DISTSGD_TEST_INHERITED");
  ::unsetenv("RANK");
  ASSERT_EQ(r.status, 0) << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string r_text = std::to_string(rank);
    EXPECT_EQ(count_of(r.out, "rank=" + r_text + " world=3 local=" + r_text +
                                  "/3 launched=1 extra=a b=c inherited=from the launcher\n"),
              1)
        << r.out;
    // The launcher ignores SIGPIPE while it runs; its children must not inherit that.
    const auto at = r.out.find("ignored signals " + r_text + ": ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const unsigned long long ignored = std::stoull(r.out.substr(at + 18 + r_text.size()), nullptr, 16);
    EXPECT_EQ(ignored & (1ull << (SIGPIPE - 1)), 0u) << "SIGPIPE is ignored in worker " << rank;
  }
}

TEST(Launcher, FirstFailureStopsTheOthersAndIsNamed) {
  TempDir dir;
  // Rank 2 fails; the others then fail too, as peers of a vanished process would, but must not be the one named.
  const auto r = launch_captured(shell_job(
      4, publish(dir / "pid.$RANK", "$$") +
             "if [ $RANK = 2 ]; then echo starting >&2; sleep 0.5; echo 'bad thing happened' >&2; exit 3; fi\n"
             "trap 'echo peer vanished >&2; exit 1' TERM\n"
             "sleep 60 &\n"
             "wait\n"));
  EXPECT_EQ(r.status, 1);
  EXPECT_LT(r.seconds, 10);
  EXPECT_GE(r.seconds, 0.5);
  EXPECT_NE(r.err.find("distsgd: error: worker 2 (rank 2) exited with status 3: bad thing happened\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(count_of(r.err, "distsgd: error:"), 1) << r.err;
  EXPECT_NE(r.err.find("[worker 0] peer vanished\n"), std::string::npos) << "output while stopping is lost:\n" << r.err;
  for (int rank = 0; rank < 4; ++rank) {
    const pid_t pid = read_pid(dir / ("pid." + std::to_string(rank)));
    expect_gone(pid, "worker " + std::to_string(rank));
    expect_group_gone(pid);
  }
}

TEST(Launcher, ChildKilledBySignalIsReported) {
  const auto r = launch_captured(shell_job(3,
                                           "if [ $RANK = 1 ]; then echo 'about to die' >&2; kill -9 $$; fi\n"
                                           "exec sleep 60\n"));
  EXPECT_EQ(r.status, 1);
  EXPECT_LT(r.seconds, 10);
  EXPECT_NE(r.err.find("distsgd: error: worker 1 (rank 1) was killed by signal 9 (" + std::string(strsignal(9)) +
                       "): about to die\n"),
            std::string::npos)
      << r.err;
}

TEST(Launcher, NoChildOrGrandchildSurvives) {
  TempDir dir;
  // Each child leaves a grandchild that ignores SIGTERM; rank 0 fails once every grandchild is running.
  const auto r = launch_captured(shell_job(3, publish(dir / "pid.$RANK", "$$") + "(trap '' TERM; exec sleep 60) &\n" +
                                                  publish(dir / "grandchild.$RANK", "$!") +
                                                  "if [ $RANK = 0 ]; then\n"
                                                  "  while [ $(ls " +
                                                  dir.str() +
                                                  " | grep -c '^grandchild\\.[0-9]*$') -lt 3 ]; do sleep 0.05; done\n"
                                                  "  exit 1\n"
                                                  "fi\n"
                                                  "wait\n"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_LT(r.seconds, 10);
  for (int rank = 0; rank < 3; ++rank) {
    const std::string rank_text = std::to_string(rank);
    const pid_t child = read_pid(dir / ("pid." + rank_text));
    expect_gone(child, "worker " + rank_text);
    expect_gone(read_pid(dir / ("grandchild." + rank_text)), "grandchild of worker " + rank_text);
    expect_group_gone(child);
  }
}

TEST(Launcher, ChildIgnoringSigtermIsKilledAfterTheGrace) {
  TempDir dir;
  auto spec = shell_job(2,
                        "if [ $RANK = 0 ]; then sleep 0.2; exit 2; fi\n"
                        "trap '' TERM\n" +
                            publish(dir / "pid.$RANK", "$$") + "sleep 60\n");
  spec.grace_seconds = 0.5;
  const auto r = launch_captured(spec);
  EXPECT_EQ(r.status, 1);
  EXPECT_GE(r.seconds, 0.7);
  EXPECT_LT(r.seconds, 5);
  EXPECT_NE(r.err.find("distsgd: error: worker 0 (rank 0) exited with status 2\n"), std::string::npos) << r.err;
  expect_gone(read_pid(dir / "pid.1"), "worker 1");
}

TEST(Launcher, BadExecutableIsReported) {
  LaunchSpec spec;
  spec.argv = {"/nonexistent/distsgd-no-such-binary", "train"};
  spec.labels = {"worker 0", "server 0"};
  const auto r = launch_captured(spec);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(distsgd: error: (worker|server) 0 \(rank [01]\) exited with )"
                                                  R"(status 127: cannot execute /nonexistent/distsgd-no-such-binary: )"
                                                  R"(No such file or directory\n)")))
      << r.err;
  EXPECT_EQ(count_of(r.err, "distsgd: error:"), 1) << r.err;
}

extern "C" void test_sigterm_handler(int) {}

TEST(Launcher, RestoresTheCallersSignalHandlers) {
  // glibc adds its own SA_RESTORER to every handler it installs: not part of what the caller chose.
  constexpr int kGlibcRestorer = 0x04000000;
  struct sigaction custom {
  }, original_sigterm{};
  custom.sa_handler = test_sigterm_handler;
  custom.sa_flags = SA_RESTART;
  sigemptyset(&custom.sa_mask);
  ::sigaction(SIGTERM, &custom, &original_sigterm);

  const std::vector<int> signals{SIGINT, SIGTERM, SIGCHLD, SIGPIPE};
  std::vector<struct sigaction> before(signals.size());
  for (std::size_t i = 0; i < signals.size(); ++i) ::sigaction(signals[i], nullptr, &before[i]);
  const auto r = launch_captured(shell_job(2, "exit 0"));
  EXPECT_EQ(r.status, 0) << r.err;
  for (std::size_t i = 0; i < signals.size(); ++i) {
    struct sigaction after {};
    ::sigaction(signals[i], nullptr, &after);
    EXPECT_EQ(reinterpret_cast<void*>(after.sa_handler), reinterpret_cast<void*>(before[i].sa_handler))
        << strsignal(signals[i]);
    EXPECT_EQ(after.sa_flags & ~kGlibcRestorer, before[i].sa_flags & ~kGlibcRestorer) << strsignal(signals[i]);
  }
  ::sigaction(SIGTERM, &original_sigterm, nullptr);
}

namespace {

// Sends `signal` to a launcher (in a forked copy of this test) whose 3 children and their grandchildren sleep.
void expect_signal_stops_every_process(int signal) {
  TempDir dir;
  const pid_t launcher = launch_in_subprocess(shell_job(3, publish(dir / "pid.$RANK", "$$") + "sleep 60 &\n" +
                                                               publish(dir / "grandchild.$RANK", "$!") + "wait\n"),
                                              dir / "out", dir / "err");
  ASSERT_GT(launcher, 0);
  std::vector<std::string> pid_files;
  for (int rank = 0; rank < 3; ++rank) {
    pid_files.push_back(dir / ("pid." + std::to_string(rank)));
    pid_files.push_back(dir / ("grandchild." + std::to_string(rank)));
  }
  const bool started = wait_for_files(pid_files, std::chrono::seconds(10));
  const auto start = Clock::now();
  ::kill(launcher, signal);
  const int status = wait_status(launcher, std::chrono::seconds(10));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_TRUE(started) << read_file(dir / "err");
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << "\n" << read_file(dir / "err");
  EXPECT_EQ(WEXITSTATUS(status), 128 + signal);
  EXPECT_LT(seconds, 5);
  EXPECT_NE(read_file(dir / "err").find("distsgd: interrupted; stopped 3 processes\n"), std::string::npos)
      << read_file(dir / "err");
  for (const auto& file : pid_files) expect_gone(read_pid(file), file);
}

}  // namespace

TEST(Launcher, SigtermStopsEveryChildAndReturns143) { expect_signal_stops_every_process(SIGTERM); }

TEST(Launcher, SigintStopsEveryChildAndReturns130) { expect_signal_stops_every_process(SIGINT); }

// A rank the leader declared lost may hang (or be stopped) instead of dying: the launcher kills it when told, and the
// run ends without waiting for it. Notices that name no child, or are not notices, change nothing.
TEST(Launcher, ARankDeclaredLostIsKilledAndTheOthersGoOn) {
  auto spec =
      shell_job(3,
                "if [ \"$RANK\" != 0 ]; then exec sleep 60; fi\n"
                "[ \"$DISTSGD_LAUNCHER_FD\" = 3 ] || exit 9\n"
                "printf 'lost 7\\nnot a notice\\nlost 1\\n' >&3; sleep 0.5; printf 'lost 2\\n' >&3; sleep 0.5\n");
  spec.survivable = {false, true, true};
  const auto outcome = launch_captured(spec);
  EXPECT_EQ(outcome.status, 0) << outcome.err;
  EXPECT_LT(outcome.seconds, 20) << outcome.err;  // not the 60 s of the hung ranks
  for (const std::string rank : {"1", "2"}) {
    EXPECT_NE(outcome.err.find("distsgd: warning: worker " + rank + " (rank " + rank +
                               ") was declared lost, so the launcher killed it (SIGKILL)"),
              std::string::npos)
        << outcome.err;
  }
  EXPECT_EQ(outcome.err.find("error"), std::string::npos) << outcome.err;
}

// A child that skips exec runs the main the program registered (comm/forked_main.hpp): here this one, which says
// what it was given and whether the notice descriptor reached it.
int say_what_the_child_sees(int argc, char** argv) {
  const char* late = std::getenv("DISTSGD_TEST_LATE");
  std::cerr << "argc=" << argc << " argv1=" << (argc > 1 ? argv[1] : "") << " rank=" << std::getenv("RANK")
            << " late=" << (late ? late : "none") << " notice fd "
            << (::fcntl(std::atoi(std::getenv("DISTSGD_LAUNCHER_FD")), F_GETFD) >= 0 ? "open" : "closed") << std::endl;
  return 0;
}

// The launch of a `train --workers N` without exec: each child runs the registered main with the launcher's argv and
// its own environment, including what exists only after the fork (the store's port); DISTSGD_EXEC_CHILDREN=1 execs.
TEST(ForkedChildren, RunTheRegisteredMainWithTheirArgumentsAndEnvironmentWithoutExec) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh, single-threaded process: the launcher may fork
  const auto launch = [] {
    distsgd::comm::register_program_main(say_what_the_child_sees);
    LaunchSpec spec;
    spec.argv = {"/nonexistent/distsgd", "train"};  // exec fails here: only a forked child can run
    spec.labels = {"worker 0", "worker 1"};
    spec.may_fork = true;
    spec.environment_after_start = [] {
      return std::vector<std::pair<std::string, std::string>>{{"DISTSGD_TEST_LATE", "7"}};
    };
    std::exit(launch_local(spec) == 0 ? 42 : 43);
  };
  EXPECT_EXIT(launch(), ::testing::ExitedWithCode(42),
              "\\[worker 1\\] argc=2 argv1=train rank=1 late=7 notice fd open");
  ::setenv("DISTSGD_EXEC_CHILDREN", "1", 1);
  EXPECT_EXIT(launch(), ::testing::ExitedWithCode(43), "cannot execute /nonexistent/distsgd");
  ::unsetenv("DISTSGD_EXEC_CHILDREN");
}

// Forked ranks compute what exec'd ones do: BSP, deterministic, ends on the same bits either way.
TEST(ForkedChildren, BspEndsOnTheSameBitsAsWithExecdRanks) {
  TempDir dir;
  const std::string flags =
      " train --algo bsp --workers 2 --servers 1 --model lenet5 --dataset synthetic --synthetic-train-size 640 "
      "--synthetic-test-size 64 --max-steps 12 --threads 1 --seed 5 --no-checkpoint --progress-seconds 1000 --out ";
  auto forked = distsgd::testing::run_shell(std::string(DISTSGD_BINARY) + flags + (dir / "forked") + " 2>&1");
  auto execd = distsgd::testing::run_shell("DISTSGD_EXEC_CHILDREN=1 " + std::string(DISTSGD_BINARY) + flags +
                                           (dir / "execd") + " 2>&1");
  ASSERT_EQ(forked.exit_code, 0) << forked.output;
  ASSERT_EQ(execd.exit_code, 0) << execd.output;
  const auto a = distsgd::testing::summary_of(dir / "forked"), b = distsgd::testing::summary_of(dir / "execd");
  EXPECT_EQ(a["test_loss"], b["test_loss"]);
  EXPECT_EQ(a["steps"], b["steps"]);
}

// A survivable rank's death is survivable only once rank 0 said every process connected: before, the job cannot
// form without it (its peers would wait in their connections until Gloo's timeout), so it fails the run at once.
TEST(Launcher, ASurvivableRankThatDiesBeforeEveryoneConnectedFailsTheJob) {
  TempDir dir;
  const std::string flag = dir / "connected";
  // Rank 1 dies before rank 0's notice: an error naming it, and rank 0 (asleep) is stopped, not waited for.
  auto before = shell_job(2,
                          "if [ \"$RANK\" = 1 ]; then exit 3; fi\n"
                          "exec sleep 60\n");
  before.survivable = {false, true};
  const auto failed = launch_captured(before);
  EXPECT_EQ(failed.status, 1) << failed.err;
  EXPECT_NE(
      failed.err.find("distsgd: error: worker 1 (rank 1) exited with status 3 before every process had connected"),
      std::string::npos)
      << failed.err;
  EXPECT_LT(failed.seconds, 30) << failed.err;
  // After it: a warning, and rank 0 ends the job.
  auto after = shell_job(2, "if [ \"$RANK\" = 0 ]; then printf 'connected\\n' >&3; touch " + flag +
                                "; sleep 1; exit 0; fi\n"
                                "while [ ! -e " +
                                flag + " ]; do sleep 0.02; done; sleep 0.3; exit 3\n");
  after.survivable = {false, true};
  const auto survived = launch_captured(after);
  EXPECT_EQ(survived.status, 0) << survived.err;
  EXPECT_NE(survived.err.find("distsgd: warning: worker 1 (rank 1) exited with status 3"), std::string::npos)
      << survived.err;
}

TEST(LauncherLineForwarder, WritesWholePrefixedLinesAndFlushesTheLastPartialOne) {
  TempDir dir;
  const std::string path = dir / "lines";
  const std::size_t too_long = LineForwarder::kMaxLineBytes + 10;
  {
    distsgd::comm::UniqueFd file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    LineForwarder lines(file.get(), "[p] ");
    lines.feed("ab");
    lines.feed("c\nde\n\nf\n");
    EXPECT_EQ(lines.last_line(), "f");
    lines.feed("\n");
    EXPECT_EQ(lines.last_line(), "f");       // empty lines say nothing about why a process failed
    lines.feed(std::string(too_long, 'z'));  // no newline: buffered up to the limit, then written in pieces
    lines.feed("tail without newline");
    lines.finish();
    EXPECT_EQ(lines.last_line(), std::string(10, 'z') + "tail without newline");
  }
  const auto written = lines_of(read_file(path));
  ASSERT_EQ(written.size(), 7u);
  EXPECT_EQ(written[0], "[p] abc");
  EXPECT_EQ(written[1], "[p] de");
  EXPECT_EQ(written[2], "[p] ");
  EXPECT_EQ(written[3], "[p] f");
  EXPECT_EQ(written[4], "[p] ");
  EXPECT_TRUE(written[5] == "[p] " + std::string(LineForwarder::kMaxLineBytes, 'z')) << "long line split wrongly";
  EXPECT_EQ(written[6], "[p] " + std::string(10, 'z') + "tail without newline");
  EXPECT_EQ(read_file(path).back(), '\n');
}
