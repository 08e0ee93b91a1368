#include "build/diagnostics.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace kp::build {
namespace {

// One regex per line shape; see the header for examples of each.
const std::regex kEdgHeader(
    R"(^(.+)\((\d+)\): (catastrophic error|internal error|fatal error|error|warning|remark|note)(?: #([0-9A-Za-z-]+))?: (.*)$)");
const std::regex kGccHeader(R"(^(.+?):(\d+):(?:(\d+):)? (fatal error|error|warning|note|remark): (.*)$)");
const std::regex kGccToolHeader(
    R"(^(?:cc1plus|cc1|cpp|gcc|g\+\+|c\+\+): (fatal error|error|warning|note): (.*)$)");
const std::regex kGccPreamble(
    R"(^(?:.+: (?:In .+|At global scope):|In file included from .+[:,]|\s+from .+[:,]|\S+:\d+:(?:\d+:)?   \S.*)$)");
const std::regex kGccOptionTag(R"( \[(-W[^\]]+)\]$)");
const std::regex kPtxas(R"(^ptxas(?: (.+), line (\d+);)? (info|warning|error|fatal)\s*: ?(.*)$)");
const std::regex kNvlink(R"(^nvlink (info|warning|error|fatal)\s*: ?(.*)$)");
const std::regex kNvccDriver(R"(^nvcc (warning|error|fatal)\s*: ?(.*)$)");
const std::regex kLdPrefix(R"(^(?:\S*/)?ld(?:\.\w+)?: (.*)$)");
const std::regex kLdWarning(R"(^(?:.*: )?warning: (.*)$)");
const std::regex kLdInFunction(R"(^.*: in function (.*):$)");
const std::regex kCollect2(R"(^collect2: (?:fatal )?error: (.*)$)");
const std::regex kSkipped(
    R"(^(?:\d+ errors? detected in the compilation of .*|compilation terminated\.|Error limit reached\.|Remark: The warnings can be suppressed .*)$)");

constexpr std::string_view kUndefinedReference = ": undefined reference to ";
constexpr std::string_view kMultipleDefinition = ": multiple definition of ";
constexpr std::string_view kPtxasAborted = "Ptx assembly aborted due to errors";
constexpr size_t kEdgExcerptIndent = 2;  // EDG prints the source excerpt after two spaces

Severity severity_of(const std::string& word) {
  if (word == "warning") return Severity::kWarning;
  if (word == "remark") return Severity::kRemark;
  if (word == "note") return Severity::kNote;
  return Severity::kError;  // error, fatal error, catastrophic error, internal error, fatal
}

// The digits a regex matched as a line or column number; 0 (unknown) when it does not fit an int.
int to_int(const std::ssub_match& digits) {
  if (!digits.matched) return 0;
  int value = 0;
  auto [end, ec] = std::from_chars(&*digits.first, &*digits.first + digits.length(), value);
  return ec == std::errc() ? value : 0;
}

// EDG gives no column; the caret under the excerpt does.
int column_from_caret(const std::vector<std::string>& context) {
  for (size_t i = 1; i < context.size(); ++i) {
    const std::string& line = context[i];
    size_t caret = line.find('^');
    if (caret == std::string::npos || caret < kEdgExcerptIndent) continue;
    if (line.find_first_not_of(" ^~") != std::string::npos) continue;
    return static_cast<int>(caret - kEdgExcerptIndent) + 1;
  }
  return 0;
}

class LogParser {
 public:
  void feed(std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    bool linker_line = false;
    if (line.find_first_not_of(" \t") == std::string::npos) {
      close();
    } else if (std::regex_match(line, m, kEdgHeader)) {
      open(m[1], to_int(m[2]), 0, severity_of(m[3]), DiagnosticTool::kFrontEnd, m[4], m[5]);
    } else if (std::regex_match(line, m, kGccHeader)) {
      std::string message = m[5];
      std::string code;
      std::smatch tag;
      if (std::regex_search(message, tag, kGccOptionTag)) {
        code = tag[1];
        message.erase(tag.position(0));
      }
      open(m[1], to_int(m[2]), to_int(m[3]), severity_of(m[4]), DiagnosticTool::kHostCompiler, code,
           message);
    } else if (std::regex_match(line, m, kGccToolHeader)) {
      open("", 0, 0, severity_of(m[1]), DiagnosticTool::kHostCompiler, "", m[2]);
    } else if (std::regex_match(line, m, kPtxas)) {
      bool aborted = m[3] == "fatal" && m[4].str() == kPtxasAborted && errors_from(DiagnosticTool::kPtxas);
      if (m[3] == "info" || aborted) {
        drop_line();
      } else {
        open(m[1], to_int(m[2]), severity_of(m[3]), DiagnosticTool::kPtxas, m[4]);
      }
    } else if (std::regex_match(line, m, kNvlink)) {
      if (m[1] == "info") {
        drop_line();
      } else {
        open("", 0, severity_of(m[1]), DiagnosticTool::kNvlink, m[2]);
      }
    } else if (std::regex_match(line, m, kNvccDriver)) {
      open("", 0, severity_of(m[1]), DiagnosticTool::kDriver, m[2]);
    } else if (size_t at = find_link_error(line); at != std::string::npos) {
      linker_line = true;
      open_linker(Severity::kError, line.substr(at + 2));
    } else if (std::regex_match(line, m, kLdPrefix)) {
      linker_line = true;
      feed_ld(m[1]);
    } else if (std::regex_match(line, m, kCollect2)) {
      if (errors_from(DiagnosticTool::kLinker)) {
        drop_line();
      } else {
        open("", 0, Severity::kError, DiagnosticTool::kLinker, m[1]);
      }
    } else if (std::regex_match(line, kSkipped)) {
      drop_line();
    } else if (std::regex_match(line, kGccPreamble)) {
      close();
      pending_.push_back(line);
    } else if ((line[0] == ' ' || line[0] == '\t') && open_.has_value()) {
      out_[*open_].context.push_back(line);
    } else {
      drop_line();
    }
    if (!linker_line) ld_function_.clear();
  }

  std::vector<Diagnostic> finish() {
    close();
    return std::move(out_);
  }

 private:
  static size_t find_link_error(const std::string& line) {
    if (line.empty() || line[0] == ' ' || line[0] == '\t') return std::string::npos;
    size_t at = line.find(kUndefinedReference);
    return at != std::string::npos ? at : line.find(kMultipleDefinition);
  }

  // `rest` is what follows "/usr/bin/ld: ".
  void feed_ld(const std::string& rest) {
    std::smatch m;
    if (std::regex_match(rest, m, kLdInFunction)) {
      close();
      ld_function_ = "in function " + m[1].str();
      return;
    }
    if (std::regex_match(rest, m, kLdWarning)) {
      open_linker(Severity::kWarning, m[1]);
    } else {
      open_linker(Severity::kError, rest.starts_with("error: ") ? rest.substr(7) : rest);
    }
  }

  void open_linker(Severity severity, std::string message) {
    if (!ld_function_.empty()) pending_.push_back(ld_function_);
    open("", 0, severity, DiagnosticTool::kLinker, std::move(message));
  }

  void open(std::string file, int line, Severity severity, DiagnosticTool tool, std::string message) {
    open(std::move(file), line, 0, severity, tool, "", std::move(message));
  }

  void open(std::string file, int line, int column, Severity severity, DiagnosticTool tool, std::string code,
            std::string message) {
    close();
    Diagnostic d;
    d.file = std::move(file);
    d.line = line;
    d.column = column;
    d.severity = severity;
    d.tool = tool;
    d.code = std::move(code);
    d.message = std::move(message);
    d.context = std::move(pending_);
    pending_.clear();
    out_.push_back(std::move(d));
    open_ = out_.size() - 1;
  }

  void close() {
    if (open_.has_value()) {
      Diagnostic& d = out_[*open_];
      if (d.tool == DiagnosticTool::kFrontEnd && d.column == 0) d.column = column_from_caret(d.context);
    }
    open_.reset();
  }

  // A line that is no diagnostic ends the open one and any preamble.
  void drop_line() {
    close();
    pending_.clear();
  }

  bool errors_from(DiagnosticTool tool) const {
    for (const Diagnostic& d : out_) {
      if (d.tool == tool && d.severity == Severity::kError) return true;
    }
    return false;
  }

  std::vector<Diagnostic> out_;
  std::optional<size_t> open_;        // index in out_ of the diagnostic taking context lines
  std::vector<std::string> pending_;  // preamble lines for the next diagnostic
  std::string ld_function_;           // ld's last "in function `f'", for the lines after it
};

std::string format_one(const Diagnostic& d) {
  std::string out = d.file.empty() ? to_string(d.tool) : d.file;
  if (d.line > 0) out.append(":").append(std::to_string(d.line));
  if (d.line > 0 && d.column > 0) out.append(":").append(std::to_string(d.column));
  out.append(": ").append(to_string(d.severity)).append(": ").append(d.message).append("\n");
  for (const std::string& line : d.context) out.append(line).append("\n");
  return out;
}

}  // namespace

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kRemark: return "remark";
    case Severity::kNote: return "note";
  }
  return "error";
}

Result<Severity> severity_from_string(std::string_view text) {
  for (Severity s : {Severity::kError, Severity::kWarning, Severity::kRemark, Severity::kNote}) {
    if (text == to_string(s)) return s;
  }
  return make_error(ErrorCode::kInvalidInput, "unknown diagnostic severity '" + std::string(text) +
                                                  "' (expected error, warning, remark or note)");
}

const char* to_string(DiagnosticTool tool) {
  switch (tool) {
    case DiagnosticTool::kFrontEnd: return "front_end";
    case DiagnosticTool::kHostCompiler: return "host_compiler";
    case DiagnosticTool::kPtxas: return "ptxas";
    case DiagnosticTool::kNvlink: return "nvlink";
    case DiagnosticTool::kLinker: return "ld";
    case DiagnosticTool::kDriver: return "nvcc";
  }
  return "nvcc";
}

Result<DiagnosticTool> diagnostic_tool_from_string(std::string_view text) {
  for (DiagnosticTool t : {DiagnosticTool::kFrontEnd, DiagnosticTool::kHostCompiler, DiagnosticTool::kPtxas,
                           DiagnosticTool::kNvlink, DiagnosticTool::kLinker, DiagnosticTool::kDriver}) {
    if (text == to_string(t)) return t;
  }
  return make_error(ErrorCode::kInvalidInput,
                    "unknown diagnostic tool '" + std::string(text) +
                        "' (expected front_end, host_compiler, ptxas, nvlink, ld or nvcc)");
}

std::vector<Diagnostic> parse_nvcc_diagnostics(std::string_view log) {
  LogParser parser;
  while (!log.empty()) {
    size_t end = log.find('\n');
    parser.feed(std::string(log.substr(0, end)));
    log.remove_prefix(end == std::string_view::npos ? log.size() : end + 1);
  }
  return parser.finish();
}

std::string summarize_diagnostics(const std::vector<Diagnostic>& diagnostics, size_t max_errors) {
  // Group each diagnostic with the notes right after it; drop repeated groups.
  struct Group {
    const Diagnostic* head;
    std::string text;
  };
  std::vector<Group> groups;
  std::set<std::string> seen;
  for (size_t i = 0; i < diagnostics.size();) {
    const Diagnostic& head = diagnostics[i++];
    Group group{&head, format_one(head)};
    while (head.severity != Severity::kNote && i < diagnostics.size() &&
           diagnostics[i].severity == Severity::kNote) {
      group.text += format_one(diagnostics[i++]);
    }
    if (seen.insert(group.text).second) groups.push_back(std::move(group));
  }
  // Severity lists the kinds from most to least important.
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.head->severity < b.head->severity; });

  std::string out;
  std::map<Severity, size_t> left_out;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i < max_errors) {
      out += groups[i].text;
    } else {
      ++left_out[groups[i].head->severity];
    }
  }
  if (!left_out.empty()) {
    std::string counts;
    for (auto [severity, n] : left_out) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " more " + to_string(severity) +
                (n == 1 ? "" : "s");
    }
    out += "... " + counts + " not shown\n";
  }
  return out;
}

}  // namespace kp::build
