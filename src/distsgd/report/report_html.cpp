#include "distsgd/report/report_html.hpp"

#include <algorithm>
#include <cctype>

namespace distsgd::report {
namespace {

const char* const kStyle = R"css(
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
p.meta, p.files, footer { color: #666; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td { color: #b00020; } tr.pending td, tr.simulated td { color: #777; }
.chart { margin: 0.5em 0; } nav ul { columns: 2; }
)css";

// Embeds every plot; window.distsgdReport.ready settles once all rendered (the browser test waits for it).
const char* const kEmbed = R"js(
(function () {
  var charts = JSON.parse(document.getElementById('distsgd-charts').textContent);
  var report = { views: {}, ready: null };
  window.distsgdReport = report;
  report.ready = Promise.all(charts.map(function (chart) {
    return vegaEmbed('#chart-' + chart.name, chart.spec, {
      renderer: 'svg',
      actions: { export: true, source: false, compiled: false, editor: false }
    }).then(function (result) { report.views[chart.name] = result.view; });
  }));
  report.ready.catch(function (error) { console.error('distsgd report: a plot failed: ' + error); });
})();
)js";

std::string count_of(const StudyData& d, const std::string& status) {
  size_t n = 0;
  for (size_t r = 0; r < d.results.rows.size(); ++r) n += d.results.at(r, "status") == status;
  return std::to_string(n);
}

}  // namespace

std::string script_safe(const std::string& code) {
  std::string safe;
  safe.reserve(code.size());
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '<' && i + 7 < code.size() && code[i + 1] == '/') {
      std::string word = code.substr(i + 2, 6);
      std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
      if (word == "script") {
        safe += "<\\/";
        ++i;
        continue;
      }
    }
    safe += code[i];
  }
  return safe;
}

std::string report_html(const ReportPage& page) {
  const StudyData& d = page.data;
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>distsgd study: " +
                     html_escape(d.name) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>distsgd study: " + html_escape(d.name) + "</h1>\n";
  if (!d.description.empty()) html += "<p>" + html_escape(d.description) + "</p>\n";
  html += "<p class=\"meta\">" + html_escape(d.dir) + ": " + count_of(d, "done") + " runs done, " +
          count_of(d, "failed") + " failed, " + count_of(d, "pending") + " pending, " + count_of(d, "simulated") +
          " configurations predicted only. Data: results.csv, curves.csv; each run's directory under cells/.</p>\n";
  html += "<nav><ul>\n<li><a href=\"#runs\">Runs</a></li>\n";
  for (const auto& chart : page.charts.charts) {
    html += "<li><a href=\"#" + chart.name + "\">" + html_escape(chart.title) + "</a></li>\n";
  }
  html += "</ul></nav>\n<section id=\"runs\">\n<h2>Runs</h2>\n" + table_html(page.runs) + "</section>\n";
  for (const auto& chart : page.charts.charts) {
    html += "<section id=\"" + chart.name + "\">\n<h2>" + html_escape(chart.title) + "</h2>\n<p>" +
            html_escape(chart.caption) + "</p>\n<div class=\"chart\" id=\"chart-" + chart.name + "\"></div>\n";
    html += "<p class=\"files\">";
    if (page.svg_files.count(chart.name)) html += "<a href=\"plots/" + chart.name + ".svg\">SVG</a> &middot; ";
    html += "<a href=\"plots/" + chart.name + ".vl.json\">Vega-Lite specification</a></p>\n</section>\n";
  }
  if (!page.charts.omitted.empty() || !page.svg_note.empty()) {
    html += "<section id=\"omitted\">\n<h2>Not plotted</h2>\n<ul>\n";
    for (const auto& why : page.charts.omitted) html += "<li>" + html_escape(why) + "</li>\n";
    if (!page.svg_note.empty()) html += "<li>SVG files: " + html_escape(page.svg_note) + "</li>\n";
    html += "</ul>\n</section>\n";
  }
  html += "<footer><p>Written by distsgd report. Plots: ";
  for (size_t i = 0; i < page.assets.libraries.size(); ++i) {
    const auto& library = page.assets.libraries[i];
    html += (i ? ", " : "") + html_escape(library.name + " " + library.version);
  }
  html += " (inlined: the page fetches nothing).</p></footer>\n";
  for (const auto& library : page.assets.libraries) {
    html +=
        "<script>/* " + library.name + " " + library.version + " */\n" + script_safe(library.code) + "\n</script>\n";
  }
  nlohmann::ordered_json specs = nlohmann::ordered_json::array();
  for (const auto& chart : page.charts.charts) specs.push_back({{"name", chart.name}, {"spec", chart.spec}});
  // In JSON '<' stands only inside strings, where \u003c is the same text: no "</script" or "<!--" can form.
  std::string data;
  for (const char c : specs.dump()) data += c == '<' ? std::string("\\u003c") : std::string(1, c);
  html += "<script type=\"application/json\" id=\"distsgd-charts\">" + data + "</script>\n";
  html += std::string("<script>") + kEmbed + "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace distsgd::report
