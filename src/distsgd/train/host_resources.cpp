#include "distsgd/train/host_resources.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/host_cores.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/data/dataset_cache.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/threads.hpp"
#include "distsgd/train/memory_estimate.hpp"
#include "distsgd/train/process.hpp"

#include <ATen/core/grad_mode.h>

#include <stdlib.h>

#include <iomanip>
#include <sstream>
#include <thread>

namespace distsgd::train {
namespace {

std::string megabytes(double bytes) { return std::to_string(static_cast<int64_t>(bytes / 1e6 + 0.5)) + " MB"; }

}  // namespace

std::string oversubscription_warning(int64_t processes, int64_t threads_per_process, int64_t cores) {
  const int64_t threads = processes * threads_per_process;
  if (cores <= 0 || threads <= cores) return "";
  const double ratio = static_cast<double>(threads) / static_cast<double>(cores);
  std::ostringstream factor;
  factor << std::fixed << std::setprecision(ratio < 10 ? 1 : 0) << ratio;
  return "distsgd: warning: " + std::to_string(processes) + " processes x " + std::to_string(threads_per_process) +
         (threads_per_process == 1 ? " compute thread = " : " compute threads = ") + std::to_string(threads) +
         " threads on " + std::to_string(cores) + (cores == 1 ? " core (" : " cores (") + factor.str() +
         "x oversubscribed): each process runs slower than on a core of its own, and throughput figures measure the "
         "contention";
}

void check_host_resources(const TrainConfig& c) {
  // One thread: the emulated cluster's launcher must stay single-threaded to make its user namespace afterwards.
  configure_threads(1);
  at::NoGradGuard no_grad;
  std::string cache = data::dataset_cache_dir();
  if (!cache.empty() && !data::dataset_cache_usable(cache)) {
    // Said once, here: the processes, which inherit this environment, load their own copies without a word.
    ::setenv("DISTSGD_DATA_CACHE", "off", 1);
    cache.clear();
  }
  const data::Dataset dataset = data::load_shared_dataset(dataset_options(c), cache);
  const auto model = models::make_model(model_options(c), input_spec(dataset));
  int64_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += p.numel();
  const auto m = processes_memory_estimate(c, parameters, dataset.channels * dataset.height * dataset.width,
                                           data::dataset_bytes(dataset), !cache.empty());
  const double available = available_memory_bytes();
  require(fits_in_memory(m.total, available),
          std::to_string(c.workers) + " workers and " + std::to_string(c.servers) + " servers of " +
              std::to_string(parameters) + " parameters need about " + gigabytes(m.total) + " (" +
              megabytes(m.per_worker) + " per worker, " +
              (c.servers > 0 ? megabytes(m.per_server) + " per server, " : "") + megabytes(m.shared) +
              " shared: libtorch's code" + (cache.empty() ? "" : " and the dataset") + "), and this machine has " +
              gigabytes(available) +
              " available (MemAvailable): use fewer processes, a smaller model, or a host with more memory");

  const int64_t processes = c.workers + c.servers;
  const int64_t cores = host_cores();
  const std::string warning = oversubscription_warning(processes, compute_threads(c.threads, processes), cores);
  if (!warning.empty()) log::info(warning);
}

}  // namespace distsgd::train
