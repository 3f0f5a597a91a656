#include "distsgd/data/text.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/data/file_bytes.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

namespace distsgd::data {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<uint8_t> read_fortune_database(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (ends_with(name, ".dat") || ends_with(name, ".u8") || !entry.is_regular_file(error)) continue;
    files.push_back(entry.path());
  }
  if (error) throw Error("cannot list " + dir.string() + ": " + error.message());
  std::sort(files.begin(), files.end());
  std::vector<uint8_t> corpus;
  for (const auto& file : files) {
    const auto text = strip_fortune_separators(read_file_bytes(file.string()));
    corpus.insert(corpus.end(), text.begin(), text.end());
  }
  return corpus;
}

// Sequences of `context` bytes from x[begin, end): inputs [N, 1, 1, C] and next-byte targets [N, C].
Split cut_sequences(const std::vector<uint8_t>& corpus, size_t begin, size_t end, int64_t context) {
  const auto c = static_cast<size_t>(context);
  const size_t count = end - begin > c ? (end - begin - 1) / c : 0;  // the last target byte must be inside
  const auto n = static_cast<int64_t>(count);
  Split split;
  split.images = torch::empty({n, 1, 1, context}, torch::kUInt8);
  split.labels = torch::empty({n, context}, torch::kLong);
  auto* inputs = split.images.data_ptr<uint8_t>();
  auto* targets = split.labels.data_ptr<int64_t>();
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* x = corpus.data() + begin + i * c;
    std::copy(x, x + c, inputs + i * c);
    std::copy(x + 1, x + 1 + c, targets + i * c);
  }
  return split;
}

}  // namespace

std::vector<uint8_t> strip_fortune_separators(const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> text;
  text.reserve(bytes.size());
  size_t line = 0;
  while (line < bytes.size()) {
    auto newline = std::find(bytes.begin() + static_cast<std::ptrdiff_t>(line), bytes.end(), '\n');
    const size_t end = newline == bytes.end() ? bytes.size() : static_cast<size_t>(newline - bytes.begin()) + 1;
    const size_t length = end - line - (newline == bytes.end() ? 0 : 1);
    const bool separator = length == 1 && bytes[line] == '%';
    if (!separator)
      text.insert(text.end(), bytes.begin() + static_cast<std::ptrdiff_t>(line),
                  bytes.begin() + static_cast<std::ptrdiff_t>(end));
    line = end;
  }
  return text;
}

std::vector<uint8_t> read_text_corpus(const std::string& path) {
  std::error_code error;
  if (!fs::exists(path, error)) {
    throw Error("missing text corpus " + path +
                (path == kDefaultTextCorpus ? std::string(" (install Debian's fortunes package: scripts/setup.sh)")
                                            : std::string(" (give --data-file a text file)")));
  }
  auto corpus = fs::is_directory(path, error) ? read_fortune_database(path) : read_file_bytes(path);
  require(!corpus.empty(), "the text corpus " + path + " is empty");
  return corpus;
}

Dataset make_text_dataset(const std::vector<uint8_t>& corpus, int64_t context, const std::string& source) {
  require(context >= 1, "--context must be at least 1 (got " + std::to_string(context) + ")");
  const size_t size = corpus.size();
  const auto test_begin = static_cast<size_t>(static_cast<double>(size) * (1.0 - kTextTestFraction));
  Dataset dataset;
  dataset.name = "text";
  dataset.text = true;
  dataset.channels = 1;
  dataset.height = 1;
  dataset.width = context;
  dataset.classes = kByteValues;
  dataset.train = cut_sequences(corpus, 0, test_begin, context);
  dataset.test = cut_sequences(corpus, test_begin, size, context);
  const auto needed = static_cast<size_t>(static_cast<double>(context + 1) / kTextTestFraction) + 1;
  require(dataset.train.size() > 0 && dataset.test.size() > 0,
          "the text corpus " + source + " has " + std::to_string(size) + " bytes: too short for sequences of " +
              std::to_string(context) + " bytes in both splits (its last 10% tests); give at least " +
              std::to_string(needed) + " bytes, or a smaller --context");
  return dataset;
}

Dataset load_text(const DatasetOptions& options) {
  const std::string path = options.data_file.empty() ? kDefaultTextCorpus : options.data_file;
  return make_text_dataset(read_text_corpus(path), options.context, path);
}

}  // namespace distsgd::data
