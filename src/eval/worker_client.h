// The orchestrator's side of a worker: starts kp-worker (native tasks) or the Python worker
// (KernelBench tasks, any command given in WorkerOptions::argv) in its own process group, speaks
// the protocol (verdict/protocol.h), and turns a crash, hang or protocol breach into an outcome,
// restarting the worker for the next request. One WorkerClient drives one worker (one GPU); not
// thread-safe.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sys/subprocess.h"
#include "task/task.h"
#include "util/result.h"
#include "verdict/eval_options.h"
#include "verdict/protocol.h"

namespace kp::eval {

struct WorkerOptions {
  // The worker executable (kp-worker). Required unless argv is set.
  std::filesystem::path worker_path;
  // The worker's full command line, used instead of worker_path when non-empty; argv[0] is
  // searched in PATH when it has no '/'. The Python worker: {python, "-m", "kernelpro_torch.worker"}.
  std::vector<std::string> argv;
  // Variables set in the worker's environment (on top of kernelpro's, minus the API keys), e.g.
  // PYTHONPATH for the Python worker. Empty by default.
  std::vector<std::pair<std::string, std::string>> env;
  // Scratch directory: the worker's working directory and its stdout/stderr logs. Required.
  std::filesystem::path scratch_dir;
  // Seconds to wait for the worker's hello (CUDA initialization). Default 120.
  double start_timeout_s = 120;
  // Largest file the worker (and so a candidate) may write, bytes. Default 1 GiB.
  uint64_t max_file_bytes = uint64_t{1} << 30;
  // kp-worker: set up a Range Profiler session for these metrics (the stage-1 list) right after
  // the hello, with libkp_rangeprof.so at rangeprof_library, so that the first profile request
  // does not pay for it. Empty: no prewarm. The Python worker ignores it.
  std::vector<std::string> prewarm_metrics;
  std::filesystem::path rangeprof_library;
};

// An evaluation as the worker saw it, plus what the candidate printed.
struct WorkerEvaluation {
  WorkerReport report;
  std::string candidate_stdout;  // what the process printed during this evaluation (tail)
  std::string candidate_stderr;
  bool worker_restarted = false;  // the worker died or was killed during this evaluation
};

// The extra files of a KernelBench eval request (protocol.h). Empty paths are left out.
struct KernelBenchFiles {
  std::filesystem::path library;         // prebuilt form: the .so kernelpro built from library_source
  std::filesystem::path library_source;  // prebuilt form: the candidate's .cu
  std::filesystem::path build_dir;       // where the worker builds torch extensions (load_inline form)
};

// PyTorch's own times for one problem, plus what the worker printed meanwhile.
struct WorkerBaseline {
  // On a crash, a hang past the timeout or a broken reply, every requested mode has ok = false
  // and an error saying so; hardware, device and torch_version are then empty.
  BaselineReply reply;
  std::string worker_stderr;      // what the worker wrote to stderr during the request (tail)
  bool worker_restarted = false;  // the worker died or was killed during this request
};

// One torch.compile warm-up of a problem (the Python worker's "prewarm" request).
struct WorkerPrewarm {
  bool ok = false;
  double seconds = 0;   // the worker's own time for it
  std::string error;    // why not, when !ok (PyTorch's error, a crash, a hang)
};

// The request of an op on one candidate ("eval", "profile"): the task, the reference and the
// candidate (absolute paths), the options, and a KernelBench task's extra files when given.
// Used by WorkerClient and for the request files of one-shot workers (kp-worker --once).
nlohmann::json candidate_request(const std::string& op, const task::Task& task, const std::filesystem::path& reference,
                                 const std::filesystem::path& candidate, const EvalOptions& options,
                                 const KernelBenchFiles* files = nullptr);

class WorkerClient {
 public:
  explicit WorkerClient(WorkerOptions options);
  ~WorkerClient();

  // Starts the worker process if none is running, without waiting for it: its CUDA start-up
  // (and a prewarm) then overlaps what the caller does next (building the candidate). The next
  // device() or request waits for its hello. Errors are left to that call.
  void launch();

  // Starts the worker if needed and returns its device. kUnavailable (with the worker's own
  // words) when there is no usable GPU; kNotFound when the worker binary is missing.
  Result<DeviceInfo> device();

  // Runs one evaluation. A crash, a hang past options.timeout_s or a broken reply is an
  // outcome (crash, timeout) in the report, never an Error; Error only when no worker can run.
  Result<WorkerEvaluation> evaluate(const task::Task& task, const std::filesystem::path& reference_so,
                                    const std::filesystem::path& candidate_so, const EvalOptions& options);
  // The same for a KernelBench task: reference is the problem .py, candidate the candidate .py,
  // and files adds library, library_source and build_dir to the request.
  Result<WorkerEvaluation> evaluate(const task::Task& task, const std::filesystem::path& reference,
                                    const std::filesystem::path& candidate, const EvalOptions& options,
                                    const KernelBenchFiles& files);

  // Measures PyTorch on one KernelBench problem (the Python worker's "baseline" request): each of
  // modes ("eager", "compile"), warmup untimed calls, then trials timed calls. A crash, no reply
  // within timeout_s (the worker is killed) or a broken reply fails every mode of this problem,
  // and the next request starts a new worker; a reply {"ok":false,"error":..} fails every mode
  // with that error and keeps the worker. Error only when no worker can run (as device()).
  Result<WorkerBaseline> baseline(const std::filesystem::path& problem, const std::vector<std::string>& modes,
                                  int warmup, int trials, double timeout_s);

  // Compiles one problem's Model with torch.compile and runs it once, so that inductor's on-disk
  // caches are warm when another worker times it. A failure of any kind is !ok with the reason
  // (a crash or a hang past timeout_s also drops the worker); Error only when no worker can run.
  Result<WorkerPrewarm> prewarm(const std::filesystem::path& problem, double timeout_s);

  // Any other request (profile, calibrate): sends `request` with a fresh "id" added and returns
  // the whole reply object with what the worker printed meanwhile. A reply {"ok":false,
  // "error":E} is a kTool error with E (the worker stays, unless it said it is exiting); a
  // crash, no reply within timeout_s (the worker is killed) or a reply that is not JSON is
  // kTool saying so, with the worker's last stderr line, and the next request starts a new
  // worker. As device() when no worker can run.
  struct CallReply {
    nlohmann::json reply;
    std::string worker_stdout, worker_stderr;  // tails, during this request
    bool worker_restarted = false;
  };
  Result<CallReply> call(nlohmann::json request, double timeout_s);

  // Stops the worker (shutdown request, then kill after a grace period).
  void stop();
  // Whether the running worker process has been handed a candidate (an eval that is not
  // reference_only, or a profile request). A reference is timed only where none ever was:
  // a candidate's module or threads could otherwise slow it (driver/judge.h).
  bool has_loaded_candidate() const { return candidate_loaded_; }
  // Whether the last start failed on a busy GPU (exclusive-process mode, held elsewhere): the
  // machine's failure for now, unlike a machine without a GPU; device() then tries again.
  bool start_was_busy() const { return start_busy_; }
  // The running worker's pid, or 0.
  int pid() const { return process_ ? process_->pid() : 0; }

 private:
  // One request and its reply line. On failure the worker is killed and gone.
  struct Exchange {
    enum class Failure { kNone, kGone, kTimedOut, kDied, kNotJson } failure = Failure::kNone;
    std::string detail;    // how the worker ended (kGone, kDied), or the line (kNotJson)
    nlohmann::json reply;  // a JSON object, when failure is kNone
  };
  Status start();
  Status spawn();        // starts the process and sends the hello
  Status await_hello();  // reads the hello's reply
  Exchange exchange(const nlohmann::json& request, double timeout_s);
  // After a reply: a worker that said it is exiting, or has exited, is waited for and dropped.
  // Returns true when it was.
  bool drop_if_exiting(const nlohmann::json& reply);
  Result<WorkerEvaluation> run_evaluation(nlohmann::json request, const EvalOptions& options);
  std::string read_log_since(const std::filesystem::path& path, uint64_t offset) const;
  // The file the worker names its current phase in (kPhaseFileEnv), and " (it was in its P
  // phase)" from it, or "" when it names none.
  std::filesystem::path phase_file() const;
  std::string phase_note() const;

  WorkerOptions options_;
  // Ends the process (if any) and every process that carries its token (kWorkerTokenEnv).
  void drop_process();

  std::unique_ptr<sys::Process> process_;
  std::string token_;  // this process's kWorkerTokenEnv value: its descendants carry it
  std::optional<DeviceInfo> device_;
  std::optional<Error> unavailable_;  // a start that found no GPU: not retried
  bool hello_pending_ = false;        // spawned by launch(), hello not read yet
  bool start_busy_ = false;           // the last hello said the GPU is busy
  bool candidate_loaded_ = false;     // the running process was sent a candidate
  int next_id_ = 1;
};

}  // namespace kp::eval
