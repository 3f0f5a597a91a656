#include "distsgd/experiment/study_presets.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::experiment {
namespace {

// Recipes shared by the presets (bench/README.md, "Accuracy recipes of the asynchronous PS algorithms"): ASP and SSP
// apply every gradient as it comes, and that asynchrony acts as momentum (Mitliagkas et al. 2016), so they train
// without explicit momentum; ALADDIN's x~ takes a step per trigger, so pi 1 and small batches; the other
// parameter-server algorithms need a server.

// make demo: every algorithm's accuracy, throughput against workers on an emulated 100 Mbit/s network beside the
// simulator's prediction, and throughput with one slow worker. About 6 minutes on 2 cores. AR-SGD starts at 2
// workers under --net: one process has no network to emulate.
const char* const kDemo = R"json({
  "name": "demo",
  "description": "lenet5 on Fashion-MNIST: accuracy of every algorithm at 4 workers (2 epochs); throughput against 1, 2 and 4 workers on an emulated 100 Mbit/s network beside the simulator's prediction (to 16); throughput with worker 3 five times slower",
  "base": {"--model": "lenet5", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--seed": 1,
           "--no-checkpoint": true, "--progress-seconds": 1000},
  "recipes": {"bsp": {"--servers": 1}, "asp": {"--servers": 1, "--momentum": 0},
              "ssp": {"--servers": 1, "--momentum": 0}, "easgd": {"--servers": 1}, "aladdin": {"--servers": 1}},
  "grids": [
    {"name": "accuracy",
     "base": {"--workers": 4, "--epochs": 2, "--lr-decay-epochs": [1.5]},
     "recipes": {"asp": {"--batch-size": 16}, "ssp": {"--batch-size": 16},
                 "aladdin": {"--pi": 1, "--momentum": 0.5, "--batch-size": 16}},
     "axes": {"algorithm": [
       {"label": "arsgd", "--algo": "arsgd"},
       {"label": "bsp", "--algo": "bsp"},
       {"label": "bsp dgc 0.1%", "--algo": "bsp", "--compress": "dgc", "--density": 0.001, "--dgc-warmup-epochs": 1},
       {"label": "asp b16", "--algo": "asp"},
       {"label": "ssp s=3 b16", "--algo": "ssp", "--staleness": 3},
       {"label": "easgd tau=2", "--algo": "easgd", "--tau": 2},
       {"label": "aladdin pi=1 b16", "--algo": "aladdin"},
       {"label": "gosgd p=0.1", "--algo": "gosgd", "--gossip-prob": 0.1},
       {"label": "gossip pull", "--algo": "gossip"},
       {"label": "adpsgd", "--algo": "adpsgd"},
       {"label": "sgp", "--algo": "sgp"}]}},
    {"name": "scaling",
     "base": {"--epochs": 100, "--time-budget": 6, "--net": "100mbit"},
     "axes": {"algorithm": [
                {"label": "arsgd", "--algo": "arsgd"}, {"label": "bsp", "--algo": "bsp"},
                {"label": "asp", "--algo": "asp"}, {"label": "easgd tau=2", "--algo": "easgd", "--tau": 2}],
              "--workers": [1, 2, 4]},
     "exclude": [{"algorithm": "arsgd", "--workers": 1}],
     "simulate_workers": [8, 16]},
    {"name": "straggler",
     "base": {"--epochs": 100, "--time-budget": 6, "--workers": 4},
     "axes": {"algorithm": [
                {"label": "arsgd", "--algo": "arsgd"}, {"label": "bsp", "--algo": "bsp"},
                {"label": "asp", "--algo": "asp"}, {"label": "aladdin pi=1", "--algo": "aladdin", "--pi": 1}],
              "--slowdown": [null, "3:5"]}}
  ]
})json";

// Ko et al., IPDPS 2021, accuracy: the seven algorithms (BSP, ASP, SSP, EASGD, AR-SGD, GoSGD, AD-PSGD) with the
// paper's staleness 10, tau 8 and p 0.01 (spec/algorithms.md), plus ALADDIN, SGP and gossiping SGD.
const char* const kIpdpsAccuracy = R"json({
  "name": "ipdps-accuracy",
  "description": "Ko et al. (IPDPS 2021) accuracy comparison at this machine's scale: the paper's seven algorithms (SSP s=10, EASGD tau=8, GoSGD p=0.01) plus ALADDIN, SGP and gossiping SGD, lenet5 on Fashion-MNIST for 3 epochs at 4 and 8 workers",
  "base": {"--model": "lenet5", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--epochs": 3,
           "--lr-decay-epochs": [2.25], "--seed": 1, "--no-checkpoint": true, "--progress-seconds": 1000},
  "recipes": {"bsp": {"--servers": 1}, "easgd": {"--servers": 1},
              "asp": {"--servers": 1, "--momentum": 0, "--batch-size": 16},
              "ssp": {"--servers": 1, "--momentum": 0, "--batch-size": 16},
              "aladdin": {"--servers": 1, "--pi": 1, "--momentum": 0.5, "--batch-size": 16}},
  "axes": {
    "algorithm": [
      {"label": "bsp", "--algo": "bsp"},
      {"label": "asp", "--algo": "asp"},
      {"label": "ssp s=10", "--algo": "ssp", "--staleness": 10},
      {"label": "easgd tau=8", "--algo": "easgd", "--tau": 8},
      {"label": "arsgd", "--algo": "arsgd"},
      {"label": "gosgd p=0.01", "--algo": "gosgd", "--gossip-prob": 0.01},
      {"label": "adpsgd", "--algo": "adpsgd"},
      {"label": "aladdin pi=1", "--algo": "aladdin"},
      {"label": "sgp", "--algo": "sgp"},
      {"label": "gossip pull", "--algo": "gossip", "--gossip-mode": "pull"}],
    "--workers": [4, 8]}
})json";

// Ko et al., IPDPS 2021, scaling: throughput against workers over 10 Gb Ethernet and 56 Gb InfiniBand. Here two
// emulated networks in the same 10 : 56 ratio, real runs to 4 workers, the simulator to 24 (the paper's largest).
// AR-SGD and AD-PSGD start at 2 workers (one process has no network to emulate; AD-PSGD needs a pair).
const char* const kIpdpsScaling = R"json({
  "name": "ipdps-scaling",
  "description": "Ko et al. (IPDPS 2021) scaling at this machine's scale: throughput of BSP, ASP, SSP, AR-SGD and AD-PSGD against 1, 2 and 4 workers (10 s each) on two emulated networks in the paper's 10 Gb : 56 Gb ratio (100 and 560 Mbit/s), and the simulator's prediction on to 24 workers",
  "base": {"--model": "lenet5", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--epochs": 100,
           "--time-budget": 10, "--seed": 1, "--no-checkpoint": true, "--progress-seconds": 1000},
  "recipes": {"bsp": {"--servers": 1}, "asp": {"--servers": 1, "--momentum": 0},
              "ssp": {"--servers": 1, "--momentum": 0}},
  "axes": {
    "--net": ["100mbit", "560mbit"],
    "algorithm": [
      {"label": "bsp", "--algo": "bsp"},
      {"label": "asp", "--algo": "asp"},
      {"label": "ssp s=10", "--algo": "ssp", "--staleness": 10},
      {"label": "arsgd", "--algo": "arsgd"},
      {"label": "adpsgd", "--algo": "adpsgd"}],
    "--workers": [1, 2, 4]},
  "exclude": [{"algorithm": ["arsgd", "adpsgd"], "--workers": 1}],
  "simulate_workers": [8, 12, 16, 24]
})json";

// Ko et al., IPDPS 2021, optimizations: BSP, ASP and SSP with none, + parameter sharding, + wait-free backprop,
// + DGC, each on its own on top of none.
const char* const kIpdpsOptimizations = R"json({
  "name": "ipdps-optimizations",
  "description": "Ko et al. (IPDPS 2021) optimizations at this machine's scale: BSP, ASP and SSP with none, parameter sharding over 4 servers, wait-free backprop and DGC 0.1%, each on its own; 4 workers on an emulated 100 Mbit/s network, one epoch or 30 s",
  "base": {"--model": "lenet5", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--epochs": 1,
           "--time-budget": 30, "--workers": 4, "--net": "100mbit", "--overlap": "none", "--seed": 1,
           "--no-checkpoint": true, "--progress-seconds": 1000},
  "recipes": {"bsp": {"--servers": 1}, "asp": {"--servers": 1, "--momentum": 0},
              "ssp": {"--servers": 1, "--momentum": 0}},
  "axes": {
    "algorithm": [
      {"label": "bsp", "--algo": "bsp"},
      {"label": "asp", "--algo": "asp"},
      {"label": "ssp s=10", "--algo": "ssp", "--staleness": 10}],
    "optimization": [
      {"label": "none"},
      {"label": "+sharding", "--servers": 4},
      {"label": "+wfbp", "--overlap": "wfbp"},
      {"label": "+dgc", "--compress": "dgc", "--density": 0.001, "--dgc-warmup-epochs": 0.25}]}
})json";

// Ko et al., CIKM 2021 (ALADDIN), heterogeneity: one worker 2, 5 and 10 times slower.
const char* const kAladdinHeterogeneity = R"json({
  "name": "aladdin-heterogeneity",
  "description": "Ko et al. (ALADDIN, CIKM 2021) heterogeneity at this machine's scale: ALADDIN, AR-SGD, SGP and ASP at 4 workers with worker 3 at full speed and 2, 5 and 10 times slower, 20 s each, lenet5 on Fashion-MNIST",
  "base": {"--model": "lenet5", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--epochs": 100,
           "--time-budget": 20, "--workers": 4, "--seed": 1, "--no-checkpoint": true, "--progress-seconds": 1000},
  "recipes": {"asp": {"--servers": 1, "--momentum": 0, "--batch-size": 16},
              "aladdin": {"--servers": 1, "--pi": 1, "--momentum": 0.5, "--batch-size": 16}},
  "axes": {
    "algorithm": [
      {"label": "aladdin pi=1", "--algo": "aladdin"},
      {"label": "arsgd", "--algo": "arsgd"},
      {"label": "sgp", "--algo": "sgp"},
      {"label": "asp", "--algo": "asp"}],
    "--slowdown": [null, "3:2", "3:5", "3:10"]}
})json";

// Jin et al., "How to scale distributed deep learning?" (2016): synchronous SGD against elastic averaging and
// gossiping SGD as the number of workers grows.
const char* const kJinScaling = R"json({
  "name": "jin-scaling",
  "description": "Jin et al. (2016) at this machine's scale: synchronous allreduce SGD against elastic averaging and gossiping SGD (pull and push) at 2 and 4 workers on an emulated 1 Gbit/s network (2 epochs of lenet5 on Fashion-MNIST), and the simulator's throughput on to 32 workers",
  "base": {"--model": "lenet5", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--epochs": 2,
           "--lr-decay-epochs": [1.5], "--net": "1gbit", "--seed": 1, "--no-checkpoint": true,
           "--progress-seconds": 1000},
  "recipes": {"easgd": {"--servers": 1}},
  "axes": {
    "algorithm": [
      {"label": "synchronous (arsgd)", "--algo": "arsgd"},
      {"label": "elastic averaging (easgd)", "--algo": "easgd"},
      {"label": "gossip pull", "--algo": "gossip", "--gossip-mode": "pull"},
      {"label": "gossip push", "--algo": "gossip", "--gossip-mode": "push"}],
    "--workers": [2, 4]},
  "simulate_workers": [8, 16, 32]
})json";

// Both scaling-accuracy presets ask one question on two models: every algorithm with the demo's recipes.
const char* const kScalingRecipesAndAlgorithms = R"json(
  "recipes": {"bsp": {"--servers": 1}, "asp": {"--servers": 1, "--momentum": 0, "--batch-size": 16},
              "ssp": {"--servers": 1, "--momentum": 0, "--batch-size": 16}, "easgd": {"--servers": 1},
              "aladdin": {"--servers": 1, "--pi": 1, "--momentum": 0.5, "--batch-size": 16}},
  "axes": {
    "algorithm": [
      {"label": "arsgd", "--algo": "arsgd"},
      {"label": "bsp", "--algo": "bsp"},
      {"label": "asp b16", "--algo": "asp"},
      {"label": "ssp s=3 b16", "--algo": "ssp", "--staleness": 3},
      {"label": "easgd tau=2", "--algo": "easgd", "--tau": 2},
      {"label": "aladdin pi=1 b16", "--algo": "aladdin"},
      {"label": "gosgd p=0.1", "--algo": "gosgd", "--gossip-prob": 0.1},
      {"label": "gossip pull", "--algo": "gossip"},
      {"label": "adpsgd", "--algo": "adpsgd"},
      {"label": "sgp", "--algo": "sgp"}],)json";

// Accuracy at scale (README, "Accuracy at scale: --virtual"): every algorithm at 4 to 64 virtual workers, compute
// timed as a TITAN V (the IPDPS paper's GPU), on the paper's 10 GbE cluster and on 56 Gb InfiniBand; four
// evaluations per epoch give accuracy-against-time curves.
const std::string kScalingAccuracy = R"json({
  "name": "scaling-accuracy",
  "description": "accuracy against workers on a virtual cluster: every algorithm at 4, 8, 16, 32 and 64 virtual workers, lenet5 on Fashion-MNIST for 2 epochs, compute timed as a TITAN V, on the IPDPS 2021 10 GbE cluster and 56 Gb InfiniBand",
  "base": {"--model": "lenet5", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--epochs": 2,
           "--lr-decay-epochs": [1.5], "--seed": 1, "--no-checkpoint": true, "--progress-seconds": 1000,
           "--virtual": true, "--profile": "titan-v", "--evals-per-epoch": 4},)json" +
                                     std::string(kScalingRecipesAndAlgorithms) + R"json(
    "--workers": [4, 8, 16, 32, 64],
    "--cluster": ["ipdps2021-10gbe", "ipdps2021-56gb-ib"]}
})json";

// The same question on a deeper model (issue 23: "a second, deeper model on real data"): resnet20 (BatchNorm, 0.27 M
// parameters) on Fashion-MNIST as it is (28x28: the global pooling takes any size), one epoch, at 4, 16 and 64
// virtual workers on the IPDPS 10 GbE cluster. About 5 minutes of this host per cell (the real arithmetic of an
// epoch), 30 cells.
const std::string kScalingAccuracyDeep = R"json({
  "name": "scaling-accuracy-deep",
  "description": "accuracy against workers on a virtual cluster, a deeper model: every algorithm at 4, 16 and 64 virtual workers, resnet20 on Fashion-MNIST for 1 epoch, compute timed as a TITAN V, on the IPDPS 2021 10 GbE cluster",
  "base": {"--model": "resnet20", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--epochs": 1,
           "--seed": 1, "--no-checkpoint": true, "--progress-seconds": 1000, "--virtual": true,
           "--profile": "titan-v", "--evals-per-epoch": 4, "--cluster": "ipdps2021-10gbe"},)json" +
                                         std::string(kScalingRecipesAndAlgorithms) + R"json(
    "--workers": [4, 16, 64]}
})json";

// The low-communication family under little bandwidth (README, "The low-communication family"): every new method
// against AR-SGD, ASP, ALADDIN and DGC at 4 workers on an emulated 100 Mbit/s network and a 10 Mbit/s one with 50 ms
// of delay each way, for 3 minutes or until 80% test accuracy. The synchronous methods evaluate 4 times an epoch
// (time to the target); ASP and ALADDIN's workers stop on their own under a time budget and evaluate at the end.
const char* const kLowBandwidth = R"json({
  "name": "low-bandwidth",
  "description": "the low-communication family (localsgd, slowmo, diloco, streaming diloco, PowerSGD) against AR-SGD, ASP, ALADDIN and DGC at 4 workers on emulated 100 Mbit/s and 10 Mbit/s + 50 ms networks: samples/s, bytes per sample, time to 80% test accuracy within 3 minutes (lenet5 on Fashion-MNIST)",
  "base": {"--model": "lenet5", "--dataset": "fashion-mnist", "--batch-size": 32, "--lr": 0.05, "--seed": 1,
           "--no-checkpoint": true, "--progress-seconds": 1000, "--workers": 4, "--epochs": 100,
           "--time-budget": 180, "--target-accuracy": 0.8},
  "recipes": {"asp": {"--servers": 1, "--momentum": 0, "--batch-size": 16},
              "aladdin": {"--servers": 1, "--pi": 1, "--momentum": 0.5, "--batch-size": 16},
              "arsgd": {"--evals-per-epoch": 4}, "localsgd": {"--evals-per-epoch": 4},
              "slowmo": {"--evals-per-epoch": 4}, "diloco": {"--evals-per-epoch": 4}},
  "axes": {
    "algorithm": [
      {"label": "arsgd", "--algo": "arsgd"},
      {"label": "arsgd dgc 0.1%", "--algo": "arsgd", "--compress": "dgc", "--density": 0.001, "--dgc-warmup-epochs": 0.25},
      {"label": "arsgd powersgd r=2", "--algo": "arsgd", "--compress": "powersgd", "--rank": 2},
      {"label": "asp b16", "--algo": "asp"},
      {"label": "aladdin pi=1 b16", "--algo": "aladdin"},
      {"label": "localsgd H=8", "--algo": "localsgd", "--sync-every": 8},
      {"label": "slowmo H=8", "--algo": "slowmo", "--sync-every": 8, "--slow-lr": 0.5, "--slow-momentum": 0.5},
      {"label": "diloco H=8", "--algo": "diloco", "--sync-every": 8, "--outer-lr": 0.5, "--outer-momentum": 0.7},
      {"label": "streaming diloco F=2 4-bit", "--algo": "diloco", "--sync-every": 8, "--outer-lr": 0.5,
       "--outer-momentum": 0.7, "--fragments": 2, "--fragment-delay": 1, "--outer-bits": 4}],
    "--net": ["100mbit", "10mbit,delay=50ms"]}
})json";

}  // namespace

const std::vector<StudyPreset>& study_presets() {
  static const std::vector<StudyPreset> presets{
      {"demo", "make demo: every algorithm's accuracy, throughput against workers, a straggler (about 6 min)", kDemo},
      {"ipdps-accuracy", "IPDPS 2021: accuracy of its 7 algorithms + ALADDIN, SGP, gossip at 4 and 8 workers",
       kIpdpsAccuracy},
      {"ipdps-scaling", "IPDPS 2021: throughput against workers on two networks (10:56), simulated to 24",
       kIpdpsScaling},
      {"ipdps-optimizations", "IPDPS 2021: BSP, ASP, SSP with none, + sharding, + wait-free backprop, + DGC",
       kIpdpsOptimizations},
      {"aladdin-heterogeneity", "CIKM 2021 (ALADDIN): one worker 2x, 5x, 10x slower", kAladdinHeterogeneity},
      {"jin-scaling", "Jin et al. 2016: synchronous vs elastic averaging vs gossiping SGD as workers grow",
       kJinScaling},
      {"scaling-accuracy", "virtual cluster: every algorithm's accuracy at 4 to 64 workers on two networks",
       kScalingAccuracy},
      {"scaling-accuracy-deep", "virtual cluster: the same on resnet20, at 4, 16 and 64 workers (5 hours or more)",
       kScalingAccuracyDeep},
      {"low-bandwidth", "localsgd, slowmo, diloco, PowerSGD against AR-SGD, ASP, ALADDIN, DGC at 100 and 10 Mbit/s",
       kLowBandwidth},
  };
  return presets;
}

std::vector<std::string> study_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : study_presets()) names.push_back(p.name);
  return names;
}

StudySpec preset_study_spec(const std::string& name) {
  for (const auto& p : study_presets()) {
    if (p.name == name) return parse_study_spec(nlohmann::ordered_json::parse(p.json), "preset " + name);
  }
  throw Error("--preset: there is no preset '" + name + "' (presets: " + join(study_preset_names()) + ")");
}

}  // namespace distsgd::experiment
