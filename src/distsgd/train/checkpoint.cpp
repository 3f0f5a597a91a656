#include "distsgd/train/checkpoint.hpp"

#include "distsgd/core/error.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <filesystem>

namespace distsgd::train {
namespace fs = std::filesystem;

std::string checkpoint_path(const std::string& run_dir) { return (fs::path(run_dir) / "checkpoint.pt").string(); }

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  torch::serialize::OutputArchive archive;
  const auto& p = c.position;
  archive.write("epoch", c10::IValue(p.epoch));
  archive.write("step_in_epoch", c10::IValue(p.step_in_epoch));
  archive.write("global_step", c10::IValue(p.global_step));
  archive.write("samples", c10::IValue(p.samples));
  archive.write("train_seconds", c10::IValue(p.train_seconds));
  archive.write("wall_seconds", c10::IValue(p.wall_seconds));
  archive.write("model", c10::IValue(c.model));
  archive.write("params", c.params);
  archive.write("momentum", c.momentum);
  archive.write("rng_state", c.rng_state);
  archive.write("buffer_count", c10::IValue(static_cast<int64_t>(c.buffers.size())));
  for (size_t i = 0; i < c.buffers.size(); ++i) archive.write("buffer" + std::to_string(i), c.buffers[i], true);
  const std::string tmp = path + ".tmp";
  archive.save_to(tmp);
  fs::rename(tmp, path);
}

Checkpoint load_checkpoint(const std::string& dir_or_file) {
  std::string path = fs::is_directory(dir_or_file) ? checkpoint_path(dir_or_file) : dir_or_file;
  require(fs::exists(path), "--resume: no checkpoint at " + path);
  Checkpoint c;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    auto read_int = [&](const char* key) {
      c10::IValue v;
      archive.read(key, v);
      return v.toInt();
    };
    auto read_double = [&](const char* key) {
      c10::IValue v;
      archive.read(key, v);
      return v.toDouble();
    };
    c.position.epoch = read_int("epoch");
    c.position.step_in_epoch = read_int("step_in_epoch");
    c.position.global_step = read_int("global_step");
    c.position.samples = read_int("samples");
    c.position.train_seconds = read_double("train_seconds");
    c.position.wall_seconds = read_double("wall_seconds");
    c10::IValue model;
    archive.read("model", model);
    c.model = model.toStringRef();
    archive.read("params", c.params);
    archive.read("momentum", c.momentum);
    archive.read("rng_state", c.rng_state);
    const int64_t buffers = read_int("buffer_count");
    c.buffers.resize(buffers);
    for (int64_t i = 0; i < buffers; ++i) archive.read("buffer" + std::to_string(i), c.buffers[i], true);
  } catch (const c10::Error& e) {
    throw Error("cannot read checkpoint " + path + ": " + e.what_without_backtrace());
  }
  return c;
}

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
