#include "search/tune_space.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::search {

TuneSpace::TuneSpace(std::vector<task::TuneParam> params) : params_(std::move(params)) {
  for (auto& p : params_) {
    if (p.values.empty()) continue;
    defaults_[p.name] = p.values.front();
    std::sort(p.values.begin(), p.values.end());
    p.values.erase(std::unique(p.values.begin(), p.values.end()), p.values.end());
  }
}

TunePoint TuneSpace::defaults() const { return defaults_; }

std::vector<TunePoint> TuneSpace::neighbours(const TunePoint& p) const {
  std::vector<TunePoint> out;
  for (const auto& param : params_) {
    auto at = p.find(param.name);
    if (at == p.end()) continue;
    auto it = std::find(param.values.begin(), param.values.end(), at->second);
    if (it == param.values.end()) continue;
    const size_t i = static_cast<size_t>(it - param.values.begin());
    for (int step : {+1, -1}) {
      if ((step > 0 && i + 1 >= param.values.size()) || (step < 0 && i == 0)) continue;
      TunePoint n = p;
      n[param.name] = param.values[i + step];
      out.push_back(std::move(n));
    }
  }
  return out;
}

size_t TuneSpace::size() const {
  size_t n = params_.empty() ? 0 : 1;
  for (const auto& p : params_) n *= std::max<size_t>(1, p.values.size());
  return n;
}

std::string TuneSpace::apply(const std::string& source, const TunePoint& p) {
  std::string out = source;
  for (const auto& [name, value] : p) {
    const std::regex re("\\bKP_TUNE\\s*\\(\\s*" + name + "\\s*((?:,[^,)]*)*)\\)");
    std::smatch m;
    std::string rewritten;
    std::string rest = out;
    bool done = false;
    while (!done && std::regex_search(rest, m, re)) {
      // Skip the macro's definition and commented mentions, as parse_tune_params does.
      const size_t line_start = rest.rfind('\n', static_cast<size_t>(m.position(0)));
      const std::string_view line_head = trim(std::string_view(rest).substr(
          line_start == std::string::npos ? 0 : line_start + 1,
          static_cast<size_t>(m.position(0)) - (line_start == std::string::npos ? 0 : line_start + 1)));
      rewritten += m.prefix().str();
      if (starts_with(line_head, "//") || starts_with(line_head, "#define") || starts_with(line_head, "*")) {
        rewritten += m.str(0);
      } else {
        // The chosen value, then the others ascending: the same point gives the same text
        // whatever source it was applied to.
        std::vector<long long> others;
        for (const auto& v : split(m.str(1), ',')) {
          try {
            if (!trim(v).empty()) others.push_back(std::stoll(std::string(trim(v)), nullptr, 0));
          } catch (...) {
          }
        }
        std::sort(others.begin(), others.end());
        others.erase(std::unique(others.begin(), others.end()), others.end());
        std::string listed = std::to_string(value);
        for (long long x : others)
          if (x != value) listed += ", " + std::to_string(x);
        rewritten += "KP_TUNE(" + name + ", " + listed + ")";
        done = true;
      }
      rest = m.suffix().str();
    }
    out = rewritten + rest;
  }
  return out;
}

std::string TuneSpace::describe(const TunePoint& p) {
  std::string s;
  for (const auto& [name, value] : p) s += (s.empty() ? "" : " ") + fmt::format("{}={}", name, value);
  return s;
}

}  // namespace kp::search
