// Tools written as rule files: one TOML file per tool, loaded at run time from rules/ and the
// user's folder, no recompiling (issue 5 item 4). rules/README.md documents the format; in
// short:
//
//   name     = "store_heavy"                 # snake_case, unique among all tools
//   title    = "DRAM writes dominate"         # a short phrase for people
//   about    = "..."                          # what it looks for and why it matters
//   classes  = ["memory-bound"]               # optional: the classes it explains (empty: all)
//   metrics  = ["l1tex__t_sector_hit_rate.pct"]  # the stage-2 metrics it reads
//   when     = "dram__bytes_write.sum > 2 * dram__bytes_read.sum"   # per kernel (rule_expr.h)
//   severity = "warning"                      # info, warning or critical
//   gain     = "min(2, dram__bytes_write.sum / dram__bytes_read.sum)"  # optional, >= 1
//   message  = "writes are {dram__bytes_write.sum / dram__bytes_read.sum:.1f}x the reads"
//   guidance = "..."                          # may hold placeholders too
//   actions  = ["fuse"]                       # known_actions() only
//
// A rule fires once per kernel whose `when` evaluates to non-zero; a kernel missing any name
// that `when` reads is skipped (never a guess). The finding's title is the filled message, its
// evidence every name `when` reads with its value (with the threshold for a comparison of a
// bare name), its gain the `gain` value (at least 1; 1 when absent or not evaluated).
//
// Load errors (kInvalidInput) name the file, the line and, inside an expression, the column:
//   "rules/x.toml:7: [when] column 17: expected ')' after 'max(a, b'". Checked at load: TOML
// syntax, unknown or mistyped keys, the name, severity, classes, actions, each expression, each
// placeholder, and every name an expression reads: a metric of profile/metric_lists.h (stage 1
// or a stage-2 family) or a derived name (rule_derived_names()). A stage-2 metric that `when`,
// `gain` or a placeholder reads must also be listed in `metrics`, else stage 2 would not
// collect it and the rule could never fire.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/tool.h"
#include "util/result.h"

namespace kp::analysis {

// A quantity a rule may read besides the collected metrics, computed from the evidence.
struct DerivedName {
  std::string name;   // "kernel.duration_s"
  std::string about;  // "the kernel's duration, seconds (gpu__time_duration.sum / 1e9)"
};

// The fixed set of derived names, in documentation order (rules/README.md lists the same):
// kernel.duration_s, kernel.grid_blocks, kernel.block_threads, kernel.threads, kernel.index,
// sass.instructions, sass.local_loads, sass.local_stores, sass.global_loads, sass.global_stores,
// sass.tensor_instructions, ptxas.registers, ptxas.shared_bytes, ptxas.spill_bytes,
// ptxas.stack_bytes, call.kernels, call.seconds, call.kernel_seconds, task.ideal_bytes,
// task.ideal_flops, device.sm_count, device.l2_bytes. Each is missing (rule does not fire) when
// the evidence lacks it: no SASS entry for the kernel, no grid, an unknown call time, ...
const std::vector<DerivedName>& rule_derived_names();

// The value of a metric or derived name for the i-th kernel of `evidence`; nullopt when
// unknown. Exposed for tests and for the agents' "explain this rule" view.
std::optional<double> rule_value(const Evidence& evidence, size_t kernel, std::string_view name);

// Parses one rule file's text; `origin` (the path) prefixes every error message.
Result<std::unique_ptr<Tool>> parse_rule_tool(std::string_view text, std::string_view origin);
// Reads and parses one file. kIo when it cannot be read.
Result<std::unique_ptr<Tool>> load_rule_tool(const std::filesystem::path& file);

// Every *.toml in `dir` (not recursive), in file-name order. The first bad file is the error,
// naming it; the caller decides whether to stop or warn. kNotFound when dir does not exist.
Result<std::vector<std::unique_ptr<Tool>>> load_rule_tools(const std::filesystem::path& dir);

// The folders the CLI reads rules from, in order: the repository's rules/ (KP_SOURCE_DIR at
// build time), then $XDG_CONFIG_HOME/kernelpro/rules, or ~/.config/kernelpro/rules when
// XDG_CONFIG_HOME is unset. Folders that do not exist are still listed (the caller skips
// them). Reads the environment: meant for the CLI, which passes the list down.
std::vector<std::filesystem::path> default_rule_dirs();

}  // namespace kp::analysis
