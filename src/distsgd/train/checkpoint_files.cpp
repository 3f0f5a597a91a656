#include "distsgd/train/checkpoint_files.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/train/checkpoint_archive.hpp"

#include <fcntl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace distsgd::train {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFormat = "distsgd-checkpoint";
constexpr int64_t kFormatVersion = 1;

// Makes what was written to `path` durable before anyone is told it exists.
void sync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  require(fd >= 0, "cannot open " + path + " to sync it");
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  require(ok, "cannot sync " + path + " to disk");
}

// The temporary beside `path`, renamed over it once complete and synced; the directory is synced too, so the
// rename itself survives a crash.
template <typename Write>
void write_atomically(const std::string& path, const Write& write) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  write(tmp);
  sync_path(tmp);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  require(!ec, "cannot rename " + tmp + " to " + path + ": " + ec.message());
  sync_path(fs::path(path).parent_path().string());
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    require(static_cast<bool>(out), "cannot write " + tmp + " (disk full?)");
  });
}

// FNV-1a over the file's bytes: catches a torn or replaced file, not an adversary.
std::string checksum_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), "cannot read " + path);
  uint64_t hash = 14695981039346656037ull;
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      hash ^= static_cast<unsigned char>(buffer[static_cast<size_t>(i)]);
      hash *= 1099511628211ull;
    }
  }
  std::ostringstream text;
  text << std::hex << hash;
  return text.str();
}

nlohmann::json identity_of(const TrainConfig& c) {
  return {{"algorithm", c.algorithm}, {"workers", c.workers}, {"servers", c.servers},
          {"model", c.model},         {"dataset", c.dataset}, {"batch_size", c.batch_size}};
}

std::string describe(const nlohmann::json& identity) {
  return identity.value("algorithm", std::string("?")) + " with " + std::to_string(identity.value("workers", -1)) +
         " worker(s) and " + std::to_string(identity.value("servers", -1)) + " server(s), model " +
         identity.value("model", std::string("?")) + ", dataset " + identity.value("dataset", std::string("?")) +
         ", batch size " + std::to_string(identity.value("batch_size", -1));
}

int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue v;
  archive.read(key, v);
  require(v.isInt(), "'" + key + "' is not an integer");
  return v.toInt();
}

double read_double(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue v;
  archive.read(key, v);
  require(v.isDouble(), "'" + key + "' is not a number");
  return v.toDouble();
}

// Positions and counts: never negative.
int64_t read_count(torch::serialize::InputArchive& archive, const std::string& key) {
  const int64_t v = read_int(archive, key);
  require(v >= 0, "'" + key + "' is " + std::to_string(v) + ", expected a non-negative count");
  return v;
}

at::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& key, bool buffer = false) {
  at::Tensor t;
  archive.read(key, t, buffer);
  require(t.defined(), "'" + key + "' is missing");
  return t;
}

}  // namespace

std::string checkpoints_root(const std::string& run_dir) { return (fs::path(run_dir) / "checkpoints").string(); }

std::string checkpoint_dir(const std::string& run_dir, int64_t id) {
  return (fs::path(checkpoints_root(run_dir)) / std::to_string(id)).string();
}

std::string rank_file_name(const TrainConfig& c, int64_t rank) {
  return rank < c.workers ? "worker-" + std::to_string(rank) + ".pt"
                          : "server-" + std::to_string(rank - c.workers) + ".pt";
}

void write_rank_file(const std::string& path, const RankFile& f) {
  torch::serialize::OutputArchive archive;
  const auto& p = f.position;
  archive.write("id", c10::IValue(f.id));
  archive.write("epoch", c10::IValue(p.epoch));
  archive.write("step_in_epoch", c10::IValue(p.step_in_epoch));
  archive.write("global_step", c10::IValue(p.global_step));
  archive.write("samples", c10::IValue(p.samples));
  archive.write("train_seconds", c10::IValue(p.train_seconds));
  archive.write("wall_seconds", c10::IValue(p.wall_seconds));
  archive.write("has_rng_state", c10::IValue(f.rng_state.defined()));
  if (f.rng_state.defined()) archive.write("rng_state", f.rng_state);
  archive.write("buffer_count", c10::IValue(static_cast<int64_t>(f.buffers.size())));
  for (size_t i = 0; i < f.buffers.size(); ++i) archive.write("buffer" + std::to_string(i), f.buffers[i], true);
  // The algorithm's entries, by name; the lists of names say what to read back.
  std::vector<std::string> tensors, integers, reals;
  for (const auto& [name, t] : f.state.tensors()) {
    archive.write("state.tensor." + name, t);
    tensors.push_back(name);
  }
  for (const auto& [name, v] : f.state.integers()) {
    archive.write("state.integer." + name, c10::IValue(v));
    integers.push_back(name);
  }
  for (const auto& [name, v] : f.state.reals()) {
    archive.write("state.real." + name, c10::IValue(v));
    reals.push_back(name);
  }
  archive.write("state.tensors", c10::IValue(c10::List<std::string>(tensors)));
  archive.write("state.integers", c10::IValue(c10::List<std::string>(integers)));
  archive.write("state.reals", c10::IValue(c10::List<std::string>(reals)));
  write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

RankFile read_rank_file(const std::string& path) {
  require(fs::exists(path), "--resume: " + path + " is missing");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require(static_cast<bool>(in) || in.eof(), "--resume: cannot read " + path);
  return rank_file_from_bytes(bytes, path);
}

RankFile rank_file_from_bytes(const std::string& bytes, const std::string& path) {
  RankFile f;
  try {
    // Before libtorch allocates what the archive's directory declares (checkpoint_archive.hpp).
    checked_archive_records(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size());
    f.id = read_count(archive, "id");
    auto& p = f.position;
    p.epoch = read_count(archive, "epoch");
    p.step_in_epoch = read_count(archive, "step_in_epoch");
    p.global_step = read_count(archive, "global_step");
    p.samples = read_count(archive, "samples");
    p.train_seconds = read_double(archive, "train_seconds");
    p.wall_seconds = read_double(archive, "wall_seconds");
    c10::IValue has_rng;
    archive.read("has_rng_state", has_rng);
    require(has_rng.isBool(), "'has_rng_state' is not a boolean");
    if (has_rng.toBool()) {
      f.rng_state = read_tensor(archive, "rng_state");
      require(f.rng_state.scalar_type() == at::kByte && f.rng_state.numel() == cpu_rng_state().numel(),
              "'rng_state' is not the CPU generator's state");
    }
    const int64_t buffers = read_count(archive, "buffer_count");
    // A model has a few buffers per layer; a count beyond any model's is a damaged file, not a reason to allocate.
    require(buffers <= 100000, "'buffer_count' is " + std::to_string(buffers) + ", more than any model has");
    f.buffers.resize(static_cast<size_t>(buffers));
    for (size_t i = 0; i < f.buffers.size(); ++i)
      f.buffers[i] = read_tensor(archive, "buffer" + std::to_string(i), true);
    auto names = [&](const std::string& key) {
      c10::IValue v;
      archive.read(key, v);
      require(v.isList(), "'" + key + "' is not a list of names");
      std::vector<std::string> out;
      for (const auto& name : v.toListRef()) {
        require(name.isString(), "'" + key + "' is not a list of names");
        out.push_back(name.toStringRef());
      }
      return out;
    };
    for (const auto& name : names("state.tensors")) f.state.put(name, read_tensor(archive, "state.tensor." + name));
    for (const auto& name : names("state.integers"))
      f.state.put_integer(name, read_int(archive, "state.integer." + name));
    for (const auto& name : names("state.reals")) f.state.put_real(name, read_double(archive, "state.real." + name));
  } catch (const c10::Error& e) {
    throw Error("--resume: cannot read checkpoint file " + path + ": " + e.what_without_backtrace());
  } catch (const Error& e) {
    throw Error("--resume: checkpoint file " + path + " is damaged: " + e.what());
  } catch (const std::exception& e) {
    // libtorch's TorchScript reader throws its own errors, a code excerpt several lines long (fuzz/checkpoint_fuzz).
    const std::string what = e.what();
    throw Error("--resume: checkpoint file " + path + " is damaged: " + what.substr(0, what.find('\n')));
  }
  return f;
}

void complete_checkpoint(const TrainConfig& c, int64_t id, const TrainingPosition& position, int64_t parameters) {
  const std::string dir = checkpoint_dir(c.out, id);
  nlohmann::json manifest = identity_of(c);
  manifest["format"] = kFormat;
  manifest["format_version"] = kFormatVersion;
  manifest["id"] = id;
  manifest["step"] = position.global_step;
  manifest["epoch"] = position.epoch;
  manifest["step_in_epoch"] = position.step_in_epoch;
  manifest["parameters"] = parameters;
  nlohmann::json files = nlohmann::json::object();
  for (int64_t r = 0; r < c.processes(); ++r) {
    const std::string name = rank_file_name(c, r);
    const std::string path = (fs::path(dir) / name).string();
    files[name] = {{"bytes", static_cast<int64_t>(fs::file_size(path))}, {"fnv1a64", checksum_of(path)}};
  }
  manifest["files"] = files;
  write_text_atomically((fs::path(dir) / "manifest.json").string(), manifest.dump(2) + "\n");
  write_text_atomically((fs::path(checkpoints_root(c.out)) / "latest").string(), std::to_string(id) + "\n");
  // Older checkpoints (complete, or abandoned by a run that stopped) are superseded.
  for (const auto& entry : fs::directory_iterator(checkpoints_root(c.out))) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("latest.tmp", 0) == 0) fs::remove(entry.path());  // left by a process killed while writing
    if (!entry.is_directory() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoll(name) < id) fs::remove_all(entry.path());
  }
}

std::string checked_checkpoint(const TrainConfig& c, int64_t parameters) {
  const std::string root = checkpoints_root(c.resume);
  const std::string latest_path = (fs::path(root) / "latest").string();
  require(fs::exists(latest_path), "--resume: no checkpoint in " + c.resume +
                                       " (a run writes one at each epoch's end, and every --checkpoint-every-steps "
                                       "steps; not with --no-checkpoint)");
  std::string text;
  {
    std::ifstream in(latest_path);
    std::getline(in, text);
  }
  require(!text.empty() && text.find_first_not_of("0123456789") == std::string::npos,
          "--resume: " + latest_path + " is damaged (it should hold a checkpoint id, not '" + text + "')");
  const std::string dir = (fs::path(root) / text).string();
  const std::string manifest_path = (fs::path(dir) / "manifest.json").string();
  require(fs::exists(manifest_path), "--resume: checkpoint " + dir + " has no manifest.json (incomplete or damaged)");
  nlohmann::json manifest;
  try {
    manifest = read_json_file(manifest_path, "checkpoint manifest");
  } catch (const Error& e) {
    throw Error("--resume: checkpoint " + dir + " is damaged: " + e.what());
  }
  require(manifest.is_object() && manifest.value("format", std::string()) == kFormat &&
              manifest.value("format_version", int64_t{-1}) == kFormatVersion && manifest.contains("files"),
          "--resume: " + manifest_path + " is not a distsgd checkpoint manifest (format " +
              std::to_string(kFormatVersion) + ")");
  const auto mine = identity_of(c);
  for (const auto& [key, value] : mine.items()) {
    require(manifest.contains(key) && manifest[key] == value,
            "--resume: checkpoint " + dir + " is of " + describe(manifest) + "; this run is " + describe(mine) +
                " (resume with the flags the run was started with)");
  }
  if (parameters >= 0) {
    require(manifest.value("parameters", int64_t{-1}) == parameters,
            "--resume: checkpoint " + dir + " holds a model of " + std::to_string(manifest.value("parameters", -1)) +
                " parameters; this run's " + c.model + " has " + std::to_string(parameters));
  }
  for (int64_t r = 0; r < c.processes(); ++r) {
    const std::string name = rank_file_name(c, r);
    const std::string path = (fs::path(dir) / name).string();
    require(manifest["files"].contains(name), "--resume: checkpoint " + dir + " lists no " + name);
    require(fs::exists(path), "--resume: checkpoint " + dir + " is damaged: " + name + " is missing");
    const auto& expected = manifest["files"][name];
    const auto bytes = static_cast<int64_t>(fs::file_size(path));
    require(bytes == expected.value("bytes", int64_t{-1}),
            "--resume: checkpoint " + dir + " is damaged: " + name + " has " + std::to_string(bytes) +
                " bytes, the manifest says " + std::to_string(expected.value("bytes", int64_t{-1})) + " (torn file?)");
    require(checksum_of(path) == expected.value("fnv1a64", std::string()),
            "--resume: checkpoint " + dir + " is damaged: " + name + " does not match the manifest's checksum");
  }
  return dir;
}

}  // namespace distsgd::train
