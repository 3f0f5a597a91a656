#include "distsgd/sim/des/parameter_server.hpp"

#include <algorithm>
#include <memory>
#include <numeric>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

std::vector<std::vector<Piece>> cut_at_shards(const ModelProfile& profile, const ShardRanges& shards,
                                              const BucketLayout* buckets) {
  const auto per_element = static_cast<double>(profile.bytes_per_parameter);
  const size_t servers = shards.numel.size();
  std::vector<std::vector<Piece>> pieces;
  std::vector<int64_t> count(servers, 0);
  if (!buckets) {
    pieces.emplace_back();
    for (size_t s = 0; s < servers; ++s) {
      pieces.back().push_back(
          {static_cast<int64_t>(s), 0, shards.numel[s], 0, true, per_element * static_cast<double>(shards.numel[s])});
    }
    return pieces;
  }
  std::vector<int64_t> offset;  // flat offset of each tensor
  int64_t total = 0;
  for (const auto& t : profile.tensors) {
    offset.push_back(total);
    total += t.parameters;
  }
  for (size_t b = 0; b < buckets->size(); ++b) {
    const int64_t low = offset[buckets->first[b]];
    const int64_t high = offset[buckets->last[b]] + profile.tensors[buckets->last[b]].parameters;
    pieces.emplace_back();
    for (size_t s = 0; s < servers; ++s) {
      int64_t local = 0, first_local = -1, numel = 0;
      for (const auto& [begin, n] : shards.segments[s]) {
        const int64_t from = std::max(begin, low), to = std::min(begin + n, high);
        if (from < to) {
          if (first_local < 0) first_local = local + (from - begin);
          numel += to - from;
        }
        local += n;
      }
      if (numel == 0) continue;
      pieces.back().push_back(
          {static_cast<int64_t>(s), first_local, numel, count[s]++, false, per_element * static_cast<double>(numel)});
    }
  }
  // Each shard's last piece of a step completes the worker's gradient there.
  for (auto bucket = pieces.rbegin(); bucket != pieces.rend(); ++bucket) {
    for (auto& piece : *bucket) {
      if (piece.index == count[static_cast<size_t>(piece.shard)] - 1) piece.last = true;
    }
  }
  return pieces;
}

GradientUplink::GradientUplink(DesContext& context, std::vector<std::vector<Piece>> pieces, bool replies,
                               AtServer at_server)
    : c_(context),
      pieces_(std::move(pieces)),
      replies_(replies),
      at_server_(std::move(at_server)),
      workers_(static_cast<size_t>(context.workers)) {
  for (auto& w : workers_) w.slots.resize(replies_ ? 1 : static_cast<size_t>(kSendBuffers));
}

void GradientUplink::start(int64_t worker, Next next) {
  Worker& w = workers_[static_cast<size_t>(worker)];
  w.next_bucket = 0;
  if (replies_) return next();
  w.slot = (w.slot + 1) % w.slots.size();
  Slot& slot = w.slots[w.slot];
  if (slot.in_flight == 0) return next();
  const double start = c_.queue.now();
  slot.waiter = [this, worker, start, next = std::move(next)] {
    c_.span(worker, "wait for a send buffer", start);
    next();
  };
}

void GradientUplink::push_bucket(int64_t worker, size_t bucket) {
  for (const auto& piece : pieces_[bucket]) push_piece(worker, piece);
  workers_[static_cast<size_t>(worker)].next_bucket = bucket + 1;
}

void GradientUplink::push_rest(int64_t worker) {
  while (workers_[static_cast<size_t>(worker)].next_bucket < pieces_.size()) {
    push_bucket(worker, workers_[static_cast<size_t>(worker)].next_bucket);
  }
}

void GradientUplink::push_piece(int64_t worker, const Piece& piece) {
  Worker& w = workers_[static_cast<size_t>(worker)];
  const size_t slot = replies_ ? 0 : w.slot;
  ++w.slots[slot].in_flight;
  if (replies_) ++w.replies_left;
  const double start = c_.queue.now();
  const int64_t version = w.version, step = c_.iteration[static_cast<size_t>(worker)];
  c_.send_to_server(worker, piece.shard, piece.bytes, [this, worker, slot, start, version, step, &piece] {
    if (c_.trace.enabled()) {
      c_.span(worker,
              "push to shard " + std::to_string(piece.shard) + " [" + std::to_string(piece.local_offset) + ", +" +
                  std::to_string(piece.numel) + ")",
              start, Timeline::kCommunication);
    }
    Slot& s = workers_[static_cast<size_t>(worker)].slots[slot];
    if (--s.in_flight == 0 && s.waiter) {
      Next waiter = std::move(s.waiter);
      s.waiter = nullptr;
      waiter();
    }
    at_server_(worker, piece, version, step);
    if (replies_) maybe_finish(worker);
  });
}

void GradientUplink::finish(int64_t worker, Next next) {
  const double start = c_.queue.now();
  workers_[static_cast<size_t>(worker)].finisher = [this, worker, start, next = std::move(next)] {
    c_.span(worker, "push, wait for reply", start);
    next();
  };
  maybe_finish(worker);
}

void GradientUplink::maybe_finish(int64_t worker) {
  Worker& w = workers_[static_cast<size_t>(worker)];
  if (!w.finisher || w.replies_left > 0 || w.slots[0].in_flight > 0) return;
  Next finisher = std::move(w.finisher);
  w.finisher = nullptr;
  finisher();
}

void GradientUplink::reply(const Piece& piece, int64_t worker, int64_t version) {
  c_.send_to_worker(piece.shard, worker, piece.bytes, [this, worker, version, &piece] {
    Worker& w = workers_[static_cast<size_t>(worker)];
    if (piece.shard == 0 && piece.last) w.version = version;  // GradientPush::finish: shard 0's last reply
    c_.handled(worker, piece.shard);
    --w.replies_left;
    maybe_finish(worker);
  });
}

ShardRequests::ShardRequests(DesContext& context, const ShardRanges& shards)
    : c_(context), replies_(static_cast<size_t>(context.workers)), version_(static_cast<size_t>(context.workers), 0) {
  for (const int64_t n : shards.numel) {
    bytes_.push_back(static_cast<double>(context.profile.bytes_per_parameter) * static_cast<double>(n));
  }
}

void ShardRequests::send_to_all(int64_t worker, const std::vector<double>& bytes,
                                std::function<void(int64_t)> at_server, Next sent) {
  const auto servers = static_cast<int64_t>(bytes_.size());
  auto left = std::make_shared<int64_t>(servers);
  auto shared_sent = std::make_shared<Next>(std::move(sent));
  auto shared_at_server = std::make_shared<std::function<void(int64_t)>>(std::move(at_server));
  for (int64_t s = 0; s < servers; ++s) {
    c_.send_to_server(worker, s, bytes[static_cast<size_t>(s)], [s, left, shared_sent, shared_at_server] {
      if (*shared_at_server) (*shared_at_server)(s);
      if (--*left == 0 && *shared_sent) (*shared_sent)();
    });
  }
}

void ShardRequests::expect_replies(int64_t worker, Next then) {
  Pending& p = replies_[static_cast<size_t>(worker)];
  require(p.left == 0, "simulator: a worker waits for two sets of replies at once");
  p.left = static_cast<int64_t>(bytes_.size());
  p.then = std::move(then);
}

void ShardRequests::reply(int64_t shard, int64_t worker, int64_t version) {
  c_.send_to_worker(shard, worker, bytes_[static_cast<size_t>(shard)], [this, shard, worker, version] {
    if (shard == 0) version_[static_cast<size_t>(worker)] = version;
    c_.handled(worker, shard);
    Pending& p = replies_[static_cast<size_t>(worker)];
    if (--p.left > 0) return;
    Next then = std::move(p.then);
    p.then = nullptr;
    then();
  });
}

}  // namespace distsgd::sim
