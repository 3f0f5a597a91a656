// CSV as RFC 4180 writes it (fields with a comma, quote or line break quoted, quotes doubled), for results.csv and
// curves.csv, and the reader `distsgd report` reads them back with.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace distsgd::experiment {

struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each as long as columns

  // The value in `column` of row `row` ("" when the table has no such column).
  const std::string& at(size_t row, const std::string& column) const;
  bool has_column(const std::string& column) const;
};

// The text of a table.
std::string csv_text(const CsvTable& table);
// Writes it atomically (a temporary file, then a rename).
void write_csv_atomically(const std::string& path, const CsvTable& table);
// Reads a file the writer wrote; throws Error naming the file and the line when it is not such a table.
CsvTable read_csv(const std::string& path);

// A scalar JSON value as a CSV field: text as is, numbers as JSON writes them, true/false, null as "".
std::string csv_field_of(const nlohmann::ordered_json& value);

// Rows of JSON objects -> a table: `leading` columns first, then every other key in the order first seen.
CsvTable table_of(const std::vector<nlohmann::ordered_json>& rows, const std::vector<std::string>& leading);

}  // namespace distsgd::experiment
