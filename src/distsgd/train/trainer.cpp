#include "distsgd/train/trainer.hpp"

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/train/process.hpp"
#include "distsgd/train/resume.hpp"
#include "distsgd/train/virtual_run.hpp"
#include "distsgd/train/worker_loop.hpp"

#include <ctime>
#include <filesystem>
#include <iomanip>
#include <sstream>

namespace distsgd::train {
void run_server(Process& p) {
  algo::ServerSetup setup{p.config, *p.comm, p.rank - p.config.workers, *p.flat, *p.timeline};
  auto server = algo::find_algorithm(p.config.algorithm).make_server(setup);
  CpuStopwatch cpu;
  cpu.start();
  auto statistics = serve_with_checkpoints(p, *server);
  cpu.stop();
  // The server process's CPU over its serving, all its threads: on a host whose cores the ranks share, what its
  // handlers took from the workers (their own is summary.json's cpu_seconds_per_iteration).
  if (statistics.is_object()) statistics["cpu_seconds"] = cpu.total();
  publish_server_statistics(p, statistics);
  publish_trace(p);
}

std::string default_run_dir(const TrainConfig& c) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::ostringstream name;
  name << std::filesystem::path(c.model).stem().string() << '-' << c.dataset << '-'
       << std::put_time(&tm, "%Y%m%d-%H%M%S");
  return (std::filesystem::path("runs") / name.str()).string();
}

nlohmann::json run_training(TrainConfig config, const TrainHooks& hooks) {
  if (config.virtual_cluster) return run_virtual_training(std::move(config), hooks);
  Process p;
  start_process(p, std::move(config));
  if (!p.is_worker()) {
    run_server(p);
    finish_process(p);
    return {{"role", "server"}};
  }
  auto summary = run_worker(p, hooks);
  finish_process(p);
  return summary;
}

}  // namespace distsgd::train
