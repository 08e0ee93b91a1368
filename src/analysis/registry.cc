#include "analysis/registry.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "analysis/tools/builtin.h"

namespace kp::analysis {

namespace {

bool snake_case(std::string_view s) {
  if (s.empty() || !(s[0] >= 'a' && s[0] <= 'z')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace

ToolRegistry ToolRegistry::builtin() {
  ToolRegistry r;
  for (auto& make : builtin_tool_factories()) {
    auto added = r.add(make());
    (void)added;  // built-in names are unique and snake_case (registry_test checks it)
  }
  return r;
}

Status ToolRegistry::add(std::unique_ptr<Tool> tool) {
  if (!tool) return make_error(ErrorCode::kInvalidInput, "no tool");
  const std::string& name = tool->spec().name;
  if (!snake_case(name))
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("tool name \"{}\" must be snake_case: lower-case letters, digits and '_', "
                                  "starting with a letter",
                                  name));
  if (find(name))
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("a tool named \"{}\" already exists; give the new one another name", name));
  tools_.push_back(std::move(tool));
  return ok_status();
}

const Tool* ToolRegistry::find(std::string_view name) const {
  for (const auto& t : tools_)
    if (t->spec().name == name) return t.get();
  return nullptr;
}

std::vector<const Tool*> ToolRegistry::all() const {
  std::vector<const Tool*> out;
  for (const auto& t : tools_) out.push_back(t.get());
  std::sort(out.begin(), out.end(), [](const Tool* a, const Tool* b) { return a->spec().name < b->spec().name; });
  return out;
}

std::vector<std::string> ToolRegistry::names() const {
  std::vector<std::string> out;
  for (const Tool* t : all()) out.push_back(t->spec().name);
  return out;
}

std::vector<const Tool*> ToolRegistry::select(const Evidence& stage1) const {
  std::vector<const Tool*> out;
  for (const Tool* t : all())
    if (t->wanted(stage1)) out.push_back(t);
  return out;
}

Result<std::vector<const Tool*>> ToolRegistry::by_name(const std::vector<std::string>& names) const {
  std::vector<const Tool*> out;
  std::vector<std::string> unknown;
  for (const auto& n : names) {
    const Tool* t = find(n);
    if (t) out.push_back(t);
    else unknown.push_back(n);
  }
  if (!unknown.empty()) {
    std::string known;
    for (const auto& n : this->names()) known += (known.empty() ? "" : ", ") + n;
    std::string bad;
    for (const auto& n : unknown) bad += (bad.empty() ? "" : ", ") + n;
    return make_error(ErrorCode::kNotFound, fmt::format("unknown tool(s) {}; the tools are: {}", bad, known));
  }
  return out;
}

std::vector<std::string> metrics_for(const std::vector<const Tool*>& tools, const std::vector<std::string>& have) {
  std::set<std::string> skip(have.begin(), have.end()), out;
  for (const Tool* t : tools)
    for (const auto& m : t->spec().metrics)
      if (!skip.count(m)) out.insert(m);
  return {out.begin(), out.end()};
}

std::vector<Finding> run_tools(const std::vector<const Tool*>& tools, const Evidence& evidence) {
  std::vector<Finding> out;
  for (const Tool* t : tools) {
    if (t->spec().needs_sass && evidence.sass.empty()) continue;
    if (t->spec().needs_trace && !evidence.trace) continue;
    for (auto& f : t->run(evidence)) {
      if (f.tool.empty()) f.tool = t->spec().name;
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace kp::analysis
