#include "driver/judge.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "util/hash.h"
#include "util/strings.h"
#include "verdict/protocol.h"

namespace kp::driver {

namespace fs = std::filesystem;

namespace {

// The file's contents as a hash, or "" when it cannot be read.
std::string contents_hash(const fs::path& p) {
  if (p.empty()) return "";
  auto text = read_file(p.string());
  return text.ok() ? sha256_hex(*text) : std::string();
}

}  // namespace

Judge::Judge(eval::EvaluatorOptions options, GpuRetry retry)
    : options_(std::move(options)), retry_(retry), evaluator_(std::make_unique<eval::Evaluator>(options_)) {}

Judge::~Judge() = default;

std::string Judge::reference_key(const task::Task& task) const {
  std::string gpu = "no-gpu";
  auto d = evaluator_->worker().device();
  if (d.ok()) gpu = d->name + "@" + d->pci_bus_id;
  return sha256_hex(eval::to_json(task).dump() + "\n" + contents_hash(task.reference_path) + "\n" +
                    options_.eval.precision + "\n" + gpu);
}

std::string Judge::candidate_key(const fs::path& candidate, const fs::path& library_source) const {
  return fs::absolute(candidate).string() + "\n" + contents_hash(candidate) + "\n" + library_source.string() + "\n" +
         contents_hash(library_source);
}

const eval::ReferenceTiming* Judge::reference_of(const task::Task& task) const {
  auto it = references_.find(reference_key(task));
  return it == references_.end() ? nullptr : &it->second;
}

const eval::EvalResult* Judge::verdict_of(const fs::path& candidate, const fs::path& library_source) const {
  auto it = verdicts_.find(candidate_key(candidate, library_source));
  return it == verdicts_.end() ? nullptr : &it->second;
}

Result<eval::EvalResult> Judge::evaluate(const task::Task& task, const fs::path& candidate,
                                         const fs::path& library_source) {
  // Asked by the evaluation once the candidate has built and a GPU is there: a candidate that
  // does not compile costs no reference timing.
  std::optional<Error> task_error;
  eval::ReferenceSource reference = [&]() -> const eval::ReferenceTiming* {
    if (!options_.eval.time_reference) return nullptr;
    const std::string key = reference_key(task);
    if (auto it = references_.find(key); it != references_.end()) {
      ++stats_.reference_reuses;
      return &it->second;
    }
    if (failed_references_.count(key)) return nullptr;
    auto timed = evaluator_->time_reference(task);
    // A busy machine's timing is handed to this evaluation, which ends gpu_unavailable, and not
    // kept: the retry below times the reference again.
    auto busy = [&](eval::ReferenceTiming t) {
      ++stats_.busy_references;
      busy_reference_ = std::move(t);
      return &*busy_reference_;
    };
    if (!timed.ok() && timed.error().code == ErrorCode::kUnavailable) {
      // The GPU was there a moment ago (the evaluation asks only then): busy or gone now. The
      // machine's failure, like foreign work: not remembered as a reference that cannot be timed.
      eval::ReferenceTiming t;
      t.machine_busy = "timing the reference alone: " + timed.error().message;
      return busy(std::move(t));
    }
    if (!timed.ok()) {
      // The task's reference at fault ends the evaluation; a crash or hang of the reference
      // alone lets the evaluation time it itself, as before.
      if (timed.error().code == ErrorCode::kInvalidInput) task_error = timed.error();
      failed_references_[key] = timed.error().message;
      return nullptr;
    }
    ++stats_.reference_timings;
    stats_.reference_seconds += timed->worker_seconds;
    if (!timed->machine_busy.empty()) return busy(std::move(*timed));  // another process's work ran beside it
    return &references_.emplace(key, std::move(*timed)).first->second;
  };
  auto r = evaluator_->evaluate(task, candidate, library_source, reference);
  // The GPU held by another process is the machine's failure: tried again on a fresh worker (the
  // worker exits after such a report), and never kept as this candidate's verdict.
  double wait_s = retry_.first_wait_s;
  for (int attempt = 0; attempt < retry_.retries && !task_error && r.ok() &&
                        r->outcome == eval::Outcome::kGpuUnavailable;
       ++attempt) {
    ++stats_.gpu_retries;
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
    wait_s *= 3;
    r = evaluator_->evaluate(task, candidate, library_source, reference);
  }
  if (task_error) return *task_error;
  if (!r.ok()) return r;
  ++stats_.evaluations;
  if (!eval::is_machine_outcome(r->outcome)) verdicts_[candidate_key(candidate, library_source)] = *r;
  return r;
}

ProfileOn Judge::on_worker(const task::Task& task, const fs::path& candidate, const fs::path& library_source) {
  ProfileOn on;
  on.evaluator = evaluator_.get();
  on.verdict = [this, &task, candidate, library_source]() -> Result<eval::EvalResult> {
    if (const eval::EvalResult* kept = verdict_of(candidate, library_source)) {
      ++stats_.verdict_reuses;
      return *kept;
    }
    return evaluate(task, candidate, library_source);
  };
  return on;
}

Result<ProfilePage> Judge::profile(const task::Task& task, const fs::path& candidate, const fs::path& library_source,
                                   const ProfileSessionOptions& options, const ProgressFn& progress) {
  return run_profile(task, candidate, library_source, options, progress, on_worker(task, candidate, library_source));
}

Result<AnalyzePage> Judge::analyze(const task::Task& task, const fs::path& candidate, const fs::path& library_source,
                                   const AnalyzeOptions& options, const ProgressFn& progress) {
  return run_analyze(task, candidate, library_source, options, progress, on_worker(task, candidate, library_source));
}

}  // namespace kp::driver
