#include "distsgd/report/report_assets.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/run_directory.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace distsgd::report {
namespace {

namespace fs = std::filesystem;

// Each library's build for a <script> element (UMD: defines the globals vega, vegaLite, vegaEmbed).
const std::vector<std::pair<std::string, std::string>> kLibraries{
    {"vega", "build/vega.min.js"}, {"vega-lite", "build/vega-lite.min.js"}, {"vega-embed", "build/vega-embed.min.js"}};

bool holds_libraries(const fs::path& dir) {
  for (const auto& [name, build] : kLibraries) {
    if (!fs::exists(dir / "node_modules" / name / build)) return false;
  }
  return true;
}

std::vector<fs::path> candidates(const std::string& given) {
  if (!given.empty()) return {given};
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("DISTSGD_REPORT_DIR"); env && *env) dirs.emplace_back(env);
#ifdef DISTSGD_REPORT_DIR
  dirs.emplace_back(DISTSGD_REPORT_DIR);
#endif
  std::error_code error;
  const fs::path program = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    dirs.push_back(program.parent_path().parent_path() / "report");                // build/distsgd
    dirs.push_back(program.parent_path().parent_path().parent_path() / "report");  // build/x/distsgd
  }
  return dirs;
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), "cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ReportAssets load_report_assets(const std::string& given) {
  std::vector<std::string> looked;
  for (const auto& dir : candidates(given)) {
    looked.push_back(dir.string());
    if (!holds_libraries(dir)) continue;
    ReportAssets assets;
    assets.dir = dir.string();
    for (const auto& [name, build] : kLibraries) {
      const auto package = read_json_file_if_valid((dir / "node_modules" / name / "package.json").string());
      assets.libraries.push_back(
          {name, package ? package->value("version", "") : "", file_text(dir / "node_modules" / name / build)});
    }
    return assets;
  }
  throw Error("distsgd report: the Vega libraries are not installed (looked for node_modules/vega in " + join(looked) +
              "): run scripts/setup.sh, which runs npm ci in report/");
}

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate)) return candidate.string();
  }
  return "";
}

}  // namespace distsgd::report
