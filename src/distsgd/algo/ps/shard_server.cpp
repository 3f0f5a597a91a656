#include "distsgd/algo/ps/shard_server.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"

#include <torch/torch.h>

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <thread>

namespace distsgd::algo::ps {

WorkerChannel::WorkerChannel(ShardServer& server, int64_t worker)
    : server_(server), worker_(worker), payload_(torch::empty({server.range().numel})) {}

at::Tensor& WorkerChannel::receive_payload() {
  server_.comm().receive(payload_, worker_, kPayloadTag).wait();
  return payload_;
}

void WorkerChannel::reply(const at::Tensor& values) { server_.comm().send(values, worker_, kReplyTag).wait(); }

ShardServer::ShardServer(comm::Communicator& comm, int64_t shard, ShardRange range, const at::Tensor& initial)
    : comm_(comm), shard_(shard), range_(range), parameters_(initial.narrow(0, range.offset, range.numel).clone()) {}

int64_t ShardServer::workers() const { return comm_.workers(); }

void ShardServer::serve(const Handler& handle) {
  std::mutex state_mutex;
  std::condition_variable state_changed;
  int64_t finished = 0;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int64_t w = 0; w < workers(); ++w) {
    threads.emplace_back([&, w] {
      std::string error;
      try {
        WorkerChannel channel(*this, w);
        auto header = torch::empty({4}, torch::kFloat64);
        while (true) {
          comm_.receive(header, w, kHeaderTag).wait();
          const Request request = decode(header);
          if (request.kind == RequestKind::kDone) break;
          handle(request, channel);
        }
      } catch (const std::exception& e) {
        error = "serving worker " + std::to_string(w) + ": " + e.what();
      }
      std::lock_guard<std::mutex> lock(state_mutex);
      ++finished;
      if (!error.empty() && first_error.empty()) first_error = error;
      state_changed.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(state_mutex);
  state_changed.wait(lock, [&] { return finished == workers() || !first_error.empty(); });
  if (!first_error.empty()) {
    // Other handlers may be blocked on workers that will never answer; they cannot be joined, and unwinding
    // would free what they use. Report and end the process now (the launcher stops the rest).
    log::info("distsgd: error: server " + std::to_string(shard_) + ": " + first_error);
    std::_Exit(1);
  }
  lock.unlock();
  for (auto& t : threads) t.join();
}

}  // namespace distsgd::algo::ps
