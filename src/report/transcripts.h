// Where a run's candidates went, read from its store: what the campaign report shows so that a
// reader (and whoever improves the prompts) sees why candidates failed or were slow, and whether
// the model acted on what the analysis said (issue 42, item 5).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "store/run_store.h"

namespace kp::report {

// Each measured candidate but the reference, once (its last verdict), by class: "did not
// compile", "did not load", "incorrect", "rejected: CHEAT" (or "rejected"), "crashed or hung"
// (runtime_error, crash, timeout), "not run" (no GPU), or "correct" (the campaign report splits
// these against PyTorch once it knows the card's baselines). And of the children planned from a
// parent whose analysis named a bottleneck class, how many took a direction aimed at it.
struct CandidateClasses {
  std::map<std::string, int> classes;
  std::vector<double> correct_s;  // the correct candidates' median times
  int planned_with_class = 0;     // children whose parent had a bottleneck class
  int aimed = 0;                  // of those, the ones whose direction or actions aim at it
};

CandidateClasses classify_candidates(store::RunStore& s, const std::vector<store::EvaluationRow>& evals,
                                     const std::set<int64_t>& reference_candidates);

// Whether a planner's direction (and its action tags, comma-separated) aims at a bottleneck class
// ("memory-bound", "compute-bound", "latency-bound", "launch-bound"): words and tags an engineer
// would use for it.
bool aims_at(const std::string& bottleneck_class, const std::string& direction, const std::string& actions);

// The class of a correct candidate of `seconds` against PyTorch's faster time `torch_s` (0: none).
std::string against_torch(double seconds, double torch_s);

}  // namespace kp::report
