// Byte-level text for language models (--dataset text): a corpus's bytes, split by position (the first 90% trains,
// the last 10% tests), each split cut into consecutive sequences of `context` bytes. Sample i of a split is the
// input x[iC, iC + C) and the target x[iC + 1, iC + C + 1): every position's next byte.
//
// As a Dataset (dataset.hpp): images uint8 [N, 1, 1, C] hold the inputs, labels int64 [N, C] the targets, classes
// 256; normalize() turns a batch of inputs into int64 bytes [B, C], the language model's input.
#pragma once
#include "distsgd/data/dataset.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace distsgd::data {

inline constexpr double kTextTestFraction = 0.1;
inline constexpr int64_t kByteValues = 256;

// The default corpus: the fortune database of Debian's `fortunes` package (scripts/setup.sh installs it).
inline const char* const kDefaultTextCorpus = "/usr/share/games/fortunes";

// The corpus at `path`: a file's bytes as they are (inflated when gzip-compressed), or, for a directory, a fortune
// database: its fortune files (every file but the *.dat indices and *.u8 links) in name order, each without its
// '%' separator lines. Throws distsgd::Error naming the path when it is missing, unreadable or holds no text.
std::vector<uint8_t> read_text_corpus(const std::string& path);

// A fortune file's text: the lines holding only '%' (the separators between entries) removed.
std::vector<uint8_t> strip_fortune_separators(const std::vector<uint8_t>& bytes);

// Both splits of `corpus` (see above). Throws distsgd::Error, naming `source`, when the corpus is too short to give
// each split one sequence of `context` bytes (and its target).
Dataset make_text_dataset(const std::vector<uint8_t>& corpus, int64_t context, const std::string& source);

// --dataset text: --data-file (default kDefaultTextCorpus), --context.
Dataset load_text(const DatasetOptions& options);

}  // namespace distsgd::data
