#include "build/diagnostics.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>

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

// Deep template code (CuTe, CUTLASS, the standard library) makes EDG print an instantiation
// chain of a dozen frames, each naming every template argument, and one mistake cascades into
// many errors. What the debugger needs is the error, the library function the candidate called,
// and the candidate's own line; the rest is cut, and cut lines say what was left out.
constexpr size_t kMaxLineChars = 320;  // of one context line; the middle of a longer one goes
constexpr size_t kKeptFrames = 3;      // a chain this short is shown whole

const std::regex kFrame(R"(^\s+instantiation of (?:class )?".*" at line (\d+)(?: of (.+))?$)");
// A CUTLASS/CuTe header by its path under the install: kept from include/ on, the path
// `kernelpro cutlass show` and the coder's read_code tool take.
const std::regex kCutlassPrefix(R"((?:/[^\s"/()]+)+/(include/(?:cute|cutlass)/))");

// A header of a library: under an include/ directory (CUTLASS and CuTe, the C++ and CUDA
// headers), where a candidate's own files never are.
bool library_file(std::string_view path) {
  return path.find("/include/") != std::string_view::npos || path.starts_with("include/");
}

std::string short_paths(const std::string& line) {
  if (line.find("/include/cut") == std::string::npos) return line;
  return std::regex_replace(line, kCutlassPrefix, "$1");
}

std::string cap(const std::string& line) {
  if (line.size() <= kMaxLineChars) return line;
  const size_t tail = kMaxLineChars / 3;
  return line.substr(0, kMaxLineChars - tail - 7) + " [...] " + line.substr(line.size() - tail);
}

struct Trimmed {
  Diagnostic d;
  std::string origin;  // "file:line" of the candidate's frame, for an error in a library header
};

Trimmed trim_template_context(const Diagnostic& in) {
  Trimmed t{in, ""};
  Diagnostic& d = t.d;
  d.file = short_paths(d.file);
  d.message = cap(short_paths(d.message));
  // The frames of the chain, innermost first: whether each is in the candidate's own code.
  std::vector<size_t> frames;
  std::vector<bool> own;
  std::smatch m;
  for (size_t i = 0; i < d.context.size(); ++i) {
    if (!std::regex_match(d.context[i], m, kFrame)) continue;
    const std::string file = m[2].matched ? m[2].str() : in.file;
    frames.push_back(i);
    own.push_back(!library_file(file));
    if (own.back() && t.origin.empty() && library_file(in.file)) t.origin = file + ":" + m[1].str();
  }
  std::vector<bool> keep(d.context.size(), true);
  if (frames.size() > kKeptFrames) {
    const auto first_own = std::find(own.begin(), own.end(), true);
    for (size_t f = 1; f < frames.size(); ++f) {
      const bool called_by_own = first_own != own.end() && f + 1 == static_cast<size_t>(first_own - own.begin());
      keep[frames[f]] = own[f] || called_by_own;
    }
  }
  std::vector<std::string> context;
  for (size_t i = 0; i < d.context.size();) {
    if (keep[i]) {
      context.push_back(cap(short_paths(d.context[i++])));
      continue;
    }
    size_t n = 0;
    while (i < d.context.size() && !keep[i]) ++n, ++i;
    context.push_back(fmt::format("            ... ({} more instantiation{} inside library headers)", n,
                                  n == 1 ? "" : "s"));
  }
  d.context = std::move(context);
  return t;
}

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
  // An error inside a library header from a candidate's line that already has one shown is
  // the same mistake cascading: counted, not shown.
  std::map<std::string, size_t> cascaded;  // the candidate's line -> errors folded into it
  std::vector<std::string> origins;        // in log order
  for (size_t i = 0; i < diagnostics.size();) {
    const Diagnostic& head = diagnostics[i++];
    const Trimmed trimmed = trim_template_context(head);
    Group group{&head, format_one(trimmed.d)};
    // EDG prints the instantiation chain after the error's last note: the origin may be there.
    std::string origin = trimmed.origin;
    while (head.severity != Severity::kNote && i < diagnostics.size() &&
           diagnostics[i].severity == Severity::kNote) {
      const Trimmed note = trim_template_context(diagnostics[i++]);
      group.text += format_one(note.d);
      if (origin.empty()) origin = note.origin;
    }
    if (!seen.insert(group.text).second) continue;
    if (head.severity == Severity::kError && !origin.empty()) {
      auto [at, first] = cascaded.try_emplace(origin, 0);
      if (!first) {
        ++at->second;
        continue;
      }
      origins.push_back(origin);
    }
    groups.push_back(std::move(group));
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
  for (const auto& origin : origins) {
    const size_t n = cascaded[origin];
    if (n > 0)
      out += fmt::format("... {} more error{} from the same instantiation at {} not shown\n", n, n == 1 ? "" : "s",
                         origin);
  }
  return out;
}

}  // namespace kp::build
