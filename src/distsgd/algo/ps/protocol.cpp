#include "distsgd/algo/ps/protocol.hpp"

#include "distsgd/comm/communicator.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>

#include <algorithm>

namespace distsgd::algo::ps {

at::Tensor encode(const Request& r) {
  return at::tensor({static_cast<double>(r.kind), static_cast<double>(r.step), r.lr, static_cast<double>(r.clock),
                     static_cast<double>(r.version), static_cast<double>(r.entries)},
                    at::kDouble);
}

Request decode_request(const at::Tensor& header) {
  const double* h = header.data_ptr<double>();
  Request r;
  r.kind = static_cast<RequestKind>(static_cast<int64_t>(h[0]));
  r.step = static_cast<int64_t>(h[1]);
  r.lr = h[2];
  r.clock = static_cast<int64_t>(h[3]);
  r.version = static_cast<int64_t>(h[4]);
  r.entries = static_cast<int64_t>(h[5]);
  return r;
}

at::Tensor encode(const Reply& r) {
  return at::tensor({static_cast<double>(r.kind), static_cast<double>(r.version), r.alpha}, at::kDouble);
}

Reply decode_reply(const at::Tensor& header) {
  const double* h = header.data_ptr<double>();
  Reply r;
  r.kind = static_cast<ReplyKind>(static_cast<int64_t>(h[0]));
  r.version = static_cast<int64_t>(h[1]);
  r.alpha = h[2];
  return r;
}

PsClient::PsClient(comm::Communicator& comm, std::vector<ShardRange> shards)
    : comm_(comm), shards_(std::move(shards)) {}

int64_t PsClient::server_rank(size_t shard) const { return comm_.workers() + static_cast<int64_t>(shard); }

void PsClient::send_to_all(const Request& request, const at::Tensor& payload) {
  for (auto& w : send_to_all_async(request, payload)) w.wait();
}

std::vector<comm::Work> PsClient::send_to_all_async(const Request& request, const at::Tensor& payload) {
  std::vector<comm::Work> sends;
  for (size_t s = 0; s < shards_.size(); ++s) {
    sends.push_back(comm_.send(encode(request), server_rank(s), kHeaderTag));
    if (payload.defined()) {
      sends.push_back(comm_.send(payload.narrow(0, shards_[s].offset, shards_[s].numel), server_rank(s), kPayloadTag));
      bytes_sent_ += 4 * shards_[s].numel;
    }
  }
  return sends;
}

void PsClient::send_sparse_to_all(Request request, const compression::SparseGradient& gradient) {
  // Indices are ascending and shards are contiguous ranges in order: each shard's entries are one run.
  const int64_t* indices = gradient.indices.data_ptr<int64_t>();
  const int64_t count = gradient.size();
  std::vector<at::Tensor> messages;  // alive until sent
  std::vector<comm::Work> sends;
  for (size_t s = 0; s < shards_.size(); ++s) {
    const int64_t begin = std::lower_bound(indices, indices + count, shards_[s].offset) - indices;
    const int64_t end = std::lower_bound(indices, indices + count, shards_[s].offset + shards_[s].numel) - indices;
    request.entries = end - begin;
    sends.push_back(comm_.send(encode(request), server_rank(s), kHeaderTag));
    if (request.entries == 0) continue;
    messages.push_back(compression::pack(
        {gradient.indices.narrow(0, begin, end - begin), gradient.values.narrow(0, begin, end - begin)}));
    sends.push_back(comm_.send(messages.back(), server_rank(s), kPayloadTag));
    bytes_sent_ += 4 * messages.back().numel();
  }
  for (auto& w : sends) w.wait();
}

std::vector<Reply> PsClient::receive_from_all(at::Tensor& flat) {
  std::vector<at::Tensor> headers;
  std::vector<comm::Work> receives;
  for (size_t s = 0; s < shards_.size(); ++s) {
    headers.push_back(at::empty({kReplyHeaderSize}, at::kDouble));
    receives.push_back(comm_.receive(headers.back(), server_rank(s), kReplyHeaderTag));
    receives.push_back(comm_.receive(flat.narrow(0, shards_[s].offset, shards_[s].numel), server_rank(s), kReplyTag));
  }
  for (auto& w : receives) w.wait();
  std::vector<Reply> replies;
  for (const auto& h : headers) replies.push_back(decode_reply(h));
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
