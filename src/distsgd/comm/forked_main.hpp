// Children that skip exec. Every rank the launcher starts is this very program, and exec'ing it again costs each
// process about 0.8 s of CPU before main (Debian's libtorch: 290 shared libraries to relocate and bind, and its
// operator registry to build): most of the work of a short run, and of the test suite. A fork of the launcher, while
// it is still single-threaded, has all of that done; the child runs the program's main with its own arguments and
// environment, as the exec'd program would have.
#pragma once
#include <string>
#include <vector>

namespace distsgd::comm {

using ProgramMain = int (*)(int argc, char** argv);

// Called first thing in main(): the main that forked children run, and the descriptors the libraries opened before
// main (close-on-exec ones), which a forked child keeps as an exec'd one would have reopened them; inherited ones it
// closes, as exec'd children do.
void register_program_main(ProgramMain main);

// The registered main when a child may run it without exec, else nullptr: one was registered, this process has a
// single thread (a fork copies only the calling thread, so another thread's locks or OpenMP's pool would be broken
// in the child), and DISTSGD_EXEC_CHILDREN is unset or 0 (set, every child is exec'd: to compare, or to debug).
ProgramMain program_main_for_fork();

// In a forked child whose descriptors 0-2 are in place: moves `notice_fd` (-1: none) to a number no library holds and
// names it in DISTSGD_LAUNCHER_FD, closes every other descriptor opened since main began, waits on `release_fd` for
// the launcher's last environment entries (see release_child in child_process.hpp), then runs `main` on `argv` with
// `environment` plus those entries and exits with its status. Exits 1 without running main when the launcher closes
// the pipe without releasing it.
[[noreturn]] void run_program_main_in_child(ProgramMain main, char** argv, std::vector<std::string> environment,
                                            int notice_fd, int release_fd);

// The entries, each followed by '\0', and an empty entry that says the list is complete.
std::string encode_release(const std::vector<std::string>& environment_entries);

}  // namespace distsgd::comm
