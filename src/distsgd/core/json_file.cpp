#include "distsgd/core/json_file.hpp"

#include "distsgd/core/error.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace distsgd {

void write_json_atomically(const std::string& path, const nlohmann::json& value) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    require(static_cast<bool>(out), "cannot write " + tmp);
    out << value.dump(2) << '\n';
    require(static_cast<bool>(out), "cannot write " + tmp + " (disk full?)");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace distsgd
