#include "util/resource_root.h"

#include <system_error>

namespace kp {

namespace fs = std::filesystem;

fs::path resource_root() {
  static const fs::path root = [] {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const fs::path installed = exe.parent_path().parent_path().parent_path() / "share" / "kernelpro";
      if (exe.parent_path().filename() == "kernelpro" && fs::is_directory(installed / "prompts", ec)) return installed;
    }
    return fs::path(KP_SOURCE_DIR);
  }();
  return root;
}

}  // namespace kp
