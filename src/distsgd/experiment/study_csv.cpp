#include "distsgd/experiment/study_csv.hpp"

#include "distsgd/core/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace distsgd::experiment {
namespace {

std::string quoted(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string text = "\"";
  for (const char c : field) text += c == '"' ? std::string("\"\"") : std::string(1, c);
  return text + "\"";
}

}  // namespace

const std::string& CsvTable::at(size_t row, const std::string& column) const {
  static const std::string kNone;
  const auto it = std::find(columns.begin(), columns.end(), column);
  if (it == columns.end() || row >= rows.size()) return kNone;
  return rows[row][static_cast<size_t>(it - columns.begin())];
}

bool CsvTable::has_column(const std::string& column) const {
  return std::find(columns.begin(), columns.end(), column) != columns.end();
}

std::string csv_text(const CsvTable& table) {
  std::string text;
  auto line = [&](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) text += (i ? "," : "") + quoted(fields[i]);
    text += "\n";
  };
  line(table.columns);
  for (const auto& row : table.rows) line(row);
  return text;
}

void write_csv_atomically(const std::string& path, const CsvTable& table) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    require(static_cast<bool>(out), "cannot write " + tmp);
    out << csv_text(table);
    require(static_cast<bool>(out), "cannot write " + tmp + " (disk full?)");
  }
  std::filesystem::rename(tmp, path);
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), path + ": cannot read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  // Fields and records, quotes and line breaks inside quotes as RFC 4180 has them.
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool in_quotes = false, field_started = false;
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        line += c == '\n';
        field += c;
      }
    } else if (c == '"') {
      require(!field_started || field.empty(),
              path + ":" + std::to_string(line) + ": a quote inside an unquoted field");
      in_quotes = field_started = true;
    } else if (c == ',') {
      record.push_back(field);
      field.clear();
      field_started = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      record.push_back(field);
      records.push_back(record);
      record.clear();
      field.clear();
      field_started = false;
      ++line;
    } else {
      field += c;
      field_started = true;
    }
  }
  require(!in_quotes, path + ": a quoted field is not closed");
  if (field_started || !record.empty()) {
    record.push_back(field);
    records.push_back(record);
  }
  require(!records.empty(), path + ": empty (expected a header line)");
  CsvTable table;
  table.columns = records.front();
  for (size_t r = 1; r < records.size(); ++r) {
    require(records[r].size() == table.columns.size(), path + ":" + std::to_string(r + 1) + ": " +
                                                           std::to_string(records[r].size()) + " fields, expected " +
                                                           std::to_string(table.columns.size()));
    table.rows.push_back(records[r]);
  }
  return table;
}

std::string csv_field_of(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

CsvTable table_of(const std::vector<nlohmann::ordered_json>& rows, const std::vector<std::string>& leading) {
  CsvTable table;
  table.columns = leading;
  std::set<std::string> known(leading.begin(), leading.end());
  for (const auto& row : rows) {
    for (const auto& [key, value] : row.items()) {
      if (known.insert(key).second) table.columns.push_back(key);
    }
  }
  for (const auto& row : rows) {
    std::vector<std::string> fields;
    for (const auto& column : table.columns) {
      fields.push_back(row.contains(column) ? csv_field_of(row[column]) : "");
    }
    table.rows.push_back(std::move(fields));
  }
  return table;
}

}  // namespace distsgd::experiment
