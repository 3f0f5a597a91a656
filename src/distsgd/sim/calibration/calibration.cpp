#include "distsgd/sim/calibration/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::sim {
namespace {

// Each unknown's range (its logarithm is searched between these) and its neutral value, the one a cluster without
// calibration has (NaN: the base's own value).
struct Range {
  double low, high, neutral;
};

Range range_of(Unknown u) {
  switch (u) {
    case Unknown::kComputeScale:
      return {0.05, 20, 1};
    case Unknown::kLinkEfficiency:
    case Unknown::kIntraNodeEfficiency:
      return {1e-3, 4, 1};
    case Unknown::kAlpha:
      return {1e-7, 0.1, std::nan("")};
    case Unknown::kInterferenceAlpha:
      return {1e-7, 0.1, 0};
    case Unknown::kIterationOverhead:
      return {1e-7, 10, 0};
    case Unknown::kServerSecondsPerByte:
      return {1e-14, 1e-6, 0};
    case Unknown::kServerSecondsPerRequest:
      return {1e-8, 0.1, 0};
    case Unknown::kCommunicationCpu:
      return {1e-12, 1e-7, 0};
  }
  return {1, 1, 1};
}

// Where in its range (0 or 1) an unknown costs the most time: the slowest links, the largest of the others.
double costliest(Unknown u) { return u == Unknown::kLinkEfficiency || u == Unknown::kIntraNodeEfficiency ? 0.0 : 1.0; }

// A prediction whose log error counts as a miss this large when it is not a positive number.
constexpr double kFailedPrediction = 1e6;
// An unknown is seen by the points when doubling it moves some prediction by 1% or more (d ln p / d ln v >= 0.015).
constexpr double kSeen = 0.015;
// Two sets of unknowns move the predictions alike when the smallest eigenvalue of their columns' correlation falls
// below this (a condition number of 1,000: the fit could trade one for the other along that direction).
constexpr double kAlike = 1e-3;

// How far a fit got, for CalibrationRequest::progress: what it is doing and how many evaluations it made.
class SearchLog {
 public:
  explicit SearchLog(const CalibrationRequest& request)
      : out_(request.progress), every_(request.progress_seconds), start_(now()), last_(start_) {}
  void stage(std::string what) { stage_ = std::move(what); }
  void evaluated() {
    ++evaluations_;
    if (out_ == nullptr || seconds(last_) < every_) return;
    last_ = now();
    char line[96];
    std::snprintf(line, sizeof line, ": %lld evaluations, %.0f s\n", static_cast<long long>(evaluations_),
                  seconds(start_));
    *out_ << "calibrate: " << stage_ << line << std::flush;
  }

 private:
  using Steady = std::chrono::steady_clock;
  static Steady::time_point now() { return Steady::now(); }
  static double seconds(Steady::time_point since) { return std::chrono::duration<double>(now() - since).count(); }
  std::ostream* out_;
  double every_;
  Steady::time_point start_, last_;
  std::string stage_ = "fitting";
  int64_t evaluations_ = 0;
};

struct Problem {
  const CalibrationRequest& request;
  const ThroughputModel& model;
  std::vector<Unknown> free;  // searched
  ClusterDescription fixed;   // the others at their values
  SearchLog* log = nullptr;

  double log_low(size_t j) const { return std::log(range_of(free[j]).low); }
  double log_high(size_t j) const { return std::log(range_of(free[j]).high); }
  // u in [0, 1] per free unknown, to a cluster.
  ClusterDescription cluster_at(const std::vector<double>& u) const {
    ClusterDescription c = fixed;
    for (size_t j = 0; j < free.size(); ++j) {
      const double t = std::clamp(u[j], 0.0, 1.0);
      c = with_unknown(c, request.base, free[j], std::exp(log_low(j) + t * (log_high(j) - log_low(j))));
    }
    return c;
  }
  std::vector<double> log_errors(const ClusterDescription& c) const {
    const auto& points = request.points;
    std::vector<double> e(points.size());
    auto predict_from = [&](size_t first) {
      for (size_t i = first; i < points.size(); i += static_cast<size_t>(std::max<int64_t>(1, request.threads))) {
        const double predicted = model(points[i], c);
        e[i] = predicted > 0 && std::isfinite(predicted) ? std::log(predicted / points[i].samples_per_second)
                                                         : kFailedPrediction;
      }
    };
    if (request.threads <= 1) {
      predict_from(0);
      return e;
    }
    // Each thread its share of the points; the first failure is rethrown here.
    std::vector<std::future<void>> others;
    for (int64_t t = 1; t < request.threads; ++t) {
      others.push_back(std::async(std::launch::async, predict_from, static_cast<size_t>(t)));
    }
    predict_from(0);
    for (auto& other : others) other.get();
    return e;
  }
  double objective(const std::vector<double>& u) const { return objective_of(cluster_at(u)); }
  double objective_of(const ClusterDescription& c) const {
    if (log != nullptr) log->evaluated();
    double sum = 0;
    for (const double e : log_errors(c)) sum += e * e;
    return sum / static_cast<double>(request.points.size());
  }
  std::vector<double> u_of(const ClusterDescription& c) const {
    std::vector<double> u;
    for (size_t j = 0; j < free.size(); ++j) {
      const double v = std::clamp(value_in(c, request.base, free[j]), range_of(free[j]).low, range_of(free[j]).high);
      u.push_back((std::log(v) - log_low(j)) / (log_high(j) - log_low(j)));
    }
    return u;
  }
};

// Nelder-Mead within the unit cube (points outside are clamped when evaluated, and kept clamped).
std::vector<double> nelder_mead(const Problem& problem, std::vector<double> start, double step) {
  const size_t k = start.size();
  auto clamp = [](std::vector<double> u) {
    for (double& x : u) x = std::clamp(x, 0.0, 1.0);
    return u;
  };
  std::vector<std::vector<double>> simplex{clamp(start)};
  for (size_t j = 0; j < k; ++j) {
    auto v = start;
    v[j] += v[j] + step <= 1 ? step : -step;
    simplex.push_back(clamp(v));
  }
  std::vector<double> f;
  for (const auto& v : simplex) f.push_back(problem.objective(v));
  const int64_t max_evaluations = 300 * static_cast<int64_t>(k + 1);
  for (int64_t evaluations = 0; evaluations < max_evaluations;) {
    std::vector<size_t> order(k + 1);
    for (size_t i = 0; i <= k; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return f[a] < f[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[k - 1];
    if (f[worst] - f[best] < std::max(1e-12 * (1 + f[best]), problem.request.resolution)) break;
    std::vector<double> centre(k, 0);
    for (size_t i = 0; i <= k; ++i) {
      if (i == worst) continue;
      for (size_t j = 0; j < k; ++j) centre[j] += simplex[i][j] / static_cast<double>(k);
    }
    auto toward = [&](double t) {
      std::vector<double> v(k);
      for (size_t j = 0; j < k; ++j) v[j] = centre[j] + t * (simplex[worst][j] - centre[j]);
      return clamp(v);
    };
    const auto reflected = toward(-1);
    const double fr = problem.objective(reflected);
    ++evaluations;
    if (fr < f[best]) {
      const auto expanded = toward(-2);
      const double fe = problem.objective(expanded);
      ++evaluations;
      if (fe < fr) {
        simplex[worst] = expanded, f[worst] = fe;
      } else {
        simplex[worst] = reflected, f[worst] = fr;
      }
    } else if (fr < f[second]) {
      simplex[worst] = reflected, f[worst] = fr;
    } else {
      const auto contracted = toward(fr < f[worst] ? -0.5 : 0.5);
      const double fc = problem.objective(contracted);
      ++evaluations;
      if (fc < std::min(fr, f[worst])) {
        simplex[worst] = contracted, f[worst] = fc;
      } else {
        for (size_t i = 0; i <= k; ++i) {
          if (i == best) continue;
          for (size_t j = 0; j < k; ++j) simplex[i][j] = simplex[best][j] + 0.5 * (simplex[i][j] - simplex[best][j]);
          f[i] = problem.objective(simplex[i]);
          ++evaluations;
        }
      }
    }
  }
  return simplex[static_cast<size_t>(std::min_element(f.begin(), f.end()) - f.begin())];
}

// The best of several deterministic starts: the base's values, and corners of a smaller cube around the middle.
std::vector<double> fit(const Problem& problem) {
  const size_t k = problem.free.size();
  std::vector<std::vector<double>> starts{problem.u_of(problem.fixed)};
  for (int64_t s = 0; s < std::clamp<int64_t>(problem.request.corner_starts, 0, 4); ++s) {
    std::vector<double> u(k);
    for (size_t j = 0; j < k; ++j) u[j] = ((static_cast<size_t>(s) >> (j % 2)) & 1) ^ (j / 2 % 2) ? 0.3 : 0.7;
    starts.push_back(u);
  }
  std::vector<double> best;
  double best_f = std::numeric_limits<double>::infinity();
  for (const auto& start : starts) {
    // A second pass from the first's result escapes a collapsed simplex.
    auto u = nelder_mead(problem, nelder_mead(problem, start, 0.2), 0.05);
    const double f = problem.objective(u);
    if (f < best_f) best_f = f, best = u;
  }
  return best;
}

// The fit with free unknown j held at t, the others re-fitted from u: the whole u and its objective.
std::pair<std::vector<double>, double> refit_holding(const Problem& problem, std::vector<double> u, size_t j,
                                                     double t) {
  u[j] = t;
  if (problem.free.size() > 1) {
    Problem held = problem;
    held.fixed = problem.cluster_at(u);
    held.free.erase(held.free.begin() + static_cast<std::ptrdiff_t>(j));
    std::vector<double> others = u;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(j));
    others = nelder_mead(held, nelder_mead(held, others, 0.1), 0.03);
    others.insert(others.begin() + static_cast<std::ptrdiff_t>(j), t);
    u = others;
  }
  return {u, problem.objective(u)};
}

// How far free unknown j can go from the best fit toward `end` (0 or 1) while the points stay within `limit` (the
// objective), the others re-fitted: bisection in the unknown's logarithm (CalibrationRequest::range_halvings; 8:
// 1/256 of its range). Returns the farthest consistent u and whether it is the end itself.
std::pair<std::vector<double>, bool> consistent_toward(const Problem& problem, const std::vector<double>& best,
                                                       size_t j, double end, double limit) {
  if (best[j] == end) return {best, true};
  auto [at_end, f_end] = refit_holding(problem, best, j, end);
  if (f_end <= limit) return {at_end, true};
  std::vector<double> inside = best;
  double out = end;
  for (int64_t halving = 0; halving < problem.request.range_halvings; ++halving) {
    const double middle = (inside[j] + out) / 2;
    auto [u, f] = refit_holding(problem, inside, j, middle);
    if (f <= limit) {
      inside = u;
    } else {
      out = middle;
    }
  }
  return {inside, false};
}

// d ln(prediction_i) / d ln(value_j) at u, by central differences (one-sided at a bound of the range).
std::vector<std::vector<double>> jacobian(const Problem& problem, const std::vector<double>& u) {
  std::vector<std::vector<double>> columns;
  for (size_t j = 0; j < u.size(); ++j) {
    const double width = problem.log_high(j) - problem.log_low(j);
    const double h = 0.2 / width;  // 0.2 in ln(value)
    auto up = u, down = u;
    up[j] = std::min(1.0, u[j] + h);
    down[j] = std::max(0.0, u[j] - h);
    const auto a = problem.log_errors(problem.cluster_at(up)), b = problem.log_errors(problem.cluster_at(down));
    std::vector<double> column;
    for (size_t i = 0; i < a.size(); ++i) column.push_back((a[i] - b[i]) / ((up[j] - down[j]) * width));
    columns.push_back(column);
  }
  return columns;
}

double largest_magnitude(const std::vector<double>& column) {
  double m = 0;
  for (const double x : column) m = std::max(m, std::abs(x));
  return m;
}

// The eigenvector of the smallest eigenvalue of the columns' correlation matrix (Jacobi rotations: k <= 6), and the
// eigenvalue.
std::pair<double, std::vector<double>> least_direction(const std::vector<std::vector<double>>& columns) {
  const size_t k = columns.size();
  std::vector<std::vector<double>> a(k, std::vector<double>(k, 0)), v(k, std::vector<double>(k, 0));
  std::vector<double> norm(k, 0);
  for (size_t j = 0; j < k; ++j) {
    for (const double x : columns[j]) norm[j] += x * x;
    norm[j] = std::sqrt(norm[j]);
  }
  for (size_t p = 0; p < k; ++p) {
    v[p][p] = 1;
    for (size_t q = 0; q < k; ++q) {
      double dot = 0;
      for (size_t i = 0; i < columns[p].size(); ++i) dot += columns[p][i] * columns[q][i];
      a[p][q] = dot / (norm[p] * norm[q]);
    }
  }
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0;
    for (size_t p = 0; p < k; ++p) {
      for (size_t q = p + 1; q < k; ++q) off += a[p][q] * a[p][q];
    }
    if (off < 1e-24) break;
    for (size_t p = 0; p < k; ++p) {
      for (size_t q = p + 1; q < k; ++q) {
        if (std::abs(a[p][q]) < 1e-300) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t = (theta >= 0 ? 1 : -1) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (size_t r = 0; r < k; ++r) {  // A <- A J
          const double arp = a[r][p], arq = a[r][q];
          a[r][p] = c * arp - s * arq;
          a[r][q] = s * arp + c * arq;
        }
        for (size_t r = 0; r < k; ++r) {  // A <- J^T A
          const double apr = a[p][r], aqr = a[q][r];
          a[p][r] = c * apr - s * aqr;
          a[q][r] = s * apr + c * aqr;
        }
        for (size_t r = 0; r < k; ++r) {
          const double vrp = v[r][p], vrq = v[r][q];
          v[r][p] = c * vrp - s * vrq;
          v[r][q] = s * vrp + c * vrq;
        }
      }
    }
  }
  size_t least = 0;
  for (size_t p = 1; p < k; ++p) {
    if (a[p][p] < a[least][least]) least = p;
  }
  std::vector<double> direction(k);
  for (size_t r = 0; r < k; ++r) direction[r] = v[r][least];
  return {a[least][least], direction};
}

// Whether some prediction depends on free unknown j where it weighs most (the others at their values in u), or
// within its range (an effect that saturates, as the interference, which costs at most the compute it runs beside).
bool seen_where_costliest(const Problem& problem, std::vector<double> u, size_t j) {
  for (const double at : {costliest(problem.free[j]), 0.75, 0.5}) {
    u[j] = at;
    if (largest_magnitude(jacobian(problem, u)[j]) >= kSeen) return true;
  }
  return false;
}

ClusterDescription neutral(ClusterDescription c, const ClusterDescription& base, Unknown u) {
  const double value = std::isnan(range_of(u).neutral) ? value_in(base, base, u) : range_of(u).neutral;
  return with_unknown(std::move(c), base, u, value);
}

std::string names_of(const std::vector<Unknown>& unknowns) {
  std::vector<std::string> names;
  for (const auto u : unknowns) names.push_back(name_of(u));
  return join_or(names);
}

}  // namespace

const std::vector<Unknown>& all_unknowns() {
  static const std::vector<Unknown> all{Unknown::kComputeScale,         Unknown::kCommunicationCpu,
                                        Unknown::kLinkEfficiency,       Unknown::kAlpha,
                                        Unknown::kIntraNodeEfficiency,  Unknown::kIterationOverhead,
                                        Unknown::kServerSecondsPerByte, Unknown::kServerSecondsPerRequest,
                                        Unknown::kInterferenceAlpha};
  return all;
}

std::string name_of(Unknown u) {
  switch (u) {
    case Unknown::kComputeScale:
      return "compute_scale";
    case Unknown::kLinkEfficiency:
      return "link_efficiency";
    case Unknown::kIntraNodeEfficiency:
      return "intra_node_efficiency";
    case Unknown::kAlpha:
      return "alpha";
    case Unknown::kInterferenceAlpha:
      return "interference_alpha";
    case Unknown::kIterationOverhead:
      return "iteration_overhead";
    case Unknown::kServerSecondsPerByte:
      return "server_seconds_per_byte";
    case Unknown::kServerSecondsPerRequest:
      return "server_seconds_per_request";
    case Unknown::kCommunicationCpu:
      return "communication_cpu";
  }
  return "?";
}

Unknown unknown_named(const std::string& name) {
  for (const auto u : all_unknowns()) {
    if (name_of(u) == name) return u;
  }
  std::vector<std::string> names;
  for (const auto u : all_unknowns()) names.push_back(name_of(u));
  throw Error("--fit: '" + name + "' is not an unknown the calibration fits (" + join(names) + ")");
}

std::string what_determines(Unknown u) {
  switch (u) {
    case Unknown::kComputeScale:
      return "a run whose time is mostly compute (1 worker, or an algorithm that communicates rarely: localsgd, "
             "easgd)";
    case Unknown::kLinkEfficiency:
      return "a run bound by the network's bandwidth (arsgd or bsp at 4 or more workers, a large model)";
    case Unknown::kIntraNodeEfficiency:
      return "runs inside one node (2 to workers_per_node workers of arsgd, a large model) beside runs across nodes, "
             "on a base that gives its nodes' own link (intra_node_bytes_per_second)";
    case Unknown::kAlpha:
      return "runs that send many small messages beside ones that send few large ones (arsgd --overlap wfbp "
             "--bucket-mb 0 beside --overlap none), at a worker count where the small ones' start-up is not hidden "
             "behind the backward pass";
    case Unknown::kInterferenceAlpha:
      return "overlapped runs across nodes beside ones that do not overlap (arsgd --overlap wfbp or mgwfbp beside "
             "--overlap none, at 2 or more nodes)";
    case Unknown::kIterationOverhead:
      return "runs of two batch sizes or two models (an overhead per iteration does not grow with the batch)";
    case Unknown::kServerSecondsPerByte:
      return "a parameter-server run that loads its server (asp or bsp with 1 server at 4 or more workers)";
    case Unknown::kServerSecondsPerRequest:
      return "parameter-server runs with 1 server at two worker counts and two --servers counts";
    case Unknown::kCommunicationCpu:
      return "runs on one host whose cores the ranks share (a base with shared_cores) of algorithms that move "
             "different amounts per iteration (gosgd beside sgp or arsgd)";
  }
  return "";
}

ClusterDescription with_unknown(ClusterDescription c, const ClusterDescription& base, Unknown u, double value) {
  switch (u) {
    case Unknown::kComputeScale:
      c.compute_scale = value;
      break;
    case Unknown::kLinkEfficiency: {
      // The intra-node link keeps its own efficiency relative to this one (intra_node_efficiency).
      const double intra = value_in(c, base, Unknown::kIntraNodeEfficiency);
      c.worker_bytes_per_second = base.worker_bytes_per_second * value;
      c.server_bytes_per_second = base.server_bytes_per_second * value;
      c.intra_node_bytes_per_second = base.intra_node_bytes_per_second * value * intra;
      break;
    }
    case Unknown::kIntraNodeEfficiency:
      // Only where the base gives the link (else the intra-node hops are the node's own link, link_efficiency's).
      if (base.intra_node_bytes_per_second > 0) {
        c.intra_node_bytes_per_second =
            base.intra_node_bytes_per_second * value_in(c, base, Unknown::kLinkEfficiency) * value;
      }
      break;
    case Unknown::kAlpha:
      if (base.alpha_seconds > 0 && base.intra_node_bytes_per_second > 0) {
        c.intra_node_alpha_seconds = base.intra_node_alpha_seconds * value / base.alpha_seconds;
      }
      c.alpha_seconds = value;
      break;
    case Unknown::kInterferenceAlpha:
      c.interference_alpha_seconds = value;
      break;
    case Unknown::kIterationOverhead:
      c.iteration_overhead_seconds = value;
      break;
    case Unknown::kServerSecondsPerByte:
      c.server_seconds_per_byte = value;
      break;
    case Unknown::kServerSecondsPerRequest:
      c.server_seconds_per_request = value;
      break;
    case Unknown::kCommunicationCpu:
      c.communication_cpu_seconds_per_byte = value;
      break;
  }
  return c;
}

double value_in(const ClusterDescription& c, const ClusterDescription& base, Unknown u) {
  switch (u) {
    case Unknown::kComputeScale:
      return c.compute_scale;
    case Unknown::kLinkEfficiency:
      return c.worker_bytes_per_second / base.worker_bytes_per_second;
    case Unknown::kIntraNodeEfficiency:
      return base.intra_node_bytes_per_second > 0
                 ? c.intra_node_bytes_per_second /
                       (base.intra_node_bytes_per_second * value_in(c, base, Unknown::kLinkEfficiency))
                 : 1.0;
    case Unknown::kAlpha:
      return c.alpha_seconds > 0 ? c.alpha_seconds : 5e-5;
    case Unknown::kInterferenceAlpha:
      return c.interference_alpha_seconds;
    case Unknown::kIterationOverhead:
      return c.iteration_overhead_seconds;
    case Unknown::kServerSecondsPerByte:
      return c.server_seconds_per_byte;
    case Unknown::kServerSecondsPerRequest:
      return c.server_seconds_per_request;
    case Unknown::kCommunicationCpu:
      return c.communication_cpu_seconds_per_byte;
  }
  return 0;
}

namespace {

// The fit with the base's figures and `latency` (the request's points themselves: a model may know them by address).
ClusterCalibration calibrate_with_latency(const CalibrationRequest& request, const ThroughputModel& model,
                                          ClusterDescription::AllreduceLatency latency) {
  require(!request.points.empty(), "calibrate: no measured points (give --points FILE.csv or --runs DIR...)");
  const bool automatic = request.unknowns.empty();
  ClusterDescription start = request.base;
  start.allreduce_latency = latency;
  // A measured allreduce fit would stand in for the links the calibration fits: the fitted links replace it.
  start.allreduce_fit = {};
  for (const auto& p : request.points) {
    try {
      model(p, start);
    } catch (const Error& e) {
      throw Error(p.origin + ": " + e.what());
    }
  }
  const auto is_measured = [&](Unknown u) {
    return std::find(request.measured.begin(), request.measured.end(), u) != request.measured.end();
  };
  std::vector<Unknown> candidates;
  for (const auto u : automatic ? all_unknowns() : request.unknowns) {
    if (!automatic || !is_measured(u)) candidates.push_back(u);
  }
  Problem problem{request, model, candidates, start};
  SearchLog log(request);
  problem.log = &log;
  const std::string with_latency = " (a " + distsgd::name_of(latency) + "'s start-ups)";
  log.stage("which unknowns the points see" + with_latency);
  std::vector<FittedUnknown> left;  // not fitted, with the reason
  if (automatic) {
    for (const auto u : request.measured) left.push_back({u, 0, false, "measured, not fitted"});
  }
  auto leave = [&](Unknown u, const std::string& note) {
    problem.fixed = neutral(problem.fixed, request.base, u);
    problem.free.erase(std::find(problem.free.begin(), problem.free.end(), u));
    left.push_back({u, 0, false, note});
  };
  // An unknown no prediction depends on: refused when named, left out otherwise.
  auto leave_unseen = [&](Unknown u) {
    require(automatic, "calibrate: no point depends on " + name_of(u) + "; measure " + what_determines(u));
    leave(u, "no point depends on it; measure " + what_determines(u));
  };
  // Unknowns no prediction depends on even where they weigh most (the end of the range that costs the most time)
  // are out from the start.
  {
    const auto u0 = problem.u_of(problem.fixed);
    std::vector<Unknown> unseen;
    for (size_t j = 0; j < problem.free.size(); ++j) {
      if (!seen_where_costliest(problem, u0, j)) unseen.push_back(problem.free[j]);
    }
    for (const Unknown unknown : unseen) leave_unseen(unknown);
  }
  std::vector<double> u;
  std::vector<Unknown> waiting;  // left for too few points, the latest in the order tried first
  for (;;) {
    if (problem.free.empty()) {
      // Every unknown the fit saw it found negligible: the points are fitted as well by the figures as they stand
      // (measured ones, say), which is an answer; only points that saw none of them determine nothing.
      const bool any_seen = std::any_of(left.begin(), left.end(), [](const FittedUnknown& f) { return f.fitted; });
      require(any_seen, "calibrate: the points determine none of the unknowns; measure " +
                            what_determines(all_unknowns().front()));
      break;
    }
    // Named unknowns need a point each; chosen ones two (a fit with as many unknowns as points fits the noise too).
    const size_t most = automatic ? std::max<size_t>(1, request.points.size() / 2) : request.points.size();
    if (problem.free.size() > most) {
      const Unknown last = problem.free.back();
      const size_t n = request.points.size();
      require(automatic, "calibrate: " + std::to_string(n) + (n == 1 ? " point" : " points") + " cannot determine " +
                             std::to_string(problem.free.size()) + " unknowns; measure " + what_determines(last) +
                             ", or --fit fewer");
      leave(last, "too few points (two per unknown fitted); measure " + what_determines(last));
      waiting.push_back(last);
      continue;
    }
    std::vector<std::string> fitting;
    for (const auto unknown : problem.free) fitting.push_back(name_of(unknown));
    log.stage("fitting " + join(fitting) + with_latency);
    u = fit(problem);
    const auto columns = jacobian(problem, u);
    // An unknown no prediction depends on at the fit, though they do where it weighs most: the points bound it
    // from above and prefer less of it than they can see.
    bool changed = false;
    for (size_t j = 0; j < columns.size() && !changed; ++j) {
      if (largest_magnitude(columns[j]) >= kSeen) continue;
      const Unknown unknown = problem.free[j];
      if (seen_where_costliest(problem, u, j)) {
        // A named unknown stays fitted (its note says when the fit ran to the end of its search).
        if (!automatic) continue;
        // Without it: an additive cost is 0; another its neutral value (the base's own alpha) where the points fit
        // as well there (a compute_scale the cores' share hides), else where the search stopped (links faster than
        // any point sees).
        const auto at_fit = problem.cluster_at(u);
        const auto without = neutral(at_fit, request.base, unknown);
        const bool as_well =
            range_of(unknown).neutral == 0 || problem.objective_of(without) <= problem.objective(u) + 1e-12;
        problem.fixed = as_well ? without : at_fit;
        const double value = value_in(problem.fixed, request.base, unknown);
        problem.free.erase(problem.free.begin() + static_cast<std::ptrdiff_t>(j));
        u.erase(u.begin() + static_cast<std::ptrdiff_t>(j));
        left.push_back({unknown, value, true, "negligible: the points are fitted as well without it"});
      } else {
        leave_unseen(unknown);
      }
      changed = true;
    }
    if (changed) {
      // One fewer to fit: the next one left for too few points takes its place (the points may see it: a compute
      // the measured CPU sets, compute_scale, leaves them to the links).
      if (automatic && !waiting.empty()) {
        const Unknown next = waiting.back();
        waiting.pop_back();
        left.erase(std::find_if(left.begin(), left.end(), [&](const FittedUnknown& f) { return f.unknown == next; }));
        problem.free.push_back(next);
      }
      continue;
    }
    if (columns.size() >= 2) {
      const auto [eigenvalue, direction] = least_direction(columns);
      if (eigenvalue < kAlike) {
        std::vector<Unknown> alike;
        for (size_t j = 0; j < direction.size(); ++j) {
          if (std::abs(direction[j]) > 0.3) alike.push_back(problem.free[j]);
        }
        const Unknown last = alike.back();  // the latest in the order tried
        require(automatic, "calibrate: the points cannot tell " + names_of(alike) +
                               " apart (they move every prediction alike); measure " + what_determines(last) +
                               ", or --fit fewer");
        leave(last,
              "not told apart from " + name_of(alike.front()) + " by these points; measure " + what_determines(last));
        continue;
      }
    }
    break;
  }
  ClusterCalibration result;
  result.cluster = problem.cluster_at(u);
  for (const auto unknown : all_unknowns()) {
    const auto free = std::find(problem.free.begin(), problem.free.end(), unknown);
    const auto gone =
        std::find_if(left.begin(), left.end(), [&](const FittedUnknown& f) { return f.unknown == unknown; });
    if (free != problem.free.end()) {
      const double value = value_in(result.cluster, request.base, unknown);
      // At an end of its search the fit stopped there, not at the points' best: a profile of another device than the
      // runs', a mismatched base, or points no figure of the model explains.
      std::string note;
      const auto range = range_of(unknown);
      if (value >= range.high * (1 - 1e-6) || (range.neutral == 1 && value <= range.low * (1 + 1e-6))) {
        char text[160];
        std::snprintf(
            text, sizeof text,
            "at the end of its search (%g to %g): the points ask for a value beyond it; do the profile and the base "
            "describe the runs?",
            range.low, range.high);
        note = text;
      }
      result.unknowns.push_back({unknown, value, true, note});
    } else if (gone != left.end()) {
      auto f = *gone;
      f.value = value_in(result.cluster, request.base, unknown);
      result.unknowns.push_back(f);
    }
  }
  for (auto& f : result.unknowns) f.low = f.high = f.value;
  if (request.noise > 0) {
    // The points' summed squared log error may grow by 4 noise^2 (two standard deviations of one point), the noise
    // being the fit's own residual where that is larger.
    const auto n = static_cast<double>(request.points.size()), k = static_cast<double>(problem.free.size());
    const double residual = n > k ? std::sqrt(problem.objective(u) * n / (n - k)) : 0;
    result.noise = std::max(request.noise, residual);
    const double limit = problem.objective(u) + 4 * result.noise * result.noise / n;
    for (size_t j = 0; j < problem.free.size(); ++j) {
      auto& f = *std::find_if(result.unknowns.begin(), result.unknowns.end(),
                              [&](const FittedUnknown& x) { return x.unknown == problem.free[j]; });
      log.stage("the range of " + name_of(f.unknown) + " within the points' noise" + with_latency);
      const auto [low, low_open] = consistent_toward(problem, u, j, 0, limit);
      const auto [high, high_open] = consistent_toward(problem, u, j, 1, limit);
      f.low = value_in(problem.cluster_at(low), request.base, f.unknown);
      f.high = value_in(problem.cluster_at(high), request.base, f.unknown);
      f.low_open = low_open;
      f.high_open = high_open;
      result.consistent.push_back(problem.cluster_at(low));
      result.consistent.push_back(problem.cluster_at(high));
    }
  }
  double sum = 0;
  for (const auto& p : request.points) {
    const double predicted = model(p, result.cluster);
    result.predicted.push_back(predicted);
    const double e = predicted / p.samples_per_second - 1;
    sum += e * e;
  }
  result.rms_relative_error = std::sqrt(sum / static_cast<double>(request.points.size()));
  result.mean_squared_log_error = problem.objective(u);
  return result;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g%%", 100 * fraction);
  return text;
}

// The fit with the other allreduce latency beside `result` (CalibrationRequest::explore_allreduce_latency): the one
// taken, with a note saying why, and the other's clusters among its consistent ones where both fit as well.
ClusterCalibration with_the_other_latency(ClusterCalibration result, const CalibrationRequest& request,
                                          const ThroughputModel& model) {
  const auto other_latency = request.base.allreduce_latency == ClusterDescription::AllreduceLatency::kTree
                                 ? ClusterDescription::AllreduceLatency::kRing
                                 : ClusterDescription::AllreduceLatency::kTree;
  const std::string mine = distsgd::name_of(request.base.allreduce_latency);
  const std::string other_name = distsgd::name_of(other_latency);
  ClusterCalibration other;
  try {
    other = calibrate_with_latency(request, model, other_latency);
  } catch (const Error& e) {
    result.allreduce_latency_note = "a " + other_name + "'s start-ups were not fitted: " + e.what();
    return result;
  }
  // Told apart when one fit's summed squared log error beats the other's by more than 4 noise^2 (the ranges' rule);
  // the noise at least 2% where the request gave none, so that rounding does not decide.
  const double n = static_cast<double>(request.points.size());
  const double noise = std::max({request.noise, result.noise, other.noise, 0.02});
  const double margin = 4 * noise * noise / n;
  const std::string both = " (rms " + percent(other.rms_relative_error) + " against " +
                           percent(result.rms_relative_error) + " with a " + mine + "'s)";
  if (other.mean_squared_log_error + margin < result.mean_squared_log_error) {
    other.allreduce_latency_note = "a " + other_name + "'s start-ups fit the points better than a " + mine +
                                   "'s, beyond their noise" + both + ": taken";
    return other;
  }
  if (other.mean_squared_log_error > result.mean_squared_log_error + margin) {
    result.allreduce_latency_note =
        "a " + other_name + "'s start-ups fit the points worse, beyond their noise" + both + ": ruled out";
    return result;
  }
  // Its fitted unknowns' own values (and ranges): what those clusters hold.
  std::string values;
  for (const auto& f : other.unknowns) {
    if (!f.fitted) continue;
    char text[160];
    if (request.noise > 0) {
      std::snprintf(text, sizeof text, "%s%s %.4g (%.4g to %.4g)", values.empty() ? "" : ", ",
                    name_of(f.unknown).c_str(), f.value, f.low, f.high);
    } else {
      std::snprintf(text, sizeof text, "%s%s %.4g", values.empty() ? "" : ", ", name_of(f.unknown).c_str(), f.value);
    }
    values += text;
  }
  result.allreduce_latency_note = "a " + other_name + "'s start-ups fit the points as well" + both +
                                  (values.empty() ? "" : ", with " + values) +
                                  (request.noise > 0 ? ": its clusters join the ranges" : "") +
                                  "; which one your library uses decides predictions at many workers "
                                  "(--allreduce-latency ring|tree)";
  if (request.noise > 0) {
    result.consistent.push_back(other.cluster);
    result.consistent.insert(result.consistent.end(), other.consistent.begin(), other.consistent.end());
  }
  return result;
}

}  // namespace

ClusterCalibration calibrate(const CalibrationRequest& request, const ThroughputModel& model) {
  auto result = calibrate_with_latency(request, model, request.base.allreduce_latency);
  return request.explore_allreduce_latency ? with_the_other_latency(std::move(result), request, model) : result;
}

void add_consistent_clusters(nlohmann::json& calibration_block, const ClusterCalibration& calibration,
                             const ClusterDescription& calibrated) {
  calibration_block["noise"] = calibration.noise;
  calibration_block["consistent_clusters"] = nlohmann::json::array();
  for (auto consistent : calibration.consistent) {
    consistent.name = calibrated.name;
    consistent.source = calibrated.source;
    calibration_block["consistent_clusters"].push_back(to_json(consistent));
  }
}

}  // namespace distsgd::sim
