#include "distsgd/experiment/study_progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

namespace distsgd::experiment {

StudyProgress::StudyProgress(size_t cells, size_t finished, size_t failed, std::vector<double> finished_seconds,
                             std::ostream& out, bool terminal, std::string command)
    : cells_(cells),
      finished_(finished),
      failed_(failed),
      seconds_(std::move(finished_seconds)),
      out_(out),
      terminal_(terminal),
      command_(std::move(command)) {}

std::string StudyProgress::duration(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%ldh%02ldm", total / 3600, total % 3600 / 60);
  } else if (total >= 60) {
    std::snprintf(text, sizeof text, "%ldm%02lds", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%lds", total);
  }
  return text;
}

std::string StudyProgress::line() const {
  std::string text = command_ + ": " + std::to_string(finished_) + "/" + std::to_string(cells_) + " cells done";
  if (failed_ > 0) text += " (" + std::to_string(failed_) + " failed)";
  double elapsed = 0;
  if (!current_.empty()) {
    elapsed = seconds_since(current_start_);
    text += " | running " + current_ + " (" + duration(elapsed) + ")";
  }
  const size_t left = cells_ - finished_;
  if (left == 0) return text;
  if (seconds_.empty()) return text + " | ETA after the first cell";
  // Every cell left is assumed to take the mean of those so far; the running one has used some of it already.
  const double mean = std::accumulate(seconds_.begin(), seconds_.end(), 0.0) / static_cast<double>(seconds_.size());
  const double eta = mean * static_cast<double>(left) - std::min(elapsed, mean);
  return text + " | ETA " + duration(eta);
}

void StudyProgress::print() {
  last_print_ = Clock::now();
  if (terminal_) {
    out_ << "\r\033[K" << line() << std::flush;
    line_open_ = true;
  } else {
    out_ << line() << std::endl;
  }
}

void StudyProgress::start(const std::string& cell_label) {
  current_ = cell_label;
  current_start_ = Clock::now();
  print();
}

void StudyProgress::refresh() {
  if (terminal_ && seconds_since(last_print_) >= 1) print();
}

void StudyProgress::finish(bool failed, double seconds) {
  ++finished_;
  failed_ += failed;
  seconds_.push_back(seconds);
  current_.clear();
  if (terminal_) print();
}

void StudyProgress::end() {
  if (line_open_) out_ << std::endl;
  line_open_ = false;
}

void StudyProgress::note(const std::string& text) {
  if (line_open_) out_ << "\r\033[K";
  line_open_ = false;
  out_ << text << std::endl;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace distsgd::experiment
