// One run per run directory at a time: the process that writes a run's files holds an exclusive lock on
// DIR/.lock (flock) from before it touches anything until it exits, and writes its pid, host and start time there.
// A second run into the directory (a second --resume, an --overwrite) is refused with one line naming the holder.
// The kernel drops the lock when the holder dies, kill -9 included, so no stale lock outlives a run.
#pragma once
#include <string>

namespace distsgd::train {

class RunDirectoryLock {
 public:
  // Creates the directory if needed; throws distsgd::Error naming the holder when another process holds the lock.
  explicit RunDirectoryLock(const std::string& dir);
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

  // For a launcher, before it starts any process: throws as the constructor would when a live run holds DIR,
  // and otherwise leaves no trace (the run's own process takes the lock).
  static void refuse_if_held(const std::string& dir);

  static constexpr const char* kFileName = ".lock";

 private:
  int fd_ = -1;
};

}  // namespace distsgd::train
