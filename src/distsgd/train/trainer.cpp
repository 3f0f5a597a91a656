#include "distsgd/train/trainer.hpp"

#include "distsgd/algo/algorithm.hpp"
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
  publish_server_statistics(p, serve_with_checkpoints(p, *server));
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
