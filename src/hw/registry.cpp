// The built-in devices: their names, where their files are, and loading by name or path.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "hw_util.h"
#include "solar/hw/device.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::hw {
namespace {

namespace fs = std::filesystem;

// The directories of the binaries that may sit beside SOLAR's data: the one holding this code
// (the Python extension module, or the executable it is linked into) and the running executable.
std::vector<fs::path> binary_dirs() {
  std::vector<fs::path> dirs;
  static const int anchor = 0;  // any object of this binary
  Dl_info info{};
  std::error_code ec;
  if (dladdr(&anchor, &info) != 0 && info.dli_fname != nullptr && *info.dli_fname != '\0') {
    // A library loaded by a relative path is named relative to the working directory.
    const fs::path module = fs::absolute(info.dli_fname, ec);
    if (!ec) dirs.push_back(module.parent_path());
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.is_absolute() && (dirs.empty() || dirs.front() != exe.parent_path())) {
    dirs.push_back(exe.parent_path());
  }
  return dirs;
}

// Where data_dir() looks, in order, when $SOLAR_DATA_DIR is not set.
std::vector<fs::path> data_dir_candidates() {
  std::vector<fs::path> out;
  for (const fs::path& dir : binary_dirs()) {
    out.push_back(dir / "data");
    out.push_back((dir / ".." / "data").lexically_normal());
  }
#ifdef SOLAR_DATA_DIR
  out.emplace_back(SOLAR_DATA_DIR);
#endif
  return out;
}

bool has_hardware_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "hardware", ec);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const std::vector<std::string>& builtin_device_names() {
  static const std::vector<std::string> names = {"B200",
                                                 "GB200",
                                                 "H200-SXM",
                                                 "H100-SXM",
                                                 "H100-PCIe",
                                                 "A100-SXM-80GB",
                                                 "A100-PCIe-40GB",
                                                 "A6000",
                                                 "L40S",
                                                 "L4",
                                                 "RTX-4090",
                                                 "Jetson-AGX-Thor",
                                                 "Jetson-AGX-Orin-64GB",
                                                 "MI300X",
                                                 "MI355X",
                                                 "TPU-v5e",
                                                 "TPU-v5p",
                                                 "TPU-v6e"};
  return names;
}

std::string data_dir() {
  if (const char* env = std::getenv("SOLAR_DATA_DIR"); env != nullptr && *env != '\0') {
    if (!has_hardware_dir(env)) {
      throw UserError("SOLAR_DATA_DIR='" + std::string(env) + "' has no 'hardware' folder");
    }
    return env;
  }
  std::vector<std::string> tried;
  for (const fs::path& dir : data_dir_candidates()) {
    if (has_hardware_dir(dir)) return dir.string();
    tried.push_back(dir.string());
  }
  throw UserError("cannot find SOLAR's device files (looked for a 'hardware' folder in: " +
                  join(tried) + "); set SOLAR_DATA_DIR to the folder that holds it");
}

Device load_builtin_device(const std::string& name) {
  const std::vector<std::string>& names = builtin_device_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw UserError("unknown device '" + name + "'" + did_you_mean(name, names, Suggest::Loose) +
                    "; built-in devices: " + join(names) +
                    " (or give a device file ending in .yaml)");
  }
  const std::string path = (fs::path(data_dir()) / "hardware" / (name + ".yaml")).string();
  Device d = load_device_file(path);
  if (d.name != name) {
    throw UserError(path + ": error: the file names its device '" + d.name + "', expected '" +
                    name + "'");
  }
  return d;
}

Device resolve_device(const std::string& spec) {
  if (ends_with(spec, ".yaml") || ends_with(spec, ".yml")) return load_device_file(spec);
  return load_builtin_device(spec);
}

}  // namespace solar::hw
