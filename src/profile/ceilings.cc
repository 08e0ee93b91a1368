#include "profile/ceilings.h"

namespace kp::profile {

const char* to_string(CeilingSource s) { return s == CeilingSource::kCalibrated ? "calibrated" : "datasheet"; }

}  // namespace kp::profile
