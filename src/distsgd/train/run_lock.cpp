#include "distsgd/train/run_lock.hpp"

#include "distsgd/core/error.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace distsgd::train {
namespace fs = std::filesystem;

namespace {

std::string holder_line() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::ostringstream line;
  line << "pid " << getpid() << " on host " << host << ", started " << when << "\n";
  return line.str();
}

}  // namespace

RunDirectoryLock::RunDirectoryLock(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  require(!ec, "cannot create run directory " + dir + ": " + ec.message());
  const std::string path = (fs::path(dir) / kFileName).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  require(fd_ >= 0, "cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    require(error == EWOULDBLOCK, "cannot lock " + path + ": " + std::strerror(error));
    std::ifstream in(path);
    std::string holder;
    std::getline(in, holder);
    throw Error("run directory " + dir + " is in use by another run (" + (holder.empty() ? "starting" : holder) +
                "); wait for it to end, or choose another --out");
  }
  const std::string line = holder_line();
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    // The lock holds without the note; only the message to a second run is poorer.
  }
}

void RunDirectoryLock::refuse_if_held(const std::string& dir) {
  if (fs::exists(fs::path(dir) / kFileName)) RunDirectoryLock probe(dir);
}

RunDirectoryLock::~RunDirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (removing it would race a waiting run)
}

}  // namespace distsgd::train
