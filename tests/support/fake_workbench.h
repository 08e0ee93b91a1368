// A workbench whose steps are the test's own functions: the loops' unit tests give the verdicts
// and analyses a GPU would (driver/workbench.h), and see what the loop asked for.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "driver/workbench.h"

namespace kp::testing {

struct FakeWorkbench : driver::Workbench {
  std::function<Result<eval::EvalResult>(const driver::CandidatePaths&)> on_evaluate;  // required
  // Empty: analyzes() is false, as with --feedback none.
  std::function<Result<driver::Analysis>(const driver::CandidatePaths&, const std::vector<std::string>& extra)>
      on_analyze;
  std::function<void(const std::filesystem::path& cu)> on_build_ahead;  // empty: nothing built ahead
  std::vector<agent::ToolOffer> offers;
  const agent::CoderTools* tools = nullptr;

  Result<eval::EvalResult> evaluate(const driver::CandidatePaths& c) override { return on_evaluate(c); }
  bool analyzes() const override { return static_cast<bool>(on_analyze); }
  Result<driver::Analysis> analyze(const driver::CandidatePaths& c, const std::vector<std::string>& extra) override {
    return on_analyze(c, extra);
  }
  bool builds_ahead() const override { return static_cast<bool>(on_build_ahead); }
  void build_ahead(const std::filesystem::path& cu) override { on_build_ahead(cu); }
  const agent::CoderTools* coder_tools() const override { return tools; }
  std::vector<agent::ToolOffer> tool_offers() const override { return offers; }
};

}  // namespace kp::testing
