// Result<T>: the value of an operation that can fail operationally (a missing file, a tool
// that exits non-zero, malformed input), carrying either a T or an Error.
//
// Error policy (CONTRIBUTING.md): evaluation outcomes are data (verdict/outcome.h), operational
// errors cross module boundaries as Result, bugs trip KP_CHECK, and main alone catches an
// unexpected exception as a last resort. A message says what failed, on what input, and what
// to do about it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace kp {

// Broad error classes; the message carries the detail.
enum class ErrorCode {
  kInvalidInput,  // the user's input is wrong: a malformed file, an unknown dtype
  kNotFound,      // a file, tool, symbol or device that should exist does not
  kIo,            // reading or writing failed
  kTool,          // an external tool (nvcc, ncu) failed to run or returned garbage
  kProtocol,      // a peer (the worker) broke the protocol
  kTimeout,       // an operation ran past its limit
  kUnavailable,   // a capability is absent on this machine (no GPU, no NVML)
  kPending,       // waits on a person (a manual LLM answer): stop cleanly, continue with --resume
  kInternal,      // should not happen; a bug surfaced as a value
};

const char* to_string(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  // Prepends context ("loading task examples/gelu: ") to the message and returns *this.
  Error& wrap(const std::string& context) {
    message = context + ": " + message;
    return *this;
  }
};

inline Error make_error(ErrorCode code, std::string message) { return Error{code, std::move(message)}; }

// Either a T or an Error. Accessing value() of an error (or error() of a value) is a bug and
// aborts with a message.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { check_ok(); return std::get<0>(state_); }
  const T& value() const& { check_ok(); return std::get<0>(state_); }
  T&& value() && { check_ok(); return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& {
    if (ok()) abort_with("Result::error() called on a value");
    return std::get<1>(state_);
  }
  Error&& error() && {
    if (ok()) abort_with("Result::error() called on a value");
    return std::get<1>(std::move(state_));
  }

 private:
  void check_ok() const {
    if (!ok()) abort_with(("Result::value() called on an error: " + std::get<1>(state_).message).c_str());
  }
  [[noreturn]] static void abort_with(const char* what) {
    std::fprintf(stderr, "kernelpro bug: %s\n", what);
    std::abort();
  }
  std::variant<T, Error> state_;
};

// Result of an operation with no value.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace kp

// Evaluates a Result expression; on error returns the error from the enclosing function.
#define KP_TRY_CONCAT_INNER_(a, b) a##b
#define KP_TRY_CONCAT_(a, b) KP_TRY_CONCAT_INNER_(a, b)
#define KP_TRY_STATUS(expr)                                   \
  do {                                                        \
    auto kp_try_result_ = (expr);                             \
    if (!kp_try_result_.ok()) return std::move(kp_try_result_).error(); \
  } while (0)
// KP_TRY(auto x, expr): declares x bound to the value of expr, or returns its error.
#define KP_TRY(decl, expr) KP_TRY_IMPL_(decl, expr, KP_TRY_CONCAT_(kp_try_tmp_, __LINE__))
#define KP_TRY_IMPL_(decl, expr, tmp)                         \
  auto tmp = (expr);                                          \
  if (!tmp.ok()) return std::move(tmp).error();               \
  decl = std::move(tmp).value()

// Always-on assertion for bugs: prints the condition and location and aborts.
#define KP_CHECK(cond)                                                                    \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "kernelpro bug: check failed: %s at %s:%d\n", #cond, __FILE__, \
                   __LINE__);                                                             \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
