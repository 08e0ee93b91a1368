// What `kernelpro profile` found for one candidate: the verdict, the evidence at the kernel,
// instruction and system levels, and the roofline class. The driver fills it
// (driver/profile_session.h); report/ prints it; analysis reads it. A plain struct here, below
// both, so that the printer does not depend on the loop that fills it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/roofline.h"
#include "eval/evaluator.h"
#include "profile/ceilings.h"
#include "profile/kernel_metrics.h"
#include "profile/sass/sass_summary.h"
#include "profile/trace/trace.h"

namespace kp::analysis {

// How far two collectors' values of one metric lie apart on the same kernel.
struct MetricAgreement {
  std::string kernel, metric;
  double cupti = 0, ncu = 0;
  double relative_difference = 0;  // |cupti - ncu| / max(|ncu|, tiny)
};

struct ProfilePage {
  eval::EvalResult eval;
  std::optional<profile::KernelProfile> counters;  // stage 1, with stage 2's metrics merged in
  std::vector<std::string> stage2_families;         // collected in stage 2
  std::optional<profile::KernelProfile> ncu_counters;  // compare_ncu
  std::vector<MetricAgreement> agreement;            // compare_ncu
  std::optional<profile::Trace> trace;
  std::vector<profile::KernelSass> sass;
  std::optional<analysis::RooflineResult> roofline;
  profile::Ceilings ceilings;
  std::string ceilings_warning;
  // What could not be collected, and why ("trace: libkp_trace.so not found ..."); the page is
  // still useful without it.
  std::vector<std::string> notes;
  // Wall seconds per step: "eval", "counters", "stage2", "ncu", "trace", "sass".
  std::map<std::string, double> seconds;
};

}  // namespace kp::analysis
