#include "agent/reply_parse.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::agent {

using nlohmann::json;

std::vector<CodeBlock> code_blocks(std::string_view text) {
  std::vector<CodeBlock> out;
  auto lines = split(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // the text's final newline
  CodeBlock* open = nullptr;
  std::string fence;
  for (std::string line : lines) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t(trim(line));
    auto is_fence = [&](const std::string& s) {
      return s.size() >= 3 && (s.rfind("```", 0) == 0 || s.rfind("~~~", 0) == 0);
    };
    if (!open) {
      if (is_fence(t)) {
        size_t n = 0;
        while (n < t.size() && t[n] == t[0]) ++n;
        fence = t.substr(0, n);
        std::string lang(trim(t.substr(n)));
        lang = lang.substr(0, lang.find_first_of(" \t{"));
        std::transform(lang.begin(), lang.end(), lang.begin(), [](unsigned char c) { return std::tolower(c); });
        out.push_back({lang, "", false});
        open = &out.back();
      }
      continue;
    }
    if (t.rfind(fence, 0) == 0 && trim(t.substr(fence.size())).empty()) {
      open->closed = true;
      open = nullptr;
      continue;
    }
    open->code += line;
    open->code += '\n';
  }
  return out;
}

namespace {

bool is_cuda_lang(const std::string& l) { return l == "cuda" || l == "cu" || l == "cpp" || l == "c++" || l == "cxx" || l == "c"; }
bool is_python_lang(const std::string& l) { return l == "python" || l == "py"; }

std::string cut_hint(const CodeBlock& b) {
  return fmt::format("the ```{} block is not closed: the reply was cut off after {} lines. Send the whole file again, "
                     "shorter if needed (fewer comments, no alternatives)",
                     b.lang.empty() ? "" : b.lang, std::count(b.code.begin(), b.code.end(), '\n'));
}

}  // namespace

Result<CandidateFiles> extract_candidate(std::string_view reply, TaskKind kind) {
  auto bad = [](std::string why) { return make_error(ErrorCode::kInvalidInput, std::move(why)); };
  const auto blocks = code_blocks(reply);
  if (blocks.empty())
    return bad(kind == TaskKind::kNative
                   ? "the reply has no code block: send the whole candidate as one ```cuda block"
                   : "the reply has no code block: send the Python (```python, class ModelNew) and the CUDA source "
                     "(```cuda, extern \"C\" launchers) as two blocks");
  std::vector<const CodeBlock*> cuda, python;
  for (const auto& b : blocks) {
    if (is_python_lang(b.lang) || (b.lang.empty() && b.code.find("class ModelNew") != std::string::npos))
      python.push_back(&b);
    else if (is_cuda_lang(b.lang) || (b.lang.empty() && b.code.find("__global__") != std::string::npos))
      cuda.push_back(&b);
  }
  for (const auto* b : cuda)
    if (!b->closed) return bad(cut_hint(*b));
  for (const auto* b : python)
    if (!b->closed) return bad(cut_hint(*b));
  CandidateFiles files;
  if (kind == TaskKind::kNative) {
    if (cuda.empty()) return bad("the reply has no ```cuda block: send the whole candidate .cu as one ```cuda block");
    std::vector<const CodeBlock*> with_entry;
    for (const auto* b : cuda)
      if (b->code.find("kp_run") != std::string::npos) with_entry.push_back(b);
    if (with_entry.empty())
      return bad("the CUDA source defines no kp_run: a native candidate exports KP_EXPORT int kp_run(kp_args* args) "
                 "(include <kernelpro/kp_abi.h>), in the same block as its kernels");
    if (with_entry.size() > 1)
      return bad(fmt::format("the reply has {} CUDA blocks that define kp_run: send exactly one, the whole file",
                             with_entry.size()));
    files.cuda = with_entry[0]->code;
    return files;
  }
  std::vector<const CodeBlock*> models;
  for (const auto* b : python)
    if (b->code.find("class ModelNew") != std::string::npos) models.push_back(b);
  if (models.empty()) return bad("the reply has no ```python block with class ModelNew(nn.Module)");
  if (models.size() > 1)
    return bad(fmt::format("the reply has {} Python blocks with class ModelNew: send exactly one", models.size()));
  files.python = models[0]->code;
  const bool inline_build = files.python.find("load_inline") != std::string::npos;
  std::vector<const CodeBlock*> launchers;
  for (const auto* b : cuda)
    if (b->code.find("extern \"C\"") != std::string::npos) launchers.push_back(b);
  if (launchers.empty() && !inline_build)
    return bad("the reply has no ```cuda block with extern \"C\" launchers for ModelNew to call through "
               "kernelpro_torch.load(): send the .cu as its own ```cuda block");
  if (launchers.size() > 1)
    return bad(fmt::format("the reply has {} CUDA blocks with extern \"C\" launchers: put them all in one .cu", launchers.size()));
  if (!launchers.empty()) files.cuda = launchers[0]->code;
  return files;
}

Result<json> extract_json_object(std::string_view reply) {
  for (const auto& b : code_blocks(reply)) {
    if (b.lang != "json") continue;
    json j = json::parse(b.code, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return make_error(ErrorCode::kInvalidInput, "the ```json block is not one JSON object: " + b.code.substr(0, 200));
    return j;
  }
  // The first balanced {...}, strings respected.
  const size_t start = reply.find('{');
  if (start == std::string_view::npos)
    return make_error(ErrorCode::kInvalidInput, "the reply has no JSON object: answer with one ```json block");
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = start; i < reply.size(); ++i) {
    const char c = reply[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{') ++depth;
    if (c == '}' && --depth == 0) {
      json j = json::parse(reply.substr(start, i - start + 1), nullptr, false);
      if (j.is_discarded()) break;
      return j;
    }
  }
  return make_error(ErrorCode::kInvalidInput, "the reply's JSON object is cut off or malformed: answer with one ```json block");
}

std::string cut_log(std::string_view log, size_t max_bytes, int max_errors) {
  const auto lines = split_lines(log);
  auto is_error = [](const std::string& l) {
    return l.find("error") != std::string::npos || l.find("Error") != std::string::npos ||
           l.find("FAILED") != std::string::npos;
  };
  int errors = 0;
  for (const auto& l : lines) errors += is_error(l);
  if (log.size() <= max_bytes && errors <= max_errors) return std::string(log);
  std::string out;
  std::set<std::string> seen;
  int kept = 0, omitted_errors = 0;
  std::vector<bool> used(lines.size(), false);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!is_error(lines[i])) continue;
    if (!seen.insert(lines[i]).second) {
      used[i] = true;
      continue;
    }
    if (kept >= max_errors || out.size() > max_bytes) {
      ++omitted_errors;
      continue;
    }
    ++kept;
    for (size_t j = i; j < std::min(lines.size(), i + 3); ++j)
      if (!used[j]) {
        out += lines[j] + "\n";
        used[j] = true;
      }
  }
  size_t omitted_lines = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (used[i]) continue;
    if (out.size() + lines[i].size() + 1 > max_bytes) {
      ++omitted_lines;
      continue;
    }
    out += lines[i] + "\n";
  }
  if (omitted_errors || omitted_lines)
    out += fmt::format("[kernelpro: {} more error lines and {} other lines left out]\n", omitted_errors, omitted_lines);
  return out;
}

}  // namespace kp::agent
