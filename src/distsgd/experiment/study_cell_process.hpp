// One cell's run: `distsgd train ...` as a child process in its own process group (so the study decides what a
// Ctrl-C does to it), its output appended to the cell's log. A Ctrl-C (SIGINT) or SIGTERM to the study is passed to
// the run as SIGINT, which stops a training launcher and all its processes cleanly; a second one, or a run still
// alive 20 s later, is killed.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace distsgd::comm {
class SignalPipe;
}

namespace distsgd::experiment {

struct CellProcessResult {
  int exit_status = 0;  // the child's exit status, or 128 + the signal that ended it
  bool interrupted = false;
  bool timed_out = false;
};

// Runs this program with `args`; `signals` catches SIGINT, SIGTERM and SIGCHLD for the whole study. `refresh` is
// called about once a second while the run goes on. A `timeout_seconds` above 0 ends the run (SIGTERM, then SIGKILL)
// when it takes longer.
CellProcessResult run_cell_process(const std::vector<std::string>& args, const std::string& log_path,
                                   double timeout_seconds, comm::SignalPipe& signals,
                                   const std::function<void()>& refresh);
// The same for any program: argv[0] is the path executed (no PATH search). Every child the harness and the report
// start goes through here, so each dies with its parent and stops on Ctrl-C the same way.
CellProcessResult run_child_process(const std::vector<std::string>& argv, const std::string& log_path,
                                    double timeout_seconds, comm::SignalPipe& signals,
                                    const std::function<void()>& refresh);

// Whether `signals` holds a pending SIGINT or SIGTERM (taken between two cells).
bool interrupt_pending(comm::SignalPipe& signals);

}  // namespace distsgd::experiment
