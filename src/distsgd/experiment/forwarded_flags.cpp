#include "distsgd/experiment/forwarded_flags.hpp"

namespace distsgd::experiment {

const std::vector<std::string> kModelAndDataFlags = {
    "--model",           "--mlp-width",         "--mlp-layers",
    "--no-batch-norm",   "--dataset",           "--data-dir",
    "--synthetic-shape", "--synthetic-classes", "--synthetic-train-size",
    "--data-file",       "--context",           "--gpt-layers",
    "--gpt-heads",       "--gpt-dim",           "--seed"};
const std::vector<std::string> kTrainOnlyDataFlags = {"--synthetic-test-size", "--lr",        "--weight-decay",
                                                      "--eval-batch-size",     "--optimizer", "--adam-beta1",
                                                      "--adam-beta2",          "--adam-eps"};

}  // namespace distsgd::experiment
