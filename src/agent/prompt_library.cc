#include "agent/prompt_library.h"

#include <filesystem>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::agent {

namespace fs = std::filesystem;

Result<PromptLibrary> PromptLibrary::load(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return make_error(ErrorCode::kNotFound, fmt::format("prompt folder {} not found (kernelpro's prompts/ folder, or --prompts DIR)", dir));
  std::map<std::string, std::string> texts;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".md") continue;
    auto text = read_file(e.path().string());
    if (!text) return text.error();
    texts[e.path().stem().string()] = std::move(*text);
  }
  if (texts.empty()) return make_error(ErrorCode::kNotFound, fmt::format("prompt folder {} has no .md templates", dir));
  return from_texts(std::move(texts), dir);
}

PromptLibrary PromptLibrary::from_texts(std::map<std::string, std::string> texts, std::string origin) {
  PromptLibrary p;
  p.texts_ = std::move(texts);
  p.origin_ = std::move(origin);
  return p;
}

Result<std::string> PromptLibrary::render(const std::string& name, const Vars& vars) const {
  auto it = texts_.find(name);
  if (it == texts_.end()) return make_error(ErrorCode::kNotFound, fmt::format("no prompt template \"{}\" in {}", name, origin_));
  return render_template(it->second, vars, fmt::format("{}/{}.md", origin_, name));
}

Result<std::string> render_template(std::string_view text, const Vars& vars, const std::string& what) {
  std::string out;
  size_t i = 0;
  // Depth of false sections we are inside; their text and placeholders are skipped.
  std::vector<std::pair<std::string, bool>> sections;
  auto skipping = [&] {
    for (const auto& s : sections)
      if (!s.second) return true;
    return false;
  };
  while (i < text.size()) {
    const size_t open = text.find("{{", i);
    if (open == std::string_view::npos) {
      if (!skipping()) out.append(text.substr(i));
      break;
    }
    if (!skipping()) out.append(text.substr(i, open - i));
    const size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos)
      return make_error(ErrorCode::kInvalidInput, fmt::format("{}: \"{{{{\" without \"}}}}\"", what));
    std::string tag(trim(text.substr(open + 2, close - open - 2)));
    i = close + 2;
    if (!tag.empty() && tag[0] == '#') {
      const std::string name(trim(tag.substr(1)));
      auto v = vars.find(name);
      sections.emplace_back(name, v != vars.end() && !trim(v->second).empty());
    } else if (!tag.empty() && tag[0] == '/') {
      const std::string name(trim(tag.substr(1)));
      if (sections.empty() || sections.back().first != name)
        return make_error(ErrorCode::kInvalidInput, fmt::format("{}: {{{{/{}}}}} closes no open section", what, name));
      sections.pop_back();
    } else if (!skipping()) {
      auto v = vars.find(tag);
      if (v == vars.end())
        return make_error(ErrorCode::kInvalidInput, fmt::format("{}: no value for {{{{{}}}}}", what, tag));
      out += v->second;
    }
  }
  if (!sections.empty())
    return make_error(ErrorCode::kInvalidInput, fmt::format("{}: section {{{{#{}}}}} is not closed", what, sections.back().first));
  // Sections left out leave runs of blank lines: keep at most one.
  std::string tidy;
  for (char c : out)
    if (!(c == '\n' && tidy.size() >= 2 && tidy[tidy.size() - 1] == '\n' && tidy[tidy.size() - 2] == '\n')) tidy += c;
  return tidy;
}

}  // namespace kp::agent
