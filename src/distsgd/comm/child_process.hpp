// Starts one child of the launcher: in its own process group (so the launcher can signal its whole tree), killed when
// the launcher dies, stdin from /dev/null, stdout and stderr through pipes the launcher reads.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "distsgd/comm/forked_main.hpp"
#include "distsgd/comm/unique_fd.hpp"

namespace distsgd::comm {

struct ChildProcess {
  pid_t pid = -1;        // also the id of the child's process group
  UniqueFd stdout_pipe;  // read ends, non-blocking
  UniqueFd stderr_pipe;
  UniqueFd notice_pipe;   // with notice_pipe: the read end of the child's notices (comm/launcher_notice.hpp)
  UniqueFd release_pipe;  // with forked_main: the child waits on it (release_child)
};

// Runs argv (argv[0] is the path executed, no PATH search) with exactly the environment `environment` ("KEY=value").
// `signals_to_default` are reset to SIG_DFL in the child before exec (the launcher's own handlers and ignores must not
// leak into it). When exec fails, the child writes "cannot execute <path>: <reason>" to its stderr and exits 127.
// With `network_namespace_fd` >= 0 the child enters that network namespace before exec (an emulated host).
// With `notice_pipe` the child gets a pipe to the caller on descriptor kLauncherNoticeFd (comm/launcher_notice.hpp).
// With `forked_main` (comm/forked_main.hpp; the caller must be single-threaded) argv[0] is this program and the child
// does not exec: it waits until release_child, then runs forked_main(argv) in the state the fork left.
// Throws Error when the pipes or the fork cannot be made.
ChildProcess start_child(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                         const std::vector<int>& signals_to_default, int network_namespace_fd = -1,
                         bool notice_pipe = false, ProgramMain forked_main = nullptr);

// Sets "KEY=value" in a child's environment: an entry of the same KEY is replaced (a later setting wins).
void set_environment_entry(std::vector<std::string>& environment, const std::string& entry);

// Lets a child started with forked_main run, with `more_environment` ("KEY=value") over the environment it was
// started with. A child whose release pipe closes without this exits 1 without running.
void release_child(ChildProcess& child, const std::vector<std::string>& more_environment);

}  // namespace distsgd::comm
