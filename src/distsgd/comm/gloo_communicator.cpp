#include "distsgd/comm/gloo_communicator.hpp"
#include "distsgd/comm/launcher_notice.hpp"

#include "distsgd/comm/listen_address.hpp"
#include "distsgd/core/error.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace distsgd::comm {

// A c10d operation in flight.
struct GlooWork final : Work::Impl {
  c10::intrusive_ptr<c10d::Work> work;
  std::vector<at::Tensor> tensors;  // kept alive while the operation runs
  std::vector<std::vector<at::Tensor>> outputs;
  std::string what;
  const Liveness* liveness = nullptr;  // asked, when the operation fails, which process was lost
  int64_t peer = -1;                   // of a send or receive
  std::string start_error;             // the operation failed as it started (a peer's connection already closed)
  // Only a receive from any source has a source rank to ask for. Asking any other work throws a c10::Error, whose
  // backtrace capture and symbolization cost milliseconds per wait() on a loaded host.

  void wait() override;
  void on_complete(std::function<void()> callback) override;
};

namespace {

std::string without_backtrace(const std::exception& e) {
  if (auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

Work make_work(c10::intrusive_ptr<c10d::Work> work, std::vector<at::Tensor> tensors, std::string what,
               const Liveness* liveness, std::vector<std::vector<at::Tensor>> outputs = {}, int64_t peer = -1) {
  auto impl = std::make_shared<GlooWork>();
  impl->liveness = liveness;
  impl->peer = peer;
  impl->work = std::move(work);
  impl->tensors = std::move(tensors);
  impl->outputs = std::move(outputs);
  impl->what = std::move(what);
  return Work(std::move(impl));
}

std::shared_ptr<::gloo::transport::Device> make_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (master_addr == "127.0.0.1" || master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

void GlooWork::wait() {
  try {
    if (!work) throw std::runtime_error(start_error);
    work->wait();
  } catch (const std::exception& e) {
    // A lost process that the run cannot do without ends this one inside explain_failure(), naming it.
    const std::string lost = liveness ? liveness->explain_failure(peer) : "";
    throw Error(what + " failed: " + without_backtrace(e) +
                (lost.empty() ? " (a peer process died or timed out)" : lost));
  }
}

void GlooWork::on_complete(std::function<void()> callback) {
  if (!work) {
    callback();
    return;
  }
  try {
    work->getFuture()->addCallback([callback = std::move(callback)](c10::ivalue::Future&) { callback(); });
  } catch (const std::exception&) {
    // Point-to-point work has no future in this libtorch: the span ends when it is waited instead.
  }
}

struct GlooCommunicator::Groups {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> world;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> workers;
  c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> options;
  // Groups replaced by a smaller one after a loss, and operations given up when a member was lost in them: kept,
  // as they may still run (until Gloo's timeout) on buffers they hold.
  std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>> retired;
  std::vector<c10::intrusive_ptr<c10d::Work>> abandoned;
};

GlooCommunicator::GlooCommunicator(const ProcessEnv& env, int64_t workers, std::chrono::milliseconds timeout)
    : Communicator(env.rank, env.world_size, workers, timeout), groups_(std::make_unique<Groups>()), env_(env) {
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(env.port);
    store_options.isServer = env.rank == 0 && !env.store_is_external;
    store_options.numWorkers = c10::nullopt;
    store_options.waitWorkers = false;
    store_options.timeout = timeout;
    // Rank 0's store listens on MASTER_ADDR when that is an address (see listen_address.hpp).
    std::optional<ListenOn> listen;
    if (store_options.isServer) {
      if (auto address = store_listen_address(env.master_addr)) listen.emplace(*address);
    }
    groups_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(env.rank) + ": cannot reach the rendezvous store at " + env.master_addr + ":" +
                std::to_string(env.port) + ": " + without_backtrace(e));
  }
  // Gloo writes to its sockets without MSG_NOSIGNAL: a write to a peer that died must fail that operation (dropped
  // if the peer is declared lost), not end this process by SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(make_device(env.master_addr));
  options->threads = 2;
  groups_->options = options;
  try {
    groups_->world = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("world", groups_->store), static_cast<int>(env.rank),
        static_cast<int>(env.world_size), options);
    if (is_worker()) {
      groups_->workers =
          c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("workers", groups_->store),
                                                      static_cast<int>(env.rank), static_cast<int>(workers), options);
    }
    // Every process connected in every group before any goes on: a rank finishes its own connections while
    // others may still be making theirs, and one killed then left a peer connecting to it until Gloo's timeout
    // while the rest trained on and waited for that peer in their first collective.
    groups_->world->barrier()->wait();
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(env.rank) + ": connecting to the other " + std::to_string(env.world_size - 1) +
                " processes failed: " + without_backtrace(e));
  }
  if (env.rank == 0) tell_launcher_connected(launcher_notice_fd());
}

GlooCommunicator::~GlooCommunicator() {
  // Operations abandoned to a lost worker may still be blocked in their group's threads until Gloo's timeout, and
  // a group's destructor waits for them: leave those groups to the process's exit.
  if (!groups_->retired.empty())
    new std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>>(std::move(groups_->retired));
  if (!groups_->abandoned.empty()) new std::vector<c10::intrusive_ptr<c10d::Work>>(std::move(groups_->abandoned));
}

Work GlooCommunicator::allreduce_sum(at::Tensor tensor) {
  if (agree_before_collectives_)
    return among_survivors(tensor, "allreduce",
                           [&](std::vector<at::Tensor>& data) { return groups_->workers->allreduce(data); });
  std::vector<at::Tensor> tensors{tensor};
  auto work = groups_->workers->allreduce(tensors);
  return make_work(work, std::move(tensors), "allreduce", liveness_.get());
}

Work GlooCommunicator::alltoall(at::Tensor output, at::Tensor input) {
  agree_on_workers();
  std::vector<int64_t> counts;  // empty: equal splits
  std::vector<int64_t> counts_out;
  auto work = groups_->workers->alltoall_base(output, input, counts_out, counts);
  return make_work(work, {output, input}, "alltoall", liveness_.get());
}

Work GlooCommunicator::allgather(std::vector<at::Tensor> outputs, at::Tensor input) {
  agree_on_workers();
  std::vector<std::vector<at::Tensor>> out{std::move(outputs)};
  std::vector<at::Tensor> in{input};
  auto work = groups_->workers->allgather(out, in);
  return make_work(work, std::move(in), "allgather", liveness_.get(), std::move(out));
}

Work GlooCommunicator::broadcast(at::Tensor tensor, int64_t root) {
  c10d::BroadcastOptions options;
  options.rootRank = root;
  if (agree_before_collectives_) {
    require(root == 0, "a broadcast among surviving workers must come from worker 0");
    return among_survivors(tensor, "broadcast",
                           [&](std::vector<at::Tensor>& data) { return groups_->workers->broadcast(data, options); });
  }
  std::vector<at::Tensor> tensors{tensor};
  auto work = groups_->workers->broadcast(tensors, options);
  return make_work(work, std::move(tensors), "broadcast", liveness_.get());
}

void GlooCommunicator::barrier_workers() {
  agree_on_workers();
  make_work(groups_->workers->barrier(), {}, "barrier", liveness_.get()).wait();
}

void GlooCommunicator::barrier_world() { make_work(groups_->world->barrier(), {}, "barrier", liveness_.get()).wait(); }

// Gloo throws at once, rather than failing the work, when the peer's connection is already closed: the error is
// kept for wait(), where every failure is reported alike (and a lost peer is recognised).
Work GlooCommunicator::point_to_point(at::Tensor tensor, int64_t peer, int64_t tag, bool sending) {
  std::vector<at::Tensor> tensors{tensor};
  c10::intrusive_ptr<c10d::Work> work;
  std::string error;
  try {
    work = sending ? groups_->world->send(tensors, static_cast<int>(peer), static_cast<int>(tag))
                   : groups_->world->recv(tensors, static_cast<int>(peer), static_cast<int>(tag));
  } catch (const std::exception& e) {
    error = without_backtrace(e);
  }
  auto result =
      make_work(work, std::move(tensors), (sending ? "send to rank " : "receive from rank ") + std::to_string(peer),
                liveness_.get(), {}, peer);
  if (!work) static_cast<GlooWork*>(result.impl())->start_error = error;
  return result;
}

Work GlooCommunicator::send(at::Tensor tensor, int64_t destination, int64_t tag) {
  return point_to_point(std::move(tensor), destination, tag, /*sending=*/true);
}

Work GlooCommunicator::receive(at::Tensor tensor, int64_t source, int64_t tag) {
  return point_to_point(std::move(tensor), source, tag, /*sending=*/false);
}

// An agreement's wait for `key`: true once it is in the store, false once `given_up()` says so (the gossip
// endpoint's and the parameter-server client's keep-alives run on threads of their own meanwhile). An error (`stuck`)
// once this process waited the timeout (and `extra`) since `started` and no worker trained meanwhile (liveness.hpp): a
// worker that has not arrived while the others still train is behind, not stuck.
bool GlooCommunicator::wait_for_key(const std::string& key, Clock::time_point started, Clock::duration extra,
                                    const std::function<bool()>& given_up, const std::string& stuck) {
  auto& store = *groups_->store;
  for (int polls = 0;; ++polls) {
    if (store.check({key})) return true;
    if (given_up && given_up()) return false;
    const auto since = liveness_ ? std::max(started, liveness_->last_progress()) : started;
    require(Clock::now() - since <= timeout_ + extra, stuck);
    std::this_thread::sleep_for(std::chrono::microseconds(polls < 20 ? 200 : polls < 200 ? 1000 : 5000));
  }
}

// Worker 0's wait, in an agreement, for worker w's key: true once it is there, false once w is declared lost.
bool GlooCommunicator::key_or_loss(const std::string& key, int64_t w, Clock::time_point started) {
  return wait_for_key(
      key, started, {}, [&] { return liveness_ && liveness_->is_lost(w); },
      "worker " + std::to_string(w) + " has not joined a collective, and no worker trained for " +
          std::to_string(timeout_.count() / 1000) + " s (it is alive but stuck; see --timeout)");
}

// The other workers' wait for what worker 0 publishes in an agreement (the members, the verdict): longer than
// worker 0's own waits, so that worker 0, which knows whom it waits for, is the one to report a stuck worker.
std::string GlooCommunicator::published_by_worker_0(const std::string& key) {
  const auto extra = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>((liveness_ ? liveness_->silence_seconds() : 0) + 2));
  wait_for_key(key, Clock::now(), extra, nullptr,
               "worker 0 has not published '" + key + "' of an agreement, and no worker trained for " +
                   std::to_string(timeout_.count() / 1000) + " s (see --timeout)");
  const auto bytes = groups_->store->get(key);
  return std::string(bytes.begin(), bytes.end());
}

void GlooCommunicator::store_set(const std::string& key, const std::string& value) {
  groups_->store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

bool GlooCommunicator::store_has(const std::string& key) {
  try {
    return groups_->store->check({key});
  } catch (const std::exception& e) {
    throw Error("looking up '" + key + "' in the rendezvous store failed: " + without_backtrace(e));
  }
}

std::string GlooCommunicator::store_get(const std::string& key) {
  try {
    auto bytes = groups_->store->get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    throw Error("waiting for '" + key + "' in the rendezvous store failed: " + without_backtrace(e));
  }
}

// A member can die inside a collective: its neighbours fail at once, the others wait for it until Gloo's timeout,
// and some may even complete. So each attempt runs on a copy of the data and is given up as soon as a member is
// declared lost; then every member says whether its attempt completed, worker 0 says whether all did, and if not,
// all of them run it again among the survivors (from the original data), so that everyone ends with the same result.
Work GlooCommunicator::among_survivors(
    at::Tensor tensor, const std::string& what,
    const std::function<c10::intrusive_ptr<c10d::Work>(std::vector<at::Tensor>&)>& start) {
  const at::Tensor original = tensor.clone();
  auto& store = *groups_->store;
  while (true) {
    agree_now();
    const std::string base = "members/" + std::to_string(agreements_) + "/outcome/";
    std::vector<at::Tensor> data{original.clone()};
    auto work = start(data);
    bool completed = false;
    std::string error;
    const auto member_lost = [&] {
      return std::any_of(worker_ranks_.begin(), worker_ranks_.end(),
                         [&](int64_t w) { return liveness_ && liveness_->is_lost(w); });
    };
    while (!work->isCompleted() && !member_lost()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (work->isCompleted()) {
      try {
        work->wait();
        completed = true;
      } catch (const std::exception& e) {
        error = without_backtrace(e);
      }
    }
    if (!completed) {
      groups_->abandoned.push_back(work);
      // Failed without a member lost (yet): a lost one is declared within the silence limit, or the error is real.
      if (!member_lost() && liveness_) liveness_->explain_failure();
      require(member_lost(), what + " failed: " + error + " (a peer process died or timed out)");
    }
    store.set(base + std::to_string(rank_), {static_cast<uint8_t>(completed ? '1' : '0')});
    bool all_completed = completed;
    std::string verdict;
    if (rank_ == 0) {
      const auto started = Clock::now();
      for (const int64_t w : worker_ranks_) {
        // One that died before saying is not needed: its result is not used.
        const std::string key = base + std::to_string(w);
        if (key_or_loss(key, w, started)) all_completed = all_completed && store.get(key)[0] == '1';
      }
      verdict = all_completed ? "done" : "again";
      store.set(base + "verdict", {verdict.begin(), verdict.end()});
    } else {
      verdict = published_by_worker_0(base + "verdict");
    }
    if (verdict == "done") {
      tensor.copy_(data[0]);
      return Work();
    }
  }
}

void GlooCommunicator::start_liveness(LivenessOptions options) {
  liveness_ = std::make_unique<Liveness>(env_, world_size_, std::move(options));
}

// Agreement number k: every worker marks its arrival; worker 0 waits until each member of the current group has
// arrived or been declared lost, and publishes who takes part; the others wait for that list. Arrival is checked
// before loss, so a worker that arrived and then died is in the list everyone gets (its collective then fails, as
// any collective with a dead peer does).
void GlooCommunicator::agree_now() {
  const std::string base = "members/" + std::to_string(++agreements_);
  auto& store = *groups_->store;
  store.set(base + "/arrived/" + std::to_string(rank_), {'1'});
  std::string list;
  if (rank_ == 0) {
    std::vector<int64_t> members;
    const auto started = Clock::now();
    for (const int64_t w : worker_ranks_) {
      if (key_or_loss(base + "/arrived/" + std::to_string(w), w, started)) members.push_back(w);
    }
    for (const int64_t w : members) list += (list.empty() ? "" : ",") + std::to_string(w);
    store.set(base, std::vector<uint8_t>(list.begin(), list.end()));
  } else {
    list = published_by_worker_0(base);
  }
  std::vector<int64_t> members;
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');) members.push_back(std::stoll(item));
  if (members == worker_ranks_) return;
  require(std::find(members.begin(), members.end(), rank_) != members.end(),
          "worker " + std::to_string(rank_) + " was declared lost by worker 0 and the others went on without it");
  const auto index = std::find(members.begin(), members.end(), rank_) - members.begin();
  groups_->retired.push_back(groups_->workers);
  try {
    groups_->workers = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("workers/" + std::to_string(agreements_), groups_->store),
        static_cast<int>(index), static_cast<int>(members.size()), groups_->options);
  } catch (const std::exception& e) {
    // A member that arrived and then died never connects, so no member's group can form: once it is declared
    // lost, every survivor agrees again (without it).
    const auto lost = [&](int64_t w) { return liveness_ && liveness_->is_lost(w); };
    if (!std::any_of(members.begin(), members.end(), lost) && liveness_) liveness_->explain_failure();
    if (!std::any_of(members.begin(), members.end(), lost)) {
      throw Error("worker " + std::to_string(rank_) + ": regrouping with the " + std::to_string(members.size() - 1) +
                  " other surviving workers failed: " + without_backtrace(e));
    }
    worker_ranks_ = std::move(members);
    agree_now();
    return;
  }
  worker_ranks_ = std::move(members);
}

}  // namespace distsgd::comm
