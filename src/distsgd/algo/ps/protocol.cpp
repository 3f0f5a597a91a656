#include "distsgd/algo/ps/protocol.hpp"

#include "distsgd/comm/communicator.hpp"

#include <torch/torch.h>

namespace distsgd::algo::ps {

at::Tensor encode(const Request& r) {
  return torch::tensor({static_cast<double>(r.kind), static_cast<double>(r.step), r.lr, static_cast<double>(r.clock),
                        static_cast<double>(r.version)},
                       torch::kFloat64);
}

Request decode_request(const at::Tensor& header) {
  const double* h = header.data_ptr<double>();
  Request r;
  r.kind = static_cast<RequestKind>(static_cast<int64_t>(h[0]));
  r.step = static_cast<int64_t>(h[1]);
  r.lr = h[2];
  r.clock = static_cast<int64_t>(h[3]);
  r.version = static_cast<int64_t>(h[4]);
  return r;
}

at::Tensor encode(const Reply& r) {
  return torch::tensor({static_cast<double>(r.kind), static_cast<double>(r.version), r.alpha}, torch::kFloat64);
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

std::vector<Reply> PsClient::receive_from_all(at::Tensor& flat) {
  std::vector<at::Tensor> headers;
  std::vector<comm::Work> receives;
  for (size_t s = 0; s < shards_.size(); ++s) {
    headers.push_back(torch::empty({kReplyHeaderSize}, torch::kFloat64));
    receives.push_back(comm_.receive(headers.back(), server_rank(s), kReplyHeaderTag));
    receives.push_back(
        comm_.receive(flat.narrow(0, shards_[s].offset, shards_[s].numel), server_rank(s), kReplyTag));
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
