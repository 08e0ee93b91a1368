// What `kernelpro analyze` found for one candidate: its profile page, the evidence the tools
// read, what they found and the feedback text. The driver fills it (driver/analyze_session.h);
// report/ prints it. A plain struct here, below both.
#pragma once

#include <string>
#include <vector>

#include "analysis/feedback.h"
#include "analysis/profile_page.h"
#include "analysis/tool.h"

namespace kp::analysis {

struct AnalyzePage {
  ProfilePage profile;
  Evidence evidence;
  std::vector<std::string> tools_run;       // in name order
  std::vector<std::string> stage1_metrics;  // the stage-1 list the tools were chosen on
  std::vector<std::string> stage2_metrics;  // collected for them
  std::vector<Finding> findings;            // as the tools returned them
  Feedback feedback;
};

}  // namespace kp::analysis
