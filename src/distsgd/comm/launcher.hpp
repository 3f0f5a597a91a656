// Runs the processes of one job on this host and supervises them: output forwarding, failure propagation, Ctrl-C.
// Plain POSIX (no c10d): `distsgd train --workers W --servers S` re-runs its own executable as W+S children.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace distsgd::comm {

struct LaunchSpec {
  std::vector<std::string> argv;    // command every child runs; argv[0] is the executable path (no PATH search)
  std::vector<std::string> labels;  // one per child in rank order, e.g. "worker 0", "server 0"; prefixes its stderr
  std::vector<std::pair<std::string, std::string>> env;  // extra environment for every child, over the launcher's own
  // Optional, one per child: the network namespace (fd) it runs in, -1 for the launcher's own (emulated cluster).
  std::vector<int> network_namespace_fds;
  double grace_seconds = 3;  // after a failure or Ctrl-C: SIGTERM, then SIGKILL after this long
  // Optional: what the launcher knows of the failure's cause (e.g. an emulated link that was down), appended in
  // parentheses to the failure line; empty text adds nothing.
  std::function<std::string()> failure_context;
  // Optional, one per child: the job goes on when this child fails (a worker of a run with --on-worker-loss
  // continue) after a child's "connected" notice (every process connected); its failure is then reported as a
  // warning and does not stop the others or change the exit status. Before that notice it fails the job.
  std::vector<bool> survivable;
  // Optional: environment entries that exist only once the children have started (the rendezvous store's port: a
  // store hosted before the fork would give the launcher threads, and then no child could skip exec). Called once;
  // exec'd children get them at exec, forked ones when released. What it throws ends the launch.
  std::function<std::vector<std::pair<std::string, std::string>>()> environment_after_start;
  // argv is this program, so a child may run its main without exec (comm/forked_main.hpp) when the launcher is
  // single-threaded at the fork.
  bool may_fork = false;
  // Every child also gets a notice pipe (comm/launcher_notice.hpp): a child named in a "lost <rank>" notice (the
  // leader declared it lost) is killed at once with its group, and reported as a warning, not as a failure.
};

// Starts one child per label with RANK=<i>, WORLD_SIZE=<n>, LOCAL_RANK=<i>, LOCAL_WORLD_SIZE=<n>,
// DISTSGD_LAUNCHED=1 plus spec.env (the rank variables win over both), stdin from /dev/null, each child the leader of
// its own process group. Forwards each child's stderr line by line to the launcher's stderr as "[label] line" and its
// stdout line by line, unprefixed, to the launcher's stdout; lines are written whole, never interleaved.
//
// Returns the status the launcher should exit with:
//   0    every child exited 0;
//   1    a child exited non-zero or died by a signal: the others get SIGTERM (their groups), SIGKILL after the grace,
//        and one line names the first child to fail:
//        "distsgd: error: <label> (rank <i>) exited with status <s>: <its last stderr line>" or
//        "distsgd: error: <label> (rank <i>) was killed by signal <n> (<name>): <its last stderr line>";
//   130  SIGINT (143 SIGTERM) reached the launcher: the children get SIGTERM, SIGKILL after the grace (or at once on
//        a second signal), and "distsgd: interrupted; stopped N processes" is printed.
// The launcher's signal dispositions are restored before returning. Children die with the launcher's thread that
// called this (PR_SET_PDEATHSIG), so call it from a thread that outlives the job. Throws Error for an empty spec or
// when a process cannot be started (those already started are killed first).
int launch_local(const LaunchSpec& spec);

}  // namespace distsgd::comm
