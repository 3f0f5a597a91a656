#include "distsgd/sim/calibration/measured_points.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::sim {
namespace {

const std::vector<std::string> kColumns{"algorithm", "workers", "samples_per_second", "flags"};

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// One line's fields: commas separate, a double-quoted field may hold commas ("" is a quote inside one).
std::vector<std::string> fields_of(const std::string& line, const std::string& where) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && trimmed(field).empty()) {
      quoted = true;
      field.clear();
    } else if (c == ',') {
      fields.push_back(trimmed(field));
      field.clear();
    } else {
      field += c;
    }
  }
  require(!quoted, where + ": a quoted field is not closed");
  fields.push_back(trimmed(field));
  return fields;
}

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

}  // namespace

std::vector<MeasuredPoint> points_from_csv_text(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::vector<int> column_of;  // the kColumns index of each column of the file
  std::vector<MeasuredPoint> points;
  int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::string where = source + ":" + std::to_string(number);
    if (trimmed(line).empty() || trimmed(line)[0] == '#') continue;
    const auto fields = fields_of(line, where);
    if (column_of.empty()) {
      for (size_t i = 0; i < fields.size(); ++i) {
        const auto known = std::find(kColumns.begin(), kColumns.end(), fields[i]);
        require(known != kColumns.end(), where + ": column " + std::to_string(i + 1) + " ('" + fields[i] +
                                             "') is not one of " + join(kColumns) + " (the first line names them)");
        require(std::find(column_of.begin(), column_of.end(), known - kColumns.begin()) == column_of.end(),
                where + ": column '" + fields[i] + "' is named twice");
        column_of.push_back(static_cast<int>(known - kColumns.begin()));
      }
      for (int needed = 0; needed < 3; ++needed) {
        require(std::find(column_of.begin(), column_of.end(), needed) != column_of.end(),
                where + ": the header has no column '" + kColumns[static_cast<size_t>(needed)] +
                    "' (it needs algorithm, workers and samples_per_second)");
      }
      continue;
    }
    require(fields.size() == column_of.size(), where + ": " + std::to_string(fields.size()) +
                                                   " fields where the header has " + std::to_string(column_of.size()));
    MeasuredPoint p;
    p.origin = where;
    for (size_t i = 0; i < fields.size(); ++i) {
      const std::string column =
          where + ": column " + std::to_string(i + 1) + " (" + kColumns[static_cast<size_t>(column_of[i])] + ")";
      const std::string& f = fields[i];
      switch (column_of[i]) {
        case 0:
          require(!f.empty(), column + ": empty");
          p.algorithm = f;
          break;
        case 1: {
          size_t used = 0;
          int64_t workers = 0;
          try {
            workers = std::stoll(f, &used);
          } catch (const std::exception&) {
            used = 0;
          }
          require(used == f.size() && !f.empty() && workers >= 1,
                  column + ": expected a worker count of at least 1, got '" + f + "'");
          p.workers = workers;
          break;
        }
        case 2: {
          size_t used = 0;
          double rate = 0;
          try {
            rate = std::stod(f, &used);
          } catch (const std::exception&) {
            used = 0;
          }
          require(used == f.size() && !f.empty() && std::isfinite(rate) && rate > 0,
                  column + ": expected a positive number, got '" + f + "'");
          p.samples_per_second = rate;
          break;
        }
        default:
          p.flags = words_of(f);
      }
    }
    points.push_back(std::move(p));
  }
  require(!column_of.empty(),
          source + ": empty (the first line names the columns: algorithm,workers,samples_per_second)");
  require(!points.empty(), source + ": a header and no points");
  return points;
}

std::vector<MeasuredPoint> read_points_csv(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), "--points: cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return points_from_csv_text(text.str(), path);
}

}  // namespace distsgd::sim
