// Parsers for Nsight Compute's CSV output: pure functions from the text ncu wrote (its stdout or
// its --log-file) to plain structs. Nothing past these parsers reads ncu's text.
//
// Both pages share ncu's CSV conventions, which the parsers handle:
// - The CSV may be preceded and interleaved by `==PROF==`, `==WARNING==`, `==ERROR==` lines and
//   by the profiled program's own output; the table starts at the first line beginning with
//   `"ID"` (or `ID,`). Later lines that start with `==` or do not start with a quote are skipped.
// - Fields are quoted ("a ""b"" c" holds a doubled quote; commas and newlines inside quotes
//   belong to the field). A row shorter than the header is padded with empty fields (ncu ends
//   the metric rows of the details page right after the value); a row longer than the header is
//   an error.
// - Numbers carry thousands separators: "1,610,642,688" (US style) or "27.595.520" (European,
//   decimal comma). The style is decided once per table from the values that are unambiguous
//   ("70.79" or "1,234.5" say US; "70,79", "1.234,5" or "27.595.520" say European); values
//   that fit both ("1,234") are read in US style unless the table is European. "n/a" and empty
//   fields are missing values. "nan", "inf" and words ("PolicySpread", "all", "No-CC") are
//   non-numeric text.
// - Columns are found by header name, never by position.
//
// Error signatures recognised in the text itself: ERR_NVGPUCTRPERM (the GPU's counters are
// restricted to admin users) and "==WARNING== No kernels were profiled".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile/kernel_metrics.h"
#include "util/result.h"

namespace kp::profile {

// The fix for ERR_NVGPUCTRPERM, as one message (shared by the parser and the runner).
std::string counter_permission_message();

// The wide form, `ncu --csv --page raw --print-units base`: a header row, a units row, then one
// row per profiled launch. Per row, one KernelMetrics:
//   name          "Kernel Name" (demangled, "rowsoftmax(const float *, float *, int)")
//   launch_index  "ID" (ncu's index of the profiled launch, from 0)
//   grid, block   "Grid Size", "Block Size" ("(4096, 1, 1)"); 0s when absent or malformed
//   values        every metric column whose value is a number, in base units
//   text          every metric column whose value is not a number ("PolicySpread"), and
//                 text["nvtx"]: the thread's NVTX push/pop stack as ncu printed it
//                 (`497  "<default domain>:kp_candidate:none:..."`, trimmed) when non-empty
//   units         every metric column -> its entry in the units row ("ns", "byte", "%", "")
// A metric whose value is "n/a" or empty is in neither values nor text (get() gives nullopt).
// Columns that are not metrics (ID, Process ID, Process Name, Host Name, Kernel Name, Context,
// Stream, Block Size, Grid Size, Device, CC, Kernel Time, and the NVTX columns, whose names
// contain ':') are read into the fields above or dropped.
// Returns the kernels in row order. Returns an empty vector when the text says "No kernels were
// profiled" (with or without a header), or when the table has no data row: the caller decides
// what that means. Errors:
//   kUnavailable  the text contains ERR_NVGPUCTRPERM (counter_permission_message())
//   kTool         empty text; no header line starting with "ID" (the message quotes the first
//                 line); a header without a "Kernel Name" or "ID" column; a row with more fields
//                 than the header or an unterminated quoted field (the message gives the line
//                 number within the text); an ID that is not an integer
Result<std::vector<KernelMetrics>> parse_ncu_raw_csv(std::string_view text);

// ncu's rule types (`--page details`, column "Rule Type").
enum class NcuRuleType {
  kOptimization,  // "OPT": a performance opportunity, usually with an estimated speedup
  kWarning,       // "WRN"
  kInfo,          // "INF"
  kError,         // "ERR": the rule failed to evaluate
  kOk,            // "OK"
};
const char* to_string(NcuRuleType t);  // "OPT", "WRN", "INF", "ERR", "OK"
std::optional<NcuRuleType> ncu_rule_type_from_string(std::string_view s);

// One metric row of the details page.
struct NcuDetailMetric {
  std::string section;          // "Section Name": the section's display name
                                // ("GPU Speed Of Light Throughput")
  std::string name;             // "Metric Name": a label ("Duration"), or the metric's name
                                // with --print-metric-name name ("gpu__time_duration.sum")
  std::string unit;             // "Metric Unit" ("ns", "%", "hz")
  std::optional<double> value;  // "Metric Value" as a number; nullopt when missing or text
  std::string text;             // "Metric Value" when it is not a number, else empty
};

// One rule row of the details page: ncu's own advice for a kernel.
struct NcuRuleResult {
  std::string section;                          // "Section Name": the section identifier ("SpeedOfLight")
  std::string rule;                             // "Rule Name": the rule identifier ("SOLBottleneck")
  std::optional<NcuRuleType> type;              // "Rule Type"; nullopt when empty or not one of the five
  std::string type_text;                        // "Rule Type" as printed
  std::string description;                      // "Rule Description": the full advice text
  std::string speedup_type;                     // "Estimated Speedup Type": "global", "local", ""
  std::optional<double> estimated_speedup_pct;  // "Estimated Speedup", percent; nullopt if none
};

// Everything the details page says about one profiled launch.
struct NcuKernelDetails {
  int64_t launch_index = 0;               // "ID"
  std::string name;                       // "Kernel Name"
  std::array<int64_t, 3> grid{0, 0, 0};   // "Grid Size"; 0s when absent
  std::array<int64_t, 3> block{0, 0, 0};  // "Block Size"; 0s when absent
  std::vector<NcuDetailMetric> metrics;   // in row order
  std::vector<NcuRuleResult> rules;       // in row order
};

struct NcuDetails {
  std::vector<NcuKernelDetails> kernels;  // in order of first appearance of each ID

  // The kernel with this launch index, or nullptr.
  const NcuKernelDetails* find(int64_t launch_index) const;
};

// The long form, `ncu --csv --page details`: one row per metric or rule result, 15 columns
// (metrics only) or 20 (with the five rule columns). A row with a non-empty "Rule Name" is a
// rule row, any other a metric row. Empty (no kernels) when the text says "No kernels were
// profiled" or the table has no data row. Errors: as parse_ncu_raw_csv, and kTool for a header
// without an "ID", "Kernel Name" or "Metric Value" column.
Result<NcuDetails> parse_ncu_details_csv(std::string_view text);

// "(256, 1, 1)" -> {256, 1, 1}; nullopt unless it is three non-negative integers in parentheses,
// separated by commas.
std::optional<std::array<int64_t, 3>> parse_ncu_dim3(std::string_view text);

}  // namespace kp::profile
