// Micro-profiling tools (DESIGN.md section 6): expert heuristics that turn the evidence of one
// candidate call into findings, each with the numbers behind it, plain guidance and action tags
// for the search. Built-in tools are C++ classes, one per file under analysis/tools/; rule files
// (analysis/rule_tool.h) add more without recompiling. Pure functions of the evidence: no GPU,
// no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/roofline.h"
#include "profile/ceilings.h"
#include "profile/kernel_metrics.h"
#include "profile/sass/sass_summary.h"
#include "profile/trace/trace.h"
#include "verdict/protocol.h"

namespace kp::analysis {

enum class Severity {
  kInfo,      // worth knowing; small or uncertain gain
  kWarning,   // a real inefficiency with a clear fix
  kCritical,  // the main reason the call is slow
};
const char* to_string(Severity s);  // "info", "warning", "critical"
std::optional<Severity> severity_from_string(std::string_view s);

// One number behind a finding: "l1tex sectors per request = 16.0 > 4.5".
struct EvidenceItem {
  std::string metric;    // a metric name, or a derived quantity ("sectors per request")
  double value = 0;
  std::string op;        // the comparison that fired: ">", ">=", "<", "<=", "==", "!="; "" for context
  double threshold = 0;  // what it was compared with (ignored when op is "")
  std::string unit;      // "", "%", "B", "s", "x", ...
};

struct Finding {
  std::string tool;    // the tool's name
  std::string kernel;  // the kernel it is about (demangled), or "" for the whole call
  Severity severity = Severity::kInfo;
  // How many times faster the call could be once fixed (>= 1), the tool's estimate; 1 when
  // the tool cannot tell.
  double estimated_gain = 1;
  std::string title;     // one line: what is wrong
  std::vector<EvidenceItem> evidence;
  std::string guidance;  // what a CUDA performance engineer would change, in plain words
  std::vector<std::string> actions;  // tags for the search (tool.cc lists the known ones)
};

// The action tags the search knows (vectorize_loads, coalesce, use_tensor_cores, fuse,
// reduce_registers, ...), sorted. A tool or rule file may use only these.
const std::vector<std::string>& known_actions();
bool is_known_action(std::string_view tag);

// Everything the tools read about one candidate call.
struct Evidence {
  // The call's kernels in launch order, with the stage-1 metrics and, after stage 2, the
  // stage-2 metrics merged in. Grid and block are filled from the trace where it has them.
  std::vector<profile::KernelMetrics> kernels;
  // Static view of the built object: one entry per SASS function, with ptxas' resources.
  std::vector<profile::KernelSass> sass;
  std::optional<profile::TraceCall> trace;  // the median traced call (summarize_call run)
  std::optional<RooflineResult> roofline;   // the class, from the stage-1 evidence
  profile::Ceilings ceilings;
  eval::DeviceInfo device;
  double call_seconds = 0;  // median timed call (eval), 0 when unknown
  double ideal_bytes = 0;   // the task's ideal DRAM bytes per call (a KernelBench problem's: its
                            // inputs, outputs and parameters once), 0 when not known
  double ideal_flops = 0;   // the task's ideal FLOP per call, 0 when not given
  // Launches of the call missing from `kernels` (profile::KernelProfile::unprofiled_launches):
  // when > 0 the kernels are the first launches only, and a tool comparing call totals with the
  // task's ideal stays quiet.
  int64_t unprofiled_launches = 0;

  // The SASS entry of a kernel: by mangled name, else by demangled name, else (one kernel,
  // one SASS function) the only one. nullptr when none matches.
  const profile::KernelSass* sass_for(const profile::KernelMetrics& k) const;
  // The trace's record of the i-th kernel of the call, when the trace has as many kernels.
  const profile::TraceKernel* traced(size_t i) const;
  // The i-th kernel's threads per block and blocks in its grid: from its launch shape, else
  // from the trace's record of it; 0 when neither has it.
  int64_t block_threads(size_t i) const;
  int64_t grid_blocks(size_t i) const;
  // Sum of gpu__time_duration.sum over the kernels, seconds.
  double kernel_seconds() const;
};

struct ToolSpec {
  std::string name;   // snake_case, unique: "uncoalesced_access"
  std::string title;  // a short phrase for people: "Uncoalesced global access"
  std::string about;  // one or two sentences: what it looks for and why it matters
  // The classes it can explain; empty: every class.
  std::vector<BottleneckClass> classes;
  // Metrics it reads beyond stage 1 (profile/metric_lists.h), collected in stage 2.
  std::vector<std::string> metrics;
  bool needs_sass = false;   // reads Evidence::sass
  bool needs_trace = false;  // reads Evidence::trace
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual const ToolSpec& spec() const = 0;
  // Whether stage 2 should run it, judged on the stage-1 evidence. Default: the call's class is
  // one of spec().classes (or classes is empty). Tools that read only stage-1 evidence may
  // also be run directly.
  virtual bool wanted(const Evidence& stage1) const;
  // The findings on this evidence; none when the kernel is fine or the evidence is missing (a
  // tool never guesses from absent metrics).
  virtual std::vector<Finding> run(const Evidence& evidence) const = 0;
};

nlohmann::json to_json(const EvidenceItem& e);
nlohmann::json to_json(const Finding& f);
nlohmann::json to_json(const ToolSpec& s);

// Short helpers for tools.
// The value of `metric` on kernel k, when collected and finite.
std::optional<double> metric(const profile::KernelMetrics& k, std::string_view name);
// "16.0 > 4.5" style evidence.
EvidenceItem evidence(std::string metric, double value, std::string op, double threshold, std::string unit = "");
EvidenceItem context(std::string metric, double value, std::string unit = "");

}  // namespace kp::analysis
