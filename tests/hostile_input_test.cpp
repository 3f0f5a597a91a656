// Hostile and broken files (issue 14, item 4): the inputs with which the fuzz targets (fuzz/) once found a crash or
// an unexplained error are kept in fuzz/regressions/<target>/; each must now end in one distsgd::Error of one line.
#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "distsgd/train/checkpoint_archive.hpp"
#include "distsgd/train/checkpoint_files.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

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

std::string source_file(const std::string& relative) {
  return distsgd::testing::read_file((fs::path(DISTSGD_SOURCE_DIR) / relative).string());
}

void put_le32(std::string& bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>(value >> (8 * i) & 0xff);
}

uint64_t le_field(const std::string& bytes, size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

// Where each central directory entry of a small zip archive starts (its 32-bit end record suffices).
std::vector<size_t> directory_entry_offsets(const std::string& bytes) {
  const size_t end = bytes.rfind(std::string("PK\x05\x06", 4));
  std::vector<size_t> offsets;
  size_t at = le_field(bytes, end + 16, 4);
  for (uint64_t i = 0; i < le_field(bytes, end + 10, 2); ++i) {
    offsets.push_back(at);
    at += 46 + le_field(bytes, at + 28, 2) + le_field(bytes, at + 30, 2) + le_field(bytes, at + 32, 2);
  }
  return offsets;
}

const char* const kCheckpointSeed = "fuzz/seeds/checkpoint/mlp-worker-0.pt";

}  // namespace

// A checkpoint written by a run passes the archive check unchanged: its records as torch wrote them (tensors and
// pickles stored, TorchScript source deflated).
TEST(HostileInput, ACheckpointAsWrittenPassesTheArchiveCheck) {
  const std::string bytes = source_file(kCheckpointSeed);
  const auto records = distsgd::train::checked_archive_records(bytes);
  ASSERT_EQ(records.size(), 8u);
  uint64_t stored = 0;
  for (const auto& record : records) {
    if (record.method == 0) stored += record.uncompressed_bytes;
  }
  EXPECT_LT(stored, bytes.size());
  EXPECT_NO_THROW(distsgd::train::rank_file_from_bytes(bytes, "worker-0.pt"));
}

// The fuzzer's finding (issue 26): a record whose directory entry declares more bytes than the file holds made
// libtorch's reader allocate them (4.29 GB, libFuzzer's out-of-memory) before reading a byte. Each record of a real
// checkpoint, declared 4 GB (the zip64 marker, without a zip64 field) in turn, is refused before libtorch reads it.
TEST(HostileInput, CheckpointRecordsDeclaredLargerThanTheFileAreRefusedBeforeLibtorchReadsThem) {
  const std::string seed = source_file(kCheckpointSeed);
  for (const size_t entry : directory_entry_offsets(seed)) {
    std::string bytes = seed;
    put_le32(bytes, entry + 24, 0xFFFFFFFF);  // the uncompressed size
    const std::string error =
        distsgd::testing::error_of_call([&] { distsgd::train::rank_file_from_bytes(bytes, "worker-0.pt"); });
    EXPECT_NE(error.find("--resume: checkpoint file worker-0.pt is damaged: record "), std::string::npos) << error;
    EXPECT_NE(error.find(" declares 4294967295 bytes"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // The inputs kept in fuzz/regressions: 4 GB declared for data.pkl; 64 GiB for the version record, through a zip64
  // extra field (libtorch reads the version first).
  for (const auto& [file, declared] : {std::pair<const char*, const char*>{"record-size-4gb.pt", "4294967295"},
                                       {"record-size-zip64-64gib.pt", "68719476736"}}) {
    const std::string path = (fs::path(DISTSGD_SOURCE_DIR) / "fuzz/regressions/checkpoint" / file).string();
    const std::string error = distsgd::testing::error_of_call([&] { distsgd::train::read_rank_file(path); });
    EXPECT_NE(error.find(std::string(" declares ") + declared + " bytes"), std::string::npos) << error;
  }
}

// The directory itself: a record count, offset or size the file cannot hold is refused, as is data past its end.
TEST(HostileInput, CheckpointDirectoriesBeyondTheFileAreRefused) {
  const std::string seed = source_file(kCheckpointSeed);
  const auto refused = [](const std::string& bytes) {
    return distsgd::testing::error_of_call([&] { distsgd::train::checked_archive_records(bytes); });
  };
  const size_t end = seed.rfind(std::string("PK\x05\x06", 4));
  const size_t zip64_end = seed.rfind(std::string("PK\x06\x06", 4));
  ASSERT_NE(zip64_end, std::string::npos) << "torch writes zip64 end records";
  // 93,368,855 records in a directory of 554 bytes: 46 bytes each overflows miniz's 32-bit check of the count, and
  // it would allocate two arrays of 4 bytes per record.
  std::string many = seed;
  put_le32(many, zip64_end + 24, 93368855);  // records on this disk
  put_le32(many, zip64_end + 32, 93368855);  // records in all
  EXPECT_NE(refused(many).find("declares 93368855 records, more than its directory of 554 bytes"), std::string::npos)
      << refused(many);
  std::string outside = seed;
  put_le32(outside, zip64_end + 52, 1);
  EXPECT_NE(refused(outside).find("lies outside the file's 58590 bytes"), std::string::npos) << refused(outside);
  std::string past = seed;
  put_le32(past, directory_entry_offsets(seed).back() + 42, 58580);  // the version record's data past the end
  EXPECT_NE(refused(past).find("past the end of the file's 58590 bytes"), std::string::npos) << refused(past);
  std::string method = seed;
  method[directory_entry_offsets(seed).front() + 10] = 12;  // bzip2
  EXPECT_NE(refused(method).find("is compressed with method 12"), std::string::npos) << refused(method);
  EXPECT_NE(refused(seed.substr(0, end)).find("not a zip archive"), std::string::npos);
  EXPECT_NE(refused("").find("not a zip archive"), std::string::npos);
}

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

// JSON nested 100,000 levels deep (issue 26): a profile, a cluster file and a study specification each crashed
// distsgd (copying or printing the value overflowed the stack). Each is now one line and status 1.
TEST(HostileInput, JsonNestedTooDeepEndsInOneLine) {
  distsgd::testing::TempDir dir;
  const std::string deep = dir / "deep.json";
  std::ofstream(deep) << std::string(100000, '[') << std::string(100000, ']');
  const std::string profile = (fs::path(DISTSGD_SOURCE_DIR) / "fuzz/seeds/profile/lenet5-v100.json").string();
  for (const std::string& args : {"simulate --profile " + deep, "simulate --profile " + profile + " --cluster " + deep,
                                  "study --dry-run " + deep}) {
    const auto r = distsgd::testing::run_distsgd(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output.substr(0, 2000);
    EXPECT_NE(r.output.find("distsgd: error: "), std::string::npos) << args << "\n" << r.output.substr(0, 2000);
    EXPECT_NE(r.output.find(deep + ": not valid JSON (arrays and objects nested deeper than 256 levels)"),
              std::string::npos)
        << args << "\n"
        << r.output.substr(0, 2000);
    EXPECT_EQ(distsgd::testing::count_of(r.output, "\n"), 1) << args << "\n" << r.output.substr(0, 2000);
  }
  // 256 levels are read, 257 are not; brackets inside strings do not count.
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  EXPECT_NO_THROW(distsgd::parse_json_text(nested(256), "p.json"));
  EXPECT_EQ(distsgd::testing::error_of_call([&] { distsgd::parse_json_text(nested(257), "p.json"); }),
            "p.json: not valid JSON (arrays and objects nested deeper than 256 levels)");
  EXPECT_NO_THROW(distsgd::parse_json_text("[\"" + std::string(1000, '[') + "\\\"{\"]", "p.json"));
  std::ofstream(dir / "too-deep.json") << nested(257);
  EXPECT_FALSE(distsgd::read_json_file_if_valid(dir / "too-deep.json").has_value());
}
