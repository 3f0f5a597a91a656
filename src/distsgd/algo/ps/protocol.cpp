#include "distsgd/algo/ps/protocol.hpp"

#include "distsgd/comm/communicator.hpp"

#include <torch/torch.h>

namespace distsgd::algo::ps {

at::Tensor encode(const Request& r) {
  return torch::tensor({static_cast<double>(r.kind), static_cast<double>(r.step), r.lr, static_cast<double>(r.clock)},
                       torch::kFloat64);
}

Request decode(const at::Tensor& header) {
  const double* h = header.data_ptr<double>();
  Request r;
  r.kind = static_cast<RequestKind>(static_cast<int64_t>(h[0]));
  r.step = static_cast<int64_t>(h[1]);
  r.lr = h[2];
  r.clock = static_cast<int64_t>(h[3]);
  return r;
}

PsClient::PsClient(comm::Communicator& comm, std::vector<ShardRange> shards)
    : comm_(comm), shards_(std::move(shards)) {}

int64_t PsClient::server_rank(size_t shard) const { return comm_.workers() + static_cast<int64_t>(shard); }

void PsClient::send_to_all(const Request& request, const at::Tensor& payload) {
  std::vector<comm::Work> sends;
  for (size_t s = 0; s < shards_.size(); ++s) {
    sends.push_back(comm_.send(encode(request), server_rank(s), kHeaderTag));
    if (payload.defined()) {
      sends.push_back(comm_.send(payload.narrow(0, shards_[s].offset, shards_[s].numel), server_rank(s), kPayloadTag));
      bytes_sent_ += 4 * shards_[s].numel;
    }
  }
  for (auto& w : sends) w.wait();
}

void PsClient::receive_from_all(at::Tensor& flat) {
  std::vector<comm::Work> receives;
  for (size_t s = 0; s < shards_.size(); ++s) {
    receives.push_back(comm_.receive(flat.narrow(0, shards_[s].offset, shards_[s].numel), server_rank(s), kReplyTag));
  }
  for (auto& w : receives) w.wait();
}

}  // namespace distsgd::algo::ps
