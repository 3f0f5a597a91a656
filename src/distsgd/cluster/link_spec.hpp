// One emulated link, as written on the command line: "1gbit", "100mbit,delay=0.2ms,jitter=50us,loss=0.5%",
// "unshaped,delay=5ms". Units follow tc(8): bit, kbit, mbit, gbit, tbit are bits per second (decimal), bps, kbps,
// mbps, gbps, tbps are BYTES per second; times take us, ms or s; loss is a percentage (the % sign optional);
// down=START+LENGTH (e.g. down=5s+3s) takes the link down LENGTH after START, timed from when the network came up.
#pragma once
#include <string>

#include "distsgd/cluster/delay_line.hpp"

namespace distsgd::cluster {

struct LinkSpec {
  double rate_bits_per_second = 0;  // 0: unshaped (as fast as the kernel forwards)
  Impairment impairment;            // of the traffic leaving the host
  std::string text;                 // as given, for messages and config.json

  double rate_bytes_per_second() const { return rate_bits_per_second / 8; }
};

// Parses `text` for `flag` ("--net", or "--link worker3"); the rate may be left out, which keeps `base`'s (as do
// fields not given). Throws Error naming the flag and the bad part: unknown unit, rate of zero, loss above 100%.
LinkSpec parse_link(const std::string& flag, const std::string& text, const LinkSpec& base = {});

// "1 Gbit/s", "100 Mbit/s", "unshaped".
std::string describe_rate(double bits_per_second);

}  // namespace distsgd::cluster
