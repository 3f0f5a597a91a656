#include "distsgd/data/file_bytes.hpp"

#include "distsgd/core/error.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace distsgd::data {
namespace {

std::vector<uint8_t> read_raw(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw Error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  for (;;) {
    size_t got = std::fread(chunk, 1, sizeof chunk, file.get());
    bytes.insert(bytes.end(), chunk, chunk + got);
    if (got < sizeof chunk) break;
  }
  // fopen succeeds on a directory; the read is where that (and I/O errors) show up.
  if (std::ferror(file.get())) throw Error("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

bool is_gzip(const std::vector<uint8_t>& bytes, size_t at) {
  return bytes.size() >= at + 2 && bytes[at] == 0x1f && bytes[at + 1] == 0x8b;
}

std::vector<uint8_t> inflate_gzip(const std::string& path, const std::vector<uint8_t>& compressed) {
  z_stream stream{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (and check the CRC).
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw Error(path + ": cannot initialise zlib");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&stream, &inflateEnd);

  std::vector<uint8_t> out;
  // The gzip trailer holds the uncompressed size mod 2^32: a good first guess for the buffer, trusted only up to
  // deflate's maximum ratio (~1032:1) so that a corrupt trailer cannot make us allocate gigabytes.
  size_t guess = compressed.size() * 4;
  if (compressed.size() >= 4) {
    const uint8_t* t = compressed.data() + compressed.size() - 4;
    const size_t trailer = uint32_t(t[0]) | uint32_t(t[1]) << 8 | uint32_t(t[2]) << 16 | uint32_t(t[3]) << 24;
    if (trailer <= compressed.size() * 1032) guess = std::max(guess, trailer);
  }
  out.resize(guess + 1);

  stream.next_in = const_cast<Bytef*>(compressed.data());
  size_t consumed = 0, produced = 0;
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    // zlib counts in uInt; feed and drain at most 1 GiB per call.
    const size_t in_chunk = std::min<size_t>(compressed.size() - consumed, size_t(1) << 30);
    const size_t out_chunk = std::min<size_t>(out.size() - produced, size_t(1) << 30);
    stream.next_in = const_cast<Bytef*>(compressed.data() + consumed);
    stream.avail_in = uInt(in_chunk);
    stream.next_out = out.data() + produced;
    stream.avail_out = uInt(out_chunk);
    int status = inflate(&stream, Z_NO_FLUSH);
    consumed += in_chunk - stream.avail_in;
    produced += out_chunk - stream.avail_out;
    if (status == Z_STREAM_END) {
      // Concatenated gzip members form one file (as gzip -d reads them); anything else after the end is ignored.
      if (!is_gzip(compressed, consumed)) break;
      inflateReset(&stream);
      continue;
    }
    if (status == Z_DATA_ERROR || status == Z_NEED_DICT)
      throw Error(path + ": corrupt gzip stream (" + (stream.msg ? stream.msg : "invalid data") + ")");
    if (status == Z_MEM_ERROR) throw Error(path + ": out of memory while decompressing");
    const bool no_progress =
        status == Z_BUF_ERROR || (in_chunk - stream.avail_in == 0 && out_chunk - stream.avail_out == 0);
    if (consumed == compressed.size() && no_progress)
      throw Error(path + ": truncated gzip stream (ends after " + std::to_string(compressed.size()) +
                  " compressed bytes, " + std::to_string(produced) + " bytes inflated)");
  }
  out.resize(produced);
  return out;
}

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path) { return decode_file_bytes(path, read_raw(path)); }

std::vector<uint8_t> decode_file_bytes(const std::string& path, std::vector<uint8_t> bytes) {
  return is_gzip(bytes, 0) ? inflate_gzip(path, bytes) : bytes;
}

}  // namespace distsgd::data
