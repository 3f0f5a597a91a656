// The files `distsgd report` builds the page from: Vega, Vega-Lite and vega-embed, installed by scripts/setup.sh
// (npm ci in report/, versions pinned by report/package-lock.json) and inlined into report.html, so the page opens
// offline and fetches nothing.
#pragma once
#include <string>
#include <vector>

namespace distsgd::report {

struct InlineLibrary {
  std::string name;     // "vega"
  std::string version;  // "5.33.1"
  std::string code;     // its minified build
};

struct ReportAssets {
  std::string dir;                       // the report/ folder (package.json, node_modules/, export_svg.mjs)
  std::vector<InlineLibrary> libraries;  // in load order: vega, vega-lite, vega-embed
};

// Looks in `given` (--assets) when set, else $DISTSGD_REPORT_DIR, the source tree's report/ (compiled in), and report/
// next to the program's build directory. Throws Error (one line) when none holds the libraries.
ReportAssets load_report_assets(const std::string& given);

// The path of the executable `name` in $PATH ("" when none).
std::string find_program(const std::string& name);

}  // namespace distsgd::report
