#include "distsgd/train/divergence.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/config.hpp"
#include "distsgd/train/process.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace distsgd::train {
namespace {

// Polling the store costs a round trip to whoever hosts it; a few times a second stops a run soon enough.
constexpr double kSecondsBetweenPolls = 0.25;

const std::string kAnyKey = "divergence";
std::string record_key(int64_t worker) { return "divergence/" + std::to_string(worker); }

std::string number_text(double v) {
  std::ostringstream out;
  out.precision(3);
  out << v;
  return out.str();
}

// JSON has no NaN or infinity: such values travel as text ("nan", "inf").
nlohmann::json number_json(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(number_text(v)); }
double number_of(const nlohmann::json& j) {
  return j.is_number() ? j.get<double>() : std::strtod(j.get<std::string>().c_str(), nullptr);
}

}  // namespace

double divergence_limit(double first_loss, double factor) {
  if (factor <= 0 || !std::isfinite(first_loss)) return std::numeric_limits<double>::infinity();
  return factor * std::max(first_loss, 1.0);
}

bool loss_diverged(double loss, double limit) { return !std::isfinite(loss) || loss > limit; }

nlohmann::json divergence_json(const Divergence& d) {
  return {{"worker", d.worker},
          {"step", d.step},
          {"loss", number_json(d.loss)},
          {"limit", number_json(d.limit)},
          {"first_loss", number_json(d.first_loss)}};
}

Divergence divergence_from_json(const nlohmann::json& j) {
  Divergence d;
  d.worker = j.at("worker").get<int64_t>();
  d.step = j.at("step").get<int64_t>();
  d.loss = number_of(j.at("loss"));
  d.limit = number_of(j.at("limit"));
  d.first_loss = number_of(j.at("first_loss"));
  return d;
}

std::string divergence_message(const std::string& algorithm, const Divergence& d) {
  std::ostringstream line;
  line << "training diverged: " << algorithm << ", worker " << d.worker << ", step " << d.step << ": loss "
       << number_text(d.loss);
  if (std::isfinite(d.loss)) {
    const double factor = d.limit / std::max(d.first_loss, 1.0);
    line << " exceeds " << number_text(d.limit) << " (--divergence-factor " << number_text(factor)
         << " x max(first loss " << number_text(d.first_loss) << ", 1))";
  }
  line << "; see \"When training diverges\" in README.md (a smaller --lr, --warmup-epochs, less --momentum)";
  return line.str();
}

void DivergenceWatch::observe(int64_t step, double loss) {
  if (limit_ < 0) {
    first_loss_ = loss;
    limit_ = divergence_limit(loss, factor_);
  }
  if (own_ || !loss_diverged(loss, limit_)) return;
  own_ = Divergence{p_.rank, step, loss, limit_, first_loss_};
  if (!p_.comm) return;
  // The record first: whoever sees the flag finds it.
  p_.comm->store_set(record_key(p_.rank), divergence_json(*own_).dump());
  p_.comm->store_set(kAnyKey, std::to_string(p_.rank));
}

bool DivergenceWatch::here_or_polled() {
  if (own_ || seen_elsewhere_) return true;
  if (!p_.comm || seconds_since(last_poll_) < kSecondsBetweenPolls) return false;
  last_poll_ = Clock::now();
  seen_elsewhere_ = p_.comm->store_has(kAnyKey);
  return seen_elsewhere_;
}

std::optional<Divergence> DivergenceWatch::first_of_all() {
  if (!p_.comm) return own_;
  if (!own_ && !p_.comm->store_has(kAnyKey)) return std::nullopt;
  std::optional<Divergence> first;
  for (int64_t w = 0; w < p_.comm->workers(); ++w) {
    if (!p_.comm->store_has(record_key(w))) continue;
    const auto d = divergence_from_json(nlohmann::json::parse(p_.comm->store_get(record_key(w))));
    if (!first || d.step < first->step) first = d;  // workers in rank order: ties go to the lower rank
  }
  return first;
}

}  // namespace distsgd::train
