#include "distsgd/algo/algorithm.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

#include <algorithm>

namespace distsgd::algo {
namespace {

std::vector<AlgorithmInfo>& registry() {
  static std::vector<AlgorithmInfo> all = builtin_algorithms();
  return all;
}

std::vector<std::string> algorithms_taking(const std::string& flag) {
  return algorithm_names_where([&](const AlgorithmInfo& a) {
    return std::any_of(a.options.begin(), a.options.end(), [&](const OptionSpec* o) { return o->flag == flag; });
  });
}

}  // namespace

const std::vector<AlgorithmInfo>& algorithms() { return registry(); }

void register_algorithm(AlgorithmInfo info) {
  for (const auto& known : registry()) {
    require(known.name != info.name, "an algorithm named '" + info.name + "' is already registered");
  }
  require(static_cast<bool>(info.make_worker), "algorithm '" + info.name + "' has no worker side");
  require(!info.needs_servers || info.make_server,
          "algorithm '" + info.name + "' needs servers but has no server side");
  registry().push_back(std::move(info));
}

const AlgorithmInfo& find_algorithm(const std::string& name) {
  for (const auto& info : algorithms()) {
    if (info.name == name) return info;
  }
  throw Error("unknown algorithm '" + name + "'; valid: " + join(registered_algorithm_names()));
}

std::vector<std::string> registered_algorithm_names() {
  return algorithm_names_where([](const AlgorithmInfo&) { return true; });
}

std::vector<std::string> algorithm_names_where(const std::function<bool(const AlgorithmInfo&)>& has_capability) {
  std::vector<std::string> names;
  for (const auto& info : algorithms()) {
    if (has_capability(info)) names.push_back(info.name);
  }
  return names;
}

const std::vector<OptionSpec>& algorithm_options() {
  // Gathered again when an algorithm was registered since.
  static std::vector<OptionSpec> options;
  static size_t gathered_from = 0;
  if (gathered_from == algorithms().size()) return options;
  gathered_from = algorithms().size();
  options = [] {
    std::vector<OptionSpec> all;
    for (const auto& info : algorithms()) {
      for (const OptionSpec* spec : info.options) {
        const bool seen =
            std::any_of(all.begin(), all.end(), [&](const OptionSpec& o) { return o.flag == spec->flag; });
        if (seen) continue;
        all.push_back(*spec);
        all.back().group = "Options of " + join(algorithms_taking(spec->flag));
      }
    }
    return all;
  }();
  return options;
}

void validate_algorithm(const TrainConfig& c) {
  const auto& info = find_algorithm(c.algorithm);
  if (info.single_process && c.workers != 1) {
    const auto distributed = algorithm_names_where([](const AlgorithmInfo& a) { return !a.single_process; });
    throw Error("--algo " + c.algorithm +
                " is single-process training: use --workers 1, or a distributed "
                "algorithm (--algo " +
                join(distributed, "|") + ")");
  }
  require(!info.needs_servers || c.servers >= 1,
          "--algo " + c.algorithm + " is a parameter-server algorithm: give --servers 1 or more");
  require(info.needs_servers || c.servers == 0, "--algo " + c.algorithm + " takes no --servers (it has none)");
  require(!info.decentralized || c.workers >= 2,
          "--algo " + c.algorithm + " is decentralized: use --workers 2 or more");
  for (const auto& spec : algorithm_options()) {
    if (spec.check) spec.check(c);
    const bool taken = std::any_of(info.options.begin(), info.options.end(),
                                   [&](const OptionSpec* o) { return o->flag == spec.flag; });
    require(taken || spec.is_default(c),
            spec.flag + " applies to " + join(algorithms_taking(spec.flag)) + " only (not " + c.algorithm + ")");
  }
  require(c.optimizer == Optimizer::kSgd || info.takes_optimizer,
          "--optimizer " + name_of(c.optimizer) + ": " + c.algorithm +
              (info.needs_servers ? "'s parameter server owns the update (momentum SGD at the shards)"
                                  : " steps with momentum SGD only") +
              "; algorithms whose workers step their own parameters: " +
              join(algorithm_names_where([](const AlgorithmInfo& a) { return a.takes_optimizer; }), ", "));
  require(c.on_worker_loss != WorkerLoss::kContinue || info.survives_worker_loss,
          "--on-worker-loss continue: " + c.algorithm +
              " cannot go on without a worker (every step waits for all workers' gradients); it can only abort. "
              "Algorithms that continue: " +
              join(algorithm_names_where([](const AlgorithmInfo& a) { return a.survives_worker_loss; }), ", "));
  if (info.validate) info.validate(c);
}

bool continues_after_worker_loss(const TrainConfig& c) {
  if (c.on_worker_loss == WorkerLoss::kDefault) return find_algorithm(c.algorithm).survives_worker_loss;
  return c.on_worker_loss == WorkerLoss::kContinue;
}

}  // namespace distsgd::algo
