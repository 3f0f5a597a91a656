#include "distsgd/comm/liveness.hpp"

#include "distsgd/comm/launcher_notice.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <thread>

namespace distsgd::comm {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(seconds < 10 ? 1 : 0) << seconds << " s";
  return text.str();
}

std::string store_error_text(const std::exception& e) {
  if (auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

}  // namespace

struct Liveness::State {
  ProcessEnv env;
  int64_t rank = 0, world_size = 1;
  LivenessOptions options;
  c10::intrusive_ptr<c10d::Store> store;  // used by the beat thread only
  int launcher_fd = -1;                   // distsgd's launcher, told whom the leader declares lost
  Clock::time_point started = Clock::now();

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  std::vector<bool> lost_flags, finished_flags;
  std::vector<LostProcess> lost;
  std::vector<std::function<void(int64_t)>> callbacks;
  Clock::time_point run_progressed = Clock::now();  // when the run's total of iterations last moved
  bool finishing = false, finished = false, stop = false;

  std::atomic<int64_t> own_progress{0};  // this process's iterations (note_progress)

  // Beat thread only.
  int64_t published_progress = 0, run_progress_seen = -1;
  std::vector<int64_t> last_count;
  std::vector<Clock::time_point> last_change;
  int64_t declarations_seen = 0;
  std::thread thread;

  std::string label(int64_t r) const {
    return options.label ? options.label(r) + " (rank " + std::to_string(r) + ")" : "rank " + std::to_string(r);
  }

  // How long a process that just failed an operation waits for a dead peer to be declared lost.
  Clock::time_point verdict_deadline() const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(options.silence_seconds + 5 * options.beat_seconds + 1));
  }

  [[noreturn]] void fatal(const std::string& message) const {
    log::info("distsgd: error: " + message);
    std::_Exit(1);
  }

  void run() {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (stop || finished) return;
      }
      try {
        beat();
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (stop || finished) return;
        }
        fatal(label(rank) + " lost the rendezvous store at " + env.master_addr + ":" + std::to_string(env.port) +
              (env.store_is_external ? " (hosted by the launcher)" : " (hosted by rank 0)") + ": " +
              store_error_text(e));
      }
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait_for(lock, std::chrono::duration<double>(options.beat_seconds), [&] { return stop; });
    }
  }

  void beat() {
    store->add("alive/" + std::to_string(rank), 1);
    publish_progress();
    learn_declarations();
    const auto now = Clock::now();
    for (int64_t r = 0; r < world_size; ++r) {
      if (r == rank || is_settled(r)) continue;
      const int64_t count = store->add("alive/" + std::to_string(r), 0);
      if (count != last_count[r]) {
        last_count[r] = count;
        last_change[r] = now;
        continue;
      }
      const double silent = std::chrono::duration<double>(now - last_change[r]).count();
      if (silent < options.silence_seconds) continue;
      if (store->check({"finished/" + std::to_string(r)})) {
        std::lock_guard<std::mutex> lock(mutex);
        finished_flags[r] = true;
        changed.notify_all();
        continue;
      }
      if (r != 0 && options.survivable && options.survivable(r)) {
        // Only the leader decides, so that every process agrees on who is lost.
        if (rank == 0) declare_lost(r);
        continue;
      }
      fatal(label(r) + " was lost: no sign of life for " + seconds_text(silent) +
            " (it died, hangs, or cannot reach the rendezvous store)");
    }
    finish_if_asked();
  }

  // Adds this process's new iterations to the run's total and notes when that total last moved.
  void publish_progress() {
    const int64_t mine = own_progress.load(std::memory_order_relaxed);
    const int64_t total = store->add("progress", mine - published_progress);
    published_progress = mine;
    if (total == run_progress_seen) return;
    run_progress_seen = total;
    std::lock_guard<std::mutex> lock(mutex);
    run_progressed = Clock::now();
  }

  bool is_settled(int64_t r) {
    std::lock_guard<std::mutex> lock(mutex);
    return lost_flags[r] || finished_flags[r];
  }

  void declare_lost(int64_t r) {
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    store->set("lost/" + std::to_string(r), bytes_of(std::to_string(seconds)));
    declarations_seen = store->add("lost-count", 1);
    // A stopped process cannot end itself: whoever started it kills it (under mpirun or srun nobody is told, and it
    // ends when it runs again and finds itself declared lost).
    tell_launcher_lost(launcher_fd, r);
    record_lost(r, seconds);
  }

  void record_lost(int64_t r, double seconds) {
    std::vector<std::function<void(int64_t)>> to_call;
    {
      std::lock_guard<std::mutex> lock(mutex);
      lost_flags[r] = true;
      lost.push_back({r, seconds});
      to_call = callbacks;
    }
    if (rank == 0) {
      log::info("distsgd: warning: " + label(r) + " was lost " + seconds_text(seconds) +
                " after the processes connected; the run goes on without it");
    }
    for (const auto& callback : to_call) callback(r);
    std::lock_guard<std::mutex> lock(mutex);
    changed.notify_all();
  }

  // Declarations the leader made since the last beat: record them, tell the callbacks.
  void learn_declarations() {
    const int64_t declared = store->add("lost-count", 0);
    if (declared == declarations_seen) return;
    declarations_seen = declared;
    for (int64_t r = 0; r < world_size; ++r) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (lost_flags[r]) continue;
      }
      const std::string key = "lost/" + std::to_string(r);
      if (!store->check({key})) continue;
      const auto value = store->get(key);
      const double seconds = std::atof(std::string(value.begin(), value.end()).c_str());
      if (r == rank) {
        fatal(label(rank) + " was declared lost by the leader after " + seconds_text(options.silence_seconds) +
              " without a sign of life (it was stopped or cut off); the others went on without it");
      }
      record_lost(r, seconds);
    }
  }

  // After finish(): say so; the leader goes on beating until every process finished or was lost.
  void finish_if_asked() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!finishing) return;
    }
    store->set("finished/" + std::to_string(rank), bytes_of("1"));
    bool all = true;
    if (rank == 0) {
      for (int64_t r = 1; r < world_size; ++r) {
        if (is_settled(r)) continue;
        if (store->check({"finished/" + std::to_string(r)})) {
          std::lock_guard<std::mutex> lock(mutex);
          finished_flags[r] = true;
        } else {
          all = false;
        }
      }
    }
    if (!all) return;
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
    changed.notify_all();
  }
};

Liveness::Liveness(const ProcessEnv& env, int64_t world_size, LivenessOptions options)
    : state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.env = env;
  s.rank = env.rank;
  s.world_size = world_size;
  s.options = std::move(options);
  s.lost_flags.assign(static_cast<size_t>(world_size), false);
  s.finished_flags.assign(static_cast<size_t>(world_size), false);
  s.last_count.assign(static_cast<size_t>(world_size), -1);
  s.last_change.assign(static_cast<size_t>(world_size), Clock::now());
  if (s.rank == 0) s.launcher_fd = launcher_notice_fd();
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(env.port);
    store_options.isServer = false;
    store_options.waitWorkers = false;
    store_options.timeout = std::chrono::milliseconds(static_cast<int64_t>(s.options.silence_seconds * 1000) + 1000);
    s.store = c10::make_intrusive<c10d::PrefixStore>(
        "liveness", c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options));
  } catch (const std::exception& e) {
    throw Error(s.label(s.rank) + ": cannot reach the rendezvous store at " + env.master_addr + ":" +
                std::to_string(env.port) + " to report that it is alive: " + store_error_text(e));
  }
  s.thread = std::thread([state = state_] { state->run(); });
}

Liveness::~Liveness() {
  auto& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stop = true;
    s.changed.notify_all();
  }
  if (s.thread.joinable()) s.thread.join();
}

void Liveness::finish(std::chrono::milliseconds timeout) {
  auto& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  s.finishing = true;
  s.changed.notify_all();
  s.changed.wait_for(lock, timeout, [&] { return s.finished || s.stop; });
  s.stop = true;
  s.changed.notify_all();
  lock.unlock();
  if (s.thread.joinable()) s.thread.join();
}

bool Liveness::is_lost(int64_t rank) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return rank >= 0 && rank < state_->world_size && state_->lost_flags[rank];
}

void Liveness::note_progress() { state_->own_progress.fetch_add(1, std::memory_order_relaxed); }

std::chrono::steady_clock::time_point Liveness::last_progress() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->run_progressed;
}

std::vector<LostProcess> Liveness::lost() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->lost;
}

void Liveness::on_lost(std::function<void(int64_t)> callback) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->callbacks.push_back(std::move(callback));
}

bool Liveness::wait_until_lost(int64_t rank) const {
  auto& s = *state_;
  const auto deadline = s.verdict_deadline();
  std::unique_lock<std::mutex> lock(s.mutex);
  return s.changed.wait_until(lock, deadline, [&] { return s.lost_flags[rank]; });
}

std::string Liveness::explain_failure(int64_t peer) const {
  auto& s = *state_;
  if (peer >= 0 && is_lost(peer)) return " (" + s.label(peer) + " was lost)";
  const auto deadline = s.verdict_deadline();
  std::unique_lock<std::mutex> lock(s.mutex);
  const size_t before = s.lost.size();
  if (!s.changed.wait_until(lock, deadline, [&] { return s.lost.size() > before || s.stop; })) {
    return before > 0 ? " (" + s.label(s.lost.back().rank) + " was lost)" : "";
  }
  return s.lost.size() > before ? " (" + s.label(s.lost.back().rank) + " was lost)" : "";
}

std::string Liveness::label(int64_t rank) const { return state_->label(rank); }

bool Liveness::survivable(int64_t rank) const {
  return rank != 0 && state_->options.survivable && state_->options.survivable(rank);
}

double Liveness::silence_seconds() const { return state_->options.silence_seconds; }

}  // namespace distsgd::comm
