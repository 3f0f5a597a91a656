#include "distsgd/core/one_core.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace distsgd {
namespace {

double process_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

OneCore::KeepAffinity::KeepAffinity() : read_(sched_getaffinity(0, sizeof(mask_), &mask_) == 0) {}

OneCore::KeepAffinity::~KeepAffinity() {
  if (read_) sched_setaffinity(0, sizeof(mask_), &mask_);
}

OneCore::OneCore() {
  if (const char* off = std::getenv("DISTSGD_ONE_CORE"); off != nullptr && std::string(off) == "0") return;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mask)) allowed_.push_back(cpu);
  }
  const int here = sched_getcpu();
  if (allowed_.size() < 2 || std::find(allowed_.begin(), allowed_.end(), here) == allowed_.end()) return;
  chosen_ = here;
  enabled_ = read_counters(last_);
  last_process_cpu_ = process_cpu_seconds();
  // Two runs that began together review at different moments, so they do not both move at once.
  period_ = std::chrono::milliseconds(1000 + 97 * (getpid() % 7));
  next_review_ = std::chrono::steady_clock::now() + period_;
}

void OneCore::follow(uint64_t& seen) {
  if (!enabled_ || seen == generation_) return;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  CPU_SET(chosen_, &mask);
  sched_setaffinity(0, sizeof(mask), &mask);  // a failure leaves the thread where it was: only slower
  seen = generation_;
}

// /proc/stat: "cpuN user nice system idle iowait irq softirq steal ...", in ticks.
bool OneCore::read_counters(Counters& out) const {
  std::ifstream in("/proc/stat");
  if (!in) return false;
  out.busy.assign(allowed_.size(), -1);
  out.total.assign(allowed_.size(), -1);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    const auto it = std::find(allowed_.begin(), allowed_.end(), cpu);
    if (!fields || it == allowed_.end()) continue;
    const auto i = static_cast<size_t>(it - allowed_.begin());
    out.busy[i] = user + nice + system + irq + softirq + steal;
    out.total[i] = out.busy[i] + idle + iowait;
  }
  return std::none_of(out.total.begin(), out.total.end(), [](double t) { return t < 0; });
}

void OneCore::review() {
  // The clock is read every 64th call only: this runs at every hand-over.
  if (!enabled_ || (++calls_ & 63) != 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_review_) return;
  next_review_ = now + period_;
  Counters current;
  if (!read_counters(current)) return;
  const double process_cpu = process_cpu_seconds();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::vector<double> busy(allowed_.size(), 0);
  for (size_t i = 0; i < allowed_.size(); ++i) {
    const double total = current.total[i] - last_.total[i];
    busy[i] = total > 0 ? (current.busy[i] - last_.busy[i]) / total : 0;
  }
  const double window = std::max(1e-3, (current.total[0] - last_.total[0]) / ticks);
  const double own = (process_cpu - last_process_cpu_) / window;  // this process's share of one core
  last_ = std::move(current);
  last_process_cpu_ = process_cpu;
  const auto chosen = static_cast<size_t>(std::find(allowed_.begin(), allowed_.end(), chosen_) - allowed_.begin());
  const size_t next = core_after_review(busy, chosen, own);
  if (next != chosen) {
    chosen_ = allowed_[next];
    ++generation_;
  }
}

size_t OneCore::core_after_review(const std::vector<double>& busy, size_t chosen, double own) {
  const double others_here = std::max(0.0, busy.at(chosen) - own);
  size_t idlest = chosen;
  for (size_t i = 0; i < busy.size(); ++i) {
    if (i != chosen && (idlest == chosen || busy[i] < busy[idlest])) idlest = i;
  }
  // Move only for a clear gain: the other work on this core must take a quarter of a core more than the idlest
  // other core is busy.
  return idlest != chosen && busy[idlest] + 0.25 < others_here ? idlest : chosen;
}

}  // namespace distsgd
