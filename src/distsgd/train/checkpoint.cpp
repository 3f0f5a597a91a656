#include "distsgd/train/checkpoint.hpp"

#include "distsgd/core/error.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <filesystem>

namespace distsgd::train {
namespace fs = std::filesystem;

void save_parameters(const at::Tensor& flat, const std::string& path) {
  const std::string tmp = path + ".tmp";
  torch::save(flat, tmp);
  fs::rename(tmp, path);
}

at::Tensor load_parameters(const std::string& path) {
  require(fs::exists(path), "no parameters file at " + path);
  at::Tensor flat;
  try {
    torch::load(flat, path);
  } catch (const c10::Error& e) {
    throw Error("cannot read parameters from " + path + ": " + e.what_without_backtrace());
  }
  return flat;
}

at::Tensor cpu_rng_state() { return at::detail::getDefaultCPUGenerator().get_state(); }

void set_cpu_rng_state(const at::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

}  // namespace distsgd::train
