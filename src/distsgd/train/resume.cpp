#include "distsgd/train/resume.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

namespace distsgd::train {
namespace fs = std::filesystem;
namespace {

constexpr const char* kRequestKey = "checkpoint/request";  // worker 0 -> servers: the id to write
constexpr auto kServerPoll = std::chrono::milliseconds(20);

std::string written_key(int64_t id, int64_t rank) {
  return "checkpoint/" + std::to_string(id) + "/" + std::to_string(rank);
}

std::string rank_path(const TrainConfig& c, int64_t id, int64_t rank) {
  return (fs::path(checkpoint_dir(c.out, id)) / rank_file_name(c, rank)).string();
}

// The file of this process in the checkpoint --resume names (checked whole first: manifest, sizes, checksums).
RankFile read_own_file(const TrainConfig& c, int64_t rank, int64_t parameters) {
  const std::string dir = checked_checkpoint(c, parameters);
  RankFile f = read_rank_file((fs::path(dir) / rank_file_name(c, rank)).string());
  require(std::to_string(f.id) == fs::path(dir).filename().string(),
          "--resume: " + rank_file_name(c, rank) + " in " + dir + " belongs to checkpoint " + std::to_string(f.id));
  return f;
}

// Worker 0: whether every process has written its file of the pending checkpoint (store look-ups only for those
// not yet seen).
bool all_written(WorkerState& s) {
  if (!s.p.comm) return true;
  const int64_t processes = s.c.processes();
  while (s.pending_written < processes && s.p.comm->store_has(written_key(s.pending_checkpoint, s.pending_written))) {
    ++s.pending_written;
  }
  return s.pending_written == processes;
}

// A checkpoint holds every process's state; once a worker is lost (the run went on without it) no new one can be
// complete, and the last complete one stays the latest.
bool a_worker_was_lost(WorkerState& s) {
  if (!s.p.comm || !s.p.comm->liveness() || s.p.comm->liveness()->lost().empty()) return false;
  if (!s.checkpoints_stopped && s.leader()) {
    log::info(
        "checkpoints stop: a worker was lost and a checkpoint needs every process's state (the last "
        "complete one stays the latest)");
  }
  s.checkpoints_stopped = true;
  s.pending_checkpoint = -1;
  return true;
}

void complete_pending(WorkerState& s) {
  complete_checkpoint(s.c, s.pending_checkpoint, s.pending_position, s.p.flat->numel());
  s.pending_checkpoint = -1;
}

// Worker 0: waits up to --timeout for the pending checkpoint's files; a process that never writes (it failed, or
// stopped earlier) leaves the checkpoint incomplete, and the previous one stays the latest.
void wait_for_pending(WorkerState& s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(s.c.timeout);
  while (!all_written(s)) {
    if (a_worker_was_lost(s)) return;
    if (Clock::now() > deadline) {
      log::info("checkpoint " + std::to_string(s.pending_checkpoint) +
                " left incomplete: " + role_label(s.c, s.pending_written) + " did not write its file within --timeout");
      s.pending_checkpoint = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  complete_pending(s);
}

}  // namespace

void restore_parameters(WorkerState& s) {
  Process& p = s.p;
  s.resumed = std::make_unique<RankFile>(read_own_file(s.c, p.rank, p.flat->numel()));
  const RankFile& f = *s.resumed;
  auto buffers = p.model->buffers();
  require(buffers.size() == f.buffers.size(), "--resume: the checkpoint's buffers do not match the model");
  f.state.copy_to("parameters", p.flat->params());
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(f.buffers[i]);
}

void restore_algorithm_state(WorkerState& s) {
  const RankFile& f = *s.resumed;
  s.algorithm->load_state(f.state);
  if (f.rng_state.defined()) set_cpu_rng_state(f.rng_state);
  s.position = f.position;
  s.last_checkpoint_id = f.id;
  if (s.leader()) {
    log::info("resuming from " + checkpoint_dir(s.c.resume, f.id) + " at epoch " +
              std::to_string(s.position.epoch + 1) + ", step " + std::to_string(s.position.step_in_epoch));
  }
  s.resumed.reset();
}

void save_checkpoint_now(WorkerState& s) {
  if (a_worker_was_lost(s)) return;
  const int64_t id = s.position.global_step;
  if (id == s.last_checkpoint_id) return;  // an epoch end that was also a periodic checkpoint
  s.last_checkpoint_id = id;
  s.position.wall_seconds = s.wall_now();
  RankFile f;
  f.id = id;
  f.position = s.position;
  f.buffers = s.p.model->buffers();
  f.rng_state = cpu_rng_state();
  // First the algorithm: it may complete the step's parameters (multistep's allgathers) or hold its own (AD-PSGD).
  s.algorithm->save_state(f.state);
  if (!f.state.has("parameters")) f.state.put("parameters", s.p.flat->params());
  fs::create_directories(checkpoint_dir(s.c.out, id));
  if (s.leader()) {
    // A newer checkpoint supersedes one still waiting for files.
    s.pending_checkpoint = id;
    s.pending_position = s.position;
    s.pending_written = 0;
    if (s.c.servers > 0) s.p.comm->store_set(kRequestKey, std::to_string(id));
  }
  write_rank_file(rank_path(s.c, id, s.p.rank), f);
  if (s.p.comm) s.p.comm->store_set(written_key(id, s.p.rank), "1");
  if (!s.leader()) return;
  // In lockstep the others write now; the servers must write before this worker's next push.
  if (!s.info.independent_workers && !s.info.decentralized) {
    wait_for_pending(s);
  } else {
    poll_checkpoint(s);
  }
}

void poll_checkpoint(WorkerState& s) {
  if (s.pending_checkpoint >= 0 && !a_worker_was_lost(s) && all_written(s)) complete_pending(s);
}

void finish_checkpoints(WorkerState& s) {
  if (s.leader() && s.pending_checkpoint >= 0) wait_for_pending(s);
}

nlohmann::json serve_with_checkpoints(Process& p, algo::ServerAlgorithm& server) {
  const TrainConfig& c = p.config;
  if (!c.resume.empty()) {
    RankFile f = read_own_file(c, p.rank, p.flat->numel());
    server.load_state(f.state);
  }
  if (!c.checkpoint_each_epoch && c.checkpoint_every_steps <= 0) return server.serve();
  // Worker 0 asks through the store; this thread writes the server's file while serve() goes on.
  std::atomic<bool> serving{true};
  std::string error;
  std::thread writer([&] {
    int64_t last = -1;
    try {
      while (serving) {
        std::this_thread::sleep_for(kServerPoll);
        if (!p.comm->store_has(kRequestKey)) continue;
        const int64_t id = std::stoll(p.comm->store_get(kRequestKey));
        if (id == last) continue;
        last = id;
        RankFile f;
        f.id = id;
        server.save_state(f.state);
        fs::create_directories(checkpoint_dir(c.out, id));
        write_rank_file(rank_path(c, id, p.rank), f);
        p.comm->store_set(written_key(id, p.rank), "1");
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  nlohmann::json statistics;
  try {
    statistics = server.serve();
  } catch (...) {
    serving = false;
    writer.join();
    throw;
  }
  serving = false;
  writer.join();
  require(error.empty(), "server " + std::to_string(p.rank - c.workers) + ": writing a checkpoint: " + error);
  return statistics;
}

}  // namespace distsgd::train
