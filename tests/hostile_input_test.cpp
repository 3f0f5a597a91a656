// Hostile and broken files (issue 14, item 4): the inputs with which the fuzz targets (fuzz/) once found a crash or
// an unexplained error are kept in fuzz/regressions/<target>/; each must now end in one distsgd::Error of one line.
#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/sim/model_profile.hpp"
#include "distsgd/train/checkpoint_files.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

namespace fs = std::filesystem;

namespace {

// Reads every regression input of `target` with `read`; returns how many there were.
int expect_one_line_errors(const std::string& target, const std::function<void(const std::string&)>& read) {
  int inputs = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(DISTSGD_SOURCE_DIR) / "fuzz" / "regressions" / target)) {
    ++inputs;
    const std::string path = entry.path().string();
    try {
      read(path);
      ADD_FAILURE() << path << " was accepted";
    } catch (const distsgd::Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << path << ": " << what;
      EXPECT_NE(what.find(path), std::string::npos) << "the error names the file: " << what;
    }
  }
  return inputs;
}

}  // namespace

// A TorchScript type annotation damaged inside the archive: libtorch threw its own error, a code excerpt of several
// lines, which escaped the checkpoint reader.
TEST(HostileInput, DamagedCheckpointFilesEndInOneLine) {
  EXPECT_GE(expect_one_line_errors("checkpoint", [](const std::string& path) { distsgd::train::read_rank_file(path); }),
            1);
}

// A number beyond double's range: nlohmann's out_of_range escaped as "[json.exception.out_of_range.406] ...".
TEST(HostileInput, ProfilesWithHugeNumbersEndInOneLine) {
  EXPECT_GE(expect_one_line_errors("profile", [](const std::string& path) { distsgd::sim::load_model_profile(path); }),
            1);
  try {
    distsgd::parse_json_text(R"({"data_seconds": 1e999})", "p.json");
    ADD_FAILURE() << "accepted";
  } catch (const distsgd::Error& e) {
    EXPECT_STREQ(e.what(), "p.json: not valid JSON (number overflow parsing '1e999')");
  }
}
