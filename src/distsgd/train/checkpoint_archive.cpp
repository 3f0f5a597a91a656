#include "distsgd/train/checkpoint_archive.hpp"

#include "distsgd/core/error.hpp"

#include <algorithm>

namespace distsgd::train {
namespace {

// The zip format's records (APPNOTE.TXT 4.3), as miniz reads them.
constexpr uint32_t kEndOfDirectorySignature = 0x06054b50;
constexpr uint32_t kDirectoryEntrySignature = 0x02014b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kZip64EndOfDirectorySignature = 0x06064b50;
constexpr uint64_t kEndOfDirectoryBytes = 22;
constexpr uint64_t kDirectoryEntryBytes = 46;
constexpr uint64_t kLocalHeaderBytes = 30;
constexpr uint64_t kZip64LocatorBytes = 20;
constexpr uint64_t kZip64EndOfDirectoryBytes = 56;
constexpr uint16_t kZip64ExtraField = 0x0001;
constexpr uint32_t kZip64Marker = 0xFFFFFFFF;  // a 32-bit field whose value is in the zip64 extra field
constexpr uint16_t kStored = 0;
constexpr uint16_t kDeflated = 8;
constexpr uint64_t kMaxDeflateRatio = 1032;  // deflate's longest match (258 bytes) costs at least 2 bits

// Little-endian fields; the caller has checked that `at + width` lies inside `bytes`.
uint64_t field_at(std::string_view bytes, uint64_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

// A record's name for a message: printable characters only, at most 80 of them.
std::string printable_name(std::string_view name) {
  std::string text;
  for (const char c : name.substr(0, 80)) text += c >= 0x20 && c < 0x7f ? c : '?';
  return "'" + text + (name.size() > 80 ? "...'" : "'");
}

// Fills the fields of `record` whose 32-bit value is the zip64 marker from the entry's zip64 extra field (in the
// order uncompressed, compressed, local header offset, as miniz reads them). A field without one keeps the marker.
void read_zip64_fields(std::string_view extra, ArchiveRecord& record, const std::string& which) {
  while (!extra.empty()) {
    require(extra.size() >= 4, which + ": its extra fields are truncated");
    const auto id = static_cast<uint16_t>(field_at(extra, 0, 2));
    const uint64_t length = field_at(extra, 2, 2);
    require(length <= extra.size() - 4, which + ": an extra field runs past the entry");
    if (id == kZip64ExtraField) {
      std::string_view data = extra.substr(4, length);
      for (uint64_t* value : {&record.uncompressed_bytes, &record.compressed_bytes, &record.local_header_offset}) {
        if (*value != kZip64Marker) continue;
        require(data.size() >= 8, which + ": its zip64 extra field is truncated");
        *value = field_at(data, 0, 8);
        data.remove_prefix(8);
      }
      return;
    }
    extra.remove_prefix(4 + length);
  }
}

}  // namespace

std::vector<ArchiveRecord> checked_archive_records(std::string_view bytes) {
  const uint64_t size = bytes.size();
  const std::string file_bytes = "the file's " + std::to_string(size) + " bytes";
  require(size >= kEndOfDirectoryBytes, "not a zip archive (" + std::to_string(size) + " bytes)");
  // The end-of-directory record: the last signature with a whole record after it (miniz searches the same way).
  uint64_t end = size - kEndOfDirectoryBytes;
  while (field_at(bytes, end, 4) != kEndOfDirectorySignature) {
    require(end > 0, "not a zip archive (no end-of-directory record)");
    --end;
  }
  uint64_t records = field_at(bytes, end + 10, 2);
  uint64_t directory_bytes = field_at(bytes, end + 12, 4);
  uint64_t directory_offset = field_at(bytes, end + 16, 4);
  // A zip64 locator right before it points to the zip64 end-of-directory record, which holds the 64-bit fields.
  if (end >= kZip64LocatorBytes + kZip64EndOfDirectoryBytes &&
      field_at(bytes, end - kZip64LocatorBytes, 4) == kZip64LocatorSignature) {
    const uint64_t zip64_end = field_at(bytes, end - kZip64LocatorBytes + 8, 8);
    require(zip64_end <= size - kZip64EndOfDirectoryBytes,
            "its zip64 end-of-directory record (at " + std::to_string(zip64_end) + ") lies outside " + file_bytes);
    if (field_at(bytes, zip64_end, 4) == kZip64EndOfDirectorySignature) {
      records = field_at(bytes, zip64_end + 32, 8);
      directory_bytes = field_at(bytes, zip64_end + 40, 8);
      directory_offset = field_at(bytes, zip64_end + 48, 8);
    }
  }
  require(directory_offset <= size && directory_bytes <= size - directory_offset,
          "its directory (" + std::to_string(directory_bytes) + " bytes at " + std::to_string(directory_offset) +
              ") lies outside " + file_bytes);
  require(records <= directory_bytes / kDirectoryEntryBytes, "it declares " + std::to_string(records) +
                                                                 " records, more than its directory of " +
                                                                 std::to_string(directory_bytes) + " bytes can list");

  std::vector<ArchiveRecord> result;
  result.reserve(records);
  std::string_view directory = bytes.substr(directory_offset, directory_bytes);
  for (uint64_t i = 0; i < records; ++i) {
    const std::string which = "record " + std::to_string(i + 1) + " of " + std::to_string(records);
    require(directory.size() >= kDirectoryEntryBytes && field_at(directory, 0, 4) == kDirectoryEntrySignature,
            which + ": no directory entry where it should be");
    const uint64_t name_bytes = field_at(directory, 28, 2);
    const uint64_t extra_bytes = field_at(directory, 30, 2);
    const uint64_t entry_bytes = kDirectoryEntryBytes + name_bytes + extra_bytes + field_at(directory, 32, 2);
    require(entry_bytes <= directory.size(), which + ": its directory entry runs past the directory");
    ArchiveRecord record;
    record.name = std::string(directory.substr(kDirectoryEntryBytes, name_bytes));
    record.method = static_cast<uint16_t>(field_at(directory, 10, 2));
    record.compressed_bytes = field_at(directory, 20, 4);
    record.uncompressed_bytes = field_at(directory, 24, 4);
    record.local_header_offset = field_at(directory, 42, 4);
    const std::string named = which + " (" + printable_name(record.name) + ")";
    if (std::max({record.compressed_bytes, record.uncompressed_bytes, record.local_header_offset}) == kZip64Marker) {
      read_zip64_fields(directory.substr(kDirectoryEntryBytes + name_bytes, extra_bytes), record, named);
    }
    const uint64_t offset = record.local_header_offset;
    require(offset <= size && kLocalHeaderBytes <= size - offset &&
                record.compressed_bytes <= size - offset - kLocalHeaderBytes,
            named + " declares " + std::to_string(record.compressed_bytes) + " bytes of data at " +
                std::to_string(offset) + ", past the end of " + file_bytes);
    if (record.method == kStored) {
      require(record.uncompressed_bytes == record.compressed_bytes,
              named + " declares " + std::to_string(record.uncompressed_bytes) + " bytes but stores " +
                  std::to_string(record.compressed_bytes));
    } else if (record.method == kDeflated) {
      require(record.uncompressed_bytes <= kMaxDeflateRatio * record.compressed_bytes,
              named + " declares " + std::to_string(record.uncompressed_bytes) + " bytes, more than its " +
                  std::to_string(record.compressed_bytes) + " compressed bytes can inflate to");
    } else {
      throw Error(named + " is compressed with method " + std::to_string(record.method) +
                  " (a checkpoint's records are stored or deflated)");
    }
    result.push_back(std::move(record));
    directory.remove_prefix(entry_bytes);
  }
  return result;
}

}  // namespace distsgd::train
