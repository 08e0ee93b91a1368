// The orchestrator's side of a worker: starts kp-worker in its own process group, speaks the
// protocol, and turns a crash, hang or protocol breach into an outcome, restarting the worker
// for the next evaluation. One WorkerClient drives one worker (one GPU); not thread-safe.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "eval/eval_options.h"
#include "eval/protocol.h"
#include "sys/subprocess.h"
#include "task/task.h"
#include "util/result.h"

namespace kp::eval {

struct WorkerOptions {
  // The worker executable (kp-worker). Required.
  std::filesystem::path worker_path;
  // Scratch directory: the worker's working directory and its stdout/stderr logs. Required.
  std::filesystem::path scratch_dir;
  // Seconds to wait for the worker's hello (CUDA initialization). Default 120.
  double start_timeout_s = 120;
  // Largest file the worker (and so a candidate) may write, bytes. Default 1 GiB.
  uint64_t max_file_bytes = uint64_t{1} << 30;
};

// An evaluation as the worker saw it, plus what the candidate printed.
struct WorkerEvaluation {
  WorkerReport report;
  std::string candidate_stdout;  // what the process printed during this evaluation (tail)
  std::string candidate_stderr;
  bool worker_restarted = false;  // the worker died or was killed during this evaluation
};

class WorkerClient {
 public:
  explicit WorkerClient(WorkerOptions options);
  ~WorkerClient();

  // Starts the worker if needed and returns its device. kUnavailable (with the worker's own
  // words) when there is no usable GPU; kNotFound when the worker binary is missing.
  Result<DeviceInfo> device();

  // Runs one evaluation. A crash, a hang past options.timeout_s or a broken reply is an
  // outcome (crash, timeout) in the report, never an Error; Error only when no worker can run.
  Result<WorkerEvaluation> evaluate(const task::Task& task, const std::filesystem::path& reference_so,
                                    const std::filesystem::path& candidate_so, const EvalOptions& options);

  // Stops the worker (shutdown request, then kill after a grace period).
  void stop();

 private:
  Status start();
  std::string read_log_since(const std::filesystem::path& path, uint64_t offset) const;

  WorkerOptions options_;
  std::unique_ptr<sys::Process> process_;
  std::optional<DeviceInfo> device_;
  std::optional<Error> unavailable_;  // a start that found no GPU: not retried
  int next_id_ = 1;
};

}  // namespace kp::eval
