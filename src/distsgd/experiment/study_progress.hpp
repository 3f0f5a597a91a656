// The study's one progress line on stderr: cells done (and failed) of all, the cell running and for how long, and
// the time left estimated from the cells so far. On a terminal the line is rewritten in place (and refreshed every
// second); otherwise each change is a line of its own.
#pragma once
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "distsgd/core/timer.hpp"

namespace distsgd::experiment {

class StudyProgress {
 public:
  // `finished_seconds`: the wall times of the cells finished in earlier sessions (they count toward the estimate).
  // `command` starts the line ("study: 3/10 cells done ...", "validate: ...").
  StudyProgress(size_t cells, size_t finished, size_t failed, std::vector<double> finished_seconds, std::ostream& out,
                bool terminal, std::string command = "study");

  void start(const std::string& cell_label);
  void refresh();  // terminal only, at most once a second
  void finish(bool failed, double seconds);
  void end();                          // ends the rewritten line
  void note(const std::string& text);  // a line of its own (a cell that failed), above the progress line

  // "1h02m", "4m05s", "12s".
  static std::string duration(double seconds);
  std::string line() const;

 private:
  void print();

  size_t cells_, finished_, failed_;
  std::vector<double> seconds_;
  std::ostream& out_;
  bool terminal_;
  std::string command_;
  std::string current_;
  Clock::time_point current_start_;
  Clock::time_point last_print_;
  bool line_open_ = false;
};

// Whether stderr is a terminal (the progress line is rewritten in place).
bool stderr_is_terminal();

}  // namespace distsgd::experiment
