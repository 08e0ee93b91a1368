// Evidence as JSON, both ways: what `kernelpro analyze --save-evidence` writes and `--evidence`
// reads back, so a diagnosis can be made again without the GPU (new rule files, changed tools,
// a CI regression test on evidence recorded on the H200). Every field the tools read is kept:
// the kernels' metric values, the SASS summaries with ptxas' resources, the median traced call,
// the ceilings, the device, the call time and the task's ideals. The roofline class is not
// stored: it is a function of the rest (analysis::classify) and is computed again.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/tool.h"
#include "util/result.h"

namespace kp::analysis {

nlohmann::json evidence_to_json(const Evidence& e);
// The inverse of evidence_to_json (the roofline left empty). Errors (kInvalidInput) name the
// field that is missing or of the wrong type.
Result<Evidence> evidence_from_json(const nlohmann::json& j);

}  // namespace kp::analysis
