// Which stage-2 metric families (profile/metric_lists.h) the stage-1 evidence calls for
// (DESIGN.md section 6, "Two-stage invocation"): only the tools that can explain this class.
#pragma once

#include <string>
#include <vector>

#include "analysis/roofline.h"

namespace kp::analysis {

// memory-bound: "memory" (coalescing, hit rates), plus "shared" when the kernels' L2 traffic is
// small next to what they move (tiles held in shared memory); compute-bound: "compute";
// latency-bound: "latency", plus "memory" when the highest roof is a memory roof; launch-bound:
// none (the trace already explains it: fewer, larger launches). In that order, no repeats.
std::vector<std::string> stage2_families_for(const RooflineResult& result);

}  // namespace kp::analysis
