// libFuzzer target: reading one process's checkpoint file (--resume; src/distsgd/train/checkpoint_files.cpp), which
// libtorch's archive reader parses. The input is the file's contents, written to a temporary file for the reader.
// A bad file must end in one distsgd::Error; any other exception or a crash is a finding. (On --resume the
// manifest's size and checksum are checked before a file is read; this fuzzes what lies behind that check.)
#include "distsgd/core/error.hpp"
#include "distsgd/train/checkpoint_files.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

std::string temporary_path() {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/distsgd-fuzz-checkpoint-" + std::to_string(getpid()) + ".pt";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = temporary_path();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  try {
    distsgd::train::read_rank_file(path);
  } catch (const distsgd::Error&) {
  }
  return 0;
}
