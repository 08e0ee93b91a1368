#include "build/elf_imports.h"

#include <algorithm>

#include "util/strings.h"

namespace kp::build {

std::vector<std::string> parse_needed_libraries(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& line : split_lines(std::string(text))) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    size_t open = line.find('['), close = line.rfind(']');
    if (open == std::string::npos || close == std::string::npos || close <= open + 1) continue;
    out.push_back(line.substr(open + 1, close - open - 1));
  }
  return out;
}

std::vector<std::string> parse_undefined_symbols(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& line : split_lines(std::string(text))) {
    // "                 U dlopen@GLIBC_2.34": an (empty) address column, the kind, the name.
    std::vector<std::string> fields;
    for (const auto& f : split(std::string(trim(line)), ' '))
      if (!f.empty()) fields.push_back(f);
    if (fields.size() != 2 || fields[0].size() != 1 ||
        std::string_view("Uwv").find(fields[0][0]) == std::string_view::npos)
      continue;
    std::string name = fields[1];
    if (size_t at = name.find('@'); at != std::string::npos) name.resize(at);
    if (!name.empty()) out.push_back(std::move(name));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace kp::build
