// libFuzzer target: reading one process's checkpoint file (--resume; src/distsgd/train/checkpoint_files.cpp): the
// archive check of train/checkpoint_archive.cpp, then libtorch's archive reader. The input is the file's contents,
// read from memory as read_rank_file reads the file's (no temporary file: its name would differ from run to run,
// and fuzz/run.sh --fixed must try the same inputs every time). A bad file must end in one distsgd::Error; any other
// exception or a crash is a finding. (On --resume the manifest's size and checksum are checked before a file is
// read; this fuzzes what lies behind that check.)
#include "distsgd/core/error.hpp"
#include "distsgd/train/checkpoint_files.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    distsgd::train::rank_file_from_bytes(std::string(data, data + size), "worker-0.pt");
  } catch (const distsgd::Error&) {
  }
  return 0;
}
