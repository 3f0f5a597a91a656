#include "distsgd/algo/ps/gradient_push.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>

namespace distsgd::algo::ps {

struct GradientPush::InFlight {
  std::string name;  // on the timeline, from the launch to when the sends were seen complete
  int64_t start_us = 0;
  std::vector<comm::Work> works;
};

struct GradientPush::Slot {
  at::Tensor buffer;  // every shard back to back: the pieces sent from here
  std::vector<InFlight> sends;
};

struct GradientPush::PendingReply {
  const Piece* piece = nullptr;
  at::Tensor header;
  bool in_place = false;  // landed in the parameters (else in incoming_)
};

GradientPush::GradientPush(PsClient& client, models::Model& model, at::Tensor params, std::vector<Bucket> buckets,
                           PushOptions options, Values values, Timeline& timeline, Stopwatch& waiting)
    : client_(client),
      params_(std::move(params)),
      options_(options),
      values_(std::move(values)),
      timeline_(timeline),
      waiting_(waiting) {
  int64_t total = 0;
  for (const auto& shard : client_.shards()) {
    wire_offset_.push_back(total);
    total += shard.numel;
  }
  pieces_ = options_.wfbp ? cut_at_shards(buckets, client_.shards())
                          : std::vector<std::vector<Piece>>{whole_shards(client_.shards())};
  const int64_t slots = options_.replies ? 1 : options_.send_buffers;
  require(slots >= 1, "a parameter-server worker needs at least one send buffer");
  for (int64_t k = 0; k < slots; ++k) slots_.push_back(std::make_unique<Slot>());
  wire_numel_ = total;
  if (options_.wfbp && !options_.caller_hands_out) {
    tracker_ = std::make_unique<BucketReadyTracker>(model, std::move(buckets), [this](size_t b) { push_bucket(b); });
  }
}

GradientPush::~GradientPush() = default;

int64_t GradientPush::pieces_per_step() const {
  int64_t n = 0;
  for (const auto& bucket : pieces_) n += static_cast<int64_t>(bucket.size());
  return n;
}

void GradientPush::start(const Request& request) {
  request_ = request;
  next_bucket_ = 0;
  if (!options_.replies) {
    current_ = (current_ + 1) % slots_.size();
    wait_slot(*slots_[current_]);
  }
  if (tracker_) tracker_->arm();
}

void GradientPush::push_rest() {
  if (tracker_) {
    tracker_->flush();
  } else {
    while (next_bucket_ < pieces_.size()) push_bucket(next_bucket_);
  }
}

void GradientPush::push_bucket(size_t bucket) {
  for (const auto& piece : pieces_[bucket]) push_piece(piece);
  next_bucket_ = bucket + 1;
}

void GradientPush::push_piece(const Piece& piece) {
  at::NoGradGuard no_grad;
  auto& slot = *slots_[current_];
  const int64_t wire = wire_offset_[piece.shard] + piece.local_offset;
  at::Tensor payload;
  if (options_.replies && piece.segments.size() == 1) {
    // Answered pushes are waited for before the values can change: send them where they are.
    payload = values_(piece.segments[0].offset, piece.numel).contiguous();
  } else {
    if (!slot.buffer.defined()) slot.buffer = at::empty({wire_numel_});  // only when some piece needs it
    payload = slot.buffer.narrow(0, wire, piece.numel);
    for (const auto& s : piece.segments) payload.narrow(0, s.local, s.numel).copy_(values_(s.offset, s.numel));
  }
  InFlight sent;
  if (timeline_.enabled()) {
    sent.name = "push to shard " + std::to_string(piece.shard) + " [" + std::to_string(piece.local_offset) + ", +" +
                std::to_string(piece.numel) + ")";
    sent.start_us = Timeline::now_us();
  }
  client_.send_piece(request_, piece, payload, sent.works);
  slot.sends.push_back(std::move(sent));
  if (!options_.replies) return;
  PendingReply reply;
  reply.piece = &piece;
  reply.header = at::empty({kReplyHeaderSize}, at::kDouble);
  // Without wfbp backward is over: a one-segment piece lands in the parameters at once.
  reply.in_place = !options_.wfbp && piece.segments.size() == 1;
  if (!reply.in_place && !incoming_.defined()) incoming_ = at::empty({wire_numel_});
  auto into = reply.in_place ? params_.narrow(0, piece.segments[0].offset, piece.numel)
                             : incoming_.narrow(0, wire, piece.numel);
  client_.receive_reply(piece.shard, reply.header, into, receives_);
  replies_.push_back(std::move(reply));
}

Reply GradientPush::finish() {
  require(options_.replies, "GradientPush::finish() is for answered pushes");
  Reply last;
  {
    TimedPhase phase(timeline_, "push, wait for reply", waiting_);
    for (auto& w : receives_) w.wait();
    receives_.clear();
    auto& sends = slots_[current_]->sends;
    for (auto& sent : sends) {
      for (auto& w : sent.works) w.wait();
      if (timeline_.enabled()) timeline_.span(sent.name, sent.start_us, Timeline::now_us(), Timeline::kCommunication);
    }
    sends.clear();
  }
  at::NoGradGuard no_grad;
  for (const auto& reply : replies_) {
    const Piece& piece = *reply.piece;
    if (!reply.in_place) {
      const int64_t wire = wire_offset_[piece.shard] + piece.local_offset;
      for (const auto& s : piece.segments) {
        params_.narrow(0, s.offset, s.numel).copy_(incoming_.narrow(0, wire + s.local, s.numel));
      }
    }
    const Reply decoded = decode_reply(reply.header, client_.server_rank(piece.shard));  // checks every reply
    if (piece.shard == 0) last = decoded;
  }
  replies_.clear();
  return last;
}

void GradientPush::wait_slot(Slot& slot) {
  if (slot.sends.empty()) return;
  TimedPhase phase(timeline_, "wait for a send buffer", waiting_);
  for (auto& sent : slot.sends) {
    for (auto& w : sent.works) w.wait();
    if (timeline_.enabled()) timeline_.span(sent.name, sent.start_us, Timeline::now_us(), Timeline::kCommunication);
  }
  slot.sends.clear();
}

void GradientPush::drain() {
  for (auto& slot : slots_) wait_slot(*slot);
}

}  // namespace distsgd::algo::ps
