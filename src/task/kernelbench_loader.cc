#include "task/kernelbench_loader.h"

#include <charconv>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::task {

namespace fs = std::filesystem;

namespace {

// The leading integer of s ("23_Softmax.py" -> 23, "level2" after the prefix -> 2), or 0.
int leading_int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end != s.data() ? v : 0;
}

// The first line of the docstring that follows line `at`, without its quotes, or "".
std::string docstring_after(const std::vector<std::string>& lines, size_t at) {
  for (size_t i = at + 1; i < lines.size(); ++i) {
    std::string_view l = trim(lines[i]);
    if (l.empty()) continue;
    if (!starts_with(l, "\"\"\"") && !starts_with(l, "'''")) return {};
    std::string_view quote = l.substr(0, 3);
    std::string_view body = trim(l.substr(3));
    if (size_t end = body.find(quote); end != std::string_view::npos) return std::string(trim(body.substr(0, end)));
    if (!body.empty()) return std::string(body);
    return i + 1 < lines.size() ? std::string(trim(lines[i + 1])) : std::string();
  }
  return {};
}

}  // namespace

Result<Task> parse_kernelbench_problem(std::string_view text, const fs::path& path) {
  fs::path abs = fs::absolute(path).lexically_normal();
  if (abs.extension() != ".py")
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: a KernelBench problem is a .py file (class Model, get_inputs, get_init_inputs)",
                                  path.string()));
  // Top level only: the worker reads them as attributes of the imported module.
  static const std::regex model_re(R"(^class\s+Model\s*[(:])");
  static const std::regex inputs_re(R"(^def\s+get_inputs\s*\()");
  static const std::regex init_re(R"(^def\s+get_init_inputs\s*\()");
  auto lines = split_lines(text);
  std::optional<size_t> model_line;
  bool inputs = false, init = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!model_line && std::regex_search(lines[i], model_re)) model_line = i;
    inputs = inputs || std::regex_search(lines[i], inputs_re);
    init = init || std::regex_search(lines[i], init_re);
  }
  std::vector<std::string> missing;
  if (!model_line) missing.push_back("`class Model(nn.Module)`");
  if (!inputs) missing.push_back("`def get_inputs()`");
  if (!init) missing.push_back("`def get_init_inputs()`");
  if (!missing.empty())
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{} is not a KernelBench problem: it lacks {} at top level (a problem defines the "
                                  "reference module and the two functions that make its inputs); add {}",
                                  path.string(), join(missing, ", "), missing.size() == 1 ? "it" : "them"));
  Task t;
  t.kind = TaskKind::kKernelBench;
  t.name = abs.filename().string();
  t.dir = abs.parent_path();
  t.reference_path = abs;
  t.problem_id = leading_int(t.name);
  std::string folder = t.dir.filename().string();
  if (starts_with(folder, "level")) {
    std::string_view digits = std::string_view(folder).substr(5);
    int level = leading_int(digits);
    if (level > 0 && std::to_string(level) == digits) {
      t.level = level;
      t.category = folder;
    }
  }
  t.description = docstring_after(lines, *model_line);
  return t;
}

Result<Task> load_kernelbench_problem(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return make_error(ErrorCode::kNotFound, fmt::format("{}: no such KernelBench problem file", path.string()));
  if (fs::is_directory(path, ec))
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{} is a folder; a KernelBench problem is one .py file", path.string()));
  if (fs::path(path).extension() != ".py")
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: a KernelBench problem is a .py file (class Model, get_inputs, get_init_inputs)",
                                  path.string()));
  KP_TRY(std::string text, read_file(path.string()));
  return parse_kernelbench_problem(text, path);
}

}  // namespace kp::task
