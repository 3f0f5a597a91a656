#include "distsgd/data/dataset_cache.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/data/text.hpp"

#include <ATen/ops/from_blob.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

namespace distsgd::data {
namespace {

namespace cache_fs = std::filesystem;

constexpr char kCacheMagic[8] = {'D', 'S', 'G', 'D', 'D', 'A', 'T', '1'};
constexpr uint64_t kCacheAlignment = 64;  // every tensor starts on a cache line (and any dtype's alignment)
// Cache files beyond this many bytes, least recently used first, are removed when a new one is written.
constexpr uintmax_t kCacheBytesKept = 8ull << 30;
// Another process decoding the dataset holds the lock for seconds; a holder that hangs must not hang us.
constexpr auto kCacheLockTimeout = std::chrono::minutes(5);

// The splits' tensors in file order, with the name each has in the file's header.
std::vector<std::pair<std::string, at::Tensor*>> cache_tensors(Dataset& d) {
  return {{"train.images", &d.train.images},
          {"train.labels", &d.train.labels},
          {"test.images", &d.test.images},
          {"test.labels", &d.test.labels}};
}

std::string cache_dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kByte:
      return "uint8";
    case at::kLong:
      return "int64";
    case at::kInt:
      return "int32";
    case at::kFloat:
      return "float32";
    default:
      throw Error(std::string("dataset cache: cannot store tensors of type ") + c10::toString(type));
  }
}

std::optional<at::ScalarType> cache_dtype_of(const std::string& name) {
  if (name == "uint8") return at::kByte;
  if (name == "int64") return at::kLong;
  if (name == "int32") return at::kInt;
  if (name == "float32") return at::kFloat;
  return std::nullopt;
}

uint64_t aligned(uint64_t n) { return (n + kCacheAlignment - 1) / kCacheAlignment * kCacheAlignment; }

// FNV-1a: a stable name for a text (std::hash may differ between builds).
std::string cache_hash(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  std::ostringstream hex;
  hex << std::hex << h;
  return hex.str();
}

// Sizes and modification times of the files the dataset is read from (a folder: its files, two levels deep).
std::string source_stamp(const std::string& path) {
  std::error_code error;
  std::ostringstream stamp;
  auto add = [&](const cache_fs::path& file) {
    const auto size = cache_fs::file_size(file, error);
    const auto time = cache_fs::last_write_time(file, error).time_since_epoch().count();
    stamp << file.string() << ':' << size << ':' << time << ';';
  };
  if (!cache_fs::is_directory(path, error)) {
    add(path);
    return stamp.str();
  }
  for (cache_fs::recursive_directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    if (it.depth() > 1) it.disable_recursion_pending();
    if (it->is_regular_file(error)) add(it->path());
  }
  return stamp.str();
}

// Everything that decides the dataset's content.
std::string cache_file_name(const DatasetOptions& o) {
  std::ostringstream identity;
  identity << o.name << '|';
  if (o.name == "synthetic") {
    for (const int64_t d : o.synthetic_shape) identity << d << 'x';
    identity << '|' << o.synthetic_classes << '|' << o.synthetic_train_size << '|' << o.synthetic_test_size << '|'
             << o.seed;
  } else if (o.name == "text") {
    identity << o.context << '|' << source_stamp(o.data_file.empty() ? kDefaultTextCorpus : o.data_file);
  } else {
    identity << source_stamp(o.dir.empty() ? default_dataset_dir(o.name) : o.dir);
  }
  return o.name + "-" + cache_hash(identity.str()) + ".tensors";
}

nlohmann::json description_json(const Dataset& d) {
  return {{"name", d.name},       {"channels", d.channels}, {"height", d.height}, {"width", d.width},
          {"classes", d.classes}, {"mean", d.mean},         {"stddev", d.stddev}, {"text", d.text}};
}

Dataset description_of(const nlohmann::json& h) {
  Dataset d;
  d.name = h.at("name").get<std::string>();
  d.channels = h.at("channels").get<int64_t>();
  d.height = h.at("height").get<int64_t>();
  d.width = h.at("width").get<int64_t>();
  d.classes = h.at("classes").get<int64_t>();
  d.mean = h.at("mean").get<std::vector<float>>();
  d.stddev = h.at("stddev").get<std::vector<float>>();
  d.text = h.at("text").get<bool>();
  return d;
}

// Writes `d` to `path` through a temporary file renamed into place, so that a reader sees the whole file or none.
void write_cache_file(Dataset d, const cache_fs::path& path) {
  nlohmann::json header = description_json(d);
  uint64_t offset = 0;
  for (const auto& [name, tensor] : cache_tensors(d)) {
    *tensor = tensor->contiguous();
    const uint64_t bytes = tensor->numel() * tensor->element_size();
    header["tensors"].push_back({{"name", name},
                                 {"dtype", cache_dtype_name(tensor->scalar_type())},
                                 {"shape", tensor->sizes().vec()},
                                 {"offset", offset},
                                 {"bytes", bytes}});
    offset = aligned(offset + bytes);
  }
  const std::string header_text = header.dump();
  const uint64_t header_size = header_text.size();

  const cache_fs::path temporary = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(kCacheMagic, sizeof kCacheMagic);
    out.write(reinterpret_cast<const char*>(&header_size), sizeof header_size);
    out << header_text;
    uint64_t written = sizeof kCacheMagic + sizeof header_size + header_size;
    const std::string padding(kCacheAlignment, '\0');
    for (const auto& named : cache_tensors(d)) {
      const at::Tensor* tensor = named.second;
      out.write(padding.data(), static_cast<std::streamsize>(aligned(written) - written));
      written = aligned(written);
      const uint64_t bytes = tensor->numel() * tensor->element_size();
      out.write(static_cast<const char*>(tensor->data_ptr()), static_cast<std::streamsize>(bytes));
      written += bytes;
    }
    out.flush();
    if (!out) {
      const std::error_code cause(errno, std::generic_category());
      std::error_code ignored;
      cache_fs::remove(temporary, ignored);
      throw cache_fs::filesystem_error("cannot write the dataset cache file", temporary, cause);
    }
  }
  cache_fs::rename(temporary, path);
}

// A read-only mapping of a whole file, unmapped when the last tensor over it goes.
struct CacheMapping {
  void* address = MAP_FAILED;
  size_t length = 0;
  ~CacheMapping() {
    if (address != MAP_FAILED) ::munmap(address, length);
  }
};

struct MappedFile {
  std::shared_ptr<CacheMapping> mapping;
  nlohmann::json header;
  uint64_t data_start = 0;
};

// The cache file mapped and its header checked against the file's size; nullopt when it is missing, or damaged
// (then it is written again).
std::optional<MappedFile> map_cache_file(const cache_fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat status {};
  const bool sized = ::fstat(fd, &status) == 0 && status.st_size > 0;
  MappedFile file;
  file.mapping = std::make_shared<CacheMapping>();
  if (sized) {
    file.mapping->length = static_cast<size_t>(status.st_size);
    file.mapping->address = ::mmap(nullptr, file.mapping->length, PROT_READ, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  if (file.mapping->address == MAP_FAILED) return std::nullopt;
  const auto* bytes = static_cast<const char*>(file.mapping->address);
  const size_t length = file.mapping->length;
  uint64_t header_size = 0;
  if (length < sizeof kCacheMagic + sizeof header_size || std::memcmp(bytes, kCacheMagic, sizeof kCacheMagic) != 0) {
    return std::nullopt;
  }
  std::memcpy(&header_size, bytes + sizeof kCacheMagic, sizeof header_size);
  const uint64_t header_start = sizeof kCacheMagic + sizeof header_size;
  if (header_size > length - header_start) return std::nullopt;
  file.data_start = aligned(header_start + header_size);
  file.header = nlohmann::json::parse(bytes + header_start, bytes + header_start + header_size, nullptr, false);
  if (file.header.is_discarded() || !file.header.is_object() || !file.header.contains("tensors")) return std::nullopt;
  try {
    (void)description_of(file.header);
    if (file.header["tensors"].size() != 4) return std::nullopt;
    for (const auto& t : file.header["tensors"]) {
      const auto type = cache_dtype_of(t.at("dtype").get<std::string>());
      const auto offset = t.at("offset").get<uint64_t>(), size = t.at("bytes").get<uint64_t>();
      uint64_t elements = 1;
      for (const auto d : t.at("shape").get<std::vector<int64_t>>()) {
        if (d < 0) return std::nullopt;
        elements *= static_cast<uint64_t>(d);
      }
      if (!type || elements * c10::elementSize(*type) != size || file.data_start > length ||
          offset > length - file.data_start || size > length - file.data_start - offset) {
        return std::nullopt;
      }
    }
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return file;
}

Dataset dataset_of(const MappedFile& file) {
  Dataset d = description_of(file.header);
  const auto tensors = cache_tensors(d);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = file.header["tensors"][i];
    auto* data = static_cast<char*>(file.mapping->address) + file.data_start + t["offset"].get<uint64_t>();
    *tensors[i].second = at::from_blob(
        data, t["shape"].get<std::vector<int64_t>>(), [mapping = file.mapping](void*) {},
        at::TensorOptions().dtype(*cache_dtype_of(t["dtype"].get<std::string>())));
  }
  return d;
}

// Holds an exclusive lock on `path` (created if missing) while it lives.
class CacheLock {
 public:
  explicit CacheLock(const cache_fs::path& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw cache_fs::filesystem_error("cannot open", path, std::error_code(errno, std::generic_category()));
    const auto deadline = std::chrono::steady_clock::now() + kCacheLockTimeout;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::close(fd_);
        throw Error("waited 5 minutes for " + path.string() +
                    ", held by another process writing the dataset cache; if none runs, remove the file");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~CacheLock() { ::close(fd_); }
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_;
};

// Keeps the directory's cache files within kCacheBytesKept, the most recently used first; `keep` stays.
void remove_least_recently_used(const cache_fs::path& dir, const cache_fs::path& keep) {
  std::error_code error;
  std::vector<std::pair<cache_fs::file_time_type, cache_fs::path>> files;
  for (cache_fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == ".tensors") files.emplace_back(it->last_write_time(error), it->path());
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  uintmax_t kept = 0;
  for (const auto& file : files) {
    kept += cache_fs::file_size(file.second, error);
    // A process still mapping a removed file keeps its pages until it unmaps them.
    if (kept > kCacheBytesKept && file.second != keep) cache_fs::remove(file.second, error);
  }
}

// The mapped cache file of `options`' dataset in `dir`, written first when missing or damaged.
MappedFile mapped_dataset(const DatasetOptions& options, const std::string& dir) {
  const cache_fs::path path = cache_fs::path(dir) / cache_file_name(options);
  if (auto file = map_cache_file(path)) {
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recently used: kept when others are removed
    return *file;
  }
  cache_fs::create_directories(dir);
  CacheLock lock(path.string() + ".lock");
  if (auto file = map_cache_file(path)) return *file;  // another process wrote it while we waited
  write_cache_file(load_dataset(options), path);
  remove_least_recently_used(dir, path);
  auto file = map_cache_file(path);
  require(file.has_value(), "the dataset cache file " + path.string() + " cannot be read back after writing it");
  return *file;
}

void warn_cache_unusable(const std::string& dir, const std::error_code& error) {
  // The cache only saves memory: a directory we cannot write costs a private copy, not the run.
  log::info("distsgd: warning: cannot use the dataset cache in " + dir + " (" + error.message() +
            "); each process loads its own copy (set DISTSGD_DATA_CACHE to a writable directory, or off)");
}

// The mapped cache file, or nullopt (after one warning line) when the cache directory cannot be used.
std::optional<MappedFile> try_mapped_dataset(const DatasetOptions& options, const std::string& cache_dir) {
  try {
    return mapped_dataset(options, cache_dir);
  } catch (const cache_fs::filesystem_error& e) {
    warn_cache_unusable(cache_dir, e.code());
    return std::nullopt;
  }
}

}  // namespace

std::string dataset_cache_dir() {
  if (const char* dir = std::getenv("DISTSGD_DATA_CACHE"); dir && *dir) {
    return std::string(dir) == "off" ? "" : dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/distsgd/datasets";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/distsgd/datasets";
  return "";
}

bool dataset_cache_usable(const std::string& dir) {
  std::error_code error;
  cache_fs::create_directories(dir, error);
  if (!error && ::access(dir.c_str(), W_OK | X_OK) != 0) error = std::error_code(errno, std::generic_category());
  if (error) warn_cache_unusable(dir, error);
  return !error;
}

Dataset load_shared_dataset(const DatasetOptions& options, const std::string& cache_dir) {
  const auto file = cache_dir.empty() ? std::nullopt : try_mapped_dataset(options, cache_dir);
  if (!file) return load_dataset(options);
  Dataset d = dataset_of(*file);
  if (!d.text && d.classes > 0) {
    for (const Split* split : {&d.train, &d.test}) {
      if (split->labels.numel() == 0) continue;
      require(split->labels.min().item<int64_t>() >= 0 && split->labels.max().item<int64_t>() < d.classes,
              "the dataset cache file in " + cache_dir + " holds labels out of range: remove it (it is made again)");
    }
  }
  return d;
}

Dataset dataset_description(const DatasetOptions& options, const std::string& cache_dir) {
  const auto file = cache_dir.empty() ? std::nullopt : try_mapped_dataset(options, cache_dir);
  if (file) return description_of(file->header);  // the samples' pages are never touched
  Dataset d = load_dataset(options);
  d.train = {};
  d.test = {};
  return d;
}

double dataset_bytes(const Dataset& d) {
  double bytes = 0;
  for (const Split* split : {&d.train, &d.test}) {
    for (const at::Tensor* t : {&split->images, &split->labels}) {
      if (t->defined()) bytes += static_cast<double>(t->numel() * t->element_size());
    }
  }
  return bytes;
}

}  // namespace distsgd::data
