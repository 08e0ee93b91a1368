#include "build/ptxas_report.h"

#include <cxxabi.h>

#include <charconv>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <regex>

namespace kp::build {
namespace {

const std::regex kPtxasLine(R"(^ptxas (info|warning|error|fatal)\s*: ?(.*?)\s*$)");
const std::regex kGmem(R"(^(\d+) bytes gmem\b.*$)");
const std::regex kEntry(R"(^Compiling entry function '(.+)' for '(.+)'$)");
const std::regex kProperties(R"(^Function properties for (\S+)$)");
const std::regex kFrame(
    R"(^\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads\s*$)");
const std::regex kUsed(R"(^Used (\d+) registers(.*)$)");
const std::regex kRegisterLimit(
    R"(^Overriding maximum register limit \d+ for '(.+)' with\s+(\d+) of maxrregcount option$)");
const std::regex kBarriers(R"(^used (\d+) barriers$)");
const std::regex kSmem(R"(^(\d+) bytes smem$)");
const std::regex kCumulativeStack(R"(^(\d+) bytes cumulative stack size$)");

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && text != nullptr ? text : mangled;
  std::free(text);
  return name;
}

Error inconsistent(size_t line_number, const std::string& line, const std::string& why) {
  return make_error(ErrorCode::kTool, "ptxas report line " + std::to_string(line_number) + " \"" + line +
                                          "\": " + why + " (is the log from nvcc -Xptxas -v, unmodified?)");
}

class ReportParser {
 public:
  Status feed(size_t line_number, const std::string& line) {
    number_ = line_number;
    line_ = &line;
    std::smatch m;
    if (std::regex_match(line, m, kFrame)) return frame(m);
    if (!std::regex_match(line, m, kPtxasLine)) return ok_status();  // another tool's line
    if (m[1] == "warning") {
      report_.warnings.push_back(m[2]);
      return ok_status();
    }
    if (m[1] != "info") return ok_status();  // errors are diagnostics (diagnostics.h)
    const std::string text = m[2];
    if (std::regex_match(text, m, kGmem)) {
      KP_TRY(module_gmem_, number(m[1]));
      module_start_ = functions_.size();
      module_arch_.clear();
      awaiting_frame_.reset();
      awaiting_used_.reset();
    } else if (std::regex_match(text, m, kEntry)) {
      module_arch_ = m[2];
      for (size_t i = module_start_; i < functions_.size(); ++i) {
        if (functions_[i].arch.empty()) functions_[i].arch = module_arch_;
      }
      entry_ = add(m[1], /*is_entry=*/true);
    } else if (std::regex_match(text, m, kProperties)) {
      bool own_entry = entry_.has_value() && functions_[*entry_].mangled_name == m[1].str();
      size_t index = own_entry ? *entry_ : add(m[1], /*is_entry=*/false);
      entry_.reset();
      awaiting_frame_ = index;
      awaiting_used_ = index;
    } else if (std::regex_match(text, m, kUsed)) {
      return used(m);
    } else if (std::regex_match(text, m, kRegisterLimit)) {
      KP_TRY(register_limits_[m[1]], count(m[2]));
    }
    return ok_status();  // "Compile time = ...", and info lines this parser does not need
  }

  PtxasReport finish() {
    for (KernelResources& f : functions_) {
      if (auto it = register_limits_.find(f.mangled_name); it != register_limits_.end()) {
        f.register_limit = it->second;
      }
      (f.is_entry ? report_.kernels : report_.device_functions).push_back(std::move(f));
    }
    return std::move(report_);
  }

 private:
  size_t add(const std::string& mangled, bool is_entry) {
    KernelResources f;
    f.mangled_name = mangled;
    f.name = demangle(mangled);
    f.arch = module_arch_;
    f.is_entry = is_entry;
    f.gmem_bytes = module_gmem_;
    functions_.push_back(std::move(f));
    return functions_.size() - 1;
  }

  Status frame(const std::smatch& m) {
    if (!awaiting_frame_)
      return inconsistent(number_, *line_, "stack frame line without 'Function properties for'");
    KernelResources& f = functions_[*awaiting_frame_];
    awaiting_frame_.reset();
    KP_TRY(f.stack_frame_bytes, number(m[1]));
    KP_TRY(f.spill_store_bytes, number(m[2]));
    KP_TRY(f.spill_load_bytes, number(m[3]));
    return ok_status();
  }

  Status used(const std::smatch& m) {
    if (!awaiting_used_) {
      return inconsistent(number_, *line_, "'Used N registers' without 'Function properties for' before it");
    }
    KernelResources& f = functions_[*awaiting_used_];
    awaiting_used_.reset();
    KP_TRY(f.registers, count(m[1]));
    // The optional fields: ", used 1 barriers, 1024 bytes smem, 800 bytes cumulative stack size".
    std::string rest = m[2];
    for (size_t begin = 0; begin < rest.size();) {
      size_t end = rest.find(", ", begin);
      if (end == std::string::npos) end = rest.size();
      std::string field = rest.substr(begin, end - begin);
      begin = end + 2;
      std::smatch fm;
      if (std::regex_match(field, fm, kBarriers)) {
        KP_TRY(f.barriers, count(fm[1]));
      } else if (std::regex_match(field, fm, kSmem)) {
        KP_TRY(f.shared_bytes, number(fm[1]));
      } else if (std::regex_match(field, fm, kCumulativeStack)) {
        KP_TRY(f.cumulative_stack_bytes, number(fm[1]));
      }
    }
    return ok_status();
  }

  // The regexes admit only digits, so a failure here is a number too large for its field.
  Result<int64_t> number(const std::ssub_match& digits) const {
    int64_t value = 0;
    auto [end, ec] = std::from_chars(&*digits.first, &*digits.first + digits.length(), value);
    if (ec != std::errc()) return inconsistent(number_, *line_, "number " + digits.str() + " out of range");
    return value;
  }
  Result<int> count(const std::ssub_match& digits) const {
    KP_TRY(int64_t value, number(digits));
    if (value > std::numeric_limits<int>::max()) {
      return inconsistent(number_, *line_, "count " + digits.str() + " out of range");
    }
    return static_cast<int>(value);
  }

  PtxasReport report_;
  std::vector<KernelResources> functions_;  // entries and device functions, in log order
  std::map<std::string, int> register_limits_;
  size_t module_start_ = 0;  // index in functions_ of the current module's first
  std::string module_arch_;  // from the module's first "Compiling entry function"
  int64_t module_gmem_ = 0;
  std::optional<size_t> entry_;           // entry announced, its properties not yet seen
  std::optional<size_t> awaiting_frame_;  // function whose stack frame line comes next
  std::optional<size_t> awaiting_used_;   // function whose "Used" line may come next
  size_t number_ = 0;                     // the line being parsed, for messages
  const std::string* line_ = nullptr;
};

}  // namespace

Result<PtxasReport> parse_ptxas_report(std::string_view log) {
  ReportParser parser;
  size_t line_number = 0;
  while (!log.empty()) {
    size_t end = log.find('\n');
    std::string line(log.substr(0, end));
    log.remove_prefix(end == std::string_view::npos ? log.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    KP_TRY_STATUS(parser.feed(++line_number, line));
  }
  return parser.finish();
}

}  // namespace kp::build
