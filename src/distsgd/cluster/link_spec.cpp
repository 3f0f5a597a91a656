#include "distsgd/cluster/link_spec.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::cluster {
namespace {

// libnl sets tbf's rate as a 32-bit count of bytes per second.
constexpr double kMaxRateBitsPerSecond = 8.0 * 2147483647.0;

// "0.2ms" -> {0.2, "ms"}; the number must be finite and non-negative.
bool split_number(const std::string& text, double& number, std::string& unit) {
  std::size_t used = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  if (!std::isfinite(number) || number < 0) return false;
  unit = text.substr(used);
  return true;
}

double parse_rate(const std::string& flag, const std::string& text) {
  static const std::map<std::string, double> bits_per_unit = {
      {"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12},
      {"bps", 8}, {"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9}, {"tbps", 8e12}};
  double number;
  std::string unit;
  const auto it = split_number(text, number, unit) ? bits_per_unit.find(unit) : bits_per_unit.end();
  require(it != bits_per_unit.end(), flag + ": '" + text +
                                         "' is not a rate (a number with bit, kbit, mbit, gbit, tbit, or bps, kbps, "
                                         "mbps, gbps for bytes per second; or unshaped)");
  const double rate = number * it->second;
  require(rate > 0, flag + ": a rate of zero would never deliver anything ('" + text + "')");
  require(rate >= 8000, flag + ": '" + text + "' is below the smallest rate tbf shapes well (8kbit)");
  require(rate <= kMaxRateBitsPerSecond,
          flag + ": '" + text + "' is above the largest rate tbf can be given here (17gbit); use unshaped");
  return rate;
}

double parse_time(const std::string& flag, const std::string& key, const std::string& text, double most_seconds = 10) {
  static const std::map<std::string, double> seconds_per_unit = {{"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
  double number;
  std::string unit;
  const auto it = split_number(text, number, unit) ? seconds_per_unit.find(unit) : seconds_per_unit.end();
  require(it != seconds_per_unit.end(),
          flag + ": " + key + "='" + text + "' is not a time (a non-negative number with us, ms or s)");
  const double seconds = number * it->second;
  require(seconds <= most_seconds,
          flag + ": " + key + "='" + text + "' is more than " + std::to_string(static_cast<int>(most_seconds)) + " s");
  return seconds;
}

// "5s+3s": the link goes down 5 s after the network came up, for 3 s.
void parse_outage(const std::string& flag, const std::string& text, Impairment& impairment) {
  const auto plus = text.find('+');
  require(plus != std::string::npos,
          flag + ": down='" + text + "' is not START+LENGTH (e.g. down=5s+3s: down 5 s after the start, for 3 s)");
  constexpr double kLongest = 24 * 3600;
  impairment.down_after_seconds = parse_time(flag, "down", text.substr(0, plus), kLongest);
  impairment.down_for_seconds = parse_time(flag, "down", text.substr(plus + 1), kLongest);
  require(impairment.down_for_seconds > 0, flag + ": down='" + text + "' lasts no time");
}

double parse_loss(const std::string& flag, const std::string& text) {
  double number;
  std::string unit;
  require(split_number(text, number, unit) && (unit.empty() || unit == "%"),
          flag + ": loss='" + text + "' is not a percentage (e.g. 0.5%)");
  require(number <= 100, flag + ": loss='" + text + "' is above 100%");
  require(number < 100, flag + ": loss='" + text + "' would drop every packet");
  return number / 100;
}

}  // namespace

LinkSpec parse_link(const std::string& flag, const std::string& text, const LinkSpec& base) {
  LinkSpec link = base;
  link.text = text;
  std::stringstream in(text);
  std::string part;
  bool first = true;
  require(!text.empty(), flag + ": empty link description (e.g. 1gbit,delay=0.2ms)");
  while (std::getline(in, part, ',')) {
    const auto equals = part.find('=');
    if (equals == std::string::npos) {
      require(first, flag + ": '" + part + "' in '" + text + "': only the first part may be a rate; the others are " +
                         "delay=, jitter=, loss= or down=");
      link.rate_bits_per_second = part == "unshaped" ? 0 : parse_rate(flag, part);
    } else {
      const std::string key = part.substr(0, equals), value = part.substr(equals + 1);
      if (key == "delay") {
        link.impairment.delay_seconds = parse_time(flag, key, value);
      } else if (key == "jitter") {
        link.impairment.jitter_seconds = parse_time(flag, key, value);
      } else if (key == "loss") {
        link.impairment.loss = parse_loss(flag, value);
      } else if (key == "down") {
        parse_outage(flag, value, link.impairment);
      } else {
        throw Error(flag + ": unknown setting '" + key + "' in '" + text + "' (known: delay, jitter, loss, down)");
      }
    }
    first = false;
  }
  require(link.impairment.jitter_seconds <= link.impairment.delay_seconds,
          flag + ": jitter must not exceed the delay ('" + text + "'): packets cannot leave before they are sent");
  return link;
}

std::string describe_rate(double bits_per_second) {
  if (bits_per_second <= 0) return "unshaped";
  const char* units[] = {"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"};
  int unit = 0;
  while (bits_per_second >= 1000 && unit < 4) {
    bits_per_second /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%g %s", bits_per_second, units[unit]);
  return text;
}

}  // namespace distsgd::cluster
