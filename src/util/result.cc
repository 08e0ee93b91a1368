#include "util/result.h"

namespace kp {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidInput: return "invalid_input";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kTool: return "tool";
    case ErrorCode::kProtocol: return "protocol";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kPending: return "pending";
    case ErrorCode::kInternal: return "internal";
  }
  return "internal";
}

}  // namespace kp
