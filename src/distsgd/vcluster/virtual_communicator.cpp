#include "distsgd/vcluster/virtual_communicator.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/sim/engine/actor_scheduler.hpp"
#include "distsgd/sim/engine/flow_network.hpp"
#include "distsgd/sim/engine/ring_collectives.hpp"
#include "distsgd/sim/platform/cluster_network.hpp"

#include <ATen/ops/add.h>
#include <ATen/ops/zeros_like.h>

namespace distsgd::vcluster {

// An operation of the virtual transport: complete once the event that ends it has run.
class VirtualWork final : public comm::Work::Impl {
 public:
  explicit VirtualWork(std::string what) : what_(std::move(what)) {}

  void wait() override {
    auto* x = runtime::executive();
    require(x != nullptr, "virtual cluster: " + what_ + " waited on outside the scheduler");
    while (!completed_) x->block(this, runtime::kNoDeadline, what_.c_str());
    if (!error_.empty()) throw Error(what_ + " failed: " + error_);
  }
  void on_complete(std::function<void()> callback) override {
    if (completed_) {
      callback();
    } else {
      callbacks_.push_back(std::move(callback));
    }
  }
  void complete(std::string error = {}) {
    completed_ = true;
    error_ = std::move(error);
    for (auto& callback : callbacks_) callback();
    callbacks_.clear();
    if (auto* x = runtime::executive()) x->notify(this);
  }

 private:
  std::string what_;
  bool completed_ = false;
  std::string error_;
  std::vector<std::function<void()>> callbacks_;
};

struct Fabric::Message {
  int64_t from = 0, to = 0, tag = 0;
  at::Tensor data;
  std::shared_ptr<VirtualWork> sent;
  at::Tensor target;  // the receive it was matched with: its buffer and work
  std::shared_ptr<VirtualWork> received;
  bool arrived = false;
};

struct Fabric::Channel {
  std::deque<std::shared_ptr<Message>> waiting;                            // sends waiting for a receive
  std::deque<std::pair<at::Tensor, std::shared_ptr<VirtualWork>>> posted;  // receives waiting for a send
};

struct Fabric::Instance {
  struct Entry {
    at::Tensor output, input;
    std::vector<at::Tensor> outputs;
    std::shared_ptr<VirtualWork> work;
  };
  Collective kind = Collective::kAllreduce;
  int64_t root = 0;
  int64_t joined = 0, finished = 0;
  std::vector<Entry> entries;
  std::vector<at::Tensor> results;  // per worker (alltoall), or one for all
  std::string error;
};

namespace {

const char* collective_name(Fabric::Collective kind) {
  switch (kind) {
    case Fabric::Collective::kAllreduce:
      return "allreduce";
    case Fabric::Collective::kAlltoall:
      return "alltoall";
    case Fabric::Collective::kAllgather:
      return "allgather";
    case Fabric::Collective::kBroadcast:
      return "broadcast";
    case Fabric::Collective::kBarrier:
      return "barrier";
  }
  return "collective";
}

double bytes_of(const at::Tensor& t) { return t.defined() ? static_cast<double>(t.numel() * t.element_size()) : 0; }

// Delivers `data` into a receive's buffer, or fails the receive when they do not fit (a protocol error).
void fill(at::Tensor& target, const at::Tensor& data, VirtualWork& work) {
  if (target.numel() != data.numel() || target.scalar_type() != data.scalar_type()) {
    work.complete("a message of " + std::to_string(data.numel()) + " " +
                  std::string(c10::toString(data.scalar_type())) + " values for a buffer of " +
                  std::to_string(target.numel()) + " " + std::string(c10::toString(target.scalar_type())));
    return;
  }
  target.copy_(data.view_as(target));
  work.complete();
}

}  // namespace

Fabric::Fabric(sim::ActorScheduler& scheduler, int64_t workers, int64_t servers)
    : scheduler_(scheduler),
      workers_(workers),
      servers_(servers),
      collectives_called_(static_cast<size_t>(workers), 0) {}

Fabric::Fabric(sim::ActorScheduler& scheduler, sim::FlowNetwork& network, sim::ClusterNetwork& cluster,
               sim::RingCollectives& collectives, int64_t workers, int64_t servers)
    : Fabric(scheduler, workers, servers) {
  network_ = &network;
  cluster_ = &cluster;
  collectives_ = &collectives;
}

std::unique_ptr<Fabric> Fabric::ideal(sim::ActorScheduler& scheduler, int64_t workers, int64_t servers) {
  return std::unique_ptr<Fabric>(new Fabric(scheduler, workers, servers));
}

Fabric::~Fabric() = default;

void Fabric::transfer(int64_t from, int64_t to, double bytes, std::function<void()> arrived) {
  if (!network_) {
    scheduler_.queue().at(scheduler_.now(), std::move(arrived));
    return;
  }
  const bool from_worker = from < workers_, to_worker = to < workers_;
  require(from_worker || to_worker, "virtual cluster: servers do not talk to each other (rank " + std::to_string(from) +
                                        " to rank " + std::to_string(to) + ")");
  sim::Path path;
  double alpha = cluster_->alpha();
  if (from_worker && to_worker) {
    path = cluster_->worker_to_worker(from, to);
    alpha = cluster_->worker_to_worker_alpha(from, to);
  } else if (from_worker) {
    path = cluster_->worker_to_server(from, to - workers_);
    alpha = cluster_->worker_server_alpha(from, to - workers_);
  } else {
    path = cluster_->server_to_worker(from - workers_, to);
    alpha = cluster_->worker_server_alpha(to, from - workers_);
  }
  cluster_->transfer(path, bytes, alpha, std::move(arrived));
}

comm::Work Fabric::send(int64_t from, int64_t to, int64_t tag, const at::Tensor& tensor) {
  require(to >= 0 && to < world_size() && to != from,
          "virtual cluster: rank " + std::to_string(from) + " sends to rank " + std::to_string(to));
  auto message = std::make_shared<Message>();
  message->from = from;
  message->to = to;
  message->tag = tag;
  message->data = tensor.detach().contiguous().clone();  // the sender may reuse its buffer once the send is done
  message->sent = std::make_shared<VirtualWork>("send to rank " + std::to_string(to));
  comm::Work work(message->sent);
  Channel& channel = channels_[{from, to, tag}];
  if (channel.posted.empty()) {
    channel.waiting.push_back(std::move(message));
  } else {
    std::tie(message->target, message->received) = std::move(channel.posted.front());
    channel.posted.pop_front();
    start(std::move(message));
  }
  return work;
}

// Gloo's unbound buffers rendezvous (gloo/transport/tcp/pair.cc: a send's data moves only once the peer has said
// that a matching receive is posted), so a rank that sends faster than its peer receives waits for it, as over Gloo,
// instead of piling messages up at the peer (an ALADDIN server that falls behind saw gradients 578 updates old).
void Fabric::start(std::shared_ptr<Message> message) {
  const int64_t from = message->from, to = message->to;
  const double bytes = bytes_of(message->data);
  in_flight_[{from, to}].push_back(message);
  transfer(from, to, bytes, [this, message] {
    auto delivered = [this, message] {
      message->arrived = true;
      arrive(message->from, message->to);
    };
    const double delay = delivery_delay_ ? delivery_delay_() : 0.0;
    if (delay > 0) {
      scheduler_.queue().after(delay, std::move(delivered));
    } else {
      delivered();
    }
  });
}

void Fabric::arrive(int64_t from, int64_t to) {
  auto& queue = in_flight_[{from, to}];
  while (!queue.empty() && queue.front()->arrived) {
    auto message = std::move(queue.front());
    queue.pop_front();
    message->sent->complete();
    fill(message->target, message->data, *message->received);
  }
}

comm::Work Fabric::receive(int64_t at, int64_t from, int64_t tag, at::Tensor tensor) {
  require(from >= 0 && from < world_size() && from != at,
          "virtual cluster: rank " + std::to_string(at) + " receives from rank " + std::to_string(from));
  auto work = std::make_shared<VirtualWork>("receive from rank " + std::to_string(from));
  Channel& channel = channels_[{from, at, tag}];
  if (channel.waiting.empty()) {
    channel.posted.emplace_back(std::move(tensor), work);
  } else {
    auto message = std::move(channel.waiting.front());
    channel.waiting.pop_front();
    message->target = std::move(tensor);
    message->received = work;
    start(std::move(message));
  }
  return comm::Work(work);
}

comm::Work Fabric::collective(int64_t worker, Collective kind, at::Tensor output, at::Tensor input,
                              std::vector<at::Tensor> outputs, int64_t root) {
  const int64_t index = collectives_called_[static_cast<size_t>(worker)]++;
  while (first_instance_ + static_cast<int64_t>(instances_.size()) <= index) {
    instances_.emplace_back();
    instances_.back().entries.resize(static_cast<size_t>(workers_));
    instances_.back().kind = kind;
    instances_.back().root = root;
  }
  Instance& instance = instances_[static_cast<size_t>(index - first_instance_)];
  auto& entry = instance.entries[static_cast<size_t>(worker)];
  entry.output = std::move(output);
  entry.input = std::move(input);
  entry.outputs = std::move(outputs);
  entry.work = std::make_shared<VirtualWork>(collective_name(kind));
  if (instance.kind != kind || instance.root != root) {
    instance.error = std::string("workers called different collectives at once (") + collective_name(instance.kind) +
                     " and " + collective_name(kind) + ")";
  }
  comm::Work result(entry.work);
  if (++instance.joined == workers_ && instance.error.empty()) {
    // Everyone's data is here and nobody's work has completed: compute the results now, in rank order.
    try {
      const auto& entries = instance.entries;
      if (kind == Collective::kAllreduce) {
        at::Tensor sum = entries[0].input.clone();
        for (size_t w = 1; w < entries.size(); ++w) sum.add_(entries[w].input);
        instance.results = {sum};
      } else if (kind == Collective::kBroadcast) {
        instance.results = {entries[static_cast<size_t>(root)].input.clone()};
      } else if (kind == Collective::kAllgather) {
        for (const auto& e : entries) instance.results.push_back(e.input.clone());
      } else if (kind == Collective::kAlltoall) {
        const int64_t chunk = entries[0].input.numel() / workers_;
        for (int64_t to = 0; to < workers_; ++to) {
          auto out = at::zeros_like(entries[static_cast<size_t>(to)].output);
          for (int64_t from = 0; from < workers_; ++from) {
            out.narrow(0, from * chunk, chunk)
                .copy_(entries[static_cast<size_t>(from)].input.narrow(0, to * chunk, chunk));
          }
          instance.results.push_back(out);
        }
      }
    } catch (const std::exception& e) {
      instance.error = e.what();
    }
  }
  const sim::CollectiveKind simulated = kind == Collective::kAlltoall ? sim::CollectiveKind::kAlltoall
                                        : kind == Collective::kAllgather || kind == Collective::kBroadcast
                                            ? sim::CollectiveKind::kAllgather
                                            : sim::CollectiveKind::kAllreduce;
  double bytes = kind == Collective::kBarrier ? 8 : bytes_of(entry.input);
  if (kind == Collective::kAllgather) bytes *= static_cast<double>(workers_);  // the gathered size
  if (collectives_) {
    collectives_->launch(worker, simulated, bytes, [this, index, worker] { finish_collective(index, worker); });
  } else if (instance.joined == workers_) {
    for (int64_t w = 0; w < workers_; ++w) {
      scheduler_.queue().at(scheduler_.now(), [this, index, w] { finish_collective(index, w); });
    }
  }
  return result;
}

void Fabric::finish_collective(int64_t index, int64_t worker) {
  Instance& instance = instances_[static_cast<size_t>(index - first_instance_)];
  auto& entry = instance.entries[static_cast<size_t>(worker)];
  if (!instance.error.empty()) {
    entry.work->complete(instance.error);
  } else {
    switch (instance.kind) {
      case Collective::kAllreduce:
      case Collective::kBroadcast:
        entry.input.copy_(instance.results[0]);
        break;
      case Collective::kAllgather:
        for (size_t w = 0; w < entry.outputs.size(); ++w) entry.outputs[w].copy_(instance.results[w]);
        break;
      case Collective::kAlltoall:
        entry.output.copy_(instance.results[static_cast<size_t>(worker)]);
        break;
      case Collective::kBarrier:
        break;
    }
    entry.work->complete();
  }
  entry = {};
  if (++instance.finished < workers_) return;
  while (!instances_.empty() && instances_.front().finished == workers_) {
    instances_.pop_front();
    ++first_instance_;
  }
}

void Fabric::barrier_world(int64_t rank) {
  const int64_t generation = world_barriers_done_;
  if (++world_barriers_arrived_ == world_size()) {
    world_barriers_arrived_ = 0;
    ++world_barriers_done_;
    scheduler_.notify(&world_barriers_done_);
    return;
  }
  while (world_barriers_done_ == generation) {
    scheduler_.block(&world_barriers_done_, runtime::kNoDeadline, "the other ranks at a barrier");
  }
}

void Fabric::store_set(const std::string& key, const std::string& value) {
  store_[key] = value;
  scheduler_.notify(&store_);
}

std::string Fabric::host_key(int64_t rank) const {
  if (!cluster_) return "virtual node 0";
  if (rank >= workers_) return "virtual server " + std::to_string(rank - workers_);
  return "virtual node " + std::to_string(cluster_->description().node_of(rank));
}

std::string Fabric::store_get(const std::string& key) {
  while (store_.count(key) == 0) scheduler_.block(&store_, runtime::kNoDeadline, "a key in the store");
  return store_.at(key);
}

namespace {
constexpr std::chrono::milliseconds kNoTimeout{int64_t{1000000} * 1000};  // --timeout does not apply: 10^6 s
}  // namespace

VirtualCommunicator::VirtualCommunicator(Fabric& fabric, int64_t rank)
    : Communicator(rank, fabric.world_size(), fabric.workers(), kNoTimeout), fabric_(fabric) {}

comm::Work VirtualCommunicator::allreduce_sum(at::Tensor tensor) {
  return fabric_.collective(rank_, Fabric::Collective::kAllreduce, {}, std::move(tensor), {}, 0);
}
comm::Work VirtualCommunicator::alltoall(at::Tensor output, at::Tensor input) {
  require(input.numel() % workers_ == 0 && output.numel() == input.numel(),
          "alltoall: the buffers must split equally over the workers");
  return fabric_.collective(rank_, Fabric::Collective::kAlltoall, std::move(output), std::move(input), {}, 0);
}
comm::Work VirtualCommunicator::allgather(std::vector<at::Tensor> outputs, at::Tensor input) {
  require(static_cast<int64_t>(outputs.size()) == workers_, "allgather: one output per worker");
  return fabric_.collective(rank_, Fabric::Collective::kAllgather, {}, std::move(input), std::move(outputs), 0);
}
comm::Work VirtualCommunicator::broadcast(at::Tensor tensor, int64_t root) {
  return fabric_.collective(rank_, Fabric::Collective::kBroadcast, {}, std::move(tensor), {}, root);
}
void VirtualCommunicator::barrier_workers() {
  fabric_.collective(rank_, Fabric::Collective::kBarrier, {}, {}, {}, 0).wait();
}
comm::Work VirtualCommunicator::send(at::Tensor tensor, int64_t destination, int64_t tag) {
  return fabric_.send(rank_, destination, tag, tensor);
}
comm::Work VirtualCommunicator::receive(at::Tensor tensor, int64_t source, int64_t tag) {
  return fabric_.receive(rank_, source, tag, std::move(tensor));
}
void VirtualCommunicator::barrier_world() { fabric_.barrier_world(rank_); }

}  // namespace distsgd::vcluster
