// The built-in tools: one factory per file of analysis/tools/, listed in builtin.cc.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "analysis/tool.h"

namespace kp::analysis {

using ToolFactory = std::function<std::unique_ptr<Tool>()>;

// Every built-in tool's factory, in file-name order.
const std::vector<ToolFactory>& builtin_tool_factories();

}  // namespace kp::analysis
