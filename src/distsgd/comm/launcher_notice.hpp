// What a rank tells distsgd's launcher, which started it, beside its output: through a pipe the launcher gives every
// child on descriptor kLauncherNoticeFd (named by DISTSGD_LAUNCHER_FD), one line per notice. Two notices: rank 0
// says every process has connected ("connected": from then on a survivable rank's death is survivable; before it the
// run cannot form without that rank), and the leader declared a rank lost (comm/liveness.hpp). A stopped or hung
// process cannot end itself, so whoever started it must: the launcher kills the rank it is told about
// (comm/launcher.hpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace distsgd::comm {

inline constexpr int kLauncherNoticeFd = 3;
inline constexpr const char* kLauncherNoticeVariable = "DISTSGD_LAUNCHER_FD";

// The descriptor to write notices to, from the environment: -1 when this process was not started by distsgd's
// launcher (mpirun, srun, env) or the descriptor is not a pipe.
int launcher_notice_fd();

// Writes "lost <rank>" to `fd` (-1: nothing). Never blocks for long and never throws: the notice is best effort.
void tell_launcher_lost(int fd, int64_t rank);

// Writes "connected" to `fd` (-1: nothing), as tell_launcher_lost.
void tell_launcher_connected(int fd);
inline constexpr const char* kConnectedNotice = "connected";

// The rank of a "lost <rank>" line, or nullopt for any other line.
std::optional<int64_t> lost_rank_of_notice(const std::string& line);

}  // namespace distsgd::comm
