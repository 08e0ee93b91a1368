// The tools kernelpro can run: the built-in ones (analysis/tools/, one file each, listed in
// tools/builtin.h) and the user's rule files (analysis/rule_tool.h), and the two-stage choice
// of which to run (DESIGN.md section 6).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/tool.h"
#include "util/result.h"

namespace kp::analysis {

class ToolRegistry {
 public:
  ToolRegistry() = default;
  ToolRegistry(ToolRegistry&&) = default;
  ToolRegistry& operator=(ToolRegistry&&) = default;

  // Every built-in tool.
  static ToolRegistry builtin();

  // Adds a tool. kInvalidInput when its name is empty, not snake_case or already taken.
  Status add(std::unique_ptr<Tool> tool);

  const Tool* find(std::string_view name) const;
  std::vector<const Tool*> all() const;  // in name order
  std::vector<std::string> names() const;

  // Stage 2: the tools the stage-1 evidence calls for (Tool::wanted), in name order.
  std::vector<const Tool*> select(const Evidence& stage1) const;
  // The tools named, in the order given; kNotFound naming the unknown ones and listing the
  // known ones.
  Result<std::vector<const Tool*>> by_name(const std::vector<std::string>& names) const;

 private:
  std::vector<std::unique_ptr<Tool>> tools_;
};

// The union of the stage-2 metrics of `tools`, without repeats, sorted; metrics already in
// `have` (stage 1) are left out.
std::vector<std::string> metrics_for(const std::vector<const Tool*>& tools, const std::vector<std::string>& have = {});

// Runs each tool on the evidence; findings in tool order. A tool whose needs are missing
// (SASS, trace) simply finds nothing.
std::vector<Finding> run_tools(const std::vector<const Tool*>& tools, const Evidence& evidence);

}  // namespace kp::analysis
