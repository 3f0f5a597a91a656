// Checked reading of the numeric fields of a message header that came from another process (float64 on the wire):
// every value is checked against its bounds before anything uses it, and a bad one fails with an error naming the
// message, the field, the value, the bound and the peer. No torch here, so the decoders can be fuzzed on their own.
#pragma once
#include <cstdint>
#include <string>

namespace distsgd::algo::wire {

// Integers beyond 2^53 do not survive the trip through a double.
constexpr int64_t kMaxExact = int64_t(1) << 53;

// Who sent the message and what it is, for the error text: "<what> from rank <peer>".
struct Source {
  std::string what;   // e.g. "parameter-server request"
  int64_t peer = -1;  // < 0: not known
  std::string describe() const;
};

// The field as an integer in [low, high]; throws distsgd::Error when it is not finite, not whole or out of range.
int64_t integer(const Source& source, const char* field, double value, int64_t low, int64_t high);
// The field as a finite number in [low, high].
double real(const Source& source, const char* field, double value, double low, double high);
// Checks the magic number and protocol version at the head of a message.
void check_protocol(const Source& source, double magic, double version, int64_t expected_magic,
                    int64_t expected_version);

}  // namespace distsgd::algo::wire
