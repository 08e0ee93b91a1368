#include "task/tune_params.h"

#include <regex>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::task {

Result<std::vector<TuneParam>> parse_tune_params(std::string_view source) {
  std::vector<TuneParam> out;
  static const std::regex re(R"(\bKP_TUNE\s*\(\s*([A-Za-z_]\w*)\s*((?:,[^,)]*)*)\))");
  std::string text(source);
  // Ignore the macro's own definition and mentions inside line comments.
  std::string cleaned;
  for (const auto& line : split_lines(text)) {
    std::string_view l = trim(line);
    if (starts_with(l, "//") || starts_with(l, "#define") || starts_with(l, "*")) {
      cleaned += "\n";
      continue;
    }
    cleaned += line + "\n";
  }
  for (auto it = std::sregex_iterator(cleaned.begin(), cleaned.end(), re); it != std::sregex_iterator(); ++it) {
    TuneParam p;
    p.name = (*it)[1];
    std::string rest = (*it)[2];
    for (const auto& v : split(rest, ',')) {
      std::string_view t = trim(v);
      if (t.empty()) continue;
      try {
        size_t used = 0;
        long long value = std::stoll(std::string(t), &used, 0);
        if (used != t.size()) throw std::invalid_argument("trailing");
        p.values.push_back(value);
      } catch (...) {
        return make_error(ErrorCode::kInvalidInput,
                          fmt::format("KP_TUNE({}, ...): value \"{}\" is not an integer literal", p.name, t));
      }
    }
    if (p.values.empty())
      return make_error(ErrorCode::kInvalidInput, fmt::format("KP_TUNE({}) lists no values; write KP_TUNE({}, 128, 256)", p.name, p.name));
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kp::task
