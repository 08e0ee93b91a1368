// The orchestrator's side of the in-process collector: libkp_rangeprof.so (kp_rangeprof_api.h)
// runs in a worker and hands back one line of JSON per collection; these pure functions turn it,
// and the library's error messages, into kernelpro's types. Nothing here touches CUDA.
#pragma once

#include "profile/kernel_metrics.h"
#include "util/result.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kp::profile {

// Parses kp_rp_result_json's text (format in kp_rangeprof_api.h) into a profile:
// collector kCupti; one KernelMetrics per range in launch order (name = the range's "name",
// launch_index = its position, values = the non-null numbers, units = the result's "units" for
// each metric present; grid and block stay 0: the range profiler does not report them);
// metrics = the result's "metrics"; passes = "passes"; unprofiled_launches = "dropped" (launches
// beyond max_kernels: the ranges are the call's first launches, a sample); wall_s = the sum of
// "timing_s" create, begin and end (0 where absent). Errors, all kInvalidInput, naming what is
// wrong: not JSON or not an object; "{}" (kp_rp_end never succeeded); "ranges" missing or not
// an array; a range without an object "values" or with a non-numeric, non-null value.
Result<KernelProfile> parse_range_profile(std::string_view json);

// parse_range_profile(json)'s kernels: the same contract.
Result<std::vector<KernelMetrics>> parse_range_profile_json(std::string_view json);


// The failure classes of libkp_rangeprof, from the tag its messages start with.
enum class RangeProfFailure {
  kPrivileges,       // "privileges: ": counters restricted to administrators (ncu fails the same)
  kUnsupported,      // "unsupported: ": this GPU or configuration cannot be profiled
  kUnknownMetric,    // "unknown-metric: ": a name the chip or the range profiler rejects
  kNoContext,        // "no-context: ": no CUDA context current on the profiling thread
  kInvalidArgument,  // "invalid-argument: ": a caller bug (begin twice, empty list)
  kDropped,          // "dropped: ": more kernels than max_kernels
  kCupti,            // "cupti: ": any other CUPTI or driver failure
};
// The tag without ": " ("privileges", "unsupported", "unknown-metric", "no-context",
// "invalid-argument", "dropped", "cupti").
const char* to_string(RangeProfFailure f);
std::optional<RangeProfFailure> range_prof_failure_from_string(std::string_view s);
// The class of a library message, from its leading tag; nullopt when it has none.
std::optional<RangeProfFailure> range_prof_failure_of(std::string_view message);

// A library message as an Error: "CUPTI range profiler: " + message, with the code
// kUnavailable for kPrivileges and kUnsupported (the machine cannot do it), kInvalidInput for
// kUnknownMetric and kDropped (the request must change), kInternal for kNoContext and
// kInvalidArgument (a kernelpro bug), kTool otherwise.
Error range_prof_error(std::string_view message);

}  // namespace kp::profile
