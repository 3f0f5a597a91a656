#include "distsgd/report/report_tables.hpp"

#include <algorithm>
#include <cstdio>

namespace distsgd::report {
namespace {

const std::vector<std::string> kHeader{"run",
                                       "status",
                                       "test accuracy",
                                       "samples/s",
                                       "predicted samples/s",
                                       "predicted / measured",
                                       "wall s",
                                       "MB sent per worker",
                                       "reason"};
constexpr size_t kReason = 8;

std::string format(const std::optional<double>& value, const char* pattern, double scale = 1) {
  if (!value) return "";
  char text[64];
  std::snprintf(text, sizeof text, pattern, *value * scale);
  return text;
}

}  // namespace

ReportTable runs_table(const StudyData& d, bool with_simulated) {
  ReportTable table;
  table.header = kHeader;
  for (size_t r = 0; r < d.results.rows.size(); ++r) {
    const std::string& status = d.results.at(r, "status");
    if (status == "simulated" && !with_simulated) continue;
    const auto measured = d.number(d.results, r, "samples_per_second");
    const auto predicted = d.number(d.results, r, "predicted.samples_per_second");
    std::optional<double> ratio;
    if (status == "done" && measured && predicted && *measured > 0) ratio = *predicted / *measured;
    std::string reason = d.results.at(r, "reason");
    if (reason.empty() && status == "simulated") reason = "predicted only";
    table.rows.push_back(
        {d.run_name(d.results, r), status,
         status == "done" ? format(d.number(d.results, r, "test_accuracy"), "%.4f") : "",
         status == "done" ? format(measured, "%.0f") : "", format(predicted, "%.0f"), format(ratio, "%.2fx"),
         status == "done" ? format(d.number(d.results, r, "wall_seconds"), "%.1f") : "",
         status == "done" ? format(d.number(d.results, r, "bytes_sent_per_worker"), "%.2f", 1e-6) : "", reason});
    table.status.push_back(status);
  }
  return table;
}

std::string table_text(const ReportTable& table) {
  std::vector<size_t> width(kReason, 0);
  for (size_t c = 0; c < kReason; ++c) {
    width[c] = table.header[c].size();
    for (const auto& row : table.rows) width[c] = std::max(width[c], row[c].size());
  }
  std::string text;
  const auto line = [&](const std::vector<std::string>& fields, bool with_reason) {
    for (size_t c = 0; c < kReason; ++c) {
      const std::string pad(width[c] - fields[c].size(), ' ');
      text += c == 0 ? fields[c] + pad : "  " + pad + fields[c];  // the run left-aligned, figures right
    }
    text += "\n";
    if (with_reason && !fields[kReason].empty() && fields[kReason] != "predicted only") {
      text += "    " + fields[kReason] + "\n";
    }
  };
  line(table.header, false);
  for (const auto& row : table.rows) line(row, true);
  return text;
}

std::string html_escape(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

std::string table_html(const ReportTable& table) {
  std::string html = "<table>\n<thead><tr>";
  for (const auto& h : table.header) html += "<th>" + html_escape(h) + "</th>";
  html += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < table.rows.size(); ++r) {
    html += "<tr class=\"" + html_escape(table.status[r]) + "\">";
    for (size_t c = 0; c < table.rows[r].size(); ++c) {
      html += (c >= 2 && c < kReason ? "<td class=\"number\">" : "<td>") + html_escape(table.rows[r][c]) + "</td>";
    }
    html += "</tr>\n";
  }
  return html + "</tbody>\n</table>\n";
}

}  // namespace distsgd::report
