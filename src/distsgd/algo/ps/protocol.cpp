#include "distsgd/algo/ps/protocol.hpp"

#include "distsgd/comm/communicator.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace distsgd::algo::ps {

at::Tensor encode(const Request& request) {
  auto header = at::empty({kRequestHeaderSize}, at::kDouble);
  encode_request(request, header.data_ptr<double>());
  return header;
}

Request decode_request(const at::Tensor& header, const RequestBounds& bounds) {
  return decode_request(header.data_ptr<double>(), bounds);
}

at::Tensor encode(const Reply& reply) {
  auto header = at::empty({kReplyHeaderSize}, at::kDouble);
  encode_reply(reply, header.data_ptr<double>());
  return header;
}

Reply decode_reply(const at::Tensor& header, int64_t peer) { return decode_reply(header.data_ptr<double>(), peer); }

PsClient::PsClient(comm::Communicator& comm, std::vector<ShardRange> shards)
    : comm_(comm), shards_(std::move(shards)), last_sent_(Clock::now().time_since_epoch().count()) {
  // A shard gone fails the worker's own next request with the error (a lost server ends the run), so the
  // keep-alives just stop.
  keep_alives_.start(
      comm_, [this] { keep_alive(); }, [](const std::exception&) {});
}

PsClient::~PsClient() { stop_keep_alives(); }

comm::Work PsClient::send(const at::Tensor& tensor, size_t shard, int64_t tag) {
  last_sent_.store(Clock::now().time_since_epoch().count());
  return comm_.send(tensor, server_rank(shard), tag);
}

void PsClient::keep_alive() {
  const auto since = Clock::now().time_since_epoch() - Clock::duration(last_sent_.load());
  if (since < comm_.timeout() / 4) return;
  for (auto& w : keep_alives_in_flight_) w.wait();  // a quarter of the timeout old: the shard has read them
  keep_alives_in_flight_.clear();
  Request request;
  request.kind = RequestKind::kKeepAlive;
  for (size_t s = 0; s < shards_.size(); ++s) keep_alives_in_flight_.push_back(send(encode(request), s, kHeaderTag));
}

void PsClient::stop_keep_alives() {
  keep_alives_.stop();
  for (auto& w : keep_alives_in_flight_) {
    try {
      w.wait();
    } catch (const std::exception&) {
      // The shard is gone (the run ends with its own error); the header's buffer is freed only after this wait.
    }
  }
  keep_alives_in_flight_.clear();
}

void PsClient::finish() {
  stop_keep_alives();  // no keep-alive may follow the kDone
  send_to_all({RequestKind::kDone, 0, 0, 0, 0}, at::Tensor());
}

int64_t PsClient::server_rank(size_t shard) const { return comm_.workers() + static_cast<int64_t>(shard); }

void PsClient::send_to_all(const Request& request, const at::Tensor& payload) {
  std::vector<comm::Work> sends;
  for (size_t s = 0; s < shards_.size(); ++s) {
    sends.push_back(send(encode(request), s, kHeaderTag));
    if (payload.defined()) {
      // A shard of several segments goes as a packed copy, which the send keeps alive.
      sends.push_back(send(gather_shard(payload, shards_[s]), s, kPayloadTag));
      bytes_sent_ += 4 * shards_[s].numel;
    }
  }
  for (auto& w : sends) w.wait();
}

void PsClient::send_piece(Request request, const Piece& piece, const at::Tensor& values,
                          std::vector<comm::Work>& sends) {
  request.offset = piece.local_offset;
  request.numel = piece.numel;
  sends.push_back(send(encode(request), piece.shard, kHeaderTag));
  sends.push_back(send(values, piece.shard, kPayloadTag));
  bytes_sent_ += 4 * piece.numel;
}

void PsClient::receive_reply(size_t shard, at::Tensor header, at::Tensor values, std::vector<comm::Work>& receives) {
  receives.push_back(comm_.receive(std::move(header), server_rank(shard), kReplyHeaderTag));
  receives.push_back(comm_.receive(std::move(values), server_rank(shard), kReplyTag));
}

void PsClient::send_sparse_to_all(Request request, const compression::SparseGradient& gradient) {
  for (auto& w : send_sparse_to_all_async(request, gradient)) w.wait();
}

std::vector<comm::Work> PsClient::send_sparse_to_all_async(Request request,
                                                           const compression::SparseGradient& gradient) {
  // Indices are ascending and a shard's segments are in flat order: each segment's entries are one run, which
  // becomes positions in the shard's buffer.
  const int64_t* indices = gradient.indices.data_ptr<int64_t>();
  const int64_t count = gradient.size();
  std::vector<comm::Work> sends;
  for (size_t s = 0; s < shards_.size(); ++s) {
    std::vector<at::Tensor> local_indices, values;
    for (const auto& segment : shards_[s].segments) {
      const int64_t begin = std::lower_bound(indices, indices + count, segment.offset) - indices;
      const int64_t end = std::lower_bound(indices, indices + count, segment.offset + segment.numel) - indices;
      if (end == begin) continue;
      local_indices.push_back(gradient.indices.narrow(0, begin, end - begin).sub(segment.offset - segment.local));
      values.push_back(gradient.values.narrow(0, begin, end - begin));
    }
    request.entries = 0;
    for (const auto& v : values) request.entries += v.numel();
    sends.push_back(send(encode(request), s, kHeaderTag));
    if (request.entries == 0) continue;
    auto message = compression::pack({at::cat(local_indices), at::cat(values)});
    bytes_sent_ += 4 * message.numel();
    sends.push_back(send(message, s, kPayloadTag));
  }
  return sends;
}

std::vector<Reply> PsClient::receive_from_all(at::Tensor& flat) {
  std::vector<at::Tensor> headers, staging;
  std::vector<comm::Work> receives;
  for (size_t s = 0; s < shards_.size(); ++s) {
    headers.push_back(at::empty({kReplyHeaderSize}, at::kDouble));
    // A contiguous shard lands in place; the others in a buffer scattered afterwards.
    staging.push_back(shards_[s].contiguous() ? flat.narrow(0, shards_[s].segments[0].offset, shards_[s].numel)
                                              : at::empty({shards_[s].numel}));
    receive_reply(s, headers.back(), staging.back(), receives);
  }
  for (auto& w : receives) w.wait();
  std::vector<Reply> replies;
  for (size_t s = 0; s < shards_.size(); ++s) {
    if (!shards_[s].contiguous()) scatter_shard(staging[s], shards_[s], flat);
    replies.push_back(decode_reply(headers[s], server_rank(s)));
  }
  return replies;
}

std::vector<Reply> PsClient::pull_all(at::Tensor& flat) {
  Request pull;
  pull.kind = RequestKind::kPull;
  pull.clock = -1;
  send_to_all(pull, at::Tensor());
  return receive_from_all(flat);
}

}  // namespace distsgd::algo::ps
