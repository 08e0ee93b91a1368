// The worker's evaluation of one native candidate against its task's reference: correctness
// trials, timing, the anti-cheat checks and energy (DESIGN.md section 5; ARCHITECTURE.md,
// "Anti-cheat (native path)", lists the rules). Runs inside kp-worker, the only process with
// a CUDA context.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "task/task.h"
#include "verdict/eval_options.h"
#include "verdict/protocol.h"

namespace kp::worker {

struct CoreAdapter;

class NativeEvaluator {
 public:
  // Energy is the judge core's, which opens NVML itself (judge/session.cc).
  explicit NativeEvaluator(eval::DeviceInfo device);
  ~NativeEvaluator();

  // Evaluates the candidate at cand_path against the reference at ref_path. Every failure of
  // the candidate is an outcome in the report; one that breaks an anti-cheat rule also names it
  // in report.cheat. After a sticky CUDA error (illegal address, trap, launch failure) the
  // context is unusable, and after a candidate that left threads running (background_thread)
  // those threads may still launch work: either way *context_poisoned is set and the caller must
  // exit after replying.
  eval::WorkerReport evaluate(const task::Task& task, const std::string& ref_path, const std::string& cand_path,
                              const eval::EvalOptions& options, uint64_t seed, bool* context_poisoned);

  // Profiles the candidate (verdict/protocol.h, ProfileRequest): one input set, one correctness
  // trial against the reference (a failure ends it with that outcome and no counters), then
  // request.warmup_calls untimed calls, then the collection the mode asks for. Before each
  // observed call L2 is flushed, as before a timed call. The same poisoning rules as evaluate().
  eval::ProfileReply profile(const task::Task& task, const std::string& ref_path, const std::string& cand_path,
                             const eval::EvalOptions& options, const eval::ProfileRequest& request, uint64_t seed,
                             bool* context_poisoned);

 private:
  struct Impl;
  friend struct CoreAdapter;  // the judge core's callbacks (evaluation_core.cc)
  std::unique_ptr<Impl> impl_;
};

}  // namespace kp::worker
