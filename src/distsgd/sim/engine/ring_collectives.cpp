#include "distsgd/sim/engine/ring_collectives.hpp"

#include <cmath>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

int64_t collective_steps(CollectiveKind kind, int64_t processes) {
  return kind == CollectiveKind::kAllreduce ? 2 * (processes - 1) : processes - 1;
}

double collective_bytes_sent(CollectiveKind kind, int64_t processes, double bytes) {
  return static_cast<double>(collective_steps(kind, processes)) * bytes / static_cast<double>(processes);
}

RingCollectives::RingCollectives(EventQueue& queue, FlowNetwork& network, const ClusterNetwork& cluster,
                                 int64_t workers, double gamma_seconds_per_byte, CollectiveModel model)
    : queue_(queue),
      network_(network),
      cluster_(cluster),
      workers_(workers),
      gamma_(gamma_seconds_per_byte),
      allreduce_alpha_scale_(cluster.description().allreduce_alpha_scale(workers)),
      handover_(cluster.description().collective_handover_seconds(workers)),
      model_(model),
      launched_(static_cast<size_t>(workers), 0),
      current_(static_cast<size_t>(workers), 0) {}

RingCollectives::Instance& RingCollectives::instance(int64_t index) {
  while (first_ + static_cast<int64_t>(instances_.size()) <= index) {
    instances_.emplace_back();
    instances_.back().members.resize(static_cast<size_t>(workers_));
  }
  return instances_[static_cast<size_t>(index - first_)];
}

int64_t RingCollectives::send_peer(CollectiveKind kind, int64_t worker, int64_t step) const {
  const int64_t hop = kind == CollectiveKind::kAlltoall ? step + 1 : 1;
  return (worker + hop) % workers_;
}

bool RingCollectives::reduces_after(const Instance& in, int64_t step) const {
  if (in.kind == CollectiveKind::kReduceScatter) return true;
  return in.kind == CollectiveKind::kAllreduce && step < workers_ - 1;
}

void RingCollectives::set_interference(std::function<bool(int64_t)> computing, double seconds) {
  computing_ = std::move(computing);
  interference_ = seconds;
}

double RingCollectives::step_alpha(CollectiveKind kind, int64_t worker, int64_t peer) const {
  const double alpha = cluster_.worker_to_worker_alpha(worker, peer) + handover_;
  const bool interfered = interference_ > 0 && !cluster_.same_node(worker, peer) && computing_(worker);
  const double scale = kind == CollectiveKind::kAllreduce ? allreduce_alpha_scale_ : 1.0;
  return scale * (interfered ? alpha + interference_ : alpha);
}

void RingCollectives::launch(int64_t worker, CollectiveKind kind, double bytes, std::function<void()> done,
                             std::function<void()> started) {
  if (workers_ == 1) {
    queue_.after(0, [started = std::move(started), done = std::move(done)] {
      if (started) started();
      if (done) done();
    });
    return;
  }
  const int64_t index = launched_[static_cast<size_t>(worker)]++;
  Instance& in = instance(index);
  if (in.steps == 0) {
    in.kind = kind;
    in.bytes = bytes;
    in.steps = collective_steps(kind, workers_);
  }
  if (in.kind != kind || std::abs(in.bytes - bytes) > 1e-9 * std::max(1.0, bytes)) {
    throw Error("simulator: worker " + std::to_string(worker) + " launched collective " + std::to_string(index) +
                " unlike the other workers");
  }
  Member& m = in.members[static_cast<size_t>(worker)];
  m.launched = true;
  m.done = std::move(done);
  m.started = std::move(started);
  maybe_join(worker);
}

void RingCollectives::maybe_join(int64_t worker) {
  const int64_t index = current_[static_cast<size_t>(worker)];
  if (index >= first_ + static_cast<int64_t>(instances_.size())) return;
  Instance& in = instance(index);
  Member& m = in.members[static_cast<size_t>(worker)];
  if (!m.launched || m.joined) return;
  m.joined = true;
  ++in.joined;
  if (m.started) m.started();
  if (model_ == CollectiveModel::kFlows) {
    if (in.joined == workers_) start_flows(index);
    return;
  }
  if (m.arrived.empty()) m.arrived.assign(static_cast<size_t>(in.steps), 0);
  pump(index, worker);
}

void RingCollectives::advance(int64_t index, int64_t worker) {
  Instance& in = instance(index);
  Member& m = in.members[static_cast<size_t>(worker)];
  if (!m.joined || m.sending || m.finished) return;
  if (m.sent == in.steps) {
    if (m.ready == in.steps && !m.reducing) finish_member(index, worker);
    return;
  }
  const int64_t step = m.sent;
  if (m.ready < step) return;  // the block this step forwards has not arrived (or is being reduced)
  m.sending = true;
  const int64_t peer = send_peer(in.kind, worker, step);
  network_.transfer(cluster_.worker_to_worker(worker, peer), in.bytes / static_cast<double>(workers_),
                    step_alpha(in.kind, worker, peer), [this, index, worker, step, peer] {
                      Member& sender = instance(index).members[static_cast<size_t>(worker)];
                      sender.sending = false;
                      ++sender.sent;
                      const double late = delivery_delay_ ? delivery_delay_() : 0;
                      if (late > 0) {
                        queue_.after(late, [this, index, peer, step] { block_arrived(index, peer, step); });
                      } else {
                        block_arrived(index, peer, step);
                      }
                      advance(index, worker);
                    });
}

void RingCollectives::block_arrived(int64_t index, int64_t worker, int64_t step) {
  Instance& in = instance(index);
  Member& m = in.members[static_cast<size_t>(worker)];
  if (m.arrived.empty()) m.arrived.assign(static_cast<size_t>(in.steps), 0);
  m.arrived[static_cast<size_t>(step)] = 1;
  if (m.joined) pump(index, worker);
}

void RingCollectives::pump(int64_t index, int64_t worker) {
  Instance& in = instance(index);
  Member& m = in.members[static_cast<size_t>(worker)];
  while (!m.reducing && m.ready < in.steps && m.arrived[static_cast<size_t>(m.ready)]) {
    if (gamma_ > 0 && reduces_after(in, m.ready)) {
      m.reducing = true;
      queue_.after(gamma_ * in.bytes / static_cast<double>(workers_), [this, index, worker] {
        Member& r = instance(index).members[static_cast<size_t>(worker)];
        r.reducing = false;
        ++r.ready;
        pump(index, worker);
      });
      return;
    }
    ++m.ready;
  }
  advance(index, worker);
}

void RingCollectives::start_flows(int64_t index) {
  Instance& in = instance(index);
  const double volume = collective_bytes_sent(in.kind, workers_, in.bytes);
  const bool reduces = in.kind == CollectiveKind::kAllreduce || in.kind == CollectiveKind::kReduceScatter;
  const double reduction = reduces ? gamma_ * in.bytes * static_cast<double>(workers_ - 1) / workers_ : 0.0;
  in.flows_left = workers_;
  const double late = mean_delivery_delay_ ? mean_delivery_delay_() : 0.0;
  for (int64_t w = 0; w < workers_; ++w) {
    const int64_t next = (w + 1) % workers_;
    const double latency = static_cast<double>(in.steps) * (step_alpha(in.kind, w, next) + late) + reduction;
    network_.transfer(cluster_.worker_to_worker(w, next), volume, latency, [this, index] {
      if (--instance(index).flows_left > 0) return;
      for (int64_t member = 0; member < workers_; ++member) finish_member(index, member);
    });
  }
}

void RingCollectives::finish_member(int64_t index, int64_t worker) {
  Instance& in = instance(index);
  Member& m = in.members[static_cast<size_t>(worker)];
  m.finished = true;
  ++in.finished;
  auto done = std::move(m.done);
  m.done = nullptr;
  m.started = nullptr;
  ++current_[static_cast<size_t>(worker)];
  while (!instances_.empty() && instances_.front().finished == workers_) {
    instances_.pop_front();
    ++first_;
  }
  maybe_join(worker);  // its next collective, if already launched, starts now
  if (done) done();
}

void RingCollectives::set_delivery_delay(std::function<double()> delay, std::function<double()> mean_delay) {
  delivery_delay_ = std::move(delay);
  mean_delivery_delay_ = std::move(mean_delay);
}

}  // namespace distsgd::sim
