#include "distsgd/algo/ps/shard_server.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/sgd.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <chrono>
#include <cstdlib>
#include <exception>

namespace distsgd::algo::ps {

WorkerChannel::WorkerChannel(ShardServer& server, int64_t worker)
    : server_(server),
      worker_(worker),
      payload_(at::empty({server.range().numel})),
      reply_buffer_(at::empty({server.range().numel})) {}

namespace {

double payload_delay_from_environment() {
  const char* text = std::getenv("DISTSGD_SERVER_DELAY_MS");
  if (!text || !*text) return 0;
  char* end = nullptr;
  const double ms = std::strtod(text, &end);
  require(end && *end == 0 && ms >= 0,
          std::string("DISTSGD_SERVER_DELAY_MS='") + text + "' is not a non-negative number of milliseconds");
  return ms / 1000;
}

}  // namespace

at::Tensor& WorkerChannel::receive_payload() {
  server_.delay_payload();
  server_.comm().receive(payload_, worker_, kPayloadTag).wait();
  server_.spend_processing(0, static_cast<double>(payload_.nbytes()));
  server_.spend_update(payload_.numel());
  return payload_;
}

at::Tensor WorkerChannel::receive_gradient(const Request& request, Processing processing) {
  const int64_t shard_numel = server_.range().numel;
  at::Tensor piece;
  double bytes = 0;  // as they came over the wire
  if (request.entries < 0) {
    // decode_request() has checked that [offset, offset + numel) lies within the shard.
    const int64_t numel = payload_numel(request, shard_numel);
    piece = payload_.narrow(0, request.offset, numel);
    server_.delay_payload();
    server_.comm().receive(piece, worker_, kPayloadTag).wait();
    bytes = static_cast<double>(piece.nbytes());
  } else {
    payload_.zero_();
    piece = payload_;
    if (request.entries > 0) {
      auto packed = at::empty({2 * request.entries});
      server_.delay_payload();
      server_.comm().receive(packed, worker_, kPayloadTag).wait();
      bytes = static_cast<double>(packed.nbytes());
      compression::add_sparse(payload_, compression::unpack(packed));  // indexed in the shard's buffer
    }
  }
  server_.spend_processing(0, bytes);
  if (processing == Processing::kPerPayload) server_.spend_update(piece.numel());
  gradient_received_ += piece.numel();
  require(gradient_received_ <= shard_numel,
          "a worker's gradient pieces overlap in shard " + std::to_string(server_.shard()));
  gradient_complete_ = gradient_received_ == shard_numel;
  if (gradient_complete_) gradient_received_ = 0;
  return piece;
}

void WorkerChannel::reply(const at::Tensor& values, const Reply& header) {
  auto h = server_.comm().send(encode(header), worker_, kReplyHeaderTag);
  auto v = server_.comm().send(values, worker_, kReplyTag);
  h.wait();
  v.wait();
}

void WorkerChannel::reply_with_parameters() {
  Reply header;
  {
    std::lock_guard<std::mutex> lock(server_.mutex());
    reply_buffer_.copy_(server_.parameters());
    header.version = server_.version();
  }
  reply(reply_buffer_, header);
}

void WorkerChannel::push(const at::Tensor& values, const Reply& header) {
  auto h = server_.comm().send(encode(header), worker_, kPushHeaderTag);
  auto v = values.defined() ? server_.comm().send(values, worker_, kPushTag) : comm::Work();
  h.wait();
  v.wait();
}

ShardServer::ShardServer(comm::Communicator& comm, int64_t shard, ShardRange range, const at::Tensor& initial)
    : comm_(comm),
      shard_(shard),
      range_(std::move(range)),
      parameters_(gather_shard(initial, range_).clone()),
      payload_delay_seconds_(payload_delay_from_environment()) {}

void ShardServer::delay_payload() const { runtime::sleep_for(payload_delay_seconds_); }

void ShardServer::spend_update(int64_t numel) {
  spend_on_compute(runtime::parameter_pass_seconds(static_cast<double>(numel)));
}

void ShardServer::spend_processing(double requests, double bytes) {
  spend_on_compute(runtime::server_processing_seconds(requests, bytes));
}

void ShardServer::spend_on_compute(double seconds) {
  if (seconds <= 0) return;
  std::unique_lock<std::mutex> lock(compute_mutex_);
  compute_free_.wait(
      lock, [&] { return !computing_; }, "the server's compute");
  computing_ = true;
  lock.unlock();
  runtime::spend_compute(seconds);
  lock.lock();
  computing_ = false;
  compute_free_.notify_all();
}

ShardServer::ShardServer(const ServerSetup& s)
    : ShardServer(s.comm, s.server_index,
                  shard_layout(s.flat.slots(), s.comm.servers(), kSharding.of(s.config)).at(s.server_index),
                  s.flat.params()) {}

int64_t ShardServer::workers() const { return comm_.workers(); }

void ShardServer::record_staleness(int64_t staleness) {
  staleness_sum_ += static_cast<double>(staleness);
  ++staleness_count_;
  staleness_max_ = std::max(staleness_max_, staleness);
}

nlohmann::json ShardServer::statistics() {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json s = extra_;
  s["shard"] = shard_;
  s["updates"] = version_;
  s["staleness_mean"] = staleness_count_ > 0 ? staleness_sum_ / static_cast<double>(staleness_count_) : 0.0;
  s["staleness_max"] = staleness_max_;
  // ASP, SSP and ALADDIN record the staleness of every gradient: so many arrived (make soak checks none was lost).
  if (staleness_count_ > 0) s["gradients_received"] = staleness_count_;
  return s;
}

void ShardServer::serve(const Handler& handle, const DoneHandler& on_done, const LostHandler& on_lost) {
  std::mutex state_mutex;
  runtime::Condition state_changed;
  int64_t finished = 0;
  std::string first_error;
  std::vector<runtime::Thread> threads;
  for (int64_t w = 0; w < workers(); ++w) {
    threads.emplace_back("handler of worker " + std::to_string(w), [&, w] {
      std::string error;
      try {
        WorkerChannel channel(*this, w);
        auto header = at::empty({kRequestHeaderSize}, at::kDouble);
        while (true) {
          comm_.receive(header, w, kHeaderTag).wait();
          const Request request = decode_request(header, {w, shard_, range_.numel, workers()});
          if (request.kind == RequestKind::kKeepAlive) continue;  // only restarts this receive's timeout
          spend_processing(1, 0);
          if (request.kind == RequestKind::kDone) {
            if (on_done) on_done(channel);
            break;
          }
          if (request.kind == RequestKind::kPull && request.clock < 0) {
            channel.reply_with_parameters();
          } else {
            handle(request, channel);
          }
        }
      } catch (const std::exception& e) {
        auto* liveness = comm_.liveness();
        if (liveness && liveness->survivable(w) && liveness->wait_until_lost(w)) {
          if (on_lost) on_lost(w);
        } else {
          error = "serving worker " + std::to_string(w) + ": " + e.what();
        }
      }
      std::lock_guard<std::mutex> lock(state_mutex);
      ++finished;
      if (!error.empty() && first_error.empty()) first_error = error;
      state_changed.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(state_mutex);
  state_changed.wait(
      lock, [&] { return finished == workers() || !first_error.empty(); }, "its handlers");
  if (!first_error.empty()) {
    // Other handlers may be blocked on workers that will never answer; they cannot be joined, and unwinding
    // would free what they use. Report and end the process now (the launcher stops the rest).
    log::info("distsgd: error: server " + std::to_string(shard_) + ": " + first_error);
    std::_Exit(1);
  }
  lock.unlock();
  for (auto& t : threads) t.join();
}

void ShardServer::save_state(AlgorithmState& state, optim::MomentumSgd* optimizer) const {
  state.put("shard_parameters", parameters_);
  state.put_integer("shard_version", version_);
  if (optimizer) state.put("server_momentum", optimizer->momentum_buffer());
}

void ShardServer::load_state(const AlgorithmState& state, optim::MomentumSgd* optimizer) {
  state.copy_to("shard_parameters", parameters_);
  version_ = state.integer("shard_version");
  if (optimizer) state.copy_to("server_momentum", optimizer->momentum_buffer());
}

}  // namespace distsgd::algo::ps
